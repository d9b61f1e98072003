/* Unit tests of the symmetric-heap layer and the SHMEM names on one PE:
   the semantics table of DESIGN.md, malloc_error, the synchronisation each
   call makes, statistics and checker output, and heap size parsing. */
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

static void *map_aligned(size_t bytes, size_t align)
{
    size_t total = bytes + align;
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert(m != MAP_FAILED, "mmap of %zu bytes failed", total);
    uintptr_t a = ((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1);
    return (void *)a;
}

/* A transport that counts what the heap asks of it. */
typedef struct counting {
    int barriers, allreduces, registers, deregisters, locks, unlocks;
    int fail_register;
    void *reg_base;
    size_t reg_bytes;
    void *dereg_base;
    size_t dereg_bytes;
} counting;

static counting cnt;

static int c_barrier(void *user)
{
    ((counting *)user)->barriers++;
    return 0;
}
static int c_allreduce(void *user, uint64_t *values, int count)
{
    (void)values;
    cr_assert(count >= 1 && count <= SHMALLOC_REDUCE_MAX, "allreduce_max with count %d", count);
    ((counting *)user)->allreduces++;
    return 0;
}
static int c_register(void *user, void *base, size_t bytes)
{
    counting *c = user;
    c->registers++;
    c->reg_base = base;
    c->reg_bytes = bytes;
    return c->fail_register ? -1 : 0;
}
static int c_deregister(void *user, void *base, size_t bytes)
{
    counting *c = user;
    c->deregisters++;
    c->dereg_base = base;
    c->dereg_bytes = bytes;
    return 0;
}
static int c_lock(void *user)
{
    ((counting *)user)->locks++;
    return 0;
}
static int c_unlock(void *user)
{
    ((counting *)user)->unlocks++;
    return 0;
}

static shmalloc_transport counting_transport(int with_allreduce)
{
    shmalloc_transport tp;
    memset(&tp, 0, sizeof tp);
    tp.user = &cnt;
    tp.npes = 1;
    tp.barrier = c_barrier;
    tp.allreduce_max = with_allreduce ? c_allreduce : NULL;
    tp.register_region = c_register;
    tp.deregister_region = c_deregister;
    tp.lock = c_lock;
    tp.unlock = c_unlock;
    return tp;
}

static int syncs(void) { return cnt.barriers + cnt.allreduces; }

/* Heaps a test made, destroyed when its process exits: blocks with hints
   keep them in the PE's private memory until then. */
static shmalloc_heap *made[16];
static int made_count;
static void destroy_made(void)
{
    while (made_count) shmalloc_heap_destroy(made[--made_count]);
}
static void remember(shmalloc_heap *h)
{
    if (!made_count) atexit(destroy_made);
    cr_assert(made_count < 16);
    made[made_count++] = h;
}

/* A heap of `nominal` bytes over shmalloc_heap_bytes(nominal), made current. */
static shmalloc_heap *make_heap(size_t nominal, const shmalloc_transport *tp)
{
    size_t bytes = shmalloc_heap_bytes(nominal);
    cr_assert(bytes >= nominal, "heap_bytes(%zu) = %zu", nominal, bytes);
    void *mem = map_aligned(bytes, MIB);
    long err = 12345;
    shmalloc_heap *h = shmalloc_heap_create(mem, bytes, tp ? tp : shmalloc_transport_single(),
                                            &err);
    cr_assert(h != NULL, "heap create over %zu bytes failed: %ld", bytes, err);
    shmalloc_set_current(h);
    remember(h);
    return h;
}

static shmalloc_heap *make_counting_heap(size_t nominal, int with_allreduce)
{
    shmalloc_transport tp = counting_transport(with_allreduce);
    memset(&cnt, 0, sizeof cnt);
    return make_heap(nominal, &tp);
}

static shmalloc_counters heap_counters(shmalloc_heap *h)
{
    shmalloc_counters c;
    memset(&c, 0, sizeof c);
    shmalloc_tlsf_counters(shmalloc_heap_tlsf(h), &c);
    return c;
}

/* Block list + counters, to prove a call left the heap unchanged. */
#define SNAP_MAX 1024
typedef struct snapshot {
    shmalloc_counters c;
    size_t n;
    shmalloc_block_info b[SNAP_MAX];
} snapshot;
static int snap_cb(void *user, const shmalloc_block_info *bi)
{
    snapshot *s = user;
    cr_assert(s->n < SNAP_MAX);
    s->b[s->n++] = *bi;
    return 0;
}
static void take_snapshot(shmalloc_heap *h, snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->c = heap_counters(h);
    shmalloc_tlsf_walk(shmalloc_heap_tlsf(h), snap_cb, s);
}
static void assert_unchanged(const snapshot *a, const snapshot *b, const char *what)
{
    cr_assert(a->c.in_use == b->c.in_use && a->c.free == b->c.free &&
                  a->c.used_blocks == b->c.used_blocks && a->c.largest_free == b->c.largest_free,
              "%s: counters changed", what);
    cr_assert_eq(a->n, b->n, "%s: block count changed", what);
    for (size_t i = 0; i < a->n; i++)
        cr_assert(a->b[i].offset == b->b[i].offset && a->b[i].size == b->b[i].size &&
                      a->b[i].used == b->b[i].used,
                  "%s: block %zu changed", what, i);
}

/* Output capture. */
static char out_text[3][1 << 17];
static size_t out_len[3];
static int out_calls[3];
static void capture(void *user, int stream, const char *text)
{
    (void)user;
    int s = (stream == 1 || stream == 2) ? stream : 0;
    size_t n = strlen(text);
    out_calls[s]++;
    if (out_len[s] + n >= sizeof out_text[s])
        n = sizeof out_text[s] - 1 - out_len[s];
    memcpy(out_text[s] + out_len[s], text, n);
    out_len[s] += n;
    out_text[s][out_len[s]] = '\0';
}
static void capture_start(void)
{
    memset(out_len, 0, sizeof out_len);
    memset(out_calls, 0, sizeof out_calls);
    out_text[0][0] = out_text[1][0] = out_text[2][0] = '\0';
    shmalloc_set_output(capture, NULL);
}
static void capture_stop(void) { shmalloc_set_output(NULL, NULL); }

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* ---- creation ------------------------------------------------------------- */

Test(heap_create, heap_over_heap_bytes_has_nominal_size_and_contains_its_blocks)
{
    shmalloc_heap *h = make_heap(4 * MIB, NULL);
    cr_assert_eq(shmalloc_current(), h);
    cr_assert(shmalloc_heap_size(h) >= 4 * MIB, "size %zu", shmalloc_heap_size(h));
    char *base = shmalloc_heap_base(h);
    cr_assert(((uintptr_t)base & 15) == 0);
    void *p = shmem_malloc(100);
    cr_assert(p);
    cr_assert(shmalloc_heap_contains(h, p));
    cr_assert(shmalloc_heap_contains(h, base));
    int on_stack;
    cr_assert(!shmalloc_heap_contains(h, &on_stack));
    cr_assert(!shmalloc_heap_contains(h, base - 1));
    cr_assert(shmalloc_heap_contains(h, base + shmalloc_heap_size(h) - 1));
    cr_assert(!shmalloc_heap_contains(h, base + shmalloc_heap_size(h)));
    cr_assert(!shmalloc_heap_contains(h, base + shmalloc_heap_size(h) + shmalloc_heap_bytes(4 * MIB)));
    cr_assert(shmalloc_check(-1) == 0);
}

Test(heap_create, failing_register_region_makes_create_fail_after_synchronising)
{
    shmalloc_transport tp = counting_transport(0);
    memset(&cnt, 0, sizeof cnt);
    cnt.fail_register = 1;
    size_t bytes = shmalloc_heap_bytes(MIB);
    void *mem = map_aligned(bytes, MIB);
    long err = SHMEM_MALLOC_OK;
    shmalloc_heap *h = shmalloc_heap_create(mem, bytes, &tp, &err);
    cr_assert_null(h, "create succeeded although register_region failed");
    cr_assert_neq(err, SHMEM_MALLOC_OK, "err not set");
    cr_assert_eq(cnt.registers, 1);
    cr_assert(cnt.barriers + cnt.allreduces >= 1, "create failed without synchronising");
}

Test(heap_create, failing_register_region_with_allreduce_makes_create_fail)
{
    shmalloc_transport tp = counting_transport(1);
    memset(&cnt, 0, sizeof cnt);
    cnt.fail_register = 1;
    size_t bytes = shmalloc_heap_bytes(MIB);
    void *mem = map_aligned(bytes, MIB);
    long err = SHMEM_MALLOC_OK;
    cr_assert_null(shmalloc_heap_create(mem, bytes, &tp, &err));
    cr_assert_neq(err, SHMEM_MALLOC_OK);
}

Test(heap_create, create_registers_the_block_space_once_and_destroy_deregisters_it)
{
    shmalloc_heap *h = make_counting_heap(2 * MIB, 0);
    cr_assert_eq(cnt.registers, 1);
    cr_assert_eq(cnt.reg_base, shmalloc_heap_base(h));
    cr_assert(cnt.reg_bytes >= 2 * MIB, "registered %zu bytes", cnt.reg_bytes);
    cr_assert_eq(cnt.reg_bytes, shmalloc_heap_size(h), "registered %zu bytes, heap size %zu",
                 cnt.reg_bytes, shmalloc_heap_size(h));
    cr_assert_eq(cnt.deregisters, 0);
    cr_assert(shmalloc_check(-1) == 0);
    shmalloc_set_current(NULL);
    shmalloc_heap_destroy(h);
    cr_assert_eq(cnt.deregisters, 1);
    cr_assert_eq(cnt.dereg_base, cnt.reg_base);
    cr_assert_eq(cnt.dereg_bytes, cnt.reg_bytes);
}

Test(heap_create, transport_without_barrier_is_refused)
{
    shmalloc_transport tp = counting_transport(0);
    tp.barrier = NULL;
    size_t bytes = shmalloc_heap_bytes(MIB);
    void *mem = map_aligned(bytes, MIB);
    long err = SHMEM_MALLOC_OK;
    cr_assert_null(shmalloc_heap_create(mem, bytes, &tp, &err));
    cr_assert_neq(err, SHMEM_MALLOC_OK);
}

Test(heap_create, region_too_small_is_refused)
{
    static unsigned char buf[256] __attribute__((aligned(16)));
    long err = SHMEM_MALLOC_OK;
    cr_assert_null(shmalloc_heap_create(buf, 64, shmalloc_transport_single(), &err));
    cr_assert_neq(err, SHMEM_MALLOC_OK);
}

Test(heap_create, whole_nominal_size_is_one_allocation_on_a_fresh_heap, .timeout = 60)
{
    static const size_t sizes[] = {4096, 100000, MIB, 10000000, 64 * MIB, 512 * MIB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        shmalloc_heap *h = make_heap(sizes[i], NULL);
        malloc_error = -99;
        void *p = shmem_malloc(sizes[i]);
        cr_assert(p != NULL, "shmem_malloc(%zu) on a heap of that nominal size failed: %ld",
                  sizes[i], malloc_error);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        cr_assert(shmalloc_check(-1) == 0);
        shmem_free(p);
        p = shmem_align(16, sizes[i]);
        cr_assert(p != NULL, "shmem_align(16, %zu) failed", sizes[i]);
        shmem_free(p);
        cr_assert(shmalloc_check(-1) == 0);
        (void)h;
    }
}

/* Every byte a caller may use must be inside the heap as contains() and the
   transport's registration see it, or a peer's put to it would fail. */
Test(heap_create, every_usable_byte_of_the_last_block_is_contained_and_registered)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    size_t lf = heap_counters(h).largest_free;
    char *reg = cnt.reg_base;
    for (size_t back = 0; back < 64; back += 8) {
        size_t req = lf - SHMALLOC_HEADER + 8 - back;
        char *p = shmem_malloc(req);
        if (!p)
            continue;
        char *last = p + req - 1;
        cr_assert(shmalloc_heap_contains(h, last),
                  "malloc(%zu) on a heap of %zu: its last byte is not contained", req,
                  shmalloc_heap_size(h));
        cr_assert(last >= reg && last < reg + cnt.reg_bytes,
                  "malloc(%zu): last byte %td bytes past the registered region", req,
                  last - (reg + cnt.reg_bytes) + 1);
        shmem_free(p);
    }
    cr_assert(shmalloc_check(-1) == 0);
}

