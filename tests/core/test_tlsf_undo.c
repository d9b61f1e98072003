/* The TLSF core's tentative operations (shmalloc_tlsf_take/resize, then
   commit or undo), which a collective layer makes before the PEs agree.
   Each test builds two identical heaps, makes the operation on one and
   undoes it (or commits it, and makes the plain call on the other): the two
   must then hold the same blocks and counters and, since list positions
   decide where later blocks go, hand out the same offsets from then on.
   Every test ends with the checker returning 0 on both heaps. */
#include "test_support.h"

#define CAP ((size_t)1 << 20)

/* ---- helpers ------------------------------------------------------------ */

/* malloc of a block of exactly `block` bytes (a multiple of 16, >= 32):
   a used block's payload runs to the next block's header word. */
static void *block_of(shmalloc_tlsf *t, size_t block)
{
    void *p = shmalloc_tlsf_malloc(t, block - 8);
    cr_assert(p != NULL);
    return p;
}

/* Same blocks (offsets, sizes, states) and same counters. */
static void assert_twins(const shmalloc_tlsf *a, const shmalloc_tlsf *b, const char *what)
{
    assert_same_heap(take_snapshot(a), take_snapshot(b), what);
}

/* The same calls on both heaps give the same offsets: plain and aligned
   blocks of every size class the tests use, with frees in between, so any
   list left in another order would hand out another block. */
static void assert_same_future(shmalloc_tlsf *a, shmalloc_tlsf *b)
{
    static const size_t sizes[] = {24, 56, 100, 1000, 4000, 8100, 8152, 7000, 300, 40};
    void *pa[64], *pb[64];
    size_t i, n = sizeof sizes / sizeof sizes[0];
    for (i = 0; i < 64; i++) {
        size_t align = i % 5 == 4 ? 256 : SHMALLOC_ALIGNMENT;
        pa[i] = shmalloc_tlsf_align(a, align, sizes[i % n]);
        pb[i] = shmalloc_tlsf_align(b, align, sizes[i % n]);
        cr_assert(pa[i] && pb[i], "call %zu failed", i);
        cr_assert_eq(shmalloc_tlsf_offset(a, pa[i]), shmalloc_tlsf_offset(b, pb[i]), "call %zu: offsets differ", i);
        if (i % 3 == 2) {
            cr_assert_eq(shmalloc_tlsf_free(a, pa[i - 1]), SHMALLOC_TLSF_OK);
            cr_assert_eq(shmalloc_tlsf_free(b, pb[i - 1]), SHMALLOC_TLSF_OK);
        }
    }
    assert_twins(a, b, "after the same calls");
    assert_tlsf_ok(a);
    assert_tlsf_ok(b);
}

/* Free blocks of `blocks` bytes between used ones, listed lowest first,
   two in some lists (so list order matters); the top stays free.  *keep
   (when not NULL): the fourth block, left used. */
static void scatter_blocks(shmalloc_tlsf *t, const size_t *blocks, size_t n, void **keep)
{
    void *p[32];
    size_t i;
    cr_assert(2 * n <= 32);
    for (i = 0; i < 2 * n; i++) p[i] = block_of(t, i % 2 ? 64 : blocks[i / 2]);
    for (i = 0; i < 2 * n; i += 2)
        if (i != 6 || !keep) cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
    if (keep) *keep = p[6];
}

/* Classes from 48 to 8160 bytes. */
static void scatter(shmalloc_tlsf *t, void **keep)
{
    static const size_t blocks[] = {8160, 64, 1024, 8160, 48, 8160, 4096, 64, 1024, 512};
    scatter_blocks(t, blocks, sizeof blocks / sizeof blocks[0], keep);
}

/* Only 8160-byte blocks: a small request is cut from one of them. */
static void scatter_large(shmalloc_tlsf *t)
{
    static const size_t blocks[] = {8160, 8160, 8160};
    scatter_blocks(t, blocks, 3, NULL);
}

