/* stats.h - how the benchmarks sort their samples: each figure is a
   median (or another rank) of repeated runs. */
#if !defined(SHMALLOC_BENCH_STATS_H)
#define SHMALLOC_BENCH_STATS_H

#include <stdlib.h>

static inline int bench_by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts the n values of v and returns the middle one. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_by_value);
    return v[n / 2];
}

#endif /* SHMALLOC_BENCH_STATS_H */
