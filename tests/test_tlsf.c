/* Unit tests of the TLSF core (shmalloc_tlsf_*): one behaviour per test.
   Every test that changes a heap ends with the checker returning 0. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* mmap flags, setenv */
#endif
#include "criterion_shim.h" /* Criterion, or its stand-in under TSan */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shmalloc.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* ---- helpers ------------------------------------------------------------ */

/* `bytes` of fresh memory aligned to `align` (a power of two >= page size or
   16).  Never unmapped: each test runs in its own process. */
static void *map_aligned(size_t bytes, size_t align)
{
    size_t total = bytes + align;
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert(m != MAP_FAILED, "mmap of %zu bytes failed", total);
    uintptr_t a = ((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1);
    return (void *)a;
}

/* A fresh heap over a region sized so that malloc(cap) succeeds. */
static shmalloc_tlsf *heap_with_capacity(size_t cap, void **mem_out)
{
    size_t bytes = cap + shmalloc_tlsf_overhead(cap);
    void *mem = map_aligned(bytes, MIB);
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL, "create over %zu bytes (cap %zu) failed", bytes, cap);
    if (mem_out)
        *mem_out = mem;
    return t;
}

static shmalloc_counters counters(const shmalloc_tlsf *t)
{
    shmalloc_counters c;
    memset(&c, 0, sizeof c);
    shmalloc_tlsf_counters(t, &c);
    return c;
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

static size_t off_of(const shmalloc_tlsf *t, const void *p)
{
    return (size_t)((const char *)p - (const char *)shmalloc_tlsf_base(t));
}

/* A copy of the block list, to prove an operation left the heap unchanged. */
#define SNAP_MAX 4096
typedef struct snapshot {
    shmalloc_counters c;
    size_t n;
    int overflow;
    shmalloc_block_info b[SNAP_MAX];
} snapshot;

static int snap_cb(void *user, const shmalloc_block_info *bi)
{
    snapshot *s = user;
    if (s->n == SNAP_MAX) {
        s->overflow = 1;
        return 1;
    }
    s->b[s->n++] = *bi;
    return 0;
}

/* Snapshots come from a small ring: a test compares at most two at a time,
   and each test runs in a process of its own. */
static snapshot *take_snapshot(const shmalloc_tlsf *t)
{
    static snapshot ring[4];
    static unsigned next;
    snapshot *s = &ring[next++ % 4];
    memset(s, 0, sizeof *s);
    s->c = counters(t);
    shmalloc_tlsf_walk(t, snap_cb, s);
    cr_assert(!s->overflow, "too many blocks for a snapshot");
    return s;
}

static void assert_same_heap(const snapshot *a, const snapshot *b, const char *what)
{
    cr_assert_eq(a->c.capacity, b->c.capacity, "%s: capacity changed", what);
    cr_assert_eq(a->c.in_use, b->c.in_use, "%s: in_use %zu -> %zu", what, a->c.in_use, b->c.in_use);
    cr_assert_eq(a->c.free, b->c.free, "%s: free changed", what);
    cr_assert_eq(a->c.largest_free, b->c.largest_free, "%s: largest_free changed", what);
    cr_assert_eq(a->c.used_blocks, b->c.used_blocks, "%s: used_blocks changed", what);
    cr_assert_eq(a->n, b->n, "%s: block count %zu -> %zu", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        cr_assert(a->b[i].offset == b->b[i].offset && a->b[i].size == b->b[i].size &&
                      a->b[i].used == b->b[i].used,
                  "%s: block %zu changed", what, i);
    }
}

/* Every byte of [p, p+n) gets a pattern that depends on tag and position. */
static void fill_pattern(void *p, size_t n, uint32_t tag)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)(tag + i * 7u + (i >> 8));
}

static int check_pattern(const void *p, size_t n, uint32_t tag)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)(tag + i * 7u + (i >> 8)))
            return 0;
    return 1;
}

/* xorshift64*: the same sequence on every run. */
static uint64_t rng_state;
static void rng_seed(uint64_t s) { rng_state = s ? s : 0x9e3779b97f4a7c15u; }
static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1du;
}
static size_t rng_below(size_t n) { return (size_t)(rng() % n); }
/* 1 .. 2^max_log2, log-uniform. */
static size_t rng_size(unsigned max_log2)
{
    unsigned bits = (unsigned)rng_below(max_log2 + 1);
    return 1 + (size_t)(rng() & (((uint64_t)1 << bits) - 1));
}

/* Output capture for the checker's messages. */
static char out_text[3][1 << 16];
static size_t out_len[3];
static void capture(void *user, int stream, const char *text)
{
    (void)user;
    int s = (stream == 1 || stream == 2) ? stream : 0;
    size_t n = strlen(text);
    if (out_len[s] + n >= sizeof out_text[s])
        n = sizeof out_text[s] - 1 - out_len[s];
    memcpy(out_text[s] + out_len[s], text, n);
    out_len[s] += n;
    out_text[s][out_len[s]] = '\0';
}
static void capture_start(void)
{
    memset(out_len, 0, sizeof out_len);
    out_text[0][0] = out_text[1][0] = out_text[2][0] = '\0';
    shmalloc_set_output(capture, NULL);
}

/* Allocate blocks of `size` until malloc fails; returns how many. */
static size_t fill_heap(shmalloc_tlsf *t, size_t size, void **ptrs, size_t max)
{
    size_t n = 0;
    while (n < max) {
        void *p = shmalloc_tlsf_malloc(t, size);
        if (!p)
            break;
        ptrs[n++] = p;
    }
    cr_assert(n < max, "heap did not fill within %zu blocks", max);
    return n;
}

/* ---- alignment and sizes -------------------------------------------------- */

Test(tlsf_align, every_malloc_is_16_byte_aligned_for_sizes_1_to_4096_and_powers_to_1MiB)
{
    shmalloc_tlsf *t = heap_with_capacity(64 * MIB, NULL);
    for (size_t s = 1; s <= 4096; s++) {
        unsigned char *p = shmalloc_tlsf_malloc(t, s);
        cr_assert(p != NULL, "malloc(%zu) failed", s);
        cr_assert(((uintptr_t)p & 15) == 0, "malloc(%zu) = %p not 16-aligned", s, (void *)p);
        p[0] = 1;
        p[s - 1] = 2;
    }
    for (size_t s = 4096; s <= MIB; s *= 2) {
        for (size_t d = 0; d < 3; d++) {
            size_t n = s - 1 + d;
            unsigned char *p = shmalloc_tlsf_malloc(t, n);
            cr_assert(p != NULL, "malloc(%zu) failed", n);
            cr_assert(((uintptr_t)p & 15) == 0, "malloc(%zu) not 16-aligned", n);
            p[n - 1] = 3;
        }
    }
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_align, first_block_user_pointer_is_16_bytes_after_region_base)
{
    void *mem;
    shmalloc_tlsf *t = heap_with_capacity(MIB, &mem);
    cr_assert_eq(shmalloc_tlsf_base(t), mem);
    char *p = shmalloc_tlsf_malloc(t, 100);
    cr_assert_eq(p, (char *)mem + 16, "first block at offset %zu", off_of(t, p));
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_size, block_costs_at_most_rounded_size_plus_header_and_at_least_32)
{
    for (size_t s = 1; s <= 2100; s += (s < 200 ? 1 : 37)) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        void *p = shmalloc_tlsf_malloc(t, s);
        cr_assert(p != NULL);
        shmalloc_counters c = counters(t);
        size_t bound = round16(s) + SHMALLOC_HEADER;
        if (bound < 32)
            bound = 32;
        cr_assert(c.in_use <= bound, "malloc(%zu): in_use %zu > %zu", s, c.in_use, bound);
        cr_assert(c.in_use >= s, "malloc(%zu): in_use %zu < request", s, c.in_use);
        cr_assert(shmalloc_tlsf_usable_size(t, p) >= s);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

/* Trap: the size of the bin where a block was found written back as the
   request size (malloc(64) consumed 252 MiB of a 256 MiB heap). */
Test(tlsf_size, malloc_64_on_fresh_256MiB_heap_consumes_at_most_64_plus_header)
{
    shmalloc_tlsf *t = heap_with_capacity(256 * MIB, NULL);
    shmalloc_counters before = counters(t);
    void *p = shmalloc_tlsf_malloc(t, 64);
    cr_assert(p != NULL);
    shmalloc_counters c = counters(t);
    cr_assert(c.in_use <= 64 + SHMALLOC_HEADER, "in_use = %zu", c.in_use);
    cr_assert(c.largest_free >= before.largest_free - (64 + SHMALLOC_HEADER),
              "largest_free %zu -> %zu", before.largest_free, c.largest_free);
    cr_assert_eq(c.used_blocks, 1);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_size, usable_size_is_at_least_the_request_and_whole_usable_area_is_writable)
{
    shmalloc_tlsf *t = heap_with_capacity(16 * MIB, NULL);
    rng_seed(7);
    for (int i = 0; i < 2000; i++) {
        size_t s = rng_size(14);
        unsigned char *p = shmalloc_tlsf_malloc(t, s);
        cr_assert(p != NULL);
        size_t u = shmalloc_tlsf_usable_size(t, p);
        cr_assert(u >= s, "usable_size %zu < request %zu", u, s);
        cr_assert(u <= round16(s) + 2 * SHMALLOC_ALIGNMENT + 32, "usable_size %zu for %zu", u, s);
        memset(p, 0x5a, u);
    }
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_size, usable_size_is_0_for_null_outside_interior_and_freed_pointers)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *p = shmalloc_tlsf_malloc(t, 100);
    char *q = shmalloc_tlsf_malloc(t, 100);
    int on_stack;
    cr_assert_eq(shmalloc_tlsf_usable_size(t, NULL), 0);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, &on_stack), 0);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, p + 16), 0);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, p + 1), 0);
    cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, p), 0);
    cr_assert(shmalloc_tlsf_usable_size(t, q) >= 100);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* The header leaves the core's malloc(0) unspecified: it must not crash and
   must return NULL or a real, freeable block. */
