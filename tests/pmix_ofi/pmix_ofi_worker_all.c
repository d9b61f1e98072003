/* pmix_ofi_worker_all.c - the seven scenarios that "all" runs in one launch:
   symmetric, putget, realloc, mismatch, barrier, stress and direct
   (pmix_ofi_worker.c describes each). */
#include "pmix_ofi_worker.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 64
#define DEFAULT_OPS 10000
#define BARRIER_ROUNDS 200

void scenario_symmetric(void)
{
    static const size_t sizes[] = {1, 8, 16, 100, 4096, 65536, (size_t)1 << 20, (size_t)3 << 20};
    static const size_t aligns[] = {32, 256, 4096, (size_t)1 << 20};
    void *blocks[16];
    uint64_t bases[1024];
    const char *expect = getenv("SHMALLOC_TEST_EXPECT_ADDRESSES");
    int n = 0, i, q, same = 1;
    size_t k;

    allgather((uint64_t)(uintptr_t)shmalloc_heap_base(shmalloc_current()), bases);
    for (q = 0; q < npes; q++) same &= bases[q] == bases[0];
    if (me == 0) printf("PE 0 of %d: heap addresses %s\n", npes, same ? "same" : "differ");
    if (expect && strcmp(expect, same ? "same" : "differ") != 0)
        fail(__LINE__, "heap addresses %s, expected %s", same ? "same" : "differ", expect);

    for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        blocks[n] = shmem_malloc(sizes[k]);
        CHECK(blocks[n] != NULL);
        if (!blocks[n]) continue;
        CHECK_EQ((uintptr_t)blocks[n] % 16, 0);
        CHECK(shmem_addr_accessible(blocks[n], 0));
        CHECK_SYMMETRIC(blocks[n]);
        n++;
    }
    for (k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        blocks[n] = shmem_align(aligns[k], 1000);
        CHECK(blocks[n] != NULL);
        if (!blocks[n]) continue;
        CHECK_EQ((uintptr_t)blocks[n] % aligns[k], 0);
        CHECK_SYMMETRIC(blocks[n]);
        n++;
    }
    blocks[n] = shmem_calloc(7, 33);
    CHECK(blocks[n] != NULL);
    if (blocks[n]) CHECK_SYMMETRIC(blocks[n++]);
    blocks[n] = shmem_malloc_with_hints(100, SHMEM_MALLOC_ATOMICS_REMOTE);
    CHECK(blocks[n] != NULL);
    if (blocks[n]) CHECK_SYMMETRIC(blocks[n++]);
    /* Free every other block, then the rest: the holes must match too. */
    for (i = 0; i < n; i += 2) shmem_free(blocks[i]);
    blocks[0] = shmem_malloc(50);
    CHECK(blocks[0] != NULL);
    if (blocks[0]) CHECK_SYMMETRIC(blocks[0]);
    for (i = 1; i < n; i += 2) shmem_free(blocks[i]);
    shmem_free(blocks[0]);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
}

#define PUTGET_SMALL ((size_t)256 << 10)
#define PUTGET_BIG (((size_t)3 << 20) + 123) /* larger than the bounce buffer */

/* Whole block, then an odd piece at an odd offset, from malloc'ed memory. */
static void putget_to_neighbour(unsigned char *block, unsigned char *src)
{
    int right = right_pe(), left = left_pe();
    fill(src, me, 1, 0, PUTGET_SMALL);
    shmem_putmem(block, src, PUTGET_SMALL, right);
    shmem_barrier_all();
    CHECK_PATTERN(block, left, 1, 0, PUTGET_SMALL);
    shmem_barrier_all(); /* the right neighbour has checked its block too */
    fill(src, me, 2, 0, 1004);
    shmem_putmem(block + 7, src + 3, 1001, right);
    shmem_barrier_all();
    CHECK_PATTERN(block + 7, left, 2, 3, 1001);
    CHECK_EQ(block[6], pattern(left, 1, 6));
    CHECK_EQ(block[1008], pattern(left, 1, 1008));
}

/* Larger than the bounce buffer; then back with getmem. */
static void putget_large(unsigned char *large, unsigned char *src, unsigned char *back)
{
    int right = right_pe();
    fill(src, me, 3, 0, PUTGET_BIG);
    shmem_putmem(large, src, PUTGET_BIG, right);
    shmem_quiet();
    shmem_barrier_all();
    CHECK_PATTERN(large, left_pe(), 3, 0, PUTGET_BIG);
    memset(back, 0, PUTGET_BIG);
    shmem_getmem(back, large, PUTGET_BIG, right);
    CHECK_PATTERN(back, me, 3, 0, PUTGET_BIG);
    shmem_getmem(back, large + 1, 17, right);
    CHECK_PATTERN(back, me, 3, 1, 17);
}

