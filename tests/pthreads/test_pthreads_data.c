/* test_pthreads_data.c - the symmetric heap on the pthreads transport, calls
   that succeed: symmetric blocks, put and get, barriers, every collective
   call as a barrier, realloc, align and calloc. */
#include "pthreads_pes.h"
#include "pingpong.h"

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

/* Two PEs pass a round number back and forth by 8-byte puts, each clearing
   its flag once seen (pingpong.h): no put stores its word a second time
   after the clear. */
static void pe_pingpong(void *arg)
{
    long *flag = (long *)shmem_calloc(1, sizeof *flag);
    char why[200];
    (void)arg;
    PE_CHECK(flag != NULL);
    if (flag == NULL) return;
    shmem_barrier_all(); /* every flag is 0 before the first put */
    if (pingpong(flag, PINGPONG_ROUNDS, why, sizeof why) != 0) pe_failed(__LINE__, "%s", why);
    shmem_barrier_all();
    shmem_free(flag);
    CHECK_HEAP_EMPTY();
}

Test(pthreads, a_put_writes_its_word_once_over_100000_pingpong_rounds, .timeout = TEST_TIMEOUT)
{
    run_pes(2, SMALL_HEAP, pe_pingpong, NULL);
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
