/* pmix_ofi_worker.c - the program tests/test_pmix_ofi.c launches: one PE of
   the PMIx + libfabric transport, running the scenario named by argv[1].

       mpirun -np 4 ./build/pmix_ofi_worker all
       ./build/pmix_ofi_worker all          (no launcher: one PE)

   Each PE prints "PE i of n: OK <scenario>" when its checks pass, or
   "PE i of n: FAIL <scenario> line L: <reason>" for each one that does not,
   and exits with 0 or 1.  Scenarios:

     symmetric  every collective allocation lands at the same offset on every
                PE; heap bases are the same or differ as
                SHMALLOC_TEST_EXPECT_ADDRESSES (same|differ) says, when set
     putget     puts and gets of several sizes and alignments, from and to
                heap and non-heap memory, to peers and to this PE
     realloc    realloc, align, calloc, free and their errors, data checked
                on a peer with getmem
     mismatch   PEs passing different sizes, alignments or blocks, or
                making different calls, all get NULL with
                SHMEM_MALLOC_SYMMSIZE_FAILED, and the heap stays usable
     barrier    a PE that leaves a barrier early is caught: each round every
                PE puts the round number to every peer before the barrier
     stress     SHMALLOC_TEST_WORKER_OPS (10000) random collective operations with
                the same seed on every PE, data checked on peers
     direct     peers' heaps through shmem_ptr (mapped on this node, or NULL
                as SHMALLOC_TEST_EXPECT_DIRECT (1|0) says, when set), loads and
                stores through them, 8-byte puts and gets to every PE
     all        the seven above, in that order, in one launch
   and, for fault tests:
     init       shmem_init and shmem_finalize only
     no_finalize  shmem_init, then main returns without shmem_finalize
     exit_3     the same, but PE 1 calls exit(3) (the others return)
     kill       PE 1 kills itself (SIGKILL) while the others are in a barrier
     exit       PE 1 calls _exit(3) while the others are in a barrier
     hang       PE 1 sleeps 30 s while the others are in a barrier
     global_exit  PE 1 calls shmem_global_exit(7)
     kill_in_malloc  PE 1 kills itself while the others are in shmem_malloc
     skip_malloc  PE 0 skips a shmem_malloc the others make, then finalizes
     stop       PE 2 stops itself (SIGSTOP) while the others are in a barrier;
                a child of it continues it (SIGCONT) 8 s later
   and, run with SHMALLOC_HEAP_MAX (see "grow" below):
     grow       allocations far beyond the nominal size grow every heap
     bad_grow   one PE passes a bad argument while the others' calls need
                growth: every PE gets its error, no heap grows (bad_grow.h)
   and, to check the cost model:
     counts     50 barriers, then 25 shmem_malloc and shmem_free pairs: each
                call's slot reads, lines, messages and bytes (counted by
                the test build) are what the model says for the layout
                (SHMALLOC_TEST_EXPECT_NODE_SIZE, SHMALLOC_TEST_NODE_SIZE)
   and, run with SHMALLOC_DEBUG=1 on 2 PEs:
     reports    an allocation larger than the heap fails on every PE, then
                PE 1 makes one SHMEMX_MALLOC_NO_BARRIER allocation more than
                PE 0 and both call shmem_malloc, which fails: the out-of-
                memory, mismatch and (PE 1's block) leak reports follow
   and, started by shmem_init_thread(SHMEM_THREAD_MULTIPLE):
     threads    4 threads per PE put, quiet, get and verify blocks on every
                PE (and call the heap's non-collective checks) while the
                main thread makes collective allocations that grow the heap
                (run with SHMALLOC_HEAP_MAX), barriers and frees; then
                every PE checks every thread's last puts into its heap.
   SHMALLOC_TEST_WORKER_LEVEL=L: start with shmem_init_thread(L) and print
   "PE i of n: thread level L provided P query Q"; a refused L prints
   "thread level L refused" and exits with status 3. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* usleep */
#endif
#include "transports/shmalloc_pmix_ofi.h"

#include "bad_grow.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 64
#define DEFAULT_OPS 10000
#define BARRIER_ROUNDS 200

static int me, npes, failures;
static const char *current = "";
static uint64_t *scratch; /* npes words: the gather area */

