/* bad_grow.h - bad arguments on one PE of a growable heap, on whichever
   transport declared the SHMEM names before this include (the pthreads
   tests and the PMIx worker run the same cases).

   In each case one PE passes a bad pointer, size or alignment to a
   collective call while every other PE passes an argument that could only
   be served by growing the heap.  Every PE must get the bad argument's
   malloc_error at once (no PE waits for another, none crashes), no heap
   grows, and every block keeps its contents.  A good call that grows the
   heap ends the cases, so the heap is still usable.  `fail` records a
   failed check, printf-style, with the line it was made on. */
#include <stdint.h>
#include <string.h>

typedef void (*bad_grow_fail)(int line, const char *fmt, ...);

enum { BAD_GROW_MALLOC, BAD_GROW_CALLOC, BAD_GROW_ALIGN, BAD_GROW_REALLOC, BAD_GROW_FREE };

/* What the bad PE passes: a pointer (by how it is made), or a size or an
   alignment. */
enum { BAD_WILD, BAD_OUTSIDE, BAD_INTERIOR, BAD_FREED, BAD_HUGE, BAD_OVERFLOW, BAD_ALIGN3, BAD_ALIGN0 };

typedef struct bad_grow_case {
    int call, bad;
    long expect; /* malloc_error on every PE */
} bad_grow_case;

static const bad_grow_case bad_grow_cases[] = {
    {BAD_GROW_REALLOC, BAD_WILD, SHMEM_MALLOC_NOT_IN_SYMM_HEAP},
    {BAD_GROW_REALLOC, BAD_OUTSIDE, SHMEM_MALLOC_NOT_IN_SYMM_HEAP},
    {BAD_GROW_REALLOC, BAD_INTERIOR, SHMEM_MALLOC_NOT_ALIGNED},
    {BAD_GROW_REALLOC, BAD_FREED, SHMEM_MALLOC_ALREADY_FREE},
    {BAD_GROW_REALLOC, BAD_HUGE, SHMEM_MALLOC_BAD_SIZE},
    {BAD_GROW_FREE, BAD_WILD, SHMEM_MALLOC_NOT_IN_SYMM_HEAP},
    {BAD_GROW_FREE, BAD_OUTSIDE, SHMEM_MALLOC_NOT_IN_SYMM_HEAP},
    {BAD_GROW_FREE, BAD_INTERIOR, SHMEM_MALLOC_NOT_ALIGNED},
    {BAD_GROW_FREE, BAD_FREED, SHMEM_MALLOC_ALREADY_FREE},
    {BAD_GROW_MALLOC, BAD_HUGE, SHMEM_MALLOC_BAD_SIZE},
    {BAD_GROW_CALLOC, BAD_OVERFLOW, SHMEM_MALLOC_BAD_SIZE},
    {BAD_GROW_CALLOC, BAD_HUGE, SHMEM_MALLOC_BAD_SIZE},
    {BAD_GROW_ALIGN, BAD_ALIGN3, SHMEM_MALLOC_MEMALIGN_FAILED},
    {BAD_GROW_ALIGN, BAD_ALIGN0, SHMEM_MALLOC_MEMALIGN_FAILED},
    {BAD_GROW_ALIGN, BAD_HUGE, SHMEM_MALLOC_BAD_SIZE},
};
#define BAD_GROW_CASES (int)(sizeof bad_grow_cases / sizeof bad_grow_cases[0])

/* Blocks every case starts from: v (kept, its contents checked), f
   (freed, between v and g, so it stays a free block of its own). */
typedef struct bad_grow_blocks {
    unsigned char *v, *f, *g;
    size_t vsize;
} bad_grow_blocks;

static void *bad_grow_pointer(const bad_grow_blocks *b, int bad)
{
    static char outside[64];
    switch (bad) {
    case BAD_WILD: return (void *)(uintptr_t)16;
    case BAD_OUTSIDE: return outside;
    case BAD_INTERIOR: return b->v + 16;
    case BAD_FREED: return b->f;
    default: return b->v;
    }
}

