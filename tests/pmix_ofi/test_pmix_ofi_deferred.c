/* test_pmix_ofi_deferred.c - shmemx_free_deferred on the PMIx + libfabric
   transport, PEs as processes under SHMEM_THREAD_MULTIPLE: the deferred
   scenario on 4 PEs (oversubscribed) over shm and tcp;ofi_rxm. */
#include "pmix_ofi_launch.h" /* first: it includes test_support.h */

/* What every run of a deferred scenario shows: it passed on each of the 4
   PEs and left no /dev/shm file. */
static void assert_passed(const run *r, const char *provider, const char *scenario)
{
    char ok[64];
    snprintf(ok, sizeof ok, ": OK %s\n", scenario);
    cr_assert_eq(r->status, 0, "%s: exit status %d after %.1f s:\n%s", provider, r->status, r->seconds, tail(r));
    cr_assert_eq(count(r, ": FAIL"), 0, "failures:\n%s", tail(r));
    cr_assert_eq(count(r, ok), 4, "not every PE passed:\n%s", tail(r));
    cr_assert_eq(r->leftovers, 0, "a clean run left %d /dev/shm files", r->leftovers);
}

/* Each PE releases a thousand blocks from four threads while its main
   thread allocates and frees in a heap that grows from 1 MiB; the scenario
   checks that exactly the blocks every PE released are freed, contents,
   offsets, the heap, and that a drain is one heap round, which the
   transport makes in one AND call (its counters). */
static void check_deferred(const char *provider, int node_barrier)
{
    static run r;
    char prov[64], node[64];
    const char *env[] = {prov, node, "SHMEM_SYMMETRIC_HEAP_SIZE=1M", "SHMALLOC_HEAP_MAX=256M",
                         "SHMALLOC_TEST_WORKER_LEVEL=3", NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(node, sizeof node, "SHMALLOC_PMIX_OFI_NODE_BARRIER=%d", node_barrier);
    launch(&r, 4, "deferred", env);
    assert_passed(&r, provider, "deferred");
    cr_assert(has(&r, "PE 0 of 4: drain of 1 block among"), "%s", tail(&r));
    cr_assert_eq(count(&r, "[DEFER_NO_HEAP] shmalloc: shmemx_free_deferred("), 4,
                 "two releases after shmem_finalize, one message per PE:\n%s", tail(&r));
}

Test(pmix_ofi, deferred_releases_from_threads_shm_4pe_node_barrier, .timeout = TEST_TIMEOUT)
{
    check_deferred("shm", 1);
}
Test(pmix_ofi, deferred_releases_from_threads_tcp_rxm_4pe_by_messages, .timeout = TEST_TIMEOUT)
{
    check_deferred("tcp;ofi_rxm", 0);
}

/* `live` live blocks released on every PE, one in seven on the even PEs
   only: a drain is one AND call of the transport up to 65 536 live blocks
   and one more per 65 536 past that (its counters), and frees the same
   blocks everywhere. */
static void check_wide_drain(const char *provider, int node_barrier, size_t live, int calls)
{
    static run r;
    char prov[64], node[64], wide[64], said[96];
    const char *env[] = {prov, node, wide, "SHMEM_SYMMETRIC_HEAP_SIZE=16M", NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(node, sizeof node, "SHMALLOC_PMIX_OFI_NODE_BARRIER=%d", node_barrier);
    snprintf(wide, sizeof wide, "SHMALLOC_TEST_WIDE_LIVE=%zu", live);
    snprintf(said, sizeof said, " among %zu live: %d AND call%s of the transport", live, calls, calls == 1 ? "" : "s");
    launch(&r, 4, "deferred_wide", env);
    assert_passed(&r, provider, "deferred_wide");
    cr_assert(has(&r, said), "%s", tail(&r));
}

Test(pmix_ofi, a_drain_of_3000_live_blocks_is_one_and_call_shm_4pe_node_barrier, .timeout = TEST_TIMEOUT)
{
    check_wide_drain("shm", 1, 3000, 1);
}
Test(pmix_ofi, a_drain_of_65536_live_blocks_is_one_and_call_shm_4pe_node_barrier, .timeout = TEST_TIMEOUT)
{
    check_wide_drain("shm", 1, 65536, 1);
}
Test(pmix_ofi, a_drain_of_65537_live_blocks_is_two_and_calls_shm_4pe_node_barrier, .timeout = TEST_TIMEOUT)
{
    check_wide_drain("shm", 1, 65537, 2);
}
Test(pmix_ofi, a_drain_of_65536_live_blocks_is_one_and_call_tcp_rxm_4pe_by_messages, .timeout = TEST_TIMEOUT)
{
    check_wide_drain("tcp;ofi_rxm", 0, 65536, 1);
}
Test(pmix_ofi, a_drain_of_65537_live_blocks_is_two_and_calls_tcp_rxm_4pe_by_messages, .timeout = TEST_TIMEOUT)
{
    check_wide_drain("tcp;ofi_rxm", 0, 65537, 2);
}
