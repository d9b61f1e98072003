/* Debug mode (SHMALLOC_DEBUG=1): asymmetric calls are caught on every PE
   with a message naming what differs, blocks still allocated at the end
   are reported, and fresh and freed memory carry fill patterns.  Runs on
   the pthreads transport with 2 and 4 PEs. */
#define TEST_SUPPORT_PES /* the pthreads transport, checks in PE threads */
#include "test_support.h"

#define HEAP ((size_t)1 << 20)

static int run(int npes, void (*pe_main)(void *))
{
    int rc;
    setenv("SHMALLOC_DEBUG", "1", 1);
    capture_start();
    rc = shmalloc_pthreads_run(npes, HEAP, pe_main, NULL);
    capture_stop();
    assert_no_pe_failed();
    return rc;
}

/* ---- asymmetric calls ---- */
static void pe_different_alignments(void *arg)
{
    void *p = shmem_align((size_t)64 << shmem_my_pe(), 100);
    (void)arg;
    PE_CHECK(p == NULL);
    PE_CHECK(malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    PE_CHECK(shmalloc_check(-1) == 0);
}

static void pe_different_blocks(void *arg)
{
    char *x = shmem_malloc(64), *y = shmem_malloc(64);
    (void)arg;
    shmem_free(shmem_my_pe() == 0 ? x : y);
    PE_CHECK(malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    PE_CHECK(shmalloc_tlsf_validate(shmalloc_heap_tlsf(shmalloc_current()), x) == SHMALLOC_TLSF_OK);
    PE_CHECK(shmalloc_tlsf_validate(shmalloc_heap_tlsf(shmalloc_current()), y) == SHMALLOC_TLSF_OK);
    shmem_free(x);
    PE_CHECK(malloc_error == SHMEM_MALLOC_OK);
    shmem_free(y);
    PE_CHECK(shmalloc_check(-1) == 0);
}

static void pe_different_calls(void *arg)
{
    void *p = shmem_my_pe() == 0 ? shmem_malloc(64) : shmem_calloc(8, 8);
    (void)arg;
    PE_CHECK(p == NULL);
    PE_CHECK(malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    PE_CHECK(shmalloc_check(-1) == 0);
}

static void pe_different_realloc_blocks(void *arg)
{
    char *x = shmem_malloc(64), *y = shmem_malloc(64);
    (void)arg;
    PE_CHECK(shmem_realloc(shmem_my_pe() == 0 ? x : y, 200) == NULL);
    PE_CHECK(malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    shmem_free(x);
    shmem_free(y);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(debug, different_alignments_fail_on_every_pe_and_say_so)
{
    cr_assert(run(2, pe_different_alignments) == 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISMATCH), 2, "%s", out_text[2]);
    cr_assert(count_in(out_text[2], ": the alignments\n") == 2, "what differs: %s", out_text[2]);
    assert_said(HEAP_MISMATCH, 1, "align(alignment 128, 100 bytes), its collective call 1", 0,
                "align(alignment 64, 100 bytes), its collective call 1", "the alignments");
    assert_said(HEAP_MISMATCH, 0, "align(alignment 64, 100 bytes), its collective call 1", 1,
                "align(alignment 128, 100 bytes), its collective call 1", "the alignments");
}

Test(debug, freeing_different_blocks_fails_on_every_pe_and_frees_nothing)
{
    cr_assert(run(4, pe_different_blocks) == 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISMATCH), 4, "%s", out_text[2]);
    cr_assert(count_in(out_text[2], ": the blocks\n") == 4, "what differs: %s", out_text[2]);
}

Test(debug, different_calls_with_the_same_size_are_caught)
{
    cr_assert(run(2, pe_different_calls) == 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISMATCH), 2, "%s", out_text[2]);
    cr_assert(count_in(out_text[2], "the calls") == 2, "what differs: %s", out_text[2]);
}

Test(debug, realloc_of_different_blocks_is_caught)
{
    cr_assert(run(2, pe_different_realloc_blocks) == 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISMATCH), 2, "%s", out_text[2]);
    cr_assert(count_in(out_text[2], "realloc(the block at offset ") == 4 &&
                  count_in(out_text[2], ", 200 bytes), its collective call 3") == 4 &&
                  count_in(out_text[2], ": the blocks\n") == 2,
              "%s", out_text[2]);
}

/* ---- leaks ---- */
static void pe_leaks_two_blocks(void *arg)
{
    (void)arg;
    PE_CHECK(shmem_malloc(100) != NULL);
    PE_CHECK(shmem_malloc(5000) != NULL);
    PE_CHECK(shmalloc_check(-1) == 0);
}

static void pe_frees_everything(void *arg)
{
    (void)arg;
    shmem_free(shmem_malloc(100));
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(debug, blocks_left_allocated_are_reported_with_offsets)
{
    cr_assert(run(2, pe_leaks_two_blocks) == 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAKS_BEGIN), 2, "%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAK), 4, "%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAKS), 2, "%s", out_text[2]);
    assert_said(HEAP_LEAKS_BEGIN, 0, (size_t)2, "s");
    assert_said(HEAP_LEAKS_BEGIN, 1, (size_t)2, "s");
    assert_said(HEAP_LEAK, 0, (size_t)16, (size_t)104, (size_t)112);
    assert_said(HEAP_LEAK, 1, (size_t)16, (size_t)104, (size_t)112);
}

static void pe_leaks_48_bytes(void *arg)
{
    (void)arg;
    PE_CHECK(shmem_malloc(48) != NULL);
}

/* One block, in the singular, with its usable bytes and its bytes with
   the header told apart. */
Test(debug, a_leak_says_whether_the_header_is_counted)
{
    cr_assert(run(1, pe_leaks_48_bytes) == 0);
    assert_said(HEAP_LEAKS_BEGIN, 0, (size_t)1, "");
    assert_said(HEAP_LEAK, 0, (size_t)16, (size_t)56, (size_t)64);
    assert_said(HEAP_LEAKS, 0, (size_t)1, "", (size_t)64, "");
}

Test(debug, a_clean_program_reports_nothing)
{
    cr_assert(run(2, pe_frees_everything) == 0);
    cr_assert(out_text[2][0] == 0, "%s", out_text[2]);
}

/* ---- fill patterns ---- */
static void pe_fill_patterns(void *arg)
{
    unsigned char *p = shmem_malloc(256), *q = shmem_malloc(32), *z;
    size_t i;
    (void)arg;
    for (i = 0; i < 256; i++) PE_CHECK(p[i] == 0xa1);
    shmem_free(p);
    for (i = 16; i < 256; i++) PE_CHECK(p[i] == 0xdf); /* the first 16 bytes hold free-list links */
    z = shmem_calloc(16, 16);
    for (i = 0; i < 256; i++) PE_CHECK(z[i] == 0);
    shmem_free(z);
    q = shmem_realloc(q, 4096);
    for (i = 32; i < 4096; i++) PE_CHECK(q[i] == 0xa1);
    shmem_free(q);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(debug, fresh_and_freed_memory_carry_distinct_fill_bytes)
{
    cr_assert(run(2, pe_fill_patterns) == 0);
}

static void pe_nothing(void *arg) { (void)arg; }

Test(debug, a_bad_shmalloc_debug_value_stops_start_up_with_a_message)
{
    int rc;
    setenv("SHMALLOC_DEBUG", "yes", 1);
    capture_start();
    rc = shmalloc_pthreads_run(2, HEAP, pe_nothing, NULL);
    capture_stop();
    cr_assert(rc != 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "SHMALLOC_DEBUG=\"yes\"") != NULL, "names the variable and value: %s", out_text[2]);
}
