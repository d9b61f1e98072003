/* Writes past the end of a block, as a stray put from a peer makes them:
   16, 32 and 64 bytes of zeros, of a pattern and of ones land on the
   header of the block after it (a used block, a free one, or the top).
   free and realloc of the block written past and of its neighbour must
   not crash: each is refused with SHMALLOC_TLSF_CORRUPT (at the symmetric
   heap, SHMEMX_MALLOC_CORRUPT_HEAP and a HEAP_CORRUPT message) or, where
   the start map vouches for everything the call reaches, succeeds.

   "The rest of the heap intact" is checked as: while the header is
   damaged, the other blocks keep their bytes, free and realloc, and new
   blocks are served; the checker names the damage; and once the
   overwritten bytes are written back, the checker passes and every block,
   the two involved included, frees, leaving an empty heap.  So a refused
   call changed nothing.

   What is not caught (see SHMEMX_MALLOC_CORRUPT_HEAP): a size that still
   leads to another used block's start; the last test shows the checker
   finding that one afterwards. */
#include "test_support.h"

enum neighbour { USED, FREE, TOP };
static const char *const neighbour_names[] = {"used", "free", "top"};
static const size_t overs[] = {16, 32, 64};
static const unsigned char fills[] = {0x00, 0xab, 0xff};

/* Writes and reads as a stray put would: ASan's poisoning of free blocks
   is the allocator's own, not a rule for a peer's write. */
__attribute__((no_sanitize("address"))) static void copy_raw(void *to, const void *from, size_t n)
{
    volatile unsigned char *d = (volatile unsigned char *)to;
    const volatile unsigned char *s = (const volatile unsigned char *)from;
    size_t i;
    for (i = 0; i < n; i++) d[i] = s[i];
}

typedef struct scene {
    shmalloc_tlsf *t;
    void *x, *a, *b, *c, *d; /* a is written past; b is its neighbour; x, c, d are not touched */
    unsigned char saved[64], garbage[64];
    char *at; /* a's end: b's header word */
    size_t over;
} scene;

/* x, a, b, c, d of 100 bytes each, d of 200, in address order, with the
   top above (b free between used a and c, or b the top: a last). */
static void set_scene(scene *s, enum neighbour kind, size_t over, unsigned char fill, void *mem)
{
    s->t = heap_with_capacity(1 * MIB, &mem);
    s->x = shmalloc_tlsf_malloc(s->t, 100);
    if (kind == TOP) {
        s->c = shmalloc_tlsf_malloc(s->t, 100);
        s->d = shmalloc_tlsf_malloc(s->t, 200);
        s->a = shmalloc_tlsf_malloc(s->t, 100);
        s->b = (char *)s->a + shmalloc_tlsf_usable_size(s->t, s->a) + 8; /* the top's user pointer */
    } else {
        s->a = shmalloc_tlsf_malloc(s->t, 100);
        s->b = shmalloc_tlsf_malloc(s->t, 100);
        s->c = shmalloc_tlsf_malloc(s->t, 100);
        s->d = shmalloc_tlsf_malloc(s->t, 200);
    }
    cr_assert(s->x && s->a && s->b && s->c && s->d);
    fill_pattern(s->x, 100, 1);
    fill_pattern(s->a, 100, 2);
    fill_pattern(s->c, 100, 3);
    fill_pattern(s->d, 200, 4);
    if (kind == USED) fill_pattern(s->b, 100, 5);
    if (kind == FREE) cr_assert_eq(shmalloc_tlsf_free(s->t, s->b), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(s->t);
    s->over = over;
    memset(s->garbage, fill, sizeof s->garbage);
    s->at = (char *)s->a + shmalloc_tlsf_usable_size(s->t, s->a);
    copy_raw(s->saved, s->at, over);
    copy_raw(s->at, s->garbage, over);
}

static void undo_write(scene *s)
{
    copy_raw(s->at, s->saved, s->over);
}

/* The blocks the write did not reach: their bytes, a free, a realloc, and
   new blocks from the top. */
static void others_work(scene *s)
{
    void *n1, *n2;
    cr_assert(check_pattern(s->x, 100, 1) && check_pattern(s->c, 100, 3) && check_pattern(s->d, 200, 4));
    cr_assert_eq(shmalloc_tlsf_free(s->t, s->d), SHMALLOC_TLSF_OK);
    s->x = shmalloc_tlsf_realloc(s->t, s->x, 60);
    cr_assert(s->x && check_pattern(s->x, 60, 1));
    n1 = shmalloc_tlsf_malloc(s->t, 3000);
    n2 = shmalloc_tlsf_malloc(s->t, 20000);
    cr_assert(n1 && n2);
    fill_pattern(n1, 3000, 6);
    fill_pattern(n2, 20000, 7);
    cr_assert(check_pattern(s->c, 100, 3));
    cr_assert_eq(shmalloc_tlsf_free(s->t, n2), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(s->t, n1), SHMALLOC_TLSF_OK);
    s->d = NULL;
}

static void expect_checker_names_damage(const scene *s)
{
    cr_assert_neq(shmalloc_tlsf_check(s->t, -1), 0, "the checker passes a damaged header");
    capture_start();
    shmalloc_tlsf_check(s->t, 0);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_FINDING), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "overwritten") != NULL, "%s", out_text[2]);
}

