/* pthreads_pes.h - what the tests of the symmetric heap on the pthreads
   transport share (tests/pthreads/test_pthreads_*.c): 1, 2, 4 and 8 PEs as threads
   of the test process, and 64 in one test.

   Criterion's asserts belong to the test's main thread, so PE threads
   record failures (a count and the first message) through PE_CHECK and
   run_pes asserts on them once shmalloc_pthreads_run has returned.
   Include it instead of test_support.h.  Everything is static and marked
   unused: each suite uses a part. */
#ifndef SHMALLOC_PTHREADS_PES_H
#define SHMALLOC_PTHREADS_PES_H

#define TEST_SUPPORT_PES /* the pthreads transport, checks in PE threads */
#include "test_support.h"

#define MAX_PES 64
#define SMALL_HEAP ((size_t)1 << 20)
/* Seconds: a hang fails instead of blocking the run.  One limit for every
   test (with one test's limit longer than the others', LeakSanitizer
   finds a timer of Criterion's leaked), long enough for 64 PEs under
   Valgrind (53 s). */
#define TEST_TIMEOUT 120

/* State the PE threads of one test share; Criterion runs each test in a
   fresh process, run_pes clears it anyway. */
TS_UNUSED static struct {
    void *ptrs[MAX_PES];
    long errors[MAX_PES];
    size_t values[MAX_PES];
    int arrived; /* atomic */
    int calls;   /* atomic: pe_main invocations */
} shared;

TS_UNUSED static void run_pes(int npes, size_t nominal, void (*pe_main)(void *), void *arg)
{
    int rc;
    memset(&shared, 0, sizeof shared);
    capture_start();
    rc = shmalloc_pthreads_run(npes, nominal, pe_main, arg);
    capture_stop();
    cr_assert_eq(rc, 0, "shmalloc_pthreads_run(%d PEs) returned %d", npes, rc);
    assert_no_pe_failed();
}

/* After run_pes: the PEs printed `words` `times` times, as a call that
   fails on purpose reports. */
TS_UNUSED static void expect_reported(const char *words, int times)
{
    cr_assert_eq(count_in(out_text[2], words), (size_t)times, "\"%s\" %d times expected in:\n%s", words, times,
                 out_text[2]);
}

/* After run_pes: every line printed is a report of one PE. */
TS_UNUSED static void expect_only_reports(void)
{
    const char *line;
    for (line = out_text[2]; *line; line = strchr(line, '\n') + 1) {
        cr_assert(strncmp(line, "shmalloc: PE ", 13) == 0, "not a PE's report: %.200s", line);
        cr_assert(strchr(line, '\n') != NULL, "an unfinished line: %s", line);
    }
}

TS_UNUSED static int block_state(const void *p)
{
    return shmalloc_tlsf_validate(shmalloc_heap_tlsf(shmalloc_current()), p);
}

/* Collective: p on every PE is the block shmem_ptr names from every peer. */
TS_UNUSED static void check_symmetric(void *p, int line)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), q;
    shared.ptrs[me] = p;
    shmem_barrier_all();
    for (q = 0; q < npes; q++) {
        void *mapped = p != NULL ? shmem_ptr(p, q) : NULL;
        if (mapped != shared.ptrs[q])
            pe_failed(line, "shmem_ptr(%p, %d) is %p but PE %d got %p", p, q, mapped, q,
                      shared.ptrs[q]);
    }
    shmem_barrier_all(); /* nobody publishes the next pointer while others read */
}
#define CHECK_SYMMETRIC(p) check_symmetric((p), __LINE__)

/* Every heap-changing test ends each PE here. */
TS_UNUSED static void check_heap_empty(int line)
{
    shmalloc_counters c = heap_counters(shmalloc_current());
    if (shmalloc_check(-1) != 0) pe_failed(line, "shmalloc_check(-1) found a corrupted heap");
    if (c.used_blocks != 0) pe_failed(line, "%zu blocks still in use", c.used_blocks);
}
#define CHECK_HEAP_EMPTY() check_heap_empty(__LINE__)

TS_UNUSED static int pe_counts[] = {1, 2, 4, 8};

/* A test run once for each PE count; *npes in its body. */
#define PE_COUNT_TEST(name)                                                              \
    ParameterizedTestParameters(pes, name)                                              \
    {                                                                                   \
        return cr_make_param_array(int, pe_counts, sizeof pe_counts / sizeof pe_counts[0]); \
    }                                                                                   \
    ParameterizedTest(int *npes, pes, name, .timeout = TEST_TIMEOUT)

#endif /* SHMALLOC_PTHREADS_PES_H */
