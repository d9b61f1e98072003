/* test_pthreads_stress.c - the symmetric heap on the pthreads transport
   under load: a second thread of a PE during collective calls, ten
   thousand random collective calls, and mismatched calls among random ones
   on 64 PEs and a growing heap. */
#include "pthreads_pes.h"

/* ---- threads of one PE ------------------------------------------------------ */
typedef struct helper_arg {
    shmalloc_heap *heap;
    int stop;   /* atomic */
    int checks; /* checks that ran */
    int bad;    /* checks that failed, or a PE identity seen */
} helper_arg;

static void *helper_main(void *arg)
{
    helper_arg *h = (helper_arg *)arg;
    shmalloc_set_current(h->heap); /* as the threads section tells a PE's thread to */
    if (shmem_my_pe() != -1) h->bad++;
    while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
        if (shmalloc_check(-1) != 0) h->bad++;
        h->checks++;
        sleep_seconds(0.0001); /* leave the cpus to the PEs: there may be 16 threads on 2 */
    }
    return NULL;
}

static void pe_with_helper(void *arg)
{
    helper_arg h;
    pthread_t thread;
    void *p[16];
    int round, i;
    (void)arg;
    memset(&h, 0, sizeof h);
    h.heap = shmalloc_current();
    PE_CHECK_EQ(pthread_create(&thread, NULL, helper_main, &h), 0);
    for (round = 0; round < 50; round++) {
        for (i = 0; i < 16; i++) p[i] = shmem_malloc((size_t)(16 + 32 * i + round));
        for (i = 0; i < 16; i += 2) p[i] = shmem_realloc(p[i], (size_t)(500 + i));
        for (i = 0; i < 16; i++) shmem_free(p[i]);
    }
    __atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    PE_CHECK_EQ(h.bad, 0);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(a_second_thread_of_a_pe_can_check_its_heap_during_collectives)
{
    run_pes(*npes, SMALL_HEAP, pe_with_helper, NULL);
}

/* ---- randomized stress ------------------------------------------------------- */
#define STRESS_SLOTS 48
#define STRESS_STEPS 10000
#define STRESS_HEAP ((size_t)16 << 20)

typedef struct stress_slot {
    unsigned char *p;
    size_t size;
    unsigned tag; /* the fill of PE q is fill_pattern(.., tag + q) */
} stress_slot;

static size_t random_size(uint64_t *rng)
{
    uint64_t r = rng_next(rng);
    return (size_t)(r % 8 == 0 ? 1 + (r >> 8) % 65536 : 1 + (r >> 8) % 2048);
}

static void stress_alloc(stress_slot *s, uint64_t *rng, unsigned tag)
{
    int me = shmem_my_pe();
    uint64_t kind = rng_next(rng) % 4;
    s->size = random_size(rng);
    if (kind == 0) s->p = (unsigned char *)shmem_calloc(1, s->size);
    else if (kind == 1) s->p = (unsigned char *)shmem_align((size_t)16 << (rng_next(rng) % 6), s->size);
    else s->p = (unsigned char *)shmem_malloc(s->size);
    if (s->p == NULL) {
        pe_failed(__LINE__, "allocation of %zu bytes failed", s->size);
        return;
    }
    s->tag = tag;
    fill_pattern(s->p, s->size, tag + (unsigned)me);
}

static void stress_realloc(stress_slot *s, uint64_t *rng, unsigned tag)
{
    int me = shmem_my_pe();
    size_t size = random_size(rng), keep = size < s->size ? size : s->size;
    unsigned char *q = (unsigned char *)shmem_realloc(s->p, size);
    if (q == NULL) {
        pe_failed(__LINE__, "realloc to %zu bytes failed", size);
        return;
    }
    if (first_unlike(q, keep, s->tag + (unsigned)me) != keep)
        pe_failed(__LINE__, "realloc from %zu to %zu lost contents", s->size, size);
    s->p = q;
    s->size = size;
    s->tag = tag;
    fill_pattern(s->p, s->size, tag + (unsigned)me);
}

/* A peer's copy of slot s holds the peer's fill, at the same offset. */
static void stress_verify(stress_slot *s, int peer, unsigned char *scratch)
{
    int me = shmem_my_pe();
    shared.ptrs[me] = s->p;
    shmem_barrier_all(); /* every fill so far is visible */
    if (shmem_ptr(s->p, peer) != shared.ptrs[peer])
        pe_failed(__LINE__, "slot at %p maps to %p on PE %d, which has %p", (void *)s->p,
                  shmem_ptr(s->p, peer), peer, shared.ptrs[peer]);
    else {
        shmem_getmem(scratch, s->p, s->size, peer);
        if (first_unlike(scratch, s->size, s->tag + (unsigned)peer) != s->size)
            pe_failed(__LINE__, "PE %d's copy of a %zu-byte block is wrong", peer, s->size);
    }
    shmem_barrier_all(); /* the peer changes it only after we read */
}

static void pe_stress(void *arg)
{
    static stress_slot slots[MAX_PES][STRESS_SLOTS];
    static unsigned char scratch[MAX_PES][65536];
    stress_slot *mine = slots[shmem_my_pe()];
    uint64_t rng = 0x5eed5eed12345ULL;
    int step, npes = shmem_n_pes();
    (void)arg;
    for (step = 0; step < STRESS_STEPS; step++) { /* no early exit: it would strand peers */
        stress_slot *s = &mine[rng_next(&rng) % STRESS_SLOTS];
        uint64_t action = rng_next(&rng) % 8;
        if (s->p == NULL) stress_alloc(s, &rng, (unsigned)step);
        else if (action < 3) {
            shmem_free(s->p);
            s->p = NULL;
        } else if (action < 6) stress_realloc(s, &rng, (unsigned)step);
        else stress_verify(s, (int)(rng_next(&rng) % (uint64_t)npes), scratch[shmem_my_pe()]);
        if (step % 1000 == 0 && shmalloc_check(-1) != 0)
            pe_failed(__LINE__, "heap corrupted at step %d", step);
    }
    for (step = 0; step < STRESS_SLOTS; step++) shmem_free(mine[step].p);
    CHECK_HEAP_EMPTY();
}

Test(pthreads, ten_thousand_random_collective_calls_keep_data_and_symmetry,
     .timeout = TEST_TIMEOUT)
{
    run_pes(4, STRESS_HEAP, pe_stress, NULL);
}

/* ---- mismatched calls among random ones ------------------------------------- */
/* The same random calls on every PE, but now and then one PE, chosen at
   random, asks for a few bytes more (or a page more) than the others in a
   malloc, a calloc, an align, or a realloc that shrinks, grows in place or
   moves; or twice the alignment; or frees or resizes another block.
   Allocations with hints, and without a barrier, come among them (those
   never mismatched: nothing could undo them on the other PEs).  Such
   a call fails on every PE with SYMMSIZE_FAILED and leaves the old block
   as it was, and after every call, failed or not, the PEs' heaps hold the
   same blocks at the same offsets, the same size each.
   The heap, 256 KiB, runs out now and then, or grows under the calls
   (up to SHMALLOC_HEAP_MAX); the test makes sure of each. */
#define SKEW_STEPS 3000

/* Collective: every PE has the same blocks and got the same outcome. */
static void check_same_heaps(int step, const void *result)
{
    int me = shmem_my_pe(), q;
    shmalloc_heap *h = shmalloc_current();
    uint64_t sum = heap_hash(shmalloc_heap_tlsf(h));
    sum = (sum ^ shmalloc_heap_size(h)) * 0x100000001b3ULL;
    sum = (sum ^ (result ? (uint64_t)((const char *)result - (const char *)shmalloc_heap_base(h)) : ~0ULL)) *
          0x100000001b3ULL;
    shared.values[me] = (size_t)(sum ^ (uint64_t)malloc_error);
    shmem_barrier_all();
    for (q = 1; q < shmem_n_pes(); q++)
        if (shared.values[q] != shared.values[0])
            pe_failed(__LINE__, "after step %d PE %d's heap or outcome differs from PE 0's", step, q);
    shmem_barrier_all(); /* nobody publishes the next sum while others read */
}

/* A live slot other than s, or s when there is none: the same on every
   PE, whose slots are all alike. */
static stress_slot *other_slot(stress_slot *mine, stress_slot *s)
{
    int k;
    for (k = 1; k < STRESS_SLOTS; k++) {
        stress_slot *o = &mine[(s - mine + k) % STRESS_SLOTS];
        if (o->p != NULL) return o;
    }
    return s;
}

/* One step drawn from the shared random sequence: the same on every PE
   but for `skewed`, which marks the PE whose call differs. */
typedef struct skew_step {
    int step, me;
    stress_slot *s, *o; /* the slot the step acts on, and another live one */
    uint64_t r;         /* the step's random bits */
    size_t size, extra, align;
    int skew;     /* the PEs' calls differ this step */
    int skewed;   /* this PE's call is the one that differs */
    int by_block; /* the skewed PE names another block, not another size */
} skew_step;

static skew_step skew_draw(stress_slot *mine, int step, uint64_t *rng)
{
    skew_step k;
    int npes = shmem_n_pes();
    k.step = step;
    k.me = shmem_my_pe();
    k.s = &mine[rng_next(rng) % STRESS_SLOTS];
    k.o = other_slot(mine, k.s);
    k.r = rng_next(rng);
    k.size = random_size(rng);
    k.extra = k.r % 5 == 4 ? 4096 : 16 * (k.r % 5 + 1);
    k.align = (size_t)32 << (k.r >> 32) % 5;
    k.skew = npes > 1 && k.r % 3 == 0;
    k.skewed = k.skew && (int)((k.r >> 8) % (uint64_t)npes) == k.me;
    k.by_block = (k.r >> 48) % 2 && k.o != k.s;
    return k;
}

/* A free, of another block on the skewed PE: then it fails everywhere. */
static void skew_free(const skew_step *k)
{
    int skew = k->skew && k->by_block;
    shmem_free(skew && k->skewed ? k->o->p : k->s->p);
    if (!skew) k->s->p = NULL;
    else if (malloc_error != SHMEM_MALLOC_SYMMSIZE_FAILED)
        pe_failed(__LINE__, "step %d: malloc_error %ld after frees of different blocks", k->step, malloc_error);
}

/* One of the four allocation calls into an empty slot; the skewed PE asks
   for another size or alignment. */
static unsigned char *skew_allocate(skew_step *k)
{
    uint64_t kind = (k->r >> 24) % 4;
    long hints = (long)(k->r >> 56) % 4 == 3 ? SHMEMX_MALLOC_NO_BARRIER : (long)(k->r >> 56) % 4;
    if (kind == 3 && hints == SHMEMX_MALLOC_NO_BARRIER) /* taken here alone: it cannot fail elsewhere */
        k->skew = k->skewed = 0;
    if (k->skewed && kind == 1 && (k->r >> 48) % 2) k->align *= 2; /* another alignment */
    else if (k->skewed) k->size += k->extra;
    if (kind == 0) return (unsigned char *)shmem_calloc(1, k->size);
    if (kind == 1) return (unsigned char *)shmem_align(k->align, k->size);
    if (kind == 2) return (unsigned char *)shmem_malloc(k->size);
    return (unsigned char *)shmem_malloc_with_hints(k->size, hints);
}

/* A realloc of the slot's block; the skewed PE names another block or size. */
static unsigned char *skew_realloc(skew_step *k)
{
    if ((k->r >> 40) % 2) k->size = k->s->size + k->extra; /* a grow, in place when it can */
    if (k->skewed && !k->by_block) k->size += k->extra;
    return (unsigned char *)shmem_realloc(k->skewed && k->by_block ? k->o->p : k->s->p, k->size);
}

/* A mismatched call failed with SYMMSIZE_FAILED, a failed realloc left the
   old block, a realloc kept the contents; a new block takes the slot. */
static void skew_check_and_keep(const skew_step *k, unsigned char *p)
{
    stress_slot *s = k->s;
    unsigned tag = s->tag + (unsigned)k->me;
    if (k->skew) {
        if (p != NULL) pe_failed(__LINE__, "step %d: a mismatched call returned %p", k->step, (void *)p);
        if (malloc_error != SHMEM_MALLOC_SYMMSIZE_FAILED)
            pe_failed(__LINE__, "step %d: malloc_error %ld after a mismatched call", k->step, malloc_error);
    }
    if (s->p != NULL && p == NULL && first_unlike(s->p, s->size, tag) != s->size)
        pe_failed(__LINE__, "step %d: a failed realloc changed the old block", k->step);
    if (s->p != NULL && p != NULL) {
        size_t keep = s->size < k->size ? s->size : k->size;
        if (first_unlike(p, keep, tag) != keep) pe_failed(__LINE__, "step %d: realloc lost contents", k->step);
    }
    if (p != NULL) {
        s->p = p;
        s->size = k->size;
        s->tag = (unsigned)k->step;
        fill_pattern(p, k->size, s->tag + (unsigned)k->me);
    }
}

/* arg: the nominal heap size of a heap that grows, or NULL for a full
   one, which must run out now and then. */
static void pe_skewed(void *arg)
{
    static stress_slot slots[MAX_PES][STRESS_SLOTS];
    stress_slot *mine = slots[shmem_my_pe()];
    uint64_t rng = 0x5cea1ab1e5eedULL;
    int step, npes = shmem_n_pes(), skews = 0, ran_out = 0;
    for (step = 0; step < SKEW_STEPS; step++) {
        skew_step k = skew_draw(mine, step, &rng);
        unsigned char *p;
        if (k.s->p != NULL && (k.r >> 16) % 4 == 0) {
            skew_free(&k);
            check_same_heaps(step, NULL);
            continue;
        }
        p = k.s->p == NULL ? skew_allocate(&k) : skew_realloc(&k);
        ran_out += !k.skew && p == NULL;
        skews += k.skew;
        skew_check_and_keep(&k, p);
        check_same_heaps(step, p);
    }
    if (npes > 1 && skews < SKEW_STEPS / 4) pe_failed(__LINE__, "only %d mismatched calls", skews);
    if (arg == NULL && ran_out == 0) pe_failed(__LINE__, "the full heap never ran out");
    if (arg != NULL && shmalloc_heap_size(shmalloc_current()) <= *(const size_t *)arg)
        pe_failed(__LINE__, "the heap never grew");
    for (step = 0; step < STRESS_SLOTS; step++) shmem_free(mine[step].p);
    check_same_heaps(SKEW_STEPS, NULL);
    CHECK_HEAP_EMPTY();
}

PE_COUNT_TEST(mismatched_calls_among_random_ones_fail_everywhere_and_leave_the_same_heaps_on_a_full_heap)
{
    run_pes(*npes, (size_t)256 << 10, pe_skewed, NULL);
    expect_only_reports();
}

PE_COUNT_TEST(mismatched_calls_among_random_ones_fail_everywhere_and_leave_the_same_heaps_on_a_growing_heap)
{
    static const size_t nominal = (size_t)256 << 10;
    setenv("SHMALLOC_HEAP_MAX", "64M", 1);
    run_pes(*npes, nominal, pe_skewed, (void *)&nominal);
    expect_only_reports();
    unsetenv("SHMALLOC_HEAP_MAX");
}

/* 64 PEs on 2 cpus: every wait must yield, and the heap grows under them.
   Valgrind runs the 64 threads one at a time. */
Test(pthreads, mismatched_calls_among_random_ones_on_64_pes_and_a_growing_heap, .timeout = TEST_TIMEOUT)
{
    static const size_t nominal = (size_t)256 << 10;
    setenv("SHMALLOC_HEAP_MAX", "64M", 1);
    run_pes(64, nominal, pe_skewed, (void *)&nominal);
    expect_only_reports();
    unsetenv("SHMALLOC_HEAP_MAX");
}
