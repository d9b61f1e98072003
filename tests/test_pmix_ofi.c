/* The PMIx + libfabric transport, driven through mpirun: every run starts
   build/pmix_ofi_worker (SHMALLOC_WORKER overrides the path) under a
   timeout, with traffic pinned to loopback (FI_PROVIDER=shm, or
   "tcp;ofi_rxm" with FI_TCP_IFACE=lo), and asserts its exit status and what
   every PE printed.  The worker's scenarios are described at its top. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* popen, setenv */
#endif
#include "criterion_shim.h" /* Criterion, or its stand-in under TSan */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char out[1 << 16];

static const char *worker(void)
{
    const char *w = getenv("SHMALLOC_WORKER");
    return w ? w : "./build/pmix_ofi_worker";
}

/* Runs `env VARS timeout T mpirun -np N worker SCENARIO` (np 0: no
   launcher), output into out[]; returns the exit status and the seconds it
   took in *secs. */
/* "-x NAME" for every NAME=value in vars, so mpirun forwards exactly those. */
static void forward_flags(const char *vars, char *flags, size_t len)
{
    const char *p = vars;
    flags[0] = 0;
    while (*p) {
        const char *eq = strchr(p, '='), *end;
        if (!eq) break;
        strncat(flags, " -x ", len - strlen(flags) - 1);
        strncat(flags, p, (size_t)(eq - p) < len - strlen(flags) - 1 ? (size_t)(eq - p) : 0);
        end = eq[1] == '\'' ? strchr(eq + 2, '\'') : strchr(eq, ' ');
        if (!end) break;
        p = end + 1;
        while (*p == ' ' || *p == '\'') p++;
    }
}

static int run(int np, const char *vars, const char *scenario, int timeout_s, double *secs)
{
    char cmd[1024], flags[256];
    struct timespec t0, t1;
    size_t n = 0;
    FILE *p;
    int status;
    forward_flags(vars, flags, sizeof flags);
    if (np)
        snprintf(cmd, sizeof cmd,
                 "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo "
                 "FI_TCP_IFACE=lo %s timeout -k 5 %d mpirun --oversubscribe -np %d -x FI_TCP_IFACE%s %s %s 2>&1",
                 vars, timeout_s, np, flags, worker(), scenario);
    else
        snprintf(cmd, sizeof cmd, "env %s timeout -k 5 %d %s %s 2>&1", vars, timeout_s, worker(), scenario);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    p = popen(cmd, "r");
    cr_assert(p != NULL, "popen failed");
    while (n + 1 < sizeof out && fgets(out + n, (int)(sizeof out - n), p)) n += strlen(out + n);
    out[n] = 0;
    status = pclose(p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (secs) *secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Files in /dev/shm: the shm provider leaves some behind when a process
   dies without closing its endpoint. */
#define SHM_NAMES 256
static char shm_before[SHM_NAMES][256];
static int shm_nbefore;

static void shm_snapshot(void)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    shm_nbefore = 0;
    while (d && (e = readdir(d)) != NULL && shm_nbefore < SHM_NAMES)
        snprintf(shm_before[shm_nbefore++], sizeof shm_before[0], "%s", e->d_name);
    if (d) closedir(d);
}

/* Counts the files that appeared since the snapshot; removes them if asked. */
static int shm_new_files(int remove)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int n = 0, i, old;
    char path[300];
    while (d && (e = readdir(d)) != NULL) {
        for (old = 0, i = 0; i < shm_nbefore && !old; i++) old = !strcmp(shm_before[i], e->d_name);
        if (old) continue;
        n++;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        if (remove) unlink(path);
    }
    if (d) closedir(d);
    return n;
}

