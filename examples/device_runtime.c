/* device_runtime.c - how a GPU SHMEM runtime vendors shmalloc.h.

   A toy runtime, "devrt", whose symmetric heaps live in device memory: the
   host may not load or store a byte of it.  It creates its heaps with
   separate metadata (SHMALLOC_METADATA_SEPARATE), so the allocator keeps
   its state in host memory and writes the device only through the two
   transport members the runtime binds to its memset and copy engine, fill
   and copy.  PEs are forked processes, as in vendor_runtime.c.

   The device is emulated: its memory is a PROT_NONE mapping of a memfd
   (one host access and the PE dies), and the engine works through a
   second, writable mapping of the same file.

       cc -std=c99 -I.. device_runtime.c -pthread -o device_runtime
       ./device_runtime 3
*/
#define _GNU_SOURCE /* memfd_create */
#define SHMALLOC_NO_SHMEM_NAMES
#define SHMALLOC_IMPLEMENTATION
#include "../shmalloc.h"

#include "minirt.h" /* the processes, their barrier and all-reduce, as vendor_runtime.c's */

#define DEVRT_HEAP ((size_t)1 << 20)

static char *dev_mem;    /* device addresses: npes heaps of rt_stride bytes, PROT_NONE */
static char *dev_window; /* the engine's writable view of the same bytes */
static size_t rt_stride;
static int rt_failures;
static shmalloc_heap *rt_heap;

/* The engine: n bytes at a device address, as its window shows them.  Like
   a real engine it refuses an address outside device memory. */
static char *engine_at(const void *dev, size_t n)
{
    size_t off = (size_t)((uintptr_t)dev - (uintptr_t)dev_mem), bytes = (size_t)rt_npes * rt_stride;
    return off <= bytes && n <= bytes - off ? dev_window + off : NULL;
}
static int engine_fill(void *user, void *dst, int byte, size_t n)
{
    char *d = engine_at(dst, n);
    (void)user;
    if (!d) return -1;
    memset(d, byte, n);
    return 0;
}
static int engine_copy(void *user, void *dst, const void *src, size_t n)
{
    char *d = engine_at(dst, n), *s = engine_at(src, n);
    (void)user;
    if (!d || !s) return -1;
    memcpy(d, s, n);
    return 0;
}
/* Host <-> device, and a put into a peer's copy of a symmetric object. */
static void devrt_to_device(void *dev, const void *host, size_t n) { memcpy(engine_at(dev, n), host, n); }
static void devrt_to_host(void *host, const void *dev, size_t n) { memcpy(host, engine_at(dev, n), n); }
static void devrt_put(void *dev, const void *host, size_t n, int pe)
{
    devrt_to_device((char *)dev + (pe - rt_me) * (ptrdiff_t)rt_stride, host, n);
}

static void expect(int ok, const char *what)
{
    if (!ok) fprintf(stderr, "PE %d: FAILED: %s\n", rt_me, what);
    rt_failures += !ok;
}

/* Collective: this PE's heap over its part of device memory. */
static shmalloc_heap *devrt_heap_create(void)
{
    shmalloc_transport tp = minirt_transport();
    shmalloc_heap_config config;
    shmalloc_heap *h;
    long err;
    tp.fill = engine_fill; /* calloc's zeroing, debug mode's patterns */
    tp.copy = engine_copy; /* a realloc that moves a block */
    config.nominal = SIZE_MAX;
    config.debug = shmalloc_options()[SHMALLOC_OPT_DEBUG].value != 0;
    config.size_var = NULL;
    config.metadata = SHMALLOC_METADATA_SEPARATE; /* device memory: the allocator must not touch it */
    config.memops = NULL; /* the transport's fill and copy */
    h = shmalloc_heap_create_with(dev_mem + (size_t)rt_me * rt_stride, rt_stride, &config, &tp, &err);
    if (!h) fprintf(stderr, "PE %d: heap creation failed (%ld)\n", rt_me, err);
    return h;
}

