/* test_pthreads_errors.c - the symmetric heap on the pthreads transport,
   calls that fail or touch the edges: errors on one PE or all, mismatched
   calls, malloc(0) and free(NULL), shmem_ptr and friends, and
   shmalloc_pthreads_run's own checks. */
#include "pthreads_pes.h"

#include <unistd.h>

/* ---- errors ------------------------------------------------------------------ */
static void pe_bad_free_on_one_pe(void *arg)
{
    int me = shmem_my_pe(), on_stack = 0;
    void *p = shmem_malloc(64);
    (void)arg;
    PE_CHECK(p != NULL);
    shmem_free(me == 0 ? (void *)&on_stack : p);
    /* With the all-reduce the failure is agreed: nobody freed, all report it. */
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
    PE_CHECK_EQ(block_state(p), SHMALLOC_TLSF_OK);
    PE_CHECK_EQ(heap_counters(shmalloc_current()).used_blocks, 1);
    shmem_free(p);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(bad_free_on_one_pe_fails_on_every_pe_and_frees_nothing)
{
    run_pes(*npes, SMALL_HEAP, pe_bad_free_on_one_pe, NULL);
}

/* PE 0 puts 64 bytes past the end of a block on PE 1, over the next
   block's header there: the collective free of that block, and a realloc
   that would grow into it, fail on both PEs with SHMEMX_MALLOC_CORRUPT_HEAP
   (PE 1 names the block), nothing crashes, other blocks come and go, and
   once the bytes are put back both blocks free. */
static void pe_put_past_the_end(void *arg)
{
    int me = shmem_my_pe();
    char *a = shmem_malloc(100), *b = shmem_malloc(100), *c;
    size_t end = shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(shmalloc_current()), a);
    unsigned char saved[64], ones[64];
    (void)arg;
    PE_CHECK(a != NULL && b != NULL);
    memset(ones, 0xff, sizeof ones);
    if (me == 0) {
        shmem_getmem(saved, a + end, sizeof saved, 1);
        shmem_putmem(a + end, ones, sizeof ones, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    shmem_free(b);
    PE_CHECK_EQ(malloc_error, SHMEMX_MALLOC_CORRUPT_HEAP);
    PE_CHECK(shmem_realloc(a, 5000) == NULL);
    PE_CHECK_EQ(malloc_error, SHMEMX_MALLOC_CORRUPT_HEAP);
    PE_CHECK_EQ(shmalloc_check(-1) != 0, me == 1);
    c = shmem_malloc(3000);
    PE_CHECK(c != NULL);
    CHECK_SYMMETRIC(c);
    shmem_free(c);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    if (me == 0) {
        shmem_putmem(a + end, saved, sizeof saved, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    shmem_free(b);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmem_free(a);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    CHECK_HEAP_EMPTY();
}

Test(pthreads, a_put_past_a_blocks_end_makes_the_peers_next_free_fail_on_every_pe, .timeout = TEST_TIMEOUT)
{
    run_pes(2, SMALL_HEAP, pe_put_past_the_end, NULL);
    expect_reported("PE 1: free(the pointer at offset", 1);
    expect_reported("PE 1: realloc(the pointer at offset", 1);
    expect_reported("a write past the end of the block before it?", 2);
}

/* PE 0 fills most of its heap outside the collective layer, so only its
   part of the next collective malloc fails. */
static void pe_local_exhaustion(void *arg)
{
    int me = shmem_my_pe();
    shmalloc_tlsf *t = shmalloc_heap_tlsf(shmalloc_current());
    void *hog = me == 0 ? shmalloc_tlsf_malloc(t, SMALL_HEAP / 2 + 4096) : NULL;
    size_t used_before = heap_counters(shmalloc_current()).used_blocks;
    void *p;
    (void)arg;
    PE_CHECK(me != 0 || hog != NULL);
    p = shmem_malloc(SMALL_HEAP / 2);
    PE_CHECK(p == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_FAIL);
    PE_CHECK_EQ(heap_counters(shmalloc_current()).used_blocks, used_before);
    if (hog != NULL) PE_CHECK_EQ(shmalloc_tlsf_free(t, hog), SHMALLOC_TLSF_OK);
    shmem_barrier_all();
    p = shmem_malloc(SMALL_HEAP / 2); /* now it fits everywhere */
    PE_CHECK(p != NULL);
    CHECK_SYMMETRIC(p);
    shmem_free(p);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(malloc_failing_on_one_pe_returns_null_on_every_pe)
{
    run_pes(*npes, SMALL_HEAP, pe_local_exhaustion, NULL);
    expect_reported("PE 0: out of symmetric memory: malloc of 524288 bytes", 1);
    expect_reported("out of symmetric memory", 1);
}

static void pe_private_error(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), q;
    (void)arg;
    PE_CHECK(shmem_malloc((size_t)1 << 40) == NULL); /* fails on every PE */
    PE_CHECK(malloc_error != SHMEM_MALLOC_OK);
    shmem_barrier_all();
    if (me % 2 == 0) PE_CHECK(shmem_malloc(0) == NULL); /* local: sets OK */
    shared.errors[me] = malloc_error;
    shmem_barrier_all();
    for (q = 0; q < npes; q++) {
        if (q % 2 == 0) PE_CHECK_EQ(shared.errors[q], SHMEM_MALLOC_OK);
        else PE_CHECK(shared.errors[q] != SHMEM_MALLOC_OK);
    }
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(malloc_error_of_one_pe_is_not_seen_by_another)
{
    run_pes(*npes, SMALL_HEAP, pe_private_error, NULL);
    expect_reported("out of symmetric memory: malloc of 1099511627776 bytes", *npes);
}

static void check_mismatch(void *p, int line)
{
    long want = shmem_n_pes() > 1 ? SHMEM_MALLOC_SYMMSIZE_FAILED : SHMEM_MALLOC_OK;
    if (shmem_n_pes() > 1 && p != NULL) pe_failed(line, "mismatched call returned %p", p);
    if (malloc_error != want) pe_failed(line, "malloc_error %ld, expected %ld", malloc_error, want);
}

static void pe_mismatched_sizes(void *arg)
{
    size_t me = (size_t)shmem_my_pe(), used;
    void *keep = shmem_malloc(100), *p;
    (void)arg;
    used = heap_counters(shmalloc_current()).used_blocks;
    fill_pattern(keep, 100, 5);
    p = shmem_malloc(64 + me);
    check_mismatch(p, __LINE__);
    if (shmem_n_pes() == 1) shmem_free(p);
    p = shmem_calloc(4 + me, 16);
    check_mismatch(p, __LINE__);
    if (shmem_n_pes() == 1) shmem_free(p);
    p = shmem_align(64, 100 + 16 * me);
    check_mismatch(p, __LINE__);
    if (shmem_n_pes() == 1) shmem_free(p);
    p = shmem_realloc(keep, 200 + me);
    check_mismatch(p, __LINE__);
    if (shmem_n_pes() == 1) keep = p;
    PE_CHECK_EQ(heap_counters(shmalloc_current()).used_blocks, used);
    PE_CHECK_EQ(first_unlike(keep, 100, 5), 100); /* the old block is intact */
    shmem_free(keep);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(mismatched_sizes_give_null_and_symmsize_failed_on_every_pe)
{
    run_pes(*npes, SMALL_HEAP, pe_mismatched_sizes, NULL);
    expect_reported(": the sizes\n", *npes > 1 ? *npes : 0);
}

/* A mismatch names, on each PE, the first PE whose call differs from its
   own and what that PE passed, both calls numbered the same way: PE
   npes / 2 asks for 300 bytes where the others ask for 100.  In debug
   mode that PE first allocates without a barrier, so its call numbers run
   one ahead. */
static void pe_one_pe_asks_for_more(void *arg)
{
    int me = shmem_my_pe(), odd = shmem_n_pes() / 2, debug = arg != NULL;
    void *keep = shmem_malloc(64), *ahead = NULL, *p;
    if (debug && me == odd) ahead = shmem_malloc_with_hints(32, SHMEMX_MALLOC_NO_BARRIER);
    p = shmem_malloc(me == odd ? 300 : 100);
    PE_CHECK(p == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    if (ahead) /* this PE's alone: no collective free can take it */
        PE_CHECK_EQ(shmalloc_tlsf_free(shmalloc_heap_tlsf(shmalloc_current()), ahead), SHMALLOC_TLSF_OK);
    shmem_free(keep);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    CHECK_HEAP_EMPTY();
}

static void expect_mismatch_named(int npes, int debug)
{
    int pe, odd = npes / 2;
    char mine[64], theirs[64];
    for (pe = 0; pe < npes; pe++) {
        unsigned long long calls = pe == odd && debug ? 3 : 2, other_calls = pe != odd && debug ? 3 : 2;
        snprintf(mine, sizeof mine, "malloc(%d bytes), its collective call %llu", pe == odd ? 300 : 100, calls);
        snprintf(theirs, sizeof theirs, "malloc(%d bytes), its collective call %llu", pe == odd ? 100 : 300,
                 other_calls);
        assert_said(HEAP_MISMATCH, pe, mine, pe == odd ? 0 : odd, theirs,
                    debug ? "the sizes and the call numbers" : "the sizes");
    }
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISMATCH), (size_t)npes, "%s", out_text[2]);
}

static int two_and_four[] = {2, 4};

ParameterizedTestParameters(pes, a_mismatch_names_the_first_pe_that_differs_and_what_it_passed)
{
    return cr_make_param_array(int, two_and_four, 2);
}
ParameterizedTest(int *npes, pes, a_mismatch_names_the_first_pe_that_differs_and_what_it_passed,
                  .timeout = TEST_TIMEOUT)
{
    run_pes(*npes, SMALL_HEAP, pe_one_pe_asks_for_more, NULL);
    expect_mismatch_named(*npes, 0);
}

ParameterizedTestParameters(pes, in_debug_mode_a_mismatch_gives_both_pes_call_numbers)
{
    return cr_make_param_array(int, two_and_four, 2);
}
ParameterizedTest(int *npes, pes, in_debug_mode_a_mismatch_gives_both_pes_call_numbers, .timeout = TEST_TIMEOUT)
{
    setenv("SHMALLOC_DEBUG", "1", 1);
    run_pes(*npes, SMALL_HEAP, pe_one_pe_asks_for_more, "debug");
    expect_mismatch_named(*npes, 1);
}

/* Not in debug mode either: PEs that free or resize different blocks, ask
   for different alignments, or make different calls of the same size
   would have different heaps from then on, so the call fails on every PE
   and changes nothing. */
static void pe_mismatched_calls(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    char *a = (char *)shmem_malloc(100), *b = (char *)shmem_malloc(200), *p;
    shmalloc_counters before = heap_counters(shmalloc_current());
    (void)arg;
    fill_pattern(a, 100, 1);
    fill_pattern(b, 200, 2);
    shmem_free(me == 1 ? b : a); /* PE 1 frees the other block */
    check_mismatch(NULL, __LINE__);
    if (npes == 1) a = (char *)shmem_malloc(100);
    p = (char *)shmem_realloc(me == 1 ? b : a, 300);
    check_mismatch(p, __LINE__);
    if (npes == 1) a = p;
    p = (char *)shmem_realloc(me == 1 ? b : a, 2 * SMALL_HEAP); /* too large too: the mismatch is the news */
    PE_CHECK(p == NULL);
    PE_CHECK_EQ(malloc_error, npes > 1 ? SHMEM_MALLOC_SYMMSIZE_FAILED : SHMEM_MALLOC_REALLOC_FAILED);
    p = (char *)shmem_align(me == 1 ? 128 : 64, 64);
    check_mismatch(p, __LINE__);
    if (npes == 1) shmem_free(p);
    p = (char *)(me == 1 ? shmem_calloc(8, 8) : shmem_malloc(64));
    check_mismatch(p, __LINE__);
    if (npes == 1) shmem_free(p);
    if (npes > 1) { /* nothing was freed, moved or taken */
        PE_CHECK_EQ(heap_counters(shmalloc_current()).used_blocks, before.used_blocks);
        PE_CHECK_EQ(heap_counters(shmalloc_current()).in_use, before.in_use);
        PE_CHECK_EQ(first_unlike(a, 100, 1), 100);
        PE_CHECK_EQ(first_unlike(b, 200, 2), 200);
    }
    shmem_free(a);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmem_free(b);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(different_blocks_alignments_or_calls_give_null_and_symmsize_failed_on_every_pe)
{
    run_pes(*npes, SMALL_HEAP, pe_mismatched_calls, NULL);
    if (*npes == 1) expect_reported("out of symmetric memory: realloc of 2097152 bytes", 1);
    else expect_reported(", differs from PE ", *npes);
}

/* A grow in place made before the agreement is undone when the call
   fails, even a grow of one minimum block (32 B), a tail that a shrink
   otherwise keeps as slack: the block has its old size again. */
static void pe_failed_small_grow(void *arg)
{
    shmalloc_tlsf *t = shmalloc_heap_tlsf(shmalloc_current());
    void *keep = shmem_malloc(100), *p;
    size_t before = shmalloc_tlsf_usable_size(t, keep);
    (void)arg;
    p = shmem_realloc(keep, before + 32 + 16 * (size_t)shmem_my_pe()); /* PE 0 grows by 32 bytes */
    check_mismatch(p, __LINE__);
    if (shmem_n_pes() == 1) keep = p;
    else PE_CHECK_EQ(shmalloc_tlsf_usable_size(t, keep), before);
    shmem_free(keep);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(a_failed_grow_of_one_minimum_block_leaves_the_block_its_old_size)
{
    run_pes(*npes, SMALL_HEAP, pe_failed_small_grow, NULL);
    expect_reported(": the sizes\n", *npes > 1 ? *npes : 0);
}

static void pe_malloc_zero(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), k;
    (void)arg;
    PE_CHECK(shmem_malloc((size_t)1 << 40) == NULL);
    if (me == 0) /* alone: a barrier in it would pair with the peers' below */
        for (k = 0; k < 3; k++) {
            PE_CHECK(shmem_malloc(0) == NULL);
            PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
            PE_CHECK(shmem_calloc(0, 8) == NULL);
        }
    __atomic_add_fetch(&shared.arrived, 1, __ATOMIC_SEQ_CST);
    shmem_barrier_all();
    PE_CHECK_EQ(__atomic_load_n(&shared.arrived, __ATOMIC_SEQ_CST), npes);
    shmem_barrier_all();
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(malloc_zero_returns_null_with_ok_and_no_barrier)
{
    run_pes(*npes, SMALL_HEAP, pe_malloc_zero, NULL);
    expect_reported("out of symmetric memory: malloc of 1099511627776 bytes", *npes);
}

static void pe_free_null(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), k;
    void *p = shmem_malloc(32);
    (void)arg;
    if (me == 0)
        for (k = 0; k < 3; k++) {
            shmem_free(NULL);
            shfree(NULL);
        }
    PE_CHECK_EQ(heap_counters(shmalloc_current()).used_blocks, 1);
    __atomic_add_fetch(&shared.arrived, 1, __ATOMIC_SEQ_CST);
    shmem_barrier_all();
    PE_CHECK_EQ(__atomic_load_n(&shared.arrived, __ATOMIC_SEQ_CST), npes);
    shmem_free(p);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(free_null_does_nothing_and_does_not_synchronise)
{
    run_pes(*npes, SMALL_HEAP, pe_free_null, NULL);
}

/* ---- shmem_ptr and friends --------------------------------------------------- */
static void pe_ptr_edges(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), on_stack = 0, q;
    char *p = (char *)shmem_malloc(64);
    (void)arg;
    PE_CHECK(shmem_ptr(p, me) == p);
    PE_CHECK(shmem_ptr(p, -1) == NULL);
    PE_CHECK(shmem_ptr(p, npes) == NULL);
    PE_CHECK(shmem_ptr(&on_stack, me) == NULL);
    PE_CHECK(shmem_ptr(&shared, 0) == NULL); /* globals are not symmetric here */
    PE_CHECK(shmem_ptr(NULL, 0) == NULL);
    for (q = 0; q < npes; q++) PE_CHECK_EQ(shmem_addr_accessible(p + 10, q), 1);
    PE_CHECK_EQ(shmem_addr_accessible(p, npes), 0);
    PE_CHECK_EQ(shmem_addr_accessible(p, -1), 0);
    PE_CHECK_EQ(shmem_addr_accessible(&on_stack, 0), 0);
    shmem_free(p);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(shmem_ptr_is_null_for_a_bad_pe_or_an_address_outside_the_heap)
{
    run_pes(*npes, SMALL_HEAP, pe_ptr_edges, NULL);
}

Test(pthreads, pe_queries_outside_a_pe_thread_say_no_pe)
{
    int x = 0;
    cr_assert_eq(shmem_my_pe(), -1);
    cr_assert_eq(shmem_n_pes(), 0);
    cr_assert_null(shmem_ptr(&x, 0));
    cr_assert_eq(shmem_addr_accessible(&x, 0), 0);
    shmem_barrier_all(); /* returns at once */
    shmem_quiet();
}

static void pe_put_outside(void *arg)
{
    int on_stack = 0, one = 1;
    (void)arg;
    shmem_barrier_all();
    if (shmem_my_pe() == shmem_n_pes() - 1) shmem_putmem(&on_stack, &one, sizeof one, 0);
    shmem_barrier_all(); /* never completes: the put above ends the process */
}

Test(pthreads, putmem_to_a_non_symmetric_address_exits_with_status_1, .exit_code = 1,
     .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    shmalloc_pthreads_run(2, SMALL_HEAP, pe_put_outside, NULL);
}

static void pe_get_past_end(void *arg)
{
    char *p = (char *)shmem_malloc(64), sink[64];
    (void)arg;
    if (shmem_my_pe() == 0) shmem_getmem(sink, p, SMALL_HEAP * 2, 1 % shmem_n_pes());
    shmem_barrier_all();
}

Test(pthreads, getmem_of_a_range_past_the_heap_end_exits_with_status_1, .exit_code = 1,
     .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    shmalloc_pthreads_run(2, SMALL_HEAP, pe_get_past_end, NULL);
}

static void pe_global_exit(void *arg)
{
    (void)arg;
    if (shmem_my_pe() == 1) {
        sleep_seconds(0.02); /* the others are waiting in the barrier by now */
        shmem_global_exit(7);
    }
    shmem_barrier_all();
}

Test(pthreads, global_exit_from_one_pe_ends_the_process_with_its_status, .exit_code = 7,
     .timeout = TEST_TIMEOUT)
{
    shmalloc_pthreads_run(4, SMALL_HEAP, pe_global_exit, NULL);
}

/* ---- shmalloc_pthreads_run's own checks --------------------------------------- */
static void pe_count_call(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&shared.calls, 1, __ATOMIC_RELAXED);
}

/* Through the output hook, as every message of the transport. */
Test(pthreads, run_with_npes_outside_1_to_1024_fails_without_starting_pes)
{
    static const int bad[] = {0, -1, 1025, 100000};
    size_t i;
    capture_start();
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_neq(shmalloc_pthreads_run(bad[i], SMALL_HEAP, pe_count_call, NULL), 0,
                      "npes %d accepted", bad[i]);
    cr_assert_neq(shmalloc_pthreads_run(2, SMALL_HEAP, NULL, NULL), 0, "NULL pe_main accepted");
    capture_stop();
    cr_assert_eq(shared.calls, 0);
    cr_assert_eq(out_said_id(PTHREADS_BAD_NPES), 4, "%s", out_text[2]);
    assert_said(PTHREADS_BAD_NPES, 100000, SHMALLOC_PTHREADS_MAX_PES);
    /* the transport's own table (transports/pthreads/messages.h), after the core's */
    cr_assert(out_ids[0] >= SHMALLOC_MSG_COUNT, "ID %d is the core's", out_ids[0]);
    assert_named(out_ids[0], "PTHREADS_BAD_NPES");
    cr_assert_eq(out_said_id(PTHREADS_NO_PE_MAIN), 1, "%s", out_text[2]);
}

Test(pthreads, run_with_a_bad_heap_size_variable_fails_naming_it,
     .init = cr_redirect_stderr)
{
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "abc", 1);
    capture_start();
    cr_assert_neq(shmalloc_pthreads_run(2, 0, pe_count_call, NULL), 0);
    capture_stop();
    cr_assert_eq(shared.calls, 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE") != NULL && strstr(out_text[2], "abc"),
              "message was: %s", out_text[2]);
}

Test(pthreads, run_fails_cleanly_when_the_heaps_cannot_be_mapped, .timeout = TEST_TIMEOUT)
{
    /* 8 x 32 TiB is more than a 47-bit address space holds. */
    capture_start();
    cr_assert_neq(shmalloc_pthreads_run(8, (size_t)1 << 45, pe_count_call, NULL), 0);
    capture_stop();
    cr_assert_eq(shared.calls, 0);
    cr_assert_eq(out_said_id(START_MAP_FAILED), 1, "%s", out_text[2]);
}

/* Heaps the environment's size makes too large: the message names the
   variable and says to ask for less; asking for less runs. */
Test(pthreads, heaps_too_large_for_the_address_space_name_the_size_variable,
     .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "32T", 1); /* 8 x 32 TiB: more than a 47-bit address space holds */
    capture_start();
    cr_assert_neq(shmalloc_pthreads_run(8, 0, pe_count_call, NULL), 0);
    capture_stop();
    cr_assert_eq(shared.calls, 0);
    cr_assert(strstr(out_text[2], "(SHMEM_SYMMETRIC_HEAP_SIZE=32T asks for 35184372088832 bytes)") &&
              strstr(out_text[2], "; ask for less with SHMEM_SYMMETRIC_HEAP_SIZE\n"), "message was: %s", out_text[2]);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "1M", 1);
    cr_assert_eq(shmalloc_pthreads_run(8, 0, pe_count_call, NULL), 0);
    cr_assert_eq(shared.calls, 8);
}

/* A 10 000-character value of each size or timeout variable, bad (all
   1s) or good but too large to map (leading 0s): every message that
   quotes it quotes 40 characters and its length, and keeps its reason
   and advice to the line's end.  A good long timeout runs. */
typedef struct long_value_case {
    const char *var;
    const char *tail;     /* the value's last characters; 0s before */
    const char *id;       /* the message's name (shmalloc_message_name) */
    const char *reason;   /* the message's end */
} long_value_case;

static const long_value_case long_value_cases[] = {
    {"SHMEM_SYMMETRIC_HEAP_SIZE", NULL, "OPTION_BAD", "is not a heap size: expected a positive number, "
     "decimals allowed, with an optional K, M, G or T suffix (powers of 1024), at most 64T, e.g. 512M or 1.5G\n"},
    {"SHMALLOC_HEAP_MAX", NULL, "OPTION_BAD", "is not a heap size: expected 0 (no growth) or a size such "
     "as 64G, with an optional K, M, G or T suffix (powers of 1024), at most 64T\n"},
    {"SHMALLOC_TIMEOUT", NULL, "OPTION_BAD", "is not a timeout: expected a whole number of "
     "seconds from 1 to 1000000\n"},
    {"SHMEM_SYMMETRIC_HEAP_SIZE", "32T", "START_MAP_FAILED_VARIABLE", "; ask for less with "
     "SHMEM_SYMMETRIC_HEAP_SIZE\n"}, /* 8 x 32 TiB: more than a 47-bit address space holds */
    {"SHMALLOC_HEAP_MAX", "32T", "START_RESERVE_FAILED", "; ask for less\n"},
};

Test(pthreads, a_long_value_of_each_variable_is_quoted_short_and_the_reason_kept, .timeout = TEST_TIMEOUT)
{
    static char value[10001];
    size_t i;
    for (i = 0; i < sizeof long_value_cases / sizeof long_value_cases[0]; i++) {
        const long_value_case *c = &long_value_cases[i];
        char want[160];
        memset(value, c->tail ? '0' : '1', 10000);
        if (c->tail) memcpy(value + 10000 - strlen(c->tail), c->tail, strlen(c->tail));
        clear_size_env();
        setenv(c->var, value, 1);
        capture_start();
        cr_assert_neq(shmalloc_pthreads_run(8, 0, pe_count_call, NULL), 0, "%s", c->var);
        capture_stop();
        unsetenv(c->var);
        cr_assert_eq(shared.calls, 0);
        cr_assert_eq(out_said_named(c->id), 1, "%s: %s", c->var, out_text[2]);
        snprintf(want, sizeof want, "%s=%s%.40s...", c->var, c->tail ? "" : "\"", value); /* 40 of the 10 000 */
        cr_assert(strstr(out_text[2], want) && strstr(out_text[2], " (10000 characters)"), "%s: expected %s in %s",
                  c->var, want, out_text[2]);
        cr_assert(strstr(out_text[2], c->reason), "%s: the reason is cut: %s", c->var, out_text[2]);
    }
    memset(value, '0', 10000);
    value[9999] = '5';
    setenv("SHMALLOC_TIMEOUT", value, 1);
    capture_start();
    cr_assert_eq(shmalloc_pthreads_run(2, SMALL_HEAP, pe_count_call, NULL), 0, "%s", out_text[2]);
    capture_stop();
    unsetenv("SHMALLOC_TIMEOUT");
    cr_assert_eq(shared.calls, 2);
    cr_assert_eq(out_len[2], 0, "%s", out_text[2]);
}

/* What a PE sees of its heap's size: the largest block it can allocate. */
static void pe_record_size(void *arg)
{
    void *p = shmem_malloc(*(const size_t *)arg);
    shared.values[shmem_my_pe()] = shmalloc_heap_size(shmalloc_current());
    shared.errors[shmem_my_pe()] = malloc_error;
    shmem_free(p);
}

static size_t heap_size_with(size_t explicit_size, size_t must_fit)
{
    memset(&shared, 0, sizeof shared);
    cr_assert_eq(shmalloc_pthreads_run(2, explicit_size, pe_record_size, &must_fit), 0);
    cr_assert_eq(shared.errors[0], SHMEM_MALLOC_OK, "malloc(%zu) failed", must_fit);
    cr_assert_eq(shared.values[0], shared.values[1]);
    return shared.values[0];
}

Test(pthreads, heap_size_comes_from_the_argument_then_each_variable_in_order,
     .timeout = TEST_TIMEOUT)
{
    size_t one_m = (size_t)1 << 20, size;
    clear_size_env();
    setenv("SMA_SYMMETRIC_SIZE", "3M", 1);
    size = heap_size_with(0, 3 * one_m);
    cr_assert(size >= 3 * one_m && size < 4 * one_m, "SMA_SYMMETRIC_SIZE gave %zu", size);
    setenv("SHMEM_SYMMETRIC_SIZE", "2m", 1);
    size = heap_size_with(0, 2 * one_m);
    cr_assert(size >= 2 * one_m && size < 3 * one_m, "SHMEM_SYMMETRIC_SIZE gave %zu", size);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "1.5M", 1);
    size = heap_size_with(0, 3 * one_m / 2);
    cr_assert(size >= 3 * one_m / 2 && size < 2 * one_m, "SHMEM_SYMMETRIC_HEAP_SIZE gave %zu", size);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "abc", 1); /* never read: the argument wins */
    size = heap_size_with(5 * one_m, 5 * one_m);
    cr_assert(size >= 5 * one_m && size < 6 * one_m, "the argument gave %zu", size);
    clear_size_env();
    size = heap_size_with(0, SHMALLOC_DEFAULT_HEAP_SIZE);
    cr_assert(size >= SHMALLOC_DEFAULT_HEAP_SIZE, "the default gave %zu", size);
}

/* A nominal size the program passes wins over the environment: a heap too
   small for a call is advised to the program, and passing the advised
   size serves the call. */
Test(pthreads, a_heap_size_the_program_passes_is_what_the_advice_names, .timeout = TEST_TIMEOUT)
{
    size_t want = (size_t)3 << 20, advised = 0;
    char value[64];
    const char *at;
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "64M", 1); /* never read: the argument wins */
    memset(&shared, 0, sizeof shared);
    capture_start();
    cr_assert_eq(shmalloc_pthreads_run(1, (size_t)1 << 20, pe_record_size, &want), 0);
    capture_stop();
    cr_assert_eq(shared.errors[0], SHMEM_MALLOC_FAIL);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM_TOO_SMALL), 1, "%s", out_text[2]);
    cr_assert(!strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE"), "%s", out_text[2]);
    at = strstr(out_text[2], "the program sets the heap's size, not a variable: have it ask for at least ");
    cr_assert(at && sscanf(strstr(at, "at least "), "at least %63[0-9A-Za-z]", value) == 1, "%s", out_text[2]);
    cr_assert_eq(shmalloc_parse_size(value, &advised), 0, "%s", value);
    heap_size_with(advised, want); /* asserts the call is served */
}