Test(heap_create, whole_nominal_size_calloc_succeeds_and_is_zero)
{
    make_heap(MIB, NULL);
    unsigned char *p = shmem_calloc(1, MIB);
    cr_assert(p != NULL, "shmem_calloc(1, 1 MiB) failed: %ld", malloc_error);
    for (size_t i = 0; i < MIB; i++)
        cr_assert(p[i] == 0);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(heap_create, calls_without_a_current_heap_fail_cleanly)
{
    shmalloc_set_current(NULL);
    shmalloc_set_process_heap(NULL);
    cr_assert_null(shmalloc_current());
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc(100));
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_null(shmem_align(64, 100));
    cr_assert_null(shmem_calloc(2, 100));
    int x;
    malloc_error = SHMEM_MALLOC_OK;
    shmem_free(&x);
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_null(shmem_realloc(&x, 10));
    capture_start();
    int r = shmalloc_check(-1);
    size_t silent = out_len[1] + out_len[2];
    int r0 = shmalloc_check(0);
    shmalloc_stats(0);
    capture_stop();
    cr_assert_neq(r, 0);
    cr_assert_eq(silent, 0);
    cr_assert_neq(r0, 0);
    cr_assert(out_len[2] > 0 && out_len[1] > 0);
}

Test(heap_create, process_heap_is_used_when_the_thread_has_none)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    shmalloc_set_current(NULL);
    shmalloc_set_process_heap(h);
    cr_assert_eq(shmalloc_current(), h);
    void *p = shmem_malloc(10);
    cr_assert(p && shmalloc_heap_contains(h, p));
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- shmem_malloc / shmalloc ------------------------------------------ */

Test(shmem_malloc, returns_16_aligned_usable_blocks_and_sets_ok)
{
    make_heap(4 * MIB, NULL);
    for (size_t s = 1; s < 5000; s += 97) {
        malloc_error = -99;
        unsigned char *p = shmem_malloc(s);
        cr_assert(p != NULL);
        cr_assert(((uintptr_t)p & 15) == 0);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        memset(p, 0x77, s);
    }
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_malloc, shmalloc_is_the_same_as_shmem_malloc)
{
    make_heap(MIB, NULL);
    void *p = shmalloc(100);
    cr_assert(p && ((uintptr_t)p & 15) == 0);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    shfree(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(heap_counters(shmalloc_current()).used_blocks, 0);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_malloc, size_0_returns_null_sets_ok_and_makes_no_barrier)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    snapshot a, b;
    take_snapshot(h, &a);
    int before = syncs();
    malloc_error = SHMEM_MALLOC_FAIL;
    cr_assert_null(shmem_malloc(0));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    malloc_error = SHMEM_MALLOC_FAIL;
    cr_assert_null(shmalloc(0));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(syncs(), before, "malloc(0) synchronised %d times", syncs() - before);
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, "malloc(0)");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_malloc, size_0_with_allreduce_makes_no_synchronisation)
{
    make_counting_heap(MIB, 1);
    int before = syncs();
    cr_assert_null(shmem_malloc(0));
    cr_assert_eq(syncs(), before);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_malloc, too_large_returns_null_with_fail_or_bad_size)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    snapshot a, b;
    take_snapshot(h, &a);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc(2 * MIB));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL, "malloc(2 MiB) on 1 MiB: %ld", malloc_error);
    static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 15, (size_t)1 << 63, (size_t)1 << 47};
    for (size_t i = 0; i < 4; i++) {
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmem_malloc(huge[i]));
        cr_assert(malloc_error == SHMEM_MALLOC_BAD_SIZE || malloc_error == SHMEM_MALLOC_FAIL,
                  "malloc(%zu): %ld", huge[i], malloc_error);
    }
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, "failed mallocs");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_malloc, success_after_failure_resets_malloc_error_to_ok)
{
    make_heap(MIB, NULL);
    cr_assert_null(shmem_malloc(2 * MIB));
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert(shmem_malloc(10) != NULL);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_malloc, with_hints_accepts_known_and_unknown_hints)
{
    make_heap(MIB, NULL);
    static const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                                 SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE,
                                 1L << 20, -1L};
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++) {
        malloc_error = -99;
        unsigned char *p = shmem_malloc_with_hints(100, hints[i]);
        cr_assert(p != NULL, "hints %ld refused", hints[i]);
        cr_assert(((uintptr_t)p & 15) == 0);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        memset(p, 1, 100);
    }
    malloc_error = -99;
    cr_assert_null(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- shmem_free / shfree --------------------------------------------------- */

Test(shmem_free, free_null_does_nothing_and_makes_no_barrier)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *p = shmem_malloc(100);
    cr_assert(p);
    snapshot a, b;
    take_snapshot(h, &a);
    int before = syncs();
    malloc_error = SHMEM_MALLOC_FAIL;
    shmem_free(NULL);
    shfree(NULL);
    cr_assert_eq(syncs(), before, "free(NULL) synchronised");
    cr_assert(malloc_error == SHMEM_MALLOC_FAIL || malloc_error == SHMEM_MALLOC_OK,
              "free(NULL) set malloc_error to %ld", malloc_error);
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, "free(NULL)");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_free, free_releases_the_block_and_sets_ok)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    void *p = shmem_malloc(1000);
    cr_assert(p);
    malloc_error = -99;
    shmem_free(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(heap_counters(h).in_use, 0);
    cr_assert_eq(shmem_malloc(1000), p, "freed space not reused");
    cr_assert(shmalloc_check(-1) == 0);
}

static void bad_free_case(void *bad, long expected, const char *what)
{
    shmalloc_heap *h = shmalloc_current();
    snapshot a, b;
    take_snapshot(h, &a);
    int before = syncs();
    malloc_error = SHMEM_MALLOC_OK;
    shmem_free(bad);
    cr_assert_eq(malloc_error, expected, "%s: malloc_error %ld, expected %ld", what, malloc_error,
                 expected);
    cr_assert_eq(syncs() - before, 1, "%s: %d synchronisations (barriers %d, allreduces %d)", what,
                 syncs() - before, cnt.barriers, cnt.allreduces);
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, what);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_free, pointer_outside_the_heap_sets_not_in_symm_heap_and_changes_nothing)
{
    make_counting_heap(MIB, 0);
    cr_assert(shmem_malloc(100));
    int on_stack;
    bad_free_case(&on_stack, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, "free(stack)");
    bad_free_case((char *)shmalloc_heap_base(shmalloc_current()) - 16,
                  SHMEM_MALLOC_NOT_IN_SYMM_HEAP, "free(base - 16)");
}

Test(shmem_free, interior_pointer_sets_not_aligned_and_changes_nothing)
{
    make_counting_heap(MIB, 0);
    char *p = shmem_malloc(100);
    cr_assert(p && shmem_malloc(100));
    bad_free_case(p + 16, SHMEM_MALLOC_NOT_ALIGNED, "free(p + 16)");
    bad_free_case(p + 3, SHMEM_MALLOC_NOT_ALIGNED, "free(p + 3)");
}

Test(shmem_free, double_free_sets_already_free_and_changes_nothing)
{
    make_counting_heap(MIB, 0);
    char *p = shmem_malloc(100);
    char *q = shmem_malloc(100);
    cr_assert(p && q && shmem_malloc(100));
    shmem_free(q);
    bad_free_case(q, SHMEM_MALLOC_ALREADY_FREE, "double free");
}

Test(shmem_free, bad_free_with_allreduce_still_synchronises_once)
{
    make_counting_heap(MIB, 1);
    char *p = shmem_malloc(100);
    cr_assert(p && shmem_malloc(100));
    bad_free_case(p + 16, SHMEM_MALLOC_NOT_ALIGNED, "free(p + 16) with allreduce");
}

/* ---- shmem_calloc -------------------------------------------------------- */

