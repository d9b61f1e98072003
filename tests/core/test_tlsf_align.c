/* Alignment in the TLSF core: every block is 16-byte aligned, and
   shmalloc_tlsf_align honours every power of two, refuses the rest and
   keeps neighbouring blocks intact. */
#include "test_support.h"

Test(tlsf_align, every_malloc_is_16_byte_aligned_for_sizes_1_to_4096_and_powers_to_1MiB)
{
    shmalloc_tlsf *t = heap_with_capacity(64 * MIB, NULL);
    for (size_t s = 1; s <= 4096; s++) {
        unsigned char *p = shmalloc_tlsf_malloc(t, s);
        cr_assert(p != NULL, "malloc(%zu) failed", s);
        cr_assert(((uintptr_t)p & 15) == 0, "malloc(%zu) = %p not 16-aligned", s, (void *)p);
        p[0] = 1;
        p[s - 1] = 2;
    }
    for (size_t s = 4096; s <= MIB; s *= 2) {
        for (size_t d = 0; d < 3; d++) {
            size_t n = s - 1 + d;
            unsigned char *p = shmalloc_tlsf_malloc(t, n);
            cr_assert(p != NULL, "malloc(%zu) failed", n);
            cr_assert(((uintptr_t)p & 15) == 0, "malloc(%zu) not 16-aligned", n);
            p[n - 1] = 3;
        }
    }
    assert_tlsf_ok(t);
}

Test(tlsf_align, first_block_user_pointer_is_16_bytes_after_region_base)
{
    void *mem;
    shmalloc_tlsf *t = heap_with_capacity(MIB, &mem);
    cr_assert_eq(shmalloc_tlsf_base(t), mem);
    char *p = shmalloc_tlsf_malloc(t, 100);
    cr_assert_eq(p, (char *)mem + 16, "first block at offset %zu", off_of(t, p));
    assert_tlsf_ok(t);
}

/* ---- memalign --------------------------------------------------------------- */

Test(tlsf_memalign, bad_alignments_0_3_24_and_2_pow_63_return_null)
{
    static const size_t bad[] = {0, 3, 24, 48, 100, 4095, 4097, (size_t)1 << 63,
                                 ((size_t)1 << 63) + 1, SIZE_MAX};
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    snapshot *before = take_snapshot(t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_null(shmalloc_tlsf_align(t, bad[i], 64), "memalign(%zu, 64) succeeded",
                       bad[i]);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "bad memalign");
    assert_tlsf_ok(t);
}

Test(tlsf_memalign, alignments_1_2_4_8_give_16_aligned_blocks)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    for (size_t a = 1; a < 16; a *= 2) {
        void *p = shmalloc_tlsf_align(t, a, 40);
        cr_assert(p != NULL, "memalign(%zu, 40) failed", a);
        cr_assert(((uintptr_t)p & 15) == 0);
    }
    assert_tlsf_ok(t);
}

Test(tlsf_memalign, every_power_of_two_16_to_1MiB_gives_aligned_usable_blocks)
{
    shmalloc_tlsf *t = heap_with_capacity(32 * MIB, NULL);
    uint32_t tag = 1;
    static void *ptrs[256];
    static size_t sizes[256];
    size_t n = 0;
    for (size_t a = 16; a <= MIB; a *= 2) {
        const size_t req[] = {1, 100, a, 3 * a + 5};
        for (size_t k = 0; k < 4; k++) {
            if (req[k] > 4 * MIB)
                continue;
            unsigned char *p = shmalloc_tlsf_align(t, a, req[k]);
            cr_assert(p != NULL, "memalign(%zu, %zu) failed", a, req[k]);
            cr_assert(((uintptr_t)p & (a - 1)) == 0, "memalign(%zu) gave %p", a, (void *)p);
            cr_assert(shmalloc_tlsf_usable_size(t, p) >= req[k]);
            cr_assert_eq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
            fill_pattern(p, req[k], tag + (uint32_t)n);
            ptrs[n] = p;
            sizes[n++] = req[k];
            cr_assert(shmalloc_tlsf_check(t, -1) == 0, "after memalign(%zu, %zu)", a, req[k]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        cr_assert(check_pattern(ptrs[i], sizes[i], tag + (uint32_t)i), "block %zu overwritten", i);
        cr_assert_eq(shmalloc_tlsf_free(t, ptrs[i]), SHMALLOC_TLSF_OK);
    }
    cr_assert_eq(counters(t).in_use, 0);
    assert_tlsf_ok(t);
}

Test(tlsf_memalign, alignment_of_half_the_heap_works_when_region_is_aligned_to_it)
{
    void *mem;
    shmalloc_tlsf *t = heap_with_capacity(8 * MIB, &mem);
    (void)mem;
    unsigned char *p = shmalloc_tlsf_align(t, 4 * MIB, MIB);
    cr_assert(p != NULL, "memalign(4 MiB, 1 MiB) on an 8 MiB heap failed");
    cr_assert(((uintptr_t)p & (4 * MIB - 1)) == 0);
    memset(p, 0x11, MIB);
    assert_tlsf_ok(t);
    cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
}

Test(tlsf_memalign, alignment_of_half_the_heap_works_when_region_is_only_1MiB_aligned)
{
    size_t cap = 8 * MIB;
    size_t bytes = cap + shmalloc_tlsf_overhead(cap);
    char *m = map_aligned(bytes + 8 * MIB, 8 * MIB);
    char *mem = m + MIB; /* 1 MiB aligned, not 2 MiB aligned */
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL);
    unsigned char *p = shmalloc_tlsf_align(t, 4 * MIB, MIB);
    cr_assert(p != NULL, "memalign(4 MiB, 1 MiB) on an 8 MiB heap at base%%4MiB=1MiB failed");
    cr_assert(((uintptr_t)p & (4 * MIB - 1)) == 0);
    memset(p, 0x22, MIB);
    assert_tlsf_ok(t);
}

Test(tlsf_memalign, aligned_blocks_between_small_ones_keep_neighbours_intact)
{
    shmalloc_tlsf *t = heap_with_capacity(4 * MIB, NULL);
    static unsigned char *small[64], *big[64];
    for (uint32_t i = 0; i < 64; i++) {
        small[i] = shmalloc_tlsf_malloc(t, 40 + i);
        cr_assert(small[i]);
        fill_pattern(small[i], 40 + i, i);
        size_t a = (size_t)64 << (i % 8);
        big[i] = shmalloc_tlsf_align(t, a, 24 + i);
        cr_assert(big[i]);
        cr_assert(((uintptr_t)big[i] & (a - 1)) == 0);
        fill_pattern(big[i], 24 + i, 1000 + i);
    }
    for (uint32_t i = 0; i < 64; i++) {
        cr_assert(check_pattern(small[i], 40 + i, i));
        cr_assert(check_pattern(big[i], 24 + i, 1000 + i));
    }
    assert_tlsf_ok(t);
}
