/* The promise of shmalloc_counters' and shmalloc_info's largest_request:
   a malloc of n bytes succeeds without growing exactly when
   n <= largest_request, in every state a heap reaches, to its last byte.
   Random mallocs, aligned mallocs, reallocs and frees over a core that
   grows to its reservation's end, in both metadata modes, then mallocs of
   largest_request until nothing is free; the promise is checked after
   every step, the heap checker at the end.  The TLSF core's twin cores,
   then symmetric heaps on pthreads PEs that grow from 64 KiB to 32 MiB
   (SHMALLOC_METADATA chooses the mode: the suite runs in both). */
#include "pthreads_pes.h"

#include "largest_request.h" /* the steps the PMIx worker runs too */

#define SEEDS 240
#define RESERVED ((size_t)2 << 20)
#define INITIAL ((size_t)64 << 10)
#define LIVE 512

static int mem_fill(void *user, void *dst, int byte, size_t n)
{
    (void)user;
    memset(dst, byte, n);
    return 0;
}

static int mem_copy(void *user, void *dst, const void *src, size_t n)
{
    (void)user;
    memmove(dst, src, n);
    return 0;
}

static shmalloc_tlsf *core(void *mem, int separate)
{
    shmalloc_memops ops = {NULL, mem_fill, mem_copy};
    shmalloc_tlsf *t = separate ? shmalloc_tlsf_create_separate(mem, RESERVED, INITIAL, &ops)
                                : shmalloc_tlsf_create_reserved(mem, RESERVED, INITIAL);
    cr_assert(t != NULL);
    return t;
}

/* malloc(largest_request + 1), the next size that needs a larger block,
   fails and malloc(n) succeeds, n = largest_request less `less` (when it
   is more, n = largest_request); a failed malloc changes nothing, so it
   is tried first.  Returns the block's offset, or SIZE_MAX when nothing
   is free; it is freed again unless `keep`. */
static size_t assert_exact(shmalloc_tlsf *t, size_t less, int keep, uint64_t seed, int step)
{
    shmalloc_counters c = counters(t);
    size_t n = c.largest_request > less ? c.largest_request - less : c.largest_request;
    void *p;
    cr_assert(shmalloc_tlsf_malloc(t, c.largest_request + 1) == NULL,
              "seed %llu step %d: malloc(%zu) succeeds, above largest_request %zu (%zu bytes free)",
              (unsigned long long)seed, step, c.largest_request + 1, c.largest_request, c.free);
    if (!n) return SIZE_MAX;
    p = shmalloc_tlsf_malloc(t, n);
    cr_assert(p != NULL, "seed %llu step %d: malloc(%zu) fails, largest_request %zu, %zu bytes free",
              (unsigned long long)seed, step, n, c.largest_request, c.free);
    cr_assert(counters(t).capacity == c.capacity);
    if (!keep) cr_assert_eq(shmalloc_tlsf_free(t, p), SHMALLOC_TLSF_OK);
    return off_of(t, p);
}

/* A collective layer's tentative malloc of largest_request, undone: it
   must succeed, and leave the core as its twin that made none. */
static void take_undone(shmalloc_tlsf *t)
{
    shmalloc_tlsf_pending op;
    size_t n = counters(t).largest_request;
    if (!n) return;
    cr_assert_eq(shmalloc_tlsf_take(t, SHMALLOC_ALIGNMENT, n, &op), SHMALLOC_TLSF_OK,
                 "a take of largest_request %zu fails", n);
    shmalloc_tlsf_undo(t, &op);
}

static void *at(shmalloc_tlsf *t, size_t off) { return (char *)shmalloc_tlsf_base(t) + off; }

/* One random step, the same on both cores, with the same offsets: mostly
   mallocs, some aligned, some reallocs, and frees; the cores grow when a
   malloc fails.  live: the offsets of the blocks. */
