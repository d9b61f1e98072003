/* test_fork_teams.c - teams on the fork transport (tests/fork/transport_fork/):
   splits, translation, and each team's own barrier, with disjoint and
   overlapping teams at work at once.  PEs are processes, so each check
   that fails ends its PE with a message, and the test asserts that
   shmalloc_fork_run saw every PE end with status 0. */
#include "fork_pes.h"

#include <unistd.h>

#define ROUNDS 2000

/* A team's members, as world PEs: start + i * stride for i < size. */
static void check_team(shmem_team_t t, int start, int stride, int size)
{
    int me = shmem_my_pe(), i;
    FORK_CHECK(t != SHMEM_TEAM_INVALID);
    FORK_CHECK_EQ(shmem_team_n_pes(t), size);
    FORK_CHECK_EQ(shmem_team_my_pe(t), (me - start) / stride);
    for (i = 0; i < size; i++) {
        FORK_CHECK_EQ(shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD), start + i * stride);
        FORK_CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, start + i * stride, t), i);
    }
    FORK_CHECK_EQ(shmem_team_translate_pe(t, size, SHMEM_TEAM_WORLD), -1);
    FORK_CHECK_EQ(shmem_team_translate_pe(t, -1, SHMEM_TEAM_WORLD), -1);
    FORK_CHECK_EQ(shmem_team_sync(t), 0);
}

/* Whether world PE pe is start + i * stride for some i < size. */
static int in_team(int pe, int start, int stride, int size)
{
    return pe >= start && (pe - start) % stride == 0 && (pe - start) / stride < size;
}

/* >> splits ------------------------------------------------------------------ */
static void pe_splits(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t odd, odd_half, x, y;
    shmem_team_config_t cfg = {3}, got = {0};
    (void)arg;
    FORK_CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_SHARED), n); /* every PE maps every PE's memory */
    FORK_CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_SHARED), me);
    FORK_CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
    FORK_CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
    FORK_CHECK_EQ(shmem_team_sync(SHMEM_TEAM_INVALID), -1);

    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &odd), 0);
    FORK_CHECK((odd != SHMEM_TEAM_INVALID) == (me % 2 == 1));
    if (odd != SHMEM_TEAM_INVALID) {
        check_team(odd, 1, 2, n / 2);
        FORK_CHECK(shmem_team_get_config(odd, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 3);
        FORK_CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, odd), -1);
        /* a split of a split: collective over the odd PEs only, in world numbers 3, 7, ... */
        FORK_CHECK_EQ(shmem_team_split_strided(odd, 1, 2, n / 4, NULL, 0, &odd_half), 0);
        FORK_CHECK((odd_half != SHMEM_TEAM_INVALID) == in_team(me, 3, 4, n / 4));
        if (odd_half != SHMEM_TEAM_INVALID) {
            check_team(odd_half, 3, 4, n / 4);
            FORK_CHECK_EQ(shmem_team_translate_pe(odd_half, 0, odd), 1);
        }
        shmem_team_destroy(odd_half);
        shmem_team_destroy(odd);
    }

    /* rows of 3 and columns: 8 PEs are rows {0,1,2} {3,4,5} {6,7}, columns {0,3,6} {1,4,7} {2,5} */
    FORK_CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 3, NULL, 0, &x, NULL, 0, &y), 0);
    check_team(x, me - me % 3, 1, me - me % 3 + 3 <= n ? 3 : n - (me - me % 3));
    check_team(y, me % 3, 3, (n - me % 3 + 2) / 3);
    shmem_team_destroy(x);
    shmem_team_destroy(y);
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork_teams, splits_give_the_members_their_numbers_and_others_invalid, .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(8, SMALL_HEAP, pe_splits, NULL), 0);
}

/* A split that does not fit fails on every parent member, which says
   why, and the parent works on. */