/* The value a too-small heap's advice names after "at least ", checked
   as the variable would be. */
static size_t advised_size(char *value, size_t cap)
{
    const char *at = strstr(out_text[2], " to at least ");
    size_t bytes = 0;
    char format[32];
    snprintf(format, sizeof format, " to at least %%%zu[0-9A-Za-z]", cap - 1);
    cr_assert(at && sscanf(at, format, value) == 1, "%s", out_text[2]);
    cr_assert_eq(shmalloc_parse_size(value, &bytes), 0, "%s", value);
    return bytes;
}

/* SHMEM_SYMMETRIC_HEAP_SIZE=1k is below the smallest heap: said once for
   the run, with the heap each PE has.  A malloc that heap cannot serve
   names its size as mapped, and advises a nominal size in the largest
   whole unit (2K, not the 1856 bytes it has), which serves the call. */
Test(pthreads, a_size_raised_to_the_smallest_heap_is_said_and_the_advice_serves, .timeout = TEST_TIMEOUT)
{
    size_t want = 1849, page = (size_t)sysconf(_SC_PAGESIZE);
    char value[64];
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "1k", 1);
    memset(&shared, 0, sizeof shared);
    capture_start();
    cr_assert_eq(shmalloc_pthreads_run(2, 0, pe_record_size, &want), 0);
    capture_stop();
    cr_assert_eq(shared.errors[0], SHMEM_MALLOC_FAIL);
    cr_assert_eq(out_said_id(START_SIZE_RAISED), 1, "once for the run: %s", out_text[2]);
    assert_said(START_SIZE_RAISED, "SHMEM_SYMMETRIC_HEAP_SIZE=1k", (size_t)1024, shared.values[0] - 16,
                (shmalloc_heap_bytes(16) + page - 1) / page * page); /* heap_info's size: the last 16 not counted */
    cr_assert(strstr(out_text[2], " bytes as mapped (at most "), "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "set SHMEM_SYMMETRIC_HEAP_SIZE to at least 2K (a nominal size: the heap as mapped "
                                  "is larger)"), "%s", out_text[2]);
    advised_size(value, sizeof value);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", value, 1); /* the advice, followed */
    memset(&shared, 0, sizeof shared);
    capture_start();
    cr_assert_eq(shmalloc_pthreads_run(2, 0, pe_record_size, &want), 0);
    capture_stop();
    cr_assert_eq(shared.errors[0], SHMEM_MALLOC_OK, "%s", out_text[2]);
    cr_assert_eq(shared.errors[1], SHMEM_MALLOC_OK, "%s", out_text[2]);
    cr_assert_eq(out_len[2], 0, "%s", out_text[2]);
    clear_size_env();
}