/* A list whose head is not its lowest block, [n, low], for the undo to
   put back: a higher block freed goes last, and the lowest is taken.  *x:
   a used block just before n.  Returns n. */
static void *head_above_low(shmalloc_tlsf *t, void **x)
{
    void *first = block_of(t, 8160), *low, *n;
    block_of(t, 64);
    low = block_of(t, 8160);
    block_of(t, 64);
    *x = block_of(t, 1008);
    n = block_of(t, 8160);
    block_of(t, 64);
    cr_assert(shmalloc_tlsf_free(t, first) == SHMALLOC_TLSF_OK && shmalloc_tlsf_free(t, n) == SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, low), SHMALLOC_TLSF_OK);
    cr_assert(block_of(t, 8160) == first);
    return n;
}

/* A take on a, then its undo: a must be b again. */
static void take_and_undo(shmalloc_tlsf *a, shmalloc_tlsf *b, size_t align, size_t size)
{
    shmalloc_tlsf_pending op;
    cr_assert_eq(shmalloc_tlsf_take(a, align, size, &op), SHMALLOC_TLSF_OK);
    cr_assert(op.ptr != NULL);
    cr_assert_eq((uintptr_t)op.ptr % (align > SHMALLOC_ALIGNMENT ? align : SHMALLOC_ALIGNMENT), 0);
    memset(op.ptr, 0x5c, shmalloc_tlsf_usable_size(a, op.ptr)); /* writable before the commit */
    shmalloc_tlsf_undo(a, &op);
    cr_assert_null(op.ptr);
    assert_twins(a, b, "take undone");
    assert_same_future(a, b);
}

/* ---- takes ---------------------------------------------------------------- */

Test(tlsf_take, undo_of_a_plain_take_from_the_top_restores_the_fresh_heap)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    take_and_undo(a, b, SHMALLOC_ALIGNMENT, 1000);
}

Test(tlsf_take, undo_restores_the_high_water_mark)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    shmalloc_tlsf_pending op;
    shmalloc_counters c;
    cr_assert_eq(shmalloc_tlsf_take(a, SHMALLOC_ALIGNMENT, 200000, &op), SHMALLOC_TLSF_OK);
    shmalloc_tlsf_counters(a, &c);
    cr_assert(c.high_water >= 200000, "the take raised the mark");
    shmalloc_tlsf_undo(a, &op);
    shmalloc_tlsf_counters(a, &c);
    cr_assert_eq(c.high_water, 0);
    assert_same_future(a, b);
}

Test(tlsf_take, undo_of_an_aligned_take_from_the_top_takes_back_its_listed_gap)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    block_of(a, 48);
    block_of(b, 48); /* the top then starts where 4096 leaves a gap */
    take_and_undo(a, b, 4096, 3000);
}

Test(tlsf_take, undo_of_a_take_whose_rest_stays_in_its_list_restores_the_list)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    scatter_large(a);
    scatter_large(b);
    take_and_undo(a, b, SHMALLOC_ALIGNMENT, 56); /* 8160 - 64 stays in the 8160 list */
}

Test(tlsf_take, undo_of_a_take_of_a_whole_head_restores_its_list_of_two)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    scatter(a, NULL);
    scatter(b, NULL);
    take_and_undo(a, b, SHMALLOC_ALIGNMENT, 56); /* the first of the two 64-byte blocks */
}

Test(tlsf_take, undo_of_a_take_whose_rest_changes_list_restores_both_lists)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    scatter(a, NULL);
    scatter(b, NULL);
    take_and_undo(a, b, SHMALLOC_ALIGNMENT, 4000);
}

Test(tlsf_take, undo_puts_the_block_taken_from_back_at_the_head_above_a_lower_one)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    void *x, *n = head_above_low(a, &x);
    shmalloc_tlsf_pending op;
    head_above_low(b, &x);
    cr_assert_eq(shmalloc_tlsf_take(a, SHMALLOC_ALIGNMENT, 4000, &op), SHMALLOC_TLSF_OK);
    cr_assert_eq(op.ptr, n, "cut from the head");
    shmalloc_tlsf_undo(a, &op);
    assert_twins(a, b, "take undone");
    assert_same_future(a, b);
}