/* Written back, the heap is whole: everything frees and the heap is empty. */
static void expect_whole_after_undo(scene *s, enum neighbour kind)
{
    undo_write(s);
    assert_tlsf_ok(s->t);
    cr_assert(check_pattern(s->a, 100, 2));
    if (kind == USED) cr_assert(check_pattern(s->b, 100, 5));
    cr_assert_eq(shmalloc_tlsf_free(s->t, s->a), SHMALLOC_TLSF_OK);
    if (kind == USED) cr_assert_eq(shmalloc_tlsf_free(s->t, s->b), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(s->t, s->c), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(s->t, s->x), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(s->t, s->d), SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(s->t).used_blocks, 0);
    assert_tlsf_ok(s->t);
}

/* What free and realloc of a (whose next header is damaged) must return:
   zeros on a used neighbour's header still say "used", and the start map
   vouches for that start, so a's own free is sound (b's is caught). */
static int a_status(enum neighbour kind, unsigned char fill)
{
    return kind == USED && fill == 0 ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_CORRUPT;
}

static void run_case(enum neighbour kind, size_t over, unsigned char fill)
{
    scene s;
    int want = a_status(kind, fill);
    set_scene(&s, kind, over, fill, NULL);
    cr_assert_eq(shmalloc_tlsf_validate(s.t, s.a), want, "neighbour %s, %zu bytes of 0x%02x: validate a: %d",
                 neighbour_names[kind], over, fill, shmalloc_tlsf_validate(s.t, s.a));
    if (want == SHMALLOC_TLSF_CORRUPT) { /* refused, and refused again: nothing changed */
        cr_assert_null(shmalloc_tlsf_realloc(s.t, s.a, 5000));
        cr_assert_null(shmalloc_tlsf_realloc(s.t, s.a, 40));
        cr_assert_eq(shmalloc_tlsf_free(s.t, s.a), SHMALLOC_TLSF_CORRUPT);
        cr_assert_eq(shmalloc_tlsf_free(s.t, s.a), SHMALLOC_TLSF_CORRUPT);
        cr_assert(check_pattern(s.a, 100, 2));
    }
    if (kind == USED) { /* b's own header is what was written */
        cr_assert_eq(shmalloc_tlsf_validate(s.t, s.b), SHMALLOC_TLSF_CORRUPT);
        cr_assert_null(shmalloc_tlsf_realloc(s.t, s.b, 5000));
        cr_assert_null(shmalloc_tlsf_realloc(s.t, s.b, 40));
        cr_assert_null(shmalloc_tlsf_realloc(s.t, s.b, 0));
        cr_assert_eq(shmalloc_tlsf_free(s.t, s.b), SHMALLOC_TLSF_CORRUPT);
    } else { /* a free block's pointer is told from the start map and used headers alone */
        int e = shmalloc_tlsf_free(s.t, s.b);
        cr_assert_eq(e, kind == FREE ? SHMALLOC_TLSF_ALREADY_FREE : SHMALLOC_TLSF_NOT_A_BLOCK, "free b: %d", e);
    }
    expect_checker_names_damage(&s);
    others_work(&s); /* a take from the top writes its header afresh, as it was */
    expect_whole_after_undo(&s, kind);
}

