/* The allocator hooks: a program that defines SHMALLOC_MALLOC and
   SHMALLOC_FREE gets every byte of the library's private memory through
   them.  This file expands the implementation with counting hooks, and with
   the libc allocator's names redirected to a counter of their own, so a raw
   call left in the implementation is counted as well; the pthreads
   transport, linked in, reaches the same hooks.  (One hook alone is an
   #error: the Makefile's compile-check tries it.) */
#include "test_support.h" /* before the redirection: the libc headers it includes keep their names */
#include <assert.h>
#include <float.h>
#include <stdarg.h>

/* The hooks: each block carries its size in front, so the live bytes are
   known and a pointer that did not come from hook_malloc is caught.  PE
   threads call them at once: the counts are atomic. */
#define ADD(x, n) __atomic_add_fetch(&(x), (n), __ATOMIC_RELAXED)
#define HOOK_MAGIC 0x5eedf00du
static size_t hook_allocs, hook_frees, hook_live;
static int hook_refuse; /* the next allocation fails */
static int hook_stall, hook_stalled, hook_go, hook_gave_up; /* atomic: see hook_wait */

/* Armed by hook_stall, the next allocation waits (at most 3 s) until
   hook_go is set. */
static void hook_wait(void)
{
    int ms;
    if (!__atomic_exchange_n(&hook_stall, 0, __ATOMIC_ACQ_REL)) return;
    __atomic_store_n(&hook_stalled, 1, __ATOMIC_RELEASE);
    for (ms = 0; ms < 3000 && !__atomic_load_n(&hook_go, __ATOMIC_ACQUIRE); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    __atomic_store_n(&hook_gave_up, ms == 3000, __ATOMIC_RELEASE);
}

static void *hook_malloc(size_t n)
{
    size_t *b;
    hook_wait();
    if (hook_refuse) {
        hook_refuse = 0;
        return NULL;
    }
    b = malloc(n + 16);
    if (!b) return NULL;
    b[0] = n;
    b[1] = HOOK_MAGIC;
    ADD(hook_allocs, 1);
    ADD(hook_live, n);
    return b + 2;
}

static void hook_free(void *p)
{
    size_t *b = (size_t *)p - 2;
    cr_assert(p != NULL, "the free hook got NULL");
    cr_assert(b[1] == HOOK_MAGIC, "the free hook got %p, which the malloc hook did not give", p);
    b[1] = 0;
    ADD(hook_frees, 1);
    ADD(hook_live, -b[0]);
    free(b);
}

/* Any other way into the libc allocator, from here on (unused, as they
   should be, when the implementation has no such call). */
static size_t raw_calls;
TS_UNUSED static void *raw_alloc(size_t n)
{
    ADD(raw_calls, 1);
    return malloc(n);
}
TS_UNUSED static void raw_free(void *p)
{
    ADD(raw_calls, 1);
    free(p);
}
#define malloc(n) raw_alloc(n)
#define calloc(n, s) raw_alloc((n) * (s))
#define realloc(p, n) (raw_free(p), raw_alloc(n))
#define free(p) raw_free(p)
#define strdup(s) ((char *)raw_alloc(strlen(s) + 1))
#define posix_memalign(pp, a, n) (*(pp) = raw_alloc(n), 0)
#define aligned_alloc(a, n) raw_alloc(n)

#define SHMALLOC_MALLOC(n) hook_malloc(n)
#define SHMALLOC_FREE(p) hook_free(p)
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"
#include "transports/shmalloc_pthreads.h" /* the transport library is linked with this file's hooks */

/* A heap of `nominal` bytes on one PE, made current; destroyed by the test. */
static shmalloc_heap *own_heap(size_t nominal)
{
    size_t bytes = shmalloc_heap_bytes(nominal);
    long err = 1;
    shmalloc_heap *h = shmalloc_heap_create(map_aligned(bytes, MIB), bytes, shmalloc_transport_single(), &err);
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK, "heap create failed: %ld", err);
    shmalloc_set_current(h);
    return h;
}

static void expect_balanced(size_t allocs)
{
    cr_assert_eq(hook_allocs, allocs, "%zu allocations through the hook, expected %zu", hook_allocs, allocs);
    cr_assert_eq(hook_frees, hook_allocs, "%zu allocations, %zu frees", hook_allocs, hook_frees);
    cr_assert_eq(hook_live, 0, "%zu bytes not given back", hook_live);
    cr_assert_eq(raw_calls, 0, "%zu calls to the libc allocator past the hooks", raw_calls);
}

#define BLOCKS 3000

/* 3000 hinted blocks: the table of 64 slots doubles to 8192, 7 times, each
   old table given back at once and the last at destroy. */
