/* collective.c - latency of the collective calls: shmem_barrier_all, a
   shmem_malloc + shmem_free pair (8 B, 4 KiB, 1 MiB, 64 MiB), a
   shmem_realloc grow + shrink pair, a realloc that moves, and a batch of 1 000 allocations then a
   barrier, plain and (where the runtime has it) with
   SHMEMX_MALLOC_NO_BARRIER: those rows' figures are per batch, not per
   call.  One source, built three ways:

     -DBENCH_PTHREADS   shmalloc with the pthreads transport (PEs are threads)
     -DBENCH_PMIX_OFI   shmalloc with the PMIx + libfabric transport
     neither, by oshcc  Open MPI's own OpenSHMEM

   PE 0 prints one CSV row per figure: name,ns_per_op,ns_min,ns_max,p999_ns
   where ns_per_op is the median over the repetitions of each batch's mean,
   min-max the range of those means and p999 the 99.9th percentile of the
   single calls.  BENCH_COLLECTIVE_ITERS=N caps the calls per batch (for
   runtimes whose calls take milliseconds).  Figures are printed, never
   judged. */
#define _GNU_SOURCE
#if defined(BENCH_PTHREADS)
#  include "transports/shmalloc_pthreads.h"
#elif defined(BENCH_PMIX_OFI)
#  include "transports/shmalloc_pmix_ofi.h"
#else
#  include <shmem.h> /* Open MPI's OpenSHMEM, through oshcc */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"

#define REPS 7
#define MAX_SAMPLES 20000

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double samples[MAX_SAMPLES];

/* What one measurement does: `op` runs one timed call pair. */
typedef void (*op_fn)(size_t size);

static void op_barrier(size_t size) { (void)size; shmem_barrier_all(); }
static void op_malloc_free(size_t size)
{
    void *p = shmem_malloc(size);
    if (!p) { fprintf(stderr, "shmem_malloc(%zu) failed\n", size); exit(1); }
    shmem_free(p);
}
static __thread void *grow_block; /* each PE's own: the pthreads transport's PEs are threads */
static void op_realloc(size_t size)
{
    grow_block = shmem_realloc(grow_block, size * 2);
    grow_block = shmem_realloc(grow_block, size);
    if (!grow_block) { fprintf(stderr, "shmem_realloc failed\n"); exit(1); }
}

static void measure(const char *name, op_fn op, size_t size, int iters)
{
    double means[REPS];
    int r, i, n = 0;
    const char *cap = getenv("BENCH_COLLECTIVE_ITERS");
    if (cap && atoi(cap) > 0 && iters > atoi(cap)) iters = atoi(cap);
    if (iters > MAX_SAMPLES / REPS) iters = MAX_SAMPLES / REPS;
    for (i = 0; i < iters / 10 + 1; i++) op(size); /* warm-up */
    for (r = 0; r < REPS; r++) {
        double t0 = now_ns(), t;
        for (i = 0; i < iters; i++) {
            t = now_ns();
            op(size);
            samples[n++] = now_ns() - t;
        }
        means[r] = (now_ns() - t0) / iters;
    }
    qsort(means, REPS, sizeof means[0], bench_by_value);
    qsort(samples, (size_t)n, sizeof samples[0], bench_by_value);
    if (shmem_my_pe() == 0)
        printf("%s,%.0f,%.0f,%.0f,%.0f\n", name, means[REPS / 2], means[0], means[REPS - 1],
               samples[(size_t)((double)n * 0.999)]);
    fflush(stdout);
}

/* A batch of 1 000 allocations of 64 B, then one barrier: with
   SHMEMX_MALLOC_NO_BARRIER the barrier is the batch's only synchronisation;
   plain ones synchronise each.  Prints the time of a whole batch (median,
   min, max of REPS; the frees afterwards are not timed). */