static void pe_bad_split(void *arg)
{
    shmem_team_t t = SHMEM_TEAM_WORLD, x = SHMEM_TEAM_WORLD, y = SHMEM_TEAM_WORLD;
    (void)arg;
    FORK_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 3, NULL, 0, &t) != 0);
    FORK_CHECK(t == SHMEM_TEAM_INVALID);
    FORK_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, SHMEM_TEAM_NUM_CONTEXTS, &t) != 0);
    FORK_CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &x, NULL, 0, &y) != 0);
    FORK_CHECK(x == SHMEM_TEAM_INVALID && y == SHMEM_TEAM_INVALID);
    FORK_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &t) == 0);
    FORK_CHECK(t != SHMEM_TEAM_INVALID || shmem_my_pe() >= 2);
    shmem_team_destroy(t);
    FORK_CHECK_EQ(shmem_team_sync(SHMEM_TEAM_WORLD), 0);
}

Test(fork_teams, a_split_that_does_not_fit_fails_on_every_parent_member, .init = cr_redirect_stderr,
     .timeout = TEST_TIMEOUT)
{
    char text[8192];
    cr_assert_eq(shmalloc_fork_run(4, SMALL_HEAP, pe_bad_split, NULL), 0);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "shmem_team_split_strided: PE 3: start 1, stride 2, size 3 do not fit the parent team "
                           "of 4 PEs") &&
              strstr(text, "config is NULL with SHMEM_TEAM_NUM_CONTEXTS") &&
              strstr(text, "shmem_team_split_2d: PE 0: xrange 0 (must be >= 1)"),
              "stderr was: %s", text);
}

/* >> barriers of their own -------------------------------------------------------- */
/* ROUNDS rounds in team t: each member puts the round into its right
   neighbour's slot, syncs, and finds its left neighbour's round and team
   mark there; a barrier that let a member through early, or mixed with
   another team's, leaves an older round in some slot.  Team mark syncs
   mark - 1 more times a round, so teams that shared a barrier's state
   would run at different paces and let each other through. */
static void ring_rounds(shmem_team_t t, long *slot, long mark)
{
    int me = shmem_team_my_pe(t), n = shmem_team_n_pes(t), r, i;
    int right = shmem_team_translate_pe(t, (me + 1) % n, SHMEM_TEAM_WORLD);
    for (r = 1; r <= ROUNDS; r++) {
        long v = mark * 1000000 + r;
        shmem_putmem(slot, &v, sizeof v, right);
        FORK_CHECK_EQ(shmem_team_sync(t), 0);
        FORK_CHECK_EQ(*slot, v);
        for (i = 0; i < mark; i++) FORK_CHECK_EQ(shmem_team_sync(t), 0); /* read before the next round's put */
    }
}

/* Two disjoint teams, the even and the odd PEs, run their rounds at once. */
static void pe_disjoint(void *arg)
{
    long *slot = (long *)shmem_malloc(sizeof(long));
    int me = shmem_my_pe();
    shmem_team_t mine;
    (void)arg;
    FORK_CHECK(slot != NULL);
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, 3, NULL, 0, &mine), 0);
    if (mine == SHMEM_TEAM_INVALID)
        FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 3, NULL, 0, &mine), 0);
    else
        FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 3, NULL, 0, &(shmem_team_t){0}), 0);
    FORK_CHECK(mine != SHMEM_TEAM_INVALID);
    ring_rounds(mine, slot, me % 2 + 1);
    shmem_team_destroy(mine);
    shmem_barrier_all();
    shmem_free(slot);
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork_teams, disjoint_teams_sync_at_the_same_time_without_crossing, .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(6, SMALL_HEAP, pe_disjoint, NULL), 0);
}

/* Overlapping teams {0..3} and {2..5}: PEs 2 and 3 sync in both, in the
   same order, while 0, 1 and 4, 5 sync only in theirs. */
static void pe_overlapping(void *arg)
{
    long *slots = (long *)shmem_malloc(2 * sizeof(long));
    int me = shmem_my_pe(), r;
    shmem_team_t low, high;
    (void)arg;
    FORK_CHECK(slots != NULL);
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 4, NULL, 0, &low), 0);
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 2, 1, 4, NULL, 0, &high), 0);
    FORK_CHECK((low != SHMEM_TEAM_INVALID) == (me < 4) && (high != SHMEM_TEAM_INVALID) == (me >= 2));
    for (r = 0; r < 4; r++) {
        if (low != SHMEM_TEAM_INVALID) ring_rounds(low, &slots[0], 1);
        if (high != SHMEM_TEAM_INVALID) ring_rounds(high, &slots[1], 2);
    }
    shmem_team_destroy(low);
    shmem_team_destroy(high);
    shmem_barrier_all();
    shmem_free(slots);
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork_teams, overlapping_teams_used_in_the_same_order_never_mix, .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(6, SMALL_HEAP, pe_overlapping, NULL), 0);
}

