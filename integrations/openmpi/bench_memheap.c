/* bench_memheap.c - what an OpenSHMEM program pays for its symmetric heap,
   with whatever memheap the runtime chose.  Prints figures; never fails on
   time.  usage: bench_memheap REPS

   barrier  one shmem_barrier_all, for scale: every heap call is collective
   pair     shmem_malloc(64) + shmem_free
   churn    one step of a malloc-heavy program: 512 blocks of 16 B..16 KiB
            live; each step frees one and allocates (malloc, align or
            realloc) in its place
   frag     one long random sequence (20000 calls, 1024 slots, 16 B..64 KiB,
            the same on every run): the span the live blocks reach (from the
            lowest block start to the highest block end ever seen) over the
            most bytes live at once; 1.0 would be perfect packing
   The median of REPS runs of each timed phase, ns per operation. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static size_t random_size(uint64_t *rng, unsigned max_log2)
{
    unsigned log2 = 4 + (unsigned)(next_random(rng) % (max_log2 - 3));
    return 1 + (size_t)(next_random(rng) % ((size_t)1 << log2));
}

enum { BARRIERS = 2000, PAIRS = 2000, CHURN_SLOTS = 512, CHURN_STEPS = 4000 };

static double phase_barrier(void)
{
    double t0 = now_ns();
    for (int i = 0; i < BARRIERS; i++) shmem_barrier_all();
    return (now_ns() - t0) / BARRIERS;
}

static double phase_pair(void)
{
    double t0 = now_ns();
    for (int i = 0; i < PAIRS; i++) shmem_free(shmem_malloc(64));
    return (now_ns() - t0) / PAIRS;
}

static double phase_churn(void)
{
    static void *slot[CHURN_SLOTS];
    uint64_t rng = 7;
    for (int i = 0; i < CHURN_SLOTS; i++) slot[i] = shmem_malloc(random_size(&rng, 14));
    double t0 = now_ns();
    for (int step = 0; step < CHURN_STEPS; step++) {
        unsigned k = (unsigned)(next_random(&rng) % CHURN_SLOTS);
        size_t n = random_size(&rng, 14);
        if (step % 4 == 0) {
            void *q = shmem_realloc(slot[k], n);
            if (q) slot[k] = q;
            continue;
        }
        shmem_free(slot[k]);
        slot[k] = step % 4 == 1 ? shmem_align(256, n) : shmem_malloc(n);
    }
    double per = (now_ns() - t0) / CHURN_STEPS;
    for (int i = 0; i < CHURN_SLOTS; i++) shmem_free(slot[i]);
    return per;
}

enum { FRAG_SLOTS = 1024, FRAG_CALLS = 20000 };
static void phase_frag(void)
{
    static char *slot[FRAG_SLOTS];
    static size_t len[FRAG_SLOTS];
    uint64_t rng = 12345;
    uintptr_t low = UINTPTR_MAX, high = 0;
    size_t live = 0, peak_live = 0, failed = 0;
    for (int call = 0; call < FRAG_CALLS; call++) {
        unsigned k = (unsigned)(next_random(&rng) % FRAG_SLOTS);
        int was_live = slot[k] != NULL; /* a live slot is sometimes left empty */
        shmem_free(slot[k]);
        live -= len[k];
        len[k] = was_live && next_random(&rng) % 4 == 0 ? 0 : random_size(&rng, 16);
        slot[k] = len[k] ? shmem_malloc(len[k]) : NULL;
        if (len[k] && !slot[k]) failed++, len[k] = 0;
        live += len[k];
        if (live > peak_live) peak_live = live;
        if (slot[k] && (uintptr_t)slot[k] < low) low = (uintptr_t)slot[k];
        if (slot[k] && (uintptr_t)slot[k] + len[k] > high) high = (uintptr_t)slot[k] + len[k];
    }
    for (int i = 0; i < FRAG_SLOTS; i++) shmem_free(slot[i]);
    if (shmem_my_pe() == 0)
        printf("frag peak_span=%zu peak_live=%zu frag=%.3f failed=%zu\n", (size_t)(high - low), peak_live,
               (double)(high - low) / (double)peak_live, failed);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double (*phase)(void), int reps)
{
    double v[32];
    for (int r = 0; r < reps; r++) v[r] = phase();
    qsort(v, (size_t)reps, sizeof v[0], by_value);
    return v[reps / 2];
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 32) reps = 5;
    shmem_init();
    double barrier = median(phase_barrier, reps), pair = median(phase_pair, reps);
    double churn = median(phase_churn, reps);
    if (shmem_my_pe() == 0)
        printf("npes=%d barrier_ns=%.0f pair_ns=%.0f churn_ns=%.0f\n", shmem_n_pes(), barrier, pair, churn);
    phase_frag();
    shmem_finalize();
    return 0;
}
