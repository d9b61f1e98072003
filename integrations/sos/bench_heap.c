/* bench_heap.c - a malloc-heavy OpenSHMEM program, to time a runtime's
   symmetric heap (integrations/sos: stock SOS against SOS with shmalloc).
   Prints figures, judges nothing.  Every phase is the median of 5 runs, in
   ns per operation on PE 0.

   barrier  shmem_barrier_all alone: what each collective call below pays
            on top of the allocator
   pairs    shmem_malloc + shmem_free of one block, sizes 16 B .. 64 KiB in
            turn (two barriers per pair)
   churn    a window of 512 live blocks of 16 B .. 16 KiB: each step frees a
            random one (a barrier) and allocates another, without a barrier
            (SOS's SHMEMX_MALLOC_NO_BARRIER), or aligned (a barrier), or
            allocates and then reallocates it (two more)
   batch    512 allocations without a barrier, then their 512 frees (a
            barrier each), over and over

   With one PE the barriers cost little and the allocator shows; with
   more, the barriers dominate. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WINDOW 512
#define REPEAT 5

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t rng_state = 0x2545f4914f6cdd1du;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double barriers(int n)
{
    double t = now_ns();
    for (int i = 0; i < n; i++) shmem_barrier_all();
    return (now_ns() - t) / n;
}

static double pairs(int n)
{
    double t = now_ns();
    for (int i = 0; i < n; i++) shmem_free(shmem_malloc((size_t)16 << (i % 13)));
    return (now_ns() - t) / n;
}

static void *slot[WINDOW];

static void *one_block(long hints)
{
    size_t size = 16 + (size_t)(rng() % 16384);
    switch (rng() % 8) {
    case 0: return shmem_align((size_t)64 << (rng() % 6), size);
    default: return shmem_malloc_with_hints(size, hints);
    }
}

static double churn(int steps, long hints, int batch_frees)
{
    for (int i = 0; i < WINDOW; i++) slot[i] = one_block(hints);
    shmem_barrier_all();
    double t = now_ns();
    if (!batch_frees) {
        for (int i = 0; i < steps; i++) {
            int s = (int)(rng() % WINDOW);
            shmem_free(slot[s]);
            slot[s] = (rng() % 4 == 0) ? shmem_realloc(one_block(hints), 16 + (size_t)(rng() % 16384))
                                       : one_block(hints);
        }
    } else {
        for (int i = 0; i < steps / WINDOW; i++) {
            for (int s = 0; s < WINDOW; s++) shmem_free(slot[s]);
            for (int s = 0; s < WINDOW; s++) slot[s] = one_block(hints);
        }
        steps = steps / WINDOW * WINDOW;
    }
    double per = (now_ns() - t) / steps;
    for (int i = 0; i < WINDOW; i++) shmem_free(slot[i]);
    return per;
}

static void report(const char *what, double (*run)(int, long, int), int n, long hints, int batch)
{
    double r[REPEAT];
    for (int i = 0; i < REPEAT; i++) r[i] = run(n, hints, batch);
    qsort(r, REPEAT, sizeof r[0], cmp);
    if (shmem_my_pe() == 0) printf("  %-7s %8.0f ns/op  (%d ops, min %.0f, max %.0f)\n", what, r[REPEAT / 2], n, r[0], r[REPEAT - 1]);
}

static double pairs3(int n, long hints, int batch) { (void)hints; (void)batch; return pairs(n); }
static double barriers3(int n, long hints, int batch) { (void)hints; (void)batch; return barriers(n); }

int main(void)
{
    shmem_init();
    if (shmem_my_pe() == 0) printf("  bench_heap on %d PE(s)\n", shmem_n_pes());
    report("barrier", barriers3, 20000, 0, 0);
    report("pairs", pairs3, 20000, 0, 0);
    report("churn", churn, 20000, SHMEMX_MALLOC_NO_BARRIER, 0);
    report("batch", churn, 51200, SHMEMX_MALLOC_NO_BARRIER, 1);
    shmem_finalize();
    return 0;
}