/* A call that needs a heap of 1 TiB is advised 1T, not 1048576M; a heap
   of that nominal size serves it, where the address space holds one
   (Valgrind's does not). */
Test(pthreads, a_terabyte_heap_is_advised_as_1T_and_serves, .timeout = TEST_TIMEOUT)
{
    const size_t tib = (size_t)1 << 40;
    size_t want = tib;
    char value[64];
    int rc;
    while (shmalloc_tlsf_block_need(want, 16) - 16 > tib) want -= 4096; /* the largest call a 1 TiB heap serves */
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "1M", 1);
    memset(&shared, 0, sizeof shared);
    capture_start();
    cr_assert_eq(shmalloc_pthreads_run(1, 0, pe_record_size, &want), 0);
    capture_stop();
    cr_assert_eq(shared.errors[0], SHMEM_MALLOC_FAIL);
    cr_assert_eq(advised_size(value, sizeof value), tib, "%s", out_text[2]);
    cr_assert(!strcmp(value, "1T"), "%s: %s", value, out_text[2]);
#if defined(__SANITIZE_THREAD__)
    cr_skip_test("ThreadSanitizer's shadow of a 1 TiB heap ends the process: the advice's text was checked");
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
    cr_skip_test("ThreadSanitizer's shadow of a 1 TiB heap ends the process: the advice's text was checked");
