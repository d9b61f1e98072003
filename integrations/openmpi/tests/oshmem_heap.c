/* oshmem_heap.c - the symmetric heap of an OpenSHMEM runtime, through the
   standard OpenSHMEM calls only, with whatever memheap the runtime chose.

   usage: oshmem_heap SCENARIO...   ("all": what any heap must pass;
   align16, malloc0 and bad_free, what our man pages promise beyond that,
   are named one by one, bad_free alone since a heap may end the job on
   it).  Every PE runs the scenarios in order; a PE prints "FAIL NAME on PE
   N: why", PE 0 "ok NAME" or "FAIL NAME" for all; exit 1 if any failed.  OSHMEM_HEAP_EXPECT_ADDR=same or
   different makes the "addresses" scenario check how the heaps are mapped.
   SHMEM_SYMMETRIC_HEAP_SIZE is the heap's size, as oshrun reads it. */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, npes, failed;
static unsigned char *anchor; /* the first block: offsets are measured from it */

static void fail(const char *name, const char *why, long a, long b)
{
    printf("FAIL %s on PE %d: %s (%ld, %ld)\n", name, me, why, a, b);
    failed = 1;
}

/* Every PE's v, equal?  (Global variables are symmetric.) */
static long gathered_value;
static int same_on_all(long v)
{
    int same = 1;
    gathered_value = v;
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++)
        same &= shmem_long_g(&gathered_value, pe) == v;
    shmem_barrier_all();
    return same;
}

static unsigned char pattern(int pe, unsigned tag, size_t i) { return (unsigned char)((unsigned)pe * 31u + tag * 7u + i); }

static void fill(unsigned char *p, int pe, unsigned tag, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = pattern(pe, tag, i);
}

static long mismatch(const unsigned char *p, int pe, unsigned tag, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(pe, tag, i)) return (long)i;
    return -1;
}

/* The block sits at one offset on every PE: a neighbour's put into "the
   same" block lands in ours, whole. */
static int check_symmetric(const char *name, unsigned char *p, size_t n, unsigned tag)
{
    int left = (me + npes - 1) % npes;
    if (!same_on_all((long)(p - anchor))) {
        fail(name, "offset differs between PEs", (long)(p - anchor), (long)n);
        return 0;
    }
    unsigned char *src = malloc(n);
    fill(src, me, tag, n);
    shmem_putmem(p, src, n, (me + 1) % npes);
    free(src);
    shmem_barrier_all();
    long at = mismatch(p, left, tag, n);
    if (at >= 0) fail(name, "neighbour's put not found in the block", at, (long)n);
    shmem_barrier_all();
    return at < 0;
}

static void scenario_symmetric(void)
{
    static const size_t sizes[] = {1, 8, 24, 100, 4096, 65536, 1000000, 3u << 20};
    unsigned char *p[sizeof sizes / sizeof sizes[0]];
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        p[i] = shmem_malloc(sizes[i]);
        if (!p[i]) { fail("symmetric", "shmem_malloc failed", (long)sizes[i], 0); return; }
        check_symmetric("symmetric", p[i], sizes[i], i);
    }
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) shmem_free(p[i]);
}

static void scenario_realloc(void)
{
    unsigned char *p = shmem_malloc(1000), *q;
    fill(p, me, 1, 1000);
    q = shmem_realloc(p, 300000);
    if (!q) { fail("realloc", "growing failed", 300000, 0); return; }
    if (mismatch(q, me, 1, 1000) >= 0) fail("realloc", "contents lost growing", mismatch(q, me, 1, 1000), 0);
    check_symmetric("realloc", q, 300000, 2);
    p = shmem_realloc(q, 64);
    if (!p) { fail("realloc", "shrinking failed", 64, 0); return; }
    check_symmetric("realloc", p, 64, 3);
    q = shmem_realloc(NULL, 4096);
    if (!q) { fail("realloc", "realloc(NULL, n) failed", 4096, 0); return; }
    check_symmetric("realloc", q, 4096, 4);
    shmem_free(q);
    if (shmem_realloc(p, 0) != NULL) fail("realloc", "realloc(p, 0) returned a block", 0, 0);
}

