/* test_fork.c - the symmetric heap on the fork transport
   (tests/fork/transport_fork/, README.md's "Adding a transport"): PEs are
   processes, so each check that fails ends its PE with a message, and the
   test asserts that shmalloc_fork_run saw every PE end with status 0. */
#include "fork_pes.h"

#include <time.h>
#include <unistd.h>

/* Collective: p's offset from the heap's base is the same on every PE,
   as each PE reads it from every peer (p is symmetric, so a slot of it
   holds the offset). */
static void check_same_offset(size_t *slots, const void *p)
{
    int q, npes = shmem_n_pes();
    size_t mine = (size_t)((const char *)p - (const char *)shmalloc_heap_base(shmalloc_current())), theirs;
    slots[0] = mine;
    shmem_barrier_all();
    for (q = 0; q < npes; q++) {
        shmem_getmem(&theirs, slots, sizeof theirs, q);
        if (theirs != mine) pe_fail(__LINE__, "offset %zu here, %zu on PE %d", mine, theirs, q);
    }
    shmem_barrier_all(); /* nobody overwrites a slot a peer still reads */
}

/* Each PE fills its block with its own byte, puts it into its right
   neighbour's and finds its left neighbour's bytes in its own. */
static void check_ring(unsigned char *block, size_t bytes)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    unsigned char *local = (unsigned char *)malloc(bytes);
    size_t i;
    FORK_CHECK(local != NULL);
    memset(local, 0x40 + me, bytes);
    shmem_putmem(block, local, bytes, (me + 1) % npes);
    shmem_barrier_all();
    for (i = 0; i < bytes; i++)
        if (block[i] != 0x40 + (me + npes - 1) % npes) pe_fail(__LINE__, "byte %zu is %#x", i, block[i]);
    shmem_barrier_all(); /* every PE has read before the next put */
    free(local);
}

static void pe_collective_calls(void *arg)
{
    size_t *slots = (size_t *)shmem_malloc(sizeof(size_t));
    unsigned char *a = (unsigned char *)shmem_malloc(1000), *b = (unsigned char *)shmem_calloc(50, 64);
    unsigned char *c = (unsigned char *)shmem_align(4096, 3000);
    size_t i;
    (void)arg;
    FORK_CHECK(slots != NULL && a != NULL && b != NULL && c != NULL);
    for (i = 0; i < 50 * 64; i++) FORK_CHECK(b[i] == 0);
    FORK_CHECK(((uintptr_t)c & 4095) == 0);
    check_same_offset(slots, a);
    check_same_offset(slots, b);
    check_same_offset(slots, c);
    check_ring(a, 1000);
    shmem_free(b);
    a = (unsigned char *)shmem_realloc(a, 20000); /* moves past c: contents kept */
    FORK_CHECK(a != NULL);
    for (i = 0; i < 1000; i++) FORK_CHECK(a[i] == 0x40 + (shmem_my_pe() + shmem_n_pes() - 1) % shmem_n_pes());
    check_same_offset(slots, a);
    check_ring(a, 20000);
    shmem_free(c);
    shmem_free(a);
    shmem_free(slots);
    FORK_CHECK(shmalloc_check(0) == 0);
}

ParameterizedTestParameters(fork, collective_calls_agree_on_every_pe)
{
    static int npes[] = {2, 3, 4};
    return cr_make_param_array(int, npes, sizeof npes / sizeof npes[0]);
}

ParameterizedTest(int *npes, fork, collective_calls_agree_on_every_pe, .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(*npes, SMALL_HEAP, pe_collective_calls, NULL), 0);
}

/* The all-reduce across processes: a heap that cannot serve a request
   grows on every PE alike (SHMALLOC_HEAP_MAX). */