Test(tlsf_take, undo_of_a_take_of_a_whole_listed_block_restores_the_list)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    scatter(a, NULL);
    scatter(b, NULL);
    take_and_undo(a, b, SHMALLOC_ALIGNMENT, 8152 - 16); /* the 16 bytes left stay with the block */
}

Test(tlsf_take, undo_of_an_aligned_take_from_a_listed_block_restores_the_list)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    scatter(a, NULL);
    scatter(b, NULL);
    take_and_undo(a, b, 1024, 2000);
}

Test(tlsf_take, commit_gives_the_block_memalign_gives)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    shmalloc_tlsf_pending op;
    size_t aligns[] = {1, 16, 64, 1024}, i;
    scatter(a, NULL);
    scatter(b, NULL);
    for (i = 0; i < 4; i++) {
        void *q = shmalloc_tlsf_align(b, aligns[i], 700);
        cr_assert_eq(shmalloc_tlsf_take(a, aligns[i], 700, &op), SHMALLOC_TLSF_OK);
        cr_assert_eq(shmalloc_tlsf_commit(a, &op), op.ptr);
        cr_assert_eq(shmalloc_tlsf_offset(a, op.ptr), shmalloc_tlsf_offset(b, q));
        cr_assert_eq(shmalloc_tlsf_validate(a, op.ptr), SHMALLOC_TLSF_OK);
        cr_assert_eq(shmalloc_tlsf_alignment(a, op.ptr), aligns[i] < 16 ? 16 : aligns[i]);
    }
    assert_twins(a, b, "committed takes");
    assert_same_future(a, b);
}

Test(tlsf_take, a_failed_take_changes_nothing_and_says_why)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    shmalloc_tlsf_pending op;
    scatter(a, NULL);
    scatter(b, NULL);
    cr_assert_eq(shmalloc_tlsf_take(a, SHMALLOC_ALIGNMENT, 2 * CAP, &op), SHMALLOC_TLSF_NO_ROOM);
    cr_assert_null(op.ptr);
    cr_assert_eq(shmalloc_tlsf_take(a, 48, 100, &op), SHMALLOC_TLSF_BAD_ALIGN);
    cr_assert_eq(shmalloc_tlsf_take(a, 0, 100, &op), SHMALLOC_TLSF_BAD_ALIGN);
    cr_assert_eq(shmalloc_tlsf_take(a, 16, SHMALLOC_TLSF_MAX_REQUEST + 1, &op), SHMALLOC_TLSF_BAD_SIZE);
    cr_assert_eq(shmalloc_tlsf_request_status(SHMALLOC_TLSF_MAX_REQUEST * 2, 1), SHMALLOC_TLSF_BAD_ALIGN);
    cr_assert_eq(shmalloc_tlsf_request_status(64, SHMALLOC_TLSF_MAX_REQUEST), SHMALLOC_TLSF_OK);
    assert_twins(a, b, "failed takes");
    assert_same_future(a, b);
}

/* A fresh heap whose blocks start 16 bytes past a boundary of every
   alignment tried (the largest gap) serves each request in a block of
   shmalloc_tlsf_block_need bytes. */
Test(tlsf_take, block_need_always_serves_the_request)
{
    size_t aligns[] = {16, 256, 4096}, sizes[] = {1, 100, 5000}, i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            size_t need = shmalloc_tlsf_block_need(sizes[j], aligns[i]);
            size_t bytes = need + shmalloc_tlsf_overhead(need);
            shmalloc_tlsf *t = shmalloc_tlsf_create(map_aligned(bytes, 0x10000), bytes);
            cr_assert(t != NULL);
            cr_assert_eq(shmalloc_tlsf_grow_status(t, 0), SHMALLOC_TLSF_NO_ROOM, "a heap with no reservation");
            cr_assert(shmalloc_tlsf_align(t, aligns[i], sizes[j]) != NULL, "size %zu at %zu in a block of %zu",
                      sizes[j], aligns[i], need);
            assert_tlsf_ok(t);
        }
}

