/* pmix_ofi_worker.c - the program the tests/pmix_ofi/test_pmix_ofi_*.c suites launch:
   one PE of the PMIx + libfabric transport, running the scenario named by
   argv[1].

       mpirun -np 4 ./build/pmix_ofi_worker all
       ./build/pmix_ofi_worker all          (no launcher: one PE)

   Each PE prints "PE i of n: OK <scenario>" when its checks pass, or
   "PE i of n: FAIL <scenario> line L: <reason>" for each one that does not,
   and exits with 0 or 1.  Scenarios:

     symmetric  every collective allocation lands at the same offset on every
                PE; heap bases are the same or differ as
                SHMALLOC_TEST_EXPECT_ADDRESSES (same|differ) says, when set
     putget     puts and gets of several sizes and alignments, from and to
                heap and non-heap memory, to peers and to this PE
     realloc    realloc, align, calloc, free and their errors, data checked
                on a peer with getmem
     mismatch   PEs passing different sizes, alignments or blocks, or
                making different calls, all get NULL with
                SHMEM_MALLOC_SYMMSIZE_FAILED, and the heap stays usable
     barrier    a PE that leaves a barrier early is caught: each round every
                PE puts the round number to every peer before the barrier
     stress     SHMALLOC_TEST_WORKER_OPS (10000) random collective operations with
                the same seed on every PE, data checked on peers
     direct     peers' heaps through shmem_ptr (mapped on this node, or NULL
                as SHMALLOC_TEST_EXPECT_DIRECT (1|0) says, when set), loads and
                stores through them, 8-byte puts and gets to every PE
     all        the seven above, in that order, in one launch
   and, for fault tests:
     init       shmem_init and shmem_finalize only
     no_finalize  shmem_init, then main returns without shmem_finalize
     exit_3     the same, but PE 1 calls exit(3) (the others return)
     kill       PE 1 kills itself (SIGKILL) while the others are in a barrier
     exit       PE 1 calls _exit(3) while the others are in a barrier
     hang       PE 1 sleeps 30 s while the others are in a barrier
     global_exit  PE 1 calls shmem_global_exit(7)
     kill_in_malloc  PE 1 kills itself while the others are in shmem_malloc
     skip_malloc  PE 0 skips a shmem_malloc the others make, then finalizes
     return_early  PE 1 returns from main (status 0) without shmem_finalize
                while the others make a shmem_malloc
     exit_early  the same, but PE 1 calls exit(1)
     stop       PE 2 stops itself (SIGSTOP) while the others are in a barrier;
                a child of it continues it (SIGCONT) 8 s later
   and, run with SHMALLOC_HEAP_MAX (see "grow" below):
     grow       allocations far beyond the nominal size grow every heap
     bad_grow   one PE passes a bad argument while the others' calls need
                growth: every PE gets its error, no heap grows (bad_grow.h)
   and, to check the cost model:
     counts     50 barriers, then 25 shmem_malloc and shmem_free pairs: each
                call's slot reads, lines, messages and bytes (counted by
                the test build) are what the model says for the layout
                (SHMALLOC_TEST_EXPECT_NODE_SIZE, SHMALLOC_TEST_NODE_SIZE)
   and, run with SHMALLOC_DEBUG=1 on 2 PEs:
     reports    an allocation larger than the heap fails on every PE, then
                PE 1 makes one SHMEMX_MALLOC_NO_BARRIER allocation more than
                PE 0 and both call shmem_malloc, which fails: the out-of-
                memory, mismatch and (PE 1's block) leak reports follow
   and, started by shmem_init_thread(SHMEM_THREAD_MULTIPLE):
     threads    4 threads per PE put, quiet, get and verify blocks on every
                PE (and call the heap's non-collective checks) while the
                main thread makes collective allocations that grow the heap
                (run with SHMALLOC_HEAP_MAX), barriers and frees; then
                every PE checks every thread's last puts into its heap
                (with SHMALLOC_TEST_THREADS_SPACE=1, all in a space)
   and, on any number of PEs (pmix_ofi_worker_teams.c):
     teams      WORLD and SHARED (SHMALLOC_TEST_EXPECT_SHARED PEs each,
                npes when unset), strided splits, a split of a split,
                split_2d, translations, 200 rounds of overlapping teams'
                syncs and all-reduces, then bad splits, each failing on
                every PE with a message
     teams_concurrent  (even npes) two disjoint halves make 3000 and 1000
                all-reduces at once, each checking its values; then rows,
                columns and halves in turn
     team_skip  world PEs 1..n-1 make a team whose last PE sleeps instead
                of syncing: the others' team barrier times out
     team_heaps (even npes) a heap over each team of SHMALLOC_TEST_TEAM_PES
                PEs, half the world when unset (shmalloc_space_create over
                the transport's team member): 2000 (SHMALLOC_TEST_PAIRS)
                malloc and free pairs in the first while the other PEs
                sleep 2 s (SHMALLOC_TEST_SLEEP), then in the
                others; a mismatch, a busy destroy, the checker; each
                pair's time beside the world heap's
     spaces     the even and the odd PEs each make a space (shmemx_space_
                create, 64 KiB growing to 4 MiB): puts and gets around each
                team in a block and in one the space grew for, shmem_ptr
                (SHMALLOC_TEST_EXPECT_DIRECT) and shmem_addr_accessible for
                members and others, a destroy refused with live blocks
     space_outsider  PE 0 puts into its space at PE 1, outside the team
     teams_crossed  PEs 0 and 1 sync two teams of both in opposite orders
     team_messages  a team of every PE, then SHMEM_TEAM_SHARED, make 100
                all-reduces each: the messages sent and node slots read
                (test builds' counters); then SHARED and the world in turn
     teams_across_nodes  three overlapping teams over nodes, of which some
                hold one member, make 2000 all-reduces each, interleaved
   and, on one node:
     pingpong   PEs 2k and 2k+1 pass a round number back and forth 100 000
                times by 8-byte puts into each other's flag, each clearing
                its flag once seen: no put lands a second time
   and, on 2 PEs with SHMALLOC_METADATA set:
     overwrite  PE 1 puts 16, 32 and 64 bytes past a block's end on PE 0:
                separate metadata, nothing changes; inline, the next
                block's free fails on both PEs until the bytes are back
   SHMALLOC_TEST_WORKER_LEVEL=L: start with shmem_init_thread(L) and print
   "PE i of n: thread level L provided P query Q"; a refused L prints
   "thread level L refused" and exits with status 3.  pmix_ofi_worker.h
   lists the files that hold the scenarios. */