/* Heap to heap: getmem into the heap, putmem from it. */
static void putget_heap_to_heap(unsigned char *block, unsigned char *large, unsigned char *heap_buf)
{
    shmem_getmem(heap_buf, large, 4096, right_pe());
    CHECK_PATTERN(heap_buf, me, 3, 0, 4096);
    shmem_barrier_all();
    shmem_putmem(block, heap_buf, 4096, right_pe());
    shmem_barrier_all();
    CHECK_PATTERN(block, left_pe(), 3, 0, 4096);
}

/* To and from this PE, and a put of nothing at all. */
static void putget_self(unsigned char *block, unsigned char *src, unsigned char *back)
{
    fill(src, me, 4, 0, 100);
    shmem_putmem(block, src, 100, me);
    CHECK_PATTERN(block, me, 4, 0, 100);
    memset(back, 0, 100);
    shmem_getmem(back, block, 100, me);
    CHECK_PATTERN(back, me, 4, 0, 100);
    shmem_putmem(block, src, 0, right_pe());
}

/* shmem_ptr and shmem_addr_accessible: heap blocks on every PE, nothing
   else and no PE out of range. */
static void check_accessible(unsigned char *block, unsigned char *large, unsigned char *src)
{
    int q, on_stack = 0;
    CHECK(shmem_ptr(block, me) == block);
    CHECK(shmem_ptr(&on_stack, me) == NULL);
    for (q = 0; q < npes; q++) {
        if (q != me && expect_direct() >= 0) CHECK_EQ(shmem_ptr(block, q) != NULL, expect_direct());
        CHECK_EQ(shmem_addr_accessible(block, q), 1);
        CHECK_EQ(shmem_addr_accessible(large + PUTGET_BIG - 1, q), 1);
    }
    CHECK_EQ(shmem_addr_accessible(block, npes), 0);
    CHECK_EQ(shmem_addr_accessible(block, -1), 0);
    CHECK_EQ(shmem_addr_accessible(&on_stack, 0), 0);
    CHECK_EQ(shmem_addr_accessible(src, 0), 0);
}

void scenario_putget(void)
{
    unsigned char *block = (unsigned char *)shmem_malloc(PUTGET_SMALL);
    unsigned char *large = (unsigned char *)shmem_malloc(PUTGET_BIG);
    unsigned char *heap_buf = (unsigned char *)shmem_malloc(4096);
    unsigned char *src = (unsigned char *)malloc(PUTGET_BIG), *back = (unsigned char *)malloc(PUTGET_BIG);

    CHECK(block && large && heap_buf && src && back);
    if (!block || !large || !heap_buf || !src || !back) goto out;
    memset(block, 0, PUTGET_SMALL);
    shmem_barrier_all();
    putget_to_neighbour(block, src);
    putget_large(large, src, back);
    putget_heap_to_heap(block, large, heap_buf);
    putget_self(block, src, back);
    check_accessible(block, large, src);
    shmem_barrier_all();
out:
    shmem_free(heap_buf);
    shmem_free(large);
    shmem_free(block);
    free(src);
    free(back);
}

/* Same-node peers' heaps through shmem_ptr: loads see what the peer
   wrote, stores are seen by the peer after a barrier, and small puts to
   every PE land whichever way they travel. */
void scenario_direct(void)
{
    const size_t n = (size_t)64 << 10;
    int right = (me + 1) % npes, left = (me + npes - 1) % npes, q;
    unsigned char *block = (unsigned char *)shmem_malloc(n), *there, *local = (unsigned char *)malloc(n);
    uint64_t *words = (uint64_t *)shmem_calloc((size_t)npes, sizeof *words), v = 0x5eed0000u + (uint64_t)me;
    CHECK(block && words && local);
    if (!block || !words || !local) goto out;
    fill(block, me, 7, 0, n);
    shmem_barrier_all();
    for (q = 0; q < npes; q++) {
        there = (unsigned char *)shmem_ptr(block, q);
        if (q == me) CHECK(there == block);
        else if (expect_direct() >= 0) CHECK_EQ(there != NULL, expect_direct());
        if (there) CHECK_PATTERN(there, q, 7, 0, n);
        CHECK(shmem_ptr(block + n, q) == NULL || shmem_ptr(block + n - 1, q) != NULL);
    }
    shmem_barrier_all();
    there = (unsigned char *)shmem_ptr(block, right);
    if (there) {
        fill(there, me, 8, 0, n); /* stores into the right neighbour's heap */
    } else {                      /* another node: the same bytes by a put */
        fill(local, me, 8, 0, n);
        shmem_putmem(block, local, n, right);
    }
    shmem_quiet();
    shmem_barrier_all();
    CHECK_PATTERN(block, left, 8, 0, n);
    for (q = 0; q < npes; q++) shmem_putmem(&words[me], &v, sizeof v, q);
    shmem_barrier_all();
    for (q = 0; q < npes; q++) CHECK_EQ(words[q], 0x5eed0000u + (uint64_t)q);
    for (q = 0; q < npes; q++) {
        uint64_t got = 0;
        shmem_getmem(&got, &words[q], sizeof got, (q + 1) % npes);
        CHECK_EQ(got, 0x5eed0000u + (uint64_t)q);
    }
    shmem_barrier_all();
out:
    shmem_free(words);
    shmem_free(block);
    free(local);
}