Test(shmem_calloc, count_times_size_overflow_returns_null_with_bad_size)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    snapshot a, b;
    take_snapshot(h, &a);
    static const size_t pairs[][2] = {{SIZE_MAX / 2, 3}, {3, SIZE_MAX / 2}, {SIZE_MAX, SIZE_MAX},
                                      {(size_t)1 << 32, (size_t)1 << 32}, {SIZE_MAX, 2}};
    for (size_t i = 0; i < 5; i++) {
        int before = syncs();
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmem_calloc(pairs[i][0], pairs[i][1]));
        cr_assert_eq(malloc_error, SHMEM_MALLOC_BAD_SIZE, "calloc(%zu, %zu): %ld", pairs[i][0],
                     pairs[i][1], malloc_error);
        cr_assert_eq(syncs() - before, 1, "calloc overflow: %d synchronisations",
                     syncs() - before);
    }
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, "calloc overflow");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_calloc, zeroes_memory_that_was_dirtied_before)
{
    make_heap(MIB, NULL);
    for (size_t s = 16; s <= 256 * KIB; s *= 4) {
        unsigned char *p = shmem_malloc(s);
        cr_assert(p);
        memset(p, 0xff, s);
        shmem_free(p);
        unsigned char *q = shmem_calloc(s / 8, 8);
        cr_assert_eq(q, p, "calloc did not reuse the dirtied block");
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        for (size_t i = 0; i < s; i++)
            cr_assert(q[i] == 0, "byte %zu of calloc(%zu) is %d", i, s, q[i]);
        shmem_free(q);
    }
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_calloc, zero_count_or_size_returns_null)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    snapshot a, b;
    take_snapshot(h, &a);
    cr_assert_null(shmem_calloc(0, 16));
    cr_assert_null(shmem_calloc(16, 0));
    cr_assert_null(shmem_calloc(0, 0));
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, "calloc with a zero");
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- shmem_align / shmemalign -------------------------------------------- */

Test(shmem_align, bad_alignment_returns_null_with_memalign_failed)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    snapshot a, b;
    take_snapshot(h, &a);
    static const size_t bad[] = {0, 3, 24, 100, 4097};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = syncs();
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmem_align(bad[i], 64));
        cr_assert_eq(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED, "align(%zu): %ld", bad[i],
                     malloc_error);
        cr_assert_eq(syncs() - before, 1, "failing align made %d synchronisations",
                     syncs() - before);
        malloc_error = SHMEM_MALLOC_OK;
        cr_assert_null(shmemalign(bad[i], 64));
        cr_assert_eq(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED);
    }
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_align((size_t)1 << 63, 64));
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, "bad align");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_align, every_power_of_two_16_to_1MiB_is_honoured)
{
    make_heap(16 * MIB, NULL);
    for (size_t a = 16; a <= MIB; a *= 2) {
        malloc_error = -99;
        unsigned char *p = shmem_align(a, 100);
        cr_assert(p != NULL, "align(%zu) failed", a);
        cr_assert(((uintptr_t)p & (a - 1)) == 0);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        memset(p, 2, 100);
        unsigned char *q = shmemalign(a, 3 * a);
        cr_assert(q && ((uintptr_t)q & (a - 1)) == 0);
        memset(q, 3, 3 * a);
    }
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_align, offsets_from_base_are_aligned_too)
{
    shmalloc_heap *h = make_heap(4 * MIB, NULL);
    char *base = shmalloc_heap_base(h);
    for (size_t a = 16; a <= 64 * KIB; a *= 2) {
        char *p = shmem_align(a, 10);
        cr_assert(p);
        cr_assert(((size_t)(p - base) & (a - 1)) == 0,
                  "offset %zu not aligned to %zu: alignment would differ on a PE with another base",
                  (size_t)(p - base), a);
    }
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- shmem_realloc / shrealloc ------------------------------------------- */

Test(shmem_realloc, null_pointer_acts_as_malloc)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    malloc_error = -99;
    void *p = shmem_realloc(NULL, 100);
    cr_assert(p && ((uintptr_t)p & 15) == 0);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    void *q = shrealloc(NULL, 100);
    cr_assert(q && q != p);
    cr_assert_eq(heap_counters(h).used_blocks, 2);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_realloc, size_0_frees_and_returns_null)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    void *p = shmem_malloc(100);
    cr_assert(p);
    cr_assert_null(shmem_realloc(p, 0));
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    void *q = shmem_malloc(100);
    cr_assert(q);
    cr_assert_null(shrealloc(q, 0));
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_realloc, shrink_stays_in_place_and_keeps_contents)
{
    make_heap(MIB, NULL);
    unsigned char *p = shmem_malloc(4000);
    cr_assert(p && shmem_malloc(10));
    for (size_t i = 0; i < 4000; i++)
        p[i] = (unsigned char)i;
    unsigned char *q = shmem_realloc(p, 1000);
    cr_assert_eq(q, p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    for (size_t i = 0; i < 1000; i++)
        cr_assert(q[i] == (unsigned char)i);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_realloc, grow_keeps_contents_in_place_or_moved)
{
    make_heap(MIB, NULL);
    unsigned char *p = shmem_malloc(1000);
    cr_assert(p);
    for (size_t i = 0; i < 1000; i++)
        p[i] = (unsigned char)(i * 3);
    unsigned char *q = shmem_realloc(p, 100000);
    cr_assert_eq(q, p, "growth into the free remainder moved the block");
    cr_assert(shmem_malloc(10));
    unsigned char *r = shrealloc(q, 200000);
    cr_assert(r && r != q);
    for (size_t i = 0; i < 1000; i++)
        cr_assert(r[i] == (unsigned char)(i * 3));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_realloc, no_room_returns_null_keeps_block_and_sets_realloc_failed)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    unsigned char *p = shmem_malloc(100);
    cr_assert(p && shmem_malloc(100));
    memset(p, 0x42, 100);
    snapshot a, b;
    take_snapshot(h, &a);
    int before = syncs();
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_realloc(p, 2 * MIB));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED, "got %ld", malloc_error);
    cr_assert_eq(syncs() - before, 1);
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, "failed realloc");
    for (size_t i = 0; i < 100; i++)
        cr_assert(p[i] == 0x42);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_realloc(p, SIZE_MAX));
    cr_assert_neq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert(shmalloc_check(-1) == 0);
}

static void bad_realloc_case(void *bad, size_t size, long expected, const char *what)
{
    shmalloc_heap *h = shmalloc_current();
    snapshot a, b;
    take_snapshot(h, &a);
    int before = syncs();
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_realloc(bad, size), "%s returned a block", what);
    cr_assert_eq(malloc_error, expected, "%s: malloc_error %ld, expected %ld", what, malloc_error,
                 expected);
    cr_assert_eq(syncs() - before, 1, "%s: %d synchronisations", what, syncs() - before);
    take_snapshot(h, &b);
    assert_unchanged(&a, &b, what);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(shmem_realloc, bad_pointer_returns_null_with_the_pointer_error_and_changes_nothing)
{
    make_counting_heap(MIB, 0);
    char *p = shmem_malloc(100);
    char *q = shmem_malloc(100);
    cr_assert(p && q && shmem_malloc(100));
    shmem_free(q);
    int on_stack;
    bad_realloc_case(&on_stack, 50, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, "realloc(stack, 50)");
    bad_realloc_case(p + 16, 50, SHMEM_MALLOC_NOT_ALIGNED, "realloc(p + 16, 50)");
    bad_realloc_case(p + 1, 500, SHMEM_MALLOC_NOT_ALIGNED, "realloc(p + 1, 500)");
    bad_realloc_case(q, 50, SHMEM_MALLOC_ALREADY_FREE, "realloc(freed, 50)");
}

Test(shmem_realloc, bad_pointer_with_size_0_frees_nothing)
{
    make_counting_heap(MIB, 0);
    char *p = shmem_malloc(100);
    cr_assert(p && shmem_malloc(100));
    bad_realloc_case(p + 16, 0, SHMEM_MALLOC_NOT_ALIGNED, "realloc(p + 16, 0)");
}

