/* test_pmix_ofi.c - the PMIx + libfabric transport, PEs as processes.

   The tests build nothing: each one launches the worker program
   (tests/pmix_ofi_worker.c, built to ./build/pmix_ofi_worker, or the path
   in SHMALLOC_TEST_WORKER) under "timeout 60 mpirun" or alone, captures its
   output and checks the exit status and what it printed.

   Every run keeps libfabric and Open MPI on loopback: FI_TCP_IFACE=lo (and
   the other *_IFACE variables), OMPI_MCA_oob_tcp_if_include=lo, and an
   explicit FI_PROVIDER except in the test of the default.  With
   SHMALLOC_TEST_NETNS=1 each launch also runs in a network namespace that
   has only lo (unshare -n, needs root).

   The files a PE's start-up makes in /dev/shm carry its PID: the shm
   provider's endpoint files (PID:N:N) and the node segment
   (shmalloc-PID-...).  After every run, such files that were not there
   before it and whose process has ended are counted as the run's
   leftovers and removed; every test asserts there were none. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* popen, pclose */
#endif
#include "criterion_shim.h" /* Criterion, or its stand-in under TSan */

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCH_TIMEOUT 60 /* seconds, for timeout(1) around every launch */
#define TEST_TIMEOUT 150  /* seconds, Criterion's own limit per test */
#define DEATH_LIMIT 20.0  /* seconds a job may take to end after a PE died */
#define OUTPUT_MAX 200000
#define SHOW_TAIL 2500    /* bytes of output quoted in a failure */

typedef struct run {
    int status;           /* exit status, or 128 + signal */
    double seconds;
    char out[OUTPUT_MAX]; /* stdout and stderr of every PE and of mpirun */
    size_t len;
    int leftovers;        /* /dev/shm files this run's PEs left */
} run;

static const char *worker(void)
{
    const char *w = getenv("SHMALLOC_TEST_WORKER");
    return w && *w ? w : "./build/pmix_ofi_worker";
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The end of the output, for failure messages. */
static const char *tail(const run *r)
{
    return r->len > SHOW_TAIL ? r->out + r->len - SHOW_TAIL : r->out;
}

static int count(const run *r, const char *needle)
{
    const char *p = r->out;
    int n = 0;
    size_t len = strlen(needle);
    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += len;
    }
    return n;
}

static int has(const run *r, const char *needle) { return strstr(r->out, needle) != NULL; }

static void append(char *cmd, size_t cap, const char *text)
{
    size_t n = strlen(cmd);
    cr_assert(n + strlen(text) < cap, "command line too long");
    memcpy(cmd + n, text, strlen(text) + 1);
}

/* The PID a start-up file's name carries (PID:N:N, shmalloc-PID-...), or 0. */
static long creator_of(const char *name)
{
    const char *p = strncmp(name, "shmalloc-", 9) == 0 ? name + 9 : name;
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || pid <= 0) return 0;
    return (p == name ? *end == ':' : *end == '-') ? pid : 0;
}

