/* pmix_ofi_worker_deferred.c - the deferred scenario, started by
   shmem_init_thread(SHMEM_THREAD_MULTIPLE): each PE releases a thousand
   blocks with shmemx_free_deferred in its own random order from four
   threads while the main thread allocates and frees collectively in a
   growing heap; one block in seven is released on the even PEs only.
   deferred_wide: a drain is one transport call up to 65 536 live blocks. */
#include "pmix_ofi_worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 1000
#define RELEASERS 4
#define ROUNDS 60

static void *blocks[BLOCKS];
static int order[BLOCKS], order_count;

static int everywhere(int i) { return i % 7 != 3; }
static int released_here(int i) { return everywhere(i) || me % 2 == 0; }
static size_t block_size(int i) { return 16 + (size_t)(i * 37 % 600); }
static size_t main_size(int r) { return ((size_t)256 << 10) + (size_t)r * 4096; }

static void *releaser(void *arg)
{
    int first = (int)(intptr_t)arg, errors = 0, k;
    for (k = first; k < order_count; k += RELEASERS) {
        shmemx_free_deferred(blocks[order[k]]);
        errors += malloc_error != SHMEM_MALLOC_OK;
    }
    CHECK_EQ(errors, 0);
    return NULL;
}

/* Collective calls meanwhile: 256 KiB and more each, 12 kept, so the 1 MiB
   heap grows; one in four made without a barrier. */
static int main_calls(unsigned char **keep, int *rounds)
{
    int r, k, calls = 0;
    for (r = 0; r < ROUNDS; r++) {
        long hints = r % 4 == 3 ? SHMEMX_MALLOC_NO_BARRIER : 0;
        k = r % 12;
        if (keep[k]) {
            shmem_free(keep[k]);
            calls++;
        }
        keep[k] = (unsigned char *)shmem_malloc_with_hints(main_size(r), hints);
        calls += !hints;
        CHECK(keep[k] != NULL);
        if (keep[k]) fill(keep[k], me, 5000u + (uint32_t)r, 0, main_size(r));
        rounds[k] = r;
    }
    return calls;
}

