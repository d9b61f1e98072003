/* shmemx_free_deferred: a local release that the next collective call
   turns into a free once every PE has released the block.  One PE, with an
   imaginary peer whose releases are folded into the all-reduces, and
   transports with and without allreduce_and. */
#include "test_support.h"

/* The imaginary peer, PE 1 of 2: the blocks (numbered in offset order) it
   has released, folded into this PE's bitwise AND; its max values are this
   PE's own, so the calls agree.  ands counts allreduce_and rounds. */
static uint64_t peer_released[64];
static int ands;

static int peer_and(void *user, uint64_t *values, int count)
{
    int i;
    (void)user;
    ands++;
    for (i = 0; i < count; i++) values[i] &= i < 64 ? peer_released[i] : ~(uint64_t)0;
    return 0;
}

/* allreduce_max whose peer contributes 1 - released per value: a drain
   without allreduce_and, one value per live block. */
static int max_bits_seen, drain_armed; /* 1: the next all-reduce is the drain call's agreement */
static int peer_max_bits(void *user, uint64_t *values, int count)
{
    (void)user;
    cnt.allreduces++;
    if (drain_armed < 2) { /* an agreement: the peer agrees */
        drain_armed += drain_armed;
        return 0;
    }
    for (int i = 0; i < count; i++) { /* the drain's values: bit k of the live blocks */
        int bit = max_bits_seen + i;
        if (!(peer_released[bit / 64] >> (bit % 64) & 1)) values[i] = 1;
    }
    max_bits_seen += count;
    return 0;
}

static shmalloc_heap *heap_with_peer(size_t nominal, int with_and)
{
    shmalloc_transport tp = counting_transport_for(0, 2, 1);
    if (with_and) tp.allreduce_and = peer_and;
    memset(peer_released, 0xff, sizeof peer_released); /* the peer released everything */
    ands = 0;
    return make_heap(nominal, &tp);
}

static int block_state(shmalloc_heap *h, const void *p) { return shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), p); }

/* ---- the release itself ---------------------------------------------------- */

Test(free_deferred, a_release_is_local_and_the_block_stays_until_the_next_collective_call)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    char *p = shmem_malloc(100), *q;
    cr_assert(p);
    memset(p, 7, 100);
    int syncs_before = syncs(), locks = cnt.locks;
    malloc_error = -99;
    shmemx_free_deferred(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(syncs(), syncs_before, "a release makes no transport call");
    cr_assert_eq(cnt.locks, locks, "nor takes the transport's lock");
    cr_assert_eq(ands, 0);
    cr_assert_eq(block_state(h, p), SHMALLOC_TLSF_OK, "still allocated");
    cr_assert_eq(p[99], 7, "contents intact");
    cr_assert_eq(info_of(h).released, 1);
    q = shmem_malloc(100); /* drains first: p's place is free again, taken by q */
    cr_assert_eq(syncs(), syncs_before + 1, "the call's own agreement");
    cr_assert_eq(ands, 1, "and one AND round");
    cr_assert_eq(info_of(h).drained, 1);
    cr_assert_eq(info_of(h).released, 0);
    cr_assert_eq(heap_counters(h).used_blocks, 1);
    shmem_free(q);
    assert_heap_ok();
}

Test(free_deferred, a_collective_call_with_nothing_released_makes_no_extra_round)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    void *p = shmem_malloc(100);
    int before = syncs();
    shmem_free(p);
    p = shmem_malloc(200);
    p = shmem_realloc(p, 50); /* a shrink: one synchronisation */
    shmem_free(p);
    cr_assert_eq(syncs(), before + 4, "one synchronisation per call");
    cr_assert_eq(ands, 0);
    cr_assert_eq(info_of(h).drain_rounds, 0);
    assert_heap_ok();
}