/* The call of case c, by this PE: bad or not; returns its result. */
static void *bad_grow_call(const bad_grow_case *c, const bad_grow_blocks *b, int bad, size_t big)
{
    size_t huge = (size_t)1 << 62, size = bad && c->bad == BAD_HUGE ? huge : big;
    switch (c->call) {
    case BAD_GROW_MALLOC: return shmem_malloc(size);
    case BAD_GROW_CALLOC: return bad && c->bad == BAD_OVERFLOW ? shmem_calloc(SIZE_MAX / 2, 4) : shmem_calloc(1, size);
    case BAD_GROW_ALIGN: return shmem_align(!bad || c->bad == BAD_HUGE ? 64 : c->bad == BAD_ALIGN3 ? 3 : 0, size);
    case BAD_GROW_REALLOC: return shmem_realloc(bad ? bad_grow_pointer(b, c->bad) : b->v, size);
    default: shmem_free(bad ? bad_grow_pointer(b, c->bad) : b->v); return NULL;
    }
}

static int bad_grow_intact(const unsigned char *p, size_t n, unsigned char byte)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != byte) return 0;
    return 1;
}

/* Case i: PE i % npes is the bad one. */
static void bad_grow_one(int i, const bad_grow_blocks *b, bad_grow_fail fail)
{
    const bad_grow_case *c = &bad_grow_cases[i];
    shmalloc_heap *h = shmalloc_current();
    size_t before = shmalloc_heap_size(h);
    int bad = shmem_my_pe() == i % shmem_n_pes();
    void *r = bad_grow_call(c, b, bad, 2 * before);
    long e = malloc_error;
    if (r != NULL) fail(__LINE__, "case %d (%s PE): the call returned a block", i, bad ? "the bad" : "a good");
    if (e != c->expect) fail(__LINE__, "case %d: malloc_error %ld, expected %ld", i, e, c->expect);
    if (shmalloc_heap_size(h) != before)
        fail(__LINE__, "case %d: the heap grew from %zu to %zu bytes", i, before, shmalloc_heap_size(h));
    if (!bad_grow_intact(b->v, b->vsize, (unsigned char)(shmem_my_pe() + 1)))
        fail(__LINE__, "case %d: the kept block lost its contents", i);
    if (shmalloc_check(-1) != 0) fail(__LINE__, "case %d: shmalloc_check(-1) reports a corrupted heap", i);
}

/* Every case, then a good realloc that grows the heap on every PE. */
static void bad_grow_run(bad_grow_fail fail)
{
    bad_grow_blocks b;
    size_t before;
    int i;
    b.vsize = 100;
    b.v = (unsigned char *)shmem_malloc(b.vsize);
    b.f = (unsigned char *)shmem_malloc(100);
    b.g = (unsigned char *)shmem_malloc(100);
    if (!b.v || !b.f || !b.g) {
        fail(__LINE__, "the first blocks failed (malloc_error %ld)", malloc_error);
        return;
    }
    memset(b.v, shmem_my_pe() + 1, b.vsize);
    shmem_free(b.f);
    for (i = 0; i < BAD_GROW_CASES; i++) bad_grow_one(i, &b, fail);
    before = shmalloc_heap_size(shmalloc_current());
    b.f = (unsigned char *)shmem_realloc(b.v, 2 * before);
    if (!b.f || malloc_error != SHMEM_MALLOC_OK) fail(__LINE__, "a good realloc failed: %ld", malloc_error);
    else if (shmalloc_heap_size(shmalloc_current()) <= before) fail(__LINE__, "a good realloc did not grow the heap");
    else if (!bad_grow_intact(b.f, b.vsize, (unsigned char)(shmem_my_pe() + 1)))
        fail(__LINE__, "the grown block lost its contents");
    else b.v = b.f;
    shmem_free(b.v);
    shmem_free(b.g);
    if (malloc_error != SHMEM_MALLOC_OK) fail(__LINE__, "the last free failed: %ld", malloc_error);
}
