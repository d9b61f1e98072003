/* A collective call that fails on another PE: every PE fails, and its
   heap is exactly as before, down to the order of the free lists, so the
   next calls get the offsets of a heap that never saw the call.  The peer
   is imaginary: its values are folded into this PE's all-reduce. */
#include "test_support.h"

typedef void *(*peer_call)(void *a, void *b);
static void *pc_malloc(void *a, void *b) { (void)a, (void)b; return shmem_malloc(200); }
static void *pc_malloc_small(void *a, void *b) { (void)a, (void)b; return shmem_malloc(24); }
static void *pc_align(void *a, void *b) { (void)a, (void)b; return shmem_align(4096, 200); }
static void *pc_calloc(void *a, void *b) { (void)a, (void)b; return shmem_calloc(10, 20); }
static void *pc_realloc_grow(void *a, void *b) { (void)b; return shmem_realloc(a, 5000); }
static void *pc_realloc_shrink(void *a, void *b) { (void)a; return shmem_realloc(b, 20); }
static void *pc_free(void *a, void *b)
{
    (void)b;
    shmem_free(a);
    return NULL;
}

static void check_peer_failure_leaves_heap_unchanged(peer_call call, size_t size, const char *what)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    snapshot *before = heap_snapshot(h), *after;
    peer_fails(size, SHMEM_MALLOC_FAIL);
    malloc_error = SHMEM_MALLOC_OK;
    void *r = call(a, b);
    peer_active = 0;
    cr_assert_null(r, "%s succeeded although a peer failed", what);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL, "%s: malloc_error %ld", what, malloc_error);
    after = heap_snapshot(h);
    assert_same_heap(before, after, what);
    cr_assert_eq(before->c.high_water, after->c.high_water, "%s: high water moved", what);
    cr_assert_eq(shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), b), SHMALLOC_TLSF_OK);
    assert_heap_ok();
}

Test(peer, malloc_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_malloc, 200, "shmem_malloc");
}
Test(peer, small_malloc_from_the_hole_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_malloc_small, 24, "shmem_malloc(24)");
}
Test(peer, align_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_align, 200, "shmem_align");
}
Test(peer, calloc_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_calloc, 200, "shmem_calloc");
}
Test(peer, realloc_grow_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_realloc_grow, 5000, "shmem_realloc grow");
}
Test(peer, realloc_shrink_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_realloc_shrink, 20, "shmem_realloc shrink");
}
Test(peer, free_is_not_done_when_a_peer_reports_a_bad_pointer)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    snapshot *before = heap_snapshot(h), *after;
    peer_fails(0, SHMEM_MALLOC_NOT_ALIGNED);
    malloc_error = SHMEM_MALLOC_OK;
    pc_free(a, b);
    peer_active = 0;
    cr_assert_eq(malloc_error, SHMEM_MALLOC_NOT_ALIGNED);
    after = heap_snapshot(h);
    assert_same_heap(before, after, "free with a failing peer");
    assert_heap_ok();
}

Test(peer, different_sizes_on_two_pes_give_null_and_symmsize_failed)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    snapshot *before = heap_snapshot(h), *after;
    peer_passes_size(201);
    malloc_error = SHMEM_MALLOC_OK;
    capture_start();
    cr_assert_null(shmem_malloc(200));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED, "malloc: %ld", malloc_error);
    peer_passes_size(199);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc(200));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED, "malloc, smaller peer: %ld",
                 malloc_error);
    peer_passes_size(6000);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_realloc(a, 5000));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED, "realloc: %ld", malloc_error);
    capture_stop();
    peer_active = 0;
    assert_said(HEAP_MISMATCH, 0, "malloc(200 bytes), its collective call 6", 1,
                "malloc(201 bytes), its collective call 6", "the sizes");
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISMATCH), 1, "the first mismatch only:\n%s", out_text[2]);
    assert_said(HEAP_MISMATCH_QUIET, 0);
    after = heap_snapshot(h);
    assert_same_heap(before, after, "mismatched sizes");
    assert_heap_ok();
}

/* After a call that failed because of a peer, the next calls must give the
   same offsets as on a PE that never saw it (its free lists are restored in
   order, not only in content), or the PEs' heaps drift apart. */