Test(free_deferred, a_bad_pointer_gets_its_code_and_message_and_changes_nothing)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    char *p = shmem_malloc(100), *freed = shmem_malloc(100), outside[16];
    shmem_free(freed);
    shmalloc_counters before = heap_counters(h);
    capture_start();
    shmemx_free_deferred(outside);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
    shmemx_free_deferred(p + 16);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_NOT_ALIGNED);
    shmemx_free_deferred(freed);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_ALREADY_FREE);
    shmemx_free_deferred(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    shmemx_free_deferred(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_ALREADY_FREE, "a second release");
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_DEFER_BAD_POINTER), 4, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "shmemx_free_deferred") && strstr(out_text[2], "nothing is released"), "%s",
              out_text[2]);
    shmalloc_counters after = heap_counters(h);
    cr_assert_eq(after.used_blocks, before.used_blocks);
    cr_assert_eq(after.in_use, before.in_use);
    cr_assert_eq(info_of(h).released, 1, "the one good release only");
    shmemx_free_deferred(NULL);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK, "NULL: nothing at all");
    shmemx_free_deferred_drain();
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    assert_heap_ok();
}

/* The release's own check (made while collective calls may change the
   heap) gives what shmem_free's gives, for each kind of bad pointer: deep
   in a large freed block, far from the next used block, in the free top,
   inside a used block, past the last block ever handed out. */
Test(free_deferred, a_release_checks_each_kind_of_pointer_as_a_collective_free_does)
{
    static const long want_of[] = {SHMEM_MALLOC_OK, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, SHMEM_MALLOC_ALREADY_FREE,
                                   SHMEM_MALLOC_NOT_ALIGNED};
    shmalloc_heap *h = heap_with_peer(8 * MIB, 1);
    char *big = shmem_malloc(2 * MIB), *used = shmem_malloc(100), *top;
    char *ptrs[8];
    int i, status;
    cr_assert(big && used);
    top = used + 4 * MIB; /* in the free top, never handed out */
    shmem_free(big);
    ptrs[0] = big;              /* the freed block's start */
    ptrs[1] = big + MIB;        /* deep inside it: past the short scan to the next used block */
    ptrs[2] = big + MIB + 8;    /* and not on a block boundary */
    ptrs[3] = used + 16;        /* inside a used block */
    ptrs[4] = used + 112;       /* just past it, in the top */
    ptrs[5] = top;
    ptrs[6] = big - 16;         /* before the first block */
    ptrs[7] = big + 16 * MIB;   /* past the heap */
    capture_start();
    for (i = 0; i < 8; i++) {
        status = block_state(h, ptrs[i]);
        cr_assert(status >= 0 && status < 4, "status %d", status);
        shmemx_free_deferred(ptrs[i]);
        cr_assert_eq(malloc_error, want_of[status], "pointer %d: %ld, shmem_free's check says %ld", i,
                     malloc_error, want_of[status]);
    }
    capture_stop();
    cr_assert_eq(info_of(h).released, 0);
    shmem_free(used);
    assert_heap_ok();
}

Test(free_deferred, a_release_without_a_heap_does_nothing_and_says_so_once)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    void *p = shmem_malloc(100);
    capture_start();
    shmalloc_set_current(NULL); /* as after shmem_finalize */
    shmemx_free_deferred(p);
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    shmemx_free_deferred(p);
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_DEFER_NO_HEAP), 1, "one message: %s", out_text[2]);
    shmalloc_set_current(h);
    cr_assert_eq(info_of(h).released, 0);
    shmem_free(p);
    assert_heap_ok();
}

/* ---- draining ---------------------------------------------------------------- */

Test(free_deferred, only_the_blocks_every_pe_released_are_freed_in_one_round)
{
    shmalloc_heap *h = heap_with_peer(4 * MIB, 1);
    void *b[200];
    for (int i = 0; i < 200; i++) cr_assert(b[i] = shmem_malloc((size_t)(16 + i)));
    for (int i = 0; i < 200; i++) shmemx_free_deferred(b[i]); /* this PE releases all */
    memset(peer_released, 0, sizeof peer_released);
    for (int i = 0; i < 200; i += 3) peer_released[i / 64] |= (uint64_t)1 << (i % 64); /* the peer every third */
    shmemx_free_deferred_drain();
    cr_assert_eq(ands, 1, "200 live blocks: one round of 4 words");
    for (int i = 0; i < 200; i++)
        cr_assert_eq(block_state(h, b[i]), i % 3 ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_ALREADY_FREE, "block %d", i);
    cr_assert_eq(info_of(h).released, 200 - 67, "the others stay released here");
    shmemx_free_deferred_drain();
    cr_assert_eq(ands, 1, "no fresh release: no round");
    for (int i = 1; i < 200; i++)
        if (i % 3) shmem_free(b[i]); /* a collective free wins over the release */
    cr_assert_eq(info_of(h).released, 0);
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    assert_heap_ok();
}