#  endif
#endif
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", value, 1); /* the advice, followed */
    memset(&shared, 0, sizeof shared);
    capture_start();
    rc = shmalloc_pthreads_run(1, 0, pe_record_size, &want);
    capture_stop();
    clear_size_env();
    if (rc != 0 && out_said_id(START_MAP_FAILED_VARIABLE) == 1)
        cr_skip_test("no 1 TiB of address space here: the advice's text was checked, not followed");
    cr_assert_eq(rc, 0, "%s", out_text[2]);
    cr_assert_eq(shared.errors[0], SHMEM_MALLOC_OK);
}

/* With separate metadata nothing of the allocator's is in the heap's
   memory: a peer's put 16 to 64 bytes past the end of a block lands in
   the next block's bytes, and every later call, and the checker, are as
   if it had not happened.  (With headers in the heap, the same put
   overwrites the next block's header, and the free of that block fails:
   a_put_past_a_blocks_end_makes_the_peers_next_free_fail_on_every_pe.) */
static void pe_put_past_the_end_separate(void *arg)
{
    size_t over = *(const size_t *)arg;
    char *a = shmem_malloc(100), *b = shmem_malloc(100), *c, junk[64];
    memset(junk, 0xEE, sizeof junk);
    shmem_barrier_all();
    if (shmem_my_pe() == 1) shmem_putmem(a + 100, junk, over, 0); /* into PE 0's heap, past a's end */
    shmem_barrier_all();
    shmem_free(b); /* the block whose start the put reached */
    shmem_free(a);
    c = shmem_malloc(200); /* a's and b's room, merged: the same offset on every PE */
    PE_CHECK(c == a);
    shmem_free(c);
    PE_CHECK_EQ(shmalloc_check(0), 0);
    CHECK_HEAP_EMPTY();
}

