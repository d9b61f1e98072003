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

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEVRT_MAX_PES 16
#define DEVRT_HEAP ((size_t)1 << 20)

/* What every process shares on the host: a barrier and all-reduce slots. */
struct devrt_shared {
    pthread_barrier_t barrier;
    uint64_t slots[2][DEVRT_MAX_PES][16]; /* double-buffered by call parity */
};

static struct devrt_shared *rt_shared;
static char *dev_mem;    /* device addresses: npes heaps of rt_stride bytes, PROT_NONE */
static char *dev_window; /* the engine's writable view of the same bytes */
static size_t rt_stride;
static int rt_me, rt_npes, rt_failures;
static unsigned rt_reductions;
static shmalloc_heap *rt_heap;

static int devrt_barrier(void *user)
{
    int rc = pthread_barrier_wait(&((struct devrt_shared *)user)->barrier);
    return rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : -1;
}

/* As vendor_runtime.c's: one barrier per call, the slots double-buffered. */
static int devrt_allreduce_max(void *user, uint64_t *values, int count)
{
    struct devrt_shared *s = (struct devrt_shared *)user;
    unsigned parity = rt_reductions++ & 1;
    int pe, i;
    memcpy(s->slots[parity][rt_me], values, (size_t)count * sizeof *values);
    if (devrt_barrier(user)) return -1;
    for (pe = 0; pe < rt_npes; pe++)
        for (i = 0; i < count; i++)
            if (s->slots[parity][pe][i] > values[i]) values[i] = s->slots[parity][pe][i];
    return 0;
}

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
    shmalloc_transport tp;
    shmalloc_heap_config config;
    shmalloc_heap *h;
    long err;
    memset(&tp, 0, sizeof tp);
    tp.user = rt_shared;
    tp.barrier = devrt_barrier;
    tp.allreduce_max = devrt_allreduce_max;
    tp.pe = rt_me;
    tp.npes = rt_npes;
    tp.fill = engine_fill; /* calloc's zeroing, debug mode's patterns */
    tp.copy = engine_copy; /* a realloc that moves a block */
    config.nominal = SIZE_MAX;
    config.debug = shmalloc_options()[SHMALLOC_OPT_DEBUG].value != 0;
    config.size_var = NULL;
    config.metadata = SHMALLOC_METADATA_SEPARATE; /* device memory: the allocator must not touch it */
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
    devrt_barrier(rt_shared);
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
static int device_open(size_t bytes)
{
    int fd = memfd_create("devrt-device", 0);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) return -1;
    dev_mem = (char *)mmap(NULL, bytes, PROT_NONE, MAP_SHARED, fd, 0);
    dev_window = (char *)mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev_mem == MAP_FAILED || dev_window == MAP_FAILED) return -1;
    memset(dev_window, 0xee, bytes);
    return 0;
}

int main(int argc, char **argv)
{
    pthread_barrierattr_t attr;
    int pe, status, failed = 0;
    rt_npes = argc > 1 ? atoi(argv[1]) : 2;
    if (rt_npes < 1 || rt_npes > DEVRT_MAX_PES) {
        fprintf(stderr, "usage: %s [npes 1..%d]\n", argv[0], DEVRT_MAX_PES);
        return 2;
    }
    if (shmalloc_options_read(NULL) != 0) return 1; /* SHMALLOC_DEBUG and the rest, once, before the PEs */
    rt_stride = (shmalloc_heap_bytes(DEVRT_HEAP) + 4095) & ~(size_t)4095;
    rt_shared = (struct devrt_shared *)mmap(NULL, sizeof *rt_shared, PROT_READ | PROT_WRITE,
                                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rt_shared == MAP_FAILED || device_open((size_t)rt_npes * rt_stride) != 0) {
        perror("device_runtime: mapping");
        return 1;
    }
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
    puts(failed ? "device_runtime: FAILED" : "device_runtime: ok");
    return failed;
}