/* ---- resizes --------------------------------------------------------------- */

/* used x of x_block bytes, then free n of n_block bytes (listed, after a
   lower free block of the same size when `behind`), then a used guard. */
static void *before_free(shmalloc_tlsf *t, size_t x_block, size_t n_block, int behind)
{
    void *low = block_of(t, n_block), *x;
    block_of(t, 64);
    x = block_of(t, x_block);
    void *n = block_of(t, n_block);
    block_of(t, 64);
    if (behind) cr_assert_eq(shmalloc_tlsf_free(t, low), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, n), SHMALLOC_TLSF_OK);
    return x;
}

/* A resize on a that must be made early, then undone: a must be b again. */
static void early_grow_and_undo(shmalloc_tlsf *a, shmalloc_tlsf *b, void *x, size_t size)
{
    shmalloc_tlsf_pending op;
    cr_assert_eq(shmalloc_tlsf_resize(a, x, size, &op), SHMALLOC_TLSF_OK);
    cr_assert_eq(op.ptr, x, "an undoable grow is made at once");
    cr_assert_eq(op.commit_grows, 0);
    cr_assert(shmalloc_tlsf_usable_size(a, x) >= size);
    memset(x, 0x3c, size);
    shmalloc_tlsf_undo(a, &op);
    assert_twins(a, b, "grow undone");
    assert_same_future(a, b);
}

Test(tlsf_resize, a_grow_into_the_top_is_made_early_and_undone_exactly)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    void *x = block_of(a, 1008);
    block_of(b, 1008);
    early_grow_and_undo(a, b, x, 5000);
}

Test(tlsf_resize, a_grow_whose_rest_stays_in_its_list_is_made_early_and_undone_exactly)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    void *x = before_free(a, 1008, 8160, 1);
    before_free(b, 1008, 8160, 1);
    early_grow_and_undo(a, b, x, 1008 + 64 - 8); /* 8160 - 64 stays in the list, behind its head */
}

Test(tlsf_resize, a_grow_into_a_list_head_is_made_early_and_the_rest_heads_it_again_after_undo)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    void *x = before_free(a, 1008, 8160, 0);
    before_free(b, 1008, 8160, 0);
    early_grow_and_undo(a, b, x, 1008 + 4096 - 8); /* the rest changes list */
}

Test(tlsf_resize, a_grow_into_a_head_above_a_lower_block_leaves_it_the_head_after_undo)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    void *x, *y;
    head_above_low(a, &x);
    head_above_low(b, &y);
    early_grow_and_undo(a, b, x, 1008 + 4096 - 8); /* the rest changes list */
}

Test(tlsf_resize, a_grow_that_cannot_be_undone_waits_for_the_commit)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    shmalloc_tlsf_pending op;
    void *x = before_free(a, 1008, 8160, 1), *y = before_free(b, 1008, 8160, 1), *q;
    size_t sizes[] = {1008 + 32 - 8, 1040 + 4064 - 8}, i; /* one minimum block; behind the head, into another list */
    for (i = 0; i < 2; i++) {
        cr_assert_eq(shmalloc_tlsf_resize(a, x, sizes[i], &op), SHMALLOC_TLSF_OK);
        cr_assert_null(op.ptr, "nothing is made before the commit");
        cr_assert_eq(op.commit_grows, 1);
        shmalloc_tlsf_undo(a, &op); /* changes nothing */
        assert_twins(a, b, "nothing made");
        memset(x, 0x11, 1000);
        q = shmalloc_tlsf_commit(a, &op);
        cr_assert_eq(q, x);
        cr_assert_eq(((unsigned char *)q)[999], 0x11);
        y = shmalloc_tlsf_realloc(b, y, sizes[i]);
        assert_twins(a, b, "committed like realloc");
    }
    assert_same_future(a, b);
}

