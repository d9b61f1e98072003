/* test_pmix_ofi_scenarios.c - the PMIx + libfabric transport's scenarios,
   PEs as processes: every scenario over providers x PE counts x address
   modes, heap growth, the debug reports, huge pages.  pmix_ofi_launch.h
   says how each test launches the worker. */
#include "pmix_ofi_launch.h" /* first: it includes test_support.h */

/* ---- the scenarios, over providers x PE counts x address modes ---------- */
/* Same-address runs synchronise through node memory and copy directly
   into same-node peers' heaps (the defaults on one node), different-address
   runs use messages and libfabric RMA, so both paths are tested with both
   providers.  node_size > 0: SHMALLOC_TEST_NODE_SIZE makes "nodes"
   of that many PEs, for the hierarchical barrier without a cluster (the
   PEs still share one machine, so they still copy directly). */
static void check_nodes(const char *provider, int npes, int any_address, int node_size)
{
    static run r;
    char prov[64], any[64], expect[64], node[64], direct[64], expect_direct[64], copies[64], size[64], barriers[96];
    const char *env[] = {prov, any, expect, node, direct, expect_direct, "SHMEM_SYMMETRIC_HEAP_SIZE=128M",
                         "SHMALLOC_VERBOSE=1", size, NULL};
    int tcp = strstr(provider, "tcp") != NULL;
    snprintf(size, sizeof size, "SHMALLOC_TEST_NODE_SIZE=%d", node_size);
    if (node_size <= 0) env[8] = NULL;
    if (any_address) snprintf(barriers, sizeof barriers, "barriers by messages");
    else if (node_size <= 0) snprintf(barriers, sizeof barriers, "barriers through node memory\n");
    else snprintf(barriers, sizeof barriers, "barriers through node memory on each of %d nodes, messages between "
                  "their leaders\n", (npes + node_size - 1) / node_size);
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(any, sizeof any, "SHMALLOC_PMIX_OFI_ANY_ADDRESS=%d", any_address);
    snprintf(expect, sizeof expect, "SHMALLOC_TEST_EXPECT_ADDRESSES=%s", any_address ? "differ" : "same");
    snprintf(node, sizeof node, "SHMALLOC_PMIX_OFI_NODE_BARRIER=%d", !any_address);
    snprintf(direct, sizeof direct, "SHMALLOC_PMIX_OFI_DIRECT=%d", !any_address);
    snprintf(expect_direct, sizeof expect_direct, "SHMALLOC_TEST_EXPECT_DIRECT=%d", !any_address);
    snprintf(copies, sizeof copies, "direct copies to %d PE%s of this node", any_address ? 0 : npes - 1,
             !any_address && npes == 2 ? "" : "s");
    launch(&r, npes, "all", env);
    cr_assert_eq(r.status, 0, "%s, %d PEs: exit status %d after %.1f s:\n%s", provider, npes, r.status, r.seconds,
                 tail(&r));
    cr_assert_eq(count(&r, "FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK all"), npes, "not every PE passed:\n%s", tail(&r));
    cr_assert(has(&r, any_address ? "heap addresses differ" : "heap addresses same"), "%s", tail(&r));
    cr_assert_eq(count(&r, barriers), npes, "not every PE says \"%s\":\n%s", barriers, tail(&r));
    cr_assert_eq(count(&r, tcp ? "provider tcp;ofi_rxm" : "provider shm,"), npes, "provider:\n%s", tail(&r));
    cr_assert_eq(count(&r, copies), npes, "not \"%s\" on every PE:\n%s", copies, tail(&r));
    if (tcp) /* the network rule: every endpoint on loopback */
        cr_assert_eq(count(&r, "endpoint fi_sockaddr_in://127."), npes, "non-loopback endpoint:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

static void check_all(const char *provider, int npes, int any_address)
{
    check_nodes(provider, npes, any_address, 0);
}

#define MATRIX_TEST(name, provider, npes, any_address) \
    Test(pmix_ofi, name, .timeout = TEST_TIMEOUT) { check_all(provider, npes, any_address); }

MATRIX_TEST(all_scenarios_shm_2pe_same_address, "shm", 2, 0)
MATRIX_TEST(all_scenarios_shm_4pe_same_address, "shm", 4, 0)
MATRIX_TEST(all_scenarios_shm_2pe_different_addresses, "shm", 2, 1)
MATRIX_TEST(all_scenarios_shm_4pe_different_addresses, "shm", 4, 1)
MATRIX_TEST(all_scenarios_tcp_rxm_2pe_same_address, "tcp;ofi_rxm", 2, 0)
MATRIX_TEST(all_scenarios_tcp_rxm_4pe_same_address, "tcp;ofi_rxm", 4, 0)
MATRIX_TEST(all_scenarios_tcp_rxm_2pe_different_addresses, "tcp;ofi_rxm", 2, 1)
MATRIX_TEST(all_scenarios_tcp_rxm_4pe_different_addresses, "tcp;ofi_rxm", 4, 1)

/* Hierarchical barriers on one machine: nodes of 3+1 and of 2+2 PEs. */
Test(pmix_ofi, all_scenarios_shm_4pe_as_nodes_of_3_and_1, .timeout = TEST_TIMEOUT) { check_nodes("shm", 4, 0, 3); }
Test(pmix_ofi, all_scenarios_tcp_rxm_4pe_as_two_nodes_of_2, .timeout = TEST_TIMEOUT)
{
    check_nodes("tcp;ofi_rxm", 4, 0, 2);
}

/* Every scenario, oversubscribed. */
Test(pmix_ofi, all_scenarios_shm_8pe, .timeout = TEST_TIMEOUT) { check_nodes("shm", 8, 0, 0); }
Test(pmix_ofi, all_scenarios_shm_16pe, .timeout = TEST_TIMEOUT) { check_nodes("shm", 16, 0, 0); }
Test(pmix_ofi, all_scenarios_shm_32pe, .timeout = TEST_TIMEOUT) { check_nodes("shm", 32, 0, 0); }
Test(pmix_ofi, all_scenarios_shm_16pe_as_4_nodes_of_4, .timeout = TEST_TIMEOUT) { check_nodes("shm", 16, 0, 4); }

/* ---- same-node puts a peer watches --------------------------------------
   2 PEs pass a round number back and forth 100 000 times by 8-byte puts
   into each other's mapped heap, each clearing its flag once seen: a put
   that stores its word twice brings a cleared round back, and the PE that
   sees it fails (a lost round instead would end in the barrier's timeout). */
Test(pmix_ofi, a_same_node_put_writes_its_word_once_over_100000_pingpong_rounds, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=30", NULL};
    launch(&r, 2, "pingpong", env);
    cr_assert_eq(r.status, 0, "exit status %d after %.1f s:\n%s", r.status, r.seconds, tail(&r));
    cr_assert_eq(count(&r, "FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK pingpong"), 2, "not every PE passed:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

/* ---- a peer's put past a block's end, on either path ---------------------
   Separate metadata: it changes nothing.  Inline: the next block's header
   is overwritten, its free is refused on both PEs, and the heap is whole
   again once the bytes are back (pmix_ofi_worker_overwrite.c). */
static void check_overwrite(const char *metadata, const char *provider, int any_address)
{
    static run r;
    char mode[64], prov[64], any[64], direct[64];
    const char *env[] = {mode, prov, any, direct, "SHMALLOC_TIMEOUT=30", NULL};
    snprintf(mode, sizeof mode, "SHMALLOC_METADATA=%s", metadata);
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(any, sizeof any, "SHMALLOC_PMIX_OFI_ANY_ADDRESS=%d", any_address);
    snprintf(direct, sizeof direct, "SHMALLOC_PMIX_OFI_DIRECT=%d", !any_address);
    launch(&r, 2, "overwrite", env);
    cr_assert_eq(r.status, 0, "%s, %s: exit status %d after %.1f s:\n%s", metadata, provider, r.status, r.seconds,
                 tail(&r));
    cr_assert_eq(count(&r, "FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK overwrite"), 2, "not every PE passed:\n%s", tail(&r));
    /* inline: PE 0 names the free and the realloc of each of the 3 rounds */
    cr_assert_eq(count(&r, "a write past the end of the block before it?"), strcmp(metadata, "inline") ? 0 : 6,
                 "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, in_separate_mode_a_peers_put_past_a_blocks_end_harms_no_later_call_shm_direct,
     .timeout = TEST_TIMEOUT) { check_overwrite("separate", "shm", 0); }
Test(pmix_ofi, in_separate_mode_a_peers_put_past_a_blocks_end_harms_no_later_call_tcp_rxm_rma,
     .timeout = TEST_TIMEOUT) { check_overwrite("separate", "tcp;ofi_rxm", 1); }
Test(pmix_ofi, a_peers_put_past_a_blocks_end_makes_the_next_free_fail_on_every_pe_shm_direct,
     .timeout = TEST_TIMEOUT) { check_overwrite("inline", "shm", 0); }
Test(pmix_ofi, a_peers_put_past_a_blocks_end_makes_the_next_free_fail_on_every_pe_tcp_rxm_rma,
     .timeout = TEST_TIMEOUT) { check_overwrite("inline", "tcp;ofi_rxm", 1); }

/* ---- heap growth: 1 MiB heaps that may grow to 256 MiB ------------------
   Same-address runs map the peers' heaps, regions they grow into included:
   the worker loads a peer's newest region through shmem_ptr. */
static void check_scenario_grows(const char *scenario, const char *provider, int npes, int any_address,
                                 const char *fail_register, int node_size)
{
    static run r;
    char ok[64];
    char prov[64], any[64], fail[64], direct[64], expect_direct[64], size[64];
    const char *env[] = {prov, any, direct, expect_direct, "SHMEM_SYMMETRIC_HEAP_SIZE=1M", "SHMALLOC_HEAP_MAX=256M",
                         "SHMALLOC_TIMEOUT=10", size, NULL, NULL};
    snprintf(size, sizeof size, "SHMALLOC_TEST_NODE_SIZE=%d", node_size);
    if (node_size <= 0) env[7] = NULL;
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(any, sizeof any, "SHMALLOC_PMIX_OFI_ANY_ADDRESS=%d", any_address);
    snprintf(direct, sizeof direct, "SHMALLOC_PMIX_OFI_DIRECT=%d", !any_address);
    snprintf(expect_direct, sizeof expect_direct, "SHMALLOC_TEST_EXPECT_DIRECT=%d", !any_address && npes > 1);
    if (fail_register) {
        snprintf(fail, sizeof fail, "SHMALLOC_TEST_FAIL_REGISTER=%s", fail_register);
        env[env[7] ? 8 : 7] = fail;
    }
    snprintf(ok, sizeof ok, ": OK %s\n", scenario);
    launch(&r, npes, scenario, env);
    cr_assert_eq(r.status, 0, "%s, %d PEs: exit status %d after %.1f s:\n%s", provider, npes, r.status, r.seconds,
                 tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, ok), npes ? npes : 1, "not every PE passed:\n%s", tail(&r));
    if (fail_register)
        cr_assert(has(&r, "[PMIX_TEST_REGISTER_FAILED] ") && has(&r, " on PE 1 (number 1;"), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

static void check_grow(const char *provider, int npes, int any_address, const char *fail_register)
{
    check_scenario_grows("grow", provider, npes, any_address, fail_register, 0);
}

Test(pmix_ofi, heap_grows_far_beyond_its_nominal_size_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_grow("shm", 4, 0, NULL);
}

Test(pmix_ofi, heap_grows_far_beyond_its_nominal_size_tcp_rxm_2pe_different_addresses, .timeout = TEST_TIMEOUT)
{
    check_grow("tcp;ofi_rxm", 2, 1, NULL);
}

/* largest_request's promise (tests/support/largest_request.h) on heaps that grow
   from 64 KiB to 32 MiB: random calls, then blocks of largest_request
   until nothing is free. */
static void check_largest(int npes)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMEM_SYMMETRIC_HEAP_SIZE=64K", "SHMALLOC_HEAP_MAX=32M",
                         "SHMALLOC_TIMEOUT=10", NULL};
    launch(&r, npes, "largest", env);
    cr_assert_eq(r.status, 0, "%d PEs: exit status %d after %.1f s:\n%s", npes, r.status, r.seconds, tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK largest\n"), npes, "not every PE passed:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, largest_request_is_served_to_the_last_byte_shm_2pe, .timeout = TEST_TIMEOUT) { check_largest(2); }
Test(pmix_ofi, largest_request_is_served_to_the_last_byte_shm_4pe, .timeout = TEST_TIMEOUT) { check_largest(4); }

Test(pmix_ofi, heap_grows_in_a_singleton_without_launcher, .timeout = TEST_TIMEOUT) { check_grow("shm", 0, 0, NULL); }

/* PE 1's first growth fails to register: that allocation fails on every
   PE, every heap keeps its size, and the next allocation grows. */
Test(pmix_ofi, failed_growth_registration_fails_the_call_everywhere_then_growth_works, .timeout = TEST_TIMEOUT)
{
    check_grow("shm", 3, 1, "1:1");
}

/* One PE's bad pointer, size or alignment while the others' calls need
   growth (a registration, which exchanges keys in a fence): every PE gets
   the error at once and no heap grows, by node memory and by messages. */
Test(pmix_ofi, a_bad_argument_on_one_pe_fails_every_pes_call_and_grows_no_heap_shm_3pe, .timeout = TEST_TIMEOUT)
{
    check_scenario_grows("bad_grow", "shm", 3, 0, NULL, 0);
}

Test(pmix_ofi, a_bad_argument_on_one_pe_fails_every_pes_call_and_grows_no_heap_tcp_rxm_2pe_different_addresses,
     .timeout = TEST_TIMEOUT)
{
    check_scenario_grows("bad_grow", "tcp;ofi_rxm", 2, 1, NULL, 0);
}

/* Heap growth, oversubscribed. */
Test(pmix_ofi, heap_grows_on_32pe, .timeout = TEST_TIMEOUT) { check_scenario_grows("grow", "shm", 32, 0, NULL, 0); }
Test(pmix_ofi, heap_grows_on_16pe_as_4_nodes_of_4, .timeout = TEST_TIMEOUT)
{
    check_scenario_grows("grow", "shm", 16, 0, NULL, 4);
}

/* Debug mode on 2 PEs: each PE's out-of-memory, mismatch and leak reports
   name that PE (the worker tags every line with the rank that printed
   it), and the mismatch of PE 1's one extra unsynchronised allocation
   names PE 1 for the most calls and PE 0 for the fewest.  (Four calls:
   the worker's scratch array, the failed allocation larger than the
   heap, the extra one and the shmem_malloc that fails.) */
/* Lines rank `rank` prints ("rank R says [ID] ...") that name PE `pe` first. */
static int lines_of(const run *r, int rank, int pe)
{
    char says[32], names[32];
    const char *p = r->out;
    int n = 0;
    snprintf(says, sizeof says, "rank %d says [", rank);
    snprintf(names, sizeof names, "] shmalloc: PE %d:", pe);
    while ((p = strstr(p, says)) != NULL) {
        const char *tag_end = strchr(p, ']');
        if (tag_end && tag_end < p + strcspn(p, "\n") && !strncmp(tag_end, names, strlen(names))) n++;
        p += strlen(says);
    }
    return n;
}

Test(pmix_ofi, reports_name_the_pe_that_prints_them, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_DEBUG=1", "SHMALLOC_VERBOSE=1", NULL};
    char line[128];
    int pe;
    launch(&r, 2, "reports", env);
    cr_assert_eq(r.status, 0, "exit status %d:\n%s", r.status, tail(&r));
    cr_assert_eq(count(&r, ": OK reports"), 2, "%s", tail(&r));
    for (pe = 0; pe < 2; pe++) {
        snprintf(line, sizeof line, "rank %d says [HEAP_OOM] shmalloc: PE %d: ", pe, pe);
        cr_assert_eq(count(&r, line), 1, "no \"%s\" in:\n%s", line, tail(&r));
        snprintf(line, sizeof line, "rank %d says [HEAP_MISMATCH] shmalloc: PE %d: malloc(128 bytes), ", pe, pe);
        cr_assert_eq(count(&r, line), 1, "no \"%s\" in:\n%s", line, tail(&r));
        cr_assert(lines_of(&r, pe, pe) >= 2, "PE %d names itself:\n%s", pe, tail(&r));
        cr_assert_eq(lines_of(&r, pe, 1 - pe), 0, "PE %d speaks for PE %d:\n%s", pe, 1 - pe, tail(&r));
    }
    cr_assert_eq(count(&r, "rank 0 says [HEAP_MISMATCH] shmalloc: PE 0: malloc(128 bytes), its collective call 3, "
                           "differs from PE 1's malloc(128 bytes), its collective call 4: the call numbers\n"),
                 1, "the mismatch names the wrong PE:\n%s", tail(&r));
    cr_assert_eq(count(&r, "rank 1 says [HEAP_MISMATCH] shmalloc: PE 1: malloc(128 bytes), its collective call 4, "
                           "differs from PE 0's malloc(128 bytes), its collective call 3: the call numbers\n"),
                 1, "the mismatch names the wrong PE:\n%s", tail(&r));
    cr_assert_eq(count(&r, "rank 1 says [HEAP_LEAKS_BEGIN] shmalloc: PE 1: 1 block "), 1, "%s", tail(&r));
    cr_assert_eq(count(&r, "[HEAP_LEAKS_BEGIN] "), 1, "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

/* ---- huge pages and the PMIx transport's shared heaps --------------------- */
static long free_2m_pages(void)
{
    long v = -1;
    FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

/* Heaps larger than the free hugetlbfs pool: every PE says it fell back,
   and to what, while puts, gets and shmem_ptr keep working. */
Test(pmix_ofi, huge_pages_beyond_the_pool_fall_back_loudly_on_every_pe, .timeout = TEST_TIMEOUT)
{
    static run r;
    char size[64];
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_HUGE_PAGES=2M", size, "SHMALLOC_VERBOSE=1",
                         "SHMALLOC_TEST_EXPECT_DIRECT=1", NULL};
    long pages = free_2m_pages();
    if (pages < 0) cr_skip_test("this kernel has no 2 MiB hugetlbfs pages");
    snprintf(size, sizeof size, "SHMEM_SYMMETRIC_HEAP_SIZE=%ldM", 2 * (pages + 64));
    launch(&r, 2, "direct", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, ": OK direct"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, "[HUGE_PAGES_FELL_BACK] "), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, "SHMALLOC_HUGE_PAGES=2M asked for hugetlbfs pages"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, "hugetlbfs pages could not be reserved"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, "has 4 KiB pages") + count(&r, "has 2 MiB transparent huge pages"), 2, "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

/* As root: with pages in the pool, each PE's heap is a hugetlbfs memfd
   that its peer maps, and no PE reports a fallback. */
Test(pmix_ofi, reserved_huge_pages_back_shared_heaps_as_root, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *pool = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_HUGE_PAGES=2M", "SHMEM_SYMMETRIC_HEAP_SIZE=32M",
                         "SHMALLOC_VERBOSE=1", "SHMALLOC_TEST_EXPECT_DIRECT=1", NULL};
    long total = -1;
    FILE *f = fopen(pool, "r");
    if (f) {
        if (fscanf(f, "%ld", &total) != 1) total = -1;
        fclose(f);
    }
    if (total < 0 || getuid() != 0 || access(pool, W_OK) != 0) cr_skip_test("needs root and 2 MiB hugetlbfs pages");
    f = fopen(pool, "w");
    cr_assert(f != NULL);
    fprintf(f, "%ld\n", total + 40); /* 2 heaps of 17 pages, and slack */
    fclose(f);
    launch(&r, 2, "direct", env);
    f = fopen(pool, "w");
    if (f) {
        fprintf(f, "%ld\n", total);
        fclose(f);
    }
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, ": OK direct"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, "2 MiB hugetlbfs pages), direct copies"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, "direct copies to 1 PE of this node"), 2, "%s", tail(&r));
    cr_assert(!has(&r, "[HUGE_PAGES_FELL_BACK] "), "%s", tail(&r));
}
