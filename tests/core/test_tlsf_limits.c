/* The TLSF core at its limits: requests for the whole heap, absurd sizes,
   tiny regions, and heaps over 4 GiB. */
#include "test_support.h"

/* ---- whole-heap requests ------------------------------------------------ */

/* Trap: a request close to the size of the only free block fails because
   the search rounds the request up to the next class. */
Test(tlsf_whole, malloc_of_largest_free_minus_header_succeeds_on_fresh_heaps)
{
    static const size_t region[] = {16384, 20000, 65536, 100000, MIB, MIB + 16, MIB + 4096 + 48,
                                    3 * MIB + 12345, 64 * MIB, 100000007, 256 * MIB - 16};
    for (size_t i = 0; i < sizeof region / sizeof region[0]; i++) {
        void *mem = map_aligned(region[i], MIB);
        shmalloc_tlsf *t = shmalloc_tlsf_create(mem, region[i]);
        cr_assert(t != NULL, "create over %zu bytes failed", region[i]);
        shmalloc_counters c = counters(t);
        cr_assert_eq(c.largest_free, c.capacity, "fresh heap is not one free block");
        cr_assert(c.largest_free > SHMALLOC_HEADER);
        size_t want = c.largest_free - SHMALLOC_HEADER;
        void *p = shmalloc_tlsf_malloc(t, want);
        cr_assert(p != NULL, "region %zu: malloc(largest_free %zu - header) failed", region[i],
                  c.largest_free);
        cr_assert(shmalloc_tlsf_usable_size(t, p) >= want);
        assert_tlsf_ok(t);
        cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
        cr_assert_eq(counters(t).largest_free, c.largest_free);
        assert_tlsf_ok(t);
    }
}

Test(tlsf_whole, malloc_of_capacity_succeeds_on_region_of_capacity_plus_overhead)
{
    static const size_t caps[] = {17,      32,      100,     4096,     10000,
                                  65536,   100000,  MIB - 1, MIB,      MIB + 8,
                                  MIB + 16, 3 * MIB + 12345, 64 * MIB, 100000007, 512 * MIB};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        shmalloc_tlsf *t = heap_with_capacity(caps[i], NULL);
        void *p = shmalloc_tlsf_malloc(t, caps[i]);
        cr_assert(p != NULL, "malloc(%zu) on a heap made for it failed (overhead %zu)", caps[i],
                  shmalloc_tlsf_overhead(caps[i]));
        assert_tlsf_ok(t);
    }
}

Test(tlsf_whole, tiny_capacities_1_to_16_are_served_by_their_overhead)
{
    for (size_t cap = 1; cap <= 16; cap++) {
        size_t bytes = cap + shmalloc_tlsf_overhead(cap);
        void *mem = map_aligned(bytes, 4096);
        shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
        cr_assert(t != NULL, "create over %zu + overhead %zu bytes refused", cap,
                  shmalloc_tlsf_overhead(cap));
        cr_assert(shmalloc_tlsf_malloc(t, cap) != NULL);
        assert_tlsf_ok(t);
    }
}

/* The header documents that the last block's payload may reach 8 bytes
   past capacity (into the end marker's first word), and no further: the
   heap layer registers and contains exactly that much. */
Test(tlsf_whole, usable_bytes_of_the_last_block_end_at_most_8_bytes_past_capacity)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    shmalloc_counters c = counters(t);
    char *end = (char *)shmalloc_tlsf_base(t) + c.capacity + 8;
    int reached_end = 0;
    for (size_t back = 0; back < 64; back += 8) {
        size_t req = c.largest_free - SHMALLOC_HEADER + 8 - back;
        char *p = shmalloc_tlsf_malloc(t, req);
        if (!p)
            continue;
        size_t u = shmalloc_tlsf_usable_size(t, p);
        cr_assert(p + req <= end && p + u <= end,
                  "malloc(%zu) of a %zu-byte heap: request ends %td bytes and usable size %zu "
                  "ends %td bytes past base + capacity + 8",
                  req, c.capacity, (p + req) - end, u, (p + u) - end);
        reached_end |= p + u == end;
        memset(p, 0x3c, u);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0, "writing all usable bytes broke the heap");
        cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    }
    cr_assert(reached_end, "no request reached the end: test did not probe the limit");
    assert_tlsf_ok(t);
}

Test(tlsf_whole, fresh_heap_becomes_one_free_block_again_after_churn)
{
    shmalloc_tlsf *t = heap_with_capacity(4 * MIB, NULL);
    shmalloc_counters fresh = counters(t);
    static void *ptrs[4096];
    size_t n = 0;
    rng_seed(99);
    for (int i = 0; i < 3000; i++) {
        if (n < 4096 && (n == 0 || rng_below(3) != 0)) {
            void *p = shmalloc_tlsf_malloc(t, rng_size(12));
            if (p)
                ptrs[n++] = p;
        } else {
            size_t k = rng_below(n);
            cr_assert_eq(shmalloc_tlsf_free(t, ptrs[k]), SHMALLOC_TLSF_OK);
            ptrs[k] = ptrs[--n];
        }
    }
    while (n)
        cr_assert_eq(shmalloc_tlsf_free(t, ptrs[--n]), SHMALLOC_TLSF_OK);
    shmalloc_counters c = counters(t);
    cr_assert_eq(c.in_use, 0);
    cr_assert_eq(c.largest_free, fresh.largest_free, "free blocks did not coalesce");
    cr_assert(shmalloc_tlsf_malloc(t, c.largest_free - SHMALLOC_HEADER) != NULL);
    assert_tlsf_ok(t);
}