/* 100 bytes seen by the right neighbour, then grown to 5000 past a
   neighbour block (*q), so growing may move it: contents kept, the same
   offset everywhere.  NULL when an allocation failed. */
static unsigned char *realloc_grown_block(unsigned char *buf, unsigned char **q)
{
    int right = right_pe();
    unsigned char *p = (unsigned char *)shmem_malloc(100);
    CHECK(p != NULL);
    if (!p) return NULL;
    fill(p, me, 10, 0, 100);
    shmem_barrier_all();
    shmem_getmem(buf, p, 100, right);
    CHECK_PATTERN(buf, right, 10, 0, 100);

    *q = (unsigned char *)shmem_malloc(64); /* a neighbour, so growing may move */
    CHECK(*q != NULL);
    p = (unsigned char *)shmem_realloc(p, 5000);
    CHECK(p != NULL);
    if (!p) return NULL;
    CHECK_SYMMETRIC(p);
    CHECK_PATTERN(p, me, 10, 0, 100);
    fill(p, me, 10, 100, 5000);
    shmem_barrier_all();
    shmem_getmem(buf, p, 5000, right);
    CHECK_PATTERN(buf, right, 10, 0, 5000);
    return p;
}

/* p shrunk to 50 bytes, then grown to 1 MiB: contents kept, the same
   offset everywhere.  NULL when a realloc failed. */
static unsigned char *realloc_shrunk_then_grown(unsigned char *p, unsigned char *buf)
{
    p = (unsigned char *)shmem_realloc(p, 50);
    CHECK(p != NULL);
    if (!p) return NULL;
    CHECK_SYMMETRIC(p);
    CHECK_PATTERN(p, me, 10, 0, 50);
    shmem_getmem(buf, p, 50, left_pe());
    CHECK_PATTERN(buf, left_pe(), 10, 0, 50);

    p = (unsigned char *)shmem_realloc(p, (size_t)1 << 20);
    CHECK(p != NULL);
    if (!p) return NULL;
    CHECK_SYMMETRIC(p);
    CHECK_PATTERN(p, me, 10, 0, 50);
    fill(p, me, 11, 0, (size_t)1 << 20);
    shmem_barrier_all();
    shmem_getmem(buf, p + ((size_t)1 << 20) - 4000, 4000, right_pe());
    CHECK_PATTERN(buf, right_pe(), 11, ((size_t)1 << 20) - 4000, 4000);
    return p;
}

