/* test_pthreads_timeout.c - the pthreads transport's barrier timeout: a PE
   that stalls before a collective call ends the program within
   SHMALLOC_TIMEOUT, naming the PE, and one that skips a call (and
   so returns from pe_main while the others still make calls) ends it at
   once, naming it; a bad value is refused at start-up; a slow PE that
   does arrive does not trip it; the former name,
   SHMALLOC_BARRIER_TIMEOUT, still sets it, said once to be renamed.

   A run that should end the program runs in a forked child
   (pthreads_child.h), so a barrier without a timeout fails the test
   instead of hanging it. */
#define TEST_SUPPORT_PES /* the pthreads transport */
#include "test_support.h"
#include "pthreads_child.h"

#define TEST_TIMEOUT 60   /* seconds; Criterion's own bound on a test */

/* ---- the wait unit ------------------------------------------------------ */
Test(wait, a_step_pauses_then_yields_then_asks_to_sleep)
{
    shmalloc_wait w;
    int i;
    shmalloc_wait_begin(&w, 60, 3, 2);
    for (i = 0; i < 5; i++) cr_assert_eq(shmalloc_wait_step(&w), SHMALLOC_WAIT_POLL, "step %d", i);
    cr_assert_eq(shmalloc_wait_step(&w), SHMALLOC_WAIT_SLEEP);
    cr_assert_eq(shmalloc_wait_step(&w), SHMALLOC_WAIT_SLEEP);
}

Test(wait, the_deadline_is_the_timeout_after_the_first_yield, .timeout = TEST_TIMEOUT)
{
    shmalloc_wait w;
    struct timespec ts;
    double start, deadline;
    shmalloc_wait_begin(&w, 1, 1, 0);
    cr_assert_eq(shmalloc_wait_step(&w), SHMALLOC_WAIT_POLL); /* a pause: no deadline yet */
    sleep_seconds(0.5);
    start = shmalloc_wait_now();
    cr_assert_eq(shmalloc_wait_step(&w), SHMALLOC_WAIT_SLEEP);
    shmalloc_wait_deadline(&w, &ts);
    deadline = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    cr_assert(deadline >= start + 1.0 && deadline < start + 1.5, "deadline %.3f s after the step", deadline - start);
    while (shmalloc_wait_step(&w) == SHMALLOC_WAIT_SLEEP) shmalloc_wait_sleep(&w);
    cr_assert(shmalloc_wait_now() >= deadline, "expired before the deadline");
    cr_assert(shmalloc_wait_now() < deadline + 1.0, "expired %.3f s late", shmalloc_wait_now() - deadline);
}

/* ---- a PE that skips a collective call ---------------------------------- */
enum skipped_call { SKIP_MALLOC, SKIP_FREE, SKIP_BARRIER };

typedef struct skip_case {
    enum skipped_call call;
    int npes;
    int skippers[2];   /* the PEs that skip it; -1: none */
    int stall;         /* they sleep past the timeout instead, then return */
} skip_case;

static int skips(const skip_case *c, int pe)
{
    return pe == c->skippers[0] || pe == c->skippers[1];
}

static void pe_skip(void *arg)
{
    const skip_case *c = (const skip_case *)arg;
    int skip = skips(c, shmem_my_pe());
    void *p = NULL;
    if (skip && c->stall) {
        sleep_seconds(CHILD_BOUND / 2);
        return;
    }
    if (c->call != SKIP_MALLOC || !skip) p = shmem_malloc(64);
    if (c->call != SKIP_FREE || !skip) shmem_free(p);
    if (c->call != SKIP_BARRIER || !skip) shmem_barrier_all();
}

/* The PEs a timeout message names after "waiting for PE" or "PEs". */
static void expect_names(const char *text, const skip_case *c)
{
    char want[64];
    if (c->skippers[1] < 0)
        snprintf(want, sizeof want, "waiting for PE %d (PE ", c->skippers[0]);
    else
        snprintf(want, sizeof want, "waiting for PEs %d, %d (PE ", c->skippers[0], c->skippers[1]);
    cr_assert(strstr(text, want) != NULL, "expected \"%s\" in: %s", want, text);
}

