/* The TLSF core's plain calls (shmalloc_tlsf_*): block sizes and costs,
   usable size, calloc, and reuse of freed space.  One behaviour per test;
   every test that changes a heap ends with the checker passing. */
#include "test_support.h"

Test(tlsf_size, block_costs_at_most_rounded_size_plus_header_and_at_least_32)
{
    for (size_t s = 1; s <= 2100; s += (s < 200 ? 1 : 37)) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        void *p = shmalloc_tlsf_malloc(t, s);
        cr_assert(p != NULL);
        shmalloc_counters c = counters(t);
        size_t bound = round16(s) + SHMALLOC_HEADER;
        if (bound < 32)
            bound = 32;
        cr_assert(c.in_use <= bound, "malloc(%zu): in_use %zu > %zu", s, c.in_use, bound);
        cr_assert(c.in_use >= s, "malloc(%zu): in_use %zu < request", s, c.in_use);
        cr_assert(shmalloc_tlsf_usable_size(t, p) >= s);
        assert_tlsf_ok(t);
    }
}

/* Trap: the size of the bin where a block was found written back as the
   request size (malloc(64) consumed 252 MiB of a 256 MiB heap). */
Test(tlsf_size, malloc_64_on_fresh_256MiB_heap_consumes_at_most_64_plus_header)
{
    shmalloc_tlsf *t = heap_with_capacity(256 * MIB, NULL);
    shmalloc_counters before = counters(t);
    void *p = shmalloc_tlsf_malloc(t, 64);
    cr_assert(p != NULL);
    shmalloc_counters c = counters(t);
    cr_assert(c.in_use <= 64 + SHMALLOC_HEADER, "in_use = %zu", c.in_use);
    cr_assert(c.largest_free >= before.largest_free - (64 + SHMALLOC_HEADER),
              "largest_free %zu -> %zu", before.largest_free, c.largest_free);
    cr_assert_eq(c.used_blocks, 1);
    assert_tlsf_ok(t);
}

Test(tlsf_size, usable_size_is_at_least_the_request_and_whole_usable_area_is_writable)
{
    shmalloc_tlsf *t = heap_with_capacity(16 * MIB, NULL);
    rng_seed(7);
    for (int i = 0; i < 2000; i++) {
        size_t s = rng_size(14);
        unsigned char *p = shmalloc_tlsf_malloc(t, s);
        cr_assert(p != NULL);
        size_t u = shmalloc_tlsf_usable_size(t, p);
        cr_assert(u >= s, "usable_size %zu < request %zu", u, s);
        cr_assert(u <= round16(s) + 2 * SHMALLOC_ALIGNMENT + 32, "usable_size %zu for %zu", u, s);
        memset(p, 0x5a, u);
    }
    assert_tlsf_ok(t);
}

Test(tlsf_size, usable_size_is_0_for_null_outside_interior_and_freed_pointers)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *p = shmalloc_tlsf_malloc(t, 100);
    char *q = shmalloc_tlsf_malloc(t, 100);
    int on_stack;
    cr_assert_eq(shmalloc_tlsf_usable_size(t, NULL), 0);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, &on_stack), 0);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, p + 16), 0);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, p + 1), 0);
    cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, p), 0);
    cr_assert(shmalloc_tlsf_usable_size(t, q) >= 100);
    assert_tlsf_ok(t);
}

/* The header leaves the core's malloc(0) unspecified: it must not crash and
   must return NULL or a real, freeable block. */
Test(tlsf_size, malloc_0_returns_null_or_a_valid_freeable_block)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p = shmalloc_tlsf_malloc(t, 0);
    if (p) {
        cr_assert(((uintptr_t)p & 15) == 0);
        cr_assert_eq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
        cr_assert(counters(t).in_use <= 32);
        cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    } else {
        cr_assert_eq(counters(t).used_blocks, 0);
    }
    assert_tlsf_ok(t);
}

/* ---- calloc --------------------------------------------------------------- */

