/* bench/alloc_shmalloc.h - the adapter of the TLSF core: an adapter file
   defines BENCH_SHMALLOC_NAME and BENCH_SHMALLOC_SEPARATE (0: metadata in
   the region; 1: kept apart, from malloc through the allocator hooks),
   then includes this.  The adapter is the unit that expands the core, as
   a program that uses the header would: the compiler may inline an entry
   point's checks into it. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* mallinfo2 */
#endif
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"

/* Bytes malloc has handed out and not had back: the drivers take none
   (their memory is mapped, stdout's buffer their own), so what a heap
   adds to it is what it holds through the hooks. */
static size_t malloc_held(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* A separate core writes into its blocks (host memory here) as the
   single-PE transport does, with memset and memcpy. */
static shmalloc_tlsf *core_over(void *region, size_t bytes)
{
    const shmalloc_transport *host = shmalloc_transport_single();
    shmalloc_memops ops = {NULL, host->fill, host->copy};
    return BENCH_SHMALLOC_SEPARATE ? shmalloc_tlsf_create_separate(region, bytes, bytes, &ops)
                                   : shmalloc_tlsf_create(region, bytes);
}

/* What a fresh, empty core holds: through the hooks (separate), or the
   region less its block space (inline); and what malloc held before it. */
static size_t fixed_bytes, region_bytes, held_before;

static void *core_create(void *region, size_t bytes)
{
    shmalloc_tlsf *t;
    shmalloc_counters c;
    held_before = malloc_held();
    if (!(t = core_over(region, bytes))) return NULL;
    shmalloc_tlsf_counters(t, &c);
    fixed_bytes = BENCH_SHMALLOC_SEPARATE ? malloc_held() - held_before : bytes - c.capacity;
    region_bytes = bytes;
    return t;
}
static void core_destroy(void *heap) { shmalloc_tlsf_destroy((shmalloc_tlsf *)heap); }
static void *core_malloc(void *heap, size_t size) { return shmalloc_tlsf_malloc((shmalloc_tlsf *)heap, size); }
static void *core_memalign(void *heap, size_t align, size_t size)
{
    return shmalloc_tlsf_align((shmalloc_tlsf *)heap, align, size);
}
static void *core_realloc(void *heap, void *ptr, size_t old_size, size_t size, size_t align)
{
    (void)old_size, (void)align;
    return shmalloc_tlsf_realloc((shmalloc_tlsf *)heap, ptr, size);
}
/* A refused pointer leaves the heap as it was; the drivers' closing check
   finds what it would have freed. */
static void core_free(void *heap, void *ptr, size_t size, size_t align)
{
    (void)size, (void)align;
    shmalloc_tlsf_free((shmalloc_tlsf *)heap, ptr);
}
static int core_check(void *heap) { return shmalloc_tlsf_check((const shmalloc_tlsf *)heap, 0); }

static int count_block(void *user, const shmalloc_block_info *block)
{
    (void)block;
    ++*(size_t *)user;
    return 0;
}

/* Metadata per used block: all a separate core holds through the hooks,
   or an inline core's 16-byte header on every block, used or free. */
static void core_describe(void *heap)
{
    const shmalloc_tlsf *t = (const shmalloc_tlsf *)heap;
    shmalloc_counters c;
    size_t blocks = 0, meta;
    shmalloc_tlsf_counters(t, &c);
    if (BENCH_SHMALLOC_SEPARATE) {
        meta = malloc_held() - held_before;
    } else {
        shmalloc_tlsf_walk(t, count_block, &blocks);
        meta = 16 * blocks;
    }
    if (c.used_blocks)
        printf(" meta_bytes=%zu used_blocks=%zu meta_per_block=%.1f", meta, c.used_blocks,
               (double)meta / (double)c.used_blocks);
    printf(" meta_fixed=%zu meta_fixed_pct=%.4f", fixed_bytes, 100.0 * (double)fixed_bytes / (double)region_bytes);
}

const bench_allocator bench_allocator_under_test = {
    .name = BENCH_SHMALLOC_NAME,
    .create = core_create,
    .destroy = core_destroy,
    .malloc = core_malloc,
    .memalign = core_memalign,
    .realloc = core_realloc,
    .free = core_free,
    .check = core_check,
    .describe = core_describe,
};