static int pe_main(void)
{
    long err, ring_in, ring_out = 100 + rt_me, got[4], pattern[4] = {11, 22, 33, 44};
    long *table, *zeros, *ring, *moved;
    if (!(rt_heap = devrt_heap_create())) return 1;
    table = (long *)shmalloc_heap_malloc(rt_heap, sizeof pattern, &err);
    zeros = (long *)shmalloc_heap_calloc(rt_heap, 4, sizeof(long), &err); /* over the device's stale bytes */
    ring = (long *)shmalloc_heap_malloc(rt_heap, sizeof *ring, &err);
    expect(table && zeros && ring, "malloc and calloc");
    if (!table || !zeros || !ring) return 1;
    devrt_to_host(got, zeros, sizeof got);
    expect(!got[0] && !got[1] && !got[2] && !got[3], "calloc's block is zeroed by the engine");

    devrt_put(ring, &ring_out, sizeof ring_out, (rt_me + 1) % rt_npes); /* to the right neighbour */
    minirt_barrier(rt_shared);
    devrt_to_host(&ring_in, ring, sizeof ring_in);
    printf("PE %d of %d got %ld from its left neighbour\n", rt_me, rt_npes, ring_in);
    expect(ring_in == 100 + (rt_me + rt_npes - 1) % rt_npes, "the put arrived");

    devrt_to_device(table, pattern, sizeof pattern);
    moved = (long *)shmalloc_heap_realloc(rt_heap, table, 4096, &err); /* zeros is in the way: it moves */
    expect(moved && moved != table, "realloc moves the block");
    if (!moved) return 1;
    devrt_to_host(got, moved, sizeof got);
    expect(!memcmp(got, pattern, sizeof got), "the engine copied the block's bytes");

    { /* a kernel's address into the block: which allocation is it? */
        void *start = NULL;
        size_t size = 0;
        expect(shmalloc_heap_block_of(rt_heap, moved + 300, &start, &size) == 0 && start == moved && size >= 4096,
               "an interior address leads to its allocation");
    }
    if (rt_me == 0)
        fprintf(stderr, "device_runtime: next, each of the %d PEs frees an address inside a block on purpose: "
                        "the refusals below are expected\n", rt_npes);
    minirt_barrier(rt_shared); /* the note comes before every PE's refusal */
    shmalloc_heap_free(rt_heap, moved + 2, &err); /* not a block's start: refused, with a message */
    expect(err == SHMEM_MALLOC_NOT_ALIGNED, "a bad pointer gets its error code");
    shmalloc_heap_free(rt_heap, moved, &err);
    expect(err == SHMEM_MALLOC_OK, "free");
    shmalloc_heap_free(rt_heap, zeros, &err);
    expect(err == SHMEM_MALLOC_OK, "free");
    shmalloc_heap_free(rt_heap, ring, &err);
    expect(err == SHMEM_MALLOC_OK, "free");
    expect(shmalloc_heap_check(rt_heap, 0) == 0, "the heap checker passes");
    shmalloc_heap_destroy(rt_heap);
    return rt_failures != 0;
}

/* The device's memory, mapped twice: PROT_NONE for the heaps, writable for
   the engine; filled with stale bytes, as device memory may hold. */
static int device_open(void)
{
    size_t bytes;
    int fd = memfd_create("devrt-device", 0);
    rt_stride = (shmalloc_heap_bytes(DEVRT_HEAP) + 4095) & ~(size_t)4095;
    bytes = (size_t)rt_npes * rt_stride;
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) return -1;
    dev_mem = (char *)mmap(NULL, bytes, PROT_NONE, MAP_SHARED, fd, 0);
    dev_window = (char *)mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev_mem == MAP_FAILED || dev_window == MAP_FAILED) return -1;
    memset(dev_window, 0xee, bytes);
    return 0;
}

int main(int argc, char **argv) { return minirt_run(argc, argv, "device_runtime", device_open); }
