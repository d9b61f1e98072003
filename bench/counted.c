/* bench/counted.c - the allocator as the benchmarks link it: shmalloc.c,
   with allocator hooks that count the private memory it holds, so that
   bench/core.c can give a core's metadata bytes (a separate core keeps all
   of its state there).  The hooks touch only the rare calls that obtain or
   release that memory, never the paths the benchmarks time. */
#include <stdlib.h>

size_t bench_private_bytes(void); /* as bench/workload.h declares it */

static size_t private_bytes;

/* Each allocation carries its size in front, 16 bytes to keep malloc's
   alignment. */
static void *counted_malloc(size_t n)
{
    size_t *b = (size_t *)malloc(n + 16);
    if (!b) return NULL;
    b[0] = n;
    private_bytes += n;
    return b + 2;
}

static void counted_free(void *p)
{
    size_t *b = (size_t *)p - 2;
    private_bytes -= b[0];
    free(b);
}

size_t bench_private_bytes(void)
{
    return private_bytes;
}

#define SHMALLOC_MALLOC(n) counted_malloc(n)
#define SHMALLOC_FREE(p) counted_free(p)
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"
