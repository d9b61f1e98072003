/* test_pthreads.c - the symmetric heap on the pthreads transport: 1, 2, 4
   and 8 PEs as threads of the test process, and 64 in one test.

   Criterion's asserts belong to the test's main thread, so PE threads
   record failures (a count and the first message) through PE_CHECK and
   run_pes asserts on them once shmalloc_pthreads_run has returned. */
#define TEST_SUPPORT_PES /* the pthreads transport, checks in PE threads */
#include "test_support.h"

#define MAX_PES 64
#define SMALL_HEAP ((size_t)1 << 20)
/* Seconds: a hang fails instead of blocking the run.  One limit for every
   test (with one test's limit longer than the others', LeakSanitizer
   finds a timer of Criterion's leaked), long enough for 64 PEs under
   Valgrind (53 s). */
#define TEST_TIMEOUT 120

/* State the PE threads of one test share; Criterion runs each test in a
   fresh process, run_pes clears it anyway. */
static struct {
    void *ptrs[MAX_PES];
    long errors[MAX_PES];
    size_t values[MAX_PES];
    int arrived; /* atomic */
    int calls;   /* atomic: pe_main invocations */
} shared;

static void run_pes(int npes, size_t heap_size, void (*pe_main)(void *), void *arg)
{
    int rc;
    memset(&shared, 0, sizeof shared);
    capture_start();
    rc = shmalloc_pthreads_run(npes, heap_size, pe_main, arg);
    capture_stop();
    cr_assert_eq(rc, 0, "shmalloc_pthreads_run(%d PEs) returned %d", npes, rc);
    assert_no_pe_failed();
}

/* After run_pes: the PEs printed `words` `times` times, as a call that
   fails on purpose reports. */
static void expect_reported(const char *words, int times)
{
    cr_assert_eq(count_in(out_text[2], words), (size_t)times, "\"%s\" %d times expected in:\n%s", words, times,
                 out_text[2]);
}

/* After run_pes: every line printed is a report of one PE. */
static void expect_only_reports(void)
{
    const char *line;
    for (line = out_text[2]; *line; line = strchr(line, '\n') + 1) {
        cr_assert(strncmp(line, "shmalloc: PE ", 13) == 0, "not a PE's report: %.200s", line);
        cr_assert(strchr(line, '\n') != NULL, "an unfinished line: %s", line);
    }
}

static int block_state(const void *p)
{
    return shmalloc_tlsf_validate(shmalloc_heap_tlsf(shmalloc_current()), p);
}

/* Collective: p on every PE is the block shmem_ptr names from every peer. */
static void check_symmetric(void *p, int line)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), q;
    shared.ptrs[me] = p;
    shmem_barrier_all();
    for (q = 0; q < npes; q++) {
        void *mapped = p != NULL ? shmem_ptr(p, q) : NULL;
        if (mapped != shared.ptrs[q])
            pe_failed(line, "shmem_ptr(%p, %d) is %p but PE %d got %p", p, q, mapped, q,
                      shared.ptrs[q]);
    }
    shmem_barrier_all(); /* nobody publishes the next pointer while others read */
}
#define CHECK_SYMMETRIC(p) check_symmetric((p), __LINE__)

/* Every heap-changing test ends each PE here. */
static void check_heap_empty(int line)
{
    shmalloc_counters c = heap_counters(shmalloc_current());
    if (shmalloc_check(-1) != 0) pe_failed(line, "shmalloc_check(-1) found a corrupted heap");
    if (c.used_blocks != 0) pe_failed(line, "%zu blocks still in use", c.used_blocks);
}
#define CHECK_HEAP_EMPTY() check_heap_empty(__LINE__)

static int pe_counts[] = {1, 2, 4, 8};

/* A test run once for each PE count; *npes in its body. */
#define PE_COUNT_TEST(name)                                                              \
    ParameterizedTestParameters(pes, name)                                              \
    {                                                                                   \
        return cr_make_param_array(int, pe_counts, sizeof pe_counts / sizeof pe_counts[0]); \
    }                                                                                   \
    ParameterizedTest(int *npes, pes, name, .timeout = TEST_TIMEOUT)

