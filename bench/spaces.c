/* spaces.c - what a space costs and whom it stops.  One source, built
   two ways: -DBENCH_PTHREADS (PEs are threads; the runs below are made in
   one process) or -DBENCH_PMIX_OFI (PEs are processes: run it with
   mpirun -np 8, which makes the pair figures; the busy ones use PEs 0-3
   of the 8 and leave the others in the final barrier):

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
#if defined(BENCH_PTHREADS)
#  include "transports/shmalloc_pthreads.h"
#else
#  include "transports/shmalloc_pmix_ofi.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stats.h"

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

static shmemx_space_t space_of(shmem_team_t team, size_t size)
{
    shmemx_space_config_t config = {0, 0, 0, NULL, 0, NULL};
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
    if (shmem_my_pe() == 0)
        printf("pes,space_pes,pairs,world_pair_ns,space_pair_ns\n%d,2,%d,%.0f,%.0f\n", shmem_n_pes(), PAIRS,
               bench_median(world_ns, REPS), bench_median(space_ns, REPS));
    shmem_barrier_all();
}

/* Team A is PEs 0 and 1, team B PEs 2 and 3; arg: B sleeps (1) or
   computes (0).  PE 0 prints A's seconds, PE 2 B's. */
static void pe_busy(void *arg)
{
    int me = shmem_my_pe(), i, sleeps = *(const int *)arg;
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
        if (me == 0) printf("team_a,%d,%d,%s,%.3f\n", shmem_n_pes(), ALLOCS, sleeps ? "sleeps" : "computes", now_s() - t);
        shmemx_space_destroy(s, 0);
        shmem_team_destroy(a);
    } else if (b != SHMEM_TEAM_INVALID) {
        if (sleeps) {
            struct timespec rest = {(time_t)BUSY_S, 0};
            nanosleep(&rest, NULL);
        } else {
            while (now_s() - t < BUSY_S) sink += 1.0;
        }
        shmem_team_sync(b);
        if (me == 2) printf("team_b,%d,%s,%.3f\n", shmem_n_pes(), sleeps ? "sleeps" : "computes", now_s() - t);
        shmem_team_destroy(b);
    }
    shmem_barrier_all();
}

static const int sleeps[2] = {0, 1};

#if defined(BENCH_PTHREADS)
int main(void)
{
    int i;
    if (shmalloc_pthreads_run(8, (size_t)1 << 22, pe_pair, NULL) != 0) return 1;
    printf("team,pes,allocs_or_b,b,seconds\n");
    for (i = 0; i < 2; i++)
        if (shmalloc_pthreads_run(4, (size_t)1 << 22, pe_busy, (void *)&sleeps[i]) != 0) return 1;
    return 0;
}
#else
int main(void)
{
    int i;
    shmem_init();
    if (shmem_n_pes() < 4) return 1;
    pe_pair(NULL);
    if (shmem_my_pe() == 0) printf("team,pes,allocs_or_b,b,seconds\n");
    for (i = 0; i < 2; i++) pe_busy((void *)&sleeps[i]);
    shmem_finalize();
    return 0;
}
#endif
