/* SHMEMX_MALLOC_NO_BARRIER: allocations that make no synchronisation get
   the offsets of plain ones, fail locally, and are checked by the next
   synchronising call. */
#include "test_support.h"

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
    assert_heap_ok();
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
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "malloc of 2097152 bytes"), "the call and its size: %s", out_text[2]);
    cr_assert_eq(info_of(h).failures, 1);
    void *p = shmem_malloc(100); /* one PE: its own record always agrees */
    cr_assert(p && malloc_error == SHMEM_MALLOC_OK);
    shmem_free(p);
    assert_heap_ok();
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
    assert_heap_ok();
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
    snapshot *before = heap_snapshot(h), *after;
    memcpy(peer_values, record, sizeof record);
    peer_count = count;
    peer_active = 1;
    capture_start();
    shmem_free(first);
    long e = malloc_error;
    capture_stop();
    peer_active = 0;
    peer_count = 3;
    strncpy(message, out_text[2], room - 1);
    message[room - 1] = '\0';
    if (e) {
        after = heap_snapshot(h);
        assert_same_heap(before, after, "a free that failed on the agreement");
        shmem_free(first); /* the record is spent: the next call agrees */
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    }
    assert_heap_ok();
    return e;
}

Test(no_barrier, the_next_synchronising_call_fails_on_different_sizes_counts_or_order_and_says_so)
{
    static const size_t same[] = {100, 200, 300}, bigger[] = {100, 200, 301}, more[] = {100, 200, 300, 8},
                        swapped[] = {200, 100, 300};
    char msg[1024];
    cr_assert_eq(replay_unsynced(same, 3, same, 3, msg, sizeof msg), SHMEM_MALLOC_OK, "%s", msg);
    cr_assert_eq(out_nids, 0, "no report when the PEs agree: %s", msg);
    cr_assert_eq(replay_unsynced(same, 3, bigger, 3, msg, sizeof msg), SHMEM_MALLOC_SYMMSIZE_FAILED);
    assert_said(HEAP_NO_BARRIER_DIFFER, 0, 3ull, "s", "", "free");
    cr_assert_eq(replay_unsynced(same, 3, more, 4, msg, sizeof msg), SHMEM_MALLOC_SYMMSIZE_FAILED);
    assert_said(HEAP_NO_BARRIER_DIFFER, 0, 4ull, "s", "", "free");
    cr_assert_eq(replay_unsynced(same, 3, swapped, 3, msg, sizeof msg), SHMEM_MALLOC_SYMMSIZE_FAILED);
    assert_said(HEAP_NO_BARRIER_DIFFER, 0, 3ull, "s", "", "free");
    cr_assert_eq(replay_unsynced(same, 1, bigger + 2, 1, msg, sizeof msg), SHMEM_MALLOC_SYMMSIZE_FAILED);
    assert_said(HEAP_NO_BARRIER_DIFFER, 0, 1ull, "", "s", "free"); /* one, in the singular */
}