/* The names in /dev/shm, each between newlines (malloc'd). */
static char *shm_names(void)
{
    size_t cap = 4096, n = 1;
    char *all = (char *)malloc(cap);
    DIR *dir = opendir("/dev/shm");
    struct dirent *e;
    cr_assert(all != NULL);
    all[0] = '\n';
    while (dir && (e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        if (n + len + 2 > cap) cr_assert((all = (char *)realloc(all, cap *= 2)) != NULL);
        memcpy(all + n, e->d_name, len);
        n += len;
        all[n++] = '\n';
    }
    all[n] = '\0';
    if (dir) closedir(dir);
    return all;
}

/* Removes the start-up files that appeared since `before` and whose
   process has ended; returns how many there were. */
static int remove_leftovers(const char *before)
{
    char *after = shm_names(), *name = after + 1, *nl, key[300], path[300];
    int removed = 0;
    for (; (nl = strchr(name, '\n')) != NULL; name = nl + 1) {
        long pid;
        *nl = '\0';
        snprintf(key, sizeof key, "\n%s\n", name);
        pid = creator_of(name);
        if (!pid || strstr(before, key) || kill((pid_t)pid, 0) == 0) continue;
        snprintf(path, sizeof path, "/dev/shm/%s", name);
        removed += unlink(path) == 0;
    }
    free(after);
    return removed;
}

/* Launches the worker with scenario on npes PEs (0: alone, no launcher),
   with env ("NAME=value" strings, NULL-terminated) on top of the loopback
   settings.  FI_PROVIDER is unset unless env sets it.  outer and inner,
   when not NULL, are shell commands that end by running their arguments:
   outer around the whole launch, inner around each PE. */
static void launch_in(run *r, int npes, const char *scenario, const char *const *env, const char *outer,
                      const char *inner)
{
    static const char *const loopback[] = {
        "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_oob_tcp_if_include=lo",
        "FI_TCP_IFACE=lo", "FI_SOCKETS_IFACE=lo", "FI_UDP_IFACE=lo",
        "IPATH_NO_BACKTRACE=1", /* else libinfinipath (via libfabric) drops *.btr files on a crash */
        NULL};
    const char *netns = getenv("SHMALLOC_TEST_NETNS");
    char cmd[4096] = "", word[512], *before;
    const char *const *e;
    FILE *pipe;
    size_t n;
    int status;
    double start;

    if (netns && strcmp(netns, "1") == 0) append(cmd, sizeof cmd, "unshare -n sh -c 'ip link set lo up && exec \"$0\" \"$@\"' ");
    if (outer) {
        append(cmd, sizeof cmd, outer);
        append(cmd, sizeof cmd, " ");
    }
    append(cmd, sizeof cmd, "env -u FI_PROVIDER");
    for (e = loopback; *e; e++) {
        snprintf(word, sizeof word, " %s", *e);
        append(cmd, sizeof cmd, word);
    }
    for (e = env; e && *e; e++) { /* values may hold ';': quote them */
        const char *eq = strchr(*e, '=');
        cr_assert(eq && !strchr(eq, '\''), "bad environment entry %s", *e);
        snprintf(word, sizeof word, " %.*s'%s'", (int)(eq - *e + 1), *e, eq + 1);
        append(cmd, sizeof cmd, word);
    }
    snprintf(word, sizeof word, " timeout -k 5 %d", LAUNCH_TIMEOUT);
    append(cmd, sizeof cmd, word);
    if (npes > 0) {
        snprintf(word, sizeof word, " mpirun --allow-run-as-root --oversubscribe -np %d -x FI_TCP_IFACE -x IPATH_NO_BACKTRACE", npes);
        append(cmd, sizeof cmd, word);
        for (e = env; e && *e; e++) {
            snprintf(word, sizeof word, " -x %.*s", (int)(strchr(*e, '=') - *e), *e);
            append(cmd, sizeof cmd, word);
        }
    }
    if (inner) {
        append(cmd, sizeof cmd, " ");
        append(cmd, sizeof cmd, inner);
    }
    snprintf(word, sizeof word, " %s %s 2>&1 </dev/null", worker(), scenario);
    append(cmd, sizeof cmd, word);

    memset(r, 0, sizeof *r);
    before = shm_names();
    start = now();
    pipe = popen(cmd, "r");
    cr_assert(pipe != NULL, "popen failed: %s", cmd);
    while ((n = fread(r->out + r->len, 1, sizeof r->out - 1 - r->len, pipe)) > 0) r->len += n;
    while (fread(word, 1, sizeof word, pipe) > 0) { /* drain what does not fit */ }
    status = pclose(pipe);
    r->seconds = now() - start;
    r->out[r->len] = '\0';
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r->leftovers = remove_leftovers(before);
    free(before);
    cr_assert(r->status != 127 && !has(r, "unable to launch the specified application"),
              "could not run %s (build it, or set SHMALLOC_TEST_WORKER): %s", worker(), tail(r));
    cr_assert(r->status != 124, "%s on %d PEs did not end within %d s:\n%s", scenario, npes, LAUNCH_TIMEOUT,
              tail(r));
}

static void launch(run *r, int npes, const char *scenario, const char *const *env)
{
    launch_in(r, npes, scenario, env, NULL, NULL);
}

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
    snprintf(copies, sizeof copies, "direct copies to %d PEs of this node", any_address ? 0 : npes - 1);
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

/* ---- start-up ---------------------------------------------------------- */
Test(pmix_ofi, singleton_without_launcher_runs_all_scenarios_as_one_pe_silently, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"SHMEM_SYMMETRIC_HEAP_SIZE=128M", NULL};
    launch(&r, 0, "all", env);
    cr_assert_eq(r.status, 0, "exit status %d:\n%s", r.status, tail(&r));
    cr_assert(has(&r, "PE 0 of 1: OK all"), "%s", tail(&r));
    cr_assert_eq(count(&r, "FAIL"), 0, "%s", tail(&r));
    /* the realloc scenario's deliberate bad pointer is the heap's one report */
    cr_assert_eq(count(&r, "shmalloc: "), 2, "a note without SHMALLOC_VERBOSE:\n%s", tail(&r));
    cr_assert(has(&r, "shmalloc: PE 0: realloc(") && has(&r, ", outside the heap): pointer is not in the symmetric heap"),
              "%s", tail(&r));
    cr_assert(has(&r, "shmalloc: PE 0: further bad arguments on this heap are not reported"), "%s", tail(&r));
}

/* SHMEM_VERSION: PE 0 alone prints the version, once per job. */
Test(pmix_ofi, shmem_version_is_printed_once_by_pe_0, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMEM_VERSION=1", NULL};
    launch(&r, 2, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, ": OpenSHMEM 1.5 symmetric heap\n"), 1, "%s", tail(&r));
}

Test(pmix_ofi, singleton_notes_the_missing_launcher_when_verbose, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 0, "init", env);
    cr_assert_eq(r.status, 0, "exit status %d:\n%s", r.status, tail(&r));
    cr_assert(has(&r, "no PMIx server reachable"), "%s", tail(&r));
    cr_assert(has(&r, "PE 0 of 1: OK init"), "%s", tail(&r));
}

Test(pmix_ofi, default_provider_on_one_node_is_shm, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 2, "init", env);
    cr_assert_eq(r.status, 0, "exit status %d:\n%s", r.status, tail(&r));
    cr_assert_eq(count(&r, "provider shm,"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, ": OK init"), 2, "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

/* ---- bad settings: every PE ends with status 1 and says why ------------- */
static void check_refused(const char *setting, const char *message)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", setting, NULL};
    launch(&r, 2, "init", env);
    cr_assert_neq(r.status, 0, "%s was accepted:\n%s", setting, tail(&r));
    cr_assert(has(&r, message), "no \"%s\" in:\n%s", message, tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
    cr_assert(!has(&r, ": OK"), "%s", tail(&r));
}

Test(pmix_ofi, nonexistent_provider_names_the_provider, .timeout = TEST_TIMEOUT)
{
    check_refused("FI_PROVIDER=nonexistent", "shmalloc: no libfabric provider matches FI_PROVIDER=nonexistent");
}

Test(pmix_ofi, bad_heap_size_names_the_variable, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMEM_SYMMETRIC_HEAP_SIZE=abc", "shmalloc: SHMEM_SYMMETRIC_HEAP_SIZE=\"abc\" is not a heap size");
}

