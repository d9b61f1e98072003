/* shmalloc_stats and shmalloc_check output: the streams, the call and
   block counts, the block map, a line per block, and a corrupted heap. */
#include "test_support.h"

/* ---- statistics ----------------------------------------------------------- */

typedef struct map_counts {
    size_t busy, free_, spec;
    int found;
} map_counts;

/* Find a line whose last word is made of '*', '.' and '@' only. */
static map_counts find_map_line(const char *text)
{
    map_counts m = {0, 0, 0, 0};
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        const char *w = end;
        while (w > line && (w[-1] == '*' || w[-1] == '.' || w[-1] == '@'))
            w--;
        if (end - w >= 2 && (w == line || w[-1] == ' ' || w[-1] == ':' || w[-1] == '\t')) {
            size_t b = 0, f = 0, s = 0;
            for (const char *c = w; c < end; c++) {
                b += *c == '*';
                f += *c == '.';
                s += *c == '@';
            }
            if (b && f) {
                m.busy = b;
                m.free_ = f;
                m.spec = s;
                m.found = 1;
                return m;
            }
        }
        line = *end ? end + 1 : end;
    }
    return m;
}

/* The first number within a few characters after the first `word`, or -1. */
static long number_after(const char *text, const char *word)
{
    const char *w = strstr(text, word);
    if (!w)
        return -1;
    w += strlen(word);
    for (int i = 0; i < 4 && *w && (*w < '0' || *w > '9'); i++)
        w++;
    if (*w < '0' || *w > '9')
        return -1;
    return strtol(w, NULL, 10);
}

/* Every block's offset, as a decimal number, appears in text. */
static int offset_cb(void *user, const shmalloc_block_info *b)
{
    char num[32];
    snprintf(num, sizeof num, "%zu", b->offset);
    cr_assert(strstr(user, num), "block at offset %s not listed in:\n%s", num, (char *)user);
    return 0;
}

static shmalloc_heap *stats_heap(void)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    void *p[7];
    for (int i = 0; i < 7; i++)
        p[i] = shmem_malloc(100 + (size_t)i * 10);
    shmem_free(p[1]);
    shmem_free(p[3]);
    shmem_free(p[5]);
    /* busy: 0 2 4 6; free: 1 3 5 and the remainder */
    return h;
}

Test(stats, level_0_goes_to_stream_1_with_call_counts_and_block_counts)
{
    stats_heap();
    capture_start();
    shmalloc_stats(0);
    capture_stop();
    cr_assert(out_len[1] > 0, "stats printed nothing to stream 1");
    cr_assert_eq(out_len[2], 0, "stats printed to stream 2: %s", out_text[2]);
    const char *t = out_text[1];
    cr_assert_eq(number_after(t, " malloc"), 7, "7 malloc calls not counted:\n%s", t);
    cr_assert_eq(number_after(t, " free"), 3, "3 free calls not counted:\n%s", t);
    cr_assert_eq(number_after(t, "busy"), 4, "4 busy blocks not counted:\n%s", t);
    cr_assert_eq(number_after(t, "\n  free"), 4, "4 free blocks not counted:\n%s", t);
    cr_assert_eq(out_said(SHMALLOC_MSG_STATS_SPEC), 1, "no spec block count:\n%s", t);
    cr_assert_eq(out_said(SHMALLOC_MSG_STATS_CALLS), 1, "the calls in one line:\n%s", t);
    cr_assert(!find_map_line(out_text[1]).found && !out_said(SHMALLOC_MSG_STATS_MAP), "level 0 printed a map:\n%s",
              out_text[1]);
    assert_heap_ok();
}

/* One busy block, in the singular, and the bytes say they count headers. */
Test(stats, one_block_is_one_block_and_bytes_count_headers)
{
    make_counting_heap(MIB, 1);
    void *p = shmem_malloc(48);
    cr_assert(p);
    capture_start();
    shmalloc_stats(2);
    capture_stop();
    cr_assert(strstr(out_text[1], "  busy: 1 block, 64 bytes with headers\n"), "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  free: 1 block, "), "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  spec: 0 blocks, 0 bytes\n"), "%s", out_text[1]);
    assert_said(STATS_BLOCK, (size_t)16, (size_t)64, "busy");
    shmem_free(p);
    assert_heap_ok();
}

Test(stats, level_1_adds_a_map_line_with_a_star_per_busy_and_a_dot_per_free_block)
{
    shmalloc_heap *h = stats_heap();
    capture_start();
    shmalloc_stats(1);
    capture_stop();
    map_counts m = find_map_line(out_text[1]);
    cr_assert(m.found, "no map line in:\n%s", out_text[1]);
    shmalloc_counters c = heap_counters(h);
    cr_assert_eq(m.busy, c.used_blocks, "map has %zu '*' for %zu busy blocks:\n%s", m.busy,
                 c.used_blocks, out_text[1]);
    cr_assert_eq(m.free_, 4, "map has %zu '.' for 4 free blocks:\n%s", m.free_, out_text[1]);
    cr_assert_eq(out_len[2], 0);
    assert_heap_ok();
}

Test(stats, level_2_adds_a_line_per_block)
{
    stats_heap();
    capture_start();
    shmalloc_stats(1);
    size_t l1 = count_lines(out_text[1]);
    capture_start();
    shmalloc_stats(2);
    capture_stop();
    size_t l2 = count_lines(out_text[1]);
    cr_assert(l2 >= l1 + 8, "level 2 has %zu lines, level 1 %zu, 8 blocks:\n%s", l2, l1,
              out_text[1]);
    shmalloc_tlsf_walk(shmalloc_heap_tlsf(shmalloc_current()), offset_cb, out_text[1]);
    assert_heap_ok();
}

/* ---- checker -------------------------------------------------------------- */

Test(check, level_minus_1_prints_nothing_and_returns_0_on_a_good_heap)
{
    stats_heap();
    capture_start();
    int r = shmalloc_check(-1);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[0] + out_len[1] + out_len[2], 0);
    cr_assert_eq(out_calls[0] + out_calls[1] + out_calls[2], 0);
}

Test(check, level_0_prints_nothing_on_a_good_heap)
{
    stats_heap();
    capture_start();
    int r = shmalloc_check(0);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1] + out_len[2], 0, "printed: %s", out_text[2]);
}

Test(check, level_1_prints_a_line_per_block_to_stream_2)
{
    stats_heap();
    capture_start();
    int r = shmalloc_check(1);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1], 0, "check printed to stream 1");
    cr_assert(count_lines(out_text[2]) >= 8, "%zu lines for 8 blocks:\n%s",
              count_lines(out_text[2]), out_text[2]);
    shmalloc_tlsf_walk(shmalloc_heap_tlsf(shmalloc_current()), offset_cb, out_text[2]);
}

Test(check, corrupted_heap_is_reported_at_level_0_and_silent_at_minus_1)
{
    make_heap(MIB, NULL);
    unsigned char *a = shmem_malloc(200);
    unsigned char *b = shmem_malloc(200);
    cr_assert(a && b && shmem_malloc(200));
    uint64_t bad = (uint64_t)1 << 60;
    memcpy(b - 8, &bad, 8);
    capture_start();
    int r1 = shmalloc_check(-1);
    size_t silent = out_len[1] + out_len[2];
    int r0 = shmalloc_check(0);
    capture_stop();
    cr_assert_neq(r1, 0);
    cr_assert_eq(silent, 0);
    cr_assert_neq(r0, 0);
    cr_assert(out_len[2] > 0, "no message on stream 2");
    cr_assert_eq(out_len[1], 0);
}