Test(shmem_realloc, aligned_block_keeps_alignment_when_moved)
{
    make_heap(4 * MIB, NULL);
    char *p = shmem_align(4096, 100);
    cr_assert(p);
    memset(p, 0x61, 100);
    cr_assert(shmem_malloc(16)); /* right after p: no room to grow in place */
    char *q = shmem_realloc(p, 100000);
    cr_assert(q);
    cr_assert(((uintptr_t)q & 4095) == 0, "alignment 4096 lost when realloc moved the block");
    for (int i = 0; i < 100; i++)
        cr_assert(q[i] == 0x61);
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- randomized calls through the SHMEM names ---------------------------- */

typedef struct model_block {
    unsigned char *p;
    size_t size, align;
    unsigned char tag;
} model_block;

static void fill(model_block *m)
{
    for (size_t i = 0; i < m->size; i++)
        m->p[i] = (unsigned char)(m->tag + i);
}
static int intact(const model_block *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (m->p[i] != (unsigned char)(m->tag + i))
            return 0;
    return 1;
}

Test(shmem_stress, random_shmem_calls_keep_contents_alignment_and_a_consistent_heap,
     .timeout = 60)
{
    static model_block live[512];
    size_t n = 0;
    uint64_t x = 0x853c49e6748fea9bu;
    make_counting_heap(2 * MIB, 1);
    for (int i = 0; i < 8000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned op = (unsigned)(x % 10);
        size_t s = 1 + (size_t)((x >> 8) % (1u << (1 + (x >> 40) % 14)));
        int before = syncs();
        malloc_error = -99;
        if (n == 0 || (op < 4 && n < 512)) {
            size_t a = op == 3 ? (size_t)32 << ((x >> 20) % 8) : 16;
            unsigned char *p = op == 0   ? shmem_calloc(1, s)
                               : op == 3 ? shmem_align(a, s)
                                         : shmem_malloc(s);
            cr_assert_eq(syncs() - before, 1, "op %d: allocation synchronised %d times", i,
                         syncs() - before);
            if (!p) {
                cr_assert(malloc_error == SHMEM_MALLOC_FAIL, "op %d: %ld", i, malloc_error);
                continue;
            }
            cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
            cr_assert(((uintptr_t)p & (a - 1)) == 0);
            if (op == 0)
                for (size_t k = 0; k < s; k++)
                    cr_assert(p[k] == 0, "op %d: calloc byte %zu not zero", i, k);
            live[n] = (model_block){p, s, a, (unsigned char)i};
            fill(&live[n++]);
        } else if (op < 7) {
            size_t k = (size_t)(x >> 32) % n;
            unsigned char *p = shmem_realloc(live[k].p, s);
            if (!p) {
                cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED, "op %d: %ld", i,
                             malloc_error);
                cr_assert(intact(&live[k], live[k].size), "op %d: failed realloc broke it", i);
                continue;
            }
            cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
            live[k].p = p;
            cr_assert(intact(&live[k], s < live[k].size ? s : live[k].size),
                      "op %d: realloc lost contents", i);
            cr_assert(((uintptr_t)p & (live[k].align - 1)) == 0, "op %d: alignment lost", i);
            live[k].size = s;
            live[k].tag = (unsigned char)i;
            fill(&live[k]);
        } else {
            size_t k = (size_t)(x >> 32) % n;
            cr_assert(intact(&live[k], live[k].size), "op %d: block overwritten", i);
            shmem_free(live[k].p);
            cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
            cr_assert_eq(syncs() - before, 1);
            live[k] = live[--n];
        }
        cr_assert(shmalloc_check(-1) == 0, "op %d: heap inconsistent", i);
    }
    cr_assert_eq(heap_counters(shmalloc_current()).used_blocks, n);
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- synchronisation of every call ---------------------------------------- */

typedef void (*call_fn)(void);
static void *keep_a, *keep_b, *freed_c, *keep_g, *keep_t;
static void call_malloc(void) { cr_assert(shmem_malloc(64)); }
static void call_shmalloc(void) { cr_assert(shmalloc(64)); }
static void call_malloc_fail(void) { cr_assert_null(shmem_malloc(SIZE_MAX / 2)); }
static void call_hints(void) { cr_assert(shmem_malloc_with_hints(64, SHMEM_MALLOC_SIGNAL_REMOTE)); }
static void call_calloc(void) { cr_assert(shmem_calloc(4, 16)); }
static void call_calloc_overflow(void) { cr_assert_null(shmem_calloc(SIZE_MAX, 3)); }
static void call_align(void) { cr_assert(shmem_align(256, 64)); }
static void call_shmemalign(void) { cr_assert(shmemalign(256, 64)); }
static void call_align_bad(void) { cr_assert_null(shmem_align(24, 64)); }
static void call_free(void) { shmem_free(shmem_malloc(64)); }
static void call_shfree(void) { shfree(shmem_malloc(64)); }
static void call_free_bad(void) { shmem_free((char *)keep_a + 16); }
static void call_free_double(void) { shmem_free(freed_c); }
static void call_realloc_null(void) { cr_assert(shmem_realloc(NULL, 64)); }
static void call_realloc_grow(void)
{
    void *old = keep_a;
    keep_a = shmem_realloc(keep_a, 300);
    cr_assert(keep_a && keep_a != old, "keep_b follows keep_a: it moves");
}
static void call_realloc_grow_in_place(void)
{
    void *old = keep_t;
    keep_t = shmem_realloc(keep_t, 9000);
    cr_assert(keep_t == old, "the free top block follows keep_t");
}
static void call_realloc_grow_late(void)
{
    void *old = keep_g;
    keep_g = shmem_realloc(keep_g, 700);
    cr_assert(keep_g == old, "grows into the free block after it");
}
static void call_shrealloc_shrink(void)
{
    void *old = keep_a;
    keep_a = shrealloc(keep_a, 50);
    cr_assert(keep_a == old);
}
static void call_realloc_zero(void) { cr_assert_null(shmem_realloc(shmem_malloc(64), 0)); }
static void call_realloc_fail(void) { cr_assert_null(shmem_realloc(keep_b, 4 * MIB)); }
static void call_realloc_bad(void) { cr_assert_null(shmem_realloc((char *)keep_b + 16, 64)); }

typedef struct call_case {
    const char *name;
    call_fn fn;
    int syncs; /* synchronisations expected beyond those of helper calls */
} call_case;

/* call_free, call_shfree and call_realloc_zero include one shmem_malloc.
   A realloc that grows in place into a free block that is not its list's
   head, leaving a remainder of another list, synchronises twice, as the
   implementation's heap section explains: its grow could not be undone
   exactly, so it commits after agreeing, and synchronises again since a
   peer's put to the grown part may reach the free block it takes.  A
   moving realloc synchronises twice too: it copies after the agreement,
   which completes the peers' writes to the old block.  Every other call,
   failing or not, shrinking and other growing reallocs included,
   synchronises exactly once. */
static const call_case cases[] = {
    {"shmem_realloc grow in place, not undoable (first, before other calls take the free blocks)",
     call_realloc_grow_late, 2},
    {"shmem_malloc(64)", call_malloc, 1},
    {"shmalloc(64)", call_shmalloc, 1},
    {"shmem_malloc(huge) failing", call_malloc_fail, 1},
    {"shmem_malloc_with_hints", call_hints, 1},
    {"shmem_calloc(4, 16)", call_calloc, 1},
    {"shmem_calloc overflow", call_calloc_overflow, 1},
    {"shmem_align(256, 64)", call_align, 1},
    {"shmemalign(256, 64)", call_shmemalign, 1},
    {"shmem_align(24) failing", call_align_bad, 1},
    {"shmem_malloc + shmem_free", call_free, 2},
    {"shmem_malloc + shfree", call_shfree, 2},
    {"shmem_free(interior)", call_free_bad, 1},
    {"shmem_free(already free)", call_free_double, 1},
    {"shmem_realloc(NULL, 64)", call_realloc_null, 1},
    {"shmem_realloc grow, moving", call_realloc_grow, 2},
    {"shmem_realloc grow in place into the top block", call_realloc_grow_in_place, 1},
    {"shrealloc shrink", call_shrealloc_shrink, 1},
    {"shmem_malloc + shmem_realloc(p, 0)", call_realloc_zero, 2},
    {"shmem_realloc no room", call_realloc_fail, 1},
    {"shmem_realloc(interior)", call_realloc_bad, 1},
};

static void run_every_call(int with_allreduce, int check_syncs)
{
    make_counting_heap(MIB, with_allreduce);
    keep_a = shmem_malloc(100);
    keep_b = shmem_malloc(100);
    freed_c = shmem_malloc(100);
    cr_assert(keep_a && keep_b && freed_c && shmem_malloc(100));
    /* z, keep_g, then free blocks of 1008 bytes in one list: z, below the
       one after keep_g, x, heads it, so x is not the list's head */
    void *z = shmem_malloc(1000), *w0 = shmem_malloc(16);
    keep_g = shmem_malloc(100);
    void *x = shmem_malloc(1000), *w1 = shmem_malloc(16), *y = shmem_malloc(1000);
    cr_assert(z && w0 && keep_g && x && w1 && y && shmem_malloc(16));
    keep_t = shmem_malloc(5000); /* from the top: no hole is as large */
    cr_assert(keep_t);
    shmem_free(freed_c);
    shmem_free(x);
    shmem_free(y);
    shmem_free(z);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int b0 = cnt.barriers, a0 = cnt.allreduces;
        cases[i].fn();
        int b = cnt.barriers - b0, a = cnt.allreduces - a0;
        cr_assert(!check_syncs || a + b == cases[i].syncs,
                     "%s%s: %d barriers + %d allreduces, expected %d synchronisation(s)",
                     cases[i].name, with_allreduce ? " (with allreduce)" : "", b, a,
                     cases[i].syncs);
    }
    cr_assert(shmalloc_check(-1) == 0);
}

Test(sync, every_call_but_malloc_0_and_free_null_synchronises_barrier_only)
{
    run_every_call(0, 1);
}

Test(sync, every_call_but_malloc_0_and_free_null_synchronises_with_allreduce)
{
    run_every_call(1, 1);
}

Test(sync, every_call_unlocks_what_it_locks)
{
    run_every_call(1, 0);
    cr_assert(cnt.locks > 0, "the transport's lock was never used");
    cr_assert_eq(cnt.locks, cnt.unlocks);
}

Test(sync, check_and_stats_are_not_collective)
{
    make_counting_heap(MIB, 1);
    cr_assert(shmem_malloc(100));
    int before = syncs();
    capture_start();
    cr_assert(shmalloc_check(-1) == 0);
    cr_assert(shmalloc_check(1) == 0);
    shmalloc_stats(2);
    capture_stop();
    cr_assert_eq(syncs(), before);
}

/* ---- a failure on another PE ------------------------------------------------
   An all-reduce that folds in the values of an imaginary peer: the heap
   agrees on (size, ~size, -error), so a peer's failure or a different size
   must make this PE fail too, with its heap exactly as before the call. */
static int peer_active;
static uint64_t peer_values[16];
static int peer_count = 3; /* values the peer contributes */

static int peer_allreduce(void *user, uint64_t *values, int count)
{
    (void)user;
    cnt.allreduces++;
    if (peer_active)
        for (int i = 0; i < count && i < peer_count; i++)
            if (peer_values[i] > values[i])
                values[i] = peer_values[i];
    return 0;
}

static shmalloc_heap *make_peer_heap(size_t nominal)
{
    shmalloc_transport tp = counting_transport(1);
    tp.allreduce_max = peer_allreduce;
    memset(&cnt, 0, sizeof cnt);
    peer_active = 0;
    return make_heap(nominal, &tp);
}

/* The peer passed the same size but failed with code `e`. */
static void peer_fails(size_t size, long e)
{
    peer_values[0] = size;
    peer_values[1] = ~(uint64_t)size;
    peer_values[2] = (uint64_t)-e;
    peer_active = 1;
}

/* The peer passed another size and succeeded. */
static void peer_passes_size(size_t size)
{
    peer_values[0] = size;
    peer_values[1] = ~(uint64_t)size;
    peer_values[2] = 0;
    peer_active = 1;
}

static shmalloc_heap *peer_heap_with_blocks(void **a, void **b)
{
    shmalloc_heap *h = make_peer_heap(MIB);
    *a = shmem_malloc(100);
    *b = shmem_malloc(300);
    void *c = shmem_malloc(100);
    cr_assert(*a && *b && c);
    shmem_free(*a); /* a hole, so a list holds more than the tail */
    *a = shmem_malloc(40);
    cr_assert(*a);
    return h;
}

typedef void *(*peer_call)(void *a, void *b);
static void *pc_malloc(void *a, void *b) { (void)a, (void)b; return shmem_malloc(200); }
static void *pc_malloc_small(void *a, void *b) { (void)a, (void)b; return shmem_malloc(24); }
static void *pc_align(void *a, void *b) { (void)a, (void)b; return shmem_align(4096, 200); }
static void *pc_calloc(void *a, void *b) { (void)a, (void)b; return shmem_calloc(10, 20); }
static void *pc_realloc_grow(void *a, void *b) { (void)b; return shmem_realloc(a, 5000); }
static void *pc_realloc_shrink(void *a, void *b) { (void)a; return shmem_realloc(b, 20); }
static void *pc_free(void *a, void *b)
{
    (void)b;
    shmem_free(a);
    return NULL;
}