#include "pmix_ofi_worker.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int me, npes, failures;
static const char *current = "";
static uint64_t *scratch; /* npes words: the gather area */

static pthread_mutex_t fail_mutex = PTHREAD_MUTEX_INITIALIZER; /* the threads scenario */
void fail(int line, const char *fmt, ...)
{
    char reason[400];
    va_list ap;
    pthread_mutex_lock(&fail_mutex);
    if (++failures <= 20) { /* the first ones tell the story */
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        printf("PE %d of %d: FAIL %s line %d: %s\n", me, npes, current, line, reason);
        fflush(stdout);
    }
    pthread_mutex_unlock(&fail_mutex);
}

/* LeakSanitizer: libpmix 4.2 keeps two strings from PMIx_Init after
   PMIx_Finalize (pmix_rte_init, pmix_mca_base_show_load_errors_init).
   Only those frames are suppressed; a leak of ours still fails.  libpmix
   has no frame pointers, so the frames are found by the slow unwinder. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:pmix_rte_init\nleak:pmix_mca_base_show_load_errors_init\n";
}

/* ---- helpers ------------------------------------------------------------- */
/* SHMALLOC_TEST_EXPECT_DIRECT: 1 every peer's heap is mapped here (shmem_ptr
   gives an address), 0 none is, unset (-1) either. */
int expect_direct(void)
{
    const char *v = getenv("SHMALLOC_TEST_EXPECT_DIRECT");
    return v && *v ? atoi(v) != 0 : -1;
}

unsigned char pattern(int pe, uint32_t tag, size_t i)
{
    return (unsigned char)((unsigned)pe * 151u + tag * 31u + (unsigned)i * 7u + (unsigned)(i >> 9));
}

void fill(void *p, int pe, uint32_t tag, size_t from, size_t to)
{
    unsigned char *b = (unsigned char *)p;
    size_t i;
    for (i = from; i < to; i++) b[i] = pattern(pe, tag, i);
}

/* Index of the first byte of [from, to) that differs from pattern(pe, tag,
   base + i), or -1. */
long mismatch_at(const void *p, int pe, uint32_t tag, size_t base, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != pattern(pe, tag, base + i)) return (long)i;
    return -1;
}

uint64_t offset_of(const void *p)
{
    return (uint64_t)((const char *)p - (const char *)shmalloc_heap_base(shmalloc_current()));
}

/* Every PE's value, by puts into every PE's scratch and two barriers. */
void allgather(uint64_t v, uint64_t *out)
{
    int q;
    for (q = 0; q < npes; q++) shmem_putmem(&scratch[me], &v, sizeof v, q);
    shmem_barrier_all();
    memcpy(out, scratch, (size_t)npes * sizeof *out);
    shmem_barrier_all(); /* nobody overwrites scratch before all have read it */
}