/* A PE that skipped a call ended first: a waiter names it (or them), once. */
static void expect_ended_message(const char *text, const skip_case *c)
{
    const char *m = strstr(text, "[PTHREADS_PE_RETURNED] ");
    int waiter = -1, first = -1, second = -1;
    unsigned barrier = 0;
    cr_assert(m != NULL, "no message in: %s", text);
    cr_assert_eq(count_in(text, "[PTHREADS_PE_RETURNED] "), 1, "more than one PE reported: %s", text);
    cr_assert(sscanf(m, "[PTHREADS_PE_RETURNED] shmalloc: PE %d waits in barrier %u for PE", &waiter, &barrier) == 2,
              "%s", text);
    cr_assert(waiter >= 0 && waiter < c->npes && !skips(c, waiter), "waiter PE %d in: %s", waiter, text);
    m = strstr(m, " for PE");
    cr_assert(sscanf(m, " for PE %d", &first) == 1 || sscanf(m, " for PEs %d, %d", &first, &second) == 2, "%s", text);
    cr_assert(skips(c, first) && (second < 0 || skips(c, second)), "names a PE that did not skip: %s", text);
}

static void expect_timeout_message(const char *text, const skip_case *c)
{
    const char *m = strstr(text, "[PTHREADS_BARRIER_TIMEOUT] ");
    int waiter = -1, npes = 0;
    unsigned barrier = 0;
    cr_assert(m != NULL, "no timeout message in: %s", text);
    cr_assert_eq(count_in(text, "[PTHREADS_BARRIER_TIMEOUT] "), 1, "more than one PE reported: %s", text);
    cr_assert(strstr(m, " after 1 s "), "the timeout in: %s", text);
    expect_names(m, c);
    m = strstr(m, " (PE ");
    cr_assert(sscanf(m, " (PE %d of %d, barrier %u)", &waiter, &npes, &barrier) == 3, "message: %s", text);
    cr_assert(waiter >= 0 && waiter < c->npes && !skips(c, waiter), "waiter PE %d in: %s", waiter, text);
    cr_assert_eq(npes, c->npes);
    cr_assert(barrier > 1, "barrier %u in: %s", barrier, text);
}

static skip_case skip_cases[] = {
    {SKIP_MALLOC, 2, {1, -1}, 0},  {SKIP_FREE, 2, {0, -1}, 0},  {SKIP_BARRIER, 2, {1, -1}, 0},
    {SKIP_MALLOC, 8, {5, -1}, 0},  {SKIP_FREE, 8, {7, -1}, 0},  {SKIP_BARRIER, 8, {0, -1}, 0},
    {SKIP_BARRIER, 4, {1, 3}, 0},  {SKIP_MALLOC, 8, {2, 6}, 0}, {SKIP_MALLOC, 64, {37, -1}, 0},
    {SKIP_BARRIER, 64, {0, 63}, 0}, {SKIP_MALLOC, 2, {1, -1}, 1}, {SKIP_BARRIER, 8, {0, -1}, 1},
    {SKIP_BARRIER, 4, {1, 3}, 1},  {SKIP_MALLOC, 64, {37, -1}, 1},
};

ParameterizedTestParameters(timeout, a_skipped_collective_ends_the_program_naming_the_pe)
{
    return cr_make_param_array(skip_case, skip_cases, sizeof skip_cases / sizeof skip_cases[0]);
}