Test(alloc_hooks, the_hint_table_grows_through_the_hooks_and_is_given_back_at_destroy)
{
    static void *p[BLOCKS];
    shmalloc_heap *h = own_heap(4 * MIB);
    size_t i;
    cr_assert_eq(hook_allocs + hook_frees + raw_calls, 0, "a heap's structure is in its own memory");
    for (i = 0; i < BLOCKS; i++) {
        p[i] = shmem_malloc_with_hints(16 + i % 64, SHMEM_MALLOC_ATOMICS_REMOTE);
        cr_assert(p[i] != NULL);
    }
    cr_assert_eq(hook_allocs, 8, "64 slots, then 128, ..., 8192");
    cr_assert_eq(hook_frees, 7);
    cr_assert_eq(hook_live, 8192 * sizeof(uint64_t));
    for (i = 0; i < BLOCKS; i += 2) shmem_free(p[i]);
    for (i = 1; i < BLOCKS; i += 2) cr_assert_eq(shmalloc_heap_hints(h, p[i]), SHMEM_MALLOC_ATOMICS_REMOTE);
    for (i = 1; i < BLOCKS; i += 2) shmem_free(p[i]);
    assert_heap_ok();
    cr_assert_eq(hook_live, 8192 * sizeof(uint64_t), "the table stays until the heap goes");
    shmalloc_heap_destroy(h);
    shmalloc_set_current(NULL);
    expect_balanced(8);
}

/* Plain blocks, a realloc and a debug report need no private memory. */
Test(alloc_hooks, a_heap_without_hints_takes_no_private_memory)
{
    shmalloc_heap *h = own_heap(MIB);
    char *a = shmem_malloc(100), *b = shmem_calloc(10, 1000), *c = shmem_align(4096, 3000);
    cr_assert(a && b && c);
    a = shmem_realloc(a, 20000);
    cr_assert(a != NULL);
    shmem_free(a);
    shmem_free(b);
    shmem_free(c);
    assert_heap_ok();
    shmalloc_heap_destroy(h);
    shmalloc_set_current(NULL);
    expect_balanced(0);
}

/* A hook that fails: the hinted call fails as out of memory on this PE
   and the heap is as it was; the next call succeeds. */
Test(alloc_hooks, a_failing_hook_fails_the_hinted_call_and_changes_nothing)
{
    shmalloc_heap *h = own_heap(MIB);
    snapshot *before;
    long err = 0;
    char *a = shmem_malloc(100), *b;
    cr_assert(a != NULL);
    before = heap_snapshot(h);
    hook_refuse = 1;
    capture_start();
    b = shmalloc_heap_malloc_with_hints(h, 100, SHMEM_MALLOC_SIGNAL_REMOTE, &err);
    capture_stop();
    cr_assert(b == NULL && err == SHMEM_MALLOC_FAIL, "got %p, error %ld", (void *)b, err);
    assert_same_heap(before, heap_snapshot(h), "a call that had no private memory");
    b = shmem_malloc_with_hints(100, SHMEM_MALLOC_SIGNAL_REMOTE);
    cr_assert(b != NULL);
    cr_assert_eq(shmalloc_heap_hints(h, b), SHMEM_MALLOC_SIGNAL_REMOTE);
    shmem_free(a);
    shmem_free(b);
    assert_heap_ok();
    shmalloc_heap_destroy(h);
    shmalloc_set_current(NULL);
    expect_balanced(1);
}

/* A heap with separate metadata: its records and the heap itself come
   through the hooks, double as the blocks do, and a refused doubling fails
   the call that needed it, on every PE, with a message that names the
   process's memory, not the heap's; the next call, given memory, works. */
Test(alloc_hooks, separate_metadata_grows_through_the_hooks_and_a_refusal_fails_one_call)
{
    enum { N = 5000 };
    static void *p[N];
    shmalloc_heap_config config = {SIZE_MAX, 0, NULL, SHMALLOC_METADATA_SEPARATE, NULL};
    size_t bytes = shmalloc_heap_bytes(4 * MIB), before, i, failed = N;
    long err = 1;
    shmalloc_heap *h = shmalloc_heap_create_with(map_aligned(bytes, MIB), bytes, &config, shmalloc_transport_single(), &err);
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK);
    cr_assert(hook_allocs >= 4, "the heap, the core, its records and buckets: %zu", hook_allocs);
    capture_start();
    for (i = 0; i < N; i++) {
        before = hook_allocs;
        hook_refuse = 1;
        p[i] = shmalloc_heap_malloc(h, 32, &err);
        if (!p[i]) {
            failed = i;
            break;
        }
        cr_assert_eq(hook_allocs, before, "a malloc that needed no memory took some");
    }
    capture_stop();
    cr_assert(failed < N, "the records never doubled in %d blocks", N);
    cr_assert_eq(err, SHMEM_MALLOC_FAIL);
    cr_assert_eq(hook_refuse, 0, "the refused allocation was the records'");
    assert_said(HEAP_NO_MEMORY, 0, "malloc");
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 0, "not the heap's room");
    p[failed] = shmalloc_heap_malloc(h, 32, &err);
    cr_assert(p[failed] != NULL && err == SHMEM_MALLOC_OK, "memory again: the same call works");
    cr_assert_eq(shmalloc_heap_check(h, 0), 0);
    for (i = 0; i <= failed; i++) shmalloc_heap_free(h, p[i], &err);
    cr_assert_eq(shmalloc_heap_check(h, 0), 0);
    shmalloc_heap_destroy(h);
    expect_balanced(hook_allocs);
}