/* More teams than the transport holds at once: the split fails on every
   parent member, naming the limit; destroyed teams' barriers are taken
   again. */
static void pe_many_teams(void *arg)
{
    shmem_team_t t[64];
    int i, count = 0;
    (void)arg;
    for (i = 0; i < 64; i++) {
        if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &t[i]) != 0) break;
        count++;
    }
    FORK_CHECK_EQ(count, 63); /* the world holds one */
    FORK_CHECK(t[63] == SHMEM_TEAM_INVALID);
    for (i = 0; i < count; i++) shmem_team_destroy(t[i]);
    shmem_barrier_all(); /* each barrier is free once every member has destroyed its team */
    for (i = 0; i < 200; i++) { /* each is given back */
        FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &t[0]), 0);
        FORK_CHECK_EQ(shmem_team_sync(t[0]), 0);
        shmem_team_destroy(t[0]);
    }
}

Test(fork_teams, a_split_past_the_teams_held_fails_on_every_member, .init = cr_redirect_stderr,
     .timeout = TEST_TIMEOUT)
{
    char text[4096];
    cr_assert_eq(shmalloc_fork_run(2, SMALL_HEAP, pe_many_teams, NULL), 0);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "shmem_team_split_strided: PE 0: 64 teams are alive, the most the fork transport "
                           "holds: destroy the teams no longer used"),
              "stderr was: %s", text);
}

/* A member that does not come to its team's barrier is named at the
   timeout, with the team.  The others wait outside any barrier, so that
   PE 1 is the first to give up. */
static void pe_late_in_team(void *arg)
{
    shmem_team_t odd;
    (void)arg;
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 2, NULL, 0, &odd), 0);
    if (shmem_my_pe() != 1) sleep(30);
    shmem_team_sync(odd);
}

Test(fork_teams, a_member_late_to_its_team_is_named_with_the_team, .init = cr_redirect_stderr,
     .timeout = TEST_TIMEOUT)
{
    char text[4096];
    setenv("SHMALLOC_TIMEOUT", "1", 1);
    cr_assert_eq(shmalloc_fork_run(4, SMALL_HEAP, pe_late_in_team, NULL), 1);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "shmalloc: PE 1 waited 1 s in barrier 1 of the team of world PEs 1 + 2 * (0..1) for "
                           "PE 3 (SHMALLOC_TIMEOUT)"),
              "stderr was: %s", text);
}

/* >> spaces: the header's, over this transport's team member ------------------ */
/* Collective over s's team: p's offset from the space's base is the same
   on every member, read from each with its world PE. */
static void check_space_offset(shmem_team_t t, shmemx_space_t s, size_t *slot, const void *p)
{
    int q, n = shmem_team_n_pes(t);
    size_t mine = (size_t)((const char *)p - (const char *)shmalloc_heap_base(s)), theirs;
    *slot = mine;
    FORK_CHECK_EQ(shmem_team_sync(t), 0);
    for (q = 0; q < n; q++) {
        shmem_getmem(&theirs, slot, sizeof theirs, shmem_team_translate_pe(t, q, SHMEM_TEAM_WORLD));
        FORK_CHECK_EQ(theirs, mine);
    }
    FORK_CHECK_EQ(shmem_team_sync(t), 0);
}

/* Each member puts its mark into its right neighbour's block (by world
   PE) and finds its left neighbour's. */
