/* The TLSF checker on corrupted headers and free-list links: each
   corruption is detected (silently at level -1, with a message at level 0)
   without a crash, and a consistent heap checks clean.  The control
   block's private bitmaps are corrupted by tests/core/test_corrupt.c. */
#include "test_support.h"

/* ---- corruption is detected, not crashed on -------------------------------- */

/* Three used blocks of 200 bytes in b[0..2]; the middle one freed when
   free_middle. */
static shmalloc_tlsf *three_blocks(unsigned char **b, int free_middle)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    int i;
    for (i = 0; i < 3; i++) {
        b[i] = shmalloc_tlsf_malloc(t, 200);
        cr_assert(b[i]);
        memset(b[i], 0xa5, 200);
    }
    if (free_middle) cr_assert_eq(shmalloc_tlsf_free(t, b[1]), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    return t;
}

/* The checker finds the corruption: silently at level -1, with a message
   on stream 2 at level 0 (left in out_text[2]). */
static void assert_reported(const shmalloc_tlsf *t, const char *what)
{
    int r;
    capture_start();
    r = shmalloc_tlsf_check(t, -1);
    cr_assert_neq(r, 0, "%s: not detected", what);
    cr_assert_eq(out_len[0] + out_len[1] + out_len[2], 0, "%s: level -1 printed: %s", what, out_text[2]);
    r = shmalloc_tlsf_check(t, 0);
    capture_stop();
    cr_assert_neq(r, 0);
    cr_assert(out_len[2] > 0, "%s: level 0 printed nothing to stream 2", what);
    cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_FINDING), 1, "%s: level 0 reports the first problem: %s", what,
                 out_text[2]);
}

/* The middle block's size word replaced; the message names the size or
   the block's offset. */
static void corrupt_size_and_check(uint64_t (*mangle)(uint64_t))
{
    unsigned char *b[3];
    shmalloc_tlsf *t = three_blocks(b, 0);
    uint64_t word, bad;
    char dec[32], hex[32], what[80];
    memcpy(&word, b[1] - 8, 8);
    bad = mangle(word);
    cr_assert_neq(bad, word);
    memcpy(b[1] - 8, &bad, 8);
    snprintf(what, sizeof what, "size word %#llx -> %#llx", (unsigned long long)word, (unsigned long long)bad);
    assert_reported(t, what);
    snprintf(dec, sizeof dec, "%zu", off_of(t, b[1]));
    snprintf(hex, sizeof hex, "%zx", off_of(t, b[1]));
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
    unsigned char *b[3];
    shmalloc_tlsf *t = three_blocks(b, 1);
    uint64_t old[2];
    memcpy(old, b[1], 16);
    cr_assert(old[0] != v0 || old[1] != v1);
    memcpy(b[1], &v0, 8);
    memcpy(b[1] + 8, &v1, 8);
    assert_reported(t, "free-list links");
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
    unsigned char *b[3];
    shmalloc_tlsf *t = three_blocks(b, 1);
    uintptr_t wrong = (uintptr_t)(b[0] - 16);
    memcpy(b[2] - 16, &wrong, sizeof wrong);
    assert_reported(t, "back link");
}

/* The header's bit 0 says whether a block is free. */
static void flip_free_bit_and_check(int free_middle)
{
    unsigned char *b[3];
    shmalloc_tlsf *t = three_blocks(b, free_middle);
    uint64_t w;
    memcpy(&w, b[1] - 8, 8);
    w ^= 1;
    memcpy(b[1] - 8, &w, 8);
    assert_reported(t, free_middle ? "a free block marked used" : "a used block marked free");
}

Test(tlsf_corrupt, free_flag_cleared_on_a_free_block_is_detected) { flip_free_bit_and_check(1); }

Test(tlsf_corrupt, used_block_marked_free_is_detected_and_not_freed_again) { flip_free_bit_and_check(0); }

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

/* ---- the verbose listing: a line per block in both metadata modes, each
   naming the PE when the heap has one --------------------------------------- */

/* Each block's line, as level 1 prints it, in the order of the blocks. */
static void expected_listing(const shmalloc_tlsf *t, const char *who, char *out, size_t room)
{
    const snapshot *s = take_snapshot(t);
    size_t i, len = 0;
    out[0] = '\0';
    for (i = 0; i < s->n; i++)
        len += (size_t)snprintf(out + len, room - len, shm__text_CHECK_BLOCK, who, s->b[i].used ? "used" : "free",
                                s->b[i].offset, s->b[i].size);
    cr_assert(len < room);
}

