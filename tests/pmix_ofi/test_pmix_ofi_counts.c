/* test_pmix_ofi_counts.c - the PMIx + libfabric transport's cost model, PEs
   as processes: each collective call's counted slot reads, lines,
   messages and bytes, on up to 128 PEs. */
#include "pmix_ofi_launch.h" /* first: it includes test_support.h */

/* ---- scale: up to 128 PEs on one node, 16 as 4 "nodes" of 4 --------------
   The counts scenario checks every PE's slot reads, lines and messages per
   call against the cost model; the test checks the figures PE 0 prints
   (ceil(log2 PEs) rounds, by hand) and that every PE passed. */
static void check_counts(int npes, int node_size, const char *provider, int flat, const char *pe0)
{
    static run r;
    char prov[64], size[64];
    const char *env[] = {prov, flat ? "SHMALLOC_PMIX_OFI_NODE_BARRIER=0" : "SHMALLOC_PMIX_OFI_NODE_BARRIER=1",
                         size, NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(size, sizeof size, "SHMALLOC_TEST_NODE_SIZE=%d", node_size);
    if (node_size <= 0) env[2] = NULL;
    launch(&r, npes, "counts", env);
    cr_assert_eq(r.status, 0, "%d PEs: exit status %d after %.1f s:\n%s", npes, r.status, r.seconds, tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK counts\n"), npes, "not every PE passed:\n%s", tail(&r));
    cr_assert_eq(count(&r, "per barrier: "), npes, "%s", tail(&r));
    cr_assert(has(&r, pe0), "PE 0 does not print \"%s\":\n%s", pe0, tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

#define COUNTS_TEST(name, npes, node_size, provider, flat, pe0) \
    Test(pmix_ofi, name, .timeout = TEST_TIMEOUT) { check_counts(npes, node_size, provider, flat, pe0); }

COUNTS_TEST(counts_match_the_model_2pe, 2, 0, "shm", 0, "PE 0 of 2: per barrier: 1 slot reads, 1 lines, 0 messages")
COUNTS_TEST(counts_match_the_model_3pe, 3, 0, "shm", 0, "PE 0 of 3: per barrier: 2 slot reads, 2 lines, 0 messages")
COUNTS_TEST(counts_match_the_model_8pe, 8, 0, "shm", 0,
            "PE 0 of 8: per shmem_malloc or shmem_free: 3 slot reads, 6 lines, 0 messages, 0 bytes")
COUNTS_TEST(counts_match_the_model_16pe, 16, 0, "shm", 0, "PE 0 of 16: per barrier: 4 slot reads, 4 lines")
COUNTS_TEST(counts_match_the_model_32pe, 32, 0, "shm", 0,
            "PE 0 of 32: per shmem_malloc or shmem_free: 5 slot reads, 10 lines, 0 messages, 0 bytes")
COUNTS_TEST(counts_match_the_model_64pe, 64, 0, "shm", 0, "PE 0 of 64: per barrier: 6 slot reads, 6 lines, 0 messages")
COUNTS_TEST(counts_match_the_model_128pe, 128, 0, "shm", 0,
            "PE 0 of 128: per shmem_malloc or shmem_free: 7 slot reads, 14 lines, 0 messages, 0 bytes")
COUNTS_TEST(counts_match_the_model_16pe_as_4_nodes_of_4, 16, 4, "shm", 0,
            "PE 0 of 16: per shmem_malloc or shmem_free: 2 slot reads, 4 lines, 2 messages, 224 bytes")
COUNTS_TEST(counts_match_the_model_8pe_as_nodes_of_3_3_2, 8, 3, "shm", 0,
            "PE 0 of 8: per barrier: 2 slot reads, 2 lines, 2 messages, 32 bytes")
COUNTS_TEST(counts_match_the_model_5pe_each_alone, 5, 1, "shm", 0,
            "PE 0 of 5: per barrier: 0 slot reads, 0 lines, 3 messages, 48 bytes")
COUNTS_TEST(counts_match_the_model_8pe_by_messages_tcp_rxm, 8, 0, "tcp;ofi_rxm", 1,
            "PE 0 of 8: per shmem_malloc or shmem_free: 0 slot reads, 0 lines, 3 messages, 336 bytes")