static void check_space_ring(shmem_team_t t, unsigned char *block, size_t bytes)
{
    int me = shmem_team_my_pe(t), n = shmem_team_n_pes(t);
    unsigned char *local = (unsigned char *)malloc(bytes);
    size_t i;
    FORK_CHECK(local != NULL);
    memset(local, 0x40 + shmem_my_pe(), bytes);
    shmem_putmem(block, local, bytes, shmem_team_translate_pe(t, (me + 1) % n, SHMEM_TEAM_WORLD));
    FORK_CHECK_EQ(shmem_team_sync(t), 0);
    for (i = 0; i < bytes; i++)
        if (block[i] != 0x40 + shmem_team_translate_pe(t, (me + n - 1) % n, SHMEM_TEAM_WORLD))
            pe_fail(__LINE__, "byte %zu of %zu is %#x", i, bytes, block[i]);
    FORK_CHECK_EQ(shmem_team_sync(t), 0);
    free(local);
}

/* The low PEs and the high PEs (two disjoint teams of 3) each make a
   space and use it at the same time, with sizes of their own: an
   all-reduce that crossed teams would fail their calls. */
static void pe_spaces(void *arg)
{
    int metadata = *(const int *)arg, me = shmem_my_pe(), high = me >= 3;
    shmemx_space_config_t cfg = {SMALL_HEAP, 16 * SMALL_HEAP, 0, NULL, 0, NULL};
    shmemx_space_t s, again;
    shmem_team_t t;
    size_t *slot, small = 1000 + 100 * (size_t)high;
    unsigned char *a, *big;
    char *base;
    cfg.metadata = metadata;
    capture_start();
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 3, NULL, 0, &t), 0);
    if (t == SHMEM_TEAM_INVALID) FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 3, 1, 3, NULL, 0, &t), 0);
    else FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 3, 1, 3, NULL, 0, &(shmem_team_t){0}), 0);
    FORK_CHECK_EQ(shmemx_space_create(t, &cfg, &s), 0);
    slot = (size_t *)shmemx_space_malloc(s, sizeof *slot);
    a = (unsigned char *)shmemx_space_malloc(s, small);
    FORK_CHECK(slot != NULL && a != NULL);
    FORK_CHECK(shmemx_space_of(a) == s && shmalloc_heap_of(shmalloc_current(), a) == s);
    FORK_CHECK(shmemx_space_of(slot) == s && !shmalloc_heap_contains(shmalloc_current(), a));
    check_space_offset(t, s, slot, a);
    check_space_ring(t, a, small);
    big = (unsigned char *)shmemx_space_malloc(s, 4 * SMALL_HEAP); /* past its nominal size: it grows */
    FORK_CHECK(big != NULL && shmemx_space_of(big) == s);
    check_space_offset(t, s, slot, big);
    check_space_ring(t, big, 4 * SMALL_HEAP);
    FORK_CHECK(shmemx_space_malloc(s, 64 + (size_t)shmem_team_my_pe(t)) == NULL);
    FORK_CHECK_EQ(malloc_error, SHMEM_MALLOC_SYMMSIZE_FAILED);
    shmem_free(big);
    FORK_CHECK_EQ(shmemx_space_destroy(s, 0), SHMEMX_MALLOC_SPACE_BUSY); /* on every member; nothing changes */
    FORK_CHECK(out_said(SHMALLOC_MSG_SPACE_BUSY) == 1);
    check_space_ring(t, a, small);
    FORK_CHECK(shmalloc_check(0) == 0);
    base = (char *)shmalloc_heap_base(s);
    FORK_CHECK_EQ(shmemx_space_destroy(s, SHMALLOC_SPACE_FREE_LIVE), 0);
    FORK_CHECK(shmemx_space_of(a) == NULL);
    FORK_CHECK_EQ(shmemx_space_create(t, &cfg, &again), 0); /* the room it left is taken again, zeroed */
    FORK_CHECK((char *)shmalloc_heap_base(again) == base);
    a = (unsigned char *)shmemx_space_calloc(again, 100, 10);
    FORK_CHECK(a != NULL && a[0] == 0 && a[999] == 0);
    shmem_free(a);
    FORK_CHECK_EQ(shmemx_space_destroy(again, 0), 0);
    shmem_team_destroy(t);
    FORK_CHECK(shmalloc_check(0) == 0);
}

ParameterizedTestParameters(fork_teams, disjoint_teams_use_their_spaces_at_the_same_time)
{
    static int metadata[] = {SHMALLOC_METADATA_INLINE, SHMALLOC_METADATA_SEPARATE};
    return cr_make_param_array(int, metadata, sizeof metadata / sizeof metadata[0]);
}