/* Three used blocks, the first freed: free, used, used, and the top. */
static void four_blocks(void *(*alloc)(void *heap, size_t n), void (*release)(void *heap, void *p), void *heap)
{
    void *a = alloc(heap, 100);
    cr_assert(a && alloc(heap, 200) && alloc(heap, 300));
    release(heap, a);
}

static void *tlsf_alloc(void *t, size_t n) { return shmalloc_tlsf_malloc((shmalloc_tlsf *)t, n); }
static void tlsf_release(void *t, void *p)
{
    cr_assert_eq(shmalloc_tlsf_free((shmalloc_tlsf *)t, p), SHMALLOC_TLSF_OK);
}

Test(tlsf_check_listing, level_1_lists_each_block_once_in_both_metadata_modes_and_names_no_pe)
{
    static char want[4096];
    int separate;
    for (separate = 1; separate >= 0; separate--) {
        void *mem = map_aligned(MIB, MIB);
        shmalloc_tlsf *t =
            separate ? shmalloc_tlsf_create_separate(mem, MIB, MIB, NULL) : shmalloc_tlsf_create(mem, MIB);
        int r;
        four_blocks(tlsf_alloc, tlsf_release, t);
        expected_listing(t, "", want, sizeof want);
        capture_start();
        r = shmalloc_tlsf_check(t, 1);
        capture_stop();
        cr_assert_eq(r, 0);
        cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_BLOCK), 4, "%s: %s", separate ? "separate" : "inline", out_text[2]);
        cr_assert(strcmp(out_text[2], want) == 0, "listed:\n%swanted:\n%s", out_text[2], want);
        assert_tlsf_ok(t);
        shmalloc_tlsf_destroy(t);
    }
}

static void *heap_alloc(void *h, size_t n) { return shmalloc_heap_malloc((shmalloc_heap *)h, n, NULL); }
static void heap_release(void *h, void *p)
{
    long err = -1;
    shmalloc_heap_free((shmalloc_heap *)h, p, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
}

/* PE 3 of 4 (a transport that only counts: this process is all of them). */
static shmalloc_heap *pe3_heap(int metadata)
{
    static shmalloc_transport tp;
    shmalloc_heap_config config = {SIZE_MAX, 0, NULL, metadata, NULL};
    size_t bytes = shmalloc_heap_bytes(MIB);
    long err = -1;
    shmalloc_heap *h;
    tp = counting_transport_for(3, 4, 1);
    h = shmalloc_heap_create_with(map_aligned(bytes, MIB), bytes, &config, &tp, &err);
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK, "create: %ld", err);
    shmalloc_set_current(h);
    return h;
}

Test(heap_check_listing, shmalloc_check_lists_each_block_naming_the_pe_in_both_metadata_modes)
{
    static char want[4096];
    int metadata;
    for (metadata = SHMALLOC_METADATA_SEPARATE; metadata >= SHMALLOC_METADATA_INLINE; metadata--) {
        shmalloc_heap *h = pe3_heap(metadata);
        int r;
        four_blocks(heap_alloc, heap_release, h);
        expected_listing(shmalloc_heap_tlsf(h), "PE 3: ", want, sizeof want);
        capture_start();
        r = shmalloc_check(1);
        capture_stop();
        cr_assert_eq(r, 0);
        cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_BLOCK), 4, "metadata %d: %s", metadata, out_text[2]);
        cr_assert(strcmp(out_text[2], want) == 0, "listed:\n%swanted:\n%s", out_text[2], want);
        assert_heap_ok();
        shmalloc_heap_destroy(h);
    }
}

Test(heap_check_listing, a_finding_names_the_pe)
{
    shmalloc_heap *h = pe3_heap(SHMALLOC_METADATA_INLINE);
    unsigned char *b = heap_alloc(h, 200);
    uint64_t word, bad;
    int r;
    cr_assert(b && heap_alloc(h, 200));
    memcpy(&word, b - 8, 8);
    bad = word + 4096; /* past the next block's start */
    memcpy(b - 8, &bad, 8);
    capture_start();
    r = shmalloc_check(0);
    capture_stop();
    cr_assert_neq(r, 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_FINDING), 1, "%s", out_text[2]);
    cr_assert(strncmp(out_text[2], "shmalloc_check: PE 3: ", 22) == 0 && count_lines(out_text[2]) == 1, "%s",
              out_text[2]);
    memcpy(b - 8, &word, 8);
    assert_heap_ok();
}