Test(free_deferred, without_allreduce_and_a_drain_sends_one_value_per_live_block)
{
    shmalloc_transport tp = counting_transport_for(0, 2, 1);
    tp.allreduce_max = peer_max_bits;
    memset(peer_released, 0, sizeof peer_released);
    max_bits_seen = 0;
    shmalloc_heap *h = make_heap(MIB, &tp);
    void *b[40];
    for (int i = 0; i < 40; i++) cr_assert(b[i] = shmem_malloc(32));
    for (int i = 0; i < 40; i++) shmemx_free_deferred(b[i]);
    for (int i = 0; i < 40; i += 2) peer_released[0] |= (uint64_t)1 << i;
    int before = cnt.allreduces;
    drain_armed = 1;
    shmemx_free_deferred_drain();
    drain_armed = 0;
    cr_assert_eq(cnt.allreduces - before, 1 + 3, "the agreement and ceil(40 / 16) rounds");
    cr_assert_eq(info_of(h).drain_rounds, 3);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(block_state(h, b[i]), i % 2 ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_ALREADY_FREE, "block %d", i);
    for (int i = 1; i < 40; i += 2) shmem_free(b[i]);
    assert_heap_ok();
}

Test(free_deferred, a_drain_of_more_blocks_than_one_round_holds_counts_its_rounds)
{
    shmalloc_heap *h = heap_with_peer(64 * MIB, 1);
    size_t n = (size_t)SHMALLOC_REDUCE_AND_MAX * 64 + 100; /* one word of blocks past one round */
    void **b = calloc(n, sizeof *b);
    cr_assert(b);
    for (size_t i = 0; i < n; i++) cr_assert(b[i] = shmem_malloc_with_hints(16, SHMEMX_MALLOC_NO_BARRIER));
    for (size_t i = 0; i < n; i++) shmemx_free_deferred(b[i]);
    shmemx_free_deferred_drain(); /* the peer_and folds all ones past its 64 words */
    cr_assert_eq(ands, 2, "ceil(%zu / 64 / %d) rounds", n, SHMALLOC_REDUCE_AND_MAX);
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    free(b);
    assert_heap_ok();
}

Test(free_deferred, an_allocation_that_finds_no_room_drains_first_and_succeeds)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    void *b[8];
    for (int i = 0; i < 8; i++) cr_assert(b[i] = shmem_malloc(MIB / 8 - 64));
    for (int i = 0; i < 8; i++) shmemx_free_deferred(b[i]);
    void *big = shmem_malloc(MIB / 2);
    cr_assert(big && malloc_error == SHMEM_MALLOC_OK, "%ld", malloc_error);
    cr_assert_eq(heap_counters(h).used_blocks, 1);
    shmem_free(big);
    assert_heap_ok();
}

/* ---- collective calls on released blocks ----------------------------------------- */

Test(free_deferred, a_collective_free_of_a_released_block_wins)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    void *p = shmem_malloc(100);
    shmemx_free_deferred(p);
    shmem_free(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(info_of(h).released, 0, "the release is dropped");
    cr_assert_eq(info_of(h).drained, 0);
    void *q = shmem_malloc(100); /* at p's offset: no stale release may free it */
    cr_assert_eq(q, p);
    shmemx_free_deferred_drain();
    cr_assert_eq(block_state(h, q), SHMALLOC_TLSF_OK);
    shmem_free(q);
    assert_heap_ok();
}

