/* test_pthreads_deferred.c - shmemx_free_deferred on pthreads PEs: each PE
   releases a thousand blocks in its own random order from four threads
   while its main thread allocates and frees collectively in a growing
   heap; blocks released on some PEs only; the reports at finalize. */
#include "pthreads_pes.h"

#include <pthread.h>

#define BLOCKS 1000
#define RELEASERS 4
#define ROUNDS 150

/* Block i is released on every PE, but for one in seven, released on the
   even PEs only. */
static int everywhere(int i) { return i % 7 != 3; }
static int released_by(int i, int pe) { return everywhere(i) || pe % 2 == 0; }
static size_t block_size(int i) { return 16 + (size_t)(i * 37 % 600); }
static size_t main_size(int r) { return 1024 + (size_t)(r * 7919 % 60000); }

typedef struct releaser {
    shmalloc_heap *heap;
    void **blocks;
    const int *order;
    int count, first, errors;
} releaser;

static void *releaser_main(void *arg)
{
    releaser *r = (releaser *)arg;
    shmalloc_set_current(r->heap); /* a thread of the PE */
    for (int k = r->first; k < r->count; k += RELEASERS) {
        shmemx_free_deferred(r->blocks[r->order[k]]);
        if (malloc_error != SHMEM_MALLOC_OK) r->errors++;
        if (k % 64 == 0) sched_yield();
    }
    return NULL;
}

static int has_pattern(const unsigned char *p, size_t n, unsigned char c)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != c) return 0;
    return 1;
}

typedef struct used_list {
    size_t offsets[BLOCKS + ROUNDS];
    size_t count;
} used_list;

static int collect_used(void *user, const shmalloc_block_info *b)
{
    used_list *u = (used_list *)user;
    if (b->used && u->count < BLOCKS + ROUNDS) u->offsets[u->count++] = b->offset;
    return 0;
}