static void check_peer_failure_leaves_heap_unchanged(peer_call call, size_t size, const char *what)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    snapshot before, after;
    take_snapshot(h, &before);
    peer_fails(size, SHMEM_MALLOC_FAIL);
    malloc_error = SHMEM_MALLOC_OK;
    void *r = call(a, b);
    peer_active = 0;
    cr_assert_null(r, "%s succeeded although a peer failed", what);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL, "%s: malloc_error %ld", what, malloc_error);
    take_snapshot(h, &after);
    assert_unchanged(&before, &after, what);
    cr_assert_eq(before.c.high_water, after.c.high_water, "%s: high water moved", what);
    cr_assert_eq(shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), b), SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(peer, malloc_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_malloc, 200, "shmem_malloc");
}
Test(peer, small_malloc_from_the_hole_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_malloc_small, 24, "shmem_malloc(24)");
}
Test(peer, align_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_align, 200, "shmem_align");
}
Test(peer, calloc_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_calloc, 200, "shmem_calloc");
}
Test(peer, realloc_grow_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_realloc_grow, 5000, "shmem_realloc grow");
}
Test(peer, realloc_shrink_fails_when_a_peer_fails_and_heap_is_unchanged)
{
    check_peer_failure_leaves_heap_unchanged(pc_realloc_shrink, 20, "shmem_realloc shrink");
}
Test(peer, free_is_not_done_when_a_peer_reports_a_bad_pointer)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    snapshot before, after;
    take_snapshot(h, &before);
    peer_fails(0, SHMEM_MALLOC_NOT_ALIGNED);
    malloc_error = SHMEM_MALLOC_OK;
    pc_free(a, b);
    peer_active = 0;
    cr_assert_eq(malloc_error, SHMEM_MALLOC_NOT_ALIGNED);
    take_snapshot(h, &after);
    assert_unchanged(&before, &after, "free with a failing peer");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(peer, different_sizes_on_two_pes_give_null_and_symmsize_failed)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    snapshot before, after;
    take_snapshot(h, &before);
    peer_passes_size(201);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc(200));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED, "malloc: %ld", malloc_error);
    peer_passes_size(199);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc(200));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED, "malloc, smaller peer: %ld",
                 malloc_error);
    peer_passes_size(6000);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_realloc(a, 5000));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED, "realloc: %ld", malloc_error);
    peer_active = 0;
    take_snapshot(h, &after);
    assert_unchanged(&before, &after, "mismatched sizes");
    cr_assert(shmalloc_check(-1) == 0);
}

/* After a call that failed because of a peer, the next calls must give the
   same offsets as on a PE that never saw it (its free lists are restored in
   order, not only in content), or the PEs' heaps drift apart. */
Test(peer, offsets_after_a_peer_failure_match_a_heap_that_never_saw_the_call)
{
    static size_t off_a[400], off_b[400];
    for (int pass = 0; pass < 2; pass++) {
        size_t *off = pass ? off_b : off_a;
        shmalloc_heap *h = make_peer_heap(4 * MIB);
        char *base = shmalloc_heap_base(h);
        static void *live[400];
        size_t n = 0;
        uint64_t x = 88172645463325252u;
        for (int i = 0; i < 400; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t s = 1 + (size_t)(x % 3000);
            if (pass == 0 && i % 7 == 3) { /* a call a peer makes fail */
                peer_fails(s, SHMEM_MALLOC_FAIL);
                void *r = (i % 2) ? shmem_malloc(s) : shmem_align((size_t)64 << (i % 5), s);
                peer_active = 0;
                cr_assert_null(r);
            }
            if (n && x % 3 == 0) {
                size_t k = (size_t)(x >> 8) % n;
                shmem_free(live[k]);
                live[k] = live[--n];
                off[i] = 0;
            } else {
                void *p = shmem_malloc(s);
                cr_assert(p);
                live[n++] = p;
                off[i] = (size_t)((char *)p - base);
            }
        }
        cr_assert(shmalloc_check(-1) == 0);
    }
    for (int i = 0; i < 400; i++)
        cr_assert_eq(off_a[i], off_b[i], "call %d: offset %zu after peer failures, %zu without",
                     i, off_a[i], off_b[i]);
}

/* ---- statistics ----------------------------------------------------------- */

typedef struct map_counts {
    size_t busy, free_, spec;
    int found;
} map_counts;

/* Find a line whose last word is made of '*', '.' and '@' only. */
static map_counts find_map_line(const char *text)
{
    map_counts m = {0, 0, 0, 0};
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        const char *w = end;
        while (w > line && (w[-1] == '*' || w[-1] == '.' || w[-1] == '@'))
            w--;
        if (end - w >= 2 && (w == line || w[-1] == ' ' || w[-1] == ':' || w[-1] == '\t')) {
            size_t b = 0, f = 0, s = 0;
            for (const char *c = w; c < end; c++) {
                b += *c == '*';
                f += *c == '.';
                s += *c == '@';
            }
            if (b && f) {
                m.busy = b;
                m.free_ = f;
                m.spec = s;
                m.found = 1;
                return m;
            }
        }
        line = *end ? end + 1 : end;
    }
    return m;
}

/* The first number within a few characters after the first `word`, or -1. */
static long number_after(const char *text, const char *word)
{
    const char *w = strstr(text, word);
    if (!w)
        return -1;
    w += strlen(word);
    for (int i = 0; i < 4 && *w && (*w < '0' || *w > '9'); i++)
        w++;
    if (*w < '0' || *w > '9')
        return -1;
    return strtol(w, NULL, 10);
}

/* Every block's offset, as a decimal number, appears in text. */
static int offset_cb(void *user, const shmalloc_block_info *b)
{
    char num[32];
    snprintf(num, sizeof num, "%zu", b->offset);
    cr_assert(strstr(user, num), "block at offset %s not listed in:\n%s", num, (char *)user);
    return 0;
}

static shmalloc_heap *stats_heap(void)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    void *p[7];
    for (int i = 0; i < 7; i++)
        p[i] = shmem_malloc(100 + (size_t)i * 10);
    shmem_free(p[1]);
    shmem_free(p[3]);
    shmem_free(p[5]);
    /* busy: 0 2 4 6; free: 1 3 5 and the remainder */
    return h;
}

Test(stats, level_0_goes_to_stream_1_with_call_counts_and_block_counts)
{
    stats_heap();
    capture_start();
    shmalloc_stats(0);
    capture_stop();
    cr_assert(out_len[1] > 0, "stats printed nothing to stream 1");
    cr_assert_eq(out_len[2], 0, "stats printed to stream 2: %s", out_text[2]);
    const char *t = out_text[1];
    cr_assert_eq(number_after(t, " malloc"), 7, "7 malloc calls not counted:\n%s", t);
    cr_assert_eq(number_after(t, " free"), 3, "3 free calls not counted:\n%s", t);
    cr_assert_eq(number_after(t, "busy"), 4, "4 busy blocks not counted:\n%s", t);
    cr_assert_eq(number_after(t, "\n  free"), 4, "4 free blocks not counted:\n%s", t);
    cr_assert(strstr(t, "spec"), "no spec block count:\n%s", t);
    cr_assert(!find_map_line(out_text[1]).found, "level 0 printed a map:\n%s", out_text[1]);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(stats, level_1_adds_a_map_line_with_a_star_per_busy_and_a_dot_per_free_block)
{
    shmalloc_heap *h = stats_heap();
    capture_start();
    shmalloc_stats(1);
    capture_stop();
    map_counts m = find_map_line(out_text[1]);
    cr_assert(m.found, "no map line in:\n%s", out_text[1]);
    shmalloc_counters c = heap_counters(h);
    cr_assert_eq(m.busy, c.used_blocks, "map has %zu '*' for %zu busy blocks:\n%s", m.busy,
                 c.used_blocks, out_text[1]);
    cr_assert_eq(m.free_, 4, "map has %zu '.' for 4 free blocks:\n%s", m.free_, out_text[1]);
    cr_assert_eq(out_len[2], 0);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(stats, level_2_adds_a_line_per_block)
{
    stats_heap();
    capture_start();
    shmalloc_stats(1);
    size_t l1 = count_lines(out_text[1]);
    capture_start();
    shmalloc_stats(2);
    capture_stop();
    size_t l2 = count_lines(out_text[1]);
    cr_assert(l2 >= l1 + 8, "level 2 has %zu lines, level 1 %zu, 8 blocks:\n%s", l2, l1,
              out_text[1]);
    shmalloc_tlsf_walk(shmalloc_heap_tlsf(shmalloc_current()), offset_cb, out_text[1]);
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- checker -------------------------------------------------------------- */

Test(check, level_minus_1_prints_nothing_and_returns_0_on_a_good_heap)
{
    stats_heap();
    capture_start();
    int r = shmalloc_check(-1);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[0] + out_len[1] + out_len[2], 0);
    cr_assert_eq(out_calls[0] + out_calls[1] + out_calls[2], 0);
}

Test(check, level_0_prints_nothing_on_a_good_heap)
{
    stats_heap();
    capture_start();
    int r = shmalloc_check(0);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1] + out_len[2], 0, "printed: %s", out_text[2]);
}

Test(check, level_1_prints_a_line_per_block_to_stream_2)
{
    stats_heap();
    capture_start();
    int r = shmalloc_check(1);
    capture_stop();
    cr_assert_eq(r, 0);
    cr_assert_eq(out_len[1], 0, "check printed to stream 1");
    cr_assert(count_lines(out_text[2]) >= 8, "%zu lines for 8 blocks:\n%s",
              count_lines(out_text[2]), out_text[2]);
    shmalloc_tlsf_walk(shmalloc_heap_tlsf(shmalloc_current()), offset_cb, out_text[2]);
}

Test(check, corrupted_heap_is_reported_at_level_0_and_silent_at_minus_1)
{
    make_heap(MIB, NULL);
    unsigned char *a = shmem_malloc(200);
    unsigned char *b = shmem_malloc(200);
    cr_assert(a && b && shmem_malloc(200));
    uint64_t bad = (uint64_t)1 << 60;
    memcpy(b - 8, &bad, 8);
    capture_start();
    int r1 = shmalloc_check(-1);
    size_t silent = out_len[1] + out_len[2];
    int r0 = shmalloc_check(0);
    capture_stop();
    cr_assert_neq(r1, 0);
    cr_assert_eq(silent, 0);
    cr_assert_neq(r0, 0);
    cr_assert(out_len[2] > 0, "no message on stream 2");
    cr_assert_eq(out_len[1], 0);
}

/* ---- heap size parsing ----------------------------------------------------- */

