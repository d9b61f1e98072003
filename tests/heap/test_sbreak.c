/* shsbreak: the spec area at the top of the symmetric heap, outside the
   free lists.  Taking and giving back bytes, what the statistics show,
   that failures change nothing, and that the area is symmetric and
   reachable by peers (pthreads transport).  A spec pointer passed to
   shfree is a case of tests/heap/test_bad_pointer.c. */
#include "test_support.h"

#include "transports/shmalloc_pthreads.h"

#define HEAP ((size_t)1 << 20)

static char region[HEAP + 65536] __attribute__((aligned(4096)));

static shmalloc_counters now(void) { return heap_counters(shmalloc_current()); }

static void one_pe_heap(void)
{
    shmalloc_heap *h = shmalloc_heap_create(region, shmalloc_heap_bytes(HEAP), shmalloc_transport_single(), NULL);
    cr_assert(h != NULL);
    shmalloc_set_current(h);
}

static char *top(void) { return (char *)shmalloc_heap_base(shmalloc_current()) + shmalloc_heap_size(shmalloc_current()); }

Test(sbreak, taking_bytes_gives_a_writable_area_ending_at_the_top_of_the_heap)
{
    char *p;
    one_pe_heap();
    cr_assert(shsbreak(0) == top(), "shsbreak(0) is the break: the heap's end while there is no spec area");
    p = shsbreak(4000); /* rounded up to 4000 -> 4000 is a multiple of 16 */
    cr_assert(p != NULL && malloc_error == SHMEM_MALLOC_OK);
    cr_assert(p + 4000 == top(), "spec area [%p, +4000) should end at %p", (void *)p, (void *)top());
    cr_assert(((uintptr_t)p & 15) == 0);
    memset(p, 0x77, 4000);
    cr_assert(now().spec == 4000);
    cr_assert(shsbreak(0) == p);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(sbreak, allocations_never_reach_into_the_spec_area)
{
    char *p, *q;
    size_t largest;
    one_pe_heap();
    p = shsbreak(8192);
    cr_assert(p);
    memset(p, 0x11, 8192);
    largest = now().largest_free;
    q = shmem_malloc(largest - 16);
    cr_assert(q != NULL, "the rest of the heap is still one allocation");
    memset(q, 0x22, largest - 16);
    cr_assert(q + largest - 16 <= p);
    cr_assert(p[0] == 0x11 && p[8191] == 0x11);
    shmem_free(q);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(sbreak, giving_bytes_back_restores_the_whole_heap)
{
    size_t before;
    one_pe_heap();
    before = now().capacity;
    cr_assert(shsbreak(65536) != NULL);
    cr_assert(shsbreak(-32768) != NULL && now().spec == 32768);
    cr_assert(shsbreak(-32768) == top() && now().spec == 0);
    cr_assert(now().capacity == before);
    cr_assert(shmem_malloc(HEAP) != NULL, "the whole nominal size is one allocation again");
    cr_assert(shmalloc_check(-1) == 0);
}

Test(sbreak, impossible_requests_fail_and_change_nothing)
{
    shmalloc_counters before;
    void *all;
    one_pe_heap();
    before = now();
    cr_assert(shsbreak((ptrdiff_t)HEAP * 2) == NULL && malloc_error == SHMEM_MALLOC_FAIL);
    cr_assert(shsbreak(-16) == NULL && malloc_error == SHMEM_MALLOC_FAIL, "nothing to give back");
    cr_assert(shsbreak(PTRDIFF_MAX) == NULL && malloc_error == SHMEM_MALLOC_BAD_SIZE);
    cr_assert(shsbreak(-PTRDIFF_MAX) == NULL && malloc_error == SHMEM_MALLOC_BAD_SIZE);
    cr_assert(now().capacity == before.capacity && now().spec == 0);
    all = shmem_malloc(now().largest_free - 16); /* the top block is used now */
    cr_assert(all != NULL);
    cr_assert(shsbreak(64) == NULL && malloc_error == SHMEM_MALLOC_FAIL);
    shmem_free(all);
    cr_assert(shsbreak(64) != NULL);
    cr_assert(shmalloc_check(-1) == 0);
}

Test(sbreak, statistics_show_the_spec_area_as_one_at_sign_block)
{
    void *a;
    one_pe_heap();
    a = shmem_malloc(100);
    cr_assert(shsbreak(2048) != NULL);
    capture_start();
    shmalloc_stats(1);
    capture_stop();
    cr_assert(strstr(out_text[1], "spec: 1 block, 2048 bytes") != NULL, "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "map: *.@\n") != NULL, "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "sbreak 1") != NULL, "%s", out_text[1]);
    shmem_free(a);
    cr_assert(shmalloc_check(-1) == 0);
}

/* ---- across PEs ---- */
static int bad;
static void pe_spec_symmetric(void *arg)
{
    char *p = shsbreak(4096);
    int me = shmem_my_pe(), right = (me + 1) % shmem_n_pes(), left = (me + shmem_n_pes() - 1) % shmem_n_pes();
    char got;
    (void)arg;
    if (!p) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
    if (!p) return;
    if ((size_t)(p - (char *)shmalloc_heap_base(shmalloc_current())) != shmalloc_heap_size(shmalloc_current()) - 4096)
        __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
    memset(p, 0, 4096);
    shmem_barrier_all();
    got = (char)('a' + me);
    shmem_putmem(p + 4095, &got, 1, right); /* the very last byte of the heap */
    shmem_barrier_all();
    if (p[4095] != 'a' + left) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
    shmem_barrier_all();
    if (shsbreak(-4096) == NULL || shmalloc_check(-1) != 0) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
}

Test(sbreak, spec_areas_are_symmetric_and_reachable_by_peers)
{
    cr_assert(shmalloc_pthreads_run(4, HEAP, pe_spec_symmetric, NULL) == 0);
    cr_assert(bad == 0, "%d PE checks failed", bad);
}
