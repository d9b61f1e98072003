/* test_pmix_ofi_threads.c - the PMIx + libfabric transport's threads, PEs
   as processes: SHMEM_THREAD_MULTIPLE under load, and shmem_init_thread's
   levels.  make test-asan and test-tsan run this suite. */
#include "pmix_ofi_launch.h" /* first: it includes test_support.h */

/* ---- threads ---------------------------------------------------------------
   The threads scenario under SHMEM_THREAD_MULTIPLE: 4 threads per PE put,
   quiet, get and verify while the main thread allocates (growing the heap:
   4M nominal, each round allocates 1-3 MiB and keeps 6), barriers and
   frees.  direct 1: same-node copies and the node barrier; 0: every put
   and get by libfabric RMA and barriers by messages, so the threads share
   the completion queue and the barrier's inbox.  space 1: all of it in a
   space of every PE (4 MiB growing to 256 MiB), its addresses found from
   the threads' puts and gets while the main thread grows it. */
static void check_threads(const char *provider, int direct, int space)
{
    static run r;
    char prov[64], dir[64], node[64], copies[128], in_space[64];
    const char *env[] = {prov, dir, node, in_space, "SHMEM_SYMMETRIC_HEAP_SIZE=4M", "SHMALLOC_HEAP_MAX=256M",
                         "SHMALLOC_VERBOSE=1", NULL};
    snprintf(in_space, sizeof in_space, "SHMALLOC_TEST_THREADS_SPACE=%d", space);
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(dir, sizeof dir, "SHMALLOC_PMIX_OFI_DIRECT=%d", direct);
    snprintf(node, sizeof node, "SHMALLOC_PMIX_OFI_NODE_BARRIER=%d", direct);
    snprintf(copies, sizeof copies, "direct copies to %d PE%s of this node, barriers %s", direct,
             direct == 1 ? "" : "s", direct ? "through node memory" : "by messages");
    launch(&r, 2, "threads", env);
    cr_assert_eq(r.status, 0, "%s: exit status %d after %.1f s:\n%s", provider, r.status, r.seconds, tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, "thread level 3 provided 3 query 3"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, copies), 2, "not \"%s\" on every PE:\n%s", copies, tail(&r));
    cr_assert_eq(count(&r, ": OK threads"), 2, "not every PE passed:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, threads_multiple_shm_2pe_direct_copies, .timeout = TEST_TIMEOUT) { check_threads("shm", 1, 0); }
Test(pmix_ofi, threads_multiple_shm_2pe_libfabric_rma, .timeout = TEST_TIMEOUT) { check_threads("shm", 0, 0); }
Test(pmix_ofi, threads_multiple_tcp_rxm_2pe_libfabric_rma, .timeout = TEST_TIMEOUT)
{
    check_threads("tcp;ofi_rxm", 0, 0);
}
Test(pmix_ofi, threads_multiple_in_a_space_shm_2pe_direct_copies, .timeout = TEST_TIMEOUT)
{
    check_threads("shm", 1, 1);
}
Test(pmix_ofi, threads_multiple_in_a_space_tcp_rxm_2pe_libfabric_rma, .timeout = TEST_TIMEOUT)
{
    check_threads("tcp;ofi_rxm", 0, 1);
}

/* shmem_init_thread provides each level asked for, and shmem_query_thread
   reports it; 2 PEs, then one PE without a launcher. */
static void check_level(int npes, int level)
{
    static run r;
    char lvl[64], want[96];
    const char *env[] = {"FI_PROVIDER=shm", lvl, NULL};
    snprintf(lvl, sizeof lvl, "SHMALLOC_TEST_WORKER_LEVEL=%d", level);
    snprintf(want, sizeof want, "thread level %d provided %d query %d", level, level, level);
    launch(&r, npes, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, want), npes ? npes : 1, "not \"%s\" on every PE:\n%s", want, tail(&r));
    cr_assert_eq(count(&r, ": OK init"), npes ? npes : 1, "%s", tail(&r));
}

Test(pmix_ofi, init_thread_provides_each_level_asked_for, .timeout = TEST_TIMEOUT)
{
    int level;
    for (level = 0; level <= 3; level++) check_level(2, level);
    for (level = 0; level <= 3; level++) check_level(0, level);
}

/* A level that is not one of the four: -1, a message naming the levels,
   *provided untouched and nothing started (shmem_my_pe is -1). */
Test(pmix_ofi, init_thread_refuses_a_bad_level_clearly, .timeout = TEST_TIMEOUT)
{
    static run r;
    static const char *const levels[] = {"4", "-1", "1000"};
    char lvl[64], want[320];
    const char *env[] = {"FI_PROVIDER=shm", lvl, NULL};
    size_t i;
    for (i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        snprintf(lvl, sizeof lvl, "SHMALLOC_TEST_WORKER_LEVEL=%s", levels[i]);
        launch(&r, 2, "init", env);
        cr_assert_neq(r.status, 0, "%s", tail(&r));
        snprintf(want, sizeof want, "shmalloc: shmem_init_thread: %s is not a thread level (SHMEM_THREAD_SINGLE 0, "
                 "SHMEM_THREAD_FUNNELED 1, SHMEM_THREAD_SERIALIZED 2, SHMEM_THREAD_MULTIPLE 3); nothing was "
                 "initialised", levels[i]);
        cr_assert(has(&r, want), "no \"%s\":\n%s", want, tail(&r));
        snprintf(want, sizeof want, "thread level %s refused (provided -99, shmem_my_pe -1)", levels[i]);
        cr_assert(has(&r, want), "no \"%s\":\n%s", want, tail(&r));
        cr_assert(!has(&r, "OK init"), "%s", tail(&r));
    }
}