#define BATCH 1000
static void measure_batch(const char *name, long hints)
{
    void **blocks = malloc(BATCH * sizeof *blocks); /* this PE's own: PEs may be threads */
    double t[REPS];
    int r, i;
    if (!blocks) exit(1);
    for (r = 0; r < REPS; r++) {
        double t0;
        shmem_barrier_all();
        t0 = now_ns();
        for (i = 0; i < BATCH; i++) {
#if defined(SHMEMX_MALLOC_NO_BARRIER)
            blocks[i] = hints ? shmem_malloc_with_hints(64, hints) : shmem_malloc(64);
#else
            blocks[i] = shmem_malloc(64);
#endif
            if (!blocks[i]) { fprintf(stderr, "%s: allocation %d failed\n", name, i); exit(1); }
        }
        shmem_barrier_all();
        t[r] = now_ns() - t0;
        for (i = 0; i < BATCH; i++) shmem_free(blocks[i]);
    }
    free(blocks);
    qsort(t, REPS, sizeof t[0], bench_by_value);
    if (shmem_my_pe() == 0) printf("%s,%.0f,%.0f,%.0f,%.0f\n", name, t[REPS / 2], t[0], t[REPS - 1], t[REPS - 1]);
    fflush(stdout);
}

/* 1 000 reallocs from 4 KiB to 8 KiB, each of a block followed by a used
   one, so each moves: ns per realloc (median, min, max of REPS). */
static void measure_realloc_move(const char *name)
{
    void **blocks = malloc(2 * BATCH * sizeof *blocks), **walls = blocks + BATCH; /* this PE's own */
    double t[REPS];
    int r, i;
    if (!blocks) exit(1);
    for (r = 0; r < REPS; r++) {
        double t0;
        for (i = 0; i < BATCH; i++) {
            blocks[i] = shmem_malloc(4096);
            walls[i] = shmem_malloc(16);
            if (!blocks[i] || !walls[i]) { fprintf(stderr, "%s: set-up failed\n", name); exit(1); }
        }
        shmem_barrier_all();
        t0 = now_ns();
        for (i = 0; i < BATCH; i++)
            if (!(blocks[i] = shmem_realloc(blocks[i], 8192))) { fprintf(stderr, "%s: realloc %d failed\n", name, i); exit(1); }
        t[r] = (now_ns() - t0) / BATCH;
        for (i = 0; i < BATCH; i++) {
            shmem_free(walls[i]);
            shmem_free(blocks[i]);
        }
    }
    free(blocks);
    qsort(t, REPS, sizeof t[0], bench_by_value);
    if (shmem_my_pe() == 0) printf("%s,%.0f,%.0f,%.0f,%.0f\n", name, t[REPS / 2], t[0], t[REPS - 1], t[REPS - 1]);
    fflush(stdout);
}

static void bench(void *arg)
{
    (void)arg;
    measure("barrier", op_barrier, 0, 2000);
    measure("malloc_free_8B", op_malloc_free, 8, 1000);
    measure("malloc_free_4KiB", op_malloc_free, 4096, 1000);
    measure("malloc_free_1MiB", op_malloc_free, (size_t)1 << 20, 1000);
    measure("malloc_free_64MiB", op_malloc_free, (size_t)64 << 20, 500);
    grow_block = shmem_malloc(4096);
    measure("realloc_4KiB", op_realloc, 4096, 1000);
    shmem_free(grow_block);
    measure_realloc_move("realloc_move_4KiB_to_8KiB");
    measure_batch("malloc_x1000_then_barrier", 0);
#if defined(SHMEMX_MALLOC_NO_BARRIER)
    measure_batch("malloc_x1000_no_barrier_then_barrier", SHMEMX_MALLOC_NO_BARRIER);
#endif
}

int main(int argc, char **argv)
{
#if defined(BENCH_PTHREADS)
    int npes = argc > 1 ? atoi(argv[1]) : 2;
    return shmalloc_pthreads_run(npes, (size_t)256 << 20, bench, NULL);
#else
    (void)argc, (void)argv;
    shmem_init();
    bench(NULL);
    shmem_finalize();
    return 0;
#endif
}