Test(pmix_ofi, bad_barrier_timeout_names_the_variable, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMALLOC_BARRIER_TIMEOUT=abc", "shmalloc: SHMALLOC_BARRIER_TIMEOUT=\"abc\" is not a timeout");
}

Test(pmix_ofi, bad_any_address_value_is_refused, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMALLOC_PMIX_OFI_ANY_ADDRESS=yes", "shmalloc: SHMALLOC_PMIX_OFI_ANY_ADDRESS=\"yes\" is not 0 or 1");
}

Test(pmix_ofi, bad_node_barrier_value_is_refused, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMALLOC_PMIX_OFI_NODE_BARRIER=2", "shmalloc: SHMALLOC_PMIX_OFI_NODE_BARRIER=\"2\" is not 0 or 1");
}

Test(pmix_ofi, bad_direct_value_is_refused, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMALLOC_PMIX_OFI_DIRECT=yes", "shmalloc: SHMALLOC_PMIX_OFI_DIRECT=\"yes\" is not 0 or 1");
}

Test(pmix_ofi, bad_huge_pages_value_is_refused, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMALLOC_HUGE_PAGES=3M", "shmalloc: SHMALLOC_HUGE_PAGES=\"3M\" is not auto, off or a huge page size");
}

Test(pmix_ofi, bad_test_node_size_is_refused, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMALLOC_TEST_NODE_SIZE=0",
                  "shmalloc: SHMALLOC_TEST_NODE_SIZE=\"0\" is not a number of PEs");
}

Test(pmix_ofi, bad_heap_max_names_the_variable, .timeout = TEST_TIMEOUT)
{
    check_refused("SHMALLOC_HEAP_MAX=lots", "shmalloc: SHMALLOC_HEAP_MAX=\"lots\" is not a heap size");
}

/* ---- heap growth: 1 MiB heaps that may grow to 256 MiB ------------------
   Same-address runs map the peers' heaps, pieces they grow into included:
   the worker loads a peer's newest piece through shmem_ptr. */
static void check_scenario_grows(const char *scenario, const char *provider, int npes, int any_address,
                                 const char *fail_register, int node_size)
{
    static run r;
    char ok[64];
    char prov[64], any[64], fail[64], direct[64], expect_direct[64], size[64];
    const char *env[] = {prov, any, direct, expect_direct, "SHMEM_SYMMETRIC_HEAP_SIZE=1M", "SHMALLOC_HEAP_MAX=256M",
                         "SHMALLOC_BARRIER_TIMEOUT=10", size, NULL, NULL};
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
        cr_assert(has(&r, "registration of the heap made to fail on PE 1 (number 1;"), "%s", tail(&r));
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

/* An address-space limit makes the heap unmappable.  ASan reserves
   terabytes of shadow memory, so ulimit -v cannot work under it. */
Test(pmix_ofi, unmappable_heap_names_size_and_variable, .timeout = TEST_TIMEOUT)
{
    static run r;
    char cmd[600];
    FILE *pipe;
    size_t n;
    int status;
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("ulimit -v and AddressSanitizer do not mix");
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
    cr_skip_test("ulimit -v and AddressSanitizer do not mix");
#  endif
#endif
    snprintf(cmd, sizeof cmd, "sh -c 'ulimit -v 4000000 && IPATH_NO_BACKTRACE=1 SHMEM_SYMMETRIC_HEAP_SIZE=64G exec timeout 60 %s init' 2>&1",
             worker());
    memset(&r, 0, sizeof r);
    pipe = popen(cmd, "r");
    cr_assert(pipe != NULL);
    while ((n = fread(r.out + r.len, 1, sizeof r.out - 1 - r.len, pipe)) > 0) r.len += n;
    status = pclose(pipe);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d:\n%s", status, r.out);
    cr_assert(has(&r, "shmalloc: cannot map ") && has(&r, "SHMEM_SYMMETRIC_HEAP_SIZE=64G asks for 68719476736 bytes"),
              "%s", r.out);
}

/* The open-file limit of PE pe alone (ulimit -n), around each PE. */
static const char *fd_limit_on(char *buf, size_t cap, int pe, int limit)
{
    snprintf(buf, cap, "sh -c 'if [ \"$PMIX_RANK\" = %d ]; then ulimit -n %d || exit 9; fi; exec \"$0\" \"$@\"'",
             pe, limit);
    return buf;
}

/* Too few file descriptors for the heap's memfd: the message says to raise
   the limit, not to ask for less memory; raised, the job runs. */
Test(pmix_ofi, too_few_open_files_for_the_heap_says_raise_ulimit_n, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", NULL};
    char inner[200];
    launch_in(&r, 2, "init", env, NULL, fd_limit_on(inner, sizeof inner, 1, 8));
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "shmalloc: cannot map ") && has(&r, "Too many open files; raise this process's limit on "
              "open files (ulimit -n, now 8)"), "%s", tail(&r));
    cr_assert(!has(&r, "ask for less"), "the advice is about size:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
    launch_in(&r, 2, "init", env, NULL, fd_limit_on(inner, sizeof inner, 1, 64));
    cr_assert_eq(r.status, 0, "the raised limit did not help:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK init"), 2, "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

/* ---- a full /dev/shm ------------------------------------------------------
   The launch runs in a mount namespace (unshare -m, root) whose /dev/shm
   is a tmpfs of `size`, filled to the brim when full. */
static const char *dev_shm_of(char *buf, size_t cap, const char *size, int full)
{
    snprintf(buf, cap, "unshare -m sh -c 'mount -t tmpfs -o size=%s tmpfs /dev/shm && %s; exec \"$0\" \"$@\"'",
             size, full ? "{ head -c 1G /dev/zero >/dev/shm/fill 2>/dev/null; true; }" : "true");
    return buf;
}

static int can_unshare_mounts(void)
{
    return getuid() == 0 && system("unshare -m true 2>/dev/null") == 0;
}

/* tcp;ofi_rxm: the node barrier's segment cannot be reserved, so every PE
   uses messages, said once, and the job runs (it died of SIGBUS). */
Test(pmix_ofi, a_full_dev_shm_makes_barriers_go_by_messages_said_once, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=tcp;ofi_rxm", "SHMEM_SYMMETRIC_HEAP_SIZE=128M", "SHMALLOC_VERBOSE=1",
                         "SHMALLOC_TEST_EXPECT_ADDRESSES=same", NULL};
    char outer[300];
    if (!can_unshare_mounts()) cr_skip_test("needs root and unshare -m");
    launch_in(&r, 4, "all", env, dev_shm_of(outer, sizeof outer, "1M", 1), NULL);
    cr_assert_eq(r.status, 0, "exit status %d:\n%s", r.status, tail(&r));
    cr_assert_eq(count(&r, ": OK all"), 4, "%s", tail(&r));
    cr_assert_eq(count(&r, "shmalloc: PE 0 cannot reserve "), 1, "%s", tail(&r));
    cr_assert_eq(count(&r, "bytes in /dev/shm for the node barrier (No space left on device; /dev/shm has 0 KiB free "
                       "of 1024 KiB): barriers go by messages\n"), 1, "%s", tail(&r));
    cr_assert_eq(count(&r, "barriers by messages\n"), 4, "not every PE uses messages:\n%s", tail(&r));
}