Test(tlsf_resize, a_shrink_is_made_at_the_commit_and_adds_no_bytes)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    shmalloc_tlsf_pending op;
    void *keep_a, *keep_b;
    scatter(a, &keep_a);
    scatter(b, &keep_b);
    cr_assert_eq(shmalloc_tlsf_resize(a, keep_a, 1000, &op), SHMALLOC_TLSF_OK);
    cr_assert_null(op.ptr);
    cr_assert_eq(op.commit_grows, 0);
    shmalloc_tlsf_undo(a, &op);
    assert_twins(a, b, "a shrink undone before its commit");
    cr_assert_eq(shmalloc_tlsf_commit(a, &op), keep_a);
    shmalloc_tlsf_realloc(b, keep_b, 1000);
    assert_twins(a, b, "a shrink committed");
    assert_same_future(a, b);
}

Test(tlsf_resize, a_move_keeps_the_contents_and_the_alignment)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    shmalloc_tlsf_pending op;
    unsigned char *x = shmalloc_tlsf_align(a, 512, 300), *y = shmalloc_tlsf_align(b, 512, 300), *q;
    size_t i;
    block_of(a, 1024); /* after x: the gap before x is smaller */
    block_of(b, 1024);
    for (i = 0; i < 300; i++) x[i] = (unsigned char)i;
    cr_assert_eq(shmalloc_tlsf_resize(a, x, 20000, &op), SHMALLOC_TLSF_OK);
    cr_assert(op.ptr == NULL && op.commit_grows == 1);
    q = shmalloc_tlsf_commit(a, &op);
    cr_assert(q != x && (uintptr_t)q % 512 == 0);
    cr_assert_eq(shmalloc_tlsf_alignment(a, q), 512);
    for (i = 0; i < 300; i++) cr_assert_eq(q[i], (unsigned char)i);
    cr_assert_neq(shmalloc_tlsf_validate(a, x), SHMALLOC_TLSF_OK, "the old block is free");
    cr_assert_eq(shmalloc_tlsf_offset(a, q), shmalloc_tlsf_offset(b, shmalloc_tlsf_realloc(b, y, 20000)));
    assert_twins(a, b, "a move");
    assert_same_future(a, b);
}

Test(tlsf_resize, a_failed_resize_changes_nothing_and_says_why)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    shmalloc_tlsf_pending op;
    void *keep, *other;
    char on_stack[32];
    scatter(a, &keep);
    scatter(b, &other);
    cr_assert_eq(shmalloc_tlsf_resize(a, keep, 2 * CAP, &op), SHMALLOC_TLSF_NO_ROOM);
    cr_assert_null(op.ptr);
    cr_assert_eq(shmalloc_tlsf_resize(a, keep, SHMALLOC_TLSF_MAX_REQUEST + 1, &op), SHMALLOC_TLSF_BAD_SIZE);
    cr_assert_eq(shmalloc_tlsf_resize(a, (char *)keep + 16, 100, &op), SHMALLOC_TLSF_NOT_A_BLOCK);
    cr_assert_eq(shmalloc_tlsf_resize(a, on_stack, 100, &op), SHMALLOC_TLSF_NOT_IN_HEAP);
    cr_assert_eq(shmalloc_tlsf_free(a, keep), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(b, other), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_resize(a, keep, 100, &op), SHMALLOC_TLSF_ALREADY_FREE);
    cr_assert_eq(shmalloc_tlsf_alignment(a, keep), 0);
    assert_twins(a, b, "failed resizes");
    assert_same_future(a, b);
}

/* ---- queries ---------------------------------------------------------------- */