Test(free_deferred, a_collective_realloc_of_a_released_block_wins)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    char *p = shmem_malloc(100), *fence = shmem_malloc(16);
    memset(p, 5, 100);
    shmemx_free_deferred(p);
    char *q = shmem_realloc(p, 5000); /* moves */
    cr_assert(q && q != p && q[99] == 5);
    cr_assert_eq(info_of(h).released, 0, "the release is dropped");
    shmemx_free_deferred_drain();
    cr_assert_eq(block_state(h, q), SHMALLOC_TLSF_OK);
    shmem_free(q);
    shmem_free(fence);
    assert_heap_ok();
}

Test(free_deferred, a_failed_realloc_keeps_the_block_and_its_release)
{
    shmalloc_heap *h = heap_with_peer(MIB, 1);
    void *p = shmem_malloc(100);
    shmemx_free_deferred(p);
    memset(peer_released, 0, sizeof peer_released); /* the peer has not released it */
    capture_start();
    cr_assert_null(shmem_realloc(p, 2 * MIB));
    capture_stop();
    cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED);
    cr_assert_eq(info_of(h).released, 1);
    memset(peer_released, 0xff, sizeof peer_released);
    shmemx_free_deferred_drain();
    cr_assert_eq(block_state(h, p), SHMALLOC_TLSF_ALREADY_FREE, "freed once the peer released it");
    assert_heap_ok();
}

Test(free_deferred, releases_in_a_growing_heap_are_drained_before_it_grows)
{
    shmalloc_transport tp = counting_transport_for(0, 2, 1);
    tp.allreduce_and = peer_and;
    memset(peer_released, 0xff, sizeof peer_released);
    shmalloc_heap *h = make_growable_heap(MIB, 16 * MIB, &tp);
    void *b[64];
    for (int i = 0; i < 64; i++) cr_assert(b[i] = shmem_malloc(64 * 1024)); /* grows */
    size_t grown = info_of(h).heap_size;
    cr_assert(grown > MIB, "%zu", grown);
    for (int i = 0; i < 64; i++) shmemx_free_deferred(b[i]);
    for (int i = 0; i < 64; i++) cr_assert(b[i] = shmem_malloc(64 * 1024));
    cr_assert_eq(info_of(h).heap_size, grown, "the released blocks made room: no growth");
    cr_assert_eq(info_of(h).drained, 64);
    for (int i = 0; i < 64; i++) shmem_free(b[i]);
    assert_heap_ok();
}

/* ---- allocations made without a barrier ---------------------------------------- */

/* allreduce_max whose peer, while digest_differs, made other allocations
   without a barrier: its digest pair never matches this PE's. */
static int digest_differs;
static int peer_other_digest(void *user, uint64_t *values, int count)
{
    (void)user;
    cnt.allreduces++;
    if (digest_differs && count >= 12) {
        if (values[3] < 12345) values[3] = 12345;
        if (values[4] < ~(uint64_t)12345) values[4] = ~(uint64_t)12345;
    }
    return 0;
}

Test(free_deferred, no_pe_drains_while_the_allocations_made_without_a_barrier_differ)
{
    shmalloc_transport tp = counting_transport_for(0, 2, 1);
    tp.allreduce_max = peer_other_digest;
    tp.allreduce_and = peer_and;
    memset(peer_released, 0xff, sizeof peer_released);
    ands = 0;
    shmalloc_heap *h = make_heap(MIB, &tp);
    void *p = shmem_malloc(100);
    shmemx_free_deferred(p);
    digest_differs = 1;
    capture_start();
    cr_assert_null(shmem_malloc(200));
    capture_stop();
    digest_differs = 0;
    cr_assert_eq(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    assert_said(HEAP_NO_BARRIER_DIFFER, 0, 0ULL, "s", "", "malloc");
    cr_assert_eq(ands, 0, "the live blocks may differ: no drain");
    cr_assert_eq(block_state(h, p), SHMALLOC_TLSF_OK);
    shmemx_free_deferred_drain(); /* the same again: the release is still fresh */
    cr_assert_eq(ands, 1);
    cr_assert_eq(block_state(h, p), SHMALLOC_TLSF_ALREADY_FREE);
    assert_heap_ok();
}
