/* bench/alloc_system.h - the adapter of a system allocator, whose malloc
   replaces the C library's when the binary links it: an adapter file
   defines BENCH_SYSTEM_NAME and BENCH_SYSTEM_LIBRARY, then includes this. */
#if !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200112L /* posix_memalign */
#endif
#include <stdlib.h>

#include "alloc.h"

static void *system_malloc(void *heap, size_t size)
{
    (void)heap;
    return malloc(size);
}
static void *system_memalign(void *heap, size_t align, size_t size)
{
    void *p;
    (void)heap;
    return posix_memalign(&p, align, size) ? NULL : p;
}
static void *system_realloc(void *heap, void *ptr, size_t old_size, size_t size, size_t align)
{
    (void)heap, (void)old_size, (void)align;
    return realloc(ptr, size);
}
static void system_free(void *heap, void *ptr, size_t size, size_t align)
{
    (void)heap, (void)size, (void)align;
    free(ptr);
}

const bench_allocator bench_allocator_under_test = {
    .name = BENCH_SYSTEM_NAME,
    .library = BENCH_SYSTEM_LIBRARY,
    .malloc = system_malloc,
    .memalign = system_memalign,
    .realloc = system_realloc,
    .free = system_free,
};
