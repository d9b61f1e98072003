/* shmem_realloc and shrealloc on one PE: NULL and size 0, shrinking and
   growing with the contents kept, failing without a change, and keeping
   an aligned block's alignment. */
#include "test_support.h"

/* ---- shmem_realloc / shrealloc ------------------------------------------- */

Test(shmem_realloc, null_pointer_acts_as_malloc)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    malloc_error = -99;
    void *p = shmem_realloc(NULL, 100);
    cr_assert(p && ((uintptr_t)p & 15) == 0);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    void *q = shrealloc(NULL, 100);
    cr_assert(q && q != p);
    cr_assert_eq(heap_counters(h).used_blocks, 2);
    assert_heap_ok();
}

Test(shmem_realloc, size_0_frees_and_returns_null)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    void *p = shmem_malloc(100);
    cr_assert(p);
    cr_assert_null(shmem_realloc(p, 0));
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    void *q = shmem_malloc(100);
    cr_assert(q);
    cr_assert_null(shrealloc(q, 0));
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    assert_heap_ok();
}

Test(shmem_realloc, shrink_stays_in_place_and_keeps_contents)
{
    make_heap(MIB, NULL);
    unsigned char *p = shmem_malloc(4000);
    cr_assert(p && shmem_malloc(10));
    for (size_t i = 0; i < 4000; i++)
        p[i] = (unsigned char)i;
    unsigned char *q = shmem_realloc(p, 1000);
    cr_assert_eq(q, p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    for (size_t i = 0; i < 1000; i++)
        cr_assert(q[i] == (unsigned char)i);
    assert_heap_ok();
}

Test(shmem_realloc, grow_keeps_contents_in_place_or_moved)
{
    make_heap(MIB, NULL);
    unsigned char *p = shmem_malloc(1000);
    cr_assert(p);
    for (size_t i = 0; i < 1000; i++)
        p[i] = (unsigned char)(i * 3);
    unsigned char *q = shmem_realloc(p, 100000);
    cr_assert_eq(q, p, "growth into the free remainder moved the block");
    cr_assert(shmem_malloc(10));
    unsigned char *r = shrealloc(q, 200000);
    cr_assert(r && r != q);
    for (size_t i = 0; i < 1000; i++)
        cr_assert(r[i] == (unsigned char)(i * 3));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    assert_heap_ok();
}

Test(shmem_realloc, no_room_returns_null_keeps_block_and_sets_realloc_failed)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    unsigned char *p = shmem_malloc(100);
    cr_assert(p && shmem_malloc(100));
    memset(p, 0x42, 100);
    snapshot *a = heap_snapshot(h), *b;
    int before = syncs();
    malloc_error = SHMEM_MALLOC_OK;
    capture_start();
    cr_assert_null(shmem_realloc(p, 2 * MIB));
    capture_stop();
    cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED, "got %ld", malloc_error);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "realloc of 2097152 bytes"), "the call and its size: %s", out_text[2]);
    cr_assert_eq(syncs() - before, 1);
    b = heap_snapshot(h);
    assert_same_heap(a, b, "failed realloc");
    for (size_t i = 0; i < 100; i++)
        cr_assert(p[i] == 0x42);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_realloc(p, SIZE_MAX));
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    assert_heap_ok();
}

Test(shmem_realloc, aligned_block_keeps_alignment_when_moved)
{
    make_heap(4 * MIB, NULL);
    char *p = shmem_align(4096, 100);
    cr_assert(p);
    memset(p, 0x61, 100);
    cr_assert(shmem_malloc(16)); /* right after p: no room to grow in place */
    char *q = shmem_realloc(p, 100000);
    cr_assert(q);
    cr_assert(((uintptr_t)q & 4095) == 0, "alignment 4096 lost when realloc moved the block");
    for (int i = 0; i < 100; i++)
        cr_assert(q[i] == 0x61);
    assert_heap_ok();
}