Test(pthreads, in_separate_mode_a_put_past_a_blocks_end_harms_no_later_call, .timeout = TEST_TIMEOUT)
{
    static size_t over[] = {16, 32, 64};
    setenv("SHMALLOC_METADATA", "separate", 1);
    for (int i = 0; i < 3; i++) run_pes(2, SMALL_HEAP, pe_put_past_the_end_separate, &over[i]);
}

/* ---- a transport whose members fail --------------------------------------------
   Each PE makes a second heap, over its own memory, whose transport is a
   barrier and an all-reduce built on shmem_barrier_all, which synchronise
   like real ones and return FAILING on the PEs and the call a case asks
   for.  The heap must fail the call with SHMEMX_MALLOC_BAD_TRANSPORT and
   a line naming the member and its status on every PE that sees it: the
   PE it failed on, and every other PE when the PEs can still agree. */
#define FAILING (-7)
#define FT_NOMINAL ((size_t)64 << 10)
#define FT_MAX ((size_t)1 << 20)
enum { FT_LOCK = 1, FT_BARRIER, FT_ALLREDUCE, FT_REGISTER };
enum { FT_CREATE, FT_MALLOC, FT_GROW };

typedef struct ft_case {
    int call, member;
    int on_all;   /* on every PE, else on the last */
    int at;       /* the member's at-th call of the call fails */
    int reduce;   /* the transport has the all-reduce */
} ft_case;

