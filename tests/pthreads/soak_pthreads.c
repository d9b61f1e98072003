/* soak_pthreads.c - many random collective operations on 4 PEs.

   Every PE runs the same seeded sequence of shmem_malloc / shmem_calloc /
   shmem_align / shmem_realloc / shmem_free over 256 slots.  Each block is
   filled with a pattern naming its slot and generation; every 64th step a
   PE reads a random live block from its right neighbour with shmem_getmem
   and verifies it, and every block is verified before it is freed.  At the
   end every PE checks its heap.  Prints operations, time and the verdict.

       soak_pthreads [operations per PE, default 10000000] [npes, default 4]
*/
#include "transports/shmalloc_pthreads.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 256

static long ops_per_pe;
static int failures;

typedef struct slot {
    unsigned char *p;
    size_t n;
    unsigned gen;
} slot;

static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static unsigned char byte_of(int k, unsigned gen, size_t i) { return (unsigned char)((unsigned)k * 31u + gen * 7u + (unsigned)i); }

static void fill(slot *s, int k)
{
    size_t i;
    for (i = 0; i < s->n; i++) s->p[i] = byte_of(k, s->gen, i);
}

static int same(const unsigned char *p, size_t n, int k, unsigned gen)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != byte_of(k, gen, i)) return 0;
    return 1;
}

static void fail(const char *what, long step)
{
    printf("PE %d: %s at step %ld\n", shmem_my_pe(), what, step);
    __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

static void pe_main(void *arg)
{
    slot s[SLOTS];
    uint64_t rng = 0x243f6a8885a308d3ull; /* the same on every PE: the calls are collective */
    unsigned char buf[4096];
    int right = (shmem_my_pe() + 1) % shmem_n_pes(), k;
    long step;
    (void)arg;
    memset(s, 0, sizeof s);
    for (step = 0; step < ops_per_pe; step++) {
        k = (int)(next(&rng) % SLOTS);
        size_t n = 1 + next(&rng) % (1u << (next(&rng) % 12));
        unsigned r = (unsigned)(next(&rng) % 8);
        if (s[k].p && !same(s[k].p, s[k].n, k, s[k].gen)) fail("block changed", step);
        if (!s[k].p) {
            s[k].p = r < 4 ? shmem_malloc(n) : r < 6 ? shmem_calloc(1, n) : shmem_align((size_t)32 << (r & 3), n);
            if (!s[k].p) continue;
            s[k].n = n;
            s[k].gen++;
            fill(&s[k], k);
        } else if (r < 3) {
            unsigned char *q = shmem_realloc(s[k].p, n);
            if (!q) continue;
            if (!same(q, s[k].n < n ? s[k].n : n, k, s[k].gen)) fail("realloc lost contents", step);
            s[k].p = q;
            s[k].n = n;
            s[k].gen++;
            fill(&s[k], k);
        } else {
            shmem_free(s[k].p);
            s[k].p = NULL;
        }
        if ((step & 63) == 0 && s[k].p) { /* the neighbour's copy holds the same pattern */
            size_t m = s[k].n < sizeof buf ? s[k].n : sizeof buf;
            shmem_barrier_all();
            shmem_getmem(buf, s[k].p, m, right);
            if (!same(buf, m, k, s[k].gen)) fail("neighbour's block differs", step);
            shmem_barrier_all();
        }
    }
    for (k = 0; k < SLOTS; k++) shmem_free(s[k].p);
    if (shmalloc_check(0) != 0) fail("heap check failed", step);
}

int main(int argc, char **argv)
{
    struct timespec t0, t1;
    int npes = argc > 2 ? atoi(argv[2]) : 4;
    double secs;
    ops_per_pe = argc > 1 ? atol(argv[1]) : 10000000L;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (shmalloc_pthreads_run(npes, (size_t)64 << 20, pe_main, NULL)) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("soak_pthreads: %ld collective operations on each of %d PEs in %.1f s (%.2f us each), %d failures\n",
           ops_per_pe, npes, secs, secs * 1e6 / (double)ops_per_pe, failures);
    return failures != 0;
}