Test(tlsf_size, malloc_0_returns_null_or_a_valid_freeable_block)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p = shmalloc_tlsf_malloc(t, 0);
    if (p) {
        cr_assert(((uintptr_t)p & 15) == 0);
        cr_assert_eq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
        cr_assert(counters(t).in_use <= 32);
        cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    } else {
        cr_assert_eq(counters(t).used_blocks, 0);
    }
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* ---- whole-heap requests ------------------------------------------------ */

/* Trap: a request close to the size of the only free block fails because
   the search rounds the request up to the next class. */
Test(tlsf_whole, malloc_of_largest_free_minus_header_succeeds_on_fresh_heaps)
{
    static const size_t region[] = {16384, 20000, 65536, 100000, MIB, MIB + 16, MIB + 4096 + 48,
                                    3 * MIB + 12345, 64 * MIB, 100000007, 256 * MIB - 16};
    for (size_t i = 0; i < sizeof region / sizeof region[0]; i++) {
        void *mem = map_aligned(region[i], MIB);
        shmalloc_tlsf *t = shmalloc_tlsf_create(mem, region[i]);
        cr_assert(t != NULL, "create over %zu bytes failed", region[i]);
        shmalloc_counters c = counters(t);
        cr_assert_eq(c.largest_free, c.capacity, "fresh heap is not one free block");
        cr_assert(c.largest_free > SHMALLOC_HEADER);
        size_t want = c.largest_free - SHMALLOC_HEADER;
        void *p = shmalloc_tlsf_malloc(t, want);
        cr_assert(p != NULL, "region %zu: malloc(largest_free %zu - header) failed", region[i],
                  c.largest_free);
        cr_assert(shmalloc_tlsf_usable_size(t, p) >= want);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
        cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
        cr_assert_eq(counters(t).largest_free, c.largest_free);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

Test(tlsf_whole, malloc_of_capacity_succeeds_on_region_of_capacity_plus_overhead)
{
    static const size_t caps[] = {17,      32,      100,     4096,     10000,
                                  65536,   100000,  MIB - 1, MIB,      MIB + 8,
                                  MIB + 16, 3 * MIB + 12345, 64 * MIB, 100000007, 512 * MIB};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        shmalloc_tlsf *t = heap_with_capacity(caps[i], NULL);
        void *p = shmalloc_tlsf_malloc(t, caps[i]);
        cr_assert(p != NULL, "malloc(%zu) on a heap made for it failed (overhead %zu)", caps[i],
                  shmalloc_tlsf_overhead(caps[i]));
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

Test(tlsf_whole, tiny_capacities_1_to_16_are_served_by_their_overhead)
{
    for (size_t cap = 1; cap <= 16; cap++) {
        size_t bytes = cap + shmalloc_tlsf_overhead(cap);
        void *mem = map_aligned(bytes, 4096);
        shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
        cr_assert(t != NULL, "create over %zu + overhead %zu bytes refused", cap,
                  shmalloc_tlsf_overhead(cap));
        cr_assert(shmalloc_tlsf_malloc(t, cap) != NULL);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

/* The header documents that the last block's payload may reach 8 bytes
   past capacity (into the end marker's first word), and no further: the
   heap layer registers and contains exactly that much. */
Test(tlsf_whole, usable_bytes_of_the_last_block_end_at_most_8_bytes_past_capacity)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    shmalloc_counters c = counters(t);
    char *end = (char *)shmalloc_tlsf_base(t) + c.capacity + 8;
    int reached_end = 0;
    for (size_t back = 0; back < 64; back += 8) {
        size_t req = c.largest_free - SHMALLOC_HEADER + 8 - back;
        char *p = shmalloc_tlsf_malloc(t, req);
        if (!p)
            continue;
        size_t u = shmalloc_tlsf_usable_size(t, p);
        cr_assert(p + req <= end && p + u <= end,
                  "malloc(%zu) of a %zu-byte heap: request ends %td bytes and usable size %zu "
                  "ends %td bytes past base + capacity + 8",
                  req, c.capacity, (p + req) - end, u, (p + u) - end);
        reached_end |= p + u == end;
        memset(p, 0x3c, u);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0, "writing all usable bytes broke the heap");
        cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    }
    cr_assert(reached_end, "no request reached the end: test did not probe the limit");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_whole, fresh_heap_becomes_one_free_block_again_after_churn)
{
    shmalloc_tlsf *t = heap_with_capacity(4 * MIB, NULL);
    shmalloc_counters fresh = counters(t);
    static void *ptrs[4096];
    size_t n = 0;
    rng_seed(99);
    for (int i = 0; i < 3000; i++) {
        if (n < 4096 && (n == 0 || rng_below(3) != 0)) {
            void *p = shmalloc_tlsf_malloc(t, rng_size(12));
            if (p)
                ptrs[n++] = p;
        } else {
            size_t k = rng_below(n);
            cr_assert_eq(shmalloc_tlsf_free(t, ptrs[k]), SHMALLOC_TLSF_OK);
            ptrs[k] = ptrs[--n];
        }
    }
    while (n)
        cr_assert_eq(shmalloc_tlsf_free(t, ptrs[--n]), SHMALLOC_TLSF_OK);
    shmalloc_counters c = counters(t);
    cr_assert_eq(c.in_use, 0);
    cr_assert_eq(c.largest_free, fresh.largest_free, "free blocks did not coalesce");
    cr_assert(shmalloc_tlsf_malloc(t, c.largest_free - SHMALLOC_HEADER) != NULL);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* A region's old bytes (an earlier heap's, or anything) decide nothing:
   the lists' sentinel nodes read as empty, so every request is served from
   a real block. */
Test(tlsf_whole, a_heap_over_memory_full_of_old_bytes_serves_real_blocks)
{
    size_t bytes = 4 * MIB;
    void *mem = map_aligned(bytes, MIB), *p[4];
    shmalloc_tlsf *t;
    memset(mem, 0xff, bytes);
    t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL);
    p[0] = shmalloc_tlsf_malloc(t, 100);
    p[1] = shmalloc_tlsf_memalign(t, 4096, 3000);
    p[2] = shmalloc_tlsf_malloc(t, 70000);
    p[3] = shmalloc_tlsf_realloc(t, p[0], 5000);
    for (int i = 1; i < 4; i++) {
        cr_assert(p[i] != NULL, "request %d failed", i);
        cr_assert(off_of(t, p[i]) < counters(t).capacity, "request %d served outside the blocks", i);
        memset(p[i], 0x5a, shmalloc_tlsf_usable_size(t, p[i]));
    }
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    for (int i = 1; i < 4; i++) cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    cr_assert_eq(counters(t).used_blocks, 0);
}

/* ---- absurd sizes ---------------------------------------------------------- */

Test(tlsf_bad_size, malloc_of_huge_sizes_returns_null_and_leaves_heap_unchanged)
{
    static const size_t sizes[] = {SIZE_MAX,
                                   SIZE_MAX - 15,
                                   SIZE_MAX - 16,
                                   SIZE_MAX - 31,
                                   SIZE_MAX / 2,
                                   SIZE_MAX / 2 + 1,
                                   (size_t)1 << 46,
                                   ((size_t)1 << 46) - 16,
                                   ((size_t)1 << 46) + 1,
                                   ((size_t)1 << 47),
                                   ((size_t)1 << 63)};
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *keep = shmalloc_tlsf_malloc(t, 100);
    cr_assert(keep);
    snapshot *before = take_snapshot(t);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        cr_assert_null(shmalloc_tlsf_malloc(t, sizes[i]), "malloc(%zu) succeeded", sizes[i]);
        cr_assert_null(shmalloc_tlsf_memalign(t, 64, sizes[i]), "memalign(64, %zu)", sizes[i]);
        cr_assert_null(shmalloc_tlsf_realloc(t, keep, sizes[i]), "realloc(p, %zu)", sizes[i]);
        cr_assert_null(shmalloc_tlsf_realloc(t, NULL, sizes[i]), "realloc(NULL, %zu)", sizes[i]);
    }
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "huge requests");
    cr_assert_eq(shmalloc_tlsf_validate(t, keep), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_bad_size, create_over_a_tiny_region_returns_null)
{
    static unsigned char buf[64] __attribute__((aligned(16)));
    cr_assert_null(shmalloc_tlsf_create(buf, 0));
    cr_assert_null(shmalloc_tlsf_create(buf, 16));
    cr_assert_null(shmalloc_tlsf_create(buf, sizeof buf));
}

/* ---- memalign --------------------------------------------------------------- */

Test(tlsf_memalign, bad_alignments_0_3_24_and_2_pow_63_return_null)
{
    static const size_t bad[] = {0, 3, 24, 48, 100, 4095, 4097, (size_t)1 << 63,
                                 ((size_t)1 << 63) + 1, SIZE_MAX};
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    snapshot *before = take_snapshot(t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_null(shmalloc_tlsf_memalign(t, bad[i], 64), "memalign(%zu, 64) succeeded",
                       bad[i]);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "bad memalign");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_memalign, alignments_1_2_4_8_give_16_aligned_blocks)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    for (size_t a = 1; a < 16; a *= 2) {
        void *p = shmalloc_tlsf_memalign(t, a, 40);
        cr_assert(p != NULL, "memalign(%zu, 40) failed", a);
        cr_assert(((uintptr_t)p & 15) == 0);
    }
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_memalign, every_power_of_two_16_to_1MiB_gives_aligned_usable_blocks)
{
    shmalloc_tlsf *t = heap_with_capacity(32 * MIB, NULL);
    uint32_t tag = 1;
    static void *ptrs[256];
    static size_t sizes[256];
    size_t n = 0;
    for (size_t a = 16; a <= MIB; a *= 2) {
        const size_t req[] = {1, 100, a, 3 * a + 5};
        for (size_t k = 0; k < 4; k++) {
            if (req[k] > 4 * MIB)
                continue;
            unsigned char *p = shmalloc_tlsf_memalign(t, a, req[k]);
            cr_assert(p != NULL, "memalign(%zu, %zu) failed", a, req[k]);
            cr_assert(((uintptr_t)p & (a - 1)) == 0, "memalign(%zu) gave %p", a, (void *)p);
            cr_assert(shmalloc_tlsf_usable_size(t, p) >= req[k]);
            cr_assert_eq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
            fill_pattern(p, req[k], tag + (uint32_t)n);
            ptrs[n] = p;
            sizes[n++] = req[k];
            cr_assert(shmalloc_tlsf_check(t, -1) == 0, "after memalign(%zu, %zu)", a, req[k]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        cr_assert(check_pattern(ptrs[i], sizes[i], tag + (uint32_t)i), "block %zu overwritten", i);
        cr_assert_eq(shmalloc_tlsf_free(t, ptrs[i]), SHMALLOC_TLSF_OK);
    }
    cr_assert_eq(counters(t).in_use, 0);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_memalign, alignment_of_half_the_heap_works_when_region_is_aligned_to_it)
{
    void *mem;
    shmalloc_tlsf *t = heap_with_capacity(8 * MIB, &mem);
    (void)mem;
    unsigned char *p = shmalloc_tlsf_memalign(t, 4 * MIB, MIB);
    cr_assert(p != NULL, "memalign(4 MiB, 1 MiB) on an 8 MiB heap failed");
    cr_assert(((uintptr_t)p & (4 * MIB - 1)) == 0);
    memset(p, 0x11, MIB);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_memalign, alignment_of_half_the_heap_works_when_region_is_only_1MiB_aligned)
{
    size_t cap = 8 * MIB;
    size_t bytes = cap + shmalloc_tlsf_overhead(cap);
    char *m = map_aligned(bytes + 8 * MIB, 8 * MIB);
    char *mem = m + MIB; /* 1 MiB aligned, not 2 MiB aligned */
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL);
    unsigned char *p = shmalloc_tlsf_memalign(t, 4 * MIB, MIB);
    cr_assert(p != NULL, "memalign(4 MiB, 1 MiB) on an 8 MiB heap at base%%4MiB=1MiB failed");
    cr_assert(((uintptr_t)p & (4 * MIB - 1)) == 0);
    memset(p, 0x22, MIB);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_memalign, aligned_blocks_between_small_ones_keep_neighbours_intact)
{
    shmalloc_tlsf *t = heap_with_capacity(4 * MIB, NULL);
    static unsigned char *small[64], *big[64];
    for (uint32_t i = 0; i < 64; i++) {
        small[i] = shmalloc_tlsf_malloc(t, 40 + i);
        cr_assert(small[i]);
        fill_pattern(small[i], 40 + i, i);
        size_t a = (size_t)64 << (i % 8);
        big[i] = shmalloc_tlsf_memalign(t, a, 24 + i);
        cr_assert(big[i]);
        cr_assert(((uintptr_t)big[i] & (a - 1)) == 0);
        fill_pattern(big[i], 24 + i, 1000 + i);
    }
    for (uint32_t i = 0; i < 64; i++) {
        cr_assert(check_pattern(small[i], 40 + i, i));
        cr_assert(check_pattern(big[i], 24 + i, 1000 + i));
    }
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* ---- calloc --------------------------------------------------------------- */

Test(tlsf_calloc, zeroes_every_requested_byte_of_a_block_that_held_other_bytes)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *p = shmalloc_tlsf_malloc(t, 4096);
    cr_assert(p);
    memset(p, 0xa5, 4096);
    cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    unsigned char *q = shmalloc_tlsf_calloc(t, 64, 64);
    cr_assert(q == p, "calloc(64, 64) did not reuse the freed 4096-byte block");
    for (size_t i = 0; i < 4096; i++)
        cr_assert_eq(q[i], 0, "byte %zu of calloc(64, 64) is %#x", i, q[i]);
    unsigned char *r = shmalloc_tlsf_calloc(t, 3, 5);
    cr_assert(r && ((uintptr_t)r & 15) == 0);
    cr_assert(shmalloc_tlsf_usable_size(t, r) >= 15);
    for (size_t i = 0; i < 15; i++)
        cr_assert_eq(r[i], 0);
    cr_assert_eq(counters(t).used_blocks, 2);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_calloc, overflowing_or_huge_products_return_null_and_leave_heap_unchanged)
{
    static const size_t pairs[][2] = {{SIZE_MAX / 2 + 1, 2},
                                      {2, SIZE_MAX / 2 + 1},
                                      {(size_t)1 << 32, (size_t)1 << 32},
                                      {SIZE_MAX, SIZE_MAX},
                                      {(size_t)1 << 20, (size_t)1 << 20}}; /* no overflow, 1 TiB */
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *keep = shmalloc_tlsf_malloc(t, 100);
    cr_assert(keep);
    snapshot *before = take_snapshot(t);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        cr_assert_null(shmalloc_tlsf_calloc(t, pairs[i][0], pairs[i][1]), "calloc(%zu, %zu) succeeded",
                       pairs[i][0], pairs[i][1]);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "overflowing calloc");
    cr_assert_eq(shmalloc_tlsf_validate(t, keep), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_calloc, a_zero_count_or_size_behaves_as_malloc_0)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *m = shmalloc_tlsf_malloc(t, 0);
    cr_assert_eq(shmalloc_tlsf_calloc(t, 0, 8) != NULL, m != NULL);
    cr_assert_eq(shmalloc_tlsf_calloc(t, 8, 0) != NULL, m != NULL);
    cr_assert_eq(counters(t).used_blocks, m ? 3u : 0u);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* ---- free-then-malloc (trap: a block keeping its unrounded size) -------- */

Test(tlsf_reuse, after_filling_the_heap_free_one_then_malloc_same_size_reuses_the_hole)
{
    static const size_t sizes[] = {1,    15,   16,   17,   31,    33,    48,    100,
                                   127,  200,  500,  1000, 1023,  1025,  4000,  4095,
                                   5000, 8191, 9999, 33333, 65537, 100000};
    static void *ptrs[40000];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        size_t n = fill_heap(t, sizes[i], ptrs, 40000);
        cr_assert(n >= 3, "size %zu: only %zu blocks fit", sizes[i], n);
        for (size_t k = 0; k < 3; k++) {
            size_t j = n / 2 - 1 + k;
            cr_assert_eq(shmalloc_tlsf_free(t, ptrs[j]), SHMALLOC_TLSF_OK);
            void *p = shmalloc_tlsf_malloc(t, sizes[i]);
            cr_assert(p != NULL, "size %zu: malloc after free of an equal block failed", sizes[i]);
            cr_assert_eq(p, ptrs[j], "size %zu: hole not reused", sizes[i]);
        }
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

Test(tlsf_reuse, fill_uses_nearly_all_capacity)
{
    static const size_t sizes[] = {1, 100, 1000, 4000, 33333};
    static void *ptrs[40000];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        fill_heap(t, sizes[i], ptrs, 40000);
        shmalloc_counters c = counters(t);
        size_t cost = round16(sizes[i]) + SHMALLOC_HEADER;
        if (cost < 32)
            cost = 32;
        cr_assert(c.largest_free < cost, "size %zu: malloc failed with a %zu-byte free block",
                  sizes[i], c.largest_free);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

/* ---- realloc --------------------------------------------------------------- */

Test(tlsf_realloc, realloc_null_acts_as_malloc)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p = shmalloc_tlsf_realloc(t, NULL, 100);
    cr_assert(p != NULL);
    cr_assert(((uintptr_t)p & 15) == 0);
    cr_assert_eq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).used_blocks, 1);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, realloc_to_0_frees_and_returns_null)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p = shmalloc_tlsf_malloc(t, 100);
    cr_assert_null(shmalloc_tlsf_realloc(t, p, 0));
    cr_assert_eq(counters(t).used_blocks, 0);
    cr_assert_eq(counters(t).in_use, 0);
    cr_assert_neq(shmalloc_tlsf_validate(t, p), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, shrink_stays_in_place_and_keeps_contents)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *p = shmalloc_tlsf_malloc(t, 10000);
    void *guard = shmalloc_tlsf_malloc(t, 100);
    cr_assert(guard);
    fill_pattern(p, 10000, 5);
    size_t before = counters(t).in_use;
    unsigned char *q = shmalloc_tlsf_realloc(t, p, 100);
    cr_assert_eq(q, p);
    cr_assert(check_pattern(q, 100, 5));
    cr_assert(counters(t).in_use < before, "shrink did not give space back");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, grow_into_next_free_block_stays_in_place)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    void *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && g);
    fill_pattern(a, 100, 9);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    unsigned char *q = shmalloc_tlsf_realloc(t, a, 200);
    cr_assert_eq(q, a, "grow into the freed neighbour moved the block");
    cr_assert(check_pattern(q, 100, 9));
    cr_assert(shmalloc_tlsf_usable_size(t, q) >= 200);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, grow_into_the_free_remainder_stays_in_place)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    fill_pattern(a, 100, 10);
    unsigned char *q = shmalloc_tlsf_realloc(t, a, 500000);
    cr_assert_eq(q, a);
    cr_assert(check_pattern(q, 100, 10));
    memset(q + 100, 0, 500000 - 100);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, the_last_block_grows_over_the_whole_free_end_and_shrinks_back)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100), *q;
    shmalloc_counters c = counters(t);
    size_t all = c.capacity - 16; /* a block of the whole capacity but 16 bytes: too few for a free block */
    fill_pattern(a, 100, 11);
    q = shmalloc_tlsf_realloc(t, a, all - 8);
    cr_assert_eq(q, a);
    c = counters(t);
    cr_assert_eq(c.largest_free, 0, "a free block of %zu bytes is left", c.largest_free);
    cr_assert_eq(c.in_use, c.capacity);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    q = shmalloc_tlsf_realloc(t, a, 100);
    cr_assert_eq(q, a);
    cr_assert(check_pattern(q, 100, 11));
    c = counters(t);
    cr_assert_eq(c.largest_free, c.capacity - c.in_use, "the tail did not become one free block with the end");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    cr_assert(shmalloc_tlsf_free(t, a) == SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).largest_free, counters(t).capacity);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, a_block_moves_to_the_free_end_when_no_hole_fits)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 1000), *hole = shmalloc_tlsf_malloc(t, 2000),
                  *wall = shmalloc_tlsf_malloc(t, 100), *q;
    cr_assert(a && hole && wall);
    cr_assert(shmalloc_tlsf_free(t, hole) == SHMALLOC_TLSF_OK);
    fill_pattern(a, 1000, 12);
    q = shmalloc_tlsf_realloc(t, a, 200000); /* neither the hole nor the room after a fits */
    cr_assert(q > wall, "realloc did not move past the wall");
    cr_assert(check_pattern(q, 1000, 12));
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    cr_assert(shmalloc_tlsf_free(t, q) == SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_free(t, wall) == SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).largest_free, counters(t).capacity, "the heap is not one free block again");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, grow_into_previous_free_block_keeps_contents)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && g);
    fill_pattern(b, 100, 11);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    unsigned char *q = shmalloc_tlsf_realloc(t, b, 250);
    cr_assert(q != NULL);
    cr_assert(check_pattern(q, 100, 11), "contents lost growing backwards");
    cr_assert_eq(q, a, "did not grow into the previous free block (got offset %zu, prev %zu)",
                 off_of(t, q), off_of(t, a));
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, grow_into_both_neighbours_keeps_contents)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && c && g);
    fill_pattern(b, 200, 12);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, c), SHMALLOC_TLSF_OK);
    /* a+b+c hold 3*224 = 672 bytes of block: 600 fits only in all three. */
    unsigned char *q = shmalloc_tlsf_realloc(t, b, 600);
    cr_assert(q != NULL);
    cr_assert(check_pattern(q, 200, 12));
    cr_assert_eq(q, a, "did not grow into both neighbours (offset %zu)", off_of(t, q));
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, a_large_free_previous_block_is_kept_whole_and_the_block_moves)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *hole = shmalloc_tlsf_malloc(t, 20000);
    unsigned char *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    unsigned char *spot = shmalloc_tlsf_malloc(t, 300);
    void *g2 = shmalloc_tlsf_malloc(t, 100);
    cr_assert(hole && b && g && spot && g2);
    fill_pattern(b, 100, 14);
    cr_assert_eq(shmalloc_tlsf_free(t, hole), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, spot), SHMALLOC_TLSF_OK);
    /* the 20000-byte hole below b would hold it, but stays whole: b moves
       to the 300-byte hole, the one that fits */
    unsigned char *q = shmalloc_tlsf_realloc(t, b, 250);
    cr_assert_eq(q, spot, "moved to offset %zu, not to the fitting hole at %zu", off_of(t, q), off_of(t, spot));
    cr_assert(check_pattern(q, 100, 14));
    cr_assert_eq(shmalloc_tlsf_malloc(t, 20000), hole, "the large hole was cut");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_reuse, of_two_free_blocks_in_one_list_the_lower_is_taken_first_in_either_free_order)
{
    for (int order = 0; order < 2; order++) {
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        void *lo = shmalloc_tlsf_malloc(t, 1000), *g1 = shmalloc_tlsf_malloc(t, 100);
        void *hi = shmalloc_tlsf_malloc(t, 1000), *g2 = shmalloc_tlsf_malloc(t, 100);
        cr_assert(lo && g1 && hi && g2);
        cr_assert_eq(shmalloc_tlsf_free(t, order ? hi : lo), SHMALLOC_TLSF_OK);
        cr_assert_eq(shmalloc_tlsf_free(t, order ? lo : hi), SHMALLOC_TLSF_OK);
        cr_assert_eq(shmalloc_tlsf_malloc(t, 1000), lo, "free order %d: the higher block came first", order);
        cr_assert_eq(shmalloc_tlsf_malloc(t, 1000), hi);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

Test(tlsf_realloc, move_when_neighbours_are_used_keeps_contents_up_to_old_size)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && g);
    fill_pattern(a, 100, 13);
    unsigned char *q = shmalloc_tlsf_realloc(t, a, 5000);
    cr_assert(q != NULL);
    cr_assert_neq(q, a);
    cr_assert(check_pattern(q, 100, 13));
    cr_assert(((uintptr_t)q & 15) == 0);
    cr_assert_neq(shmalloc_tlsf_validate(t, a), SHMALLOC_TLSF_OK, "old block still used");
    cr_assert_eq(counters(t).used_blocks, 2);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, failure_returns_null_and_leaves_block_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && g);
    fill_pattern(a, 100, 14);
    size_t usable = shmalloc_tlsf_usable_size(t, a);
    snapshot *before = take_snapshot(t);
    cr_assert_null(shmalloc_tlsf_realloc(t, a, 2 * MIB));
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "failed realloc");
    cr_assert_eq(shmalloc_tlsf_validate(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, a), usable);
    cr_assert(check_pattern(a, 100, 14));
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, bad_pointer_returns_null_and_leaves_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *a = shmalloc_tlsf_malloc(t, 100);
    char *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && g);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    int on_stack;
    snapshot *before = take_snapshot(t);
    cr_assert_null(shmalloc_tlsf_realloc(t, &on_stack, 50));
    cr_assert_null(shmalloc_tlsf_realloc(t, a + 16, 50));
    cr_assert_null(shmalloc_tlsf_realloc(t, a + 8, 50));
    cr_assert_null(shmalloc_tlsf_realloc(t, b, 50));
    cr_assert_null(shmalloc_tlsf_realloc(t, a + 16, 0));
    cr_assert_null(shmalloc_tlsf_realloc(t, b, 0));
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "realloc of bad pointers");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* Fill every byte of free space with 32-byte blocks, so that a realloc can
   neither grow in place nor find room except where the test frees some. */