#if defined(__GNUC__) || defined(__clang__)
static void fail(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
static pthread_mutex_t fail_mutex = PTHREAD_MUTEX_INITIALIZER; /* the threads scenario */
static void fail(int line, const char *fmt, ...)
{
    char reason[400];
    va_list ap;
    pthread_mutex_lock(&fail_mutex);
    if (++failures <= 20) { /* the first ones tell the story */
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        printf("PE %d of %d: FAIL %s line %d: %s\n", me, npes, current, line, reason);
        fflush(stdout);
    }
    pthread_mutex_unlock(&fail_mutex);
}

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) fail(__LINE__, "%s is false (malloc_error %ld)", #cond, malloc_error); \
    } while (0)

#define CHECK_EQ(got, want)                                                              \
    do {                                                                                 \
        long long got_ = (long long)(got), want_ = (long long)(want);                    \
        if (got_ != want_) fail(__LINE__, "%s is %lld, expected %s = %lld", #got, got_, #want, want_); \
    } while (0)

/* LeakSanitizer: libpmix 4.2 keeps two strings from PMIx_Init after
   PMIx_Finalize (pmix_rte_init, pmix_mca_base_show_load_errors_init).
   Only those frames are suppressed; a leak of ours still fails.  libpmix
   has no frame pointers, so the frames are found by the slow unwinder. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:pmix_rte_init\nleak:pmix_mca_base_show_load_errors_init\n";
}

/* ---- helpers ------------------------------------------------------------- */
/* SHMALLOC_TEST_EXPECT_DIRECT: 1 every peer's heap is mapped here (shmem_ptr
   gives an address), 0 none is, unset (-1) either. */
static int expect_direct(void)
{
    const char *v = getenv("SHMALLOC_TEST_EXPECT_DIRECT");
    return v && *v ? atoi(v) != 0 : -1;
}

static unsigned char pattern(int pe, uint32_t tag, size_t i)
{
    return (unsigned char)((unsigned)pe * 151u + tag * 31u + (unsigned)i * 7u + (unsigned)(i >> 9));
}

static void fill(void *p, int pe, uint32_t tag, size_t from, size_t to)
{
    unsigned char *b = (unsigned char *)p;
    size_t i;
    for (i = from; i < to; i++) b[i] = pattern(pe, tag, i);
}

/* Index of the first byte of [from, to) that differs from pattern(pe, tag,
   base + i), or -1. */
static long mismatch_at(const void *p, int pe, uint32_t tag, size_t base, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != pattern(pe, tag, base + i)) return (long)i;
    return -1;
}

#define CHECK_PATTERN(p, pe, tag, base, n)                                               \
    do {                                                                                 \
        long at_ = mismatch_at((p), (pe), (tag), (base), (n));                           \
        if (at_ >= 0) fail(__LINE__, "byte %ld of %s (%zu bytes) is not PE %d's tag %u data", at_, #p, \
                           (size_t)(n), (int)(pe), (unsigned)(tag));                     \
    } while (0)

static uint64_t offset_of(const void *p)
{
    return (uint64_t)((const char *)p - (const char *)shmalloc_heap_base(shmalloc_current()));
}

/* Every PE's value, by puts into every PE's scratch and two barriers. */
static void allgather(uint64_t v, uint64_t *out)
{
    int q;
    for (q = 0; q < npes; q++) shmem_putmem(&scratch[me], &v, sizeof v, q);
    shmem_barrier_all();
    memcpy(out, scratch, (size_t)npes * sizeof *out);
    shmem_barrier_all(); /* nobody overwrites scratch before all have read it */
}

/* 1 when v is the same on every PE. */
static int same_everywhere(uint64_t v)
{
    uint64_t all[1024];
    int q, same = 1;
    if (npes > 1024) return 0;
    allgather(v, all);
    for (q = 0; q < npes; q++) same &= all[q] == v;
    return same;
}

#define CHECK_SYMMETRIC(p)                                                               \
    do {                                                                                 \
        if (!same_everywhere(offset_of(p))) fail(__LINE__, "%s's offset %llu is not the same on every PE", #p, \
                                                 (unsigned long long)offset_of(p));      \
    } while (0)

static size_t used_blocks(void)
{
    shmalloc_counters c;
    shmalloc_tlsf_counters(shmalloc_heap_tlsf(shmalloc_current()), &c);
    return c.used_blocks;
}

