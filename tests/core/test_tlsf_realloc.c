/* shmalloc_tlsf_realloc: shrinking and growing in place, into either
   neighbour or both, moving when nothing fits, failing without a change,
   and keeping a block's alignment when it moves or grows. */
#include "test_support.h"

/* ---- realloc --------------------------------------------------------------- */

Test(tlsf_realloc, realloc_null_acts_as_malloc)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p = shmalloc_tlsf_realloc(t, NULL, 100);
    cr_assert(p != NULL);
    cr_assert(((uintptr_t)p & 15) == 0);
    cr_assert_eq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).used_blocks, 1);
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, realloc_to_0_frees_and_returns_null)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p = shmalloc_tlsf_malloc(t, 100);
    cr_assert_null(shmalloc_tlsf_realloc(t, p, 0));
    cr_assert_eq(counters(t).used_blocks, 0);
    cr_assert_eq(counters(t).in_use, 0);
    cr_assert_neq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, shrink_stays_in_place_and_keeps_contents)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *p = shmalloc_tlsf_malloc(t, 10000);
    void *guard = shmalloc_tlsf_malloc(t, 100);
    cr_assert(guard);
    fill_pattern(p, 10000, 5);
    size_t before = counters(t).in_use;
    unsigned char *q = shmalloc_tlsf_realloc(t, p, 100);
    cr_assert_eq(q, p);
    cr_assert(check_pattern(q, 100, 5));
    cr_assert(counters(t).in_use < before, "shrink did not give space back");
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, grow_into_next_free_block_stays_in_place)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    void *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && g);
    fill_pattern(a, 100, 9);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    unsigned char *q = shmalloc_tlsf_realloc(t, a, 200);
    cr_assert_eq(q, a, "grow into the freed neighbour moved the block");
    cr_assert(check_pattern(q, 100, 9));
    cr_assert(shmalloc_tlsf_usable_size(t, q) >= 200);
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, grow_into_the_free_remainder_stays_in_place)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    fill_pattern(a, 100, 10);
    unsigned char *q = shmalloc_tlsf_realloc(t, a, 500000);
    cr_assert_eq(q, a);
    cr_assert(check_pattern(q, 100, 10));
    memset(q + 100, 0, 500000 - 100);
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, the_last_block_grows_over_the_whole_free_end_and_shrinks_back)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100), *q;
    shmalloc_counters c = counters(t);
    size_t all = c.capacity - 16; /* a block of the whole capacity but 16 bytes: too few for a free block */
    fill_pattern(a, 100, 11);
    q = shmalloc_tlsf_realloc(t, a, all - 8);
    cr_assert_eq(q, a);
    c = counters(t);
    cr_assert_eq(c.largest_free, 0, "a free block of %zu bytes is left", c.largest_free);
    cr_assert_eq(c.in_use, c.capacity);
    assert_tlsf_ok(t);
    q = shmalloc_tlsf_realloc(t, a, 100);
    cr_assert_eq(q, a);
    cr_assert(check_pattern(q, 100, 11));
    c = counters(t);
    cr_assert_eq(c.largest_free, c.capacity - c.in_use, "the tail did not become one free block with the end");
    assert_tlsf_ok(t);
    cr_assert(shmalloc_tlsf_free(t, a) == SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).largest_free, counters(t).capacity);
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, a_block_moves_to_the_free_end_when_no_hole_fits)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 1000), *hole = shmalloc_tlsf_malloc(t, 2000),
                  *wall = shmalloc_tlsf_malloc(t, 100), *q;
    cr_assert(a && hole && wall);
    cr_assert(shmalloc_tlsf_free(t, hole) == SHMALLOC_TLSF_OK);
    fill_pattern(a, 1000, 12);
    q = shmalloc_tlsf_realloc(t, a, 200000); /* neither the hole nor the room after a fits */
    cr_assert(q > wall, "realloc did not move past the wall");
    cr_assert(check_pattern(q, 1000, 12));
    assert_tlsf_ok(t);
    cr_assert(shmalloc_tlsf_free(t, q) == SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_free(t, wall) == SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).largest_free, counters(t).capacity, "the heap is not one free block again");
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, grow_into_previous_free_block_keeps_contents)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && g);
    fill_pattern(b, 100, 11);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    unsigned char *q = shmalloc_tlsf_realloc(t, b, 250);
    cr_assert(q != NULL);
    cr_assert(check_pattern(q, 100, 11), "contents lost growing backwards");
    cr_assert_eq(q, a, "did not grow into the previous free block (got offset %zu, prev %zu)",
                 off_of(t, q), off_of(t, a));
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, grow_into_both_neighbours_keeps_contents)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && c && g);
    fill_pattern(b, 200, 12);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, c), SHMALLOC_TLSF_OK);
    /* a+b+c hold 3*224 = 672 bytes of block: 600 fits only in all three. */
    unsigned char *q = shmalloc_tlsf_realloc(t, b, 600);
    cr_assert(q != NULL);
    cr_assert(check_pattern(q, 200, 12));
    cr_assert_eq(q, a, "did not grow into both neighbours (offset %zu)", off_of(t, q));
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, a_large_free_previous_block_is_kept_whole_and_the_block_moves)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *hole = shmalloc_tlsf_malloc(t, 20000);
    unsigned char *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    unsigned char *spot = shmalloc_tlsf_malloc(t, 300);
    void *g2 = shmalloc_tlsf_malloc(t, 100);
    cr_assert(hole && b && g && spot && g2);
    fill_pattern(b, 100, 14);
    cr_assert_eq(shmalloc_tlsf_free(t, hole), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, spot), SHMALLOC_TLSF_OK);
    /* the 20000-byte hole below b would hold it, but stays whole: b moves
       to the 300-byte hole, the one that fits */
    unsigned char *q = shmalloc_tlsf_realloc(t, b, 250);
    cr_assert_eq(q, spot, "moved to offset %zu, not to the fitting hole at %zu", off_of(t, q), off_of(t, spot));
    cr_assert(check_pattern(q, 100, 14));
    cr_assert_eq(shmalloc_tlsf_malloc(t, 20000), hole, "the large hole was cut");
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, move_when_neighbours_are_used_keeps_contents_up_to_old_size)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && g);
    fill_pattern(a, 100, 13);
    unsigned char *q = shmalloc_tlsf_realloc(t, a, 5000);
    cr_assert(q != NULL);
    cr_assert_neq(q, a);
    cr_assert(check_pattern(q, 100, 13));
    cr_assert(((uintptr_t)q & 15) == 0);
    cr_assert_neq(shmalloc_tlsf_validate(t, a), SHMALLOC_TLSF_OK, "old block still used");
    cr_assert_eq(counters(t).used_blocks, 2);
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, failure_returns_null_and_leaves_block_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && g);
    fill_pattern(a, 100, 14);
    size_t usable = shmalloc_tlsf_usable_size(t, a);
    snapshot *before = take_snapshot(t);
    cr_assert_null(shmalloc_tlsf_realloc(t, a, 2 * MIB));
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "failed realloc");
    cr_assert_eq(shmalloc_tlsf_validate(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, a), usable);
    cr_assert(check_pattern(a, 100, 14));
    assert_tlsf_ok(t);
}

