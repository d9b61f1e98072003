/* floor.c - the physical floor under a node barrier: two threads, pinned
   to two cpus, pass one cache line back and forth.  A round trip is two
   transfers of the line between the cpus; no barrier between two PEs can
   take less than one transfer.  Prints the median, the 10th and the 90th
   percentile of ROUNDS batches, in ns per round trip and per one-way
   transfer.

       ./build/bench/floor [CPU_A CPU_B]      (0 1 by default) */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* pthread_setaffinity_np, CPU_SET */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stats.h"

#define ROUNDS 101        /* batches; the median is the middle one */
#define TRIPS 20000       /* round trips per batch */

static struct {
    uint64_t ball; /* odd: the pong thread's turn; even: the ping thread's */
    char pad[56];
} line __attribute__((aligned(64)));

static int cpus[2] = {0, 1};

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((size_t)cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        fprintf(stderr, "floor: cannot pin to cpu %d: figures may not be a transfer's\n", cpu);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Answers every odd value with the next even one, until told to stop (0). */
static void *pong(void *arg)
{
    uint64_t v;
    (void)arg;
    pin(cpus[1]);
    for (;;) {
        while (((v = __atomic_load_n(&line.ball, __ATOMIC_ACQUIRE)) & 1) == 0)
            if (v == UINT64_MAX - 1) return NULL;
        __atomic_store_n(&line.ball, v + 1, __ATOMIC_RELEASE);
    }
}

/* One batch of round trips from the ping side: ns per round trip. */
static double batch(void)
{
    double t0 = now_ns();
    int i;
    for (i = 0; i < TRIPS; i++) {
        uint64_t v = __atomic_load_n(&line.ball, __ATOMIC_RELAXED);
        __atomic_store_n(&line.ball, v + 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&line.ball, __ATOMIC_ACQUIRE) == v + 1) continue;
    }
    return (now_ns() - t0) / TRIPS;
}

int main(int argc, char **argv)
{
    double t[ROUNDS];
    pthread_t th;
    int r;
    if (argc == 3) cpus[0] = atoi(argv[1]), cpus[1] = atoi(argv[2]);
    pin(cpus[0]);
    if (pthread_create(&th, NULL, pong, NULL) != 0) return 1;
    batch(); /* warm-up */
    for (r = 0; r < ROUNDS; r++) t[r] = batch();
    __atomic_store_n(&line.ball, UINT64_MAX - 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    qsort(t, ROUNDS, sizeof t[0], bench_by_value);
    printf("floor: cpus %d and %d: round trip %.0f ns (p10 %.0f, p90 %.0f), one transfer %.0f ns\n", cpus[0], cpus[1],
           t[ROUNDS / 2], t[ROUNDS / 10], t[ROUNDS * 9 / 10], t[ROUNDS / 2] / 2);
    return 0;
}