/* The neighbours in the ring of PEs. */
static int right_pe(void) { return (me + 1) % npes; }
static int left_pe(void) { return (me + npes - 1) % npes; }

/* ---- scenarios --------------------------------------------------------- */
static void scenario_symmetric(void)
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

static void scenario_putget(void)
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
static void scenario_direct(void)
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

static void scenario_realloc(void)
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

static void scenario_mismatch(void)
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
static void scenario_barrier(void)
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

/* ---- counts: the cost of one collective call, against its model ---------- */
#define COUNTED_CALLS 50

typedef struct cost {
    unsigned long long calls, slot_reads, lines, messages, bytes;
} cost;

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

/* What one collective call of count values costs this PE, from the layout
   alone (bench/README.md, "The cost of one collective call"): nodes of
   SHMALLOC_TEST_EXPECT_NODE_SIZE (or SHMALLOC_TEST_NODE_SIZE) consecutive
   ranks, one node when neither is set. */
static cost model(int count)
{
    const char *nb = getenv("SHMALLOC_PMIX_OFI_NODE_BARRIER"), *ns = getenv("SHMALLOC_TEST_EXPECT_NODE_SIZE");
    int size, nodes, first, here;
    unsigned long long message = 16 + 8 * (unsigned long long)count;
    cost c = {1, 0, 0, 0, 0};
    if (!ns) ns = getenv("SHMALLOC_TEST_NODE_SIZE");
    size = ns ? atoi(ns) : npes;
    if (size < 1 || size > npes) size = npes;
    nodes = (npes + size - 1) / size;
    first = me - me % size;
    here = npes - first < size ? npes - first : size;
    if ((nb && strcmp(nb, "0") == 0) || size == 1) { /* messages among all PEs */
        c.messages = (unsigned long long)ceil_log2(npes);
    } else {
        c.slot_reads = (unsigned long long)ceil_log2(here) + (nodes > 1 && me != first); /* + the release */
        c.lines = c.slot_reads * ((8 + 8 * (unsigned long long)count + 63) / 64);
        c.messages = me == first ? (unsigned long long)ceil_log2(nodes) : 0;
    }
    c.bytes = c.messages * message;
    return c;
}

static cost counted_since(const shmalloc_pmix_ofi_counts *a)
{
    shmalloc_pmix_ofi_counts b;
    cost c;
    shmalloc_pmix_ofi_counts_get(&b);
    c.calls = b.calls - a->calls;
    c.slot_reads = b.slot_reads - a->slot_reads;
    c.lines = b.lines_read - a->lines_read;
    c.messages = b.messages - a->messages;
    c.bytes = b.bytes - a->bytes;
    return c;
}

/* Checks n calls' counts against n times the model of one, and prints one's. */
static void check_cost(const char *what, const cost *got, int n, int count)
{
    cost one = model(count);
    unsigned long long k = (unsigned long long)n;
    if (got->calls != k * one.calls || got->slot_reads != k * one.slot_reads || got->lines != k * one.lines ||
        got->messages != k * one.messages || got->bytes != k * one.bytes)
        fail(__LINE__, "%d %s: counted %llu calls, %llu slot reads, %llu lines, %llu messages, %llu bytes; "
             "the model says %llu, %llu, %llu, %llu, %llu", n, what, got->calls, got->slot_reads, got->lines,
             got->messages, got->bytes, k * one.calls, k * one.slot_reads, k * one.lines, k * one.messages,
             k * one.bytes);
    printf("PE %d of %d: per %s: %llu slot reads, %llu lines, %llu messages, %llu bytes\n", me, npes, what,
           got->slot_reads / k, got->lines / k, got->messages / k, got->bytes / k);
}

/* Barriers, then allocations and frees (one all-reduce of the allocator's
   values each), counted. */