/* A device heap is often reserved far larger than it is used: the start
   map follows the highest block, not the reservation (a bit per 32 bytes
   of a 1 GiB reservation would be 4 MiB of host memory at once). */
Test(alloc_hooks, separate_metadata_follows_the_blocks_not_the_reservation)
{
    shmalloc_heap_config config = {SIZE_MAX, 0, NULL, SHMALLOC_METADATA_SEPARATE, NULL};
    size_t bytes = (size_t)1 << 30;
    long err = 1;
    void *small[100], *big, *start = NULL;
    size_t size = 0;
    shmalloc_heap *h = shmalloc_heap_create_with(map_aligned(bytes, MIB), bytes, &config, shmalloc_transport_single(), &err);
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK);
    cr_assert(hook_live < 64 * 1024, "a fresh heap holds %zu bytes of private memory", hook_live);
    for (int i = 0; i < 100; i++) cr_assert_not_null(small[i] = shmalloc_heap_malloc(h, 100, &err));
    cr_assert(hook_live < 64 * 1024, "100 small blocks: %zu bytes", hook_live);
    big = shmalloc_heap_malloc(h, 256 * MIB, &err);
    cr_assert(big != NULL);
    cr_assert(hook_live < 256 * MIB / 256 * 2 + 64 * 1024, "a map of a bit per 32 bytes up to the block's end, doubled: %zu", hook_live);
    cr_assert_eq(shmalloc_heap_block_of(h, (char *)big + 256 * MIB - 1, &start, &size), 0);
    cr_assert(start == big && size >= 256 * MIB);
    cr_assert_eq(shmalloc_heap_check(h, 0), 0);
    shmalloc_heap_destroy(h);
    expect_balanced(hook_allocs);
}

/* A separate core's shrink within a block's slack makes no record, so it
   works when the records are full and the hooks have no memory, as the
   inline core's shrink never fails; a shrink that gives a tail back needs
   a record, and fails changing nothing. */
Test(alloc_hooks, a_separate_cores_shrink_within_the_slack_needs_no_memory)
{
    enum { N = 5000 };
    static void *p[N];
    size_t bytes = 4 * MIB, i;
    shmalloc_tlsf *t = shmalloc_tlsf_create_separate(map_aligned(bytes, MIB), bytes, bytes, NULL);
    shmalloc_counters before, after;
    void *big;
    cr_assert_not_null(t);
    /* the start map follows the highest block: made large enough now, so
       that only the records can run out below */
    cr_assert_not_null(big = shmalloc_tlsf_malloc(t, 3 * MIB));
    cr_assert_eq(shmalloc_tlsf_free(t, big), SHMALLOC_TLSF_OK);
    for (i = 0; i < N; i++) { /* until a malloc needs the records to double */
        hook_refuse = 1;
        if (!(p[i] = shmalloc_tlsf_malloc(t, 100))) break;
    }
    cr_assert(i > 1 && i < N, "the records never doubled in %d blocks", N);
    shmalloc_tlsf_counters(t, &before);
    hook_refuse = 1;
    cr_assert_null(shmalloc_tlsf_realloc(t, p[0], 40), "giving 64 bytes back makes a record");
    shmalloc_tlsf_counters(t, &after);
    cr_assert(memcmp(&before, &after, sizeof before) == 0);
    hook_refuse = 1;
    cr_assert_eq(shmalloc_tlsf_realloc(t, p[0], 90), p[0], "112 bytes kept for 90: no record");
    cr_assert_eq(hook_refuse, 1, "and no memory asked for");
    hook_refuse = 0;
    assert_tlsf_ok(t);
    while (i-- > 0) cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
    expect_balanced(hook_allocs);
}

/* What a transport gets: zeroed objects, no call for a size that overflows. */
Test(alloc_hooks, a_transport_gets_zeroed_memory_through_the_hooks)
{
    unsigned char *p = shmalloc_mem_alloc(100, 40);
    size_t i;
    cr_assert(p != NULL);
    cr_assert_eq(hook_live, 4000);
    for (i = 0; i < 4000; i++) cr_assert_eq(p[i], 0, "byte %zu", i);
    cr_assert(shmalloc_mem_alloc(SIZE_MAX / 8, 16) == NULL);
    cr_assert_eq(hook_allocs, 1, "an overflowing size reaches no hook");
    shmalloc_mem_free(p);
    shmalloc_mem_free(NULL);
    expect_balanced(1);
}