static size_t fill_with_minimum_blocks(shmalloc_tlsf *t, void **ptrs, size_t max)
{
    size_t n = fill_heap(t, 16, ptrs, max);
    cr_assert(counters(t).largest_free < 32);
    return n;
}

static void free_range(shmalloc_tlsf *t, void **ptrs, size_t n, char *lo, char *hi)
{
    for (size_t i = 0; i < n; i++) {
        char *p = ptrs[i];
        if (p && p >= lo && p < hi) {
            cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
            ptrs[i] = NULL;
        }
    }
}

/* Trap: realloc that moves a block loses the alignment it was allocated with. */
Test(tlsf_realloc, moving_an_aligned_block_keeps_its_alignment)
{
    static void *ptrs[40000];
    static const size_t aligns[] = {32, 64, 256, 4096, 65536};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        size_t a = aligns[i];
        shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
        unsigned char *p = shmalloc_tlsf_memalign(t, a, 100);
        cr_assert(p && ((uintptr_t)p & (a - 1)) == 0);
        fill_pattern(p, 100, 15);
        size_t n = fill_with_minimum_blocks(t, ptrs, 40000);
        /* Open a 256 KiB hole far from p: the only place the block can go. */
        char *base = shmalloc_tlsf_base(t);
        free_range(t, ptrs, n, base + 512 * KIB, base + 768 * KIB);
        size_t grow = 4 * a < 20000 ? 20000 : 2 * a;
        unsigned char *q = shmalloc_tlsf_realloc(t, p, grow);
        cr_assert(q != NULL, "align %zu: realloc to %zu failed", a, grow);
        cr_assert_neq(q, p);
        cr_assert(((uintptr_t)q & (a - 1)) == 0, "align %zu lost on move: offset %zu", a,
                  off_of(t, q));
        cr_assert(check_pattern(q, 100, 15));
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

Test(tlsf_realloc, growing_an_aligned_block_backwards_keeps_its_alignment)
{
    static void *ptrs[40000];
    const size_t a = 4096;
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *lead = shmalloc_tlsf_malloc(t, 20000); /* p lands past offset 16 KiB */
    cr_assert(lead);
    unsigned char *p = shmalloc_tlsf_memalign(t, a, 100);
    cr_assert(p && ((uintptr_t)p & (a - 1)) == 0);
    fill_pattern(p, 100, 16);
    size_t n = fill_with_minimum_blocks(t, ptrs, 40000);
    (void)n;
    /* Free everything before p: the only free space is just below it. */
    cr_assert_eq(shmalloc_tlsf_free(t, lead), SHMALLOC_TLSF_OK);
    free_range(t, ptrs, n, (char *)shmalloc_tlsf_base(t), (char *)p);
    unsigned char *q = shmalloc_tlsf_realloc(t, p, 6000);
    cr_assert(q != NULL, "realloc with room just below the block failed");
    cr_assert(((uintptr_t)q & (a - 1)) == 0, "alignment lost: offset %zu", off_of(t, q));
    cr_assert(check_pattern(q, 100, 16));
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_realloc, growing_an_aligned_block_in_place_keeps_pointer)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *p = shmalloc_tlsf_memalign(t, 4096, 100);
    cr_assert(p);
    fill_pattern(p, 100, 17);
    unsigned char *q = shmalloc_tlsf_realloc(t, p, 50000);
    cr_assert_eq(q, p);
    cr_assert(check_pattern(q, 100, 17));
    q = shmalloc_tlsf_realloc(t, q, 50);
    cr_assert_eq(q, p);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* ---- bad frees -------------------------------------------------------------- */

Test(tlsf_free, free_null_returns_ok_and_changes_nothing)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a);
    snapshot *before = take_snapshot(t);
    cr_assert_eq(shmalloc_tlsf_free(t, NULL), SHMALLOC_TLSF_OK);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "free(NULL)");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, pointer_outside_the_heap_is_not_in_symm_heap_and_heap_unchanged)
{
    void *mem;
    shmalloc_tlsf *t = heap_with_capacity(MIB, &mem);
    void *a = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a);
    int on_stack;
    static char in_data[32];
    snapshot *before = take_snapshot(t);
    cr_assert_eq(shmalloc_tlsf_free(t, &on_stack), SHMALLOC_TLSF_NOT_IN_HEAP);
    cr_assert_eq(shmalloc_tlsf_free(t, in_data), SHMALLOC_TLSF_NOT_IN_HEAP);
    cr_assert_eq(shmalloc_tlsf_free(t, (char *)mem - 16), SHMALLOC_TLSF_NOT_IN_HEAP);
    cr_assert_eq(shmalloc_tlsf_free(t, (char *)mem - 4096), SHMALLOC_TLSF_NOT_IN_HEAP);
    cr_assert_eq(shmalloc_tlsf_free(t, (void *)(uintptr_t)16), SHMALLOC_TLSF_NOT_IN_HEAP);
    cr_assert_eq(shmalloc_tlsf_free(t, (void *)UINTPTR_MAX), SHMALLOC_TLSF_NOT_IN_HEAP);
    cr_assert_eq(shmalloc_tlsf_validate(t, &on_stack), SHMALLOC_TLSF_NOT_IN_HEAP);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "free of outside pointers");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, pointer_past_block_space_is_rejected_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a);
    shmalloc_counters c = counters(t);
    char *end = (char *)shmalloc_tlsf_base(t) + c.capacity;
    snapshot *before = take_snapshot(t);
    /* Past the block space lie the control structures, then the end of the
       region: neither is a block. */
    for (size_t d = 0; d < 256; d += 16) {
        int r = shmalloc_tlsf_free(t, end + d);
        cr_assert(r == SHMALLOC_TLSF_NOT_IN_HEAP || r == SHMALLOC_TLSF_NOT_A_BLOCK,
                  "free(end of block space + %zu) returned %d", d, r);
    }
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "free past the block space");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, interior_pointer_is_not_aligned_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *a = shmalloc_tlsf_malloc(t, 1000);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && g);
    snapshot *before = take_snapshot(t);
    for (size_t d = 16; d < 1000; d += 16) {
        cr_assert_eq(shmalloc_tlsf_free(t, a + d), SHMALLOC_TLSF_NOT_A_BLOCK, "free(p + %zu)", d);
        cr_assert_eq(shmalloc_tlsf_validate(t, a + d), SHMALLOC_TLSF_NOT_A_BLOCK);
    }
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "free of interior pointers");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, interior_pointer_whose_bytes_look_like_a_header_is_rejected)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *a = shmalloc_tlsf_malloc(t, 1000);
    char *b = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && g);
    /* Copy b's 16-byte header into the middle of a, as user data. */
    memcpy(a + 480, b - 16, 16);
    snapshot *before = take_snapshot(t);
    cr_assert_eq(shmalloc_tlsf_free(t, a + 496), SHMALLOC_TLSF_NOT_A_BLOCK);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "free of a forged block");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, misaligned_pointer_is_not_aligned_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    cr_assert(shmalloc_tlsf_malloc(t, 100)); /* a is not the first block */
    char *a = shmalloc_tlsf_malloc(t, 100);
    void *g = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && g);
    snapshot *before = take_snapshot(t);
    for (size_t d = 1; d < 16; d++)
        cr_assert_eq(shmalloc_tlsf_free(t, a + d), SHMALLOC_TLSF_NOT_A_BLOCK, "free(p + %zu)", d);
    cr_assert_eq(shmalloc_tlsf_free(t, a - 1), SHMALLOC_TLSF_NOT_A_BLOCK);
    cr_assert_eq(shmalloc_tlsf_free(t, a - 8), SHMALLOC_TLSF_NOT_A_BLOCK);
    cr_assert_eq(shmalloc_tlsf_free(t, a - 16), SHMALLOC_TLSF_NOT_A_BLOCK);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "free of misaligned pointers");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, pointer_into_the_first_header_is_rejected_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *a = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && shmalloc_tlsf_malloc(t, 100));
    char *base = shmalloc_tlsf_base(t);
    snapshot *before = take_snapshot(t);
    for (size_t d = 0; d < 16; d++) {
        int r = shmalloc_tlsf_free(t, base + d);
        cr_assert(r == SHMALLOC_TLSF_NOT_A_BLOCK || r == SHMALLOC_TLSF_NOT_IN_HEAP,
                  "free(base + %zu) returned %d", d, r);
    }
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "free inside the first header");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, double_free_is_already_free_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    void *b = shmalloc_tlsf_malloc(t, 100);
    void *c = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    snapshot *before = take_snapshot(t);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_ALREADY_FREE);
    cr_assert_eq(shmalloc_tlsf_validate(t, b), SHMALLOC_TLSF_ALREADY_FREE);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "double free");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, double_free_after_coalescing_is_rejected_and_heap_unchanged)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    void *b = shmalloc_tlsf_malloc(t, 100);
    void *c = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK); /* merges into a */
    snapshot *before = take_snapshot(t);
    int r = shmalloc_tlsf_free(t, b);
    cr_assert(r == SHMALLOC_TLSF_ALREADY_FREE || r == SHMALLOC_TLSF_NOT_A_BLOCK, "got %d", r);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_ALREADY_FREE);
    snapshot *after = take_snapshot(t);
    assert_same_heap(before, after, "double free of a merged block");
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_free, free_of_a_block_restores_counters)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    shmalloc_counters c0 = counters(t);
    void *b = shmalloc_tlsf_malloc(t, 3000);
    cr_assert(a && b);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    shmalloc_counters c1 = counters(t);
    cr_assert_eq(c1.in_use, c0.in_use);
    cr_assert_eq(c1.largest_free, c0.largest_free);
    cr_assert_eq(c1.used_blocks, c0.used_blocks);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* ---- counters and walk ----------------------------------------------------- */

