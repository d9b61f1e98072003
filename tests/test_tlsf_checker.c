/* The TLSF checker on corrupted headers and free-list links: each
   corruption is detected (silently at level -1, with a message at level 0)
   without a crash, and a consistent heap checks clean.  The control
   block's private bitmaps are corrupted by tests/test_corrupt.c. */
#include "test_support.h"

/* ---- corruption is detected, not crashed on -------------------------------- */

/* Three used blocks with the middle one's size word replaced; the checker
   must report it, silently at level -1 and with a message at level 0. */
static void corrupt_size_and_check(uint64_t (*mangle)(uint64_t))
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    memset(a, 0xa5, 200);
    memset(b, 0xa5, 200);
    memset(c, 0xa5, 200);
    assert_tlsf_ok(t);
    uint64_t word;
    memcpy(&word, b - 8, 8);
    uint64_t bad = mangle(word);
    cr_assert_neq(bad, word);
    memcpy(b - 8, &bad, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0, "size word %#llx -> %#llx not detected",
                  (unsigned long long)word, (unsigned long long)bad);
    capture_start();
    int r = shmalloc_tlsf_check(t, -1);
    cr_assert_neq(r, 0);
    cr_assert_eq(out_len[1] + out_len[2] + out_len[0], 0, "level -1 printed: %s", out_text[2]);
    r = shmalloc_tlsf_check(t, 0);
    capture_stop();
    cr_assert_neq(r, 0);
    cr_assert(out_len[2] > 0, "level 0 printed nothing to stream 2");
    char dec[32], hex[32];
    snprintf(dec, sizeof dec, "%zu", off_of(t, b));
    snprintf(hex, sizeof hex, "%zx", off_of(t, b));
    cr_assert(strstr(out_text[2], "size") || strstr(out_text[2], dec) || strstr(out_text[2], hex),
              "message names neither the size nor offset %s: %s", dec, out_text[2]);
}

static uint64_t mangle_huge(uint64_t w) { return (w & 15) | ((uint64_t)1 << 60); }
static uint64_t mangle_zero(uint64_t w) { (void)w; return 0; }
static uint64_t mangle_zero_keep_flags(uint64_t w) { return (w & 15) ? (w & 15) : 0xdeadbeef00000000u; }
static uint64_t mangle_misaligned(uint64_t w) { return w + 8; }
static uint64_t mangle_one_granule_short(uint64_t w) { return w - 16; }
static uint64_t mangle_past_end(uint64_t w) { return (w & 15) | ((uint64_t)MIB * 2); }
static uint64_t mangle_garbage(uint64_t w) { (void)w; return 0xa5a5a5a5a5a5a5a5u; }

Test(tlsf_corrupt, huge_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_huge);
}
Test(tlsf_corrupt, zero_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_zero);
}
Test(tlsf_corrupt, size_word_with_only_flags_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_zero_keep_flags);
}
Test(tlsf_corrupt, misaligned_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_misaligned);
}
Test(tlsf_corrupt, size_word_one_granule_short_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_one_granule_short);
}
Test(tlsf_corrupt, size_word_past_heap_end_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_past_end);
}
Test(tlsf_corrupt, garbage_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_garbage);
}

/* A free block between two used ones: overwrite the links it keeps at its
   user pointer (where a free block keeps its list links). */
static void corrupt_free_links_and_check(uint64_t v0, uint64_t v1)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    uint64_t old[2];
    memcpy(old, b, 16);
    cr_assert(old[0] != v0 || old[1] != v1);
    memcpy(b, &v0, 8);
    memcpy(b + 8, &v1, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0, "links %#llx %#llx -> %#llx %#llx not detected",
                  (unsigned long long)old[0], (unsigned long long)old[1],
                  (unsigned long long)v0, (unsigned long long)v1);
    capture_start();
    int r = shmalloc_tlsf_check(t, 0);
    capture_stop();
    cr_assert_neq(r, 0);
    cr_assert(out_len[2] > 0, "level 0 printed nothing to stream 2");
}

Test(tlsf_corrupt, free_list_links_of_garbage_are_detected)
{
    corrupt_free_links_and_check(0xa5a5a5a5a5a5a5a5u, 0xa5a5a5a5a5a5a5a5u);
}
Test(tlsf_corrupt, free_list_links_pointing_at_a_used_block_are_detected)
{
    /* Offsets 16 (block a) and 32 in either pointer or 16-byte-unit form. */
    corrupt_free_links_and_check(0x0000000100000001u, 0x0000000100000001u);
}
Test(tlsf_corrupt, free_list_links_of_all_ones_are_detected)
{
    corrupt_free_links_and_check(UINT64_MAX, UINT64_MAX);
}

/* The word before a block's header is its back link to a free previous
   block (the last word of that block's payload). */
Test(tlsf_corrupt, wrong_back_link_after_a_free_block_is_detected)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    uintptr_t wrong = (uintptr_t)(a - 16);
    memcpy(c - 16, &wrong, sizeof wrong);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0);
    capture_start();
    int r = shmalloc_tlsf_check(t, 0);
    capture_stop();
    cr_assert_neq(r, 0);
    cr_assert(out_len[2] > 0);
}

Test(tlsf_corrupt, free_flag_cleared_on_a_free_block_is_detected)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    uint64_t w;
    memcpy(&w, b - 8, 8);
    w &= ~(uint64_t)1;
    memcpy(b - 8, &w, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0);
}

Test(tlsf_corrupt, used_block_marked_free_is_detected_and_not_freed_again)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    uint64_t w;
    memcpy(&w, b - 8, 8);
    w |= 1;
    memcpy(b - 8, &w, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0);
}

Test(tlsf_corrupt, consistent_heap_check_prints_nothing_at_level_0)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    cr_assert(shmalloc_tlsf_malloc(t, 100));
    capture_start();
    int r = shmalloc_tlsf_check(t, 0);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1] + out_len[2], 0, "printed: %s%s", out_text[1], out_text[2]);
}

Test(tlsf_corrupt, check_level_1_prints_a_line_per_block_to_stream_2)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && shmalloc_tlsf_malloc(t, 200) && shmalloc_tlsf_malloc(t, 300));
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    size_t blocks = take_snapshot(t)->n; /* 4: free, used, used, free */
    capture_start();
    int r = shmalloc_tlsf_check(t, 1);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1], 0, "check printed to stream 1");
    cr_assert(count_lines(out_text[2]) >= blocks, "%zu lines for %zu blocks:\n%s",
              count_lines(out_text[2]), blocks, out_text[2]);
}