/* shm: the provider refuses; the message names /dev/shm and its free
   space, and following either advice works: tcp;ofi_rxm in the same
   full /dev/shm, or shm with room in /dev/shm. */
Test(pmix_ofi, a_full_dev_shm_is_named_when_the_shm_provider_refuses, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *shm[] = {"FI_PROVIDER=shm", NULL}, *tcp[] = {"FI_PROVIDER=tcp;ofi_rxm", NULL};
    char outer[300];
    if (!can_unshare_mounts()) cr_skip_test("needs root and unshare -m");
    launch_in(&r, 2, "init", shm, dev_shm_of(outer, sizeof outer, "1M", 1), NULL);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, "shmalloc: no libfabric provider matches FI_PROVIDER=shm with RMA and messages on "
                       "FI_EP_RDM endpoints: No data available; the likely cause: /dev/shm has 0 KiB free of 1024 "
                       "KiB, and the shm provider needs room there"), 2, "%s", tail(&r));
    cr_assert(has(&r, ": free space in /dev/shm, or use FI_PROVIDER=\"tcp;ofi_rxm\"\n"), "%s", tail(&r));
    launch_in(&r, 2, "init", tcp, dev_shm_of(outer, sizeof outer, "1M", 1), NULL);
    cr_assert_eq(r.status, 0, "FI_PROVIDER=tcp;ofi_rxm did not help:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK init"), 2, "%s", tail(&r));
    launch_in(&r, 2, "init", shm, dev_shm_of(outer, sizeof outer, "256M", 0), NULL);
    cr_assert_eq(r.status, 0, "room in /dev/shm did not help:\n%s", tail(&r));
    cr_assert_eq(count(&r, ": OK init"), 2, "%s", tail(&r));
    cr_assert(!has(&r, "/dev/shm"), "%s", tail(&r));
}

/* ---- programs that end without shmem_finalize ------------------------------
   Returning from main, or exit(3) on PE 1, without shmem_finalize: the PEs
   finalize at exit, so mpirun sees a clean end and the exit status. */
static void check_ends_without_finalize(const char *scenario, int status)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=10", NULL};
    int npes;
    for (npes = 2; npes <= 4; npes += 2) {
        launch(&r, npes, scenario, env);
        cr_assert_eq(r.status, status, "%s on %d PEs: status %d:\n%s", scenario, npes, r.status, tail(&r));
        cr_assert(!has(&r, "improperly") && !has(&r, "FAIL"), "%s on %d PEs:\n%s", scenario, npes, tail(&r));
        cr_assert_eq(r.leftovers, 0, "%s left %d /dev/shm files", scenario, r.leftovers);
    }
}

Test(pmix_ofi, a_program_returning_from_main_without_finalize_exits_0, .timeout = TEST_TIMEOUT)
{
    check_ends_without_finalize("no_finalize", 0);
}

Test(pmix_ofi, a_program_calling_exit_3_without_finalize_exits_3, .timeout = TEST_TIMEOUT)
{
    check_ends_without_finalize("exit_3", 3);
}