/* realloc of NULL allocates, to 0 frees, of a non-heap address fails. */
static void realloc_as_malloc_and_free(void)
{
    int on_stack = 0;
    unsigned char *z = (unsigned char *)shmem_realloc(NULL, 200);
    CHECK(z != NULL);
    if (z) CHECK_SYMMETRIC(z);
    CHECK(shmem_realloc(z, 0) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    CHECK(shmem_realloc(&on_stack, 10) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
}

/* A 4096-aligned block seen by the left neighbour; bad alignments fail. */
static unsigned char *aligned_block(unsigned char *buf)
{
    unsigned char *a = (unsigned char *)shmem_align(4096, 1000);
    CHECK(a != NULL);
    if (a) {
        CHECK_EQ((uintptr_t)a % 4096, 0);
        CHECK_SYMMETRIC(a);
        fill(a, me, 12, 0, 1000);
        shmem_barrier_all();
        shmem_getmem(buf, a, 1000, left_pe());
        CHECK_PATTERN(buf, left_pe(), 12, 0, 1000);
    }
    CHECK(shmem_align(3, 10) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED);
    CHECK(shmem_align(0, 10) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED);
    return a;
}

/* A zeroed block seen by the right neighbour; an overflowing calloc and
   malloc(0) give NULL. */
static unsigned char *zeroed_block(unsigned char *buf)
{
    unsigned char *z = (unsigned char *)shmem_calloc(100, 8);
    size_t i;
    int zeros;
    CHECK(z != NULL);
    if (z) {
        for (zeros = 1, i = 0; i < 800; i++) zeros &= z[i] == 0;
        CHECK(zeros);
        CHECK_SYMMETRIC(z);
        fill(z, me, 13, 0, 800);
        shmem_barrier_all();
        shmem_getmem(buf, z, 800, right_pe());
        CHECK_PATTERN(buf, right_pe(), 13, 0, 800);
    }
    CHECK(shmem_calloc(SIZE_MAX / 2, 4) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_BAD_SIZE);
    CHECK(shmem_malloc(0) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    return z;
}

/* Frees of an interior, a non-heap and a freed address are refused. */
static void free_with_errors(unsigned char *a, unsigned char *z)
{
    int on_stack = 0;
    if (a) {
        shmem_free(a + 16);
        CHECK_EQ(malloc_error, SHMEM_MALLOC_NOT_ALIGNED);
    }
    shmem_free(&on_stack);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
    shmem_free(z);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmem_free(z);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_ALREADY_FREE);
    shmem_free(a);
}

void scenario_realloc(void)
{
    unsigned char buf[5000];
    unsigned char *p, *q = NULL, *a, *z;
    p = realloc_grown_block(buf, &q);
    if (!p) return;
    p = realloc_shrunk_then_grown(p, buf);
    if (!p) return;
    realloc_as_malloc_and_free();
    a = aligned_block(buf);
    z = zeroed_block(buf);
    free_with_errors(a, z);
    shmem_free(q);
    shmem_free(p);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
}

void scenario_mismatch(void)
{
    unsigned char *p, *q, *r;
    if (npes < 2) {
        printf("PE %d of %d: mismatch needs 2 PEs, skipped\n", me, npes);
        return;
    }
    CHECK(shmem_malloc(me == 0 ? 64 : 128) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK(shmem_malloc(me == npes - 1 ? 65 : 64) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK(shmem_calloc(me == 0 ? 2 : 3, 16) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK(shmem_align(64, me == 0 ? 100 : 200) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);

    p = (unsigned char *)shmem_malloc(64);
    CHECK(p != NULL);
    if (!p) return;
    fill(p, me, 20, 0, 64);
    r = (unsigned char *)shmem_realloc(p, me == 0 ? 100 : 200);
    CHECK(r == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK_PATTERN(p, me, 20, 0, 64); /* untouched */
    CHECK_SYMMETRIC(p);

    q = (unsigned char *)shmem_malloc(64); /* different blocks, alignments or calls fail too */
    CHECK(q != NULL);
    shmem_free(me == 0 ? q : p);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK(shmem_realloc(me == 0 ? q : p, 100) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK(shmem_align(me == 0 ? 64 : 128, 64) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK((me == 0 ? shmem_calloc(4, 16) : shmem_malloc(64)) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    CHECK_PATTERN(p, me, 20, 0, 64);
    CHECK_SYMMETRIC(q);
    shmem_free(q);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmem_free(p);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
}

/* Each round one PE is late: it sleeps, then puts the round number into
   its word on every PE, then enters the barrier.  Nobody puts to the late
   PE that round, so only the barrier can hold the others back (a put to it
   would wait for its progress and hide a broken barrier). */
void scenario_barrier(void)
{
    uint64_t *seen = (uint64_t *)shmem_calloc((size_t)npes, sizeof *seen);
    uint64_t round;
    int q;
    CHECK(seen != NULL);
    if (!seen) return;
    for (round = 1; round <= BARRIER_ROUNDS; round++) {
        int late = (int)(round % (uint64_t)npes);
        if (me == late) usleep(round % 10 == 0 ? 2000 : 200);
        for (q = 0; q < npes; q++)
            if (q != late || me == late) shmem_putmem(&seen[me], &round, sizeof round, q);
        shmem_barrier_all();
        for (q = 0; q < npes; q++) {
            uint64_t v = seen[q];
            if (me == late && q != late) continue; /* not written this round */
            /* round + 1: q already left this barrier and wrote the next. */
            if (v != round && v != round + 1)
                fail(__LINE__, "round %llu: PE %d's word is %llu: a PE left the barrier early or a put was late",
                     (unsigned long long)round, q, (unsigned long long)v);
        }
        if (round % 50 == 0) {
            shmem_barrier_all();
            for (q = 0; q < npes; q++)
                if (me != late || q == late) CHECK_EQ(seen[q], round);
            shmem_barrier_all();
        }
    }
    shmem_free(seen);
}


typedef struct slot {
    unsigned char *p;
    size_t size;
    uint32_t tag;
} slot;

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t random_size(uint64_t *rng)
{
    uint64_t r = next_random(rng) % 100;
    if (r < 70) return 1 + (size_t)(next_random(rng) % 256);
    if (r < 95) return 1 + (size_t)(next_random(rng) % 65536);
    return 1 + (size_t)(next_random(rng) % ((uint64_t)1 << 20));
}

/* Allocates or frees/reallocs slot s; the same choice on every PE. */
static void stress_step(slot *sl, uint32_t tag, uint64_t *rng, uint64_t *hash)
{
    size_t i, size;
    if (!sl->p) {
        uint64_t kind = next_random(rng) % 4;
        size_t align = (size_t)16 << (next_random(rng) % 9);
        size = random_size(rng);
        if (kind == 0) sl->p = (unsigned char *)shmem_malloc(size);
        else if (kind == 1) sl->p = (unsigned char *)shmem_calloc(size, 1);
        else if (kind == 2) sl->p = (unsigned char *)shmem_align(align, size);
        else sl->p = (unsigned char *)shmem_realloc(NULL, size);
        if (!sl->p) {
            fail(__LINE__, "allocation %llu of %zu bytes failed (malloc_error %ld)", (unsigned long long)kind, size,
                 malloc_error);
            return;
        }
        if (kind == 1) {
            int zeros = 1;
            for (i = 0; i < size; i++) zeros &= sl->p[i] == 0;
            if (!zeros) fail(__LINE__, "calloc of %zu bytes is not zeroed", size);
        }
        if (kind == 2 && (uintptr_t)sl->p % align) fail(__LINE__, "shmem_align(%zu) is not aligned", align);
        sl->size = size;
        sl->tag = tag;
        fill(sl->p, me, tag, 0, size);
    } else if (next_random(rng) % 2) {
        CHECK_PATTERN(sl->p, me, sl->tag, 0, sl->size);
        shmem_free(sl->p);
        CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
        sl->p = NULL;
        return;
    } else {
        unsigned char *q;
        size = random_size(rng);
        q = (unsigned char *)shmem_realloc(sl->p, size);
        if (!q) {
            fail(__LINE__, "realloc to %zu bytes failed (malloc_error %ld)", size, malloc_error);
            return;
        }
        sl->p = q;
        CHECK_PATTERN(sl->p, me, sl->tag, 0, size < sl->size ? size : sl->size);
        if (size > sl->size) fill(sl->p, me, sl->tag, sl->size, size);
        sl->size = size;
    }
    *hash = (*hash ^ offset_of(sl->p)) * 1099511628211u;
}

void scenario_stress(void)
{
    slot slots[SLOTS];
    const char *ops_env = getenv("SHMALLOC_TEST_WORKER_OPS");
    long ops = ops_env ? atol(ops_env) : DEFAULT_OPS, op;
    uint64_t rng = 0x9e3779b97f4a7c15u, hash = 14695981039346656037u;
    unsigned char buf[256];
    size_t baseline = used_blocks();
    int s, checked = 0;

    memset(slots, 0, sizeof slots);
    for (op = 0; op < ops && failures < 10; op++) {
        int changed = (int)(next_random(&rng) % SLOTS), v, k;
        int peer = npes > 1 ? (me + 1 + (int)(next_random(&rng) % (uint64_t)(npes - 1))) % npes : me;
        stress_step(&slots[changed], (uint32_t)op, &rng, &hash);
        /* Check an older block on a peer: it was filled before this op's
           barrier, and cannot change before our next collective call. */
        v = (int)(next_random(&rng) % SLOTS);
        for (k = 0; k < SLOTS; k++) {
            slot *sl = &slots[(v + k) % SLOTS];
            size_t len, off;
            if (!sl->p || sl == &slots[changed]) continue;
            len = sl->size < sizeof buf ? sl->size : sizeof buf;
            off = (size_t)(next_random(&rng) % (sl->size - len + 1));
            shmem_getmem(buf, sl->p + off, len, peer);
            CHECK_PATTERN(buf, peer, sl->tag, off, len);
            checked++;
            break;
        }
    }
    if (!same_everywhere(hash)) fail(__LINE__, "the offsets of %ld operations differ between PEs", ops);
    for (s = 0; s < SLOTS; s++) shmem_free(slots[s].p);
    CHECK_EQ(used_blocks(), baseline);
    if (me == 0) printf("PE 0 of %d: stress: %ld operations, %d blocks checked on peers\n", npes, ops, checked);
}

