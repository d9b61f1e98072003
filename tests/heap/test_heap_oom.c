/* Out of symmetric memory: shmalloc_heap_info's figures, and the report a
   failing call prints (once, or every time in debug mode), naming the
   variable to raise or the fragmentation. */
#include "test_support.h"

/* ---- out of memory: the report and the figures ------------------------------ */

/* The first line of every report, from the figures the heap gives. */
static void expect_oom_line(const char *call, size_t size, size_t align, size_t need, const shmalloc_info *i)
{
    assert_said(HEAP_OOM, 0, call, size, align, need, i->heap_size, i->heap_max, i->free, i->largest_free);
}

/* The size an out-of-memory report advises ("at least 3M"): its text in
   value, its bytes as the size variables read them. */
static size_t advised_size(const char *text, char value[64])
{
    const char *at = strstr(text, "at least ");
    size_t n = 0;
    cr_assert(at, "no advice in\n%s", text);
    cr_assert_eq(sscanf(at, "at least %63[0-9A-Za-z]", value), 1, "%s", text);
    cr_assert_eq(shmalloc_parse_size(value, &n), 0, "advised %s, which no size variable takes:\n%s", value, text);
    return n;
}

/* A heap of the size the options table holds, as a transport makes it;
   300 KiB, then 900 KiB: 1 if the second fits. */
static int table_heap_serves_both(shmalloc_heap **h)
{
    size_t nominal = 0;
    cr_assert_eq(size_from_table(&nominal), 0);
    *h = make_counting_heap(nominal, 1);
    cr_assert(shmem_malloc(300 * KIB));
    return shmem_malloc(900 * KIB) != NULL;
}

Test(heap_info, figures_match_the_counters_and_largest_request_is_exact)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *a = shmem_malloc(1000), *b = shmem_malloc(5000);
    cr_assert(a && b);
    shmalloc_info i = info_of(h), j;
    shmalloc_counters c = heap_counters(h);
    cr_assert_eq(i.heap_size, c.capacity);
    cr_assert_eq(i.heap_max, c.capacity, "a heap that cannot grow");
    cr_assert_eq(i.in_use, c.in_use);
    cr_assert_eq(i.free, c.capacity - c.in_use);
    cr_assert_eq(i.largest_free, c.largest_free);
    cr_assert_eq(i.used_blocks, 2);
    cr_assert_eq(i.failures, 0);
    memset(&j, 0, sizeof j);
    cr_assert_eq(shmemx_heap_info(&j), 0);
    cr_assert(memcmp(&i, &j, sizeof i) == 0, "shmemx_heap_info gives the current heap's figures");
    capture_start();
    cr_assert_null(shmem_malloc(i.largest_request + 1), "one byte more than largest_request fits");
    void *big = shmem_malloc(i.largest_request);
    capture_stop();
    cr_assert(big, "largest_request (%zu) fits", i.largest_request);
    cr_assert_eq(info_of(h).largest_request, 0, "nothing fits once the largest block is taken");
    cr_assert_eq(info_of(h).failures, 1);
    shmem_free(big);
    shmem_free(a);
    shmem_free(b);
    cr_assert_eq(info_of(h).free, info_of(h).heap_size, "all free again");
    assert_heap_ok();
}

Test(heap_info, no_heap_is_an_error)
{
    shmalloc_info i;
    shmalloc_set_current(NULL);
    cr_assert_eq(shmemx_heap_info(&i), -1);
    cr_assert_eq(shmalloc_heap_info(NULL, &i), -1);
}

Test(oom, a_heap_too_small_is_reported_once_with_its_figures_and_the_size_variable)
{
    char value[64];
    clear_size_env();
    cr_assert_eq(shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, "1M"), 0);
    cr_assert_eq(shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, NULL), 0); /* back to the environment: the default */
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *a = shmem_malloc(300 * KIB);
    cr_assert(a);
    capture_start();
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc(900 * KIB));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL);
    shmalloc_info i = info_of(h);
    expect_oom_line("malloc", 900 * KIB, 16, 900 * KIB + 16, &i);
    char want[256];
    snprintf(want, sizeof want, "set SHMEM_SYMMETRIC_HEAP_SIZE to at least %zuM (a nominal size: the heap as mapped "
             "is larger)", (i.in_use + 900 * KIB + 16 + MIB - 1) / MIB); /* the advice */
    assert_said(HEAP_OOM_TOO_SMALL, 0, want, ", or SHMALLOC_HEAP_MAX to let the heap grow");
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM_QUIET), 1, "%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM_FRAGMENTED), 0, "%s", out_text[2]);
    cr_assert_eq(out_len[1], 0, "nothing on stream 1");
    size_t first = out_nids;
    cr_assert_null(shmem_align(4096, 2 * MIB));
    cr_assert_null(shmem_calloc(MIB, 2));
    cr_assert_eq(out_nids, first, "reported once per heap: %s", out_text[2]);
    capture_stop();
    cr_assert_eq(info_of(h).failures, 3, "every failure is counted");
    shmem_free(a);
    assert_heap_ok();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", (advised_size(out_text[2], value), value), 1); /* the advice, followed */
    cr_assert(table_heap_serves_both(&h), "SHMEM_SYMMETRIC_HEAP_SIZE=%s does not serve the call", value);
    assert_heap_ok();
}