ParameterizedTest(skip_case *c, timeout, a_skipped_collective_ends_the_program_naming_the_pe,
                  .timeout = TEST_TIMEOUT)
{
    child_result r;
    run_child(c->npes, c->stall ? "1" : "60", pe_skip, c, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    if (c->stall) {
        cr_assert(r.seconds >= 1.0, "ended after %.2f s, before the timeout", r.seconds);
        expect_timeout_message(r.text, c);
    } else {
        cr_assert(r.seconds < 5.0, "ended after %.2f s: waited for a PE that had returned", r.seconds);
        expect_ended_message(r.text, c);
    }
}

/* Only PE 0 reaches a barrier while the others stall: it waits for all of
   them, and the message lists as many as fit in one line, then how many
   more. */
static void pe_extra_barrier_on_pe_0(void *arg)
{
    (void)arg;
    if (shmem_my_pe() == 0) shmem_barrier_all();
    else sleep_seconds(CHILD_BOUND / 2);
}

Test(timeout, a_timeout_waiting_for_many_pes_names_them_in_one_line, .timeout = TEST_TIMEOUT)
{
    child_result r;
    const char *m, *end;
    int more = 0;
    run_child(100, "1", pe_extra_barrier_on_pe_0, NULL, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    m = strstr(r.text, "[PTHREADS_BARRIER_TIMEOUT] ");
    cr_assert(m != NULL && strstr(m, " PEs 1, 2, 3, "), "stderr: %s", r.text);
    end = strchr(m, '\n');
    cr_assert(end != NULL && end - m < 511, "one line of at most 511 bytes: %s", m);
    m = strstr(m, " and ");
    cr_assert(m != NULL && m < end && sscanf(m, " and %d more (PE 0 of 100, barrier ", &more) == 1, "line: %s", r.text);
    cr_assert(more > 0 && more < 99, "%d more", more);
}

/* ---- a PE that made one call more, in debug mode ------------------------- */
typedef struct extra_case {
    int common;         /* calls both PEs make: 3 or 0 */
    char pe0[192];      /* what PE 0 says of its extra call */
    char pe1[192];      /* and PE 1 of its return from pe_main */
} extra_case;

static void pe_0_makes_one_call_more(void *arg)
{
    const extra_case *c = (const extra_case *)arg;
    if (c->common) {
        void *a = shmem_malloc(64);
        shmem_free(a);
        shmem_malloc(64); /* left allocated: listed at finalize */
    }
    if (shmem_my_pe() == 0) shmem_malloc(64); /* a call PE 1, finalizing, never makes */
}

static extra_case extra_cases[] = {
    {3, "shmalloc: PE 0: malloc(64 bytes), its collective call 4, differs from PE 1's end without finalize, after its "
        "collective call 3: the calls and the call numbers\n",
     "shmalloc: PE 1 returned from pe_main after its collective call 3, while PE 0 makes malloc(64 bytes), its "
     "collective call 4: the calls and the call numbers\n"},
    {0, "shmalloc: PE 0: malloc(64 bytes), its collective call 1, differs from PE 1's end without finalize, before any "
        "collective call: the calls and the call numbers\n",
     "shmalloc: PE 1 returned from pe_main before any collective call, while PE 0 makes malloc(64 bytes), its "
     "collective call 1: the calls and the call numbers\n"},
};

ParameterizedTestParameters(timeout, debug_mode_counts_the_calls_of_a_pe_that_made_one_more_and_nobody_waits)
{
    return cr_make_param_array(extra_case, extra_cases, sizeof extra_cases / sizeof extra_cases[0]);
}

/* The reports give the calls each PE truly made, and PE 0 does not wait
   out the timeout for PE 1, which has returned. */
ParameterizedTest(extra_case *c, timeout, debug_mode_counts_the_calls_of_a_pe_that_made_one_more_and_nobody_waits,
                  .timeout = TEST_TIMEOUT)
{
    child_result r;
    setenv("SHMALLOC_DEBUG", "1", 1);
    run_child(2, "60", pe_0_makes_one_call_more, c, &r);
    unsetenv("SHMALLOC_DEBUG");
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    cr_assert(r.seconds < 5.0, "ended after %.2f s: waited for a PE that had returned", r.seconds);
    cr_assert(strstr(r.text, c->pe0), "expected\n%s\nin\n%s", c->pe0, r.text);
    cr_assert(strstr(r.text, c->pe1), "expected\n%s\nin\n%s", c->pe1, r.text);
    cr_assert(strstr(r.text, "[PTHREADS_PE_RETURNED] shmalloc: PE 0 waits in barrier "), "%s", r.text);
    cr_assert(strstr(r.text, " for PE 1, which has returned from pe_main"), "%s", r.text);
}

/* ---- a team's barrier ------------------------------------------------------
   Team {1, 3} of 4 PEs: world PE 3 skips the team's sync while PE 1 waits
   in it (PEs 0 and 2 are busy elsewhere, in no barrier). */
static void pe_skips_team_sync(void *arg)
{
    int me = shmem_my_pe();
    shmem_team_t odd;
    (void)arg;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 2, NULL, 0, &odd) != 0) return;
    if (me == 1) shmem_team_sync(odd);
    sleep_seconds(CHILD_BOUND / 2);
}

