/* test_pmix_ofi_start.c - the PMIx + libfabric transport's start-up, PEs as
   processes: with and without a launcher, bad settings, and what the
   machine refuses (address space, open files, room in /dev/shm), each
   with a message that says why and advice that works. */
#include "pmix_ofi_launch.h" /* first: it includes test_support.h */

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
    cr_assert(has(&r, "[HEAP_MISUSE] shmalloc: PE 0: realloc(") && has(&r, ", outside the heap): pointer is not in"),
              "%s", tail(&r));
    cr_assert(has(&r, "[HEAP_MISUSE_QUIET] "), "%s", tail(&r));
}

/* SHMEM_INFO under this transport lists the rows its layers added: its
   own, the mapping's and the timeout, beside the heap's. */
Test(pmix_ofi, shmem_info_lists_the_rows_of_every_layer, .timeout = TEST_TIMEOUT)
{
    static run r;
    static const char *const listed[] = {"SHMEM_SYMMETRIC_HEAP_SIZE=", "SHMALLOC_HUGE_PAGES=off (the default)",
                                         "SHMALLOC_TIMEOUT=60 (the default)", "SHMALLOC_PMIX_OFI_DIRECT=0 "
                                         "(from SHMALLOC_PMIX_OFI_DIRECT)", "FI_PROVIDER=shm (from FI_PROVIDER)"};
    const char *env[] = {"FI_PROVIDER=shm", "SHMEM_INFO=1", "SHMALLOC_PMIX_OFI_DIRECT=0", NULL};
    size_t i;
    launch(&r, 2, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    for (i = 0; i < sizeof listed / sizeof listed[0]; i++)
        cr_assert_eq(count(&r, listed[i]), 1, "%s listed other than once:\n%s", listed[i], tail(&r));
}

/* SHMEM_VERSION: PE 0 alone prints the version, once per job. */
Test(pmix_ofi, shmem_version_is_printed_once_by_pe_0, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMEM_VERSION=1", NULL};
    launch(&r, 2, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, "[INFO_VERSION] "), 1, "%s", tail(&r));
}

/* The timeout's former name is read, and said to be renamed once per job. */
Test(pmix_ofi, the_former_timeout_name_is_read_and_said_renamed_once_per_job, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_BARRIER_TIMEOUT=9", "SHMEM_INFO=1", NULL};
    launch(&r, 4, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, "[OPTION_RENAMED] shmalloc: SHMALLOC_BARRIER_TIMEOUT is renamed SHMALLOC_TIMEOUT: its "
                           "value \"9\" is used"), 1, "%s", tail(&r));
    cr_assert_eq(count(&r, "SHMALLOC_TIMEOUT=9 (from SHMALLOC_BARRIER_TIMEOUT)"), 1, "%s", tail(&r));
}

/* A misspelt variable is said once per job, with the number of PEs, and
   the variable it suggests, set instead, is read and said nothing of. */
Test(pmix_ofi, a_misspelt_variable_is_said_once_per_job_with_the_pe_count, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMEM_SYMMETRIC_HEAP_SZE=2M", NULL};
    const char *stats;
    size_t bytes = 0;
    launch(&r, 4, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, "[OPTION_UNKNOWN] "), 1, "%s", tail(&r));
    cr_assert(has(&r, "[OPTION_UNKNOWN] shmalloc: SHMEM_SYMMETRIC_HEAP_SZE is set, but shmalloc has no such variable "
                      "(did you mean SHMEM_SYMMETRIC_HEAP_SIZE?) (said once for the job's 4 PEs)\n"), "%s", tail(&r));
    env[1] = "SHMEM_SYMMETRIC_HEAP_SIZE=2M";
    launch(&r, 4, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, "[OPTION_UNKNOWN] "), 0, "%s", tail(&r));
    stats = strstr(r.out, "[STATS_HEAP] shmalloc_stats: heap at ");
    cr_assert(stats && sscanf(strchr(stats, ','), ", %zu bytes", &bytes) == 1, "%s", tail(&r));
    cr_assert(bytes >= ((size_t)2 << 20) && bytes < ((size_t)3 << 20), "not the 2 MiB heap asked for: %zu", bytes);
    cr_assert_eq(count(&r, ": OK init"), 4, "%s", tail(&r));
}

/* A size below the smallest heap is raised to it, said once per job by
   PE 0 with what each PE's heap has. */
Test(pmix_ofi, a_size_raised_to_the_smallest_heap_is_said_once_per_job, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMEM_SYMMETRIC_HEAP_SIZE=1k", NULL};
    launch(&r, 4, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, "[START_SIZE_RAISED] shmalloc: SHMEM_SYMMETRIC_HEAP_SIZE=1k asks for a heap of 1024 "
                           "bytes, less than the smallest: each PE's heap has "), 1, "%s", tail(&r));
    cr_assert_eq(count(&r, ": OK init"), 4, "%s", tail(&r));
}

Test(pmix_ofi, singleton_notes_the_missing_launcher_when_verbose, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 0, "init", env);
    cr_assert_eq(r.status, 0, "exit status %d:\n%s", r.status, tail(&r));
    cr_assert(has(&r, "[PMIX_NOTE_SINGLETON] "), "%s", tail(&r));
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
    check_refused("SHMALLOC_TIMEOUT=abc", "shmalloc: SHMALLOC_TIMEOUT=\"abc\" is not a timeout");
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
    cr_assert(has(&r, "[START_MAP_FAILED_VARIABLE] ") && has(&r, "SHMEM_SYMMETRIC_HEAP_SIZE=64G asks for 68719476736 bytes"),
              "%s", r.out);
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
    cr_assert(has(&r, "[START_MAP_FD_LIMIT] ") && has(&r, "Too many open files; raise this process's limit on "
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
    cr_assert_eq(count(&r, "[PMIX_NODE_BARRIER_NO_SPACE] shmalloc: PE 0 "), 1, "%s", tail(&r));
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