/* A region's old bytes (an earlier heap's, or anything) decide nothing:
   the lists' sentinel nodes read as empty, so every request is served from
   a real block. */
Test(tlsf_whole, a_heap_over_memory_full_of_old_bytes_serves_real_blocks)
{
    size_t bytes = 4 * MIB;
    void *mem = map_aligned(bytes, MIB), *p[4];
    shmalloc_tlsf *t;
    memset(mem, 0xff, bytes);
    t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL);
    p[0] = shmalloc_tlsf_malloc(t, 100);
    p[1] = shmalloc_tlsf_align(t, 4096, 3000);
    p[2] = shmalloc_tlsf_malloc(t, 70000);
    p[3] = shmalloc_tlsf_realloc(t, p[0], 5000);
    for (int i = 1; i < 4; i++) {
        cr_assert(p[i] != NULL, "request %d failed", i);
        cr_assert(off_of(t, p[i]) < counters(t).capacity, "request %d served outside the blocks", i);
        memset(p[i], 0x5a, shmalloc_tlsf_usable_size(t, p[i]));
    }
    assert_tlsf_ok(t);
    for (int i = 1; i < 4; i++) cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    cr_assert_eq(counters(t).used_blocks, 0);
}

/* ---- absurd sizes ---------------------------------------------------------- */

Test(tlsf_bad_size, malloc_of_huge_sizes_returns_null_and_leaves_heap_unchanged)
{
    static const size_t sizes[] = {SIZE_MAX,
                                   SIZE_MAX - 15,
                                   SIZE_MAX - 16,
                                   SIZE_MAX - 31,
                                   SIZE_MAX / 2,
                                   SIZE_MAX / 2 + 1,
                                   (size_t)1 << 46,
                                   ((size_t)1 << 46) - 16,
                                   ((size_t)1 << 46) + 1,
                                   ((size_t)1 << 47),
                                   ((size_t)1 << 63)};
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *keep = shmalloc_tlsf_malloc(t, 100);
    cr_assert(keep);
    snapshot *before = take_snapshot(t);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        cr_assert_null(shmalloc_tlsf_malloc(t, sizes[i]), "malloc(%zu) succeeded", sizes[i]);
        cr_assert_null(shmalloc_tlsf_align(t, 64, sizes[i]), "memalign(64, %zu)", sizes[i]);
        cr_assert_null(shmalloc_tlsf_realloc(t, keep, sizes[i]), "realloc(p, %zu)", sizes[i]);
        cr_assert_null(shmalloc_tlsf_realloc(t, NULL, sizes[i]), "realloc(NULL, %zu)", sizes[i]);
    }
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "huge requests");
    cr_assert_eq(shmalloc_tlsf_validate(t, keep), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
}

Test(tlsf_bad_size, create_over_a_tiny_region_returns_null)
{
    static unsigned char buf[64] __attribute__((aligned(16)));
    cr_assert_null(shmalloc_tlsf_create(buf, 0));
    cr_assert_null(shmalloc_tlsf_create(buf, 16));
    cr_assert_null(shmalloc_tlsf_create(buf, sizeof buf));
}

/* ---- large heaps (trap: largest class capped at 4 GiB) ------------------ */

Test(tlsf_large, heap_over_4GiB_serves_a_5GiB_block_and_small_ones, .timeout = 60)
{
    size_t bytes = 6 * GIB;
    unsigned char *mem = map_aligned(bytes, MIB);
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL, "create over 6 GiB failed");
    shmalloc_counters c0 = counters(t);
    cr_assert(c0.capacity > 5 * GIB && c0.largest_free > 5 * GIB, "capacity %zu", c0.capacity);
    unsigned char *big = shmalloc_tlsf_malloc(t, 5 * GIB);
    cr_assert(big != NULL, "malloc(5 GiB) failed");
    cr_assert(shmalloc_tlsf_usable_size(t, big) >= 5 * GIB);
    cr_assert(counters(t).in_use >= 5 * GIB, "in_use %zu", counters(t).in_use);
    void *small[16];
    for (int i = 0; i < 16; i++) {
        small[i] = shmalloc_tlsf_malloc(t, 100 + (size_t)i);
        cr_assert(small[i]);
        memset(small[i], 0x33, 100);
    }
    big[0] = 1;
    big[GIB] = 2;
    big[4 * GIB + 7] = 3;
    big[5 * GIB - 1] = 4;
    cr_assert(big[0] == 1 && big[GIB] == 2 && big[4 * GIB + 7] == 3 && big[5 * GIB - 1] == 4);
    assert_tlsf_ok(t);
    cr_assert_eq(shmalloc_tlsf_free(t, big), SHMALLOC_TLSF_OK);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(shmalloc_tlsf_free(t, small[i]), SHMALLOC_TLSF_OK);
    shmalloc_counters c1 = counters(t);
    cr_assert_eq(c1.in_use, 0);
    cr_assert_eq(c1.largest_free, c0.largest_free);
    assert_tlsf_ok(t);
}

Test(tlsf_large, whole_free_space_of_a_6GiB_heap_is_one_allocation, .timeout = 60)
{
    size_t bytes = 6 * GIB;
    void *mem = map_aligned(bytes, MIB);
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL);
    size_t lf = counters(t).largest_free;
    void *p = shmalloc_tlsf_malloc(t, lf - SHMALLOC_HEADER);
    cr_assert(p != NULL, "malloc(largest_free %zu - header) failed", lf);
    assert_tlsf_ok(t);
}