Test(peer, offsets_after_a_peer_failure_match_a_heap_that_never_saw_the_call)
{
    static size_t off_a[400], off_b[400];
    for (int pass = 0; pass < 2; pass++) {
        size_t *off = pass ? off_b : off_a;
        shmalloc_heap *h = make_peer_heap(4 * MIB);
        char *base = shmalloc_heap_base(h);
        static void *live[400];
        size_t n = 0;
        uint64_t x = 88172645463325252u;
        for (int i = 0; i < 400; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t s = 1 + (size_t)(x % 3000);
            if (pass == 0 && i % 7 == 3) { /* a call a peer makes fail */
                peer_fails(s, SHMEM_MALLOC_FAIL);
                void *r = (i % 2) ? shmem_malloc(s) : shmem_align((size_t)64 << (i % 5), s);
                peer_active = 0;
                cr_assert_null(r);
            }
            if (n && x % 3 == 0) {
                size_t k = (size_t)(x >> 8) % n;
                shmem_free(live[k]);
                live[k] = live[--n];
                off[i] = 0;
            } else {
                void *p = shmem_malloc(s);
                cr_assert(p);
                live[n++] = p;
                off[i] = (size_t)((char *)p - base);
            }
        }
        assert_heap_ok();
    }
    for (int i = 0; i < 400; i++)
        cr_assert_eq(off_a[i], off_b[i], "call %d: offset %zu after peer failures, %zu without",
                     i, off_a[i], off_b[i]);
}

/* A moving realloc copies into its new block before agreeing, and most
   grows in place grow before agreeing: when a peer fails, undoing must
   leave the free lists as they were, so the next calls get the offsets of
   a heap that never saw the call. */
Test(peer, offsets_after_failed_moving_or_growing_reallocs_match_a_heap_that_never_saw_them)
{
    static size_t off[2][300];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(4 * MIB);
        char *base = shmalloc_heap_base(h);
        static void *live[300];
        capture_start();
        size_t n = 0;
        uint64_t x = 0x9e3779b97f4a7c15u;
        for (int i = 0; i < 300; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t s = 1 + (size_t)(x % 2000);
            if (pass == 0 && n > 1 && i % 5 == 2) { /* a move a peer makes fail */
                size_t k = (size_t)(x >> 20) % (n - 1); /* never the last block: it could grow in place */
                snapshot *before = heap_snapshot(h), *after;
                peer_fails(s + 4000, SHMEM_MALLOC_FAIL);
                cr_assert_null(shmem_realloc(live[k], s + 4000));
                peer_active = 0;
                after = heap_snapshot(h);
                assert_same_heap(before, after, "a failed moving realloc");
                peer_fails(s + 64, SHMEM_MALLOC_FAIL); /* the newest block: often a grow in place */
                cr_assert_null(shmem_realloc(live[n - 1], shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(h),
                                                                                     live[n - 1]) + 64));
                peer_active = 0;
                after = heap_snapshot(h);
                assert_same_heap(before, after, "a failed realloc of the newest block");
            }
            if (n && x % 3 == 0) {
                size_t k = (size_t)(x >> 8) % n;
                shmem_free(live[k]);
                live[k] = live[--n];
                off[pass][i] = 0;
            } else {
                void *p = shmem_malloc(s);
                cr_assert(p);
                live[n++] = p;
                off[pass][i] = (size_t)((char *)p - base);
            }
        }
        capture_stop();
        /* the newest block's realloc passes another size than the peer's: reported once */
        cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISMATCH), pass ? 0u : 1u, "pass %d:\n%s", pass, out_text[2]);
        cr_assert_eq(count_in(out_text[2], ": the sizes\n"), pass ? 0u : 1u, "pass %d:\n%s", pass, out_text[2]);
        assert_heap_ok();
    }
    for (int i = 0; i < 300; i++)
        cr_assert_eq(off[0][i], off[1][i], "call %d: offset %zu after failed reallocs, %zu without", i, off[0][i],
                     off[1][i]);
}