Test(parse_size, accepts_suffixes_in_either_case_and_decimals)
{
    static const struct {
        const char *text;
        size_t value;
    } good[] = {
        {"512M", (size_t)512 << 20},
        {"1.5G", (size_t)3 << 29},
        {"1.5g", (size_t)3 << 29},
        {"1k", 1024},
        {"1K", 1024},
        {"2T", (size_t)2 << 40},
        {"2t", (size_t)2 << 40},
        {"4096", 4096},
        {"512m", (size_t)512 << 20},
        {"0.5k", 512},
        {"64T", (size_t)64 << 40},
        {"1", 1},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t v = 0;
        int r = shmalloc_parse_size(good[i].text, &v);
        if (good[i].value > ((size_t)1 << SHMALLOC_MAX_LOG2)) { /* a smaller configured cap */
            cr_assert_eq(r, -1, "\"%s\" above 2^SHMALLOC_MAX_LOG2 accepted", good[i].text);
            continue;
        }
        cr_assert_eq(r, 0, "\"%s\" refused", good[i].text);
        cr_assert_eq(v, good[i].value, "\"%s\" = %zu, expected %zu", good[i].text, v,
                     good[i].value);
    }
}

Test(parse_size, refuses_empty_signed_unknown_suffix_zero_and_oversized_values)
{
    static const char *bad[] = {"abc", "-1", "1Q", "99999T", "", "0", "1.5.5G", " ",
                                "65T", "0K", "M", "1MM", "1e3", "0x10", "18446744073709551616",
                                "99999999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 777;
        int r = shmalloc_parse_size(bad[i], &v);
        cr_assert_eq(r, -1, "\"%s\" accepted as %zu", bad[i], v);
    }
}

static void clear_size_env(void)
{
    unsetenv("SHMEM_SYMMETRIC_HEAP_SIZE");
    unsetenv("SHMEM_SYMMETRIC_SIZE");
    unsetenv("SMA_SYMMETRIC_SIZE");
}

Test(env_size, default_is_512MiB_when_no_variable_is_set)
{
    clear_size_env();
    size_t v = 0;
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, (size_t)512 << 20);
    cr_assert_eq(v, SHMALLOC_DEFAULT_HEAP_SIZE);
}

Test(env_size, each_variable_alone_is_read)
{
    static const char *vars[] = {"SHMEM_SYMMETRIC_HEAP_SIZE", "SHMEM_SYMMETRIC_SIZE",
                                 "SMA_SYMMETRIC_SIZE"};
    for (size_t i = 0; i < 3; i++) {
        clear_size_env();
        setenv(vars[i], "3M", 1);
        size_t v = 0;
        cr_assert_eq(shmalloc_heap_size_from_env(&v), 0, "%s=3M refused", vars[i]);
        cr_assert_eq(v, 3 * MIB, "%s=3M gave %zu", vars[i], v);
    }
}

Test(env_size, heap_size_beats_symmetric_size_beats_sma)
{
    size_t v = 0;
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "1M", 1);
    setenv("SHMEM_SYMMETRIC_SIZE", "2M", 1);
    setenv("SMA_SYMMETRIC_SIZE", "3M", 1);
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 1 * MIB);
    unsetenv("SHMEM_SYMMETRIC_HEAP_SIZE");
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 2 * MIB);
    unsetenv("SHMEM_SYMMETRIC_SIZE");
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 3 * MIB);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "4M", 1);
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 4 * MIB);
}

static void bad_env_case(const char *var, const char *value)
{
    clear_size_env();
    setenv(var, value, 1);
    size_t v = 0;
    capture_start();
    int r = shmalloc_heap_size_from_env(&v);
    capture_stop();
    cr_assert_eq(r, -1, "%s=\"%s\" accepted as %zu", var, value, v);
    cr_assert(out_len[2] > 0, "no message on stream 2 for %s=\"%s\"", var, value);
    cr_assert(strstr(out_text[2], var), "message does not name %s: %s", var, out_text[2]);
    if (value[0] && value[0] != ' ')
        cr_assert(strstr(out_text[2], value), "message does not quote \"%s\": %s", value,
                  out_text[2]);
}

Test(env_size, bad_value_is_an_error_naming_the_variable_and_the_value)
{
    bad_env_case("SHMEM_SYMMETRIC_HEAP_SIZE", "12Q");
    bad_env_case("SHMEM_SYMMETRIC_SIZE", "abc");
    bad_env_case("SMA_SYMMETRIC_SIZE", "1.5.5G");
    bad_env_case("SHMEM_SYMMETRIC_SIZE", "99999T");
    bad_env_case("SHMEM_SYMMETRIC_HEAP_SIZE", "-1");
    bad_env_case("SHMEM_SYMMETRIC_HEAP_SIZE", "0");
    bad_env_case("SHMEM_SYMMETRIC_SIZE", "");
    bad_env_case("SMA_SYMMETRIC_SIZE", " ");
}

Test(env_size, bad_value_of_the_winning_variable_is_an_error_even_if_others_are_good)
{
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "lots", 1);
    setenv("SHMEM_SYMMETRIC_SIZE", "2M", 1);
    size_t v = 0;
    capture_start();
    int r = shmalloc_heap_size_from_env(&v);
    capture_stop();
    cr_assert_eq(r, -1);
    cr_assert(strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE") && strstr(out_text[2], "lots"),
              "%s", out_text[2]);
}

/* ---- out of memory: the report and the figures ------------------------------ */

static shmalloc_info info_of(shmalloc_heap *h)
{
    shmalloc_info i;
    memset(&i, 0xff, sizeof i);
    cr_assert_eq(shmalloc_heap_info(h, &i), 0);
    return i;
}

/* The first line of every report, from the figures the heap gives. */
static void expect_oom_line(const char *text, const char *call, size_t size, size_t align, size_t need,
                            const shmalloc_info *i)
{
    char want[512];
    snprintf(want, sizeof want,
             "shmalloc: PE 0: out of symmetric memory: %s of %zu bytes (alignment %zu) needs a free block of %zu "
             "bytes; the heap has %zu bytes (at most %zu), %zu free, the largest free block %zu bytes\n",
             call, size, align, need, i->heap_size, i->heap_max, i->free, i->largest_free);
    cr_assert(strstr(text, want), "expected\n%s\nin\n%s", want, text);
}

Test(heap_info, figures_match_the_counters_and_largest_request_is_exact)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *a = shmem_malloc(1000), *b = shmem_malloc(5000);
    cr_assert(a && b);
    shmalloc_info i = info_of(h), j;
    shmalloc_counters c = heap_counters(h);
    cr_assert_eq(i.heap_size, c.capacity);
    cr_assert_eq(i.heap_max, c.capacity, "a heap that cannot grow");
    cr_assert_eq(i.in_use, c.in_use);
    cr_assert_eq(i.free, c.capacity - c.in_use);
    cr_assert_eq(i.largest_free, c.largest_free);
    cr_assert_eq(i.used_blocks, 2);
    cr_assert_eq(i.failures, 0);
    memset(&j, 0, sizeof j);
    cr_assert_eq(shmemx_heap_info(&j), 0);
    cr_assert(memcmp(&i, &j, sizeof i) == 0, "shmemx_heap_info gives the current heap's figures");
    capture_start();
    cr_assert_null(shmem_malloc(i.largest_request + 1), "one byte more than largest_request fits");
    void *big = shmem_malloc(i.largest_request);
    capture_stop();
    cr_assert(big, "largest_request (%zu) fits", i.largest_request);
    cr_assert_eq(info_of(h).largest_request, 0, "nothing fits once the largest block is taken");
    cr_assert_eq(info_of(h).failures, 1);
    shmem_free(big);
    shmem_free(a);
    shmem_free(b);
    cr_assert_eq(info_of(h).free, info_of(h).heap_size, "all free again");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(heap_info, no_heap_is_an_error)
{
    shmalloc_info i;
    shmalloc_set_current(NULL);
    cr_assert_eq(shmemx_heap_info(&i), -1);
    cr_assert_eq(shmalloc_heap_info(NULL, &i), -1);
}

Test(oom, a_heap_too_small_is_reported_once_with_its_figures_and_the_size_variable)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *a = shmem_malloc(300 * KIB);
    cr_assert(a);
    capture_start();
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc(900 * KIB));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL);
    shmalloc_info i = info_of(h);
    expect_oom_line(out_text[2], "malloc", 900 * KIB, 16, 900 * KIB + 16, &i);
    char want[256];
    snprintf(want, sizeof want, "shmalloc: PE 0: the heap is too small: set SHMEM_SYMMETRIC_HEAP_SIZE to at "
             "least %zuM, or SHMALLOC_HEAP_MAX to let the heap grow\n", (i.in_use + 900 * KIB + 16 + MIB - 1) / MIB);
    cr_assert(strstr(out_text[2], want), "expected\n%s\nin\n%s", want, out_text[2]);
    cr_assert(strstr(out_text[2], "further failures of this heap are not reported"), "%s", out_text[2]);
    cr_assert(!strstr(out_text[2], "fragmentation"), "%s", out_text[2]);
    cr_assert_eq(out_len[1], 0, "nothing on stream 1");
    size_t first = out_len[2];
    cr_assert_null(shmem_align(4096, 2 * MIB));
    cr_assert_null(shmem_calloc(MIB, 2));
    cr_assert_eq(out_len[2], first, "reported once per heap: %s", out_text[2]);
    capture_stop();
    cr_assert_eq(info_of(h).failures, 3, "every failure is counted");
    shmem_free(a);
    cr_assert(shmalloc_check(-1) == 0);
}

/* Blocks of 64 KiB with every other one freed: half the heap is free, in
   pieces too small for 128 KiB. */
