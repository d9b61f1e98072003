/* vendor_runtime.c - how a SHMEM runtime vendors shmalloc.h.

   A toy runtime, "minirt", whose PEs are forked processes.  All heaps live in
   one shared mapping, so a PE reaches a peer's copy of a symmetric object by
   its offset.  The runtime keeps its own entry points (minirt_malloc, ...):
   it compiles the SHMEM names out and fills a shmalloc_transport with its own
   barrier and all-reduce (minirt.h, which device_runtime.c shares).

       cc -std=c99 -I.. vendor_runtime.c -pthread -o vendor_runtime
       ./vendor_runtime 3
*/
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#define SHMALLOC_NO_SHMEM_NAMES
#define SHMALLOC_IMPLEMENTATION
#include "../shmalloc.h"

#include "minirt.h" /* the processes, their barrier and all-reduce */

#define MINIRT_HEAP ((size_t)4 << 20)

static char *rt_heaps; /* npes heaps of rt_stride bytes each, in one shared mapping */
static size_t rt_stride;
static shmalloc_heap *rt_heap;

/* The runtime's own API, over the vendored allocator. */
static void *minirt_malloc(size_t n) { return shmalloc_heap_malloc(rt_heap, n, NULL); }
static void minirt_free(void *p) { shmalloc_heap_free(rt_heap, p, NULL); }
static void *minirt_peer(void *p, int pe) /* the address of p's copy on pe */
{
    return rt_heaps + (size_t)pe * rt_stride + ((char *)p - (char *)shmalloc_heap_base(rt_heap));
}

static int pe_main(void)
{
    shmalloc_transport tp = minirt_transport();
    shmalloc_heap_config config;
    long err, *ring;
    int right = (rt_me + 1) % rt_npes, ok;
    config.nominal = SIZE_MAX; /* the whole region from the start: no growth */
    config.debug = shmalloc_options()[SHMALLOC_OPT_DEBUG].value != 0;
    config.size_var = NULL; /* the runtime sizes its heaps itself: no variable to advise */
    config.metadata = SHMALLOC_METADATA_INLINE; /* headers in the heap: it is host memory */
    config.memops = NULL;
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

/* The heaps, every PE's in one shared mapping: a PE reaches a peer's copy
   of a symmetric object by its offset. */
static int heaps_map(void)
{
    rt_stride = (shmalloc_heap_bytes(MINIRT_HEAP) + 4095) & ~(size_t)4095;
    rt_heaps = (char *)mmap(NULL, (size_t)rt_npes * rt_stride, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return rt_heaps == MAP_FAILED ? -1 : 0;
}

int main(int argc, char **argv) { return minirt_run(argc, argv, "vendor_runtime", heaps_map); }