ParameterizedTestParameters(overwrite, past_the_end)
{
    static int cases[3 * 3 * 3];
    int i;
    for (i = 0; i < 27; i++) cases[i] = i;
    return cr_make_param_array(int, cases, 27);
}

ParameterizedTest(int *k, overwrite, past_the_end)
{
    run_case((enum neighbour)(*k / 9), overs[*k / 3 % 3], fills[*k % 3]);
}

/* The symmetric heap: the code, the message naming the block and its
   neighbour with the advice, and the same call fails again. */
Test(overwrite, the_heap_refuses_free_and_realloc_with_the_code_and_a_message)
{
    shmalloc_heap *h = make_heap(1 * MIB, NULL);
    long err = 0;
    char *a = shmalloc_heap_malloc(h, 100, &err), *b = shmalloc_heap_malloc(h, 100, &err);
    size_t end = shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(h), a);
    size_t base = (size_t)(uintptr_t)shmalloc_heap_base(h);
    unsigned char saved[64], ones[64];
    char what[160];
    cr_assert(a && b && !err);
    memset(ones, 0xff, sizeof ones);
    copy_raw(saved, a + end, 64);
    copy_raw(a + end, ones, 64);
    capture_start();
    shmalloc_heap_free(h, b, &err);
    capture_stop();
    cr_assert_eq(err, SHMEMX_MALLOC_CORRUPT_HEAP, "err %ld", err);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_CORRUPT), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "a write past the end of the block before it?"), "%s", out_text[2]);
    cr_assert(strstr(shmalloc_strerror(err), "overwritten"));
    capture_start();
    cr_assert_null(shmalloc_heap_realloc(h, a, 5000, &err));
    capture_stop();
    cr_assert_eq(err, SHMEMX_MALLOC_CORRUPT_HEAP, "err %ld", err);
    snprintf(what, sizeof what, "leads to its neighbour at offset %zu (header 0xffffffffffffffff), which is not a block",
             (size_t)(uintptr_t)b - base);
    assert_said(HEAP_CORRUPT, 0, "realloc", (size_t)(uintptr_t)a - base, end + 8, end + 8, what);
    cr_assert_neq(shmalloc_check(-1), 0);
    copy_raw(a + end, saved, 64); /* the advice followed: the write undone */
    shmalloc_heap_free(h, b, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    shmalloc_heap_free(h, a, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    assert_heap_ok();
}

/* Not caught by free or realloc: a size that leads to another used
   block's start (a free would take that block's bytes for its own).  The
   checker's walk finds the block it skips over. */
Test(overwrite, a_size_that_reaches_another_used_start_is_found_by_the_checker)
{
    void *mem;
    shmalloc_tlsf *t = heap_with_capacity(1 * MIB, &mem);
    char *a = shmalloc_tlsf_malloc(t, 100), *b = shmalloc_tlsf_malloc(t, 100), *c = shmalloc_tlsf_malloc(t, 100);
    size_t header;
    cr_assert(a && b && c && shmalloc_tlsf_malloc(t, 100));
    memcpy(&header, b - 8, sizeof header);
    header += (size_t)(c - b); /* b's size now reaches past c, to the fourth block's start */
    memcpy(b - 8, &header, sizeof header);
    cr_assert_eq(shmalloc_tlsf_validate(t, b), SHMALLOC_TLSF_OK, "not caught");
    capture_start();
    cr_assert_neq(shmalloc_tlsf_check(t, 0), 0);
    capture_stop();
    cr_assert(strstr(out_text[2], "start map marks"), "%s", out_text[2]);
    header -= (size_t)(c - b);
    memcpy(b - 8, &header, sizeof header);
    assert_tlsf_ok(t);
}

/* A write past the last block, with no top above it, reaches the end
   marker (the sentinel's header word): free and validate agree that the
   block cannot be freed, whatever the word became. */
Test(overwrite, a_write_past_the_last_block_reaches_the_end_marker)
{
    size_t i;
    for (i = 0; i < sizeof fills; i++) {
        void *mem;
        shmalloc_tlsf *t = heap_with_capacity(4096, &mem);
        char *a = shmalloc_tlsf_malloc(t, 4096);
        unsigned char saved[8], garbage[8];
        cr_assert(a != NULL && shmalloc_tlsf_top_free(t) == 0, "the block is the last, with no top");
        memset(garbage, fills[i], sizeof garbage);
        copy_raw(saved, a + shmalloc_tlsf_usable_size(t, a), sizeof saved);
        copy_raw(a + shmalloc_tlsf_usable_size(t, a), garbage, sizeof garbage);
        cr_assert_eq(shmalloc_tlsf_validate(t, a), SHMALLOC_TLSF_CORRUPT, "fill 0x%02x", fills[i]);
        cr_assert_null(shmalloc_tlsf_realloc(t, a, 100));
        cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_CORRUPT, "fill 0x%02x", fills[i]);
        cr_assert_neq(shmalloc_tlsf_check(t, -1), 0);
        copy_raw(a + shmalloc_tlsf_usable_size(t, a), saved, sizeof saved);
        assert_tlsf_ok(t);
        cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
        assert_tlsf_ok(t);
    }
}

