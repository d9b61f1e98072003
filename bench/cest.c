/* bench/cest.c - workloads a-d for callgrind: the driver of the cycle
   estimate (bench/cest.sh runs it; bench/README.md gives the method).

     cest_NAME WORKLOAD [--live N] [--region MIB] [--steps N] [--frag]

   One pass of the workload on a fresh heap warms the caches and the
   allocator; then a fresh heap over the same region (a system allocator
   keeps its own), the fill, and the counted loop, whose allocator calls
   alone go through the op_* functions that callgrind's
   --toggle-collect='op_*' counts.  Requests are drawn as they are made,
   from registers, so between two calls the driver touches only its slot
   arrays.  Prints "ops=N", the calls of the counted loop.  --frag runs the
   fill and the loop once, no warm-up, and prints the highest requested
   byte ever in use over the peak of live requested bytes (a region
   allocator's). */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_POPULATE */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc.h"

#define SEED 0x9E3779B97F4A7C15ull
#define D_BUFFERS 1000 /* workload d's live buffers */

static const bench_allocator *const A = &bench_allocator_under_test;
static void *heap;

/* The calls callgrind counts: never inlined into the loop. */
__attribute__((noinline)) void *op_malloc(size_t size);
__attribute__((noinline)) void *op_memalign(size_t align, size_t size);
__attribute__((noinline)) void *op_realloc(void *ptr, size_t old_size, size_t size, size_t align);
__attribute__((noinline)) void op_free(void *ptr, size_t size, size_t align);
void *op_malloc(size_t size) { return A->malloc(heap, size); }
void *op_memalign(size_t align, size_t size) { return A->memalign(heap, align, size); }
void *op_realloc(void *ptr, size_t old_size, size_t size, size_t align)
{
    return A->realloc(heap, ptr, old_size, size, align);
}
void op_free(void *ptr, size_t size, size_t align) { A->free(heap, ptr, size, align); }

/* xorshift64* (Vigna), one state per pass, from SEED. */
static uint64_t rng;
static uint64_t draw(void)
{
    uint64_t x = rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}
/* 16 B .. 64 KiB: an octave 2^k, k uniform in 4..15 (bits 40 and up of
   one draw), then a size uniform within it (its low bits). */
static size_t draw_size(void)
{
    uint64_t r = draw();
    size_t base = (size_t)1 << (4 + (r >> 40) % 12);
    return base + (size_t)(r & (base - 1));
}
/* Workload c's alignment: 2^k, k uniform in 3..12. */
static size_t draw_align(void) { return (size_t)8 << (draw() % 10); }

/* Per slot: the block, and the size and alignment it was asked with. */
typedef struct slots {
    void **ptr;
    size_t *size, *align;
} slots;

/* What a pass measures when asked (--frag). */
typedef struct span {
    int on;
    char *base;
    size_t live, peak_live, highest;
} span;

static void die(const char *what)
{
    fprintf(stderr, "cest: %s: %s\n", A->name, what);
    exit(2);
}

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) die("mmap failed");
    return p;
}

static void grew(span *s, const void *p, size_t old_size, size_t size)
{
    size_t top;
    if (!s->on) return;
    s->live = s->live - old_size + size;
    if (s->live > s->peak_live) s->peak_live = s->live;
    top = (size_t)((const char *)p + size - s->base);
    if (s->base && top > s->highest) s->highest = top;
}

/* Slot i gets a block; `counted` calls through op_*. */
static void take(slots *sl, size_t i, size_t size, size_t align, int counted, span *s)
{
    void *p;
    if (counted) p = align ? op_memalign(align, size) : op_malloc(size);
    else p = align ? A->memalign(heap, align, size) : A->malloc(heap, size);
    if (!p) die("an allocation failed");
    sl->ptr[i] = p;
    sl->size[i] = size;
    sl->align[i] = align;
    grew(s, p, 0, size);
}

static void give_back(slots *sl, size_t i, int counted, span *s)
{
    if (!sl->ptr[i]) return;
    if (counted) op_free(sl->ptr[i], sl->size[i], sl->align[i]);
    else A->free(heap, sl->ptr[i], sl->size[i], sl->align[i]);
    sl->ptr[i] = NULL;
    if (s->on) s->live -= sl->size[i];
}

/* d: slot i resized by +-(25% + 1..64 B), clamped to [16, 65536]. */
static void resize(slots *sl, uint64_t r, int counted, span *s)
{
    size_t i = (size_t)(r % D_BUFFERS), old = sl->size[i], delta = old / 4 + 1 + (size_t)((r >> 32) % 64), size;
    void *p;
    size = (r >> 20) & 1 ? old + delta : old > delta + 16 ? old - delta : 16;
    if (size > 65536) size = 65536;
    if (counted) p = op_realloc(sl->ptr[i], old, size, 0);
    else p = A->realloc(heap, sl->ptr[i], old, size, 0);
    if (!p) die("a realloc failed");
    sl->ptr[i] = p;
    sl->size[i] = size;
    grew(s, p, old, size);
}