/* Fill every byte of free space with 32-byte blocks, so that a realloc can
   neither grow in place nor find room except where the test frees some. */
static size_t fill_with_minimum_blocks(shmalloc_tlsf *t, void **ptrs, size_t max)
{
    size_t n = fill_heap(t, 16, ptrs, max);
    cr_assert(counters(t).largest_free < 32);
    return n;
}

static void free_range(shmalloc_tlsf *t, void **ptrs, size_t n, char *lo, char *hi)
{
    for (size_t i = 0; i < n; i++) {
        char *p = ptrs[i];
        if (p && p >= lo && p < hi) {
            cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
            ptrs[i] = NULL;
        }
    }
}

/* Trap: realloc that moves a block loses the alignment it was allocated with. */
Test(tlsf_realloc, moving_an_aligned_block_keeps_its_alignment)
{
    static void *ptrs[40000];
    static const size_t aligns[] = {32, 64, 256, 4096, 65536};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        size_t a = aligns[i];
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        unsigned char *p = shmalloc_tlsf_align(t, a, 100);
        cr_assert(p && ((uintptr_t)p & (a - 1)) == 0);
        fill_pattern(p, 100, 15);
        size_t n = fill_with_minimum_blocks(t, ptrs, 40000);
        /* Open a 256 KiB hole far from p: the only place the block can go. */
        char *base = shmalloc_tlsf_base(t);
        free_range(t, ptrs, n, base + 512 * KIB, base + 768 * KIB);
        size_t grow = 4 * a < 20000 ? 20000 : 2 * a;
        unsigned char *q = shmalloc_tlsf_realloc(t, p, grow);
        cr_assert(q != NULL, "align %zu: realloc to %zu failed", a, grow);
        cr_assert_neq(q, p);
        cr_assert(((uintptr_t)q & (a - 1)) == 0, "align %zu lost on move: offset %zu", a,
                  off_of(t, q));
        cr_assert(check_pattern(q, 100, 15));
        assert_tlsf_ok(t);
    }
}

Test(tlsf_realloc, growing_an_aligned_block_backwards_keeps_its_alignment)
{
    static void *ptrs[40000];
    const size_t a = 4096;
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *lead = shmalloc_tlsf_malloc(t, 20000); /* p lands past offset 16 KiB */
    cr_assert(lead);
    unsigned char *p = shmalloc_tlsf_align(t, a, 100);
    cr_assert(p && ((uintptr_t)p & (a - 1)) == 0);
    fill_pattern(p, 100, 16);
    size_t n = fill_with_minimum_blocks(t, ptrs, 40000);
    (void)n;
    /* Free everything before p: the only free space is just below it. */
    cr_assert_eq(shmalloc_tlsf_free(t, lead), SHMALLOC_TLSF_OK);
    free_range(t, ptrs, n, (char *)shmalloc_tlsf_base(t), (char *)p);
    unsigned char *q = shmalloc_tlsf_realloc(t, p, 6000);
    cr_assert(q != NULL, "realloc with room just below the block failed");
    cr_assert(((uintptr_t)q & (a - 1)) == 0, "alignment lost: offset %zu", off_of(t, q));
    cr_assert(check_pattern(q, 100, 16));
    assert_tlsf_ok(t);
}

Test(tlsf_realloc, growing_an_aligned_block_in_place_keeps_pointer)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *p = shmalloc_tlsf_align(t, 4096, 100);
    cr_assert(p);
    fill_pattern(p, 100, 17);
    unsigned char *q = shmalloc_tlsf_realloc(t, p, 50000);
    cr_assert_eq(q, p);
    cr_assert(check_pattern(q, 100, 17));
    q = shmalloc_tlsf_realloc(t, q, 50);
    cr_assert_eq(q, p);
    assert_tlsf_ok(t);
}