Test(oom, fragmentation_is_named_when_the_bytes_are_free_but_not_in_one_block)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    void *p[15];
    int n = 15;
    for (int k = 0; k < n; k++) cr_assert((p[k] = shmem_malloc(64 * KIB - 8)) != NULL);
    for (int k = 0; k < n - 1; k += 2) shmem_free(p[k]); /* the last stays: the top block is not merged */
    capture_start();
    cr_assert_null(shmem_malloc(128 * KIB));
    shmalloc_info i = info_of(h);
    capture_stop();
    cr_assert(i.free >= 128 * KIB + 16 && i.largest_free < 128 * KIB + 16, "free %zu, largest %zu", i.free,
              i.largest_free);
    expect_oom_line(out_text[2], "malloc", 128 * KIB, 16, 128 * KIB + 16, &i);
    char want[256];
    snprintf(want, sizeof want, "shmalloc: PE 0: the cause is fragmentation: enough bytes are free, but in "
             "smaller blocks; set SHMEM_SYMMETRIC_HEAP_SIZE to at least %zuM, or free blocks sooner\n",
             (i.heap_size + 128 * KIB + 16 + MIB - 1) / MIB);
    cr_assert(strstr(out_text[2], want), "expected\n%s\nin\n%s", want, out_text[2]);
    for (int k = 1; k < n; k += 2) shmem_free(p[k]);
    shmem_free(p[n - 1]);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(oom, debug_mode_reports_every_failure_and_realloc_too)
{
    setenv("SHMALLOC_DEBUG", "1", 1);
    cr_assert(shmalloc_options_read(NULL) == 0);
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    unsetenv("SHMALLOC_DEBUG");
    cr_assert(shmalloc_options_read(NULL) == 0);
    void *a = shmem_malloc(100);
    cr_assert(a);
    capture_start();
    cr_assert_null(shmem_malloc(2 * MIB));
    cr_assert_null(shmem_realloc(a, 3 * MIB));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED);
    shmalloc_info i = info_of(h);
    capture_stop();
    expect_oom_line(out_text[2], "malloc", 2 * MIB, 16, 2 * MIB + 16, &i);
    expect_oom_line(out_text[2], "realloc", 3 * MIB, 16, 3 * MIB + 16, &i);
    cr_assert(!strstr(out_text[2], "not reported"), "%s", out_text[2]);
    cr_assert_eq(i.failures, 2);
    shmem_free(a);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(oom, a_growable_heap_at_its_maximum_names_shmalloc_heap_max)
{
    shmalloc_transport tp = counting_transport(1);
    size_t max = 4 * MIB, bytes = shmalloc_heap_bytes(max);
    long err = 1;
    memset(&cnt, 0, sizeof cnt);
    shmalloc_heap *h = shmalloc_heap_create_growable(map_aligned(bytes, MIB), bytes, MIB, &tp, &err);
    cr_assert(h && err == SHMEM_MALLOC_OK);
    shmalloc_set_current(h);
    capture_start();
    void *a = shmem_malloc(5 * MIB / 2);
    cr_assert(a, "grows from 1 MiB to serve 2.5 MiB");
    cr_assert_eq(out_len[2], 0, "no report when growth serves the call: %s", out_text[2]);
    cr_assert_null(shmem_malloc(2 * MIB));
    shmalloc_info i = info_of(h);
    capture_stop();
    cr_assert(i.heap_max >= max && i.heap_max < bytes, "heap_max %zu", i.heap_max);
    expect_oom_line(out_text[2], "malloc", 2 * MIB, 16, 2 * MIB + 16, &i);
    char want[256];
    snprintf(want, sizeof want, "set SHMALLOC_HEAP_MAX to at least %zuM\n", (i.heap_max + 2 * MIB + 16 + MIB - 1) / MIB);
    cr_assert(strstr(out_text[2], want), "expected\n%s\nin\n%s", want, out_text[2]);
    cr_assert(!strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE"), "%s", out_text[2]);
    shmem_free(a);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(oom, a_pe_that_fails_only_because_a_peer_ran_out_reports_nothing)
{
    void *a, *b;
    shmalloc_heap *h = peer_heap_with_blocks(&a, &b);
    capture_start();
    peer_fails(200, SHMEM_MALLOC_FAIL);
    cr_assert_null(shmem_malloc(200));
    peer_active = 0;
    capture_stop();
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL);
    cr_assert_eq(out_len[2], 0, "%s", out_text[2]);
    cr_assert_eq(info_of(h).failures, 0);
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- SHMEMX_MALLOC_NO_BARRIER ----------------------------------------------- */

#define NB_HINTS (SHMEM_MALLOC_ATOMICS_REMOTE | SHMEMX_MALLOC_NO_BARRIER)

static size_t nb_size(int i) { return 1 + (size_t)(((unsigned)i * 2654435761u) % 3000u); }

/* A transport whose all-reduce keeps what this PE contributed, to replay
   it as a peer's on another heap. */
static uint64_t recorded[16];
static int recorded_count;
static int recording_allreduce(void *user, uint64_t *values, int count)
{
    (void)user;
    cnt.allreduces++;
    memcpy(recorded, values, (size_t)count * sizeof *values);
    recorded_count = count;
    return 0;
}

Test(no_barrier, a_thousand_allocations_make_no_synchronisation_and_get_the_offsets_of_plain_ones)
{
    static size_t plain[1000], unsynced[1000];
    static void *blocks[1000];
    shmalloc_heap *h = make_counting_heap(4 * MIB, 1);
    char *base = shmalloc_heap_base(h);
    for (int i = 0; i < 1000; i++) {
        char *p = shmem_malloc(nb_size(i));
        cr_assert(p);
        plain[i] = (size_t)(p - base);
    }
    h = make_counting_heap(4 * MIB, 1);
    base = shmalloc_heap_base(h);
    int before = syncs(), barriers = cnt.barriers;
    for (int i = 0; i < 1000; i++) {
        malloc_error = -99;
        blocks[i] = shmem_malloc_with_hints(nb_size(i), NB_HINTS);
        cr_assert(blocks[i] && malloc_error == SHMEM_MALLOC_OK, "allocation %d: %ld", i, malloc_error);
        unsynced[i] = (size_t)((char *)blocks[i] - base);
        cr_assert_eq(unsynced[i], plain[i], "allocation %d: offset %zu without a barrier, %zu with", i,
                     unsynced[i], plain[i]);
    }
    cr_assert_eq(syncs(), before, "%d synchronisations for 1000 allocations", syncs() - before);
    cr_assert_eq(cnt.barriers, barriers);
    cr_assert_eq(cnt.locks, cnt.unlocks);
    shmem_free(blocks[0]);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(syncs(), before + 1, "the next call synchronises once");
    for (int i = 1; i < 1000; i++) shmem_free(blocks[i]);
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(no_barrier, a_failure_is_local_reported_and_carried_to_the_next_call)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    int before = syncs();
    capture_start();
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_malloc_with_hints(2 * MIB, NB_HINTS));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_FAIL);
    cr_assert_null(shmem_malloc_with_hints(SIZE_MAX, NB_HINTS));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_BAD_SIZE);
    capture_stop();
    cr_assert_eq(syncs(), before);
    cr_assert(strstr(out_text[2], "out of symmetric memory: malloc of 2097152 bytes"), "%s", out_text[2]);
    cr_assert_eq(info_of(h).failures, 1);
    void *p = shmem_malloc(100); /* one PE: its own record always agrees */
    cr_assert(p && malloc_error == SHMEM_MALLOC_OK);
    shmem_free(p);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(no_barrier, a_heap_that_can_grow_synchronises_to_grow_when_it_has_no_room)
{
    shmalloc_transport tp = counting_transport(1);
    size_t bytes = shmalloc_heap_bytes(16 * MIB);
    long err = 1;
    memset(&cnt, 0, sizeof cnt);
    shmalloc_heap *h = shmalloc_heap_create_growable(map_aligned(bytes, MIB), bytes, MIB, &tp, &err);
    cr_assert(h);
    shmalloc_set_current(h);
    remember(h);
    int before = syncs();
    void *small = shmem_malloc_with_hints(100, NB_HINTS);
    cr_assert(small && syncs() == before);
    capture_start();
    void *big = shmem_malloc_with_hints(3 * MIB, NB_HINTS);
    capture_stop();
    cr_assert(big && malloc_error == SHMEM_MALLOC_OK);
    cr_assert(syncs() > before, "growth is collective");
    cr_assert(info_of(h).heap_size > 3 * MIB);
    cr_assert_eq(out_len[2], 0, "%s", out_text[2]);
    shmem_free(big);
    shmem_free(small);
    cr_assert(shmalloc_check(-1) == 0);
}

/* PE "A" runs `a` allocations without a barrier and a free, recording its
   agreement; PE "B" runs `b` and the same free against A's record. */
static long replay_unsynced(const size_t *a, int na, const size_t *b, int nb, char *message, size_t room)
{
    shmalloc_transport tp = counting_transport(1);
    tp.allreduce_max = recording_allreduce;
    memset(&cnt, 0, sizeof cnt);
    shmalloc_heap *h = make_heap(MIB, &tp);
    void *first = shmem_malloc(64);
    for (int i = 0; i < na; i++) shmem_malloc_with_hints(a[i], NB_HINTS);
    shmem_free(first);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK, "alone, A agrees with itself");
    uint64_t record[16];
    int count = recorded_count;
    memcpy(record, recorded, sizeof record);

    h = make_peer_heap(MIB);
    first = shmem_malloc(64);
    for (int i = 0; i < nb; i++) shmem_malloc_with_hints(b[i], NB_HINTS);
    snapshot before, after;
    take_snapshot(h, &before);
    memcpy(peer_values, record, sizeof record);
    peer_count = count;
    peer_active = 1;
    capture_start();
    shmem_free(first);
    long e = malloc_error;
    capture_stop();
    peer_active = 0;
    peer_count = 3;
    snprintf(message, room, "%s", out_text[2]);
    if (e) {
        take_snapshot(h, &after);
        assert_unchanged(&before, &after, "a free that failed on the agreement");
        shmem_free(first); /* the record is spent: the next call agrees */
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    }
    cr_assert(shmalloc_check(-1) == 0);
    return e;
}

Test(no_barrier, the_next_synchronising_call_fails_on_different_sizes_counts_or_order_and_says_so)
{
    static const size_t same[] = {100, 200, 300}, bigger[] = {100, 200, 301}, more[] = {100, 200, 300, 8},
                        swapped[] = {200, 100, 300};
    char msg[1024];
    cr_assert_eq(replay_unsynced(same, 3, same, 3, msg, sizeof msg), SHMEM_MALLOC_OK, "%s", msg);
    cr_assert_eq(msg[0], 0, "no report when the PEs agree: %s", msg);
    cr_assert_eq(replay_unsynced(same, 3, bigger, 3, msg, sizeof msg), SHMEM_MALLOC_SYMMSIZE_FAILED);
    cr_assert(strstr(msg, "shmalloc: PE 0: the 3 allocations made without a barrier since the last synchronising "
                          "call differ from another PE's (in number, sizes, outcomes or order): free fails on every "
                          "PE\n"), "%s", msg);
    cr_assert_eq(replay_unsynced(same, 3, more, 4, msg, sizeof msg), SHMEM_MALLOC_SYMMSIZE_FAILED);
    cr_assert(strstr(msg, "PE 0: the 4 allocations made without a barrier"), "%s", msg);
    cr_assert_eq(replay_unsynced(same, 3, swapped, 3, msg, sizeof msg), SHMEM_MALLOC_SYMMSIZE_FAILED);
    cr_assert(strstr(msg, "the 3 allocations"), "%s", msg);
}

/* ---- hints kept with the block --------------------------------------------- */

#define BOTH_HINTS (SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE)