/* ---- a PE that dies or hangs: the others end, bounded, and say so -------- */
static void check_death_on(const char *scenario, const char *provider, int npes, int node_size)
{
    static run r;
    char prov[64], size[64];
    const char *env[] = {prov, "SHMALLOC_BARRIER_TIMEOUT=5", "SHMALLOC_VERBOSE=1", size, NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(size, sizeof size, "SHMALLOC_TEST_NODE_SIZE=%d", node_size);
    if (node_size <= 0) env[3] = NULL;
    launch(&r, npes, scenario, env);
    cr_assert_neq(r.status, 0, "the job survived PE 1's death:\n%s", tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "the job took %.1f s to end", r.seconds);
    cr_assert(!has(&r, "FAIL"), "a barrier returned without PE 1:\n%s", tail(&r));
    /* Our PEs name PE 1 when they wait for it; mpirun names rank 1. */
    cr_assert(has(&r, "for PE 1") || has(&r, "PE 1 ended") || has(&r, "rank 1 ") || has(&r, ",1]"),
              "nobody named the dead PE:\n%s", tail(&r));
    cr_assert(has(&r, "shmalloc: "), "no PE said why it ended:\n%s", tail(&r));
    if (strcmp(provider, "shm") == 0) { /* no leftovers: the dead PE's file went at start-up */
        cr_assert_eq(count(&r, "endpoint fi_shm://"), npes, "not every endpoint is named:\n%s", tail(&r));
        cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
    }
}

static void check_death(const char *scenario, const char *provider) { check_death_on(scenario, provider, 4, 0); }

Test(pmix_ofi, sigkilled_pe_ends_the_job_shm, .timeout = TEST_TIMEOUT) { check_death("kill", "shm"); }
Test(pmix_ofi, sigkilled_pe_ends_the_job_tcp_rxm, .timeout = TEST_TIMEOUT) { check_death("kill", "tcp;ofi_rxm"); }
Test(pmix_ofi, pe_exiting_without_finalize_ends_the_job_shm, .timeout = TEST_TIMEOUT) { check_death("exit", "shm"); }
Test(pmix_ofi, pe_exiting_without_finalize_ends_the_job_tcp_rxm, .timeout = TEST_TIMEOUT)
{
    check_death("exit", "tcp;ofi_rxm");
}

Test(pmix_ofi, pe_killed_inside_a_collective_allocation_ends_the_job_shm, .timeout = TEST_TIMEOUT)
{
    check_death("kill_in_malloc", "shm");
}

/* Every scenario, heap growth and a killed PE, oversubscribed. */
Test(pmix_ofi, all_scenarios_shm_8pe, .timeout = TEST_TIMEOUT) { check_nodes("shm", 8, 0, 0); }
Test(pmix_ofi, all_scenarios_shm_16pe, .timeout = TEST_TIMEOUT) { check_nodes("shm", 16, 0, 0); }
Test(pmix_ofi, all_scenarios_shm_32pe, .timeout = TEST_TIMEOUT) { check_nodes("shm", 32, 0, 0); }
Test(pmix_ofi, all_scenarios_shm_16pe_as_4_nodes_of_4, .timeout = TEST_TIMEOUT) { check_nodes("shm", 16, 0, 4); }
Test(pmix_ofi, heap_grows_on_32pe, .timeout = TEST_TIMEOUT) { check_scenario_grows("grow", "shm", 32, 0, NULL, 0); }
Test(pmix_ofi, heap_grows_on_16pe_as_4_nodes_of_4, .timeout = TEST_TIMEOUT)
{
    check_scenario_grows("grow", "shm", 16, 0, NULL, 4);
}
Test(pmix_ofi, sigkilled_pe_ends_the_job_of_32pe, .timeout = TEST_TIMEOUT) { check_death_on("kill", "shm", 32, 0); }
Test(pmix_ofi, pe_killed_inside_an_allocation_ends_the_job_of_4_nodes_of_4, .timeout = TEST_TIMEOUT)
{
    check_death_on("kill_in_malloc", "shm", 16, 4);
}

/* 1 when the list in line ("... PE 1 has ended", "... PEs 0, 1 have
   ended") holds pe. */
static int names_pe(const char *line, int pe)
{
    const char *p = strstr(line, ": PE");
    char *end;
    if (!p) return 0;
    for (p += strcspn(p, "0123456789"); *p >= '0' && *p <= '9'; p = end + strspn(end, ", ")) {
        long q = strtol(p, &end, 10);
        if (q == pe) return 1;
    }
    return 0;
}

/* Lines of r's output that start with tag; *naming: those naming pe. */
static int lines_naming(const run *r, const char *tag, int pe, int *naming)
{
    const char *p = r->out;
    int lines = 0;
    *naming = 0;
    while ((p = strstr(p, tag)) != NULL) {
        char line[256];
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        *naming += names_pe(line, pe);
        lines++;
        p += n;
    }
    return lines;
}

/* ---- a PE killed at each step of start-up ---------------------------------
   SHMALLOC_TEST_KILL_AT=STEP:K makes PE K SIGKILL itself as it enters the
   start-up fence named STEP.  The files of start-up exist then: the
   endpoint files from "endpoint names" on, the node segment at "node
   segment" and "node segment mapped".  The launcher ends the job; its PEs
   remove their own files and the killed PE's, so none is left. */
static void check_killed_at(const char *step)
{
    static run r;
    char kill_at[64], noticed[64];
    const char *env[] = {"FI_PROVIDER=shm", kill_at, "SHMALLOC_BARRIER_TIMEOUT=10", NULL};
    int pe, naming;
    for (pe = 0; pe < 3; pe++) {
        snprintf(kill_at, sizeof kill_at, "SHMALLOC_TEST_KILL_AT=%s:%d", step, pe);
        snprintf(noticed, sizeof noticed, "process rank %d with PID", pe);
        launch(&r, 3, "init", env);
        cr_assert_neq(r.status, 0, "the job survived PE %d's death at \"%s\":\n%s", pe, step, tail(&r));
        lines_naming(&r, "shmalloc: PMIx fence", pe, &naming); /* or mpirun names it */
        cr_assert((has(&r, noticed) && has(&r, "signal 9")) || naming, "PE %d was not killed at \"%s\":\n%s", pe,
                  step, tail(&r));
        cr_assert_eq(r.leftovers, 0, "PE %d killed at \"%s\" left %d /dev/shm files:\n%s", pe, step, r.leftovers,
                     tail(&r));
    }
}

Test(pmix_ofi, a_pe_killed_at_the_endpoint_names_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("endpoint names");
}

Test(pmix_ofi, a_pe_killed_at_the_node_segment_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("node segment");
}

Test(pmix_ofi, a_pe_killed_with_the_node_segment_mapped_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("node segment mapped");
}

Test(pmix_ofi, a_pe_killed_at_the_heap_keys_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("heap keys");
}

Test(pmix_ofi, a_pe_killed_with_its_endpoint_open_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("endpoint open"); /* before this PE knows its file's name */
}

/* PE 1 fails start-up for want of file descriptors (ulimit -n: 8, its
   heap's memfd; 9, the endpoint), while PE 0 waits at a step of its own
   start-up (SHMALLOC_TEST_STALL_AT) until the launcher's SIGTERM ends it:
   with its endpoint open but its name not known yet, and at the fence
   that swaps the names.  Neither leaves a file. */
Test(pmix_ofi, a_start_up_failed_for_want_of_files_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    static run r;
    static const char *const steps[] = {"endpoint open", "endpoint names"};
    char stall[64], inner[200];
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=20", stall, NULL};
    int limit;
    size_t i;
    for (limit = 8; limit <= 9; limit++)
        for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            snprintf(stall, sizeof stall, "SHMALLOC_TEST_STALL_AT=%s:0", steps[i]);
            launch_in(&r, 3, "init", env, NULL, fd_limit_on(inner, sizeof inner, 1, limit));
            cr_assert_neq(r.status, 0, "ulimit -n %d on PE 1 went unnoticed:\n%s", limit, tail(&r));
            cr_assert(has(&r, "Too many open files"), "PE 1 did not fail for want of files:\n%s", tail(&r));
            cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
            cr_assert_eq(r.leftovers, 0, "ulimit -n %d on PE 1, PE 0 ended at \"%s\": %d /dev/shm files left:\n%s",
                         limit, steps[i], r.leftovers, tail(&r));
        }
}