/* One pass: fill, `steps` steps (through op_* when `counted`), and every
   block freed. */
static void pass(char workload, slots *sl, size_t live, size_t steps, int counted, span *s)
{
    size_t i, k, n = workload == 'd' ? D_BUFFERS : live;
    rng = SEED;
    memset(sl->ptr, 0, n * sizeof *sl->ptr);
    if (workload == 'a') {
        for (k = 0; k < steps; k++) {
            take(sl, 0, 64, 0, counted, s);
            give_back(sl, 0, counted, s);
        }
        return;
    }
    for (i = 0; i < n; i++) {
        if (workload == 'd') {
            take(sl, i, 16 + draw() % 1009, 0, 0, s);
        } else {
            size_t size = draw_size();
            take(sl, i, size, workload == 'c' ? draw_align() : 0, 0, s);
        }
    }
    for (k = 0; k < steps; k++) {
        uint64_t r = draw();
        if (workload == 'd') {
            resize(sl, r, counted, s);
        } else {
            size_t size;
            give_back(sl, (size_t)(r % live), counted, s);
            size = draw_size();
            take(sl, (size_t)(r % live), size, workload == 'c' ? draw_align() : 0, counted, s);
        }
    }
    for (i = 0; i < n; i++) give_back(sl, i, 0, s);
}

static void usage(void)
{
    fprintf(stderr, "usage: cest_%s a|b|c|d [--live N] [--region MIB] [--steps N] [--frag]\n", A->name);
    exit(1);
}

typedef struct options {
    char workload;
    int frag;
    size_t live, region_bytes, steps;
} options;

static options parse_options(int argc, char **argv)
{
    options o = {0, 0, 10000, (size_t)256 << 20, 0};
    int i;
    if (argc < 2 || strlen(argv[1]) != 1 || argv[1][0] < 'a' || argv[1][0] > 'd') usage();
    o.workload = argv[1][0];
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--frag")) o.frag = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--live")) o.live = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--region")) o.region_bytes = strtoull(argv[++i], NULL, 10) << 20;
        else if (i + 1 < argc && !strcmp(argv[i], "--steps")) o.steps = strtoull(argv[++i], NULL, 10);
        else usage();
    }
    if (!o.live || !o.region_bytes) usage();
    if (o.frag && !A->create) die("--frag measures a region allocator's span");
    if (!o.steps) o.steps = o.workload == 'c' ? 500000 : 1000000;
    return o;
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    size_t n = o.live > D_BUFFERS ? o.live : D_BUFFERS;
    char *region = NULL;
    void *warm;
    slots sl;
    span s = {0, NULL, 0, 0, 0};
    sl.ptr = (void **)map(n * sizeof *sl.ptr);
    sl.size = (size_t *)map(n * sizeof *sl.size);
    sl.align = (size_t *)map(n * sizeof *sl.align);
    /* A fourth slot array, unused: the anchors of bench/README.md were
       counted with four, and what is mapped after them (the region, a
       heap's own large arrays) falls on the same cache sets only if the
       driver maps as much before it. */
    (void)map(n * sizeof *sl.ptr);
    if (A->create) {
        region = (char *)map(o.region_bytes);
        if (!(heap = A->create(region, o.region_bytes))) die("cannot create a heap over the region");
    }
    if (o.frag) { /* one pass, measured */
        s.on = 1;
        s.base = region;
        pass(o.workload, &sl, o.live, o.steps, 0, &s);
        printf("frag=%.4f peak_live=%zu highest=%zu\n", (double)s.highest / (double)s.peak_live, s.peak_live,
               s.highest);
        return 0;
    }
    pass(o.workload, &sl, o.live, o.steps, 0, &s);
    /* the warm-up heap is kept until the end: memory of its own that the
       counted heap takes is new, as a second heap's would be */
    warm = heap;
    if (A->create && !(heap = A->create(region, o.region_bytes))) die("cannot create a heap over the region");
    pass(o.workload, &sl, o.live, o.steps, 1, &s);
    if (A->check && A->check(heap) != 0) die("the heap check failed");
    if (A->destroy) {
        A->destroy(heap);
        A->destroy(warm);
    }
    printf("ops=%zu\n", o.workload == 'd' ? o.steps : 2 * o.steps);
    return 0;
}