static uint64_t ft_values[MAX_PES][SHMALLOC_REDUCE_MAX];
static __thread struct {
    int member, at, calls;
} ft_arm; /* this PE's: its member's at-th call from now fails */

static int ft_status(int member)
{
    if (ft_arm.member != member || !ft_arm.at || ++ft_arm.calls != ft_arm.at) return 0;
    ft_arm.at = 0;
    return FAILING;
}

static int ft_barrier(void *user)
{
    (void)user;
    shmem_barrier_all();
    return ft_status(FT_BARRIER);
}

static int ft_allreduce(void *user, uint64_t *values, int count)
{
    int me = shmem_my_pe(), q, i, status = ft_status(FT_ALLREDUCE);
    uint64_t out[SHMALLOC_REDUCE_MAX] = {0};
    (void)user;
    memcpy(ft_values[me], values, (size_t)count * sizeof *values);
    shmem_barrier_all();
    for (q = 0; q < shmem_n_pes(); q++)
        for (i = 0; i < count; i++)
            if (ft_values[q][i] > out[i]) out[i] = ft_values[q][i];
    shmem_barrier_all(); /* nobody writes the next values while others read */
    if (!status) memcpy(values, out, (size_t)count * sizeof *values);
    return status;
}

static int ft_lock(void *user)
{
    (void)user;
    return ft_status(FT_LOCK);
}
static int ft_unlock(void *user)
{
    (void)user;
    return 0;
}
static int ft_register(void *user, void *base, size_t bytes)
{
    (void)user, (void)base, (void)bytes;
    return ft_status(FT_REGISTER);
}

