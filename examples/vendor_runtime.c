/* vendor_runtime.c - how a SHMEM runtime vendors shmalloc.h.

   A toy runtime, "minirt", whose PEs are forked processes.  All heaps live in
   one shared mapping, so a PE reaches a peer's copy of a symmetric object by
   its offset.  The runtime keeps its own entry points (minirt_malloc, ...):
   it compiles the SHMEM names out and fills a shmalloc_transport with its own
   barrier and all-reduce.

       cc -std=c99 -I.. vendor_runtime.c -pthread -o vendor_runtime
       ./vendor_runtime 3
*/
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#define SHMALLOC_NO_SHMEM_NAMES
#define SHMALLOC_IMPLEMENTATION
#include "../shmalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MINIRT_MAX_PES 16
#define MINIRT_HEAP ((size_t)4 << 20)

/* What every process shares: a barrier, all-reduce slots, then the heaps. */
struct minirt_shared {
    pthread_barrier_t barrier;
    uint64_t slots[2][MINIRT_MAX_PES][16]; /* double-buffered by call parity */
};

static struct minirt_shared *rt_shared;
static char *rt_heaps;    /* npes heaps of rt_stride bytes each */
static size_t rt_stride;
static int rt_me, rt_npes;
static unsigned rt_reductions;
static shmalloc_heap *rt_heap;

static int minirt_barrier(void *user)
{
    int rc = pthread_barrier_wait(&((struct minirt_shared *)user)->barrier);
    return rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : -1;
}

/* Write my values, wait for everyone, take the maximum.  The slots of one
   parity are reused two calls later, after everyone has passed the barrier
   of the call in between, so one barrier per call suffices. */
static int minirt_allreduce_max(void *user, uint64_t *values, int count)
{
    struct minirt_shared *s = (struct minirt_shared *)user;
    unsigned parity = rt_reductions++ & 1;
    int pe, i;
    memcpy(s->slots[parity][rt_me], values, (size_t)count * sizeof *values);
    if (minirt_barrier(user)) return -1;
    for (pe = 0; pe < rt_npes; pe++)
        for (i = 0; i < count; i++)
            if (s->slots[parity][pe][i] > values[i]) values[i] = s->slots[parity][pe][i];
    return 0;
}

/* The runtime's own API, over the vendored allocator. */
static void *minirt_malloc(size_t n) { return shmalloc_heap_malloc(rt_heap, n, NULL); }
static void minirt_free(void *p) { shmalloc_heap_free(rt_heap, p, NULL); }
static void *minirt_peer(void *p, int pe) /* the address of p's copy on pe */
{
    return rt_heaps + (size_t)pe * rt_stride + ((char *)p - (char *)shmalloc_heap_base(rt_heap));
}

static int pe_main(void)
{
    shmalloc_transport tp;
    shmalloc_heap_config config;
    long err, *ring;
    int right = (rt_me + 1) % rt_npes, ok;
    memset(&tp, 0, sizeof tp);
    tp.user = rt_shared;
    tp.barrier = minirt_barrier;
    tp.allreduce_max = minirt_allreduce_max;
    tp.pe = rt_me;
    tp.npes = rt_npes;
    config.nominal = SIZE_MAX; /* the whole region from the start: no growth */
    config.debug = shmalloc_options()[SHMALLOC_OPT_DEBUG].value != 0;
    config.size_var = NULL; /* the runtime sizes its heaps itself: no variable to advise */
    config.metadata = SHMALLOC_METADATA_INLINE; /* headers in the heap: it is host memory */
    rt_heap = shmalloc_heap_create_with(rt_heaps + (size_t)rt_me * rt_stride, rt_stride, &config, &tp, &err);
    if (!rt_heap) {
        fprintf(stderr, "PE %d: heap creation failed (%ld)\n", rt_me, err);
        return 1;
    }
    ring = (long *)minirt_malloc(sizeof *ring);
    *(long *)minirt_peer(ring, right) = 100 + rt_me; /* a "put" to the right neighbour */
    minirt_barrier(rt_shared);
    printf("PE %d of %d got %ld from its left neighbour\n", rt_me, rt_npes, *ring);
    ok = *ring == 100 + (rt_me + rt_npes - 1) % rt_npes;
    minirt_free(ring);
    ok = ok && shmalloc_heap_check(rt_heap, 0) == 0;
    shmalloc_heap_destroy(rt_heap);
    return !ok;
}

int main(int argc, char **argv)
{
    pthread_barrierattr_t attr;
    size_t total;
    int pe, status, failed = 0;
    rt_npes = argc > 1 ? atoi(argv[1]) : 2;
    if (rt_npes < 1 || rt_npes > MINIRT_MAX_PES) {
        fprintf(stderr, "usage: %s [npes 1..%d]\n", argv[0], MINIRT_MAX_PES);
        return 2;
    }
    if (shmalloc_options_read(NULL) != 0) return 1; /* SHMALLOC_DEBUG and the rest, once, before the PEs */
    rt_stride = (shmalloc_heap_bytes(MINIRT_HEAP) + 4095) & ~(size_t)4095;
    total = 4096 + (size_t)rt_npes * rt_stride;
    rt_shared = (struct minirt_shared *)mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rt_shared == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    rt_heaps = (char *)rt_shared + 4096;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&rt_shared->barrier, &attr, (unsigned)rt_npes);
    fflush(stdout);
    for (pe = 0; pe < rt_npes; pe++) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc;
            rt_me = pe;
            rc = pe_main();
            fflush(stdout);
            _exit(rc);
        }
        if (pid < 0) {
            perror("fork");
            return 1;
        }
    }
    while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    pthread_barrier_destroy(&rt_shared->barrier);
    munmap(rt_shared, total);
    puts(failed ? "vendor_runtime: FAILED" : "vendor_runtime: ok");
    return failed;
}