static void scenario_counts(void)
{
    const char *debug = getenv("SHMALLOC_DEBUG");
    int values = debug && strcmp(debug, "0") != 0 ? 16 : 12, i;
    shmalloc_pmix_ofi_counts at;
    cost got;
    shmalloc_pmix_ofi_counts_get(&at);
    for (i = 0; i < COUNTED_CALLS; i++) shmem_barrier_all();
    got = counted_since(&at);
    check_cost("barrier", &got, COUNTED_CALLS, 0);
    shmalloc_pmix_ofi_counts_get(&at);
    for (i = 0; i < COUNTED_CALLS / 2; i++) {
        void *p = shmem_malloc(64);
        CHECK(p != NULL);
        shmem_free(p);
    }
    got = counted_since(&at);
    check_cost("shmem_malloc or shmem_free", &got, COUNTED_CALLS, values);
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

static void scenario_stress(void)
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

/* ---- faults --------------------------------------------------------------- */
/* This PE stops; a child of it, holding none of its files, continues it
   `seconds` later. */
static void stop_for(unsigned seconds)
{
    pid_t parent = getpid(), child;
    fflush(NULL);
    child = fork();
    if (child == 0) {
        int fd;
        for (fd = 0; fd < 1024; fd++) close(fd); /* the launcher's pipes too: the job's end waits for none */
        sleep(seconds);
        kill(parent, SIGCONT);
        _exit(0);
    }
    if (child > 0) raise(SIGSTOP);
}

static void fault(const char *name)
{
    shmem_barrier_all();
    if (strcmp(name, "skip_malloc") == 0) {
        void *p = me == 0 ? NULL : shmem_malloc(64); /* PE 0 then finalizes while the others wait */
        shmem_free(p);
        return;
    }
    if (strcmp(name, "stop") == 0 && me == 2) stop_for(8);
    if (me == 1) {
        fflush(stdout);
        if (strcmp(name, "kill") == 0) raise(SIGKILL);
        if (strcmp(name, "exit") == 0) _exit(3);
        if (strcmp(name, "hang") == 0) sleep(30);
        if (strcmp(name, "global_exit") == 0) shmem_global_exit(7);
        if (strcmp(name, "kill_in_malloc") == 0) raise(SIGKILL);
    }
    if (strcmp(name, "kill_in_malloc") == 0 && shmem_malloc(4096) != NULL) /* PE 1 never arrives */
        fail(__LINE__, "shmem_malloc returned although PE 1 is gone");
    shmem_barrier_all();
    if (npes > 1 && strcmp(name, "hang") != 0 && strcmp(name, "stop") != 0)
        fail(__LINE__, "the barrier returned although PE 1 is gone");
}

/* ---- reports --------------------------------------------------------------- */
/* What each PE prints is checked by test_pmix_ofi.c: every line names the
   PE that prints it, and the mismatch names the PEs of the most and the
   fewest calls.  The output hook tags each line with the rank that
   printed it, as the launcher merges the PEs' output. */
static void tag_output(void *user, int stream, const char *text)
{
    (void)user;
    fprintf(stream == 1 ? stdout : stderr, "rank %d says %s", me, text);
}

static void scenario_reports(void)
{
    size_t too_big = shmalloc_heap_size(shmalloc_current()) + 4096;
    if (npes != 2) {
        fail(__LINE__, "reports needs 2 PEs, not %d", npes);
        return;
    }
    shmalloc_set_output(tag_output, NULL); /* to the end: the leak report comes at shmem_finalize */
    CHECK(shmem_malloc(too_big) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_FAIL);
    fflush(stdout);
    shmem_barrier_all(); /* the out-of-memory reports first, on both PEs */
    if (me == 1) CHECK(shmem_malloc_with_hints(64, SHMEMX_MALLOC_NO_BARRIER) != NULL);
    CHECK(shmem_malloc(128) == NULL);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
}

/* ---- main ------------------------------------------------------------------ */
/* Run with a small SHMEM_SYMMETRIC_HEAP_SIZE (1M) and SHMALLOC_HEAP_MAX
   (256M): allocations far beyond the nominal size grow every heap, and
   data crosses the registered pieces both ways.  With
   SHMALLOC_TEST_FAIL_REGISTER=1:1, PE 1's first growth fails, so the
   first large allocation fails on every PE, and the next one grows. */
#define GROW_PIECES 20
#define GROW_MIB ((size_t)1 << 20)
#define GROW_STRADDLE (2 * GROW_MIB)

/* A block that starts in the first piece and ends in the second, after a
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
    shmem_getmem(buf, b, GROW_STRADDLE, right); /* one transfer over two pieces */
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
    shmem_putmem(p[0], p[1], GROW_MIB, left_pe()); /* heap to heap, between pieces */
    shmem_barrier_all();
    CHECK_PATTERN(b, right_pe(), 101, 0, GROW_STRADDLE);
    CHECK_PATTERN(p[0], right_pe(), 1, 0, GROW_MIB);
    shmem_barrier_all();
}