Test(tlsf_query, size_offset_room_and_sbreak_status_describe_the_heap)
{
    shmalloc_tlsf *t = heap_with_capacity(CAP, NULL);
    shmalloc_counters c;
    char *p = shmalloc_tlsf_malloc(t, 100);
    cr_assert_eq(shmalloc_tlsf_offset(t, p), 16, "the first block's user pointer");
    cr_assert_eq(shmalloc_tlsf_offset(t, (char *)shmalloc_tlsf_base(t) + 12345), 12345);
    shmalloc_tlsf_counters(t, &c);
    cr_assert_eq(shmalloc_tlsf_size(t), c.capacity + 16, "blocks and sentinel, no spec area");
    cr_assert(c.largest_request > 0 && c.largest_request + 8 <= c.largest_free);
    cr_assert(shmalloc_tlsf_malloc(t, c.largest_request + 1) == NULL);
    cr_assert_eq(shmalloc_tlsf_sbreak_status(t, PTRDIFF_MAX), SHMALLOC_TLSF_BAD_SIZE);
    cr_assert_eq(shmalloc_tlsf_sbreak_status(t, (ptrdiff_t)CAP * 2), SHMALLOC_TLSF_NO_ROOM);
    cr_assert_eq(shmalloc_tlsf_sbreak_status(t, -16), SHMALLOC_TLSF_NO_ROOM, "nothing to give back");
    cr_assert_eq(shmalloc_tlsf_sbreak_status(t, 4096), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_sbreak(t, 4096) != NULL);
    cr_assert_eq(shmalloc_tlsf_size(t), c.capacity + 16, "the spec area is inside the size");
    cr_assert(shmalloc_tlsf_malloc(t, c.largest_request) == NULL, "the break took from the top");
    cr_assert(shmalloc_tlsf_malloc(t, c.largest_request - 4096) != NULL);
    assert_tlsf_ok(t);
}

/* ---- a random walk ---------------------------------------------------------- */

/* Plain calls on both heaps; now and then a take or a resize on one of
   them, undone.  After each undo the heaps must be the same. */
Test(tlsf_random, random_takes_and_resizes_undone_leave_the_heaps_the_same)
{
    shmalloc_tlsf *a = heap_with_capacity(CAP, NULL), *b = heap_with_capacity(CAP, NULL);
    void *pa[128] = {0}, *pb[128] = {0};
    unsigned seed = 12345;
    int i;
    for (i = 0; i < 3000; i++) {
        int k = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 128;
        size_t size = ((seed >> 4) % 5 == 0) ? (seed >> 8) % 20000 + 1 : (seed >> 8) % 600 + 1;
        size_t align = (seed >> 3) % 4 == 0 ? (size_t)32 << ((seed >> 12) % 6) : SHMALLOC_ALIGNMENT;
        shmalloc_tlsf_pending op;
        if ((seed >> 20) % 3 == 0) { /* tentative, undone */
            int st = pa[k] ? shmalloc_tlsf_resize(a, pa[k], size, &op) : shmalloc_tlsf_take(a, align, size, &op);
            if (st == SHMALLOC_TLSF_OK) shmalloc_tlsf_undo(a, &op);
            else cr_assert_eq(st, SHMALLOC_TLSF_NO_ROOM, "call %d: status %d", i, st);
            assert_twins(a, b, "a random undo");
        } else if (pa[k]) {
            cr_assert_eq(shmalloc_tlsf_free(a, pa[k]), SHMALLOC_TLSF_OK);
            cr_assert_eq(shmalloc_tlsf_free(b, pb[k]), SHMALLOC_TLSF_OK);
            pa[k] = pb[k] = NULL;
        } else {
            pa[k] = shmalloc_tlsf_align(a, align, size);
            pb[k] = shmalloc_tlsf_align(b, align, size);
            cr_assert((pa[k] == NULL) == (pb[k] == NULL));
        }
    }
    assert_tlsf_ok(a);
    assert_twins(a, b, "the end");
    assert_same_future(a, b);
}