typedef struct walk_sum {
    size_t n, used, free_blocks, used_bytes, free_bytes, largest_free, total;
    size_t last_offset, next_expected;
    int bad_order, not_contiguous, misaligned;
} walk_sum;

static int sum_cb(void *user, const shmalloc_block_info *b)
{
    walk_sum *w = user;
    if (w->n && b->offset <= w->last_offset)
        w->bad_order = 1;
    if (w->n && b->offset != w->next_expected)
        w->not_contiguous = 1;
    if ((b->offset & 15) || (b->size & 15))
        w->misaligned = 1;
    w->n++;
    w->last_offset = b->offset;
    w->next_expected = b->offset + b->size;
    w->total += b->size;
    if (b->used) {
        w->used++;
        w->used_bytes += b->size;
    } else {
        w->free_blocks++;
        w->free_bytes += b->size;
        if (b->size > w->largest_free)
            w->largest_free = b->size;
    }
    return 0;
}

static walk_sum walk_summary(const shmalloc_tlsf *t)
{
    walk_sum w;
    memset(&w, 0, sizeof w);
    shmalloc_tlsf_walk(t, sum_cb, &w);
    return w;
}

static void random_churn(shmalloc_tlsf *t, void **ptrs, size_t *n, size_t max, int ops)
{
    for (int i = 0; i < ops; i++) {
        if (*n < max && (*n == 0 || rng_below(5) < 3)) {
            void *p = rng_below(4) ? shmalloc_tlsf_malloc(t, rng_size(13))
                                   : shmalloc_tlsf_memalign(t, (size_t)16 << rng_below(8),
                                                            rng_size(10));
            if (p)
                ptrs[(*n)++] = p;
        } else {
            size_t k = rng_below(*n);
            cr_assert_eq(shmalloc_tlsf_free(t, ptrs[k]), SHMALLOC_TLSF_OK);
            ptrs[k] = ptrs[--*n];
        }
    }
}