static int by_value(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* The main thread's collective calls while the releasers run: allocations
   (some without a barrier) that grow the heap, and frees of its own. */
static int main_thread_calls(void **live, int *rounds, int *nlive)
{
    int calls = 0;
    for (int r = 0; r < ROUNDS; r++) {
        long hints = r % 5 == 4 ? SHMEMX_MALLOC_NO_BARRIER : 0;
        unsigned char *p = shmem_malloc_with_hints(main_size(r), hints);
        PE_CHECK(p != NULL);
        calls += !hints;
        if (!p) continue;
        memset(p, (unsigned char)(r | 1), main_size(r));
        rounds[*nlive] = r;
        live[(*nlive)++] = p;
        if (r % 3 == 2) { /* frees the oldest of its own */
            shmem_free(live[0]);
            calls++;
            --*nlive;
            memmove(live, live + 1, (size_t)*nlive * sizeof *live);
            memmove(rounds, rounds + 1, (size_t)*nlive * sizeof *rounds);
        }
    }
    return calls;
}

/* The used blocks are exactly the ones this PE kept: walked, sorted. */
static void check_used_blocks(void **blocks, void **live, int nlive)
{
    static used_list want[MAX_PES], got[MAX_PES];
    int me = shmem_my_pe();
    char *base = shmalloc_heap_base(shmalloc_current());
    want[me].count = got[me].count = 0;
    for (int i = 0; i < BLOCKS; i++)
        if (!everywhere(i)) want[me].offsets[want[me].count++] = (size_t)((char *)blocks[i] - base);
    for (int k = 0; k < nlive; k++) want[me].offsets[want[me].count++] = (size_t)((char *)live[k] - base);
    qsort(want[me].offsets, want[me].count, sizeof(size_t), by_value);
    shmalloc_tlsf_walk(shmalloc_heap_tlsf(shmalloc_current()), collect_used, &got[me]);
    PE_CHECK_EQ(got[me].count, want[me].count);
    PE_CHECK(memcmp(got[me].offsets, want[me].offsets, want[me].count * sizeof(size_t)) == 0);
}

static void pe_releases_from_threads(void *arg)
{
    static void *blocks[MAX_PES][BLOCKS], *live[MAX_PES][ROUNDS];
    static int order[MAX_PES][BLOCKS], rounds[MAX_PES][ROUNDS];
    int me = shmem_my_pe(), count = 0, nlive = 0, calls;
    unsigned seed = 1234u + (unsigned)me;
    releaser r[RELEASERS];
    pthread_t threads[RELEASERS];
    (void)arg;
    for (int i = 0; i < BLOCKS; i++) {
        PE_CHECK((blocks[me][i] = shmem_malloc(block_size(i))) != NULL);
        memset(blocks[me][i], i & 0xff, block_size(i));
        if (released_by(i, me)) order[me][count++] = i;
    }
    for (int k = count - 1; k > 0; k--) { /* this PE's own order */
        int j = (int)((unsigned)rand_r(&seed) % (unsigned)(k + 1)), t = order[me][k];
        order[me][k] = order[me][j];
        order[me][j] = t;
    }
    for (int t = 0; t < RELEASERS; t++) {
        r[t] = (releaser){shmalloc_current(), blocks[me], order[me], count, t, 0};
        PE_CHECK_EQ(pthread_create(&threads[t], NULL, releaser_main, &r[t]), 0);
    }
    calls = main_thread_calls(live[me], rounds[me], &nlive);
    for (int t = 0; t < RELEASERS; t++) {
        pthread_join(threads[t], NULL);
        PE_CHECK_EQ(r[t].errors, 0);
    }
    shmemx_free_deferred_drain();
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmalloc_info info;
    shmemx_heap_info(&info);
    PE_CHECK_EQ(info.released, me % 2 == 0 ? BLOCKS / 7 + (BLOCKS % 7 > 3) : 0);
    PE_CHECK(info.heap_size > SMALL_HEAP); /* it grew */
    PE_CHECK(info.drain_rounds <= (size_t)calls + 1); /* at most one round per call */
    PE_CHECK(info.drained > 0);
    check_used_blocks(blocks[me], live[me], nlive);
    for (int i = 0; i < BLOCKS; i++)
        if (!everywhere(i)) {
            PE_CHECK(has_pattern(blocks[me][i], block_size(i), (unsigned char)(i & 0xff)));
            CHECK_SYMMETRIC(blocks[me][i]);
        }
    for (int k = 0; k < nlive; k++)
        PE_CHECK(has_pattern(live[me][k], main_size(rounds[me][k]), (unsigned char)(rounds[me][k] | 1)));
    void *later = shmem_malloc(4096); /* offsets still agree */
    CHECK_SYMMETRIC(later);
    PE_CHECK(shmalloc_check(-1) == 0);
    shmem_free(later);
    for (int i = 0; i < BLOCKS; i++)
        if (!everywhere(i)) shmem_free(blocks[me][i]); /* the collective free wins */
    for (int k = 0; k < nlive; k++) shmem_free(live[me][k]);
    shmemx_heap_info(&info);
    PE_CHECK_EQ(info.released, 0);
    CHECK_HEAP_EMPTY();
}

Test(deferred, four_pes_release_a_thousand_blocks_from_four_threads_during_collective_calls,
     .timeout = TEST_TIMEOUT)
{
    setenv("SHMALLOC_HEAP_MAX", "64M", 1);
    run_pes(4, SMALL_HEAP, pe_releases_from_threads, NULL);
    unsetenv("SHMALLOC_HEAP_MAX");
}

/* ---- one round per drain up to 65 536 live blocks ----------------------------- */
/* The contract: a drain is one allreduce_and round (which this transport
   makes in one barrier) up to SHMALLOC_REDUCE_AND_MAX * 64 = 65 536 live
   blocks, one more per 65 536 past that. */
static size_t contract_rounds(size_t live) { return (live + 65535) / 65536; }

/* A drain on every PE over `live` blocks, in `rounds` rounds, frees exactly
   `want` blocks, the same everywhere. */
static void drain_in_rounds(size_t live, size_t rounds, size_t want)
{
    shmalloc_info before, after;
    shmemx_heap_info(&before);
    PE_CHECK_EQ(before.used_blocks, live);
    shmemx_free_deferred_drain();
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmemx_heap_info(&after);
    PE_CHECK_EQ(after.drain_rounds - before.drain_rounds, rounds);
    PE_CHECK_EQ(after.drained - before.drained, want);
    PE_CHECK_EQ(before.used_blocks - after.used_blocks, want);
    void *later = shmem_malloc(4096); /* offsets still agree */
    CHECK_SYMMETRIC(later);
    shmem_free(later);
    PE_CHECK(shmalloc_check(-1) == 0);
}

/* `live` live blocks (the arg), released by each PE in its own order, one
   in seven on the even PEs only: the first drain frees the others in
   contract_rounds(live) rounds, which the test states too; once the odd
   PEs release those, one more round frees them. */
static void pe_drains_live_blocks(void *arg)
{
    const size_t *want_rounds = (const size_t *)arg;
    size_t live = want_rounds[0], partial = 0;
    void **blocks = malloc(live * sizeof *blocks);
    size_t *order = malloc(live * sizeof *order);
    int me = shmem_my_pe();
    unsigned seed = 99u + (unsigned)me;
    PE_CHECK(blocks && order);
    if (!blocks || !order) {
        free(blocks);
        free(order);
        return;
    }
    PE_CHECK_EQ(contract_rounds(live), want_rounds[1]);
    for (size_t i = 0; i < live; i++) { /* without a barrier each: the same calls everywhere */
        blocks[i] = shmem_malloc_with_hints(1 + i % 48, SHMEMX_MALLOC_NO_BARRIER);
        PE_CHECK(blocks[i] != NULL);
        order[i] = i;
        partial += !everywhere((int)i);
    }
    for (size_t k = live - 1; k > 0; k--) {
        size_t j = (size_t)rand_r(&seed) % (k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    for (size_t k = 0; k < live; k++)
        if (released_by((int)order[k], me)) shmemx_free_deferred(blocks[order[k]]);
    drain_in_rounds(live, want_rounds[1], live - partial);
    for (size_t i = 0; i < live; i++)
        if (!everywhere((int)i)) {
            PE_CHECK_EQ(block_state(blocks[i]), SHMALLOC_TLSF_OK);
            if (me % 2) shmemx_free_deferred(blocks[i]);
        }
    drain_in_rounds(partial, 1, partial);
    free(blocks);
    free(order);
    CHECK_HEAP_EMPTY();
}

Test(deferred, a_drain_of_3000_live_blocks_is_one_allreduce_round, .timeout = TEST_TIMEOUT)
{
    size_t want_rounds[2] = {3000, 1};
    run_pes(4, (size_t)16 << 20, pe_drains_live_blocks, want_rounds);
}

Test(deferred, a_drain_of_65536_live_blocks_is_one_allreduce_round, .timeout = TEST_TIMEOUT)
{
    size_t want_rounds[2] = {65536, 1};
    run_pes(4, (size_t)16 << 20, pe_drains_live_blocks, want_rounds);
}

Test(deferred, a_drain_of_65537_live_blocks_is_two_allreduce_rounds, .timeout = TEST_TIMEOUT)
{
    size_t want_rounds[2] = {65537, 2};
    run_pes(4, (size_t)16 << 20, pe_drains_live_blocks, want_rounds);
}

/* ---- finalize --------------------------------------------------------------- */

/* a: released everywhere just before finalize, which frees it; b: released
   on PEs 0 and 2 of 4, which stays. */
static void pe_releases_before_finalize(void *arg)
{
    void *a = shmem_malloc(100), *b = shmem_malloc(200);
    (void)arg;
    shmemx_free_deferred(a);
    if (shmem_my_pe() % 2 == 0) shmemx_free_deferred(b);
    PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
}

Test(deferred, finalize_frees_what_every_pe_released_and_names_what_some_did, .timeout = TEST_TIMEOUT)
{
    setenv("SHMALLOC_DEBUG", "1", 1);
    run_pes(4, SMALL_HEAP, pe_releases_before_finalize, NULL);
    unsetenv("SHMALLOC_DEBUG");
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAK), 4, "one leak per PE, b:\n%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_DEFER_RELEASED_ON), 4, "%s", out_text[2]);
    expect_reported("released by shmemx_free_deferred on PEs 0, 2 of 4, not on every PE", 4);
}

Test(deferred, outside_debug_mode_finalize_says_what_stays_released_in_one_line, .timeout = TEST_TIMEOUT)
{
    run_pes(4, SMALL_HEAP, pe_releases_before_finalize, NULL);
    cr_assert_eq(out_said(SHMALLOC_MSG_DEFER_UNDRAINED), 2, "PEs 0 and 2:\n%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAK), 0);
    expect_reported("1 block released by shmemx_free_deferred on this PE stays allocated", 2);
}