/* The variable in force is the one named, an older alias too. */
Test(oom, the_advice_names_the_size_variable_in_force_and_following_it_serves_the_call)
{
    char value[64];
    shmalloc_heap *h;
    clear_size_env();
    setenv("SMA_SYMMETRIC_SIZE", "1M", 1);
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    capture_start();
    cr_assert(!table_heap_serves_both(&h));
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM_TOO_SMALL), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "set SMA_SYMMETRIC_SIZE to at least "), "%s", out_text[2]);
    setenv("SMA_SYMMETRIC_SIZE", (advised_size(out_text[2], value), value), 1);
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    cr_assert(table_heap_serves_both(&h), "SMA_SYMMETRIC_SIZE=%s does not serve the call", value);
    assert_heap_ok();
}

/* A size the program sets wins over the environment (SHMEM_INFO says
   "from program"): the advice names no variable, and the program asking
   for the advised size serves the call. */
Test(oom, a_size_the_program_sets_is_advised_to_the_program_not_to_a_variable)
{
    char value[64];
    shmalloc_heap *h;
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "64M", 1); /* read by nobody: the program's value wins */
    cr_assert_eq(shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, "1M"), 0);
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    capture_start();
    cr_assert(!table_heap_serves_both(&h));
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM_TOO_SMALL), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "the program sets the heap's size, not a variable: have it ask for at least "),
              "%s", out_text[2]);
    cr_assert(!strstr(out_text[2], "SHMEM_") && !strstr(out_text[2], "SHMALLOC_HEAP_MAX"), "%s", out_text[2]);
    advised_size(out_text[2], value);
    cr_assert_eq(shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, value), 0);
    cr_assert(table_heap_serves_both(&h), "a program's heap of %s does not serve the call", value);
    assert_heap_ok();
}

/* A runtime that vendors the header and reads none of the variables. */
Test(oom, a_runtime_that_reads_no_variable_is_advised_to_ask_for_more)
{
    char value[64];
    clear_size_env();
    make_counting_heap(MIB, 1);
    capture_start();
    cr_assert(shmem_malloc(300 * KIB));
    cr_assert_null(shmem_malloc(900 * KIB));
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM_TOO_SMALL), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "the program sets the heap's size, not a variable: have it ask for at least "),
              "%s", out_text[2]);
    cr_assert(!strstr(out_text[2], "SHMEM_") && !strstr(out_text[2], "SHMALLOC_HEAP_MAX"), "%s", out_text[2]);
    make_counting_heap(advised_size(out_text[2], value), 1);
    cr_assert(shmem_malloc(300 * KIB) && shmem_malloc(900 * KIB), "a heap of %s does not serve the call", value);
    assert_heap_ok();
}

/* Blocks of 64 KiB with every other one freed: half the heap is free, in
   pieces too small for 128 KiB. */
Test(oom, fragmentation_is_named_when_the_bytes_are_free_but_not_in_one_block)
{
    clear_size_env();
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *p[15];
    int n = 15;
    for (int k = 0; k < n; k++) cr_assert((p[k] = shmem_malloc(64 * KIB - 8)) != NULL);
    for (int k = 0; k < n - 1; k += 2) shmem_free(p[k]); /* the last stays: the top block is not merged */
    capture_start();
    cr_assert_null(shmem_malloc(128 * KIB));
    shmalloc_info i = info_of(h);
    capture_stop();
    cr_assert(i.free >= 128 * KIB + 16 && i.largest_free < 128 * KIB + 16, "free %zu, largest %zu", i.free,
              i.largest_free);
    expect_oom_line("malloc", 128 * KIB, 16, 128 * KIB + 16, &i);
    char want[256];
    snprintf(want, sizeof want, "set SHMEM_SYMMETRIC_HEAP_SIZE to at least %zuM (a nominal size: the heap as mapped "
             "is larger)", (i.heap_size - shmalloc_tlsf_top_free(shmalloc_heap_tlsf(h)) + 128 * KIB + MIB - 1) / MIB);
    assert_said(HEAP_OOM_FRAGMENTED, 0, want);
    for (int k = 1; k < n; k += 2) shmem_free(p[k]);
    shmem_free(p[n - 1]);
    assert_heap_ok();
}

