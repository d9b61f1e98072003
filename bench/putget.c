/* putget.c - latency of shmem_putmem and shmem_getmem between two PEs of
   one node on the PMIx transport, 8 B, 64 B and 64 KiB, by whichever path
   SHMALLOC_PMIX_OFI_DIRECT selects (1: copies into the peer's heap mapped
   here; 0: libfabric RMA).  PE 0 times; PE 1 waits in a barrier, which
   keeps its libfabric progress going.  BENCH_THREAD_LEVEL=L starts it
   with shmem_init_thread(L) (3: SHMEM_THREAD_MULTIPLE, whose locks are
   then in the path).  bench/putget.sh runs both paths at levels 0 and 3.
   Prints one line per size; never a pass/fail test. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE
#endif
#include "transports/shmalloc_pmix_ofi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"

#define BATCHES 7

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns per call, the median over BATCHES batches of n calls. */
static double timed(int put, char *remote, char *local, size_t bytes, long n)
{
    double ns[BATCHES];
    int b;
    long i;
    for (b = 0; b < BATCHES; b++) {
        double t0 = now();
        for (i = 0; i < n; i++) {
            if (put) shmem_putmem(remote, local, bytes, 1);
            else shmem_getmem(local, remote, bytes, 1);
        }
        if (put) shmem_quiet();
        ns[b] = (now() - t0) * 1e9 / (double)n;
    }
    qsort(ns, BATCHES, sizeof ns[0], bench_by_value);
    return ns[BATCHES / 2];
}

int main(void)
{
    static const size_t sizes[] = {8, 64, (size_t)64 << 10};
    const char *level = getenv("BENCH_THREAD_LEVEL"), *path;
    char *remote, *local;
    size_t s;
    int provided = SHMEM_THREAD_SINGLE;
    if (!level) shmem_init();
    else if (shmem_init_thread(atoi(level), &provided) != 0) return 1; /* it said why */
    remote = (char *)shmem_malloc((size_t)64 << 10);
    local = (char *)malloc((size_t)64 << 10);
    if (!remote || !local || shmem_n_pes() != 2) {
        fprintf(stderr, "putget: needs 2 PEs and 64 KiB of heap\n");
        shmem_global_exit(1);
    }
    memset(local, 1, (size_t)64 << 10);
    path = shmalloc_options()[shmalloc_option_find("SHMALLOC_PMIX_OFI_DIRECT")].value ? "direct" : "libfabric";
    if (shmem_my_pe() == 0)
        for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            long n = sizes[s] <= 64 ? 20000 : 2000;
            double put = timed(1, remote, local, sizes[s], n), get = timed(0, remote, local, sizes[s], n);
            printf("path=%s thread_level=%d shmem_ptr=%s bytes=%zu put_ns=%.1f get_ns=%.1f\n",
                   path, provided,
                   shmem_ptr(remote, 1) ? "address" : "NULL", sizes[s], put, get);
        }
    shmem_barrier_all();
    shmem_free(remote);
    free(local);
    shmem_finalize();
    return 0;
}
