/* White-box corruption of the TLSF control block (its bitmaps and start
   map) and of a separate core's records: they are private, so this file
   expands the implementation itself to reach them.  Each corruption must
   be reported by shmalloc_check at level 0 with a message naming what is
   wrong, silently (nonzero) at level -1, without crashing or looping.
   Headers and free-list links are corrupted by tests/core/test_tlsf_checker.c through
   the public layout. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* the TSan test runner uses mkstemp, strsignal */
#endif
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"
#include "test_support.h"

static char region[1 << 20] __attribute__((aligned(4096)));

/* A heap with used and free blocks in several lists. */
static shmalloc_tlsf *busy_heap(void **a, void **b)
{
    shmalloc_tlsf *t = shmalloc_tlsf_create(region, sizeof region);
    void *c;
    cr_assert(t != NULL);
    *a = shmalloc_tlsf_malloc(t, 100);
    *b = shmalloc_tlsf_malloc(t, 3000);
    c = shmalloc_tlsf_malloc(t, 100);
    cr_assert(*a && *b && c);
    cr_assert(shmalloc_tlsf_free(t, *b) == SHMALLOC_TLSF_OK); /* a free block between used ones */
    assert_tlsf_ok(t);
    return t;
}

static void expect_reported(shmalloc_tlsf *t, const char *words)
{
    capture_start();
    cr_assert(shmalloc_tlsf_check(t, -1) != 0, "corruption not detected");
    cr_assert(out_len[0] + out_len[1] + out_len[2] == 0, "level -1 printed: %s", out_text[2]);
    cr_assert(shmalloc_tlsf_check(t, 0) != 0);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_FINDING), 1, "level 0 reports the first problem: %s", out_text[2]);
    cr_assert(strstr(out_text[2], words) != NULL, "expected \"%s\" in: %s", words, out_text[2]);
}

Test(corrupt, a_first_level_bitmap_bit_without_a_list_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    cr_assert(!(t->fl_bitmap >> 5 & 1) && t->sl_bitmap[5] == 0);
    t->fl_bitmap |= (uint64_t)1 << 5;
    expect_reported(t, "first-level bitmap bit 5");
}

Test(corrupt, a_cleared_second_level_bit_of_a_non_empty_list_is_reported)
{
    void *a, *b;
    unsigned fl, sl;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    shm__mapping_insert(shm__size(shm__of_user(b)), &fl, &sl);
    t->sl_bitmap[fl] &= ~(1u << sl);
    expect_reported(t, "bitmap");
}

Test(corrupt, a_second_level_bit_of_an_empty_list_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    t->sl_bitmap[1] |= 1u << 7;
    t->fl_bitmap |= 2;
    expect_reported(t, "list 1/7: bitmap says non-empty");
}

Test(corrupt, a_stray_start_map_bit_inside_a_free_block_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    size_t bit = shm__offset(t, shm__of_user(b)) / 16 + 5;
    t->start_map[bit / 64] |= (uint64_t)1 << (bit % 64);
    expect_reported(t, "start map marks");
}

Test(corrupt, a_used_block_missing_from_the_start_map_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    size_t bit = shm__offset(t, shm__of_user(a)) / 16;
    t->start_map[bit / 64] &= ~((uint64_t)1 << (bit % 64));
    expect_reported(t, "offset 16");
    cr_assert(shmalloc_tlsf_free(t, a) != SHMALLOC_TLSF_OK, "a block the map does not know is not freed");
}

Test(corrupt, a_list_sentinel_pointing_outside_the_heap_is_reported_without_following_it)
{
    void *a, *b;
    unsigned fl, sl;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    shm__mapping_insert(shm__size(shm__of_user(b)), &fl, &sl);
    t->lists[fl][sl].next_free = (shm__block *)(uintptr_t)0x10;
    expect_reported(t, "points outside the heap");
}

Test(corrupt, a_free_list_cycle_is_reported_and_the_checker_stops)
{
    void *a, *b;
    shm__block *f;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    f = shm__of_user(b);
    f->next_free = f; /* the list never returns to its sentinel */
    expect_reported(t, "wrong back link");
    capture_start();
    cr_assert(shmalloc_tlsf_check(t, 1) != 0); /* level 1 reports every problem */
    capture_stop();
    cr_assert(strstr(out_text[2], "cycle") != NULL, "%s", out_text[2]);
}

Test(corrupt, a_list_sentinel_with_a_size_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    t->lists[3][1].header = 4096;
    expect_reported(t, "sentinel node has a size");
}

/* malloc reads a free block's size as its header masked by 16 */
Test(corrupt, a_free_block_with_alignment_bits_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    shm__of_user(b)->header |= (size_t)6 << SHM__ALIGN_SHIFT;
    expect_reported(t, "carries alignment bits");
}