Test(tlsf_counters, fresh_heap_counters_are_one_free_block_of_capacity)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    shmalloc_counters c = counters(t);
    cr_assert(c.capacity >= MIB);
    cr_assert_eq(c.in_use, 0);
    cr_assert_eq(c.free, c.capacity);
    cr_assert_eq(c.largest_free, c.capacity);
    cr_assert_eq(c.used_blocks, 0);
    walk_sum w = walk_summary(t);
    cr_assert_eq(w.n, 1);
    cr_assert_eq(w.free_blocks, 1);
    cr_assert_eq(w.total, c.capacity);
}

Test(tlsf_counters, counters_agree_with_the_walk_after_random_operations)
{
    shmalloc_tlsf *t = heap_with_capacity(2 * MIB, NULL);
    static void *ptrs[2000];
    size_t n = 0;
    rng_seed(1234);
    for (int round = 0; round < 40; round++) {
        random_churn(t, ptrs, &n, 2000, 100);
        shmalloc_counters c = counters(t);
        walk_sum w = walk_summary(t);
        cr_assert_eq(c.in_use + c.free, c.capacity, "in_use + free != capacity");
        cr_assert_eq(c.used_blocks, n, "used_blocks %zu, live %zu", c.used_blocks, n);
        cr_assert_eq(w.used, n);
        cr_assert_eq(w.used_bytes, c.in_use, "walk used bytes %zu, in_use %zu", w.used_bytes,
                     c.in_use);
        cr_assert_eq(w.free_bytes, c.free);
        cr_assert_eq(w.largest_free, c.largest_free);
        cr_assert_eq(w.total, c.capacity);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

Test(tlsf_counters, high_water_grows_with_allocation_and_never_shrinks_on_free)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    cr_assert_eq(counters(t).high_water, 0);
    void *a = shmalloc_tlsf_malloc(t, 1000);
    size_t h1 = counters(t).high_water;
    cr_assert(h1 >= 1000, "high_water %zu after malloc(1000)", h1);
    void *b = shmalloc_tlsf_malloc(t, 5000);
    size_t h2 = counters(t).high_water;
    cr_assert(h2 >= h1 + 5000);
    cr_assert(h2 <= counters(t).capacity);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(counters(t).high_water, h2);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_counters, high_water_after_growing_in_place_is_the_end_of_the_grown_block)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    char *p = shmalloc_tlsf_malloc(t, 100);
    cr_assert(p);
    p = shmalloc_tlsf_realloc(t, p, 200);
    cr_assert(p);
    size_t end = off_of(t, p) + shmalloc_tlsf_usable_size(t, p);
    size_t hw = counters(t).high_water;
    cr_assert(hw >= end, "high_water %zu below the block's end %zu", hw, end);
    cr_assert(hw <= end + SHMALLOC_HEADER,
              "high_water %zu after realloc(p, 200) into the free tail: the block ends at %zu",
              hw, end);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_walk, walk_visits_blocks_in_address_order_contiguously_summing_to_capacity)
{
    shmalloc_tlsf *t = heap_with_capacity(2 * MIB, NULL);
    static void *ptrs[2000];
    size_t n = 0;
    rng_seed(42);
    for (int round = 0; round < 20; round++) {
        random_churn(t, ptrs, &n, 2000, 150);
        walk_sum w = walk_summary(t);
        cr_assert(!w.bad_order, "offsets not increasing");
        cr_assert(!w.not_contiguous, "a block does not start where the previous ends");
        cr_assert(!w.misaligned, "offset or size not a multiple of 16");
        cr_assert_eq(w.total, counters(t).capacity);
        cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    }
}

