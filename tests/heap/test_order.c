/* Allocations without a barrier (SHMEMX_MALLOC_NO_BARRIER) and the order of
   calls, on pthreads PEs: offsets stay symmetric without synchronising, the
   next synchronising call compares what every PE did, and in debug mode a
   PE that made a call the others did not is named, with its call; and each
   PE that runs out of memory says so. */
#define TEST_SUPPORT_PES /* the pthreads transport, checks in PE threads */
#include "test_support.h"

#define HEAP ((size_t)4 << 20)
#define N 1000
#define NB_HINTS (SHMEM_MALLOC_ATOMICS_REMOTE | SHMEMX_MALLOC_NO_BARRIER)

static size_t offsets[4][N];

static void run(int npes, int debug, void (*pe_main)(void *))
{
    int rc;
    if (debug) setenv("SHMALLOC_DEBUG", "1", 1);
    else unsetenv("SHMALLOC_DEBUG");
    capture_start();
    rc = shmalloc_pthreads_run(npes, HEAP, pe_main, NULL);
    capture_stop();
    unsetenv("SHMALLOC_DEBUG");
    cr_assert(rc == 0);
    assert_no_pe_failed();
}

static size_t size_of(int i) { return 1 + (size_t)(((unsigned)i * 2654435761u) % 3000u); }