/* PE 1 is killed with its endpoint open, and PE 0's start-up then fails
   for want of files (ulimit -n 9: its endpoint), the launcher ending
   nobody (orte_enable_recovery): PE 0's failed start-up removes PE 1's
   file as it ends. */
Test(pmix_ofi, a_start_up_that_fails_after_a_peer_was_killed_removes_its_files, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_KILL_AT=endpoint open:1", "SHMALLOC_TEST_STALL_AT=endpoint:0",
                         "OMPI_MCA_orte_enable_recovery=1", "SHMALLOC_BARRIER_TIMEOUT=10", NULL};
    char inner[200];
    launch_in(&r, 2, "init", env, NULL, fd_limit_on(inner, sizeof inner, 0, 9));
    cr_assert(has(&r, "shmalloc: fi_enable failed: Too many open files"), "PE 0 did not fail at its endpoint:\n%s",
              tail(&r));
    cr_assert(!has(&r, ": OK init"), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
}

/* A start-up fence that fails names the PE that is gone.  Under
   orte_enable_recovery mpirun lets the others go on, so their fence fails
   rather than their being ended (or completes without the dead PE, and
   the survivors' get of its keys times out, naming it too). */
Test(pmix_ofi, a_failed_start_up_fence_names_the_pe_that_is_gone, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_KILL_AT=node segment mapped:1",
                         "OMPI_MCA_orte_enable_recovery=1", "SHMALLOC_BARRIER_TIMEOUT=5", NULL};
    int naming, lines;
    launch(&r, 3, "init", env);
    lines = lines_naming(&r, "shmalloc: PMIx", 1, &naming);
    cr_assert_eq(lines, 2, "not both survivors said their fence or get failed:\n%s", tail(&r));
    cr_assert_eq(naming, 2, "not both survivors named PE 1:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
}

/* Under --enable-recovery mpirun sends no termination event and lets the
   survivors run on: they see the awaited peer's process gone themselves
   and end naming it, long before their 30 s barrier timeout. */
static void check_death_seen_on_the_node(const char *scenario, int any_address)
{
    static run r;
    char any[64];
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=30", "OMPI_MCA_orte_enable_recovery=1", any,
                         NULL};
    int naming;
    snprintf(any, sizeof any, "SHMALLOC_PMIX_OFI_ANY_ADDRESS=%d", any_address);
    launch(&r, 3, scenario, env);
    cr_assert(r.seconds < 10, "the survivors took %.1f s (the barrier timeout is 30 s):\n%s", r.seconds, tail(&r));
    cr_assert_eq(lines_naming(&r, "shmalloc: PE 1 ended without shmem_finalize", 1, &naming), 2,
                 "not both survivors named PE 1:\n%s", tail(&r));
    cr_assert(!has(&r, ": FAIL"), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, without_the_launchers_event_a_killed_pe_is_seen_gone_by_node_memory_barriers, .timeout = TEST_TIMEOUT)
{
    check_death_seen_on_the_node("kill", 0);
}

Test(pmix_ofi, without_the_launchers_event_a_pe_that_exits_is_seen_gone_by_message_barriers, .timeout = TEST_TIMEOUT)
{
    check_death_seen_on_the_node("exit", 1);
}

/* PE 0 skips a shmem_malloc, then finalizes and ends while PE 1 waits:
   PE 1 says PE 0 finalized, with each PE's count of collective calls.
   Without node memory nothing says whether PE 0 finalized, and PE 1 does
   not claim it did not. */