/* 1 when v is the same on every PE. */
int same_everywhere(uint64_t v)
{
    uint64_t all[1024];
    int q, same = 1;
    if (npes > 1024) return 0;
    allgather(v, all);
    for (q = 0; q < npes; q++) same &= all[q] == v;
    return same;
}

size_t used_blocks(void)
{
    shmalloc_counters c;
    shmalloc_tlsf_counters(shmalloc_heap_tlsf(shmalloc_current()), &c);
    return c.used_blocks;
}

/* The neighbours in the ring of PEs. */
int right_pe(void) { return (me + 1) % npes; }
int left_pe(void) { return (me + npes - 1) % npes; }

/* ---- faults --------------------------------------------------------------- */
/* This PE stops; a child of it, holding none of its files, continues it
   `seconds` later. */
static void stop_for(unsigned seconds)
{
    pid_t parent = getpid(), child;
    fflush(NULL);
    child = fork();
    if (child == 0) {
        int fd;
        for (fd = 0; fd < 1024; fd++) close(fd); /* the launcher's pipes too: the job's end waits for none */
        sleep(seconds);
        kill(parent, SIGCONT);
        _exit(0);
    }
    if (child > 0) raise(SIGSTOP);
}

static void fault(const char *name)
{
    shmem_barrier_all();
    if (strcmp(name, "return_early") == 0 || strcmp(name, "exit_early") == 0) {
        void *p;
        if (me == 1) return; /* main then ends: returns, or exits */
        if ((p = shmem_malloc(64)) != NULL) fail(__LINE__, "shmem_malloc returned a block although PE 1 has ended");
        shmem_free(p);
        return;
    }
    if (strcmp(name, "skip_malloc") == 0) {
        void *p = me == 0 ? NULL : shmem_malloc(64); /* PE 0 then finalizes while the others wait */
        shmem_free(p);
        return;
    }
    if (strcmp(name, "stop") == 0 && me == 2) stop_for(8);
    if (me == 1) {
        fflush(stdout);
        if (strcmp(name, "kill") == 0) raise(SIGKILL);
        if (strcmp(name, "exit") == 0) _exit(3);
        if (strcmp(name, "hang") == 0) sleep(30);
        if (strcmp(name, "global_exit") == 0) shmem_global_exit(7);
        if (strcmp(name, "kill_in_malloc") == 0) raise(SIGKILL);
    }
    if (strcmp(name, "kill_in_malloc") == 0 && shmem_malloc(4096) != NULL) /* PE 1 never arrives */
        fail(__LINE__, "shmem_malloc returned although PE 1 is gone");
    shmem_barrier_all();
    if (npes > 1 && strcmp(name, "hang") != 0 && strcmp(name, "stop") != 0)
        fail(__LINE__, "the barrier returned although PE 1 is gone");
}

/* ---- reports --------------------------------------------------------------- */
/* What each PE prints is checked by test_pmix_ofi_scenarios.c: every line
   names the PE that prints it, and each PE's mismatch names the other PE,
   its call and its call number.  The output hook tags each line with the
   rank that printed it, as the launcher merges the PEs' output. */
static void tag_output(void *user, int stream, int id, const char *text)
{
    (void)user;
    fprintf(stream == 1 ? stdout : stderr, "rank %d says [%s] %s", me, shmalloc_message_name(id), text);
}