/* Free blocks a < h < y of one list, freed a, y, h: a is filed first, y
   and h after it, then a is taken, so y heads the list with h, below it,
   second.  A collective malloc another PE fails takes y and gives it back:
   a plain free would file y after h (it lies above the head), and the next
   malloc would take h where a PE that took nothing takes y. */
Test(peer, a_failed_malloc_puts_a_head_back_at_the_head_when_the_list_is_not_in_address_order)
{
    size_t got[2];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(MIB);
        char *a = shmem_malloc(1000), *w1 = shmem_malloc(16), *m = shmem_malloc(1000), *w2 = shmem_malloc(16);
        char *y = shmem_malloc(1000), *w3 = shmem_malloc(16);
        cr_assert(a && w1 && m && w2 && y && w3);
        shmem_free(a);
        shmem_free(y);
        shmem_free(m);
        cr_assert(shmem_malloc(1000) == a, "the list's head, a, is taken first");
        if (pass == 0) {
            peer_fails(1000, SHMEM_MALLOC_FAIL);
            cr_assert_null(shmem_malloc(1000));
            peer_active = 0;
        }
        char *p = shmem_malloc(1000);
        cr_assert(p == y, "pass %d: the block above heads the list, but %p was taken, not %p", pass, (void *)p,
                  (void *)y);
        got[pass] = (size_t)(p - (char *)shmalloc_heap_base(h));
        assert_heap_ok();
    }
    cr_assert_eq(got[0], got[1]);
}

/* The same with a grow in place undone: the free block g grows into heads
   its list (above the second), and must head it again after the undo. */
Test(peer, a_failed_grow_in_place_puts_the_free_block_back_at_the_head)
{
    size_t got[2];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(MIB);
        char *a = shmem_malloc(3000), *w1 = shmem_malloc(16), *m = shmem_malloc(3000), *w2 = shmem_malloc(16);
        char *g = shmem_malloc(100), *y = shmem_malloc(3000), *w3 = shmem_malloc(16);
        cr_assert(a && w1 && m && w2 && g && y && w3);
        shmem_free(a);
        shmem_free(y);
        shmem_free(m);
        cr_assert(shmem_malloc(3000) == a, "the list's head, a, is taken first");
        if (pass == 0) {
            int before = syncs();
            peer_fails(1500, SHMEM_MALLOC_FAIL);
            cr_assert_null(shmem_realloc(g, 1500));
            peer_active = 0;
            cr_assert_eq(syncs() - before, 1, "an undoable grow synchronises once, failing or not");
        }
        char *p = shmem_malloc(3000);
        cr_assert(p == y, "pass %d: the free block above heads the list, but %p was taken, not %p", pass,
                  (void *)p, (void *)y);
        got[pass] = (size_t)(p - (char *)shmalloc_heap_base(h));
        assert_heap_ok();
    }
    cr_assert_eq(got[0], got[1], "offset %zu after the failed grow, %zu without", got[0], got[1]);
}

/* Two free blocks of 1008 bytes in one list, z at its head, x second, x
   right after g.  Growing g into x leaves a remainder of another list, so
   undoing that grow could not put x back second: the grow must wait for
   the agreement, and a failure must leave z first. */
Test(peer, a_failed_grow_into_a_free_block_that_is_not_its_lists_head_keeps_the_list_order)
{
    size_t got[2];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(MIB);
        char *z = shmem_malloc(1000), *w0 = shmem_malloc(16), *g = shmem_malloc(100), *x = shmem_malloc(1000);
        cr_assert(z && w0 && g && x && shmem_malloc(16));
        shmem_free(z);
        shmem_free(x);
        if (pass == 0) {
            int before = syncs();
            peer_fails(700, SHMEM_MALLOC_FAIL);
            cr_assert_null(shmem_realloc(g, 700));
            peer_active = 0;
            cr_assert_eq(syncs() - before, 1, "a failure synchronises once");
        }
        char *p = shmem_malloc(1000);
        cr_assert(p == z, "pass %d: the list's head is taken first", pass);
        got[pass] = (size_t)(p - (char *)shmalloc_heap_base(h));
        assert_heap_ok();
    }
    cr_assert_eq(got[0], got[1]);
}