ParameterizedTest(int *metadata, fork_teams, disjoint_teams_use_their_spaces_at_the_same_time,
                  .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(6, SMALL_HEAP, pe_spaces, metadata), 0);
}

/* A PE outside the team: its create is refused (NOT_MEMBER), and a put
   into the space on it ends the job, naming the space, its team and the
   PE.  The others wait outside any barrier. */
static void pe_space_outsider(void *arg)
{
    shmemx_space_config_t cfg = {SMALL_HEAP, 0, SHMALLOC_METADATA_INLINE, NULL, 0, NULL};
    shmemx_space_t s;
    shmem_team_t pair;
    long *p;
    (void)arg;
    capture_start();
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &pair), 0);
    if (pair == SHMEM_TEAM_INVALID) {
        FORK_CHECK_EQ(shmemx_space_create(pair, &cfg, &s), SHMEMX_MALLOC_NOT_MEMBER);
        FORK_CHECK(s == NULL && out_said(SHMALLOC_MSG_SPACE_NOT_MEMBER) == 1);
        sleep(30);
    }
    FORK_CHECK_EQ(shmemx_space_create(pair, &cfg, &s), 0);
    p = (long *)shmemx_space_malloc(s, sizeof *p);
    FORK_CHECK(p != NULL);
    capture_stop(); /* the transport's message goes to stderr */
    if (shmem_my_pe() == 1) sleep(30);
    shmem_putmem(p, &(long){1}, sizeof *p, 3);
    pe_fail(__LINE__, "the put to PE 3 returned");
}

Test(fork_teams, a_put_into_a_space_on_a_pe_outside_its_team_ends_the_job, .init = cr_redirect_stderr,
     .timeout = TEST_TIMEOUT)
{
    char text[4096];
    cr_assert_eq(shmalloc_fork_run(4, SMALL_HEAP, pe_space_outsider, NULL), 1);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "shmem_putmem: PE 0: PE 3 cannot reach the space at ") &&
              strstr(text, ": not in its team (the space's team: 2 PEs, world PEs 0 + 1 * (0..1))") &&
              !strstr(text, "returned"),
              "stderr was: %s", text);
}

/* A destroyed team's space refuses its calls, and is then destroyed on
   each PE alone; the team's handle outlives it until then. */
static void pe_space_team_destroyed(void *arg)
{
    shmemx_space_config_t cfg = {SMALL_HEAP, 0, SHMALLOC_METADATA_INLINE, NULL, 0, NULL};
    shmemx_space_t s;
    shmem_team_t t;
    (void)arg;
    capture_start();
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, 2, NULL, 0, &t), 0);
    if (t != SHMEM_TEAM_INVALID) {
        FORK_CHECK_EQ(shmemx_space_create(t, &cfg, &s), 0);
        shmem_team_destroy(t);
        FORK_CHECK(shmemx_space_malloc(s, 64) == NULL);
        FORK_CHECK_EQ(malloc_error, SHMEMX_MALLOC_TEAM_DESTROYED);
        FORK_CHECK(out_said(SHMALLOC_MSG_SPACE_TEAM_GONE) == 1);
        FORK_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
    }
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork_teams, a_destroyed_teams_space_refuses_its_calls, .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(3, SMALL_HEAP, pe_space_team_destroyed, NULL), 0);
}

/* The contract's team member is what makes spaces: a heap over a
   transport without it refuses, naming the member. */
Test(fork_teams, a_transport_without_teams_cannot_make_spaces)
{
    size_t bytes = shmalloc_heap_bytes(SMALL_HEAP);
    long err = 0;
    shmalloc_heap *world = shmalloc_heap_create(map_aligned(bytes, MIB), bytes, shmalloc_transport_single(), &err);
    cr_assert(world != NULL, "err %ld", err);
    capture_start();
    cr_assert(shmalloc_space_create(world, SHMEM_TEAM_WORLD, map_aligned(bytes, MIB), bytes, NULL, &err) == NULL);
    cr_assert_eq(err, SHMEMX_MALLOC_NO_TEAMS);
    assert_said(SPACE_NO_TEAMS, 0, "shmemx_space_create");
    capture_stop();
    cr_assert_eq(shmalloc_heap_check(world, 0), 0);
    shmalloc_heap_destroy(world);
}

