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
            p = shmalloc_tlsf_align(t, a, rng_size(12));
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

/* The heap under test and the model of its live blocks. */
typedef struct stress_model {
    shmalloc_tlsf *t;
    live_block *live;
    size_t n;
    uint32_t next_tag;
    int good_fit;
    stress_stats st;
} stress_model;

/* A block from malloc or memalign (NULL when it failed) joins the model;
   under good fit, a failure must be justified for `need` bytes. */
static void stress_admit(stress_model *m, unsigned char *p, size_t s, size_t align, size_t need)
{
    if (!p) {
        m->st.failed++;
        if (m->good_fit)
            assert_failure_is_justified(m->t, need);
        return;
    }
    stress_check_new(m->t, m->live, m->n, SIZE_MAX, p, s, align);
    fill_pattern(p, s, m->next_tag);
    m->live[m->n++] = (live_block){p, s, align, m->next_tag++};
    m->st.ok++;
}

static void stress_malloc(stress_model *m)
{
    size_t s = rng_size(16);
    stress_admit(m, shmalloc_tlsf_malloc(m->t, s), s, 16, round16(s) + SHMALLOC_HEADER);
}

static void stress_memalign(stress_model *m)
{
    size_t a = (size_t)16 << rng_below(9);
    size_t s = rng_size(14);
    stress_admit(m, shmalloc_tlsf_align(m->t, a, s), s, a, round16(s) + SHMALLOC_HEADER + a);
}

/* A realloc keeps the contents it can; a failed one leaves the block as it was. */
static void stress_realloc(stress_model *m, int i)
{
    size_t k = rng_below(m->n);
    live_block *b = &m->live[k];
    size_t s = rng_size(16);
    unsigned char *p = shmalloc_tlsf_realloc(m->t, b->p, s);
    if (p) {
        size_t keep = s < b->size ? s : b->size;
        cr_assert(check_pattern(p, keep, b->tag), "op %d: realloc lost contents", i);
        stress_check_new(m->t, m->live, m->n, k, p, s, b->align);
        b->p = p;
        b->size = s;
        b->tag = m->next_tag++;
        fill_pattern(p, s, b->tag);
        m->st.ok++;
    } else {
        m->st.failed++;
        cr_assert_eq(shmalloc_tlsf_validate(m->t, b->p), SHMALLOC_TLSF_OK,
                     "op %d: failed realloc freed the block", i);
        cr_assert(check_pattern(b->p, b->size, b->tag),
                  "op %d: failed realloc changed contents", i);
    }
}

static void stress_free(stress_model *m, int i)
{
    size_t k = rng_below(m->n);
    cr_assert(check_pattern(m->live[k].p, m->live[k].size, m->live[k].tag),
              "op %d: block at offset %zu overwritten", i, off_of(m->t, m->live[k].p));
    cr_assert_eq(shmalloc_tlsf_free(m->t, m->live[k].p), SHMALLOC_TLSF_OK);
    m->live[k] = m->live[--m->n];
}

/* After op i: the counters agree with the model, and every check_every
   ops the heap checker passes. */
static void stress_check_after_op(const stress_model *m, int i, int check_every)
{
    shmalloc_counters c = counters(m->t);
    cr_assert_eq(c.used_blocks, m->n, "op %d: used_blocks %zu, model %zu", i, c.used_blocks, m->n);
    cr_assert_eq(c.in_use + c.free, c.capacity, "op %d", i);
    if (check_every && i % check_every == 0)
        cr_assert(shmalloc_tlsf_check(m->t, -1) == 0, "op %d: heap check failed", i);
}

static stress_stats run_stress(uint64_t seed, int ops, size_t cap, int check_every,
                               int good_fit)
{
    static live_block live[STRESS_MAX_LIVE];
    stress_model m = {heap_with_capacity(cap, NULL), live, 0, 1, good_fit, {0, 0}};
    rng_seed(seed);
    for (int i = 0; i < ops; i++) {
        unsigned op = (unsigned)rng_below(100);
        if (m.n >= STRESS_MAX_LIVE - 1)
            op = 99;
        if (m.n == 0 || op < 40)
            stress_malloc(&m);
        else if (op < 52)
            stress_memalign(&m);
        else if (op < 70)
            stress_realloc(&m, i);
        else
            stress_free(&m, i);
        stress_check_after_op(&m, i, check_every);
    }
    for (size_t i = 0; i < m.n; i++) {
        cr_assert(check_pattern(live[i].p, live[i].size, live[i].tag));
        cr_assert_eq(shmalloc_tlsf_free(m.t, live[i].p), SHMALLOC_TLSF_OK);
    }
    cr_assert_eq(counters(m.t).in_use, 0);
    assert_tlsf_ok(m.t);
    return m.st;
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
