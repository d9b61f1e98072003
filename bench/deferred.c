/* deferred.c - shmemx_free_deferred against shmem_free: N blocks freed by
   N collective frees, against N local releases and one drain; and a
   shmem_malloc + shmem_free pair with nothing released, the cost every
   program pays for the feature.  Built two ways:

     -DBENCH_PTHREADS   2, 4 and 8 PEs as threads, in one sitting
     -DBENCH_PMIX_OFI   the PEs mpirun starts (one row)

   PE 0 prints one CSV row per PE count:
     pes,blocks,free_ns_per_block,release_ns_per_call,release_cpu_ns_per_call,
     drain_ns_per_block,release_and_drain_ns_per_block,drain_rounds,pair_ns
   (release_cpu: the thread's cpu time, without the waits for a cpu)
   each the median over REPS repetitions.  BENCH_DEFERRED_BLOCKS=N sets N
   (10 000 by default).  Figures are printed, never judged. */
#define _GNU_SOURCE
#if defined(BENCH_PMIX_OFI)
#  include "transports/shmalloc_pmix_ofi.h"
#else
#  include "transports/shmalloc_pthreads.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"

#define REPS 7
#define PAIRS 2000

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* This thread's cpu time: what a release costs when the PE waits for a cpu. */
static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int blocks_n;
static double free_ns[REPS], release_ns[REPS], release_cpu_ns[REPS], drain_ns[REPS], pair_ns[REPS];
static size_t rounds[REPS];

static void **allocate(void)
{
    void **b = malloc((size_t)blocks_n * sizeof *b);
    int i;
    if (!b) exit(1);
    for (i = 0; i < blocks_n; i++) /* untimed; without a barrier, so the setup is quick */
        if (!(b[i] = shmem_malloc_with_hints((size_t)(16 + i % 240), SHMEMX_MALLOC_NO_BARRIER))) exit(1);
    shmem_barrier_all();
    return b;
}

static void one_rep(int r)
{
    void **b = allocate();
    double t0, t1, t2, c0, c1;
    shmalloc_info a, z;
    int i;
    t0 = now_ns();
    for (i = 0; i < blocks_n; i++) shmem_free(b[i]);
    t1 = now_ns();
    if (shmem_my_pe() == 0) free_ns[r] = (t1 - t0) / blocks_n;
    free(b);
    b = allocate();
    shmemx_heap_info(&a);
    t0 = now_ns();
    c0 = cpu_ns();
    for (i = 0; i < blocks_n; i++) shmemx_free_deferred(b[i]);
    c1 = cpu_ns();
    t1 = now_ns();
    shmemx_free_deferred_drain();
    t2 = now_ns();
    shmemx_heap_info(&z);
    if (shmem_my_pe() == 0) {
        release_ns[r] = (t1 - t0) / blocks_n;
        release_cpu_ns[r] = (c1 - c0) / blocks_n;
        drain_ns[r] = (t2 - t1) / blocks_n;
        rounds[r] = z.drain_rounds - a.drain_rounds;
    }
    free(b);
    shmem_barrier_all();
    t0 = now_ns();
    for (i = 0; i < PAIRS; i++) shmem_free(shmem_malloc(64));
    t1 = now_ns();
    if (shmem_my_pe() == 0) pair_ns[r] = (t1 - t0) / PAIRS;
}

static void pe_main(void *arg)
{
    int r;
    (void)arg;
    for (r = 0; r < REPS; r++) one_rep(r);
    if (shmalloc_check(-1) != 0) {
        fprintf(stderr, "the heap check failed\n");
        exit(1);
    }
}

static void print_row(int npes)
{
    double rel = bench_median(release_ns, REPS), dr = bench_median(drain_ns, REPS);
    printf("%d,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%zu,%.1f\n", npes, blocks_n, bench_median(free_ns, REPS), rel,
           bench_median(release_cpu_ns, REPS), dr, rel + dr, rounds[REPS / 2], bench_median(pair_ns, REPS));
    fflush(stdout);
}

int main(void)
{
    const char *n = getenv("BENCH_DEFERRED_BLOCKS");
    const char *head = "pes,blocks,free_ns_per_block,release_ns_per_call,release_cpu_ns_per_call,"
                       "drain_ns_per_block,release_and_drain_ns_per_block,drain_rounds,pair_ns\n";
    blocks_n = n ? atoi(n) : 10000;
    if (blocks_n < 1) return 1;
#if defined(BENCH_PMIX_OFI)
    shmem_init();
    pe_main(NULL);
    if (shmem_my_pe() == 0) {
        printf("%s", head);
        print_row(shmem_n_pes());
    }
    shmem_finalize();
#else
    static const int pes[] = {2, 4, 8};
    printf("%s", head);
    for (int k = 0; k < 3; k++) {
        if (shmalloc_pthreads_run(pes[k], (size_t)64 << 20, pe_main, NULL) != 0) return 1;
        print_row(pes[k]);
    }
#endif
    return 0;
}
