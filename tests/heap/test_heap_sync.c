/* The synchronisation each collective call makes: barriers or
   all-reduces, the lock paired with the unlock, and the calls that make
   none. */
#include "test_support.h"

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
    capture_start();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int b0 = cnt.barriers, a0 = cnt.allreduces;
        cases[i].fn();
        int b = cnt.barriers - b0, a = cnt.allreduces - a0;
        cr_assert(!check_syncs || a + b == cases[i].syncs,
                     "%s%s: %d barriers + %d allreduces, expected %d synchronisation(s)",
                     cases[i].name, with_allreduce ? " (with allreduce)" : "", b, a,
                     cases[i].syncs);
    }
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "realloc of 4194304 bytes"), "the failing realloc's report:\n%s", out_text[2]);
    assert_heap_ok();
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
    assert_heap_ok();
    cr_assert(shmalloc_check(1) == 0);
    shmalloc_stats(2);
    capture_stop();
    cr_assert_eq(syncs(), before);
}
