/* The TLSF core under random operations: they match a model of the live
   blocks, malloc fails only when no free block fits, and the same calls at
   different bases give the same offsets. */
#include "test_support.h"

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
    assert_tlsf_ok(a);
    assert_tlsf_ok(b);
    free(ta);
    free(tb);
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
    assert_tlsf_ok(t);
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