/* The pthreads transport's arrays, its PEs', and the world team's barrier
   slots and handles, come through the same hooks and go back when the
   run ends. */
static int pe_failures; /* PE threads count; the test's thread asserts */
static void pe_main(void *arg)
{
    void *p = shmem_malloc_with_hints(100, SHMEM_MALLOC_ATOMICS_REMOTE);
    (void)arg;
    if (p) shmem_free(p);
    if (!p || shmalloc_check(0) != 0) ADD(pe_failures, 1);
}

/* Three arrays for the run, and per PE what one PE takes: its hint table,
   and under SHMALLOC_METADATA=separate its heap's records and maps too. */
Test(alloc_hooks, the_pthreads_transport_takes_its_arrays_through_the_hooks)
{
    const char *mode = getenv("SHMALLOC_METADATA");
    size_t per_pe;
    cr_assert_eq(shmalloc_pthreads_run(1, MIB, pe_main, NULL), 0);
    cr_assert(hook_allocs > 3, "%zu allocations for one PE", hook_allocs);
    per_pe = hook_allocs - 3;
    if (!mode || strcmp(mode, "separate") != 0) cr_assert_eq(per_pe, 1, "one PE took %zu, not its hint table", per_pe);
    cr_assert_eq(shmalloc_pthreads_run(4, MIB, pe_main, NULL), 0);
    cr_assert_eq(pe_failures, 0, "%d PEs had no block or a heap the checker rejects", pe_failures);
    expect_balanced(3 + per_pe + 3 + 4 * per_pe);
}

/* ---- a call with nothing released takes no lock ---- */
static shmalloc_heap *released_heap;
static void *release_first(void *p)
{
    long err = 1;
    shmalloc_heap_free_deferred(released_heap, p, &err); /* its table's first slots: the hook waits */
    return (void *)(intptr_t)err;
}

/* Every kind of collective call, and the local ones that hold the heap:
   none may take the released set's lock while nothing is released. */
static void every_call_with_nothing_released(void)
{
    void *q = shmem_malloc(64), *c = shmem_calloc(4, 16), *a = shmem_align(256, 100);
    void *n = shmem_malloc_with_hints(32, SHMEMX_MALLOC_NO_BARRIER);
    shmalloc_info info;
    cr_assert(q && c && a && n);
    q = shmem_realloc(q, 80);       /* in place */
    q = shmem_realloc(q, 64 << 10); /* moves past a and n */
    q = shmem_realloc(q, 16);       /* shrinks */
    cr_assert(q != NULL);
    shmemx_free_deferred_drain();
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    shmem_free(q);
    shmem_free(c);
    shmem_free(a);
    shmem_free(n);
    cr_assert_eq(shmemx_heap_info(&info), 0);
    cr_assert_eq(info.released, 0);
    cr_assert_eq(shmalloc_check(-1), 0);
}

/* A release stalls inside (in the allocation of its set's first slots),
   holding the set's lock: collective calls of every kind, nothing being
   released yet, go on without it; the release completes, and the drain
   frees its block. */
Test(alloc_hooks, a_collective_call_with_nothing_released_does_not_wait_for_a_release_under_way)
{
    shmalloc_heap *h = own_heap(MIB);
    pthread_t th;
    void *p = shmem_malloc(100), *err;
    int ms;
    cr_assert(p != NULL);
    released_heap = h;
    __atomic_store_n(&hook_stall, 1, __ATOMIC_RELEASE);
    cr_assert_eq(pthread_create(&th, NULL, release_first, p), 0);
    for (ms = 0; ms < 3000 && !__atomic_load_n(&hook_stalled, __ATOMIC_ACQUIRE); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cr_assert(__atomic_load_n(&hook_stalled, __ATOMIC_ACQUIRE), "the release never reached its allocation");
    every_call_with_nothing_released(); /* nothing released yet on this PE */
    __atomic_store_n(&hook_go, 1, __ATOMIC_RELEASE);
    cr_assert_eq(pthread_join(th, &err), 0);
    cr_assert_eq((long)(intptr_t)err, SHMEM_MALLOC_OK);
    cr_assert(!hook_gave_up, "the calls waited 3 s for the release");
    shmemx_free_deferred_drain();
    cr_assert_eq(shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), p), SHMALLOC_TLSF_ALREADY_FREE, "the drain freed the released block");
    assert_heap_ok();
    shmalloc_heap_destroy(h);
    shmalloc_set_current(NULL);
    expect_balanced(2); /* the set's slots, the drain's list */
}