Test(timeout, a_skipped_team_sync_names_the_team_and_the_missing_pe, .timeout = TEST_TIMEOUT)
{
    child_result r;
    char want[512];
    size_t tag = sizeof "[PTHREADS_TEAM_BARRIER_TIMEOUT] " - 1;
    run_child(4, "1", pe_skips_team_sync, NULL, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    cr_assert(r.seconds >= 1.0 && r.seconds < CHILD_BOUND / 2, "ended after %.2f s", r.seconds);
    cr_assert_eq(count_in(r.text, "[PTHREADS_TEAM_BARRIER_TIMEOUT] "), 1, "stderr: %s", r.text);
    memcpy(want, "[PTHREADS_TEAM_BARRIER_TIMEOUT] ", tag);
    snprintf(want + tag, sizeof want - tag, shm__text_PTHREADS_TEAM_BARRIER_TIMEOUT, 1, "", "3", 2, "s", 1, 2, 0, 1,
             1ull);
    cr_assert(strstr(r.text, want), "expected\n%s\nin\n%s", want, r.text);
}

/* World PE 3 returns without the team's sync: PE 1, waiting in it, ends
   the program at once, naming PE 3 by its world number. */
static void pe_returns_without_team_sync(void *arg)
{
    shmem_team_t odd;
    (void)arg;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 2, NULL, 0, &odd) != 0) return;
    if (shmem_my_pe() == 1) shmem_team_sync(odd);
}

Test(timeout, a_pe_that_returns_without_a_team_sync_ends_it_at_once, .timeout = TEST_TIMEOUT)
{
    child_result r;
    run_child(4, "60", pe_returns_without_team_sync, NULL, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    cr_assert(r.seconds < 5.0, "ended after %.2f s: waited for a PE that had returned", r.seconds);
    cr_assert(strstr(r.text, "[PTHREADS_PE_RETURNED] shmalloc: PE 1 waits in barrier 1 for PE 3, which has returned"),
              "%s", r.text);
}

/* Teams A {0, 1, 2} and B {0, 2}: PE 0 syncs A then B, PE 2 B then A.  A
   barrier times out naming its team and the PE that went to the other
   (which of the two first is the scheduler's choice). */
static void pe_team_order(void *arg)
{
    int me = shmem_my_pe();
    shmem_team_t a, b;
    (void)arg;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 3, NULL, 0, &a) != 0 ||
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, 2, NULL, 0, &b) != 0)
        return;
    if (me == 0) shmem_team_sync(a), shmem_team_sync(b);
    if (me == 1) shmem_team_sync(a);
    if (me == 2) shmem_team_sync(b), shmem_team_sync(a);
    sleep_seconds(CHILD_BOUND / 2);
}