/* ---- symmetry and data movement ------------------------------------------- */
static void pe_malloc_symmetric(void *arg)
{
    static const size_t sizes[] = {1, 16, 17, 100, 4096, 3, 70000, 24};
    void *p[sizeof sizes / sizeof sizes[0]];
    size_t i, n = sizeof sizes / sizeof sizes[0];
    (void)arg;
    for (i = 0; i < n; i++) {
        p[i] = shmem_malloc(sizes[i]);
        PE_CHECK(p[i] != NULL);
        PE_CHECK(((uintptr_t)p[i] & (SHMALLOC_ALIGNMENT - 1)) == 0);
        CHECK_SYMMETRIC(p[i]);
        memset(p[i], shmem_my_pe(), sizes[i]);
    }
    shmem_free(p[1]);
    shfree(p[4]);
    shmem_free(p[6]);
    p[1] = shmem_malloc(10);
    CHECK_SYMMETRIC(p[1]);
    p[4] = shmalloc(5000);
    CHECK_SYMMETRIC(p[4]);
    p[6] = shmem_malloc_with_hints(300, SHMEM_MALLOC_ATOMICS_REMOTE | 0x100L);
    CHECK_SYMMETRIC(p[6]);
    for (i = 0; i < n; i++) shmem_free(p[i]);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(malloc_returns_the_same_offset_on_every_pe)
{
    run_pes(*npes, SMALL_HEAP, pe_malloc_symmetric, NULL);
}

#define RING_BYTES 1000

static void pe_put_get(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int left = (me + npes - 1) % npes, right = (me + 1) % npes;
    unsigned char *buf = (unsigned char *)shmem_malloc(RING_BYTES);
    unsigned char local[RING_BYTES];
    size_t at;
    (void)arg;
    PE_CHECK(buf != NULL);
    if (buf == NULL) return;
    memset(buf, 0xee, RING_BYTES);
    fill_pattern(local, RING_BYTES, (unsigned)me);
    shmem_barrier_all(); /* every buf is initialised before anyone puts into it */
    shmem_putmem(buf, local, RING_BYTES, right);
    shmem_putmem(buf, local + 1, 0, right); /* zero bytes: no effect */
    shmem_barrier_all();
    at = first_unlike(buf, RING_BYTES, (unsigned)left);
    if (at != RING_BYTES) pe_failed(__LINE__, "byte %zu put by PE %d is wrong", at, left);

    memset(local, 0, sizeof local);
    shmem_getmem(local, buf, RING_BYTES, right); /* right's buf holds our bytes */
    at = first_unlike(local, RING_BYTES, (unsigned)me);
    if (at != RING_BYTES) pe_failed(__LINE__, "byte %zu got from PE %d is wrong", at, right);
    shmem_free(buf);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(putmem_lands_in_the_peer_block_and_getmem_reads_it_back)
{
    run_pes(*npes, SMALL_HEAP, pe_put_get, NULL);
}

static void pe_barrier_rounds(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), q;
    size_t round;
    (void)arg;
    for (round = 1; round <= 2000; round++) {
        shared.values[me] = round;
        shmem_barrier_all();
        for (q = 0; q < npes; q++)
            if (shared.values[q] != round)
                pe_failed(__LINE__, "round %zu: PE %d's write not seen", round, q);
        shmem_barrier_all(); /* the next round's writes wait for these reads */
    }
}

PE_COUNT_TEST(barrier_all_makes_every_pe_write_visible_to_all)
{
    run_pes(*npes, SMALL_HEAP, pe_barrier_rounds, NULL);
}

/* ---- every collective call is a barrier ------------------------------------ */
#define COLLECTIVE_OPS 13

/* Collective op k of a fixed sequence, successful and failing calls. */
static void collective_op(int k, void **a, void **b)
{
    int on_stack = 0;
    void *q;
    switch (k) {
    case 0: *a = shmem_malloc(128); break;
    case 1: *b = shmem_calloc(8, 16); break;
    case 2: *a = shmem_realloc(*a, 4096); break; /* grows */
    case 3: *a = shmem_realloc(*a, 64); break;   /* shrinks */
    case 4: shmem_free(*b); *b = NULL; break;
    case 5: *b = shmem_align(256, 100); break;
    case 6: *b = shmem_realloc(*b, 0); break;    /* frees */
    case 7: *b = shmem_malloc_with_hints(50, SHMEM_MALLOC_SIGNAL_REMOTE); break;
    case 8: shmem_free(&on_stack); break;        /* fails: not in the heap */
    case 9: /* fails: too large; b is kept */
        q = shmem_realloc(*b, (size_t)1 << 40);
        if (q != NULL) *b = q;
        break;
    case 10: q = shmem_malloc((size_t)1 << 40); shmem_free(q); break; /* fails */
    case 11: shfree(*b); *b = NULL; break;
    default: shfree(*a); *a = NULL; break;
    }
}

static void pe_collectives_wait(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), k, seen;
    void *a = NULL, *b = NULL;
    (void)arg;
    for (k = 0; k < COLLECTIVE_OPS; k++) {
        if (npes > 1 && me == k % npes) sleep_seconds(0.02); /* the late PE */
        __atomic_add_fetch(&shared.arrived, 1, __ATOMIC_SEQ_CST);
        collective_op(k, &a, &b);
        seen = __atomic_load_n(&shared.arrived, __ATOMIC_SEQ_CST);
        if (seen != npes * (k + 1))
            pe_failed(__LINE__, "left collective op %d with %d of %d arrivals", k, seen,
                      npes * (k + 1));
        shmem_barrier_all(); /* nobody arrives at op k+1 before all checked op k */
    }
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(no_pe_leaves_a_collective_call_before_every_pe_arrived)
{
    run_pes(*npes, SMALL_HEAP, pe_collectives_wait, NULL);
    expect_reported("out of symmetric memory: realloc of 1099511627776 bytes", *npes);
}

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
    expect_reported("differs from another PE's call: the sizes", *npes > 1 ? *npes : 0);
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
    else expect_reported("differs from another PE's call", *npes);
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
    expect_reported("differs from another PE's call: the sizes", *npes > 1 ? *npes : 0);
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

/* ---- realloc, one case per test ----------------------------------------------- */
static void pe_realloc_null(void *arg)
{
    void *p = shmem_realloc(NULL, 300);
    (void)arg;
    PE_CHECK(p != NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    CHECK_SYMMETRIC(p);
    shrealloc(p, 0);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_of_null_allocates_a_symmetric_block)
{
    run_pes(*npes, SMALL_HEAP, pe_realloc_null, NULL);
}

static void pe_realloc_zero(void *arg)
{
    void *p = shmem_malloc(300);
    (void)arg;
    PE_CHECK(shmem_realloc(p, 0) == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    PE_CHECK_EQ(block_state(p), SHMALLOC_TLSF_ALREADY_FREE);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_to_zero_frees_the_block_and_returns_null)
{
    run_pes(*npes, SMALL_HEAP, pe_realloc_zero, NULL);
}

static void pe_realloc_grow(void *arg)
{
    void *p = shmem_malloc(64), *q; /* alone in a fresh heap: free space follows */
    (void)arg;
    fill_pattern(p, 64, 1);
    q = shmem_realloc(p, 8192);
    PE_CHECK(q == p);
    PE_CHECK_EQ(first_unlike(q, 64, 1), 64);
    PE_CHECK(shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(shmalloc_current()), q) >= 8192);
    CHECK_SYMMETRIC(q);
    shmem_free(q);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_grows_in_place_into_following_free_space)
{
    run_pes(*npes, SMALL_HEAP, pe_realloc_grow, NULL);
}

static void pe_realloc_shrink(void *arg)
{
    void *p = shmem_malloc(8192), *after = shmem_malloc(16), *q;
    (void)arg;
    fill_pattern(p, 8192, 2);
    q = shmem_realloc(p, 100);
    PE_CHECK(q == p);
    PE_CHECK_EQ(first_unlike(q, 100, 2), 100);
    CHECK_SYMMETRIC(q);
    shmem_free(after);
    shmem_free(q);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_shrinks_in_place_keeping_the_contents)
{
    run_pes(*npes, SMALL_HEAP, pe_realloc_shrink, NULL);
}

static void pe_realloc_move(void *arg)
{
    void *p = shmem_malloc(200), *wall = shmem_malloc(16), *q;
    int me = shmem_my_pe();
    (void)arg;
    fill_pattern(p, 200, (unsigned)me + 10);
    q = shmem_realloc(p, 50000); /* wall blocks growth in place */
    PE_CHECK(q != NULL && q != p);
    PE_CHECK_EQ(first_unlike(q, 200, (unsigned)me + 10), 200);
    PE_CHECK_EQ(block_state(p), SHMALLOC_TLSF_ALREADY_FREE);
    CHECK_SYMMETRIC(q);
    shmem_free(wall);
    shmem_free(q);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_moves_a_blocked_block_and_keeps_its_contents)
{
    run_pes(*npes, SMALL_HEAP, pe_realloc_move, NULL);
}

#define MOVE_BYTES ((size_t)2 << 20)

/* A peer may put into the moved block as soon as realloc returns: the
   owner's copy of the old contents must be finished by then. */
static void pe_realloc_move_then_put(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int left = (me + npes - 1) % npes, right = (me + 1) % npes;
    unsigned char *p = (unsigned char *)shmem_malloc(MOVE_BYTES), *q, word[64];
    void *wall = shmem_malloc(16);
    (void)arg;
    memset(p, 0x5a, MOVE_BYTES);
    fill_pattern(word, sizeof word, (unsigned)me);
    q = (unsigned char *)shmem_realloc(p, MOVE_BYTES + 4096);
    PE_CHECK(q != NULL && q != p);
    if (q == NULL) return;
    shmem_putmem(q, word, sizeof word, right); /* no barrier first, on purpose */
    shmem_barrier_all();
    PE_CHECK_EQ(first_unlike(q, sizeof word, (unsigned)left), sizeof word);
    PE_CHECK(q[sizeof word] == 0x5a && q[MOVE_BYTES - 1] == 0x5a);
    shmem_free(wall);
    shmem_free(q);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_returns_only_after_every_pe_moved_its_block)
{
    run_pes(*npes, (size_t)8 << 20, pe_realloc_move_then_put, NULL);
}

static void pe_realloc_fail(void *arg)
{
    void *p = shmem_malloc(500), *q;
    (void)arg;
    fill_pattern(p, 500, 3);
    q = shmem_realloc(p, SMALL_HEAP * 4);
    PE_CHECK(q == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_REALLOC_FAILED);
    PE_CHECK_EQ(block_state(p), SHMALLOC_TLSF_OK);
    PE_CHECK_EQ(first_unlike(p, 500, 3), 500);
    CHECK_SYMMETRIC(p);
    shmem_free(p);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_failure_returns_null_and_keeps_the_old_block)
{
    run_pes(*npes, SMALL_HEAP, pe_realloc_fail, NULL);
    expect_reported("out of symmetric memory: realloc of 4194304 bytes", *npes);
}

static void pe_realloc_bad_pointer(void *arg)
{
    int on_stack = 0;
    void *p = shmem_malloc(64);
    (void)arg;
    PE_CHECK(shmem_realloc(&on_stack, 100) == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
    PE_CHECK(shmem_realloc((char *)p + 16, 100) == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_NOT_ALIGNED);
    shmem_free(p);
    PE_CHECK(shmem_realloc(p, 100) == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_ALREADY_FREE);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(realloc_of_a_bad_pointer_returns_null_and_says_why)
{
    run_pes(*npes, SMALL_HEAP, pe_realloc_bad_pointer, NULL);
}

/* ---- align and calloc ---------------------------------------------------------- */
#define ALIGN_HEAP ((size_t)4 << 20)

static void pe_align(void *arg)
{
    static const size_t aligns[] = {1, 2, 8, 16, 32, 64, 128, 1024, 4096, 65536, (size_t)1 << 20};
    void *p[sizeof aligns / sizeof aligns[0]], *spacer[sizeof aligns / sizeof aligns[0]];
    size_t i, n = sizeof aligns / sizeof aligns[0];
    (void)arg;
    for (i = 0; i < n; i++) {
        size_t want = aligns[i] < SHMALLOC_ALIGNMENT ? SHMALLOC_ALIGNMENT : aligns[i];
        spacer[i] = shmem_malloc(24 + i * 40); /* so the next one is not aligned by luck */
        p[i] = i % 2 ? shmemalign(aligns[i], 100 + i) : shmem_align(aligns[i], 100 + i);
        PE_CHECK(p[i] != NULL);
        if (((uintptr_t)p[i] & (want - 1)) != 0)
            pe_failed(__LINE__, "shmem_align(%zu) gave %p", aligns[i], p[i]);
        CHECK_SYMMETRIC(p[i]);
    }
    for (i = 0; i < n; i++) {
        shmem_free(p[i]);
        shmem_free(spacer[i]);
    }
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(align_gives_aligned_blocks_at_the_same_offset_everywhere)
{
    run_pes(*npes, ALIGN_HEAP, pe_align, NULL);
}

static void pe_align_bad(void *arg)
{
    static const size_t bad[] = {0, 3, 24, 48, 1000};
    size_t i;
    void *p;
    (void)arg;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        PE_CHECK(shmem_align(bad[i], 64) == NULL);
        PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED);
    }
    p = shmem_align(shmem_my_pe() == 1 ? 24 : 64, 64); /* bad on PE 1 alone: its error is every PE's */
    if (shmem_n_pes() > 1) {
        PE_CHECK(p == NULL);
        PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED);
    } else shmem_free(p);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(align_that_is_not_a_power_of_two_fails_with_memalign_failed)
{
    run_pes(*npes, SMALL_HEAP, pe_align_bad, NULL);
}

static void pe_calloc(void *arg)
{
    unsigned char *dirty = (unsigned char *)shmem_malloc(5000), *z;
    size_t i;
    (void)arg;
    memset(dirty, 0xa5, 5000);
    shmem_free(dirty);
    z = (unsigned char *)shmem_calloc(50, 100);
    PE_CHECK(z != NULL);
    PE_CHECK(z == dirty); /* the dirtied block came back: the zeroing is real */
    for (i = 0; z != NULL && i < 5000; i++)
        if (z[i] != 0) {
            pe_failed(__LINE__, "byte %zu of calloc's block is 0x%x", i, z[i]);
            break;
        }
    CHECK_SYMMETRIC(z);
    shmem_free(z);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(calloc_zeroes_memory_an_earlier_block_dirtied)
{
    run_pes(*npes, SMALL_HEAP, pe_calloc, NULL);
}

static void pe_calloc_overflow(void *arg)
{
    (void)arg;
    PE_CHECK(shmem_calloc(SIZE_MAX / 2, 4) == NULL);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_BAD_SIZE);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(calloc_whose_count_times_size_overflows_fails_with_bad_size)
{
    run_pes(*npes, SMALL_HEAP, pe_calloc_overflow, NULL);
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

Test(pthreads, run_with_npes_outside_1_to_1024_fails_without_starting_pes,
     .init = cr_redirect_stderr)
{
    static const int bad[] = {0, -1, 1025, 100000};
    char text[2048];
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_neq(shmalloc_pthreads_run(bad[i], SMALL_HEAP, pe_count_call, NULL), 0,
                      "npes %d accepted", bad[i]);
    cr_assert_neq(shmalloc_pthreads_run(2, SMALL_HEAP, NULL, NULL), 0, "NULL pe_main accepted");
    cr_assert_eq(shared.calls, 0);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "npes is 100000") != NULL, "stderr was: %s", text);
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
    cr_assert(strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE") != NULL && strstr(out_text[2], "abc"),
              "message was: %s", out_text[2]);
}

Test(pthreads, run_fails_cleanly_when_the_heaps_cannot_be_mapped,
     .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    char text[2048];
    /* 8 x 32 TiB is more than a 47-bit address space holds. */
    cr_assert_neq(shmalloc_pthreads_run(8, (size_t)1 << 45, pe_count_call, NULL), 0);
    cr_assert_eq(shared.calls, 0);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "cannot map") != NULL, "stderr was: %s", text);
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

/* A heap_size the program passes wins over the environment: a heap too
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
    cr_assert(!strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE"), "%s", out_text[2]);
    at = strstr(out_text[2], "the program sets the heap's size, not a variable: have it ask for at least ");
    cr_assert(at && sscanf(strstr(at, "at least "), "at least %63[0-9A-Za-z]", value) == 1, "%s", out_text[2]);
    cr_assert_eq(shmalloc_parse_size(value, &advised), 0, "%s", value);
    heap_size_with(advised, want); /* asserts the call is served */
}

/* ---- threads of one PE ------------------------------------------------------ */
typedef struct helper_arg {
    shmalloc_heap *heap;
    int stop;   /* atomic */
    int checks; /* checks that ran */
    int bad;    /* checks that failed, or a PE identity seen */
} helper_arg;

static void *helper_main(void *arg)
{
    helper_arg *h = (helper_arg *)arg;
    shmalloc_set_current(h->heap); /* as the threads section tells a PE's thread to */
    if (shmem_my_pe() != -1) h->bad++;
    while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
        if (shmalloc_check(-1) != 0) h->bad++;
        h->checks++;
        sleep_seconds(0.0001); /* leave the cpus to the PEs: there may be 16 threads on 2 */
    }
    return NULL;
}

