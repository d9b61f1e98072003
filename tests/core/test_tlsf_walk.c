/* The TLSF core's counters and heap walk: they agree with each other after
   random operations, the high-water mark only rises, and the walk visits
   every block in address order. */
#include "test_support.h"

/* ---- counters and walk ----------------------------------------------------- */

typedef struct walk_sum {
    size_t n, used, free_blocks, used_bytes, free_bytes, largest_free, total;
    size_t last_offset, next_expected;
    int bad_order, not_contiguous, misaligned;
} walk_sum;

static int sum_cb(void *user, const shmalloc_block_info *b)
{
    walk_sum *w = user;
    if (w->n && b->offset <= w->last_offset)
        w->bad_order = 1;
    if (w->n && b->offset != w->next_expected)
        w->not_contiguous = 1;
    if ((b->offset & 15) || (b->size & 15))
        w->misaligned = 1;
    w->n++;
    w->last_offset = b->offset;
    w->next_expected = b->offset + b->size;
    w->total += b->size;
    if (b->used) {
        w->used++;
        w->used_bytes += b->size;
    } else {
        w->free_blocks++;
        w->free_bytes += b->size;
        if (b->size > w->largest_free)
            w->largest_free = b->size;
    }
    return 0;
}

static walk_sum walk_summary(const shmalloc_tlsf *t)
{
    walk_sum w;
    memset(&w, 0, sizeof w);
    shmalloc_tlsf_walk(t, sum_cb, &w);
    return w;
}

static void random_churn(shmalloc_tlsf *t, void **ptrs, size_t *n, size_t max, int ops)
{
    for (int i = 0; i < ops; i++) {
        if (*n < max && (*n == 0 || rng_below(5) < 3)) {
            void *p = rng_below(4) ? shmalloc_tlsf_malloc(t, rng_size(13))
                                   : shmalloc_tlsf_align(t, (size_t)16 << rng_below(8),
                                                            rng_size(10));
            if (p)
                ptrs[(*n)++] = p;
        } else {
            size_t k = rng_below(*n);
            cr_assert_eq(shmalloc_tlsf_free(t, ptrs[k]), SHMALLOC_TLSF_OK);
            ptrs[k] = ptrs[--*n];
        }
    }
}

Test(tlsf_counters, fresh_heap_counters_are_one_free_block_of_capacity)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    shmalloc_counters c = counters(t);
    cr_assert(c.capacity >= MIB);
    cr_assert_eq(c.in_use, 0);
    cr_assert_eq(c.free, c.capacity);
    cr_assert_eq(c.largest_free, c.capacity);
    cr_assert_eq(c.used_blocks, 0);
    walk_sum w = walk_summary(t);
    cr_assert_eq(w.n, 1);
    cr_assert_eq(w.free_blocks, 1);
    cr_assert_eq(w.total, c.capacity);
}

Test(tlsf_counters, counters_agree_with_the_walk_after_random_operations)
{
    shmalloc_tlsf *t = heap_with_capacity(2 * MIB, NULL);
    static void *ptrs[2000];
    size_t n = 0;
    rng_seed(1234);
    for (int round = 0; round < 40; round++) {
        random_churn(t, ptrs, &n, 2000, 100);
        shmalloc_counters c = counters(t);
        walk_sum w = walk_summary(t);
        cr_assert_eq(c.in_use + c.free, c.capacity, "in_use + free != capacity");
        cr_assert_eq(c.used_blocks, n, "used_blocks %zu, live %zu", c.used_blocks, n);
        cr_assert_eq(w.used, n);
        cr_assert_eq(w.used_bytes, c.in_use, "walk used bytes %zu, in_use %zu", w.used_bytes,
                     c.in_use);
        cr_assert_eq(w.free_bytes, c.free);
        cr_assert_eq(w.largest_free, c.largest_free);
        cr_assert_eq(w.total, c.capacity);
        assert_tlsf_ok(t);
    }
}

Test(tlsf_counters, high_water_grows_with_allocation_and_never_shrinks_on_free)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    cr_assert_eq(counters(t).high_water, 0);
    void *a = shmalloc_tlsf_malloc(t, 1000);
    size_t h1 = counters(t).high_water;
    cr_assert(h1 >= 1000, "high_water %zu after malloc(1000)", h1);
    void *b = shmalloc_tlsf_malloc(t, 5000);
    size_t h2 = counters(t).high_water;
    cr_assert(h2 >= h1 + 5000);
    cr_assert(h2 <= counters(t).capacity);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).high_water, h2);
    assert_tlsf_ok(t);
}

Test(tlsf_counters, high_water_after_growing_in_place_is_the_end_of_the_grown_block)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *p = shmalloc_tlsf_malloc(t, 100);
    cr_assert(p);
    p = shmalloc_tlsf_realloc(t, p, 200);
    cr_assert(p);
    size_t end = off_of(t, p) + shmalloc_tlsf_usable_size(t, p);
    size_t hw = counters(t).high_water;
    cr_assert(hw >= end, "high_water %zu below the block's end %zu", hw, end);
    cr_assert(hw <= end + SHMALLOC_HEADER,
              "high_water %zu after realloc(p, 200) into the free tail: the block ends at %zu",
              hw, end);
    assert_tlsf_ok(t);
}

Test(tlsf_walk, walk_visits_blocks_in_address_order_contiguously_summing_to_capacity)
{
    shmalloc_tlsf *t = heap_with_capacity(2 * MIB, NULL);
    static void *ptrs[2000];
    size_t n = 0;
    rng_seed(42);
    for (int round = 0; round < 20; round++) {
        random_churn(t, ptrs, &n, 2000, 150);
        walk_sum w = walk_summary(t);
        cr_assert(!w.bad_order, "offsets not increasing");
        cr_assert(!w.not_contiguous, "a block does not start where the previous ends");
        cr_assert(!w.misaligned, "offset or size not a multiple of 16");
        cr_assert_eq(w.total, counters(t).capacity);
        assert_tlsf_ok(t);
    }
}

typedef struct find_ctx {
    size_t offset;
    int found_used;
    size_t n;
} find_ctx;

static int find_cb(void *user, const shmalloc_block_info *b)
{
    find_ctx *f = user;
    f->n++;
    if (b->offset == f->offset && b->used)
        f->found_used = 1;
    return 0;
}

Test(tlsf_walk, walk_reports_every_live_block_at_its_user_pointer_offset)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p[10];
    for (int i = 0; i < 10; i++)
        p[i] = shmalloc_tlsf_align(t, (size_t)16 << i, 50 + (size_t)i * 100);
    for (int i = 0; i < 10; i++) {
        find_ctx f = {off_of(t, p[i]), 0, 0};
        shmalloc_tlsf_walk(t, find_cb, &f);
        cr_assert(f.found_used, "block %d (offset %zu) not reported as used", i, f.offset);
    }
    assert_tlsf_ok(t);
}

static int stop_cb(void *user, const shmalloc_block_info *b)
{
    (void)b;
    ++*(int *)user;
    return 1;
}

Test(tlsf_walk, walk_stops_when_callback_returns_nonzero)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    for (int i = 0; i < 5; i++)
        cr_assert(shmalloc_tlsf_malloc(t, 100));
    int calls = 0;
    shmalloc_tlsf_walk(t, stop_cb, &calls);
    cr_assert_eq(calls, 1);
    assert_tlsf_ok(t);
}