Test(timeout, overlapping_teams_in_different_orders_time_out_naming_the_team, .timeout = TEST_TIMEOUT)
{
    child_result r;
    static const char in_a[] = " waiting for world PE 2 (the team of 3 PEs from world PE 0 by stride 1; ";
    static const char in_b[] = " waiting for world PE 0 (the team of 2 PEs from world PE 0 by stride 2; ";
    const char *m;
    run_child(3, "1", pe_team_order, NULL, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    m = strstr(r.text, "[PTHREADS_TEAM_BARRIER_TIMEOUT] ");
    cr_assert(m != NULL, "stderr: %s", r.text);
    cr_assert(strstr(m, in_a) || strstr(m, in_b), "expected\n%s\nor\n%s\nin\n%s", in_a, in_b, r.text);
}

/* The same with spaces over A and B: PE 0 allocates in A's then B's, PE
   2 in B's then A's.  The message names the space whose call waits. */
static void pe_space_order(void *arg)
{
    int me = shmem_my_pe();
    shmem_team_t a, b = SHMEM_TEAM_INVALID;
    shmemx_space_t sa = NULL, sb = NULL;
    (void)arg;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 3, NULL, 0, &a) != 0 ||
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, 2, NULL, 0, &b) != 0 ||
        shmemx_space_create(a, NULL, &sa) != 0 || (b != SHMEM_TEAM_INVALID && shmemx_space_create(b, NULL, &sb) != 0))
        return;
    if (me == 0) shmemx_space_malloc(sa, 64), shmemx_space_malloc(sb, 64);
    if (me == 1) shmemx_space_malloc(sa, 64);
    if (me == 2) shmemx_space_malloc(sb, 64), shmemx_space_malloc(sa, 64);
    sleep_seconds(CHILD_BOUND / 2);
}

Test(timeout, overlapping_spaces_in_different_orders_time_out_naming_the_space, .timeout = TEST_TIMEOUT)
{
    static const char in_a[] = " waiting for world PE 2 (the team of 3 PEs from world PE 0 by stride 1; ";
    static const char in_b[] = " waiting for world PE 0 (the team of 2 PEs from world PE 0 by stride 2; ";
    child_result r;
    const char *m;
    run_child(3, "1", pe_space_order, NULL, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    m = strstr(r.text, "[PTHREADS_SPACE_BARRIER_TIMEOUT] shmalloc: a call on the space at 0x");
    cr_assert(m != NULL, "stderr: %s", r.text);
    cr_assert(strstr(m, in_a) || strstr(m, in_b), "expected\n%s\nor\n%s\nin\n%s", in_a, in_b, r.text);
}

/* ---- the variable ------------------------------------------------------- */
static int pe_calls;

static void pe_count(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&pe_calls, 1, __ATOMIC_RELAXED);
    shmem_barrier_all();
}

Test(timeout, a_bad_timeout_is_refused_at_start_up_naming_it, .timeout = TEST_TIMEOUT)
{
    static const char *const bad[] = {"0", "-1", "", "abc", "1.5", "2s", " ", "1000001", "99999999999999999999"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[160];
        setenv("SHMALLOC_TIMEOUT", bad[i], 1);
        capture_start();
        cr_assert_neq(shmalloc_pthreads_run(2, (size_t)1 << 20, pe_count, NULL), 0, "\"%s\" accepted", bad[i]);
        capture_stop();
        cr_assert_eq(pe_calls, 0, "PEs ran with \"%s\"", bad[i]);
        cr_assert(out_said(SHMALLOC_MSG_OPTION_BAD) == 1 && out_nids == 1, "message was: %s", out_text[2]);
        snprintf(want, sizeof want, "SHMALLOC_TIMEOUT=\"%s\" ", bad[i]);
        cr_assert(strstr(out_text[2], want) && strstr(out_text[2], " from 1 to 1000000\n"), "message was: %s",
                  out_text[2]);
    }
}

Test(timeout, good_timeouts_and_unset_are_accepted, .timeout = TEST_TIMEOUT)
{
    static const char *const good[] = {"1", "60", "1000000", "007"};
    size_t i;
    unsetenv("SHMALLOC_TIMEOUT");
    cr_assert_eq(shmalloc_pthreads_run(2, (size_t)1 << 20, pe_count, NULL), 0);
    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("SHMALLOC_TIMEOUT", good[i], 1);
        cr_assert_eq(shmalloc_pthreads_run(2, (size_t)1 << 20, pe_count, NULL), 0, "\"%s\" refused", good[i]);
    }
    cr_assert_eq(pe_calls, 2 * (int)(1 + sizeof good / sizeof good[0]));
}