void scenario_reports(void)
{
    size_t too_big = shmalloc_heap_size(shmalloc_current()) + 4096;
    if (npes != 2) {
        fail(__LINE__, "reports needs 2 PEs, not %d", npes);
        return;
    }
    shmalloc_set_output(tag_output, NULL); /* to the end: the leak report comes at shmem_finalize */
    CHECK(shmem_malloc(too_big) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_FAIL);
    fflush(stdout);
    shmem_barrier_all(); /* the out-of-memory reports first, on both PEs */
    if (me == 1) CHECK(shmem_malloc_with_hints(64, SHMEMX_MALLOC_NO_BARRIER) != NULL);
    CHECK(shmem_malloc(128) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
}

/* ---- main ------------------------------------------------------------------ */
typedef struct scenario {
    const char *name;
    void (*run)(void);
    int in_all; /* 0: needs its own settings */
} scenario;

static const scenario scenarios[] = {
    {"symmetric", scenario_symmetric, 1}, {"putget", scenario_putget, 1}, {"realloc", scenario_realloc, 1},
    {"mismatch", scenario_mismatch, 1},   {"barrier", scenario_barrier, 1}, {"stress", scenario_stress, 1},
    {"direct", scenario_direct, 1},
    {"grow", scenario_grow, 0},          {"bad_grow", scenario_bad_grow, 0}, {"threads", scenario_threads, 0},
    {"reports", scenario_reports, 0},     {"counts", scenario_counts, 0},    {"deferred", scenario_deferred, 0},
    {"deferred_wide", scenario_deferred_wide, 0}, {"pingpong", scenario_pingpong, 0}, {"largest", scenario_largest, 0},
    {"overwrite", scenario_overwrite, 0},
    {"teams", scenario_teams, 0},         {"teams_concurrent", scenario_teams_concurrent, 0},
    {"team_skip", scenario_team_skip, 0}, {"team_heaps", scenario_team_heaps, 0},
    {"spaces", scenario_spaces, 0},       {"space_outsider", scenario_space_outsider, 0},
    {"teams_crossed", scenario_teams_crossed, 0}, {"spaces_crossed", scenario_spaces_crossed, 0}, {"team_messages", scenario_team_messages, 0},
    {"teams_across_nodes", scenario_teams_across_nodes, 0},
};

static void run(const scenario *sc)
{
    int before = failures;
    current = sc->name;
    sc->run();
    if (shmalloc_check(-1) != 0) fail(__LINE__, "shmalloc_check(-1) reports a corrupted heap");
    if (failures == before) printf("PE %d of %d: OK %s\n", me, npes, sc->name);
    fflush(stdout);
}

/* Every message after its ID's name ("[HEAP_OOM] shmalloc: ..."), which the
   tests match rather than the words. */
static void id_output(void *user, int stream, int id, const char *text)
{
    (void)user;
    fprintf(stream == 1 ? stdout : stderr, "[%s] %s", shmalloc_message_name(id), text);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "all";
    size_t i, n = sizeof scenarios / sizeof scenarios[0];
    int known = 0;

    shmalloc_set_output(id_output, NULL);
    if (getenv("SHMALLOC_TEST_WORKER_LEVEL") || strcmp(name, "threads") == 0) {
        const char *l = getenv("SHMALLOC_TEST_WORKER_LEVEL");
        int level = l ? atoi(l) : SHMEM_THREAD_MULTIPLE, provided = -99, query = -99;
        if (shmem_init_thread(level, &provided) != 0) {
            printf("thread level %d refused (provided %d, shmem_my_pe %d)\n", level, provided, shmem_my_pe());
            return 3;
        }
        shmem_query_thread(&query);
        printf("PE %d of %d: thread level %d provided %d query %d\n", shmem_my_pe(), shmem_n_pes(), level,
               provided, query);
    } else {
        shmem_init();
    }
    me = shmem_my_pe();
    npes = shmem_n_pes();
    scratch = (uint64_t *)shmem_calloc((size_t)npes, sizeof *scratch);
    if (!scratch) {
        printf("PE %d of %d: FAIL setup: no scratch array (malloc_error %ld)\n", me, npes, malloc_error);
        shmem_global_exit(1);
    }
    current = name;
    for (i = 0; i < n; i++)
        if ((strcmp(name, "all") == 0 && scenarios[i].in_all) || strcmp(name, scenarios[i].name) == 0) {
            run(&scenarios[i]);
            known = 1;
        }
    if (strcmp(name, "kill") == 0 || strcmp(name, "exit") == 0 || strcmp(name, "hang") == 0 ||
        strcmp(name, "global_exit") == 0 || strcmp(name, "kill_in_malloc") == 0 || strcmp(name, "skip_malloc") == 0 ||
        strcmp(name, "stop") == 0 || strcmp(name, "return_early") == 0 || strcmp(name, "exit_early") == 0) {
        fault(name);
        known = 1;
    }
    fflush(stdout);
    if (strcmp(name, "return_early") == 0 && me == 1) return 0; /* during the others' shmem_malloc */
    if (strcmp(name, "exit_early") == 0 && me == 1) exit(1);
    if (!known && strcmp(name, "init") != 0 && strcmp(name, "no_finalize") != 0 && strcmp(name, "exit_3") != 0)
        fail(__LINE__, "unknown scenario %s", name);
    current = name;
    shmem_free(scratch);
    if (shmalloc_check(-1) != 0) fail(__LINE__, "shmalloc_check(-1) reports a corrupted heap");
    if (strcmp(name, "all") == 0 || strcmp(name, "init") == 0) {
        if (me == 0) shmalloc_stats(0);
        if (!failures) printf("PE %d of %d: OK %s\n", me, npes, name);
    }
    fflush(stdout);
    if (strcmp(name, "no_finalize") == 0) return failures ? 1 : 0; /* finalized at exit */
    if (strcmp(name, "exit_3") == 0 && me == 1) exit(3);
    shmem_finalize();
    if (strcmp(name, "deferred") == 0) deferred_after_finalize();
    return failures ? 1 : 0;
}