static shmalloc_heap *ft_create(const ft_case *c, void *mem, size_t bytes, long *err)
{
    shmalloc_transport tp;
    memset(&tp, 0, sizeof tp);
    tp.barrier = ft_barrier;
    tp.allreduce_max = c->reduce ? ft_allreduce : NULL;
    tp.lock = ft_lock;
    tp.unlock = ft_unlock;
    tp.register_region = ft_register;
    tp.pe = shmem_my_pe();
    tp.npes = shmem_n_pes();
    return shmalloc_heap_create_growable(mem, bytes, FT_NOMINAL, &tp, err);
}

static void pe_transport_fails(void *arg)
{
    const ft_case *c = (const ft_case *)arg;
    int me = shmem_my_pe(), armed = c->on_all || me == shmem_n_pes() - 1;
    long code = c->member == FT_REGISTER ? SHMEMX_MALLOC_REGISTER_FAILED : SHMEMX_MALLOC_BAD_TRANSPORT;
    size_t bytes = shmalloc_heap_bytes(FT_MAX), big = 3 * FT_NOMINAL;
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    shmalloc_heap *h;
    shmalloc_info before, after;
    long err = 0;
    void *p;
    PE_CHECK(mem != MAP_FAILED);
    if (armed && c->call == FT_CREATE) ft_arm.member = c->member, ft_arm.at = c->at, ft_arm.calls = 0;
    h = ft_create(c, mem, bytes, &err);
    if (c->call == FT_CREATE) {
        PE_CHECK(h == NULL);
        PE_CHECK_EQ(err, code);
        shmem_barrier_all();
        if (!h) h = ft_create(c, mem, bytes, &err); /* the transport works again */
    }
    PE_CHECK(h != NULL);
    if (!h) return;
    shmalloc_heap_info(h, &before);
    if (armed && c->call != FT_CREATE) ft_arm.member = c->member, ft_arm.at = c->at, ft_arm.calls = 0;
    p = shmalloc_heap_malloc(h, c->call == FT_GROW ? big : 100, &err);
    if (c->call != FT_CREATE) {
        PE_CHECK(p == NULL);
        PE_CHECK_EQ(err, SHMEMX_MALLOC_BAD_TRANSPORT);
        shmalloc_heap_info(h, &after);
        PE_CHECK_EQ(after.used_blocks, before.used_blocks);
        PE_CHECK_EQ(after.heap_size, before.heap_size);
        p = shmalloc_heap_malloc(h, c->call == FT_GROW ? big : 100, &err); /* works again, the same everywhere */
    }
    PE_CHECK(p != NULL);
    ft_values[me][0] = (uint64_t)((char *)p - (char *)shmalloc_heap_base(h));
    shmem_barrier_all();
    PE_CHECK_EQ(ft_values[me][0], ft_values[0][0]);
    shmem_barrier_all();
    shmalloc_heap_free(h, p, &err);
    PE_CHECK_EQ(err, SHMEM_MALLOC_OK);
    PE_CHECK_EQ(shmalloc_heap_check(h, -1), 0);
    shmalloc_heap_destroy(h);
    munmap(mem, bytes);
}

