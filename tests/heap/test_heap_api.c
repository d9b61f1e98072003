/* The SHMEM allocation names on one PE (shmem_malloc, shmalloc,
   shmem_free, shfree, shmem_calloc, shmem_align, shmemalign): the
   semantics table of DESIGN.md and malloc_error.  Bad pointers are in
   tests/heap/test_bad_pointer.c. */
#include "test_support.h"

/* ---- shmem_malloc / shmalloc ------------------------------------------ */

Test(shmem_malloc, returns_16_aligned_usable_blocks_and_sets_ok)
{
    make_heap(4 * MIB, NULL);
    for (size_t s = 1; s < 5000; s += 97) {
        malloc_error = -99;
        unsigned char *p = shmem_malloc(s);
        cr_assert(p != NULL);
        cr_assert(((uintptr_t)p & 15) == 0);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        memset(p, 0x77, s);
    }
    assert_heap_ok();
}

Test(shmem_malloc, shmalloc_is_the_same_as_shmem_malloc)
{
    make_heap(MIB, NULL);
    void *p = shmalloc(100);
    cr_assert(p && ((uintptr_t)p & 15) == 0);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    shfree(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(heap_counters(shmalloc_current()).used_blocks, 0);
    assert_heap_ok();
}

Test(shmem_malloc, size_0_returns_null_sets_ok_and_makes_no_barrier)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    snapshot *a = heap_snapshot(h), *b;
    int before = syncs();
    malloc_error = SHMEM_MALLOC_FAIL;
    cr_assert_null(shmem_malloc(0));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    malloc_error = SHMEM_MALLOC_FAIL;
    cr_assert_null(shmalloc(0));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(syncs(), before, "malloc(0) synchronised %d times", syncs() - before);
    b = heap_snapshot(h);
    assert_same_heap(a, b, "malloc(0)");
    assert_heap_ok();
}

Test(shmem_malloc, size_0_with_allreduce_makes_no_synchronisation)
{
    make_counting_heap(MIB, 1);
    int before = syncs();
    cr_assert_null(shmem_malloc(0));
    cr_assert_eq(syncs(), before);
    assert_heap_ok();
}

Test(shmem_malloc, too_large_returns_null_with_fail_or_bad_size)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    snapshot *a = heap_snapshot(h), *b;
    malloc_error = SHMEM_MALLOC_OK;
    capture_start();
    cr_assert_null(shmem_malloc(2 * MIB));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL, "malloc(2 MiB) on 1 MiB: %ld", malloc_error);
    static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 15, (size_t)1 << 63, (size_t)1 << 47};
    for (size_t i = 0; i < 4; i++) {
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmem_malloc(huge[i]));
        cr_assert(malloc_error == SHMEM_MALLOC_BAD_SIZE || malloc_error == SHMEM_MALLOC_FAIL,
                  "malloc(%zu): %ld", huge[i], malloc_error);
    }
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "one report for the heap:\n%s", out_text[2]);
    cr_assert(strstr(out_text[2], "malloc of 2097152 bytes"), "the call and its size: %s", out_text[2]);
    b = heap_snapshot(h);
    assert_same_heap(a, b, "failed mallocs");
    assert_heap_ok();
}

Test(shmem_malloc, success_after_failure_resets_malloc_error_to_ok)
{
    make_heap(MIB, NULL);
    capture_start();
    cr_assert_null(shmem_malloc(2 * MIB));
    capture_stop();
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "malloc of 2097152 bytes"), "the call and its size: %s", out_text[2]);
    cr_assert(shmem_malloc(10) != NULL);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    assert_heap_ok();
}

Test(shmem_malloc, with_hints_accepts_known_and_unknown_hints)
{
    make_heap(MIB, NULL);
    static const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                                 SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE,
                                 1L << 20, -1L};
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++) {
        malloc_error = -99;
        unsigned char *p = shmem_malloc_with_hints(100, hints[i]);
        cr_assert(p != NULL, "hints %ld refused", hints[i]);
        cr_assert(((uintptr_t)p & 15) == 0);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        memset(p, 1, 100);
    }
    malloc_error = -99;
    cr_assert_null(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    assert_heap_ok();
}

/* ---- shmem_free / shfree --------------------------------------------------- */

Test(shmem_free, free_null_does_nothing_and_makes_no_barrier)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *p = shmem_malloc(100);
    cr_assert(p);
    snapshot *a = heap_snapshot(h), *b;
    int before = syncs();
    malloc_error = SHMEM_MALLOC_FAIL;
    shmem_free(NULL);
    shfree(NULL);
    cr_assert_eq(syncs(), before, "free(NULL) synchronised");
    cr_assert(malloc_error == SHMEM_MALLOC_FAIL || malloc_error == SHMEM_MALLOC_OK,
              "free(NULL) set malloc_error to %ld", malloc_error);
    b = heap_snapshot(h);
    assert_same_heap(a, b, "free(NULL)");
    assert_heap_ok();
}

