/* pmix_ofi_worker_grow.c - the grow, bad_grow and largest scenarios: heaps
   that grow far beyond their nominal size (run with SHMALLOC_HEAP_MAX). */
#include "transports/shmalloc_pmix_ofi.h"

#include "bad_grow.h" /* before the worker's fail, which its parameters would shadow */
#include "largest_request.h"
#include "pmix_ofi_worker.h"

#include <stdlib.h>

/* Run with a small SHMEM_SYMMETRIC_HEAP_SIZE (1M) and SHMALLOC_HEAP_MAX
   (256M): allocations far beyond the nominal size grow every heap, and
   data crosses the registered regions both ways.  With
   SHMALLOC_TEST_FAIL_REGISTER=1:1, PE 1's first growth fails, so the
   first large allocation fails on every PE, and the next one grows. */
#define GROW_PIECES 20
#define GROW_MIB ((size_t)1 << 20)
#define GROW_STRADDLE (2 * GROW_MIB)

/* A block that starts in the first region and ends in the second, after a
   failed growth when SHMALLOC_TEST_FAIL_REGISTER is set.  NULL when it
   could not be had. */
static unsigned char *grow_straddling_block(size_t size0)
{
    unsigned char *b;
    if (getenv("SHMALLOC_TEST_FAIL_REGISTER") && npes > 1) {
        CHECK(shmem_malloc(GROW_STRADDLE) == NULL);
        CHECK_EQ(malloc_error, SHMEM_MALLOC_FAIL);
        CHECK_EQ(shmalloc_heap_size(shmalloc_current()), size0);
    }
    b = (unsigned char *)shmem_malloc(GROW_STRADDLE);
    CHECK(b != NULL);
    if (!b) return NULL;
    CHECK(shmalloc_heap_size(shmalloc_current()) > size0);
    CHECK(offset_of(b) < size0 && offset_of(b) + GROW_STRADDLE > size0);
    CHECK_SYMMETRIC(b);
    return b;
}

/* 20 MiB more, from a 1 MiB heap, piece i filled with tag i.  0 when an
   allocation failed. */
static int grow_pieces(unsigned char **p)
{
    int i;
    for (i = 0; i < GROW_PIECES; i++) {
        p[i] = (unsigned char *)shmem_malloc(GROW_MIB);
        CHECK(p[i] != NULL);
        if (!p[i]) return 0;
        fill(p[i], me, (uint32_t)i, 0, GROW_MIB);
    }
    CHECK_SYMMETRIC(p[GROW_PIECES - 1]);
    CHECK(shmalloc_heap_size(shmalloc_current()) >= GROW_PIECES * GROW_MIB);
    return 1;
}

/* The right neighbour's pieces and straddling block, read directly,
   by getmem and by getmem into the heap. */
static void grow_read_peer(unsigned char *b, unsigned char **p, unsigned char *buf)
{
    int right = right_pe(), i;
    unsigned char *last = p[GROW_PIECES - 1];
    fill(b, me, 100, 0, GROW_STRADDLE);
    shmem_barrier_all();
    if (npes > 1 && expect_direct() >= 0) CHECK_EQ(shmem_ptr(last, right) != NULL, expect_direct());
    if (npes > 1 && shmem_ptr(last, right)) /* the peer's newest piece, loaded directly */
        CHECK_PATTERN((unsigned char *)shmem_ptr(last, right), right, GROW_PIECES - 1, 0, GROW_MIB);
    for (i = 0; i < GROW_PIECES; i++) { /* read the right neighbour's copies */
        shmem_getmem(buf, p[i], GROW_MIB, right);
        CHECK_PATTERN(buf, right, (uint32_t)i, 0, GROW_MIB);
    }
    shmem_getmem(buf, b, GROW_STRADDLE, right); /* one transfer over two regions */
    CHECK_PATTERN(buf, right, 100, 0, GROW_STRADDLE);
    shmem_barrier_all(); /* the left neighbour has read our last piece */
    shmem_getmem(last, b + 100, GROW_MIB, right); /* heap to heap */
    CHECK_PATTERN(last, right, 100, 100, GROW_MIB);
    shmem_barrier_all();
}

/* Puts into the left neighbour's straddling block and first piece. */
static void grow_write_peer(unsigned char *b, unsigned char **p, unsigned char *buf)
{
    fill(buf, me, 101, 0, GROW_STRADDLE);
    shmem_putmem(b, buf, GROW_STRADDLE, left_pe());
    shmem_putmem(p[0], p[1], GROW_MIB, left_pe()); /* heap to heap, between regions */
    shmem_barrier_all();
    CHECK_PATTERN(b, right_pe(), 101, 0, GROW_STRADDLE);
    CHECK_PATTERN(p[0], right_pe(), 1, 0, GROW_MIB);
    shmem_barrier_all();
}

void scenario_grow(void)
{
    size_t size0 = shmalloc_heap_size(shmalloc_current());
    unsigned char *a = (unsigned char *)shmem_malloc(GROW_MIB / 2), *b, *p[GROW_PIECES] = {NULL};
    unsigned char *buf = (unsigned char *)malloc(GROW_STRADDLE);
    int i;
    CHECK(a && buf);
    if (!a || !buf) return;
    CHECK(size0 < 2 * GROW_MIB);
    b = grow_straddling_block(size0);
    if (!b || !grow_pieces(p)) return;
    grow_read_peer(b, p, buf);
    grow_write_peer(b, p, buf);
    for (i = 0; i < GROW_PIECES; i++) shmem_free(p[i]);
    shmem_free(b);
    shmem_free(a);
    free(buf);
}

/* ---- bad_grow: one PE's bad argument while the others' calls need growth ---- */
void scenario_bad_grow(void) { bad_grow_run(fail); }

/* Run with SHMEM_SYMMETRIC_HEAP_SIZE=64K and SHMALLOC_HEAP_MAX=32M:
   largest_request's promise over eight seeds (tests/support/largest_request.h),
   the first growing the heap to its maximum. */
void scenario_largest(void)
{
    uint64_t seed;
    for (seed = 1; seed <= 8; seed++) largest_request_run(seed, fail);
}

