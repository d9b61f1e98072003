/* spaces.c - what a space costs and whom it stops, on pthreads PEs:

     pair     a shmem_malloc + shmem_free pair on the world heap of 8 PEs,
              against a shmemx_space_malloc + shmem_free pair in a space
              of PEs 0 and 1 of the same 8 (the other 6 sleep in a
              barrier meanwhile): ns per pair, PE 0, median of REPS
     busy     team A (PEs 0, 1) makes ALLOCS space allocations (each
              freed) while team B (PEs 2, 3) computes for BUSY_S seconds,
              then while B sleeps as long: A's seconds, and B's (with 4
              PEs on fewer cpus, a computing B takes cpus A's barriers
              wait for; a sleeping one shows what A waits for B: nothing)

   PE 0 prints CSV rows; figures are printed, never judged. */
#define _GNU_SOURCE
#include "transports/shmalloc_pthreads.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define REPS 7
#define PAIRS 2000
#define ALLOCS 10000
#define BUSY_S 5.0

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static shmemx_space_t space_of(shmem_team_t team, size_t size)
{
    shmemx_space_config_t config = {0, 0, 0, NULL, 0};
    shmemx_space_t s = NULL;
    config.size = size;
    if (team != SHMEM_TEAM_INVALID && shmemx_space_create(team, &config, &s) != 0) exit(1);
    return s;
}

static double world_ns[REPS], space_ns[REPS];

static void pe_pair(void *arg)
{
    shmem_team_t pair = SHMEM_TEAM_INVALID;
    shmemx_space_t s;
    int r, i;
    double t;
    (void)arg;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &pair) != 0) exit(1);
    s = space_of(pair, (size_t)1 << 20);
    for (r = 0; r < REPS; r++) {
        shmem_barrier_all();
        t = now_s();
        for (i = 0; i < PAIRS; i++) shmem_free(shmem_malloc(64));
        world_ns[r] = (now_s() - t) * 1e9 / PAIRS;
        shmem_barrier_all();
        if (s != NULL) {
            t = now_s();
            for (i = 0; i < PAIRS; i++) shmem_free(shmemx_space_malloc(s, 64));
            space_ns[r] = (now_s() - t) * 1e9 / PAIRS;
        }
    }
    if (s != NULL) {
        shmemx_space_destroy(s, 0);
        shmem_team_destroy(pair);
    }
    shmem_barrier_all();
}

static double a_s, b_s;

/* arg: B sleeps (1) or computes (0). */
static void pe_busy(void *arg)
{
    int me = shmem_my_pe(), i;
    shmem_team_t a = SHMEM_TEAM_INVALID, b = SHMEM_TEAM_INVALID;
    shmemx_space_t s;
    volatile double sink = 0;
    double t;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &a) != 0 ||
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 2, 1, 2, NULL, 0, &b) != 0)
        exit(1);
    s = space_of(a, (size_t)1 << 20);
    shmem_barrier_all();
    t = now_s();
    if (s != NULL) {
        for (i = 0; i < ALLOCS; i++) shmem_free(shmemx_space_malloc(s, (size_t)(16 + i % 240)));
        if (me == 0) a_s = now_s() - t;
        shmemx_space_destroy(s, 0);
        shmem_team_destroy(a);
    } else {
        if (*(const int *)arg) {
            struct timespec rest = {(time_t)BUSY_S, 0};
            nanosleep(&rest, NULL);
        } else {
            while (now_s() - t < BUSY_S) sink += 1.0;
        }
        shmem_team_sync(b);
        if (me == 2) b_s = now_s() - t;
        shmem_team_destroy(b);
    }
    shmem_barrier_all();
}

int main(void)
{
    static const int sleeps[2] = {0, 1};
    int i;
    if (shmalloc_pthreads_run(8, (size_t)1 << 22, pe_pair, NULL) != 0) return 1;
    printf("pes,space_pes,pairs,world_pair_ns,space_pair_ns\n8,2,%d,%.0f,%.0f\n", PAIRS, median(world_ns, REPS),
           median(space_ns, REPS));
    printf("pes,team_b,team_a_allocs,team_a_s,team_b_s\n");
    for (i = 0; i < 2; i++) {
        if (shmalloc_pthreads_run(4, (size_t)1 << 22, pe_busy, (void *)&sleeps[i]) != 0) return 1;
        printf("4,%s,%d,%.3f,%.3f\n", sleeps[i] ? "sleeps" : "computes", ALLOCS, a_s, b_s);
    }
    return 0;
}