Test(oom, debug_mode_reports_every_failure_and_realloc_too)
{
    setenv("SHMALLOC_DEBUG", "1", 1);
    cr_assert(shmalloc_options_read(NULL) == 0);
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    unsetenv("SHMALLOC_DEBUG");
    cr_assert(shmalloc_options_read(NULL) == 0);
    void *a = shmem_malloc(100);
    cr_assert(a);
    capture_start();
    cr_assert_null(shmem_malloc(2 * MIB));
    cr_assert_null(shmem_realloc(a, 3 * MIB));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED);
    shmalloc_info i = info_of(h);
    capture_stop();
    expect_oom_line("malloc", 2 * MIB, 16, 2 * MIB + 16, &i);
    expect_oom_line("realloc", 3 * MIB, 16, 3 * MIB + 16, &i);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 2, "%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM_QUIET), 0, "%s", out_text[2]);
    cr_assert_eq(i.failures, 2);
    shmem_free(a);
    assert_heap_ok();
}

Test(oom, a_growable_heap_at_its_maximum_names_shmalloc_heap_max)
{
    shmalloc_transport tp = counting_transport(1);
    size_t max = 4 * MIB, bytes = shmalloc_heap_bytes(max);
    long err = 1;
    clear_size_env();
    setenv("SHMALLOC_HEAP_MAX", "4M", 1);
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    memset(&cnt, 0, sizeof cnt);
    shmalloc_heap *h = create_from_table(map_aligned(bytes, MIB), bytes, MIB, 1, &tp, &err);
    cr_assert(h && err == SHMEM_MALLOC_OK);
    shmalloc_set_current(h);
    capture_start();
    void *a = shmem_malloc(5 * MIB / 2);
    cr_assert(a, "grows from 1 MiB to serve 2.5 MiB");
    cr_assert_eq(out_nids, 0, "no report when growth serves the call: %s", out_text[2]);
    cr_assert_null(shmem_malloc(2 * MIB));
    shmalloc_info i = info_of(h);
    capture_stop();
    cr_assert(i.heap_max >= max && i.heap_max < bytes, "heap_max %zu", i.heap_max);
    expect_oom_line("malloc", 2 * MIB, 16, 2 * MIB + 16, &i);
    char want[256];
    size_t top = shmalloc_tlsf_top_free(shmalloc_heap_tlsf(h)); /* the smallest heap serving it: */
    snprintf(want, sizeof want, "set SHMALLOC_HEAP_MAX to at least %zuM",
             (i.heap_size - top + 2 * MIB + 16 - 16 + MIB - 1) / MIB);
    assert_said(HEAP_OOM_TOO_SMALL, 0, want, "");
    cr_assert(!strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE"), "%s", out_text[2]);
    shmem_free(a);
    assert_heap_ok();
}

Test(oom, a_pe_that_fails_only_because_a_peer_ran_out_reports_nothing)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    capture_start();
    peer_fails(200, SHMEM_MALLOC_FAIL);
    cr_assert_null(shmem_malloc(200));
    peer_active = 0;
    capture_stop();
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL);
    cr_assert_eq(out_nids, 0, "%s", out_text[2]);
    cr_assert_eq(info_of(h).failures, 0);
    assert_heap_ok();
}

/* The advice names only sizes the size variables take (up to 64T): past
   that, the report says no heap can serve the call.  (A heap in debug
   mode, which reports every failure.) */
static void expect_takeable_advice(size_t size)
{
    const char *set;
    char value[64];
    size_t parsed;
    capture_start();
    cr_assert_null(shmem_malloc(size));
    capture_stop();
    set = strstr(out_text[2], "to at least ");
    if (!set) {
        cr_assert(out_said(SHMALLOC_MSG_HEAP_OOM_NO_HEAP_CAN) && strstr(out_text[2], "(64T"),
                  "a request of %zu bytes:\n%s", size, out_text[2]);
        return;
    }
    cr_assert_eq(sscanf(set, "to at least %63[0-9A-Za-z]", value), 1, "%s", out_text[2]);
    cr_assert_eq(shmalloc_parse_size(value, &parsed), 0, "advised %s, which no size variable takes:\n%s", value,
                 out_text[2]);
}

Test(oom, the_advice_never_exceeds_the_largest_heap_the_size_variables_take)
{
    setenv("SHMALLOC_DEBUG", "1", 1);
    cr_assert(shmalloc_options_read(NULL) == 0);
    make_counting_heap(MIB, 1);
    unsetenv("SHMALLOC_DEBUG");
    cr_assert(shmalloc_options_read(NULL) == 0);
    void *a = shmem_malloc(1000);
    cr_assert(a);
    expect_takeable_advice((size_t)1 << 46);
    assert_said(HEAP_OOM_NO_HEAP_CAN, 0, "67108865M", (size_t)64, 'T', 46);
    expect_takeable_advice(((size_t)1 << 46) - 4096);
    expect_takeable_advice(((size_t)1 << 46) - (2 << 20));
    expect_takeable_advice((size_t)1 << 45);
    cr_assert(strstr(out_text[2], "set SHMEM_SYMMETRIC_HEAP_SIZE to at least 33554433M"), "%s", out_text[2]);
    capture_start();
    shmem_free(a);
    capture_stop();
    assert_heap_ok();
}