static const char *const ft_calls[] = {"create", "malloc", "grow"};
static const char *const ft_members[] = {"", "lock", "barrier", "allreduce_max", "register_region"};

/* The lines case c makes on npes PEs. */
static void expect_transport_failure(const ft_case *c, int npes)
{
    int pe, failed;
    const char *code = c->member == FT_REGISTER ? "SHMEMX_MALLOC_REGISTER_FAILED" : "SHMEMX_MALLOC_BAD_TRANSPORT";
    for (pe = 0; pe < npes; pe++) {
        failed = c->on_all || pe == npes - 1;
        if (failed && c->member == FT_LOCK) assert_said(HEAP_LOCK_FAILED, pe, FAILING);
        else if (failed && c->member == FT_REGISTER) { /* its own message, which names the bytes */
            char prefix[64];
            snprintf(prefix, sizeof prefix, "shmalloc: PE %d: shmalloc_heap_create: ", pe);
            cr_assert(out_said(SHMALLOC_MSG_HEAP_REGISTER_FAILED) == 1 && strstr(out_text[2], prefix), "%s",
                      out_text[2]);
        }
        else if (failed) assert_said(HEAP_TRANSPORT_FAILED, pe, ft_calls[c->call], ft_members[c->member], FAILING);
        else assert_said(HEAP_TRANSPORT_FAILED_ON, pe, ft_calls[c->call], code, ft_members[c->member], npes - 1);
    }
    failed = c->on_all ? npes : 1;
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_TRANSPORT_FAILED) + out_said(SHMALLOC_MSG_HEAP_LOCK_FAILED) +
                     out_said(SHMALLOC_MSG_HEAP_REGISTER_FAILED),
                 (size_t)failed, "%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_TRANSPORT_FAILED_ON), (size_t)(npes - failed), "%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM) + out_said(SHMALLOC_MSG_HEAP_MISUSE), 0, "%s", out_text[2]);
}

static void run_transport_failure(ft_case c, int npes)
{
    run_pes(npes, SMALL_HEAP, pe_transport_fails, &c);
    expect_transport_failure(&c, npes);
}

/* The first of create's two agreements fails on one PE: the second tells the others. */
PE_COUNT_TEST(a_failed_allreduce_on_one_pe_fails_create_on_every_pe_naming_it)
{
    run_transport_failure((ft_case){FT_CREATE, FT_ALLREDUCE, 0, 1, 1}, *npes);
}

PE_COUNT_TEST(a_failed_allreduce_on_every_pe_fails_create_with_its_own_code)
{
    run_transport_failure((ft_case){FT_CREATE, FT_ALLREDUCE, 1, 1, 1}, *npes);
}

PE_COUNT_TEST(a_failed_allreduce_fails_malloc_and_leaves_the_heap_as_it_was)
{
    run_transport_failure((ft_case){FT_MALLOC, FT_ALLREDUCE, 1, 1, 1}, *npes);
}

/* The malloc's own agreement finds no room; the growth's first fails. */
PE_COUNT_TEST(a_failed_allreduce_during_a_growth_fails_the_call_as_the_transport_not_as_no_room)
{
    run_transport_failure((ft_case){FT_GROW, FT_ALLREDUCE, 1, 2, 1}, *npes);
}

PE_COUNT_TEST(a_failed_lock_on_one_pe_fails_malloc_on_every_pe_naming_it)
{
    run_transport_failure((ft_case){FT_MALLOC, FT_LOCK, 0, 1, 1}, *npes);
}

/* register_region has a code of its own, which every PE gets. */
PE_COUNT_TEST(a_failed_register_region_on_one_pe_fails_create_on_every_pe_naming_it)
{
    run_transport_failure((ft_case){FT_CREATE, FT_REGISTER, 0, 1, 1}, *npes);
}

PE_COUNT_TEST(a_failed_barrier_without_an_allreduce_fails_malloc_with_its_own_code)
{
    run_transport_failure((ft_case){FT_MALLOC, FT_BARRIER, 1, 1, 0}, *npes);
}