static void pe_with_helper(void *arg)
{
    helper_arg h;
    pthread_t thread;
    void *p[16];
    int round, i;
    (void)arg;
    memset(&h, 0, sizeof h);
    h.heap = shmalloc_current();
    PE_CHECK_EQ(pthread_create(&thread, NULL, helper_main, &h), 0);
    for (round = 0; round < 50; round++) {
        for (i = 0; i < 16; i++) p[i] = shmem_malloc((size_t)(16 + 32 * i + round));
        for (i = 0; i < 16; i += 2) p[i] = shmem_realloc(p[i], (size_t)(500 + i));
        for (i = 0; i < 16; i++) shmem_free(p[i]);
    }
    __atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    PE_CHECK_EQ(h.bad, 0);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(a_second_thread_of_a_pe_can_check_its_heap_during_collectives)
{
    run_pes(*npes, SMALL_HEAP, pe_with_helper, NULL);
}

/* ---- randomized stress ------------------------------------------------------- */
#define STRESS_SLOTS 48
#define STRESS_STEPS 10000
#define STRESS_HEAP ((size_t)16 << 20)

typedef struct stress_slot {
    unsigned char *p;
    size_t size;
    unsigned tag; /* the fill of PE q is fill_pattern(.., tag + q) */
} stress_slot;

static size_t random_size(uint64_t *rng)
{
    uint64_t r = rng_next(rng);
    return (size_t)(r % 8 == 0 ? 1 + (r >> 8) % 65536 : 1 + (r >> 8) % 2048);
}

static void stress_alloc(stress_slot *s, uint64_t *rng, unsigned tag)
{
    int me = shmem_my_pe();
    uint64_t kind = rng_next(rng) % 4;
    s->size = random_size(rng);
    if (kind == 0) s->p = (unsigned char *)shmem_calloc(1, s->size);
    else if (kind == 1) s->p = (unsigned char *)shmem_align((size_t)16 << (rng_next(rng) % 6), s->size);
    else s->p = (unsigned char *)shmem_malloc(s->size);
    if (s->p == NULL) {
        pe_failed(__LINE__, "allocation of %zu bytes failed", s->size);
        return;
    }
    s->tag = tag;
    fill_pattern(s->p, s->size, tag + (unsigned)me);
}

static void stress_realloc(stress_slot *s, uint64_t *rng, unsigned tag)
{
    int me = shmem_my_pe();
    size_t size = random_size(rng), keep = size < s->size ? size : s->size;
    unsigned char *q = (unsigned char *)shmem_realloc(s->p, size);
    if (q == NULL) {
        pe_failed(__LINE__, "realloc to %zu bytes failed", size);
        return;
    }
    if (first_unlike(q, keep, s->tag + (unsigned)me) != keep)
        pe_failed(__LINE__, "realloc from %zu to %zu lost contents", s->size, size);
    s->p = q;
    s->size = size;
    s->tag = tag;
    fill_pattern(s->p, s->size, tag + (unsigned)me);
}

/* A peer's copy of slot s holds the peer's fill, at the same offset. */
static void stress_verify(stress_slot *s, int peer, unsigned char *scratch)
{
    int me = shmem_my_pe();
    shared.ptrs[me] = s->p;
    shmem_barrier_all(); /* every fill so far is visible */
    if (shmem_ptr(s->p, peer) != shared.ptrs[peer])
        pe_failed(__LINE__, "slot at %p maps to %p on PE %d, which has %p", (void *)s->p,
                  shmem_ptr(s->p, peer), peer, shared.ptrs[peer]);
    else {
        shmem_getmem(scratch, s->p, s->size, peer);
        if (first_unlike(scratch, s->size, s->tag + (unsigned)peer) != s->size)
            pe_failed(__LINE__, "PE %d's copy of a %zu-byte block is wrong", peer, s->size);
    }
    shmem_barrier_all(); /* the peer changes it only after we read */
}

static void pe_stress(void *arg)
{
    static stress_slot slots[MAX_PES][STRESS_SLOTS];
    static unsigned char scratch[MAX_PES][65536];
    stress_slot *mine = slots[shmem_my_pe()];
    uint64_t rng = 0x5eed5eed12345ULL;
    int step, npes = shmem_n_pes();
    (void)arg;
    for (step = 0; step < STRESS_STEPS; step++) { /* no early exit: it would strand peers */
        stress_slot *s = &mine[rng_next(&rng) % STRESS_SLOTS];
        uint64_t action = rng_next(&rng) % 8;
        if (s->p == NULL) stress_alloc(s, &rng, (unsigned)step);
        else if (action < 3) {
            shmem_free(s->p);
            s->p = NULL;
        } else if (action < 6) stress_realloc(s, &rng, (unsigned)step);
        else stress_verify(s, (int)(rng_next(&rng) % (uint64_t)npes), scratch[shmem_my_pe()]);
        if (step % 1000 == 0 && shmalloc_check(-1) != 0)
            pe_failed(__LINE__, "heap corrupted at step %d", step);
    }
    for (step = 0; step < STRESS_SLOTS; step++) shmem_free(mine[step].p);
    CHECK_HEAP_EMPTY();
}

Test(pthreads, ten_thousand_random_collective_calls_keep_data_and_symmetry,
     .timeout = TEST_TIMEOUT)
{
    run_pes(4, STRESS_HEAP, pe_stress, NULL);
}

/* ---- mismatched calls among random ones ------------------------------------- */
/* The same random calls on every PE, but now and then one PE, chosen at
   random, asks for a few bytes more (or a page more) than the others in a
   malloc, a calloc, an align, or a realloc that shrinks, grows in place or
   moves; or twice the alignment; or frees or resizes another block.
   Allocations with hints, and without a barrier, come among them (those
   never mismatched: nothing could undo them on the other PEs).  Such
   a call fails on every PE with SYMMSIZE_FAILED and leaves the old block
   as it was, and after every call, failed or not, the PEs' heaps hold the
   same blocks at the same offsets, the same size each.
   The heap, 256 KiB, runs out now and then, or grows under the calls
   (up to SHMALLOC_HEAP_MAX); the test makes sure of each. */
#define SKEW_STEPS 3000

/* Collective: every PE has the same blocks and got the same outcome. */
static void check_same_heaps(int step, const void *result)
{
    int me = shmem_my_pe(), q;
    shmalloc_heap *h = shmalloc_current();
    uint64_t sum = heap_hash(shmalloc_heap_tlsf(h));
    sum = (sum ^ shmalloc_heap_size(h)) * 0x100000001b3ULL;
    sum = (sum ^ (result ? (uint64_t)((const char *)result - (const char *)shmalloc_heap_base(h)) : ~0ULL)) *
          0x100000001b3ULL;
    shared.values[me] = (size_t)(sum ^ (uint64_t)malloc_error);
    shmem_barrier_all();
    for (q = 1; q < shmem_n_pes(); q++)
        if (shared.values[q] != shared.values[0])
            pe_failed(__LINE__, "after step %d PE %d's heap or outcome differs from PE 0's", step, q);
    shmem_barrier_all(); /* nobody publishes the next sum while others read */
}

/* A live slot other than s, or s when there is none: the same on every
   PE, whose slots are all alike. */
static stress_slot *other_slot(stress_slot *mine, stress_slot *s)
{
    int k;
    for (k = 1; k < STRESS_SLOTS; k++) {
        stress_slot *o = &mine[(s - mine + k) % STRESS_SLOTS];
        if (o->p != NULL) return o;
    }
    return s;
}

/* One step drawn from the shared random sequence: the same on every PE
   but for `skewed`, which marks the PE whose call differs. */
typedef struct skew_step {
    int step, me;
    stress_slot *s, *o; /* the slot the step acts on, and another live one */
    uint64_t r;         /* the step's random bits */
    size_t size, extra, align;
    int skew;     /* the PEs' calls differ this step */
    int skewed;   /* this PE's call is the one that differs */
    int by_block; /* the skewed PE names another block, not another size */
} skew_step;

static skew_step skew_draw(stress_slot *mine, int step, uint64_t *rng)
{
    skew_step k;
    int npes = shmem_n_pes();
    k.step = step;
    k.me = shmem_my_pe();
    k.s = &mine[rng_next(rng) % STRESS_SLOTS];
    k.o = other_slot(mine, k.s);
    k.r = rng_next(rng);
    k.size = random_size(rng);
    k.extra = k.r % 5 == 4 ? 4096 : 16 * (k.r % 5 + 1);
    k.align = (size_t)32 << (k.r >> 32) % 5;
    k.skew = npes > 1 && k.r % 3 == 0;
    k.skewed = k.skew && (int)((k.r >> 8) % (uint64_t)npes) == k.me;
    k.by_block = (k.r >> 48) % 2 && k.o != k.s;
    return k;
}

/* A free, of another block on the skewed PE: then it fails everywhere. */
static void skew_free(const skew_step *k)
{
    int skew = k->skew && k->by_block;
    shmem_free(skew && k->skewed ? k->o->p : k->s->p);
    if (!skew) k->s->p = NULL;
    else if (malloc_error != SHMEM_MALLOC_SYMMSIZE_FAILED)
        pe_failed(__LINE__, "step %d: malloc_error %ld after frees of different blocks", k->step, malloc_error);
}

/* One of the four allocation calls into an empty slot; the skewed PE asks
   for another size or alignment. */
static unsigned char *skew_allocate(skew_step *k)
{
    uint64_t kind = (k->r >> 24) % 4;
    long hints = (long)(k->r >> 56) % 4 == 3 ? SHMEMX_MALLOC_NO_BARRIER : (long)(k->r >> 56) % 4;
    if (kind == 3 && hints == SHMEMX_MALLOC_NO_BARRIER) /* taken here alone: it cannot fail elsewhere */
        k->skew = k->skewed = 0;
    if (k->skewed && kind == 1 && (k->r >> 48) % 2) k->align *= 2; /* another alignment */
    else if (k->skewed) k->size += k->extra;
    if (kind == 0) return (unsigned char *)shmem_calloc(1, k->size);
    if (kind == 1) return (unsigned char *)shmem_align(k->align, k->size);
    if (kind == 2) return (unsigned char *)shmem_malloc(k->size);
    return (unsigned char *)shmem_malloc_with_hints(k->size, hints);
}

/* A realloc of the slot's block; the skewed PE names another block or size. */
static unsigned char *skew_realloc(skew_step *k)
{
    if ((k->r >> 40) % 2) k->size = k->s->size + k->extra; /* a grow, in place when it can */
    if (k->skewed && !k->by_block) k->size += k->extra;
    return (unsigned char *)shmem_realloc(k->skewed && k->by_block ? k->o->p : k->s->p, k->size);
}

/* A mismatched call failed with SYMMSIZE_FAILED, a failed realloc left the
   old block, a realloc kept the contents; a new block takes the slot. */
static void skew_check_and_keep(const skew_step *k, unsigned char *p)
{
    stress_slot *s = k->s;
    unsigned tag = s->tag + (unsigned)k->me;
    if (k->skew) {
        if (p != NULL) pe_failed(__LINE__, "step %d: a mismatched call returned %p", k->step, (void *)p);
        if (malloc_error != SHMEM_MALLOC_SYMMSIZE_FAILED)
            pe_failed(__LINE__, "step %d: malloc_error %ld after a mismatched call", k->step, malloc_error);
    }
    if (s->p != NULL && p == NULL && first_unlike(s->p, s->size, tag) != s->size)
        pe_failed(__LINE__, "step %d: a failed realloc changed the old block", k->step);
    if (s->p != NULL && p != NULL) {
        size_t keep = s->size < k->size ? s->size : k->size;
        if (first_unlike(p, keep, tag) != keep) pe_failed(__LINE__, "step %d: realloc lost contents", k->step);
    }
    if (p != NULL) {
        s->p = p;
        s->size = k->size;
        s->tag = (unsigned)k->step;
        fill_pattern(p, k->size, s->tag + (unsigned)k->me);
    }
}

/* arg: the nominal heap size of a heap that grows, or NULL for a full
   one, which must run out now and then. */
static void pe_skewed(void *arg)
{
    static stress_slot slots[MAX_PES][STRESS_SLOTS];
    stress_slot *mine = slots[shmem_my_pe()];
    uint64_t rng = 0x5cea1ab1e5eedULL;
    int step, npes = shmem_n_pes(), skews = 0, ran_out = 0;
    for (step = 0; step < SKEW_STEPS; step++) {
        skew_step k = skew_draw(mine, step, &rng);
        unsigned char *p;
        if (k.s->p != NULL && (k.r >> 16) % 4 == 0) {
            skew_free(&k);
            check_same_heaps(step, NULL);
            continue;
        }
        p = k.s->p == NULL ? skew_allocate(&k) : skew_realloc(&k);
        ran_out += !k.skew && p == NULL;
        skews += k.skew;
        skew_check_and_keep(&k, p);
        check_same_heaps(step, p);
    }
    if (npes > 1 && skews < SKEW_STEPS / 4) pe_failed(__LINE__, "only %d mismatched calls", skews);
    if (arg == NULL && ran_out == 0) pe_failed(__LINE__, "the full heap never ran out");
    if (arg != NULL && shmalloc_heap_size(shmalloc_current()) <= *(const size_t *)arg)
        pe_failed(__LINE__, "the heap never grew");
    for (step = 0; step < STRESS_SLOTS; step++) shmem_free(mine[step].p);
    check_same_heaps(SKEW_STEPS, NULL);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(mismatched_calls_among_random_ones_fail_everywhere_and_leave_the_same_heaps_on_a_full_heap)
{
    run_pes(*npes, (size_t)256 << 10, pe_skewed, NULL);
    expect_only_reports();
}

PE_COUNT_TEST(mismatched_calls_among_random_ones_fail_everywhere_and_leave_the_same_heaps_on_a_growing_heap)
{
    static const size_t nominal = (size_t)256 << 10;
    setenv("SHMALLOC_HEAP_MAX", "64M", 1);
    run_pes(*npes, nominal, pe_skewed, (void *)&nominal);
    expect_only_reports();
    unsetenv("SHMALLOC_HEAP_MAX");
}

/* 64 PEs on 2 cpus: every wait must yield, and the heap grows under them.
   Valgrind runs the 64 threads one at a time. */
Test(pthreads, mismatched_calls_among_random_ones_on_64_pes_and_a_growing_heap, .timeout = TEST_TIMEOUT)
{
    static const size_t nominal = (size_t)256 << 10;
    setenv("SHMALLOC_HEAP_MAX", "64M", 1);
    run_pes(64, nominal, pe_skewed, (void *)&nominal);
    expect_only_reports();
    unsetenv("SHMALLOC_HEAP_MAX");
}