/* SHMALLOC_BARRIER_TIMEOUT, the name before SHMALLOC_TIMEOUT, still sets
   the timeout, and the process says once that it was renamed. */
Test(timeout, the_former_name_still_sets_the_timeout_and_is_reported_renamed_once, .timeout = TEST_TIMEOUT)
{
    skip_case stall = {SKIP_BARRIER, 4, {1, 3}, 1};
    child_result r;
    unsetenv("SHMALLOC_TIMEOUT");
    child_timeout_var = "SHMALLOC_BARRIER_TIMEOUT";
    run_child(stall.npes, "1", pe_skip, &stall, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    cr_assert(r.seconds >= 1.0 && r.seconds < CHILD_BOUND / 2, "ended after %.2f s", r.seconds);
    expect_timeout_message(r.text, &stall);
    cr_assert_eq(count_in(r.text, "[OPTION_RENAMED] "), 1, "%s", r.text);
    cr_assert(strstr(r.text, "[OPTION_RENAMED] shmalloc: SHMALLOC_BARRIER_TIMEOUT is renamed SHMALLOC_TIMEOUT: "
                             "its value \"1\" is used, but set SHMALLOC_TIMEOUT instead\n"), "%s", r.text);
    setenv("SHMALLOC_BARRIER_TIMEOUT", "7", 1);
    capture_start();
    cr_assert_eq(shmalloc_pthreads_run(2, (size_t)1 << 20, pe_count, NULL), 0);
    cr_assert_eq(shmalloc_pthreads_run(2, (size_t)1 << 20, pe_count, NULL), 0);
    capture_stop();
    unsetenv("SHMALLOC_BARRIER_TIMEOUT");
    cr_assert(out_said(SHMALLOC_MSG_OPTION_RENAMED) == 1 && out_nids == 1, "two runs, one message: %s", out_text[2]);
}

/* ---- a slow PE that arrives --------------------------------------------- */
#define SLOW_BARRIERS 3
#define SLOW_SECONDS 1.0   /* before each barrier: the timeout is 2 s */

/* The last PE sleeps before each barrier: the waits add up to more than
   the timeout, each one less. */
static void pe_slow(void *arg)
{
    int i;
    void *p;
    (void)arg;
    for (i = 0; i < SLOW_BARRIERS; i++) {
        if (shmem_my_pe() == shmem_n_pes() - 1) sleep_seconds(SLOW_SECONDS);
        shmem_barrier_all();
    }
    if (shmem_my_pe() == shmem_n_pes() - 1) sleep_seconds(SLOW_SECONDS);
    p = shmem_malloc(64);
    shmem_free(p);
    if (p != NULL) __atomic_add_fetch(&pe_calls, 1, __ATOMIC_RELAXED);
    if (shmalloc_check(-1) != 0) __atomic_add_fetch(&pe_calls, 1000, __ATOMIC_RELAXED);
}

static int slow_pes[] = {2, 8, 64};

ParameterizedTestParameters(timeout, a_slow_pe_that_arrives_within_the_timeout_does_not_trip_it)
{
    return cr_make_param_array(int, slow_pes, sizeof slow_pes / sizeof slow_pes[0]);
}

ParameterizedTest(int *npes, timeout, a_slow_pe_that_arrives_within_the_timeout_does_not_trip_it,
                  .timeout = TEST_TIMEOUT)
{
    double start = shmalloc_wait_now();
    setenv("SHMALLOC_TIMEOUT", "2", 1);
    cr_assert_eq(shmalloc_pthreads_run(*npes, (size_t)1 << 20, pe_slow, NULL), 0);
    cr_assert_eq(pe_calls, *npes, "%d PEs allocated, or a heap check failed", pe_calls);
    cr_assert(shmalloc_wait_now() - start >= (SLOW_BARRIERS + 1) * SLOW_SECONDS, "the slow PE did not slow the run");
}