static void shuffle_releases(void)
{
    unsigned seed = 77u + (unsigned)me;
    int i, k;
    order_count = 0;
    for (i = 0; i < BLOCKS; i++)
        if (released_here(i)) order[order_count++] = i;
    for (k = order_count - 1; k > 0; k--) {
        int j = (int)((unsigned)rand_r(&seed) % (unsigned)(k + 1)), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
}

/* One more block released everywhere, then an explicit drain: one heap
   round over `live` blocks, which the transport makes in one AND call;
   the counters show it. */
static void check_drain_rounds(void *last)
{
    shmalloc_pmix_ofi_counts a, b;
    shmalloc_info before, after;
    size_t live = used_blocks();
    shmemx_free_deferred(last);
    shmemx_heap_info(&before);
    shmalloc_pmix_ofi_counts_get(&a);
    shmemx_free_deferred_drain();
    shmalloc_pmix_ofi_counts_get(&b);
    shmemx_heap_info(&after);
    CHECK_EQ(after.drain_rounds - before.drain_rounds, 1);
    CHECK_EQ(b.and_calls - a.and_calls, 1);
    CHECK_EQ(b.calls - a.calls, 2); /* the call's own agreement, and the drain */
    CHECK_EQ(after.drained - before.drained, 1);
    if (me == 0) printf("PE 0 of %d: drain of 1 block among %zu live: 1 heap round, 1 AND call\n", npes, live);
}

/* After shmem_finalize, as a destructor might: a release of a block of
   the heap that was does nothing, and says so once. */
void deferred_after_finalize(void)
{
    shmemx_free_deferred(blocks[0]);
    CHECK_EQ(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    shmemx_free_deferred(blocks[1]);
    CHECK_EQ(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    fflush(stderr);
}

void scenario_deferred(void)
{
    pthread_t th[RELEASERS];
    unsigned char *keep[12] = {NULL};
    int rounds[12], i, t, started = 0, calls;
    size_t size0 = shmalloc_heap_size(shmalloc_current()), partial = 0, before = used_blocks(); /* the worker's own */
    shmalloc_info info;
    void *last;
    for (i = 0; i < BLOCKS; i++) {
        blocks[i] = shmem_malloc(block_size(i));
        CHECK(blocks[i] != NULL);
        if (!blocks[i]) return;
        fill(blocks[i], me, (uint32_t)i, 0, block_size(i));
        partial += !everywhere(i);
    }
    last = shmem_malloc(64);
    shuffle_releases();
    for (t = 0; t < RELEASERS; t++) started += pthread_create(&th[t], NULL, releaser, (void *)(intptr_t)t) == 0;
    CHECK_EQ(started, RELEASERS);
    calls = main_calls(keep, rounds);
    for (t = 0; t < started; t++) pthread_join(th[t], NULL);
    shmemx_free_deferred_drain();
    check_drain_rounds(last);
    shmemx_heap_info(&info);
    CHECK(shmalloc_heap_size(shmalloc_current()) > size0); /* it grew */
    CHECK_EQ(info.released, me % 2 == 0 ? partial : 0);
    CHECK(info.drain_rounds <= (size_t)calls + 3);
    CHECK_EQ(used_blocks(), before + partial + 12); /* exactly the blocks released everywhere are gone */
    for (i = 0; i < BLOCKS; i++)
        if (!everywhere(i)) {
            CHECK_PATTERN(blocks[i], me, (uint32_t)i, 0, block_size(i));
            CHECK_SYMMETRIC(blocks[i]);
        }
    for (t = 0; t < 12; t++) CHECK_PATTERN(keep[t], me, 5000u + (uint32_t)rounds[t], 0, main_size(rounds[t]));
    last = shmem_malloc(4096); /* later offsets agree */
    CHECK_SYMMETRIC(last);
    CHECK_EQ(shmalloc_check(-1), 0);
    shmem_free(last);
    for (i = 0; i < BLOCKS; i++)
        if (!everywhere(i)) shmem_free(blocks[i]); /* the collective free wins */
    for (t = 0; t < 12; t++) shmem_free(keep[t]);
    CHECK_EQ(used_blocks(), before);
    shmemx_heap_info(&info);
    CHECK_EQ(info.released, 0);
    if (me == 0)
        printf("PE 0 of %d: %zu blocks drained in %zu heap rounds over %d collective calls\n", npes, info.drained,
               info.drain_rounds, calls);
}

/* ---- deferred_wide ---- */
/* The contract: a drain is one allreduce_and round up to
   SHMALLOC_REDUCE_AND_MAX * 64 = 65 536 live blocks, one more per 65 536
   past that; this transport makes a round one collective call. */
static size_t contract_rounds(size_t live) { return (live + 65535) / 65536; }

/* A drain over `live` blocks: contract_rounds(live) heap rounds and as
   many AND calls of the transport (beside the drain call's own agreement)
   free exactly `want` blocks, the same on every PE. */
static void drain_in_rounds(size_t live, size_t want)
{
    shmalloc_pmix_ofi_counts a, b;
    shmalloc_info before, after;
    size_t rounds = contract_rounds(live);
    void *later;
    shmemx_heap_info(&before);
    CHECK_EQ(before.used_blocks, live);
    shmalloc_pmix_ofi_counts_get(&a);
    shmemx_free_deferred_drain();
    shmalloc_pmix_ofi_counts_get(&b);
    shmemx_heap_info(&after);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    CHECK_EQ(after.drain_rounds - before.drain_rounds, rounds);
    CHECK_EQ(b.and_calls - a.and_calls, rounds);
    CHECK_EQ(b.calls - a.calls, 1 + rounds);
    CHECK_EQ(after.drained - before.drained, want);
    CHECK_EQ(before.used_blocks - after.used_blocks, want);
    CHECK(same_everywhere(after.drained - before.drained));
    later = shmem_malloc(4096); /* offsets still agree */
    CHECK_SYMMETRIC(later);
    shmem_free(later);
    CHECK_EQ(shmalloc_check(-1), 0);
    if (me == 0)
        printf("PE 0 of %d: drain of %zu blocks among %zu live: %llu AND call%s of the transport\n", npes, want,
               live, b.and_calls - a.and_calls, b.and_calls - a.and_calls == 1 ? "" : "s");
}

/* SHMALLOC_TEST_WIDE_LIVE live blocks (the worker's own included),
   released by each PE in its own order, one in seven on the even PEs only:
   one drain frees the others; once the odd PEs release those too, one
   more frees them. */
void scenario_deferred_wide(void)
{
    const char *env = getenv("SHMALLOC_TEST_WIDE_LIVE");
    size_t live = env ? (size_t)strtoul(env, NULL, 10) : 0, base = used_blocks(), n, partial = 0, i, k;
    void **wide;
    size_t *wide_order;
    unsigned seed = 31u + (unsigned)me;
    CHECK(live > base);
    if (live <= base) return;
    n = live - base;
    wide = malloc(n * sizeof *wide);
    wide_order = malloc(n * sizeof *wide_order);
    CHECK(wide && wide_order);
    for (i = 0; wide && wide_order && i < n; i++) { /* without a barrier each: the same calls everywhere */
        wide[i] = shmem_malloc_with_hints(1 + i % 48, SHMEMX_MALLOC_NO_BARRIER);
        CHECK(wide[i] != NULL);
        wide_order[i] = i;
        partial += !everywhere((int)i);
    }
    if (i < n) {
        free(wide);
        free(wide_order);
        return;
    }
    for (k = n - 1; k > 0; k--) {
        size_t j = (size_t)rand_r(&seed) % (k + 1), t = wide_order[k];
        wide_order[k] = wide_order[j];
        wide_order[j] = t;
    }
    for (k = 0; k < n; k++)
        if (released_here((int)wide_order[k])) shmemx_free_deferred(wide[wide_order[k]]);
    drain_in_rounds(live, n - partial);
    for (i = 0; i < n; i++)
        if (!everywhere((int)i)) {
            CHECK_EQ(shmalloc_tlsf_validate(shmalloc_heap_tlsf(shmalloc_current()), wide[i]), SHMALLOC_TLSF_OK);
            if (me % 2) shmemx_free_deferred(wide[i]);
        }
    drain_in_rounds(base + partial, partial);
    CHECK_EQ(used_blocks(), base);
    free(wide);
    free(wide_order);
}