typedef struct find_ctx {
    size_t offset;
    int found_used;
    size_t n;
} find_ctx;

static int find_cb(void *user, const shmalloc_block_info *b)
{
    find_ctx *f = user;
    f->n++;
    if (b->offset == f->offset && b->used)
        f->found_used = 1;
    return 0;
}

Test(tlsf_walk, walk_reports_every_live_block_at_its_user_pointer_offset)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *p[10];
    for (int i = 0; i < 10; i++)
        p[i] = shmalloc_tlsf_memalign(t, (size_t)16 << i, 50 + (size_t)i * 100);
    for (int i = 0; i < 10; i++) {
        find_ctx f = {off_of(t, p[i]), 0, 0};
        shmalloc_tlsf_walk(t, find_cb, &f);
        cr_assert(f.found_used, "block %d (offset %zu) not reported as used", i, f.offset);
    }
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

static int stop_cb(void *user, const shmalloc_block_info *b)
{
    (void)b;
    ++*(int *)user;
    return 1;
}

Test(tlsf_walk, walk_stops_when_callback_returns_nonzero)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    for (int i = 0; i < 5; i++)
        cr_assert(shmalloc_tlsf_malloc(t, 100));
    int calls = 0;
    shmalloc_tlsf_walk(t, stop_cb, &calls);
    cr_assert_eq(calls, 1);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* ---- large heaps (trap: largest class capped at 4 GiB) ------------------ */

Test(tlsf_large, heap_over_4GiB_serves_a_5GiB_block_and_small_ones, .timeout = 60)
{
    size_t bytes = 6 * GIB;
    unsigned char *mem = map_aligned(bytes, MIB);
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL, "create over 6 GiB failed");
    shmalloc_counters c0 = counters(t);
    cr_assert(c0.capacity > 5 * GIB && c0.largest_free > 5 * GIB, "capacity %zu", c0.capacity);
    unsigned char *big = shmalloc_tlsf_malloc(t, 5 * GIB);
    cr_assert(big != NULL, "malloc(5 GiB) failed");
    cr_assert(shmalloc_tlsf_usable_size(t, big) >= 5 * GIB);
    cr_assert(counters(t).in_use >= 5 * GIB, "in_use %zu", counters(t).in_use);
    void *small[16];
    for (int i = 0; i < 16; i++) {
        small[i] = shmalloc_tlsf_malloc(t, 100 + (size_t)i);
        cr_assert(small[i]);
        memset(small[i], 0x33, 100);
    }
    big[0] = 1;
    big[GIB] = 2;
    big[4 * GIB + 7] = 3;
    big[5 * GIB - 1] = 4;
    cr_assert(big[0] == 1 && big[GIB] == 2 && big[4 * GIB + 7] == 3 && big[5 * GIB - 1] == 4);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    cr_assert_eq(shmalloc_tlsf_free(t, big), SHMALLOC_TLSF_OK);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(shmalloc_tlsf_free(t, small[i]), SHMALLOC_TLSF_OK);
    shmalloc_counters c1 = counters(t);
    cr_assert_eq(c1.in_use, 0);
    cr_assert_eq(c1.largest_free, c0.largest_free);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