Test(corrupt, a_high_water_mark_below_a_used_block_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    t->high_water = (size_t)((char *)a - (char *)shmalloc_tlsf_base(t)) + shmalloc_tlsf_usable_size(t, a); /* a's end, below c */
    expect_reported(t, "above the high-water mark");
}

/* ---- the top: the last block, when free, is in no list ------------------- */

static int one_free_block(void *user, const shmalloc_block_info *b)
{
    size_t *n = (size_t *)user;
    n[b->used ? 1 : 0]++;
    return 0;
}

Test(top, malloc_and_free_of_one_size_leave_every_list_empty)
{
    shmalloc_tlsf *t = shmalloc_tlsf_create(region, sizeof region);
    size_t n[2] = {0, 0};
    int k;
    cr_assert(t != NULL);
    cr_assert(t->fl_bitmap == 0, "a fresh heap's one free block is listed");
    for (k = 0; k < 1000; k++) {
        void *p = shmalloc_tlsf_malloc(t, 64);
        cr_assert(p != NULL);
        cr_assert(t->fl_bitmap == 0, "the rest of the top went into a list");
        cr_assert(shmalloc_tlsf_free(t, p) == SHMALLOC_TLSF_OK);
        cr_assert(t->fl_bitmap == 0, "a block freed next to the top went into a list");
    }
    shmalloc_tlsf_walk(t, one_free_block, n);
    cr_assert(n[0] == 1 && n[1] == 0, "%zu free and %zu used blocks", n[0], n[1]);
    assert_tlsf_ok(t);
}

Test(top, the_gap_before_an_aligned_block_from_the_top_is_listed_and_merges_back)
{
    shmalloc_tlsf *t = shmalloc_tlsf_create(region, sizeof region);
    void *p;
    cr_assert(t != NULL);
    p = shmalloc_tlsf_align(t, 4096, 100);
    cr_assert(p != NULL && ((uintptr_t)p & 4095) == 0);
    cr_assert(t->fl_bitmap != 0, "the gap before the aligned block is in no list");
    assert_tlsf_ok(t);
    cr_assert(shmalloc_tlsf_free(t, p) == SHMALLOC_TLSF_OK);
    cr_assert(t->fl_bitmap == 0, "the gap stayed listed after its block merged into the top");
    assert_tlsf_ok(t);
}

Test(corrupt, a_listed_free_block_that_says_it_is_the_top_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    shm__of_user(b)->header |= SHM__TOP;
    expect_reported(t, "says it is the top");
}

Test(corrupt, a_top_without_its_flag_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    t->sentinel->prev_phys->header &= ~SHM__TOP;
    expect_reported(t, "is last, and not the top");
}

Test(corrupt, a_used_block_with_the_top_flag_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    shm__of_user(a)->header |= SHM__TOP;
    expect_reported(t, "is not a multiple of 16");
}

Test(corrupt, an_end_marker_without_its_end_bit_is_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_heap(&a, &b);
    t->sentinel->header &= ~SHM__END;
    expect_reported(t, "end-of-heap marker overwritten");
}

/* ---- the separate core's records: each fault reported at level 0, as
   the inline core's are ----------------------------------------------------- */
static shmalloc_tlsf *busy_separate(void **a, void **b)
{
    shmalloc_tlsf *t = shmalloc_tlsf_create_separate(region, sizeof region, sizeof region, NULL);
    cr_assert(t != NULL);
    *a = shmalloc_tlsf_malloc(t, 100);
    *b = shmalloc_tlsf_malloc(t, 3000);
    cr_assert(*a && *b && shmalloc_tlsf_malloc(t, 100));
    cr_assert(shmalloc_tlsf_free(t, *b) == SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    return t;
}

Test(corrupt_separate, a_free_block_out_of_its_list_and_a_used_one_out_of_the_map_are_reported)
{
    void *a, *b;
    shmalloc_tlsf *t = busy_separate(&a, &b);
    uint32_t fb = shm__r(t)[shm__r(t)[0].next].next, ua = shm__rec_find(t, shm__rec_offset(t, a));
    cr_assert(shm__r(t)[fb].size & SHM__FREE);
    shm__rec_remove(t, fb, shm__rec_fsize(&shm__r(t)[fb]));
    expect_reported(t, "free block at offset 112 is not in its list");
    shm__rec_push(t, fb, shm__rec_list(shm__rec_fsize(&shm__r(t)[fb])));
    assert_tlsf_ok(t);
    shm__rec_mark(t->records, ua);
    expect_reported(t, "used block at offset 0 is not marked used");
    shm__rec_mark(t->records, ua);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}