Test(hints, realloc_keeps_the_hints_when_the_block_moves_grows_or_shrinks)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    char *p = shmem_malloc_with_hints(100, BOTH_HINTS), *wall = shmem_malloc(100);
    char *plain = shmem_malloc(100);
    cr_assert(p && wall && plain);
    cr_assert_eq(shmalloc_heap_hints(h, p), BOTH_HINTS);
    cr_assert_eq(shmalloc_heap_hints(h, plain), 0);
    memset(p, 0x3c, 100);
    char *moved = shmem_realloc(p, 5000);
    cr_assert(moved && moved != p, "the block after it is used: it moves");
    cr_assert(moved[99] == 0x3c);
    cr_assert_eq(shmalloc_heap_hints(h, moved), BOTH_HINTS);
    cr_assert_eq(shmalloc_heap_hints(h, p), SHMEM_MALLOC_ALREADY_FREE, "the old block is gone");
    char *shrunk = shmem_realloc(moved, 50);
    cr_assert(shrunk == moved);
    cr_assert_eq(shmalloc_heap_hints(h, shrunk), BOTH_HINTS);
    char *grown = shmem_realloc(shrunk, 20000);
    cr_assert(grown == shrunk, "grows into the free top block");
    cr_assert_eq(shmalloc_heap_hints(h, grown), BOTH_HINTS);
    /* a plain block reusing a freed hinted block's place has no hints */
    shmem_free(grown);
    char *again = shmem_malloc(5000);
    cr_assert(again == grown, "the same offset again");
    cr_assert_eq(shmalloc_heap_hints(h, again), 0);
    cr_assert_eq(shmalloc_heap_hints(h, again + 16), SHMEM_MALLOC_NOT_ALIGNED);
    cr_assert_eq(shmalloc_heap_hints(NULL, again), SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
    shmem_free(again);
    shmem_free(wall);
    shmem_free(plain);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(hints, only_the_lasting_hints_are_kept)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    char *a = shmem_malloc_with_hints(64, SHMEM_MALLOC_SIGNAL_REMOTE | SHMEMX_MALLOC_NO_BARRIER);
    char *b = shmem_malloc_with_hints(64, 1L << 20);
    char *c = shmem_malloc_with_hints(64, -1L);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_heap_hints(h, a), SHMEM_MALLOC_SIGNAL_REMOTE, "no-barrier is the call's, not the block's");
    cr_assert_eq(shmalloc_heap_hints(h, b), 0, "unknown bits are ignored");
    cr_assert_eq(shmalloc_heap_hints(h, c), BOTH_HINTS);
    shmem_free(a);
    shmem_free(b);
    shmem_free(c);
    cr_assert(shmalloc_check(-1) == 0);
}

/* Thousands of hinted blocks grow the table several times; freeing a
   random half removes entries in the middle of probe runs. */
Test(hints, thousands_of_blocks_keep_their_hints_through_table_growth_and_removals)
{
    static char *blocks[3000];
    shmalloc_heap *h = make_counting_heap(4 * MIB, 1);
    uint64_t x = 0x2545f4914f6cdd1du;
    for (int i = 0; i < 3000; i++) {
        blocks[i] = shmem_malloc_with_hints(16 + (size_t)(i % 7) * 16, i % 4);
        cr_assert(blocks[i]);
    }
    for (int i = 0; i < 3000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (x & 1) {
            shmem_free(blocks[i]);
            blocks[i] = NULL;
        }
    }
    for (int i = 0; i < 3000; i++)
        if (blocks[i]) cr_assert_eq(shmalloc_heap_hints(h, blocks[i]), i % 4, "block %d", i);
    for (int i = 0; i < 3000; i++)
        if (blocks[i]) {
            blocks[i] = shmem_realloc(blocks[i], 200 + (size_t)i);
            cr_assert(blocks[i]);
        }
    for (int i = 0; i < 3000; i++)
        if (blocks[i]) {
            cr_assert_eq(shmalloc_heap_hints(h, blocks[i]), i % 4, "block %d after realloc", i);
            shmem_free(blocks[i]);
        }
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    cr_assert(shmalloc_check(-1) == 0);
}

/* A moving realloc copies into its new block before agreeing, and most
   grows in place grow before agreeing: when a peer fails, undoing must
   leave the free lists as they were, so the next calls get the offsets of
   a heap that never saw the call. */
Test(peer, offsets_after_failed_moving_or_growing_reallocs_match_a_heap_that_never_saw_them)
{
    static size_t off[2][300];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(4 * MIB);
        char *base = shmalloc_heap_base(h);
        static void *live[300];
        size_t n = 0;
        uint64_t x = 0x9e3779b97f4a7c15u;
        for (int i = 0; i < 300; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t s = 1 + (size_t)(x % 2000);
            if (pass == 0 && n > 1 && i % 5 == 2) { /* a move a peer makes fail */
                size_t k = (size_t)(x >> 20) % (n - 1); /* never the last block: it could grow in place */
                snapshot before, after;
                take_snapshot(h, &before);
                peer_fails(s + 4000, SHMEM_MALLOC_FAIL);
                cr_assert_null(shmem_realloc(live[k], s + 4000));
                peer_active = 0;
                take_snapshot(h, &after);
                assert_unchanged(&before, &after, "a failed moving realloc");
                peer_fails(s + 64, SHMEM_MALLOC_FAIL); /* the newest block: often a grow in place */
                cr_assert_null(shmem_realloc(live[n - 1], shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(h),
                                                                                     live[n - 1]) + 64));
                peer_active = 0;
                take_snapshot(h, &after);
                assert_unchanged(&before, &after, "a failed realloc of the newest block");
            }
            if (n && x % 3 == 0) {
                size_t k = (size_t)(x >> 8) % n;
                shmem_free(live[k]);
                live[k] = live[--n];
                off[pass][i] = 0;
            } else {
                void *p = shmem_malloc(s);
                cr_assert(p);
                live[n++] = p;
                off[pass][i] = (size_t)((char *)p - base);
            }
        }
        cr_assert(shmalloc_check(-1) == 0);
    }
    for (int i = 0; i < 300; i++)
        cr_assert_eq(off[0][i], off[1][i], "call %d: offset %zu after failed reallocs, %zu without", i, off[0][i],
                     off[1][i]);
}

/* Free blocks a < h < y of one list, freed a, y, h: a is filed first, y
   and h after it, then a is taken, so y heads the list with h, below it,
   second.  A collective malloc another PE fails takes y and gives it back:
   a plain free would file y after h (it lies above the head), and the next
   malloc would take h where a PE that took nothing takes y. */
Test(peer, a_failed_malloc_puts_a_head_back_at_the_head_when_the_list_is_not_in_address_order)
{
    size_t got[2];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(MIB);
        char *a = shmem_malloc(1000), *w1 = shmem_malloc(16), *m = shmem_malloc(1000), *w2 = shmem_malloc(16);
        char *y = shmem_malloc(1000), *w3 = shmem_malloc(16);
        cr_assert(a && w1 && m && w2 && y && w3);
        shmem_free(a);
        shmem_free(y);
        shmem_free(m);
        cr_assert(shmem_malloc(1000) == a, "the list's head, a, is taken first");
        if (pass == 0) {
            peer_fails(1000, SHMEM_MALLOC_FAIL);
            cr_assert_null(shmem_malloc(1000));
            peer_active = 0;
        }
        char *p = shmem_malloc(1000);
        cr_assert(p == y, "pass %d: the block above heads the list, but %p was taken, not %p", pass, (void *)p,
                  (void *)y);
        got[pass] = (size_t)(p - (char *)shmalloc_heap_base(h));
        cr_assert(shmalloc_check(-1) == 0);
    }
    cr_assert_eq(got[0], got[1]);
}

/* The same with a grow in place undone: the free block g grows into heads
   its list (above the second), and must head it again after the undo. */
Test(peer, a_failed_grow_in_place_puts_the_free_block_back_at_the_head)
{
    size_t got[2];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(MIB);
        char *a = shmem_malloc(3000), *w1 = shmem_malloc(16), *m = shmem_malloc(3000), *w2 = shmem_malloc(16);
        char *g = shmem_malloc(100), *y = shmem_malloc(3000), *w3 = shmem_malloc(16);
        cr_assert(a && w1 && m && w2 && g && y && w3);
        shmem_free(a);
        shmem_free(y);
        shmem_free(m);
        cr_assert(shmem_malloc(3000) == a, "the list's head, a, is taken first");
        if (pass == 0) {
            int before = syncs();
            peer_fails(1500, SHMEM_MALLOC_FAIL);
            cr_assert_null(shmem_realloc(g, 1500));
            peer_active = 0;
            cr_assert_eq(syncs() - before, 1, "an undoable grow synchronises once, failing or not");
        }
        char *p = shmem_malloc(3000);
        cr_assert(p == y, "pass %d: the free block above heads the list, but %p was taken, not %p", pass,
                  (void *)p, (void *)y);
        got[pass] = (size_t)(p - (char *)shmalloc_heap_base(h));
        cr_assert(shmalloc_check(-1) == 0);
    }
    cr_assert_eq(got[0], got[1], "offset %zu after the failed grow, %zu without", got[0], got[1]);
}

/* Two free blocks of 1008 bytes in one list, z at its head, x second, x
   right after g.  Growing g into x leaves a remainder of another list, so
   undoing that grow could not put x back second: the grow must wait for
   the agreement, and a failure must leave z first. */
Test(peer, a_failed_grow_into_a_free_block_that_is_not_its_lists_head_keeps_the_list_order)
{
    size_t got[2];
    for (int pass = 0; pass < 2; pass++) {
        shmalloc_heap *h = make_peer_heap(MIB);
        char *z = shmem_malloc(1000), *w0 = shmem_malloc(16), *g = shmem_malloc(100), *x = shmem_malloc(1000);
        cr_assert(z && w0 && g && x && shmem_malloc(16));
        shmem_free(z);
        shmem_free(x);
        if (pass == 0) {
            int before = syncs();
            peer_fails(700, SHMEM_MALLOC_FAIL);
            cr_assert_null(shmem_realloc(g, 700));
            peer_active = 0;
            cr_assert_eq(syncs() - before, 1, "a failure synchronises once");
        }
        char *p = shmem_malloc(1000);
        cr_assert(p == z, "pass %d: the list's head is taken first", pass);
        got[pass] = (size_t)(p - (char *)shmalloc_heap_base(h));
        cr_assert(shmalloc_check(-1) == 0);
    }
    cr_assert_eq(got[0], got[1]);
}
