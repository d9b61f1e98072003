/* pmix_ofi_launch.h - what the tests/pmix_ofi/test_pmix_ofi_*.c suites share: the
   launch of the worker program and the reading of what it printed.

   The suites build nothing: each test launches the worker program
   (tests/pmix_ofi/pmix_ofi_worker*.c, built to ./build/pmix_ofi_worker, or the path
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
   before it and whose process has ended (a zombie has) are counted as
   the run's leftovers and removed; every test asserts there were none.

   Include it first, as test_support.h, which it includes (popen and pclose
   need _GNU_SOURCE).  Everything is static and marked unused: each suite
   uses a part. */
#ifndef SHMALLOC_PMIX_OFI_LAUNCH_H
#define SHMALLOC_PMIX_OFI_LAUNCH_H

#include "test_support.h"

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

TS_UNUSED static const char *worker(void)
{
    const char *w = getenv("SHMALLOC_TEST_WORKER");
    return w && *w ? w : "./build/pmix_ofi_worker";
}

TS_UNUSED static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The end of the output, for failure messages. */
TS_UNUSED static const char *tail(const run *r)
{
    return r->len > SHOW_TAIL ? r->out + r->len - SHOW_TAIL : r->out;
}

TS_UNUSED static int count(const run *r, const char *needle)
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

TS_UNUSED static int has(const run *r, const char *needle) { return strstr(r->out, needle) != NULL; }

TS_UNUSED static void append(char *cmd, size_t cap, const char *text)
{
    size_t n = strlen(cmd);
    cr_assert(n + strlen(text) < cap, "command line too long");
    memcpy(cmd + n, text, strlen(text) + 1);
}

/* The PID a start-up file's name carries (PID:N:N, shmalloc-PID-...), or 0. */
TS_UNUSED static long creator_of(const char *name)
{
    const char *p = strncmp(name, "shmalloc-", 9) == 0 ? name + 9 : name;
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || pid <= 0) return 0;
    return (p == name ? *end == ':' : *end == '-') ? pid : 0;
}

/* 1 while process pid runs: a zombie has ended (where PID 1 reaps no
   orphans, a killed PE stays one after mpirun is gone). */
TS_UNUSED static int process_runs(long pid)
{
    char path[64], text[512];
    const char *state;
    FILE *f;
    size_t n;
    if (kill((pid_t)pid, 0) != 0) return 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r"))) return 1;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    state = strrchr(text, ')');
    return !(state && (state[2] == 'Z' || state[2] == 'X'));
}

/* The names in /dev/shm, each between newlines (malloc'd). */
TS_UNUSED static char *shm_names(void)
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

/* Seconds a launch gives its files to go once the job has ended: a PE
   that mpirun killed before its handler ran leaves its file to its
   sweeper, which a loaded machine may run after mpirun's end. */
#define LAUNCH_SETTLE 1.0

/* The start-up files that appeared since `before` and whose process has
   ended: removed when `remove`; returns how many there were. */
TS_UNUSED static int stale_files(const char *before, int remove)
{
    char *after = shm_names(), *name = after + 1, *nl, key[300], path[300];
    int found = 0;
    for (; (nl = strchr(name, '\n')) != NULL; name = nl + 1) {
        long pid;
        *nl = '\0';
        snprintf(key, sizeof key, "\n%s\n", name);
        pid = creator_of(name);
        if (!pid || strstr(before, key) || process_runs(pid)) continue;
        snprintf(path, sizeof path, "/dev/shm/%s", name);
        found += !remove || unlink(path) == 0;
    }
    free(after);
    return found;
}

/* Removes the files a run left (after LAUNCH_SETTLE), and counts them. */
TS_UNUSED static int remove_leftovers(const char *before)
{
    double start = now();
    struct timespec tick = {0, 20 * 1000 * 1000};
    while (now() - start < LAUNCH_SETTLE && stale_files(before, 0)) nanosleep(&tick, NULL);
    return stale_files(before, 1);
}

/* Launches the worker with scenario on npes PEs (0: alone, no launcher),
   with env ("NAME=value" strings, NULL-terminated) on top of the loopback
   settings.  FI_PROVIDER is unset unless env sets it.  outer and inner,
   when not NULL, are shell commands that end by running their arguments:
   outer around the whole launch, inner around each PE. */
TS_UNUSED static void launch_in(run *r, int npes, const char *scenario, const char *const *env, const char *outer,
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
        if (getenv("SHMALLOC_METADATA")) append(cmd, sizeof cmd, " -x SHMALLOC_METADATA"); /* a suite run per mode */
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

TS_UNUSED static void launch(run *r, int npes, const char *scenario, const char *const *env)
{
    launch_in(r, npes, scenario, env, NULL, NULL);
}

/* The open-file limit of PE pe alone (ulimit -n), around each PE. */
TS_UNUSED static const char *fd_limit_on(char *buf, size_t cap, int pe, int limit)
{
    snprintf(buf, cap, "sh -c 'if [ \"$PMIX_RANK\" = %d ]; then ulimit -n %d || exit 9; fi; exec \"$0\" \"$@\"'",
             pe, limit);
    return buf;
}

#endif /* SHMALLOC_PMIX_OFI_LAUNCH_H */