Test(shmem_free, free_releases_the_block_and_sets_ok)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    void *p = shmem_malloc(1000);
    cr_assert(p);
    malloc_error = -99;
    shmem_free(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(heap_counters(h).in_use, 0);
    cr_assert_eq(shmem_malloc(1000), p, "freed space not reused");
    assert_heap_ok();
}

/* ---- shmem_calloc -------------------------------------------------------- */

Test(shmem_calloc, count_times_size_overflow_returns_null_with_bad_size)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    snapshot *a = heap_snapshot(h), *b;
    static const size_t pairs[][2] = {{SIZE_MAX / 2, 3}, {3, SIZE_MAX / 2}, {SIZE_MAX, SIZE_MAX},
                                      {(size_t)1 << 32, (size_t)1 << 32}, {SIZE_MAX, 2}};
    for (size_t i = 0; i < 5; i++) {
        int before = syncs();
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmem_calloc(pairs[i][0], pairs[i][1]));
        cr_assert_eq(malloc_error, SHMEM_MALLOC_BAD_SIZE, "calloc(%zu, %zu): %ld", pairs[i][0],
                     pairs[i][1], malloc_error);
        cr_assert_eq(syncs() - before, 1, "calloc overflow: %d synchronisations",
                     syncs() - before);
    }
    b = heap_snapshot(h);
    assert_same_heap(a, b, "calloc overflow");
    assert_heap_ok();
}

Test(shmem_calloc, zeroes_memory_that_was_dirtied_before)
{
    make_heap(MIB, NULL);
    for (size_t s = 16; s <= 256 * KIB; s *= 4) {
        unsigned char *p = shmem_malloc(s);
        cr_assert(p);
        memset(p, 0xff, s);
        shmem_free(p);
        unsigned char *q = shmem_calloc(s / 8, 8);
        cr_assert_eq(q, p, "calloc did not reuse the dirtied block");
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        for (size_t i = 0; i < s; i++)
            cr_assert(q[i] == 0, "byte %zu of calloc(%zu) is %d", i, s, q[i]);
        shmem_free(q);
    }
    assert_heap_ok();
}

Test(shmem_calloc, zero_count_or_size_returns_null)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    snapshot *a = heap_snapshot(h), *b;
    cr_assert_null(shmem_calloc(0, 16));
    cr_assert_null(shmem_calloc(16, 0));
    cr_assert_null(shmem_calloc(0, 0));
    b = heap_snapshot(h);
    assert_same_heap(a, b, "calloc with a zero");
    assert_heap_ok();
}

/* ---- shmem_align / shmemalign -------------------------------------------- */

Test(shmem_align, bad_alignment_returns_null_with_memalign_failed)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    snapshot *a = heap_snapshot(h), *b;
    static const size_t bad[] = {0, 3, 24, 100, 4097};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = syncs();
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmem_align(bad[i], 64));
        cr_assert_eq(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED, "align(%zu): %ld", bad[i],
                     malloc_error);
        cr_assert_eq(syncs() - before, 1, "failing align made %d synchronisations",
                     syncs() - before);
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmemalign(bad[i], 64));
        cr_assert_eq(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED);
    }
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_align((size_t)1 << 63, 64));
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    b = heap_snapshot(h);
    assert_same_heap(a, b, "bad align");
    assert_heap_ok();
}

Test(shmem_align, every_power_of_two_16_to_1MiB_is_honoured)
{
    make_heap(16 * MIB, NULL);
    for (size_t a = 16; a <= MIB; a *= 2) {
        malloc_error = -99;
        unsigned char *p = shmem_align(a, 100);
        cr_assert(p != NULL, "align(%zu) failed", a);
        cr_assert(((uintptr_t)p & (a - 1)) == 0);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        memset(p, 2, 100);
        unsigned char *q = shmemalign(a, 3 * a);
        cr_assert(q && ((uintptr_t)q & (a - 1)) == 0);
        memset(q, 3, 3 * a);
    }
    assert_heap_ok();
}

Test(shmem_align, offsets_from_base_are_aligned_too)
{
    shmalloc_heap *h = make_heap(4 * MIB, NULL);
    char *base = shmalloc_heap_base(h);
    for (size_t a = 16; a <= 64 * KIB; a *= 2) {
        char *p = shmem_align(a, 10);
        cr_assert(p);
        cr_assert(((size_t)(p - base) & (a - 1)) == 0,
                  "offset %zu not aligned to %zu: alignment would differ on a PE with another base",
                  (size_t)(p - base), a);
    }
    assert_heap_ok();
}