Test(tlsf_calloc, zeroes_every_requested_byte_of_a_block_that_held_other_bytes)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *p = shmalloc_tlsf_malloc(t, 4096);
    cr_assert(p);
    memset(p, 0xa5, 4096);
    cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    unsigned char *q = shmalloc_tlsf_calloc(t, 64, 64);
    cr_assert(q == p, "calloc(64, 64) did not reuse the freed 4096-byte block");
    for (size_t i = 0; i < 4096; i++)
        cr_assert_eq(q[i], 0, "byte %zu of calloc(64, 64) is %#x", i, q[i]);
    unsigned char *r = shmalloc_tlsf_calloc(t, 3, 5);
    cr_assert(r && ((uintptr_t)r & 15) == 0);
    cr_assert(shmalloc_tlsf_usable_size(t, r) >= 15);
    for (size_t i = 0; i < 15; i++)
        cr_assert_eq(r[i], 0);
    cr_assert_eq(counters(t).used_blocks, 2);
    assert_tlsf_ok(t);
}

Test(tlsf_calloc, overflowing_or_huge_products_return_null_and_leave_heap_unchanged)
{
    static const size_t pairs[][2] = {{SIZE_MAX / 2 + 1, 2},
                                      {2, SIZE_MAX / 2 + 1},
                                      {(size_t)1 << 32, (size_t)1 << 32},
                                      {SIZE_MAX, SIZE_MAX},
                                      {(size_t)1 << 20, (size_t)1 << 20}}; /* no overflow, 1 TiB */
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *keep = shmalloc_tlsf_malloc(t, 100);
    cr_assert(keep);
    snapshot *before = take_snapshot(t);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        cr_assert_null(shmalloc_tlsf_calloc(t, pairs[i][0], pairs[i][1]), "calloc(%zu, %zu) succeeded",
                       pairs[i][0], pairs[i][1]);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "overflowing calloc");
    cr_assert_eq(shmalloc_tlsf_validate(t, keep), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
}

Test(tlsf_calloc, a_zero_count_or_size_behaves_as_malloc_0)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *m = shmalloc_tlsf_malloc(t, 0);
    cr_assert_eq(shmalloc_tlsf_calloc(t, 0, 8) != NULL, m != NULL);
    cr_assert_eq(shmalloc_tlsf_calloc(t, 8, 0) != NULL, m != NULL);
    cr_assert_eq(counters(t).used_blocks, m ? 3u : 0u);
    assert_tlsf_ok(t);
}

/* ---- free-then-malloc (trap: a block keeping its unrounded size) -------- */

Test(tlsf_reuse, after_filling_the_heap_free_one_then_malloc_same_size_reuses_the_hole)
{
    static const size_t sizes[] = {1,    15,   16,   17,   31,    33,    48,    100,
                                   127,  200,  500,  1000, 1023,  1025,  4000,  4095,
                                   5000, 8191, 9999, 33333, 65537, 100000};
    static void *ptrs[40000];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        size_t n = fill_heap(t, sizes[i], ptrs, 40000);
        cr_assert(n >= 3, "size %zu: only %zu blocks fit", sizes[i], n);
        for (size_t k = 0; k < 3; k++) {
            size_t j = n / 2 - 1 + k;
            cr_assert_eq(shmalloc_tlsf_free(t, ptrs[j]), SHMALLOC_TLSF_OK);
            void *p = shmalloc_tlsf_malloc(t, sizes[i]);
            cr_assert(p != NULL, "size %zu: malloc after free of an equal block failed", sizes[i]);
            cr_assert_eq(p, ptrs[j], "size %zu: hole not reused", sizes[i]);
        }
        assert_tlsf_ok(t);
    }
}

Test(tlsf_reuse, fill_uses_nearly_all_capacity)
{
    static const size_t sizes[] = {1, 100, 1000, 4000, 33333};
    static void *ptrs[40000];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        fill_heap(t, sizes[i], ptrs, 40000);
        shmalloc_counters c = counters(t);
        size_t cost = round16(sizes[i]) + SHMALLOC_HEADER;
        if (cost < 32)
            cost = 32;
        cr_assert(c.largest_free < cost, "size %zu: malloc failed with a %zu-byte free block",
                  sizes[i], c.largest_free);
        assert_tlsf_ok(t);
    }
}

