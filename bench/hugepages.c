/* hugepages.c - random 8-byte accesses over a 1 GiB symmetric heap, on the
   pages SHMALLOC_HUGE_PAGES obtains (bench/hugepages.sh runs it with each
   setting).  One PE of the pthreads transport allocates nearly its whole
   heap as one block, touches every page, then times
     chase   loads that each depend on the previous one (latency: a TLB
             miss per access shows in full), and
     update  independent read-modify-writes at random offsets (throughput).
   It prints one line of key=value figures and the page kind smaps shows
   for the block.  Never a pass/fail test.

       SHMALLOC_HUGE_PAGES=2M ./build/bench/hugepages [ACCESSES] */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE
#endif
#include "shmalloc.h"
#include "transports/shmalloc_pthreads.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"

#define HEAP ((size_t)1 << 30)
#define BLOCK HEAP /* the whole nominal size: the allocator's own bytes are mapped on top */
#define RUNS 5

static long accesses = 20000000;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void smaps_of(const void *addr, size_t *kernel_kb, size_t *thp_kb, size_t *hugetlb_kb)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0;
    *kernel_kb = *thp_kb = *hugetlb_kb = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        else if (inside && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1) *kernel_kb = kb;
        else if (inside && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) *thp_kb = kb;
        else if (inside && sscanf(line, "Private_Hugetlb: %lu kB", &kb) == 1) *hugetlb_kb = kb;
    }
    if (f) fclose(f);
}

/* ns per access, the median of RUNS. */
static double timed(uint64_t *w, size_t mask, int chase, uint64_t *sink)
{
    double ns[RUNS];
    int r;
    for (r = 0; r < RUNS; r++) {
        uint64_t x = (uint64_t)r * 0x9e3779b97f4a7c15u + 1, sum = 0;
        double t0 = now();
        long i;
        if (chase) {
            for (i = 0; i < accesses; i++) x = w[(x * 0x2545f4914f6cdd1du + (uint64_t)i) >> 20 & mask];
            sum = x;
        } else {
            for (i = 0; i < accesses; i++) {
                x = x * 6364136223846793005u + 1442695040888963407u;
                w[(x >> 20) & mask] += (uint64_t)i;
            }
            sum = w[x & mask];
        }
        ns[r] = (now() - t0) * 1e9 / (double)accesses;
        *sink += sum;
    }
    qsort(ns, RUNS, sizeof ns[0], bench_by_value);
    return ns[RUNS / 2];
}

static void pe_main(void *arg)
{
    uint64_t *w = (uint64_t *)shmem_malloc(BLOCK), sink = 0;
    size_t words = BLOCK / sizeof *w, i, kernel_kb, thp_kb, hugetlb_kb; /* a power of two */
    const shmalloc_option *huge = &shmalloc_options()[shmalloc_option_find("SHMALLOC_HUGE_PAGES")];
    const char *setting = huge->source ? huge->text : NULL; /* as the run read it */
    double setup, chase, update;
    (void)arg;
    if (!w) {
        fprintf(stderr, "hugepages: cannot allocate %zu bytes\n", (size_t)BLOCK);
        exit(1);
    }
    setup = now();
    for (i = 0; i < BLOCK / sizeof *w; i++) w[i] = i * 0x9e3779b97f4a7c15u; /* every page touched */
    setup = now() - setup;
    smaps_of(w, &kernel_kb, &thp_kb, &hugetlb_kb);
    chase = timed(w, words - 1, 1, &sink);
    update = timed(w, words - 1, 0, &sink);
    printf("setting=%s kernel_page_kb=%zu thp_mib=%zu hugetlb_mib=%zu span_mib=%zu accesses=%ld "
           "touch_s=%.3f chase_ns=%.2f update_ns=%.2f sink=%llu\n",
           setting ? setting : "unset", kernel_kb, thp_kb >> 10, hugetlb_kb >> 10, (words * sizeof *w) >> 20,
           accesses, setup, chase, update, (unsigned long long)(sink & 0xff));
    shmem_free(w);
    if (shmalloc_check(-1) != 0) fprintf(stderr, "hugepages: the heap checker failed\n");
}

int main(int argc, char **argv)
{
    if (argc > 1) accesses = atol(argv[1]);
    if (accesses < 1) accesses = 1;
    return shmalloc_pthreads_run(1, HEAP, pe_main, NULL);
}