static size_t count(const char *needle)
{
    size_t n = 0;
    const char *p;
    for (p = out; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

/* Every scenario on np PEs: each PE must say OK for each, and nothing fails. */
static void all_scenarios(int np, const char *provider, int any_address)
{
    static const char *const names[] = {"symmetric", "putget", "realloc", "mismatch", "barrier", "stress"};
    char vars[256], ok[64];
    size_t i;
    int rc;
    snprintf(vars, sizeof vars, "FI_PROVIDER='%s' SHMALLOC_PMIX_OFI_ANY_ADDRESS=%d SHMALLOC_EXPECT_ADDRESSES=%s",
             provider, any_address, any_address ? "differ" : "same");
    shm_snapshot();
    rc = run(np, vars, "all", 120, NULL);
    cr_assert(shm_new_files(1) == 0, "a clean run left files in /dev/shm");
    cr_assert(rc == 0, "exit status %d with %d PEs on %s:\n%s", rc, np, provider, out);
    cr_assert(count("FAIL") == 0, "%s", out);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(ok, sizeof ok, ": OK %s\n", names[i]);
        cr_assert(count(ok) == (size_t)np, "%zu of %d PEs passed %s:\n%s", count(ok), np, names[i], out);
    }
    cr_assert(count(": OK all\n") == (size_t)np, "%s", out);
}

Test(pmix_ofi, two_pes_on_shm_at_the_same_address, .timeout = 150) { all_scenarios(2, "shm", 0); }
Test(pmix_ofi, four_pes_on_shm_at_the_same_address, .timeout = 150) { all_scenarios(4, "shm", 0); }
Test(pmix_ofi, two_pes_on_shm_at_different_addresses, .timeout = 150) { all_scenarios(2, "shm", 1); }
Test(pmix_ofi, four_pes_on_shm_at_different_addresses, .timeout = 150) { all_scenarios(4, "shm", 1); }
Test(pmix_ofi, two_pes_on_tcp_rxm_loopback_at_the_same_address, .timeout = 150) { all_scenarios(2, "tcp;ofi_rxm", 0); }
Test(pmix_ofi, four_pes_on_tcp_rxm_loopback_at_the_same_address, .timeout = 150) { all_scenarios(4, "tcp;ofi_rxm", 0); }
Test(pmix_ofi, two_pes_on_tcp_rxm_loopback_at_different_addresses, .timeout = 150) { all_scenarios(2, "tcp;ofi_rxm", 1); }
Test(pmix_ofi, four_pes_on_tcp_rxm_loopback_at_different_addresses, .timeout = 150) { all_scenarios(4, "tcp;ofi_rxm", 1); }

Test(pmix_ofi, started_without_a_launcher_it_runs_as_one_pe, .timeout = 60)
{
    int rc = run(0, "FI_PROVIDER=shm", "all", 30, NULL);
    cr_assert(rc == 0, "exit status %d:\n%s", rc, out);
    cr_assert(count("PE 0 of 1: OK all") == 1 && count("FAIL") == 0, "%s", out);
}

/* ---- faults: a clear message and a bounded exit ---- */
Test(pmix_ofi, a_provider_that_does_not_exist_is_named_in_the_message, .timeout = 60)
{
    double secs;
    int rc = run(2, "FI_PROVIDER=nonexistent", "init", 30, &secs);
    cr_assert(rc != 0 && rc != 124, "exit status %d:\n%s", rc, out);
    cr_assert(strstr(out, "no libfabric provider matches FI_PROVIDER=nonexistent") != NULL, "%s", out);
    cr_assert(secs < 25, "took %.1f s", secs);
}

Test(pmix_ofi, a_bad_heap_size_is_named_in_the_message, .timeout = 60)
{
    int rc = run(2, "FI_PROVIDER=shm SHMEM_SYMMETRIC_HEAP_SIZE=abc", "init", 30, NULL);
    cr_assert(rc != 0 && rc != 124, "exit status %d:\n%s", rc, out);
    cr_assert(strstr(out, "SHMEM_SYMMETRIC_HEAP_SIZE=\"abc\" is not a heap size") != NULL, "%s", out);
}

/* mpirun ends the survivors itself as soon as a PE dies, so the message
   naming the dead PE may be mpirun's rather than the transport's. */
static void dead_pe(const char *scenario)
{
    double secs;
    int rc;
    shm_snapshot();
    rc = run(2, "FI_PROVIDER=shm SHMALLOC_BARRIER_TIMEOUT=5", scenario, 40, &secs);
    shm_new_files(1); /* the dead PE's endpoint files */
    cr_assert(shm_new_files(0) == 0);
    cr_assert(rc != 0 && rc != 124, "%s: exit status %d (124 = the test's own timeout):\n%s", scenario, rc, out);
    cr_assert(strstr(out, "shmalloc: PE 1") != NULL || strstr(out, "rank 1 ") != NULL || strstr(out, ",1]") != NULL,
              "%s: no message names the dead PE 1:\n%s", scenario, out);
    cr_assert(count("the barrier returned although PE 1 is gone") == 0, "%s", out);
    cr_assert(secs < 30, "%s: took %.1f s", scenario, secs);
}

Test(pmix_ofi, a_killed_pe_ends_the_others_with_a_message_in_bounded_time, .timeout = 60) { dead_pe("kill"); }
Test(pmix_ofi, a_pe_exiting_without_finalize_ends_the_others_in_bounded_time, .timeout = 60) { dead_pe("exit"); }

Test(pmix_ofi, a_pe_killed_during_a_collective_allocation_ends_the_others_in_bounded_time, .timeout = 60)
{
    dead_pe("kill_in_malloc");
}

Test(pmix_ofi, a_failed_registration_on_one_pe_fails_start_up_on_every_pe, .timeout = 60)
{
    double secs;
    int rc = run(4, "FI_PROVIDER=shm SHMALLOC_PMIX_OFI_FAIL_REGISTER=2 SHMALLOC_BARRIER_TIMEOUT=10", "init", 40, &secs);
    cr_assert(rc != 0 && rc != 124, "exit status %d:\n%s", rc, out);
    cr_assert(strstr(out, "registration of the heap made to fail on PE 2") != NULL, "%s", out);
    cr_assert(count("cannot create the symmetric heap") >= 1, "no PE reported the failed creation:\n%s", out);
    cr_assert(count(": OK init") == 0, "%s", out);
    cr_assert(secs < 30, "took %.1f s", secs);
}

Test(pmix_ofi, a_hanging_pe_makes_the_barrier_time_out_with_a_message, .timeout = 60)
{
    double secs;
    int rc = run(2, "FI_PROVIDER=shm SHMALLOC_BARRIER_TIMEOUT=3", "hang", 40, &secs);
    cr_assert(rc != 0 && rc != 124, "exit status %d:\n%s", rc, out);
    cr_assert(strstr(out, "barrier timed out after 3 s waiting for PE 1") != NULL, "%s", out);
    cr_assert(secs < 30, "took %.1f s", secs);
}

Test(pmix_ofi, shmem_global_exit_ends_the_job_with_its_status, .timeout = 60)
{
    int rc = run(2, "FI_PROVIDER=shm SHMALLOC_BARRIER_TIMEOUT=10", "global_exit", 40, NULL);
    cr_assert(rc == 7, "exit status %d, want 7:\n%s", rc, out);
}

Test(pmix_ofi, a_heap_too_large_to_map_is_refused_with_a_message_naming_the_variable, .timeout = 60)
{
    char cmd[512];
    size_t n;
    FILE *p;
    int status;
    snprintf(cmd, sizeof cmd,
             "sh -c 'ulimit -v 4000000; exec env FI_PROVIDER=shm SHMEM_SYMMETRIC_HEAP_SIZE=8G timeout 30 %s init' 2>&1",
             worker());
    p = popen(cmd, "r");
    cr_assert(p != NULL);
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    status = pclose(p);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 124, "status %d:\n%s", status,
              out);
    cr_assert(strstr(out, "cannot map") != NULL && strstr(out, "SHMEM_SYMMETRIC_HEAP_SIZE=8G") != NULL, "%s", out);
}