Test(pmix_ofi, a_pe_that_finalized_early_is_not_said_to_have_skipped_finalize, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=10", "SHMALLOC_PMIX_OFI_NODE_BARRIER=1", NULL};
    launch(&r, 2, "skip_malloc", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "shmalloc: PE 0 called shmem_finalize after ") &&
              has(&r, "while PE 1 waits in its collective call ") && has(&r, "the PEs' collective calls differ"),
              "%s", tail(&r));
    cr_assert(!has(&r, "without shmem_finalize"), "%s", tail(&r));
    env[2] = "SHMALLOC_PMIX_OFI_NODE_BARRIER=0";
    launch(&r, 2, "skip_malloc", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "shmalloc: PE 0 ended (its process ") && has(&r, "while PE 1 waits in its collective call "),
              "%s", tail(&r));
    cr_assert(!has(&r, "without shmem_finalize"), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files", r.leftovers);
}

/* The line of r's output that holds needle, into line; 0 when none. */
static int line_with(const run *r, const char *needle, char *line, size_t cap)
{
    const char *p = strstr(r->out, needle), *start;
    if (!p) return 0;
    for (start = p; start > r->out && start[-1] != '\n'; start--) continue;
    snprintf(line, cap, "%.*s", (int)strcspn(start, "\n"), start);
    return 1;
}

/* PE 2 of 4 stops (SIGSTOP) before a barrier, and is continued 8 s later:
   every other PE's barrier times out or is ended by the launcher, and
   each names PE 2 ("which has not arrived", or "which PE k gave up
   waiting for" once PE k did), not the PE it waited for in its round
   (which was itself waiting).  Under orte_enable_recovery mpirun ends
   nobody, and PE 2, continued, says that a PE gave up waiting for it.
   By messages (node barrier off) a PE cannot see who has arrived, but
   sees a stopped peer on its node. */
Test(pmix_ofi, a_stopped_pe_is_the_one_every_other_pe_names, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=3", "OMPI_MCA_orte_enable_recovery=0", NULL};
    char line[512], timed_out[64], signalled[64], stops[64];
    int recovery, pe;
    for (recovery = 0; recovery <= 1; recovery++) {
        env[2] = recovery ? "OMPI_MCA_orte_enable_recovery=1" : "OMPI_MCA_orte_enable_recovery=0";
        launch(&r, 4, "stop", env);
        for (pe = 0; pe < 4; pe++) {
            if (pe == 2) continue;
            snprintf(timed_out, sizeof timed_out, "(PE %d of 4, barrier", pe);
            snprintf(signalled, sizeof signalled, "shmalloc: PE %d of 4 ended by signal", pe);
            snprintf(stops, sizeof stops, "; PE %d of 4 stops", pe); /* a peer that gave up went first */
            cr_assert(line_with(&r, timed_out, line, sizeof line) || line_with(&r, signalled, line, sizeof line) ||
                      line_with(&r, stops, line, sizeof line), "PE %d said nothing:\n%s", pe, tail(&r));
            cr_assert(strstr(line, "PE 2, which has not arrived") || strstr(line, "PE 2, which PE "),
                      "PE %d names another PE: %s\n%s", pe, line, tail(&r));
        }
        cr_assert(!has(&r, "without shmem_finalize") && !has(&r, "FAIL"), "%s", tail(&r));
        if (recovery)
            cr_assert(has(&r, "gave up waiting for this PE (its barrier timed out after 3 s; ") &&
                      has(&r, "PE 2 was stopped or busy outside shmem for longer than SHMALLOC_BARRIER_TIMEOUT; "
                          "PE 2 of 4 stops"), "%s", tail(&r));
        cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files", r.leftovers);
    }
}

Test(pmix_ofi, a_stopped_pe_is_named_by_message_barriers_too, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=3", "OMPI_MCA_orte_enable_recovery=1",
                         "SHMALLOC_PMIX_OFI_NODE_BARRIER=0", NULL};
    char line[512], timed_out[64];
    int pe;
    launch(&r, 4, "stop", env);
    for (pe = 0; pe < 4; pe++) {
        if (pe == 2) continue;
        snprintf(timed_out, sizeof timed_out, "(PE %d of 4, barrier", pe);
        cr_assert(line_with(&r, timed_out, line, sizeof line), "PE %d said nothing:\n%s", pe, tail(&r));
        cr_assert(strstr(line, "barrier timed out after 3 s waiting for PE 2, which is stopped"),
                  "PE %d names another PE: %s\n%s", pe, line, tail(&r));
    }
    cr_assert(!has(&r, "without shmem_finalize") && !has(&r, "FAIL"), "%s", tail(&r));
}

/* One PE's heap registration fails: shmalloc_heap_create's all-reduce
   makes every PE fail start-up, none waits forever. */
Test(pmix_ofi, failed_registration_on_one_pe_fails_start_up_everywhere, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_FAIL_REGISTER=2", "SHMALLOC_BARRIER_TIMEOUT=10",
                         "SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 4, "init", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "registration of the heap made to fail on PE 2"), "%s", tail(&r));
    cr_assert(has(&r, "cannot create the symmetric heap"), "no PE reported the failed creation:\n%s", tail(&r));
    cr_assert(!has(&r, ": OK init"), "%s", tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
}

Test(pmix_ofi, hung_pe_makes_the_barrier_time_out_naming_it, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=2", "SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 2, "hang", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "shmalloc: barrier timed out after 2 s waiting for PE 1"), "%s", tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
}