static void scenario_align(void)
{
    for (size_t a = 8; a <= (1u << 20); a <<= 1) {
        unsigned char *small = shmem_malloc(24); /* moves the next block off any boundary */
        unsigned char *p = shmem_align(a, a / 2 + 40);
        if (!p) { fail("align", "shmem_align failed", (long)a, 0); return; }
        if ((uintptr_t)p % a) fail("align", "block not aligned", (long)a, (long)((uintptr_t)p % a));
        check_symmetric("align", p, a / 2 + 40, (unsigned)a);
        shmem_free(p);
        shmem_free(small);
    }
}

static void scenario_calloc(void)
{
    unsigned char *dirty = shmem_malloc(8192);
    memset(dirty, 0xa5, 8192);
    shmem_free(dirty);
    unsigned char *p = shmem_calloc(1024, 8);
    if (!p) { fail("calloc", "shmem_calloc failed", 1024, 8); return; }
    for (size_t i = 0; i < 8192; i++)
        if (p[i]) { fail("calloc", "byte not zero", (long)i, p[i]); return; }
    check_symmetric("calloc", p, 8192, 5);
    shmem_free(p);
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* The same random calls on every PE: every block symmetric, every block
   keeps its bytes while others come and go. */
enum { SLOTS = 64, STEPS = 1500 };
static void scenario_random(void)
{
    unsigned char *slot[SLOTS] = {0};
    size_t len[SLOTS] = {0};
    uint64_t rng = 42;
    for (unsigned step = 0; step < STEPS && !failed; step++) {
        unsigned i = (unsigned)(next_random(&rng) % SLOTS);
        size_t n = 1 + (size_t)(next_random(&rng) % (1u << (4 + next_random(&rng) % 14)));
        if (slot[i] && mismatch(slot[i], me, i + 7 * (unsigned)len[i], len[i]) >= 0)
            fail("random", "a live block lost its bytes", (long)step, (long)i);
        if (slot[i] && step % 3 == 0) {
            slot[i] = shmem_realloc(slot[i], n);
        } else {
            shmem_free(slot[i]);
            slot[i] = step % 5 == 0 ? shmem_align((size_t)64 << (step % 6), n) : shmem_malloc(n);
        }
        len[i] = slot[i] ? n : 0;
        if (!slot[i]) fail("random", "allocation failed", (long)step, (long)n);
        else fill(slot[i], me, i + 7 * (unsigned)n, n);
        if (!same_on_all(slot[i] ? (long)(slot[i] - anchor) : -1)) fail("random", "offset differs", (long)step, 0);
    }
    for (unsigned i = 0; i < SLOTS; i++) shmem_free(slot[i]);
    if (!failed) check_symmetric("random", shmem_malloc(256), 256, 9);
}

/* SHMEM_SYMMETRIC_HEAP_SIZE as the runner sets it: bytes, or a K/M/G suffix. */
static size_t heap_size(void)
{
    const char *v = getenv("SHMEM_SYMMETRIC_HEAP_SIZE");
    char *end;
    size_t n = v ? (size_t)strtoull(v, &end, 10) : 0;
    if (!v || n == 0) return (size_t)32 << 20;
    switch (*end) {
    case 'G': case 'g': return n << 30;
    case 'M': case 'm': return n << 20;
    case 'K': case 'k': return n << 10;
    default: return n;
    }
}

/* oshmem's own symmetric objects (lock words, sync arrays made at start-up)
   keep working while a user block fills most of the heap. */
static long lock_word, counter;
static long sum_in, sum_out, psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static void scenario_internal(void)
{
    size_t big_size = heap_size() / 100 * 95;
    unsigned char *big = shmem_malloc(big_size);
    if (!big) { fail("internal", "95% of the heap in one block failed", (long)big_size, 0); return; }
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    long *shared = shmem_malloc(sizeof(long));
    *shared = 0;
    shmem_barrier_all();
    for (int round = 0; round < 20; round++) {
        shmem_set_lock(&lock_word);
        long v = shmem_long_g(shared, 0);
        shmem_long_p(shared, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock_word);
        shmem_long_atomic_inc(&counter, 0);
    }
    sum_in = me + 1;
    shmem_barrier_all();
    shmem_long_sum_to_all(&sum_out, &sum_in, 1, 0, 0, npes, pwrk, psync);
    shmem_barrier_all();
    if (me == 0 && *shared != 20L * npes) fail("internal", "locked increments lost", *shared, 20L * npes);
    if (me == 0 && counter != 20L * npes) fail("internal", "atomic increments lost", counter, 20L * npes);
    if (sum_out != (long)npes * (npes + 1) / 2) fail("internal", "reduction wrong", sum_out, 0);
    fill(big, me, 11, 4096);
    check_symmetric("internal", big + big_size - 4096, 4096, 12);
    shmem_free(shared);
    shmem_free(big);
}

/* How the heaps are mapped: one address everywhere or each its own. */
static void scenario_addresses(void)
{
    const char *expect = getenv("OSHMEM_HEAP_EXPECT_ADDR");
    int same = same_on_all((long)(uintptr_t)anchor);
    if (me == 0) printf("heap addresses: %s on every PE\n", same ? "the same" : "not the same");
    if (expect && strcmp(expect, same ? "same" : "different") != 0) fail("addresses", "mapping not as expected", same, 0);
}

/* What the man pages say and a memheap may or may not do: malloc(0) is
   NULL, every block is aligned for any use (16 bytes on x86-64). */
static void scenario_malloc0(void)
{
    void *p = shmem_malloc(0);
    if (p != NULL) fail("malloc0", "shmem_malloc(0) returned a block", 0, 0);
    shmem_free(p);
}

static void scenario_align16(void)
{
    for (size_t n = 1; n <= 200; n += 13) {
        void *p = shmem_malloc(n);
        if ((uintptr_t)p % 16) fail("align16", "block not 16-byte aligned", (long)n, (long)((uintptr_t)p % 16));
        shmem_free(p);
    }
}

/* A double free and an interior free leave a working heap. */
static void scenario_bad_free(void)
{
    unsigned char *p = shmem_malloc(256), *q = shmem_malloc(256);
    shmem_free(p);
    shmem_free(p);
    shmem_free(q + 16);
    unsigned char *r = shmem_malloc(256);
    if (!r) { fail("bad_free", "malloc after the bad frees failed", 0, 0); return; }
    check_symmetric("bad_free", r, 256, 13);
    check_symmetric("bad_free", q, 256, 14);
    shmem_free(r);
    shmem_free(q);
}

static const struct {
    const char *name;
    void (*run)(void);
    int in_all;
} scenarios[] = {
    {"addresses", scenario_addresses, 1}, {"symmetric", scenario_symmetric, 1}, {"realloc", scenario_realloc, 1},
    {"align", scenario_align, 1},         {"calloc", scenario_calloc, 1},       {"random", scenario_random, 1},
    {"internal", scenario_internal, 1},   {"align16", scenario_align16, 0},
    {"malloc0", scenario_malloc0, 0},     {"bad_free", scenario_bad_free, 0},
};
enum { N_SCENARIOS = sizeof scenarios / sizeof scenarios[0] };

/* 1 when the scenario passed on every PE. */
static int run(unsigned i)
{
    failed = 0;
    scenarios[i].run();
    shmem_barrier_all();
    int all_ok = same_on_all(failed) && !failed;
    if (me == 0) printf("%s %s\n", all_ok ? "ok" : "FAIL", scenarios[i].name);
    return all_ok;
}

int main(int argc, char **argv)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    anchor = shmem_malloc(64);
    if (me == 0) printf("%d PEs, heap of %zu bytes\n", npes, heap_size());
    int status = 0;
    for (int a = 1; a < argc; a++)
        for (unsigned i = 0; i < N_SCENARIOS; i++)
            if (strcmp(argv[a], scenarios[i].name) == 0 || (strcmp(argv[a], "all") == 0 && scenarios[i].in_all))
                status |= !run(i);
    shmem_free(anchor);
    shmem_finalize();
    return status;
}