Test(tlsf_large, whole_free_space_of_a_6GiB_heap_is_one_allocation, .timeout = 60)
{
    size_t bytes = 6 * GIB;
    void *mem = map_aligned(bytes, MIB);
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL);
    size_t lf = counters(t).largest_free;
    void *p = shmalloc_tlsf_malloc(t, lf - SHMALLOC_HEADER);
    cr_assert(p != NULL, "malloc(largest_free %zu - header) failed", lf);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
}

/* ---- determinism ---------------------------------------------------------- */

#define DET_OPS 2000
typedef struct det_trace {
    size_t off[DET_OPS]; /* SIZE_MAX for NULL */
} det_trace;

static void run_det(shmalloc_tlsf *t, det_trace *tr)
{
    static void *live[DET_OPS];
    size_t n = 0;
    char *base = shmalloc_tlsf_base(t);
    rng_seed(20240601);
    for (int i = 0; i < DET_OPS; i++) {
        unsigned op = (unsigned)rng_below(10);
        void *p = NULL;
        if (n == 0 || op < 4) {
            p = shmalloc_tlsf_malloc(t, rng_size(16));
        } else if (op < 5) {
            size_t a = (size_t)16 << rng_below(17); /* up to 1 MiB */
            p = shmalloc_tlsf_memalign(t, a, rng_size(12));
        } else if (op < 7) {
            size_t k = rng_below(n);
            size_t s = rng_size(16);
            p = shmalloc_tlsf_realloc(t, live[k], s);
            if (p) {
                live[k] = p;
                tr->off[i] = (size_t)((char *)p - base);
                continue;
            }
        } else {
            size_t k = rng_below(n);
            cr_assert_eq(shmalloc_tlsf_free(t, live[k]), SHMALLOC_TLSF_OK);
            live[k] = live[--n];
            tr->off[i] = 0;
            continue;
        }
        if (p)
            live[n++] = p;
        tr->off[i] = p ? (size_t)((char *)p - base) : SIZE_MAX;
    }
}

Test(tlsf_determinism, same_calls_at_different_bases_give_same_offsets)
{
    size_t cap = 3 * MIB;
    size_t bytes = cap + shmalloc_tlsf_overhead(cap);
    size_t span = (bytes + MIB - 1) & ~(MIB - 1);
    char *m = map_aligned(2 * span + 2 * MIB, 2 * MIB);
    char *mem_a = m;                 /* 2 MiB aligned */
    char *mem_b = m + span + MIB;    /* 1 MiB aligned, different address bits */
    if (((uintptr_t)mem_b & (2 * MIB - 1)) == 0)
        mem_b += MIB;
    shmalloc_tlsf *a = shmalloc_tlsf_create(mem_a, bytes);
    shmalloc_tlsf *b = shmalloc_tlsf_create(mem_b, bytes);
    cr_assert(a && b);
    det_trace *ta = calloc(1, sizeof *ta), *tb = calloc(1, sizeof *tb);
    cr_assert(ta && tb);
    run_det(a, ta);
    run_det(b, tb);
    size_t failures = 0;
    for (int i = 0; i < DET_OPS; i++) {
        cr_assert_eq(ta->off[i], tb->off[i], "op %d: offset %zu vs %zu", i, ta->off[i], tb->off[i]);
        failures += ta->off[i] == SIZE_MAX;
    }
    cr_assert(failures < DET_OPS / 2, "workload mostly failed: test is too weak");
    snapshot *sa = take_snapshot(a), *sb = take_snapshot(b);
    assert_same_heap(sa, sb, "final heaps");
    cr_assert(shmalloc_tlsf_check(a, -1) == 0);
    cr_assert(shmalloc_tlsf_check(b, -1) == 0);
    free(ta);
    free(tb);
}

/* ---- corruption is detected, not crashed on -------------------------------- */

/* Three used blocks with the middle one's size word replaced; the checker
   must report it, silently at level -1 and with a message at level 0. */
static void corrupt_size_and_check(uint64_t (*mangle)(uint64_t))
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    memset(a, 0xa5, 200);
    memset(b, 0xa5, 200);
    memset(c, 0xa5, 200);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    uint64_t word;
    memcpy(&word, b - 8, 8);
    uint64_t bad = mangle(word);
    cr_assert_neq(bad, word);
    memcpy(b - 8, &bad, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0, "size word %#llx -> %#llx not detected",
                  (unsigned long long)word, (unsigned long long)bad);
    capture_start();
    int r = shmalloc_tlsf_check(t, -1);
    cr_assert_neq(r, 0);
    cr_assert_eq(out_len[1] + out_len[2] + out_len[0], 0, "level -1 printed: %s", out_text[2]);
    r = shmalloc_tlsf_check(t, 0);
    shmalloc_set_output(NULL, NULL);
    cr_assert_neq(r, 0);
    cr_assert(out_len[2] > 0, "level 0 printed nothing to stream 2");
    char dec[32], hex[32];
    snprintf(dec, sizeof dec, "%zu", off_of(t, b));
    snprintf(hex, sizeof hex, "%zx", off_of(t, b));
    cr_assert(strstr(out_text[2], "size") || strstr(out_text[2], dec) || strstr(out_text[2], hex),
              "message names neither the size nor offset %s: %s", dec, out_text[2]);
}

static uint64_t mangle_huge(uint64_t w) { return (w & 15) | ((uint64_t)1 << 60); }
static uint64_t mangle_zero(uint64_t w) { (void)w; return 0; }
static uint64_t mangle_zero_keep_flags(uint64_t w) { return (w & 15) ? (w & 15) : 0xdeadbeef00000000u; }
static uint64_t mangle_misaligned(uint64_t w) { return w + 8; }
static uint64_t mangle_one_granule_short(uint64_t w) { return w - 16; }
static uint64_t mangle_past_end(uint64_t w) { return (w & 15) | ((uint64_t)MIB * 2); }
static uint64_t mangle_garbage(uint64_t w) { (void)w; return 0xa5a5a5a5a5a5a5a5u; }

Test(tlsf_corrupt, huge_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_huge);
}
Test(tlsf_corrupt, zero_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_zero);
}
Test(tlsf_corrupt, size_word_with_only_flags_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_zero_keep_flags);
}
Test(tlsf_corrupt, misaligned_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_misaligned);
}
Test(tlsf_corrupt, size_word_one_granule_short_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_one_granule_short);
}
Test(tlsf_corrupt, size_word_past_heap_end_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_past_end);
}
Test(tlsf_corrupt, garbage_size_word_is_detected_and_reported)
{
    corrupt_size_and_check(mangle_garbage);
}

/* A free block between two used ones: overwrite the links it keeps at its
   user pointer (where a free block keeps its list links). */
static void corrupt_free_links_and_check(uint64_t v0, uint64_t v1)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    uint64_t old[2];
    memcpy(old, b, 16);
    cr_assert(old[0] != v0 || old[1] != v1);
    memcpy(b, &v0, 8);
    memcpy(b + 8, &v1, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0, "links %#llx %#llx -> %#llx %#llx not detected",
                  (unsigned long long)old[0], (unsigned long long)old[1],
                  (unsigned long long)v0, (unsigned long long)v1);
    capture_start();
    int r = shmalloc_tlsf_check(t, 0);
    shmalloc_set_output(NULL, NULL);
    cr_assert_neq(r, 0);
    cr_assert(out_len[2] > 0, "level 0 printed nothing to stream 2");
}

Test(tlsf_corrupt, free_list_links_of_garbage_are_detected)
{
    corrupt_free_links_and_check(0xa5a5a5a5a5a5a5a5u, 0xa5a5a5a5a5a5a5a5u);
}
Test(tlsf_corrupt, free_list_links_pointing_at_a_used_block_are_detected)
{
    /* Offsets 16 (block a) and 32 in either pointer or 16-byte-unit form. */
    corrupt_free_links_and_check(0x0000000100000001u, 0x0000000100000001u);
}
Test(tlsf_corrupt, free_list_links_of_all_ones_are_detected)
{
    corrupt_free_links_and_check(UINT64_MAX, UINT64_MAX);
}