/* Debug mode on 2 PEs: each PE's out-of-memory, mismatch and leak reports
   name that PE (the worker tags every line with the rank that printed
   it), and the mismatch of PE 1's one extra unsynchronised allocation
   names PE 1 for the most calls and PE 0 for the fewest.  (Four calls:
   the worker's scratch array, the failed allocation larger than the
   heap, the extra one and the shmem_malloc that fails.) */
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
        snprintf(line, sizeof line, "rank %d says shmalloc: PE %d: out of symmetric memory: malloc of ", pe, pe);
        cr_assert_eq(count(&r, line), 1, "no \"%s\" in:\n%s", line, tail(&r));
        snprintf(line, sizeof line, "rank %d says shmalloc: PE %d: malloc(128 bytes), ", pe, pe);
        cr_assert_eq(count(&r, line), 1, "no \"%s\" in:\n%s", line, tail(&r));
        snprintf(line, sizeof line, "rank %d says shmalloc: PE %d:", pe, 1 - pe);
        cr_assert_eq(count(&r, line), 0, "PE %d speaks for PE %d:\n%s", pe, 1 - pe, tail(&r));
    }
    cr_assert_eq(count(&r, "differs from another PE's call: the call numbers (PE 1 has made 4 calls, PE 0 3)\n"), 2,
                 "the mismatch names the wrong PEs:\n%s", tail(&r));
    cr_assert_eq(count(&r, "rank 1 says shmalloc: PE 1: 1 block still allocated at finalize"), 1, "%s", tail(&r));
    cr_assert_eq(count(&r, "still allocated at finalize"), 1, "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, global_exit_ends_every_pe_with_its_status, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 4, "global_exit", env);
    cr_assert_eq(r.status, 7, "status %d:\n%s", r.status, tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
    cr_assert(!has(&r, "FAIL"), "%s", tail(&r));
}

/* ---- no leftovers in /dev/shm ------------------------------------------- */
static void make_file(const char *path, int uid)
{
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL, "cannot create %s", path);
    fclose(f);
    if (uid >= 0) cr_assert(chown(path, (uid_t)uid, (gid_t)uid) == 0, "chown %s", path);
}

/* Files named like the shm provider's, of a process that has ended: start-up
   removes this user's, and keeps another user's and a live process's. */
Test(pmix_ofi, start_up_removes_this_users_files_of_ended_processes_only, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_VERBOSE=1", NULL};
    char dead_mine[64], dead_other[64], live_mine[64];
    int root = getuid() == 0, status;
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) _exit(0);
    cr_assert(waitpid(child, &status, 0) == child); /* child's pid is now nobody's */
    snprintf(dead_mine, sizeof dead_mine, "/dev/shm/%ld:0:0", (long)child);
    snprintf(dead_other, sizeof dead_other, "/dev/shm/%ld:1:0", (long)child);
    snprintf(live_mine, sizeof live_mine, "/dev/shm/%ld:0:0", (long)getpid());
    make_file(dead_mine, -1);
    if (root) make_file(dead_other, 65534);
    make_file(live_mine, -1);
    launch(&r, 2, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert(access(dead_mine, F_OK) != 0, "%s survived start-up", dead_mine);
    cr_assert(access(live_mine, F_OK) == 0, "%s (a live process's) was removed", live_mine);
    if (root) cr_assert(access(dead_other, F_OK) == 0, "%s (another user's) was removed", dead_other);
    cr_assert(has(&r, "removed 1 /dev/shm file") || has(&r, "/dev/shm files of ended processes"), "%s", tail(&r));
    unlink(live_mine);
    unlink(dead_other);
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
    if (!root) cr_skip_test("the other user's file needs root to create; the rest passed");
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
    cr_assert_eq(count(&r, "shmalloc: huge pages fell back: SHMALLOC_HUGE_PAGES=2M asked for hugetlbfs pages"), 2,
                 "%s", tail(&r));
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
    cr_assert_eq(count(&r, "direct copies to 1 PEs"), 2, "%s", tail(&r));
    cr_assert(!has(&r, "fell back"), "%s", tail(&r));
}

/* ---- threads ---------------------------------------------------------------
   The threads scenario under SHMEM_THREAD_MULTIPLE: 4 threads per PE put,
   quiet, get and verify while the main thread allocates (growing the heap:
   4M nominal, each round allocates 1-3 MiB and keeps 6), barriers and
   frees.  direct 1: same-node copies and the node barrier; 0: every put
   and get by libfabric RMA and barriers by messages, so the threads share
   the completion queue and the barrier's inbox. */
static void check_threads(const char *provider, int direct)
{
    static run r;
    char prov[64], dir[64], node[64], copies[128];
    const char *env[] = {prov, dir, node, "SHMEM_SYMMETRIC_HEAP_SIZE=4M", "SHMALLOC_HEAP_MAX=256M",
                         "SHMALLOC_VERBOSE=1", NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(dir, sizeof dir, "SHMALLOC_PMIX_OFI_DIRECT=%d", direct);
    snprintf(node, sizeof node, "SHMALLOC_PMIX_OFI_NODE_BARRIER=%d", direct);
    snprintf(copies, sizeof copies, "direct copies to %d PEs of this node, barriers %s", direct,
             direct ? "through node memory" : "by messages");
    launch(&r, 2, "threads", env);
    cr_assert_eq(r.status, 0, "%s: exit status %d after %.1f s:\n%s", provider, r.status, r.seconds, tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "failures:\n%s", tail(&r));
    cr_assert_eq(count(&r, "thread level 3 provided 3 query 3"), 2, "%s", tail(&r));
    cr_assert_eq(count(&r, copies), 2, "not \"%s\" on every PE:\n%s", copies, tail(&r));
    cr_assert_eq(count(&r, ": OK threads"), 2, "not every PE passed:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, threads_multiple_shm_2pe_direct_copies, .timeout = TEST_TIMEOUT) { check_threads("shm", 1); }
Test(pmix_ofi, threads_multiple_shm_2pe_libfabric_rma, .timeout = TEST_TIMEOUT) { check_threads("shm", 0); }
Test(pmix_ofi, threads_multiple_tcp_rxm_2pe_libfabric_rma, .timeout = TEST_TIMEOUT)
{
    check_threads("tcp;ofi_rxm", 0);
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