static void random_step(shmalloc_tlsf **t, size_t *live, size_t *nlive)
{
    size_t k = *nlive ? rng_below(*nlive) : 0, n = rng_size(14), align = (size_t)32 << rng_below(6), off[2];
    unsigned op = (unsigned)rng_below(10);
    int i;
    if (*nlive && (op < 3 || *nlive == LIVE)) {
        for (i = 0; i < 2; i++) cr_assert_eq(shmalloc_tlsf_free(t[i], at(t[i], live[k])), SHMALLOC_TLSF_OK);
        live[k] = live[--*nlive];
        return;
    }
    for (i = 0; i < 2; i++) {
        void *p;
        if (*nlive && op < 5) {
            p = shmalloc_tlsf_realloc(t[i], at(t[i], live[k]), n);
        } else {
            p = op < 7 ? shmalloc_tlsf_malloc(t[i], n) : shmalloc_tlsf_align(t[i], align, n);
            if (!p && shmalloc_tlsf_grow(t[i], (size_t)64 << 10) == SHMALLOC_TLSF_OK) p = shmalloc_tlsf_malloc(t[i], n);
        }
        off[i] = p ? off_of(t[i], p) : SIZE_MAX;
    }
    cr_assert_eq(off[0], off[1], "the twin cores part");
    if (off[0] == SIZE_MAX) return;
    if (*nlive && op < 5) live[k] = off[0];
    else live[(*nlive)++] = off[0];
}

/* Twin cores; before each step the first makes a tentative malloc of
   largest_request and undoes it, and both check the promise.  Then both
   take what they serve until nothing is free, now and then a little less
   than largest_request: a request of the same list, which finds the list's
   blocks in the order the undo must have kept. */
static void fill_to_the_last_byte(int separate)
{
    static size_t live[LIVE];
    void *mem[2] = {map_aligned(RESERVED, MIB), map_aligned(RESERVED, MIB)};
    uint64_t seed;
    for (seed = 1; seed <= SEEDS; seed++) {
        shmalloc_tlsf *t[2] = {core(mem[0], separate), core(mem[1], separate)};
        size_t nlive = 0, off = 0;
        int step, i;
        rng_seed(seed);
        for (step = 0; step < 600; step++) {
            take_undone(t[0]);
            off = assert_exact(t[0], 0, 0, seed, step);
            cr_assert_eq(off, assert_exact(t[1], 0, 0, seed, step), "seed %llu: the twin cores part",
                         (unsigned long long)seed);
            random_step(t, live, &nlive);
        }
        for (i = 0; i < 2; i++) shmalloc_tlsf_grow(t[i], shmalloc_tlsf_room(t[i]));
        cr_assert_eq(shmalloc_tlsf_room(t[0]), 0);
        off = 0;
        while (off != SIZE_MAX) { /* now and then a little less: a block of the same list */
            size_t less = step % 2 ? rng_below(256) : 0;
            take_undone(t[0]);
            off = assert_exact(t[0], less, 1, seed, step);
            cr_assert_eq(off, assert_exact(t[1], less, 1, seed, step++), "seed %llu: the twin cores part",
                         (unsigned long long)seed);
        }
        cr_assert_eq(counters(t[0]).free, 0, "seed %llu: %zu bytes free, none of them served",
                     (unsigned long long)seed, counters(t[0]).free);
        cr_assert_eq(heap_hash(t[0]), heap_hash(t[1]));
        for (i = 0; i < 2; i++) {
            assert_tlsf_ok(t[i]);
            shmalloc_tlsf_destroy(t[i]);
        }
    }
}

Test(largest_request, inline_mallocs_of_it_succeed_and_one_more_byte_fails_to_the_last_byte)
{
    fill_to_the_last_byte(0);
}

Test(largest_request, separate_mallocs_of_it_succeed_and_one_more_byte_fails_to_the_last_byte)
{
    fill_to_the_last_byte(1);
}

/* ---- symmetric heaps on pthreads PEs ------------------------------------- */
#define HEAP_SEEDS 200

static void promise_pe(void *arg) { largest_request_run(*(const uint64_t *)arg, pe_failed); }

Test(largest_request, on_pes_a_heap_grown_to_its_maximum_serves_it_to_the_last_byte, .timeout = TEST_TIMEOUT)
{
    uint64_t seed;
    setenv("SHMALLOC_HEAP_MAX", "32M", 1);
    for (seed = 1; seed <= HEAP_SEEDS; seed++) run_pes(seed % 8 ? 2 : 4, (size_t)64 << 10, promise_pe, &seed);
}