/* The word before a block's header is its back link to a free previous
   block (the last word of that block's payload). */
Test(tlsf_corrupt, wrong_back_link_after_a_free_block_is_detected)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    uintptr_t wrong = (uintptr_t)(a - 16);
    memcpy(c - 16, &wrong, sizeof wrong);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0);
    capture_start();
    int r = shmalloc_tlsf_check(t, 0);
    shmalloc_set_output(NULL, NULL);
    cr_assert_neq(r, 0);
    cr_assert(out_len[2] > 0);
}

Test(tlsf_corrupt, free_flag_cleared_on_a_free_block_is_detected)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    uint64_t w;
    memcpy(&w, b - 8, 8);
    w &= ~(uint64_t)1;
    memcpy(b - 8, &w, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0);
}

Test(tlsf_corrupt, used_block_marked_free_is_detected_and_not_freed_again)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    unsigned char *a = shmalloc_tlsf_malloc(t, 200);
    unsigned char *b = shmalloc_tlsf_malloc(t, 200);
    unsigned char *c = shmalloc_tlsf_malloc(t, 200);
    cr_assert(a && b && c);
    uint64_t w;
    memcpy(&w, b - 8, 8);
    w |= 1;
    memcpy(b - 8, &w, 8);
    cr_assert_neq(shmalloc_tlsf_check(t, -1), 0);
}

Test(tlsf_corrupt, consistent_heap_check_prints_nothing_at_level_0)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    cr_assert(shmalloc_tlsf_malloc(t, 100));
    capture_start();
    int r = shmalloc_tlsf_check(t, 0);
    shmalloc_set_output(NULL, NULL);
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1] + out_len[2], 0, "printed: %s%s", out_text[1], out_text[2]);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(tlsf_corrupt, check_level_1_prints_a_line_per_block_to_stream_2)
{
    shmalloc_tlsf *t = heap_with_capacity(MIB, NULL);
    void *a = shmalloc_tlsf_malloc(t, 100);
    cr_assert(a && shmalloc_tlsf_malloc(t, 200) && shmalloc_tlsf_malloc(t, 300));
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    size_t blocks = walk_summary(t).n; /* 4: free, used, used, free */
    capture_start();
    int r = shmalloc_tlsf_check(t, 1);
    shmalloc_set_output(NULL, NULL);
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1], 0, "check printed to stream 1");
    cr_assert(count_lines(out_text[2]) >= blocks, "%zu lines for %zu blocks:\n%s",
              count_lines(out_text[2]), blocks, out_text[2]);
}

/* ---- randomized stress against a model ------------------------------------ */

typedef struct live_block {
    unsigned char *p;
    size_t size;
    size_t align;
    uint32_t tag;
} live_block;

#define STRESS_MAX_LIVE 2048

typedef struct stress_stats {
    size_t ok, failed;
} stress_stats;

static void stress_check_new(shmalloc_tlsf *t, live_block *live, size_t n, size_t skip,
                             unsigned char *p, size_t size, size_t align)
{
    char *base = shmalloc_tlsf_base(t);
    size_t cap = counters(t).capacity;
    cr_assert(((uintptr_t)p & (align - 1)) == 0, "block %p not aligned to %zu", (void *)p, align);
    /* + 8: the last block's payload may reach into the end marker's first
       word, as the header documents for counters.capacity. */
    cr_assert((char *)p >= base + 16 && (char *)p + size <= base + cap + 8,
              "block [%zu, +%zu) outside block space of %zu", off_of(t, p), size, cap);
    cr_assert(shmalloc_tlsf_usable_size(t, p) >= size);
    for (size_t i = 0; i < n; i++) {
        if (i == skip)
            continue;
        cr_assert(p + size <= live[i].p || live[i].p + live[i].size <= p,
                  "new block [%zu,+%zu) overlaps live [%zu,+%zu)", off_of(t, p), size,
                  off_of(t, live[i].p), live[i].size);
    }
}

/* Good fit: a malloc may fail only when no free block is large enough for
   the request rounded up to its size class (at most 2^-SHMALLOC_SL_LOG2
   more). */
static void assert_failure_is_justified(shmalloc_tlsf *t, size_t need)
{
    size_t lf = counters(t).largest_free;
    cr_assert(lf < need + (need >> (SHMALLOC_SL_LOG2 - 1)) + 64,
              "request needing %zu failed with a free block of %zu", need, lf);
}

static stress_stats run_stress(uint64_t seed, int ops, size_t cap, int check_every,
                               int good_fit)
{
    static live_block live[STRESS_MAX_LIVE];
    size_t n = 0;
    uint32_t next_tag = 1;
    stress_stats st = {0, 0};
    shmalloc_tlsf *t = heap_with_capacity(cap, NULL);
    rng_seed(seed);
    for (int i = 0; i < ops; i++) {
        unsigned op = (unsigned)rng_below(100);
        if (n >= STRESS_MAX_LIVE - 1)
            op = 99;
        if (n == 0 || op < 40) { /* malloc */
            size_t s = rng_size(16);
            unsigned char *p = shmalloc_tlsf_malloc(t, s);
            if (p) {
                stress_check_new(t, live, n, SIZE_MAX, p, s, 16);
                fill_pattern(p, s, next_tag);
                live[n++] = (live_block){p, s, 16, next_tag++};
                st.ok++;
            } else {
                st.failed++;
                if (good_fit)
                    assert_failure_is_justified(t, round16(s) + SHMALLOC_HEADER);
            }
        } else if (op < 52) { /* memalign */
            size_t a = (size_t)16 << rng_below(9);
            size_t s = rng_size(14);
            unsigned char *p = shmalloc_tlsf_memalign(t, a, s);
            if (p) {
                stress_check_new(t, live, n, SIZE_MAX, p, s, a);
                fill_pattern(p, s, next_tag);
                live[n++] = (live_block){p, s, a, next_tag++};
                st.ok++;
            } else {
                st.failed++;
                if (good_fit)
                    assert_failure_is_justified(t, round16(s) + SHMALLOC_HEADER + a);
            }
        } else if (op < 70) { /* realloc */
            size_t k = rng_below(n);
            live_block *b = &live[k];
            size_t s = rng_size(16);
            unsigned char *p = shmalloc_tlsf_realloc(t, b->p, s);
            if (p) {
                size_t keep = s < b->size ? s : b->size;
                cr_assert(check_pattern(p, keep, b->tag), "op %d: realloc lost contents", i);
                stress_check_new(t, live, n, k, p, s, b->align);
                b->p = p;
                b->size = s;
                b->tag = next_tag++;
                fill_pattern(p, s, b->tag);
                st.ok++;
            } else {
                st.failed++;
                cr_assert_eq(shmalloc_tlsf_validate(t, b->p), SHMALLOC_TLSF_OK,
                             "op %d: failed realloc freed the block", i);
                cr_assert(check_pattern(b->p, b->size, b->tag),
                          "op %d: failed realloc changed contents", i);
            }
        } else { /* free */
            size_t k = rng_below(n);
            cr_assert(check_pattern(live[k].p, live[k].size, live[k].tag),
                      "op %d: block at offset %zu overwritten", i, off_of(t, live[k].p));
            cr_assert_eq(shmalloc_tlsf_free(t, live[k].p), SHMALLOC_TLSF_OK);
            live[k] = live[--n];
        }
        shmalloc_counters c = counters(t);
        cr_assert_eq(c.used_blocks, n, "op %d: used_blocks %zu, model %zu", i, c.used_blocks, n);
        cr_assert_eq(c.in_use + c.free, c.capacity, "op %d", i);
        if (check_every && i % check_every == 0)
            cr_assert(shmalloc_tlsf_check(t, -1) == 0, "op %d: heap check failed", i);
    }
    for (size_t i = 0; i < n; i++) {
        cr_assert(check_pattern(live[i].p, live[i].size, live[i].tag));
        cr_assert_eq(shmalloc_tlsf_free(t, live[i].p), SHMALLOC_TLSF_OK);
    }
    cr_assert_eq(counters(t).in_use, 0);
    cr_assert(shmalloc_tlsf_check(t, -1) == 0);
    return st;
}

Test(tlsf_stress, random_50k_ops_match_the_model, .timeout = 120)
{
    stress_stats st = run_stress(0xc0ffee, 50000, 4 * MIB, 1, 0);
    cr_assert(st.ok > 40000 / 2, "only %zu successful allocations", st.ok);
}

Test(tlsf_stress, random_ops_on_a_tight_heap_match_the_model, .timeout = 120)
{
    stress_stats st = run_stress(0xfeed, 20000, 512 * KIB, 1, 0);
    cr_assert(st.failed > 100, "tight heap never failed: %zu", st.failed);
}

Test(tlsf_stress, malloc_fails_only_when_no_free_block_fits_the_size_class, .timeout = 120)
{
    run_stress(0xabcdef, 20000, MIB, 0, 1);
}