/* The checks bound the block a size leads to by the zeroed start map, which
   must cover the top even when it starts where the zeroed part ends: the
   free of the block below it is sound, and must succeed. */
Test(overwrite, a_free_into_a_top_at_the_end_of_the_zeroed_map_succeeds)
{
    shmalloc_tlsf *t = heap_with_capacity(1 * MIB, NULL);
    char *probe = shmalloc_tlsf_malloc(t, 32), *a;
    size_t redzone = shmalloc_tlsf_usable_size(t, probe) - 40; /* a block of 48 or 64 bytes */
    cr_assert_eq(shmalloc_tlsf_free(t, probe), SHMALLOC_TLSF_OK);
    a = shmalloc_tlsf_malloc(t, 512 * KIB - 8 - redzone); /* one block of exactly 512 KiB: the map's first 4 KiB */
    cr_assert(a != NULL && shmalloc_tlsf_offset(t, a) == 16 && shmalloc_tlsf_usable_size(t, a) == 512 * KIB - 8);
    cr_assert_eq(shmalloc_tlsf_validate(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).used_blocks, 0);
    assert_tlsf_ok(t);
}

/* The core's realloc checks nothing for a shrink within the block's slack:
   it keeps the block as it is and reaches no other block, so it succeeds
   next to a damaged header and changes nothing. */
Test(overwrite, a_shrink_within_the_slack_succeeds_next_to_a_damaged_header)
{
    scene s;
    set_scene(&s, USED, 64, 0xff, NULL);
    cr_assert_eq(shmalloc_tlsf_realloc(s.t, s.a, 90), s.a);
    cr_assert(check_pattern(s.a, 90, 2));
    cr_assert_eq(shmalloc_tlsf_validate(s.t, s.a), SHMALLOC_TLSF_CORRUPT, "the neighbour is still damaged");
    cr_assert_null(shmalloc_tlsf_realloc(s.t, s.a, 40), "a shrink that gives a tail back reaches it");
    cr_assert_eq(shmalloc_tlsf_realloc(s.t, s.a, 100), s.a);
    expect_checker_names_damage(&s);
    expect_whole_after_undo(&s, USED);
}