static void scenario_grow(void)
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
static void scenario_bad_grow(void) { bad_grow_run(fail); }

/* ---- threads: SHMEM_THREAD_MULTIPLE --------------------------------------- */
#define RMA_THREADS 4
#define THREAD_SLOT 4096     /* bytes each thread owns in every PE's area */
#define THREAD_ITERS 60      /* rounds over every PE, per thread */
#define ALLOC_ROUNDS 24      /* collective allocations meanwhile */
#define ALLOC_KEEP 6         /* blocks alive at once: the heap must grow */

static unsigned char *thread_area; /* [pe][thread] slots, npes * RMA_THREADS of them */

/* The bytes thread t of PE pe leaves in its slot on every PE in round i. */
static uint32_t thread_tag(int t, int i) { return 1000u + (uint32_t)t * 100u + (uint32_t)i; }

static void *rma_thread(void *arg)
{
    int t = (int)(intptr_t)arg, i, q;
    unsigned char src[THREAD_SLOT], back[THREAD_SLOT];
    unsigned char *mine = thread_area + ((size_t)me * RMA_THREADS + (size_t)t) * THREAD_SLOT;
    shmalloc_info info;
    for (i = 0; i < THREAD_ITERS; i++) {
        size_t n = (size_t)8 << (i % 10); /* 8 bytes .. 4 KiB */
        fill(src, me, thread_tag(t, i), 0, THREAD_SLOT);
        for (q = 0; q < npes; q++) {
            int pe = (me + 1 + q) % npes;
            shmem_putmem(mine, src, n, pe);
            if (n < THREAD_SLOT) shmem_putmem(mine + n, src + n, THREAD_SLOT - n, pe);
            shmem_quiet();
            memset(back, 0, sizeof back);
            shmem_getmem(back, mine, THREAD_SLOT, pe);
            CHECK_PATTERN(back, me, thread_tag(t, i), 0, THREAD_SLOT);
        }
        if (i % 8 == t) { /* the heap's own lock against the allocating thread */
            CHECK_EQ(shmemx_heap_info(&info), 0);
            CHECK_EQ(shmalloc_check(-1), 0);
        }
    }
    return NULL;
}

/* The main thread's collective calls while the others put and get. */
static void collective_rounds(void)
{
    unsigned char *keep[ALLOC_KEEP] = {NULL}, check[64];
    size_t size0 = shmalloc_heap_size(shmalloc_current());
    int right = (me + 1) % npes, r, k;
    for (r = 0; r < ALLOC_ROUNDS; r++) {
        size_t n = ((size_t)1 << 20) * (size_t)(1 + r % 3) + (size_t)r * 16;
        k = r % ALLOC_KEEP;
        shmem_free(keep[k]);
        keep[k] = (unsigned char *)shmem_malloc(n);
        CHECK(keep[k] != NULL);
        if (!keep[k]) break;
        fill(keep[k], me, (uint32_t)r, 0, n);
        shmem_barrier_all();
        shmem_getmem(check, keep[k] + n - sizeof check, sizeof check, right);
        CHECK_PATTERN(check, right, (uint32_t)r, n - sizeof check, sizeof check);
        shmem_barrier_all(); /* the left neighbour has read ours */
    }
    CHECK(shmalloc_heap_size(shmalloc_current()) > size0); /* it grew while the threads ran */
    for (k = 0; k < ALLOC_KEEP; k++) shmem_free(keep[k]);
}

static void scenario_threads(void)
{
    pthread_t th[RMA_THREADS];
    int provided = -1, t, q, started = 0;
    shmem_query_thread(&provided);
    CHECK_EQ(provided, SHMEM_THREAD_MULTIPLE);
    thread_area = (unsigned char *)shmem_calloc((size_t)npes * RMA_THREADS, THREAD_SLOT);
    CHECK(thread_area != NULL);
    if (!thread_area) return;
    shmem_barrier_all();
    for (t = 0; t < RMA_THREADS; t++) {
        if (pthread_create(&th[t], NULL, rma_thread, (void *)(intptr_t)t) != 0) break;
        started++;
    }
    CHECK_EQ(started, RMA_THREADS);
    collective_rounds();
    for (t = 0; t < started; t++) pthread_join(th[t], NULL);
    shmem_barrier_all(); /* every thread of every PE is done */
    for (q = 0; q < npes; q++)
        for (t = 0; t < started; t++)
            CHECK_PATTERN(thread_area + ((size_t)q * RMA_THREADS + (size_t)t) * THREAD_SLOT, q,
                          thread_tag(t, THREAD_ITERS - 1), 0, THREAD_SLOT);
    shmem_barrier_all();
    shmem_free(thread_area);
}