/* Overlapping teams {0, 1} and {1, 2}: PE 1's room already holds the first
   team's space where PE 2's is empty, so the second space's members agree
   on an offset past it on both, and their puts land. */
static void pe_uneven_rooms(void *arg)
{
    shmemx_space_config_t cfg = {SMALL_HEAP, 0, SHMALLOC_METADATA_INLINE, NULL, 0, NULL};
    shmemx_space_t first = NULL, second = NULL;
    shmem_team_t low, high;
    unsigned char *a;
    size_t *slot;
    (void)arg;
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &low), 0);
    FORK_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, 2, NULL, 0, &high), 0);
    if (low != SHMEM_TEAM_INVALID) FORK_CHECK_EQ(shmemx_space_create(low, &cfg, &first), 0);
    if (high != SHMEM_TEAM_INVALID) {
        FORK_CHECK_EQ(shmemx_space_create(high, &cfg, &second), 0);
        slot = (size_t *)shmemx_space_malloc(second, sizeof *slot);
        a = (unsigned char *)shmemx_space_malloc(second, 5000);
        FORK_CHECK(slot != NULL && a != NULL);
        check_space_offset(high, second, slot, a);
        check_space_ring(high, a, 5000);
        if (first != NULL) FORK_CHECK((char *)shmalloc_heap_base(second) > (char *)shmalloc_heap_base(first));
        FORK_CHECK_EQ(shmemx_space_destroy(second, SHMALLOC_SPACE_FREE_LIVE), 0);
    }
    if (low != SHMEM_TEAM_INVALID) FORK_CHECK_EQ(shmemx_space_destroy(first, 0), 0);
    shmem_team_destroy(low);
    shmem_team_destroy(high);
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork_teams, a_space_takes_an_offset_free_on_every_member, .timeout = TEST_TIMEOUT)
{
    cr_assert_eq(shmalloc_fork_run(3, SMALL_HEAP, pe_uneven_rooms, NULL), 0);
}

/* A space larger than the room for spaces fails on every member, saying
   so; memory the program gives is used as given, reached by this PE. */
static void pe_space_sizes(void *arg)
{
    shmemx_space_config_t cfg = {SHMALLOC_FORK_SPACES + 1, 0, SHMALLOC_METADATA_INLINE, NULL, 0, NULL};
    size_t bytes = shmalloc_heap_bytes(SMALL_HEAP);
    shmemx_space_t s;
    long *p, v = 42;
    (void)arg;
    FORK_CHECK_EQ(shmemx_space_create(SHMEM_TEAM_WORLD, &cfg, &s), SHMEM_MALLOC_FAIL);
    FORK_CHECK(s == NULL);
    cfg.size = SMALL_HEAP;
    cfg.mem = map_aligned(bytes, MIB);
    cfg.bytes = bytes;
    FORK_CHECK_EQ(shmemx_space_create(SHMEM_TEAM_WORLD, &cfg, &s), 0);
    p = (long *)shmemx_space_malloc(s, sizeof *p);
    FORK_CHECK(p != NULL && (char *)p >= (char *)cfg.mem && (char *)p < (char *)cfg.mem + bytes);
    shmem_putmem(p, &v, sizeof v, shmem_my_pe());
    FORK_CHECK_EQ(*p, 42);
    shmem_free(p);
    FORK_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
    FORK_CHECK(shmalloc_check(0) == 0);
}

Test(fork_teams, a_space_past_the_room_fails_on_every_member, .init = cr_redirect_stderr, .timeout = TEST_TIMEOUT)
{
    char text[4096];
    cr_assert_eq(shmalloc_fork_run(2, SMALL_HEAP, pe_space_sizes, NULL), 0);
    read_redirected_stderr(text, sizeof text);
    cr_assert(strstr(text, "shmemx_space_create: PE 0: ") && strstr(text, "shmemx_space_create: PE 1: ") &&
              strstr(text, "do not fit beside the spaces of a member"),
              "stderr was: %s", text);
}