Test(tlsf_reuse, of_two_free_blocks_in_one_list_the_lower_is_taken_first_in_either_free_order)
{
    for (int order = 0; order < 2; order++) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        void *lo = shmalloc_tlsf_malloc(t, 1000), *g1 = shmalloc_tlsf_malloc(t, 100);
        void *hi = shmalloc_tlsf_malloc(t, 1000), *g2 = shmalloc_tlsf_malloc(t, 100);
        cr_assert(lo && g1 && hi && g2);
        cr_assert_eq(shmalloc_tlsf_free(t, order ? hi : lo), SHMALLOC_TLSF_OK);
        cr_assert_eq(shmalloc_tlsf_free(t, order ? lo : hi), SHMALLOC_TLSF_OK);
        cr_assert_eq(shmalloc_tlsf_malloc(t, 1000), lo, "free order %d: the higher block came first", order);
        cr_assert_eq(shmalloc_tlsf_malloc(t, 1000), hi);
        assert_tlsf_ok(t);
    }
}

/* A free block in the request's own list (blocks of 2048..2111 bytes
   share one) is taken whole: its 48-byte tail stays the block's slack, as
   a free block it would cost a header write and seldom serve a request. */
Test(tlsf_reuse, a_block_of_the_requests_own_list_is_taken_whole)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *x = shmalloc_tlsf_malloc(t, 2096 - SHMALLOC_HEADER), *guard = shmalloc_tlsf_malloc(t, 100);
    cr_assert(x && guard);
    shmalloc_counters c0 = counters(t);
    size_t u0 = shmalloc_tlsf_usable_size(t, x);
    cr_assert_eq(shmalloc_tlsf_free(t, x), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_malloc(t, 2048 - SHMALLOC_HEADER), x);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, x), u0);
    shmalloc_counters c = counters(t);
    cr_assert_eq(c.in_use, c0.in_use, "in_use %zu, before the free %zu: a tail was split off", c.in_use, c0.in_use);
    assert_tlsf_ok(t);
}

Test(tlsf_free, free_of_a_block_restores_counters)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    shmalloc_counters c0 = counters(t);
    void *b = shmalloc_tlsf_malloc(t, 3000);
    cr_assert(a && b);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    shmalloc_counters c1 = counters(t);
    cr_assert_eq(c1.in_use, c0.in_use);
    cr_assert_eq(c1.largest_free, c0.largest_free);
    cr_assert_eq(c1.used_blocks, c0.used_blocks);
    assert_tlsf_ok(t);
}

/* A runtime that calls the core directly reports a refused pointer in
   the words malloc_error would have, but of a heap, not a symmetric one:
   the core's heap may be local. */
Test(tlsf_strerror, each_refused_free_is_described_by_its_reason)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *p = shmalloc_tlsf_malloc(t, 100);
    char *q = shmalloc_tlsf_malloc(t, 100);
    int on_stack;
    cr_assert_eq(shmalloc_tlsf_free(t, q), SHMALLOC_TLSF_OK);
    const struct { void *ptr; int status; const char *words; } cases[] = {
        {&on_stack, SHMALLOC_TLSF_NOT_IN_HEAP, "pointer is not in the heap"},
        {q, SHMALLOC_TLSF_ALREADY_FREE, "already free"},
        {p + 16, SHMALLOC_TLSF_NOT_A_BLOCK, "not the start of a block"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int status = shmalloc_tlsf_free(t, cases[i].ptr);
        cr_assert_eq(status, cases[i].status, "case %zu: status %d", i, status);
        cr_assert(strstr(shmalloc_tlsf_strerror(status), cases[i].words), "case %zu: \"%s\"", i,
                  shmalloc_tlsf_strerror(status));
    }
    for (int status = SHMALLOC_TLSF_OK; status <= SHMALLOC_TLSF_CORRUPT; status++)
        cr_assert_null(strstr(shmalloc_tlsf_strerror(status), "symmetric"), "status %d: \"%s\"", status,
                       shmalloc_tlsf_strerror(status));
    cr_assert(strstr(shmalloc_tlsf_strerror(SHMALLOC_TLSF_OK), "no error"));
    cr_assert(strstr(shmalloc_tlsf_strerror(SHMALLOC_TLSF_BAD_ALIGN), "power of two"));
    cr_assert(strstr(shmalloc_tlsf_strerror(SHMALLOC_TLSF_CORRUPT), "overwritten"));
    assert_tlsf_ok(t);
}