typedef struct scenario {
    const char *name;
    void (*run)(void);
    int in_all; /* 0: needs its own settings */
} scenario;

static const scenario scenarios[] = {
    {"symmetric", scenario_symmetric, 1}, {"putget", scenario_putget, 1}, {"realloc", scenario_realloc, 1},
    {"mismatch", scenario_mismatch, 1},   {"barrier", scenario_barrier, 1}, {"stress", scenario_stress, 1},
    {"direct", scenario_direct, 1},
    {"grow", scenario_grow, 0},          {"bad_grow", scenario_bad_grow, 0}, {"threads", scenario_threads, 0},
    {"reports", scenario_reports, 0},     {"counts", scenario_counts, 0},
};

static void run(const scenario *sc)
{
    int before = failures;
    current = sc->name;
    sc->run();
    if (shmalloc_check(-1) != 0) fail(__LINE__, "shmalloc_check(-1) reports a corrupted heap");
    if (failures == before) printf("PE %d of %d: OK %s\n", me, npes, sc->name);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "all";
    size_t i, n = sizeof scenarios / sizeof scenarios[0];
    int known = 0;

    if (getenv("SHMALLOC_TEST_WORKER_LEVEL") || strcmp(name, "threads") == 0) {
        const char *l = getenv("SHMALLOC_TEST_WORKER_LEVEL");
        int level = l ? atoi(l) : SHMEM_THREAD_MULTIPLE, provided = -99, query = -99;
        if (shmem_init_thread(level, &provided) != 0) {
            printf("thread level %d refused (provided %d, shmem_my_pe %d)\n", level, provided, shmem_my_pe());
            return 3;
        }
        shmem_query_thread(&query);
        printf("PE %d of %d: thread level %d provided %d query %d\n", shmem_my_pe(), shmem_n_pes(), level,
               provided, query);
    } else {
        shmem_init();
    }
    me = shmem_my_pe();
    npes = shmem_n_pes();
    scratch = (uint64_t *)shmem_calloc((size_t)npes, sizeof *scratch);
    if (!scratch) {
        printf("PE %d of %d: FAIL setup: no scratch array (malloc_error %ld)\n", me, npes, malloc_error);
        shmem_global_exit(1);
    }
    current = name;
    for (i = 0; i < n; i++)
        if ((strcmp(name, "all") == 0 && scenarios[i].in_all) || strcmp(name, scenarios[i].name) == 0) {
            run(&scenarios[i]);
            known = 1;
        }
    if (strcmp(name, "kill") == 0 || strcmp(name, "exit") == 0 || strcmp(name, "hang") == 0 ||
        strcmp(name, "global_exit") == 0 || strcmp(name, "kill_in_malloc") == 0 || strcmp(name, "skip_malloc") == 0 ||
        strcmp(name, "stop") == 0) {
        fault(name);
        known = 1;
    }
    if (!known && strcmp(name, "init") != 0 && strcmp(name, "no_finalize") != 0 && strcmp(name, "exit_3") != 0)
        fail(__LINE__, "unknown scenario %s", name);
    current = name;
    shmem_free(scratch);
    if (shmalloc_check(-1) != 0) fail(__LINE__, "shmalloc_check(-1) reports a corrupted heap");
    if (strcmp(name, "all") == 0 || strcmp(name, "init") == 0) {
        if (me == 0) shmalloc_stats(0);
        if (!failures) printf("PE %d of %d: OK %s\n", me, npes, name);
    }
    fflush(stdout);
    if (strcmp(name, "no_finalize") == 0) return failures ? 1 : 0; /* finalized at exit */
    if (strcmp(name, "exit_3") == 0 && me == 1) exit(3);
    shmem_finalize();
    return failures ? 1 : 0;
}