/* ---- symmetric without a barrier ---- */
static void pe_thousand_unsynced(void *arg)
{
    static void *blocks[4][N];
    int me = shmem_my_pe(), right = (me + 1) % shmem_n_pes(), i;
    void **b = blocks[me];
    (void)arg;
    for (i = 0; i < N; i++) {
        b[i] = shmem_malloc_with_hints(size_of(i), NB_HINTS);
        PE_CHECK(b[i] != NULL && malloc_error == SHMEM_MALLOC_OK);
        if (!b[i]) return;
        offsets[me][i] = offset_of(b[i]);
        *(int *)b[i] = me * N + i;
    }
    shmem_barrier_all(); /* the program's own synchronisation before peers touch the blocks */
    for (i = 0; i < N; i++) {
        int theirs = -1;
        PE_CHECK(offsets[me][i] == offsets[right][i]);
        shmem_getmem(&theirs, b[i], sizeof theirs, right);
        PE_CHECK(theirs == right * N + i);
    }
    shmem_free(b[0]); /* the first synchronising call: it agrees */
    PE_CHECK(malloc_error == SHMEM_MALLOC_OK);
    for (i = 1; i < N; i++) shmem_free(b[i]);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(order, four_pes_allocate_a_thousand_blocks_without_a_barrier_at_the_same_offsets)
{
    run(4, 0, pe_thousand_unsynced);
    cr_assert(out_text[2][0] == 0, "%s", out_text[2]);
}

Test(order, the_same_in_debug_mode_reports_nothing)
{
    run(4, 1, pe_thousand_unsynced);
    cr_assert(out_text[2][0] == 0, "%s", out_text[2]);
}

/* ---- a PE that allocated one block more ---- */
static void extra_unsynced(char *a)
{
    int i, extra = shmem_my_pe() == 1;
    for (i = 0; i < 2 + extra; i++) PE_CHECK(shmem_malloc_with_hints(128, NB_HINTS) != NULL);
    shmem_free(a);
    PE_CHECK(malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    PE_CHECK(shmalloc_tlsf_validate(shmalloc_heap_tlsf(shmalloc_current()), a) == SHMALLOC_TLSF_OK);
    shmem_free(a); /* reported once: the next call agrees again */
    PE_CHECK(malloc_error == SHMEM_MALLOC_OK);
    PE_CHECK(shmalloc_check(-1) == 0);
}

static void pe_extra_unsynced(void *arg)
{
    (void)arg;
    extra_unsynced(shmem_malloc(64));
}

Test(order, an_extra_allocation_without_a_barrier_fails_the_next_call_on_every_pe)
{
    run(2, 0, pe_extra_unsynced);
    cr_assert(count_in(out_text[2], "PE 0: the 2 allocations made without a barrier since the last synchronising call differ "
                    "from another PE's (in number, sizes, outcomes or order): free fails on every PE\n") == 1,
              "%s", out_text[2]);
    cr_assert(count_in(out_text[2], "PE 1: the 3 allocations made without a barrier") == 1, "%s", out_text[2]);
    cr_assert(count_in(out_text[2], "call numbers") == 0, "the call numbers are agreed in debug mode only: %s", out_text[2]);
}

static char expected[2][256];

static void pe_extra_unsynced_debug(void *arg)
{
    char *a = shmem_malloc(64);
    int me = shmem_my_pe();
    (void)arg;
    snprintf(expected[me], sizeof expected[me],
             "shmalloc: PE %d: free(the block at offset %zu), its collective call %d, differs from PE %d's "
             "free(the block at offset %zu), its collective call %d: the call numbers\n",
             me, offset_of(a), me ? 5 : 4, 1 - me, offset_of(a), me ? 4 : 5);
    extra_unsynced(a);
}

Test(order, in_debug_mode_the_pe_that_made_an_extra_call_is_named_with_its_call)
{
    run(2, 1, pe_extra_unsynced_debug);
    cr_assert(count_in(out_text[2], expected[0]) == 1, "expected\n%s\nin\n%s", expected[0], out_text[2]);
    cr_assert(count_in(out_text[2], expected[1]) == 1, "expected\n%s\nin\n%s", expected[1], out_text[2]);
    cr_assert(count_in(out_text[2], ", differs from PE ") == 2, "once per PE, then agreed again: %s", out_text[2]);
}

/* ---- hints ---- */
static void pe_different_hints(void *arg)
{
    void *p = shmem_malloc_with_hints(64, shmem_my_pe() ? SHMEM_MALLOC_SIGNAL_REMOTE : SHMEM_MALLOC_ATOMICS_REMOTE);
    (void)arg;
    PE_CHECK(p == NULL && malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    p = shmem_malloc_with_hints(64, SHMEM_MALLOC_SIGNAL_REMOTE);
    PE_CHECK(p != NULL && malloc_error == SHMEM_MALLOC_OK);
    shmem_free(p);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(order, in_debug_mode_different_hints_fail_on_every_pe)
{
    run(2, 1, pe_different_hints);
    cr_assert(count_in(out_text[2], "PE 0: malloc(64 bytes, hints 1), its collective call 1, differs from PE 1's "
                                    "malloc(64 bytes, hints 2), its collective call 1: the hints\n") == 1,
              "%s", out_text[2]);
    cr_assert(count_in(out_text[2], "PE 1: malloc(64 bytes, hints 2), its collective call 1, differs from PE 0's "
                                    "malloc(64 bytes, hints 1), its collective call 1: the hints\n") == 1,
              "%s", out_text[2]);
}

/* ---- realloc keeps the block's hints, agreed in debug mode ---- */
static void pe_realloc_keeps_hints(void *arg)
{
    shmalloc_heap *h = shmalloc_current();
    char *p = shmem_malloc_with_hints(100, SHMEM_MALLOC_SIGNAL_REMOTE), *wall = shmem_malloc(100);
    (void)arg;
    PE_CHECK(p && wall);
    p = shmem_realloc(p, 4000);
    PE_CHECK(p != NULL && malloc_error == SHMEM_MALLOC_OK);
    PE_CHECK(shmalloc_heap_hints(h, p) == SHMEM_MALLOC_SIGNAL_REMOTE);
    shmem_free(p);
    shmem_free(wall);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(order, in_debug_mode_realloc_agrees_on_the_hints_it_keeps)
{
    run(4, 1, pe_realloc_keeps_hints);
    cr_assert(out_text[2][0] == 0, "%s", out_text[2]);
}

/* ---- realloc synchronises once: peers may write at once ---- */
#define GROWN ((size_t)256 << 10)

/* Each PE grows its block in place into the free top block and at once
   puts into the grown part of its right neighbour's copy, where the free
   block's header and links were (from byte 4104 of a 4096-byte request),
   then moves a walled block and puts into the moved copy: the owner's grow
   and copy must be done before any PE returns. */
static void pe_resize_then_put(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), left = (me + npes - 1) % npes, right = (me + 1) % npes;
    char *walled = shmem_malloc(4096), *wall = shmem_malloc(16), *top = shmem_malloc(4096), *p;
    long word[3] = {1000 + me, 2000 + me, 3000 + me}, got[3] = {-1, -1, -1};
    (void)arg;
    PE_CHECK(walled && wall && top);
    memset(walled, 0x77, 4096);
    p = shmem_realloc(top, GROWN);
    PE_CHECK(p == top);
    shmem_putmem(p + 4104, word, sizeof word, right); /* no barrier first, on purpose */
    p = shmem_realloc(walled, 8192);
    PE_CHECK(p != NULL && p != walled);
    if (!p) return;
    shmem_putmem(p + 4096, word, sizeof word, right);
    shmem_barrier_all();
    memcpy(got, top + 4104, sizeof got);
    PE_CHECK(got[0] == 1000 + left && got[1] == 2000 + left && got[2] == 3000 + left);
    memcpy(got, p + 4096, sizeof got);
    PE_CHECK(got[0] == 1000 + left && got[2] == 3000 + left);
    PE_CHECK(p[0] == 0x77 && p[4095] == 0x77);
    shmem_free(p);
    shmem_free(wall);
    shmem_free(top);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(order, peers_write_to_a_grown_or_moved_block_as_soon_as_realloc_returns)
{
    int i;
    for (i = 0; i < 20; i++) run(4, 0, pe_resize_then_put);
    cr_assert(out_text[2][0] == 0, "%s", out_text[2]);
}

/* Each PE puts into its right neighbour's block and at once resizes the
   block so that it moves: realloc's agreement completes the puts before
   any PE copies, so the moved copy holds the left neighbour's words. */
static void pe_put_then_move(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), left = (me + npes - 1) % npes, right = (me + 1) % npes;
    char *walled = shmem_malloc(4096), *wall = shmem_malloc(16), *p;
    long word[3] = {1000 + me, 2000 + me, 3000 + me}, got[3] = {-1, -1, -1};
    (void)arg;
    PE_CHECK(walled && wall);
    if (!walled || !wall) return;
    memset(walled, 0x77, 4096);
    shmem_barrier_all();
    shmem_putmem(walled + 2048, word, sizeof word, right); /* no barrier after, on purpose */
    p = shmem_realloc(walled, 8192);
    PE_CHECK(p != NULL && p != walled);
    if (!p) return;
    memcpy(got, p + 2048, sizeof got);
    PE_CHECK(got[0] == 1000 + left && got[1] == 2000 + left && got[2] == 3000 + left);
    PE_CHECK(p[0] == 0x77 && p[4095] == 0x77);
    shmem_free(p);
    shmem_free(wall);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(order, a_put_made_before_a_moving_realloc_is_in_the_moved_block)
{
    int i;
    for (i = 0; i < 50; i++) run(4, 0, pe_put_then_move);
    cr_assert(out_text[2][0] == 0, "%s", out_text[2]);
}

/* ---- out of memory on several PEs ---- */
static void pe_runs_out_twice(void *arg)
{
    shmalloc_info info;
    (void)arg;
    PE_CHECK(shmem_malloc(HEAP * 2) == NULL && malloc_error == SHMEM_MALLOC_FAIL);
    PE_CHECK(shmem_malloc(HEAP * 3) == NULL && malloc_error == SHMEM_MALLOC_FAIL);
    PE_CHECK(shmemx_heap_info(&info) == 0 && info.failures == 2 && info.used_blocks == 0);
    PE_CHECK(shmalloc_check(-1) == 0);
}

/* The two PEs' reports are of `call` alone, one each. */
static void check_reports_of(const char *call)
{
    char line[128];
    int pe;
    cr_assert(count_in(out_text[2], "out of symmetric memory") == 2, "%s", out_text[2]);
    for (pe = 0; pe < 2; pe++) {
        snprintf(line, sizeof line, "PE %d: out of symmetric memory: %s", pe, call);
        cr_assert(count_in(out_text[2], line) == 1, "no \"%s\" in:\n%s", line, out_text[2]);
    }
}

Test(order, each_pe_reports_running_out_once_and_in_debug_mode_every_time)
{
    run(2, 0, pe_runs_out_twice);
    check_reports_of("malloc of 8388608 bytes");
    /* run passes HEAP: no variable sets the size */
    cr_assert(count_in(out_text[2], "the program sets the heap's size, not a variable: have it ask for at least 8M") ==
                  2, "%s", out_text[2]);
    run(2, 1, pe_runs_out_twice);
    cr_assert(count_in(out_text[2], "out of symmetric memory") == 4, "%s", out_text[2]);
    cr_assert(count_in(out_text[2], "PE 1: out of symmetric memory: malloc of 12582912 bytes") == 1, "%s", out_text[2]);
}

/* A call that fails because the PEs passed different sizes is not an out
   of memory, even on a PE that had no room for its size: nothing is said
   of it or counted, and the first real one is still reported. */
static void pe_mismatch_too_large(void *arg)
{
    size_t skew = 16 * ((size_t)shmem_my_pe() + 1);
    shmalloc_info info;
    void *p;
    (void)arg;
    PE_CHECK(shmem_malloc(HEAP * 2 + skew) == NULL && malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    p = shmem_malloc(64);
    PE_CHECK(p != NULL);
    PE_CHECK(shmem_realloc(p, HEAP * 2 + skew) == NULL && malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    PE_CHECK(shmemx_heap_info(&info) == 0 && info.failures == 0);
    PE_CHECK(shmem_malloc(HEAP * 2) == NULL && malloc_error == SHMEM_MALLOC_FAIL);
    PE_CHECK(shmemx_heap_info(&info) == 0 && info.failures == 1);
    shmem_free(p);
    PE_CHECK(shmemx_heap_info(&info) == 0 && info.used_blocks == 0);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(order, a_mismatched_call_too_large_for_a_pe_is_not_reported_as_out_of_memory)
{
    run(2, 0, pe_mismatch_too_large);
    check_reports_of("malloc of 8388608 bytes");
}

/* Outside debug mode too, the first mismatch on a heap is reported by
   every PE, naming what differed; the ones after it only fail. */
static void pe_mismatch_reported_once(void *arg)
{
    int me = shmem_my_pe();
    char *a = shmem_malloc(64), *b = shmem_malloc(64);
    (void)arg;
    snprintf(expected[me], sizeof expected[me],
             "shmalloc: PE %d: free(the block at offset %zu), its collective call 3, differs from PE %d's "
             "free(the block at offset %zu), its collective call 3: the blocks\n",
             me, offset_of(me == 1 ? b : a), 1 - me, offset_of(me == 1 ? a : b));
    shmem_free(me == 1 ? b : a);
    PE_CHECK(malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    PE_CHECK(shmem_align(me == 1 ? 128 : 64, 64) == NULL && malloc_error == SHMEM_MALLOC_SYMMSIZE_FAILED);
    shmem_free(a);
    shmem_free(b);
    PE_CHECK(malloc_error == SHMEM_MALLOC_OK);
    PE_CHECK(shmalloc_check(-1) == 0);
}

Test(order, outside_debug_mode_the_first_mismatch_is_reported_by_every_pe_and_no_other)
{
    run(2, 0, pe_mismatch_reported_once);
    cr_assert(count_in(out_text[2], expected[0]) == 1, "expected\n%s\nin\n%s", expected[0], out_text[2]);
    cr_assert(count_in(out_text[2], expected[1]) == 1, "expected\n%s\nin\n%s", expected[1], out_text[2]);
    cr_assert(count_in(out_text[2], ", differs from PE ") == 2, "%s", out_text[2]);
    cr_assert(count_in(out_text[2], "further mismatches on this heap are not reported") == 2, "%s", out_text[2]);
}