static void pe_grow(void *arg)
{
    size_t *slots = (size_t *)shmem_malloc(sizeof(size_t));
    unsigned char *big = (unsigned char *)shmem_malloc(4 * SMALL_HEAP);
    (void)arg;
    FORK_CHECK(slots != NULL && big != NULL);
    check_same_offset(slots, big);
    check_ring(big, 4 * SMALL_HEAP);
    shmem_free(big);
    shmem_free(slots);
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork, a_heap_grows_on_every_pe_alike, .timeout = TEST_TIMEOUT)
{
    setenv("SHMALLOC_HEAP_MAX", "64M", 1);
    cr_assert_eq(shmalloc_fork_run(3, SMALL_HEAP, pe_grow, NULL), 0);
}

/* The all-reduce across processes: a call with a different size on each
   PE fails on every PE, and the heaps stay as they were. */
static void pe_mismatched_sizes(void *arg)
{
    void *p = shmem_malloc(64 + (size_t)shmem_my_pe());
    (void)arg;
    FORK_CHECK(p == NULL && malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    p = shmem_malloc(64);
    FORK_CHECK(p != NULL);
    shmem_free(p);
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork, a_call_with_different_sizes_fails_on_every_pe, .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(3, SMALL_HEAP, pe_mismatched_sizes, NULL), 0);
}

/* A transport built apart from shmalloc speaks through its own table
   (tests/fork/transport_fork/messages.h): its IDs are named, and follow the
   core's. */
Test(fork, a_bad_run_is_said_by_the_transports_own_message, .timeout = TEST_TIMEOUT)
{
    capture_start();
    cr_assert_neq(shmalloc_fork_run(0, SMALL_HEAP, pe_mismatched_sizes, NULL), 0);
    cr_assert_neq(shmalloc_fork_run(2, SMALL_HEAP, NULL, NULL), 0);
    capture_stop();
    cr_assert_eq(out_nids, 2, "%s", out_text[2]);
    assert_said(FORK_BAD_ARGS, "shmalloc_fork_run", 0, SHMALLOC_FORK_MAX_PES, "given");
    assert_said(FORK_BAD_ARGS, "shmalloc_fork_run", 2, SHMALLOC_FORK_MAX_PES, "NULL");
    cr_assert_eq(out_ids[0], out_ids[1]);
    cr_assert(out_ids[0] >= SHMALLOC_MSG_COUNT, "ID %d is the core's", out_ids[0]);
    assert_named(out_ids[0], "FORK_BAD_ARGS");
}

/* The checks can fail: a PE that fails one is named, and the others,
   waiting for it in a barrier, are ended rather than left to time out. */
static void pe_one_fails(void *arg)
{
    (void)arg;
    FORK_CHECK(shmem_my_pe() != 1);
    shmem_barrier_all();
}

Test(fork, a_failing_pe_fails_the_run_naming_it, .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    char text[4096];
    time_t start = time(NULL);
    setenv("SHMALLOC_TIMEOUT", "100", 1);
    cr_assert_eq(shmalloc_fork_run(3, SMALL_HEAP, pe_one_fails, NULL), 1);
    cr_assert(time(NULL) - start < 50, "the others waited for the barrier's deadline");
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "PE 1: tests/fork/test_fork.c:") && strstr(text, "shmalloc_fork_run: PE 1 ended with status 1"),
              "stderr was: %s", text);
}

/* A PE that skips a barrier leaves the others waiting: each gives up at
   SHMALLOC_TIMEOUT, naming it. */
static void pe_skips_a_barrier(void *arg)
{
    (void)arg;
    if (shmem_my_pe() == 1) sleep(30);
    shmem_barrier_all();
}

Test(fork, a_pe_that_skips_a_barrier_is_named_at_the_timeout, .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    char text[4096];
    setenv("SHMALLOC_TIMEOUT", "1", 1);
    cr_assert_eq(shmalloc_fork_run(2, SMALL_HEAP, pe_skips_a_barrier, NULL), 1);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "shmalloc: PE 0 waited 1 s in barrier ") && strstr(text, " for PE 1 "),
              "stderr was: %s", text);
}
