/* pmix_ofi_worker_teams.c - the teams scenarios (test_pmix_ofi_teams.c):
   teams (splits, translations, syncs and bad splits on any number of
   PEs), teams_concurrent (two disjoint teams all-reduce at once, then
   overlapping ones in turn) and team_skip (a member of a team does not
   come to its barrier); team_heaps (a heap over each half of the world
   through the contract's team member). */
#include "pmix_ofi_worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Member i of team t is world PE first + i * step, for i < n. */
static void check_members(shmem_team_t t, int first, int step, int n, int line)
{
    int i;
    if (shmem_team_n_pes(t) != n) fail(line, "the team has %d PEs, expected %d", shmem_team_n_pes(t), n);
    for (i = 0; i < n; i++) {
        int world = shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD);
        if (world != first + i * step) fail(line, "its PE %d is world PE %d, expected %d", i, world, first + i * step);
        if (shmem_team_translate_pe(SHMEM_TEAM_WORLD, first + i * step, t) != i)
            fail(line, "world PE %d is not its PE %d", first + i * step, i);
    }
    if (shmem_team_translate_pe(t, n, SHMEM_TEAM_WORLD) != -1 || shmem_team_translate_pe(t, -1, SHMEM_TEAM_WORLD) != -1)
        fail(line, "a PE outside the team translates");
    if ((me - first) % step == 0 && me >= first && (me - first) / step < n && shmem_team_my_pe(t) != (me - first) / step)
        fail(line, "shmem_team_my_pe is %d, expected %d", shmem_team_my_pe(t), (me - first) / step);
}

/* Each member's all-reduce gives the greatest of the members' values. */
static void check_reduce(shmem_team_t t, uint64_t salt, int line)
{
    uint64_t v[2];
    int n = shmem_team_n_pes(t), mine = shmem_team_my_pe(t);
    v[0] = salt * 64 + (uint64_t)mine;
    v[1] = salt * 64 + (uint64_t)(63 - mine);
    if (shmalloc_pmix_ofi_team_reduce_max(t, v, 2) != 0) fail(line, "the team's all-reduce failed");
    if (v[0] != salt * 64 + (uint64_t)(n - 1) || v[1] != salt * 64 + 63)
        fail(line, "all-reduce %llu gave %llu, %llu; expected %llu, %llu", (unsigned long long)salt,
             (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)(salt * 64 + (uint64_t)(n - 1)),
             (unsigned long long)(salt * 64 + 63));
}

static void check_world_and_shared(void)
{
    const char *shared = getenv("SHMALLOC_TEST_EXPECT_SHARED");
    int n = shared ? atoi(shared) : npes;
    shmem_team_config_t config = {-1};
    CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_WORLD), me);
    CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_WORLD), npes);
    CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
    CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
    CHECK_EQ(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, 1);
    CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD), -1);
    CHECK_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &config), 0);
    CHECK_EQ(config.num_contexts, 0);
    check_members(SHMEM_TEAM_SHARED, me / n * n, 1, n, __LINE__);
    check_members(SHMEM_TEAM_WORLD, 0, 1, npes, __LINE__);
    CHECK_EQ(shmem_team_sync(SHMEM_TEAM_SHARED), 0);
    check_reduce(SHMEM_TEAM_SHARED, 7, __LINE__);
    check_reduce(SHMEM_TEAM_WORLD, 8, __LINE__);
}

/* Bad arguments: -1 and SHMEM_TEAM_INVALID on every PE, each with a
   message (checked by the suite), and the world goes on. */
static void check_bad_splits(void)
{
    static const int bad[][3] = {{0, 0, 2}, {-1, 1, 1}, {0, 1, 0}, {1, 1, 0x7fffffff}, {0, 1, 1 << 20}};
    shmem_team_t t = SHMEM_TEAM_WORLD, x = SHMEM_TEAM_WORLD;
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, bad[i][0], bad[i][1], bad[i][2], NULL, 0, &t);
        if (rc == 0 || t != SHMEM_TEAM_INVALID) fail(__LINE__, "split (%d, %d, %d) returned %d", bad[i][0], bad[i][1], bad[i][2], rc);
    }
    /* Different sizes on PE 0 and the others: every PE fails. */
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, me == 0 ? 1 : npes, NULL, 0, &t) == 0 ||
        t != SHMEM_TEAM_INVALID)
        fail(__LINE__, "a split with different sizes succeeded");
    if (shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &t, NULL, 0, &x) == 0 || t != SHMEM_TEAM_INVALID ||
        x != SHMEM_TEAM_INVALID)
        fail(__LINE__, "split_2d with xrange 0 succeeded");
    CHECK_EQ(shmem_team_sync(SHMEM_TEAM_WORLD), 0);
}

void scenario_teams(void)
{
    shmem_team_config_t config = {3};
    shmem_team_t evens, odds_of_evens, x, y;
    int half = (npes + 1) / 2, xr = npes > 2 ? 2 : 1, i;
    check_world_and_shared();
    /* The even PEs; the odd PEs get SHMEM_TEAM_INVALID and 0. */
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, half, &config, SHMEM_TEAM_NUM_CONTEXTS, &evens), 0);
    CHECK_EQ(evens == SHMEM_TEAM_INVALID, me % 2 == 1);
    if (evens != SHMEM_TEAM_INVALID) {
        shmem_team_config_t got = {0};
        check_members(evens, 0, 2, half, __LINE__);
        CHECK_EQ(shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
        CHECK_EQ(got.num_contexts, 3);
        CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, evens), -1);
        /* A split of a split, collective over the even PEs only: their odd
           members, world PEs 2, 6, ... */
        odds_of_evens = SHMEM_TEAM_INVALID;
        if (half > 1) CHECK_EQ(shmem_team_split_strided(evens, 1, 2, half / 2, NULL, 0, &odds_of_evens), 0);
        if (odds_of_evens != SHMEM_TEAM_INVALID) {
            check_members(odds_of_evens, 2, 4, half / 2, __LINE__);
            CHECK_EQ(shmem_team_translate_pe(odds_of_evens, 0, evens), 1);
            check_reduce(odds_of_evens, 11, __LINE__);
        }
        shmem_team_destroy(odds_of_evens);
    }
    /* Rows of xr PEs and columns. */
    CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, NULL, 0, &x, NULL, 0, &y), 0);
    check_members(x, me / xr * xr, 1, npes - me / xr * xr < xr ? npes - me / xr * xr : xr, __LINE__);
    check_members(y, me % xr, xr, (npes - me % xr + xr - 1) / xr, __LINE__);
    CHECK_EQ(shmem_team_translate_pe(x, shmem_team_my_pe(x), y), shmem_team_my_pe(y));
    /* Overlapping teams, in the same order on every PE, then the world. */
    for (i = 0; i < 200; i++) {
        if (evens != SHMEM_TEAM_INVALID) CHECK_EQ(shmem_team_sync(evens), 0);
        CHECK_EQ(shmem_team_sync(x), 0);
        check_reduce(y, (uint64_t)i, __LINE__);
        if (i % 50 == 0) shmem_barrier_all();
    }
    shmem_team_destroy(x);
    shmem_team_destroy(y);
    shmem_team_destroy(evens);
    shmem_team_destroy(SHMEM_TEAM_WORLD); /* no effect */
    check_bad_splits();
    check_world_and_shared();
}

/* Two disjoint halves all-reduce at once, a different number of times,
   each checking its own values: a message of one counted in the other
   would break a maximum or a round.  Then rows and columns in turn. */
void scenario_teams_concurrent(void)
{
    shmem_team_t half, x, y;
    int lower = me < npes / 2, i, rounds = lower ? 3000 : 1000;
    CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, npes / 2, NULL, 0, &half, NULL, 0, &y), 0);
    shmem_team_destroy(y);
    shmem_barrier_all();
    for (i = 0; i < rounds; i++) check_reduce(half, (uint64_t)i * 2 + (uint64_t)lower, __LINE__);
    printf("PE %d of %d: %d all-reduces in team %d done\n", me, npes, rounds, lower ? 0 : 1);
    shmem_barrier_all();
    CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y), 0);
    for (i = 0; i < 500; i++) {
        check_reduce(x, (uint64_t)i, __LINE__);
        check_reduce(y, (uint64_t)i + 1000, __LINE__);
        check_reduce(half, (uint64_t)i + 2000, __LINE__);
    }
    shmem_team_destroy(x);
    shmem_team_destroy(y);
    shmem_team_destroy(half);
}

/* World PEs 1 .. npes - 1 make a team (SHMEM_TEAM_SHARED instead with
   SHMALLOC_TEST_SKIP_SHARED=1); its last PE sleeps instead of syncing,
   and the others' team barrier times out naming it.  The rest wait in
   the world's barrier. */
void scenario_team_skip(void)
{
    shmem_team_t t = SHMEM_TEAM_SHARED;
    const char *shared = getenv("SHMALLOC_TEST_SKIP_SHARED");
    if (!shared || strcmp(shared, "1") != 0)
        CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, NULL, 0, &t), 0);
    fflush(stdout);
    if (me == npes - 1) sleep(20);
    else if (t != SHMEM_TEAM_INVALID) {
        shmem_team_sync(t);
        if (shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes - 1, t) >= 0)
            fail(__LINE__, "PE %d came back from the team barrier that PE %d skipped", me, npes - 1);
    }
    shmem_barrier_all();
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1 when v is the same on every member of t. */
static int same_in_team(shmem_team_t t, uint64_t v)
{
    uint64_t both[2] = {v, ~v};
    if (shmalloc_pmix_ofi_team_reduce_max(t, both, 2) != 0) return 0;
    return both[0] == v && both[1] == ~v;
}

/* Collective over t: its space's malloc and free pairs, offsets checked
   symmetric across the team every 100th. */
static double space_pairs(shmalloc_heap *s, shmem_team_t t, int pairs)
{
    double start = seconds_now();
    long err = 1;
    int i;
    for (i = 0; i < pairs; i++) {
        char *p = (char *)shmalloc_heap_malloc(s, 64 + (size_t)(i % 7) * 96, &err);
        if (!p || err != SHMEM_MALLOC_OK) {
            fail(__LINE__, "space malloc %d failed (err %ld)", i, err);
            return 0;
        }
        if (i % 100 == 0 && !same_in_team(t, (uint64_t)(p - (char *)shmalloc_heap_base(s))))
            fail(__LINE__, "block %d's offset in the space differs across the team", i);
        shmalloc_heap_free(s, p, &err);
    }
    return (seconds_now() - start) / pairs;
}

/* A heap over each team of SHMALLOC_TEST_TEAM_PES PEs (half the world
   when unset) through the contract's team member: the first team makes
   SHMALLOC_TEST_PAIRS (2000) malloc and free pairs while the other PEs
   sleep SHMALLOC_TEST_SLEEP (2) s, so it finishes first, never waiting
   for them; then the others make theirs.  Different sizes among a
   half fail on every member; a live block keeps the space; the world
   heap's pair is timed after, beside the space's. */
void scenario_team_heaps(void)
{
    shmem_team_t half, y;
    size_t bytes = shmalloc_heap_bytes((size_t)1 << 20);
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const char *pes = getenv("SHMALLOC_TEST_TEAM_PES"), *many = getenv("SHMALLOC_TEST_PAIRS");
    const char *sleep_s = getenv("SHMALLOC_TEST_SLEEP");
    int x = pes ? atoi(pes) : npes / 2, lower = me < x, size, pairs = many ? atoi(many) : 2000;
    unsigned nap = sleep_s ? (unsigned)atoi(sleep_s) : 2;
    double pair = 0, took, world_pair, start;
    shmalloc_heap *s;
    char *live;
    long err = 1;
    int i;
    CHECK(mem != MAP_FAILED);
    CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, x, NULL, 0, &half, NULL, 0, &y), 0);
    shmem_team_destroy(y);
    size = shmem_team_n_pes(half);
    s = shmalloc_space_create(shmalloc_current(), half, mem, bytes, NULL, &err);
    if (!s || err != SHMEM_MALLOC_OK) {
        fail(__LINE__, "shmalloc_space_create over the team failed (err %ld)", err);
        return;
    }
    CHECK(shmalloc_space_team(s) == half);
    start = seconds_now();
    if (lower) pair = space_pairs(s, half, pairs);
    else sleep(nap);
    took = seconds_now() - start;
    if (lower) printf("PE %d of %d: %d space pairs in %.3f s while the other PEs slept %u s\n", me, npes, pairs, took,
                      nap);
    if (!lower) pair = space_pairs(s, half, pairs);
    if (size > 1) { /* members 0 and 1 are of different parity */
        CHECK(shmalloc_heap_malloc(s, me % 2 ? 128 : 256, &err) == NULL);
        CHECK_EQ(err, SHMEM_MALLOC_SYMMSIZE_FAILED);
    }
    live = (char *)shmalloc_heap_malloc(s, 1000, &err);
    CHECK(live != NULL && shmalloc_heap_of(shmalloc_current(), live) == s);
    CHECK_EQ(shmalloc_space_destroy(s, 0), SHMEMX_MALLOC_SPACE_BUSY);
    CHECK(shmalloc_heap_check(s, -1) == 0);
    shmalloc_heap_free(s, live, &err);
    if (shmalloc_space_destroy(s, 0) != 0) fail(__LINE__, "the space's destroy failed (err %ld)", malloc_error);
    else munmap(mem, bytes); /* else the space is still in it */
    shmem_team_destroy(half);
    shmem_barrier_all();
    start = seconds_now();
    for (i = 0; i < 2000; i++) shmem_free(shmem_malloc(64 + (size_t)(i % 7) * 96));
    world_pair = (seconds_now() - start) / 2000;
    printf("PE %d of %d: malloc+free pair: %.2f us in a space of %d PEs, %.2f us in the world heap\n", me, npes,
           pair * 1e6, size, world_pair * 1e6);
}

/* World PE of member i of t. */
static int world_of(shmem_team_t t, int i) { return shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD); }

/* Puts n bytes of this PE's pattern into the next member's copy of p, then
   checks what the previous member put here and gets the next member's
   copy back. */
static void ring_in_space(shmem_team_t t, unsigned char *p, size_t n, uint32_t tag)
{
    int size = shmem_team_n_pes(t), mine = shmem_team_my_pe(t);
    int next = world_of(t, (mine + 1) % size), prev = world_of(t, (mine + size - 1) % size);
    unsigned char *mine_buf = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
    if (!mine_buf || !back) {
        fail(__LINE__, "out of memory");
        return;
    }
    fill(mine_buf, me, tag, 0, n);
    shmem_putmem(p, mine_buf, n, next);
    shmem_quiet();
    CHECK_EQ(shmem_team_sync(t), 0);
    CHECK_PATTERN(p, prev, tag, 0, n);
    shmem_getmem(back, p, n, next);
    CHECK_PATTERN(back, me, tag, 0, n);
    CHECK_EQ(shmem_team_sync(t), 0); /* before the next ring writes p again */
    free(mine_buf);
    free(back);
}

/* The even and the odd PEs each make a space (64 KiB, growing to 4 MiB)
   at once: blocks found by address, offsets symmetric in the team, puts
   and gets around each team in the first region and in one grown into,
   shmem_ptr and shmem_addr_accessible for members and others, then
   destroys that refuse live blocks; a space whose team is destroyed
   first fails its calls and is destroyed alone. */
void scenario_spaces(void)
{
    shmemx_space_config_t config;
    shmem_team_t t, row;
    shmemx_space_t s;
    unsigned char *small, *big;
    int direct = expect_direct(), q, rc;
    memset(&config, 0, sizeof config);
    config.size = 64 << 10;
    config.max = 4 << 20;
    CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &t), 0); /* columns: even, odd */
    shmem_team_destroy(row);
    if (me % 2) { /* the odd PEs split again, so the two teams' tags differ */
        shmem_team_t again;
        CHECK_EQ(shmem_team_split_strided(t, 0, 1, shmem_team_n_pes(t), NULL, 0, &again), 0);
        shmem_team_destroy(t);
        t = again;
    }
    rc = shmemx_space_create(t, &config, &s);
    if (rc != 0 || !s) {
        fail(__LINE__, "shmemx_space_create failed (%d)", rc);
        return;
    }
    small = (unsigned char *)shmemx_space_malloc(s, 4096);
    CHECK(small != NULL && shmemx_space_of(small) == s && shmalloc_heap_of(shmalloc_current(), small) == s);
    CHECK(same_in_team(t, (uint64_t)(small - (unsigned char *)shmalloc_heap_base(s))));
    ring_in_space(t, small, 4096, 1);
    big = (unsigned char *)shmemx_space_malloc(s, 1 << 20); /* past the first 64 KiB: the space grows */
    CHECK(big != NULL && shmemx_space_of(big) == s);
    if (big) ring_in_space(t, big, 1 << 20, 2);
    for (q = 0; q < npes; q++) {
        int member = q % 2 == me % 2;
        CHECK_EQ(shmem_addr_accessible(small, q), member);
        if (!member) CHECK(shmem_ptr(small, q) == NULL);
        else if (direct >= 0) CHECK_EQ(shmem_ptr(small, q) != NULL, q == me || direct);
    }
    CHECK_EQ(shmemx_space_destroy(s, 0), SHMEMX_MALLOC_SPACE_BUSY);
    shmem_free(small);
    shmem_free(big);
    CHECK(shmalloc_heap_check(s, -1) == 0);
    CHECK_EQ(shmemx_space_destroy(s, 0), 0);
    /* A space whose team goes first fails its calls, and its destroy then
       acts on this PE alone. */
    CHECK_EQ(shmemx_space_create(t, &config, &s), 0);
    shmem_team_destroy(t);
    if (s) {
        CHECK(shmemx_space_malloc(s, 64) == NULL);
        CHECK_EQ(malloc_error, SHMEMX_MALLOC_TEAM_DESTROYED);
        CHECK_EQ(shmemx_space_destroy(s, 0), 0);
    }
    shmem_barrier_all();
}

/* PE 0 puts into its space at an odd PE, outside its team: the job ends
   with a message naming the space. */
void scenario_space_outsider(void)
{
    shmemx_space_config_t config;
    shmem_team_t t;
    shmemx_space_t s = NULL;
    unsigned char *p;
    memset(&config, 0, sizeof config);
    config.size = 64 << 10;
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &t), 0);
    if (t == SHMEM_TEAM_INVALID) {
        shmem_barrier_all();
        return;
    }
    CHECK_EQ(shmemx_space_create(t, &config, &s), 0);
    p = s ? (unsigned char *)shmemx_space_malloc(s, 64) : NULL;
    fflush(stdout);
    if (p && me == 0) shmem_putmem(p, "x", 1, 1);
    if (me == 0) fail(__LINE__, "a put to PE 1, outside the space's team, returned");
    shmem_barrier_all();
}

/* Two teams of the same PEs 0 and 1, synced in opposite orders: each PE
   waits in a different team's barrier, and both time out naming the team
   and the other PE, instead of hanging or mixing the two. */
void scenario_teams_crossed(void)
{
    shmem_team_t a, b;
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &a), 0);
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &b), 0);
    fflush(stdout);
    if (me < 2) {
        shmem_team_sync(me == 0 ? a : b);
        shmem_team_sync(me == 0 ? b : a);
        fail(__LINE__, "PE %d passed two team barriers synced in opposite orders", me);
    }
    shmem_barrier_all();
}

/* The same with a space on each team: each PE allocates in them in
   opposite orders, and the timeout names the space whose call waits. */
void scenario_spaces_crossed(void)
{
    shmem_team_t a, b;
    shmemx_space_t sa = NULL, sb = NULL;
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &a), 0);
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &b), 0);
    if (me < 2) {
        CHECK_EQ(shmemx_space_create(a, NULL, &sa), 0);
        CHECK_EQ(shmemx_space_create(b, NULL, &sb), 0);
        printf("PE %d: spaces at %p and %p\n", me, (void *)sa, (void *)sb);
        fflush(stdout);
        shmemx_space_malloc(me == 0 ? sa : sb, 64);
        shmemx_space_malloc(me == 0 ? sb : sa, 64);
        fail(__LINE__, "PE %d passed two spaces' calls made in opposite orders", me);
    }
    shmem_barrier_all();
}

/* A team of every PE (not SHMEM_TEAM_WORLD) makes 100 all-reduces, then
   SHMEM_TEAM_SHARED: what they sent and read, from the transport's
   counters.  With node memory, the team uses its node segments' slots,
   and messages among its node leaders only when on several nodes, and
   SHMEM_TEAM_SHARED the world's node slots; without, messages among all.
   Then 300 all-reduces of SHMEM_TEAM_SHARED and the world interleaved. */
void scenario_team_messages(void)
{
    shmalloc_pmix_ofi_counts a, b;
    shmem_team_t t;
    int i;
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t), 0);
    shmalloc_pmix_ofi_counts_get(&a);
    for (i = 0; i < 100; i++) check_reduce(t, (uint64_t)i, __LINE__);
    shmalloc_pmix_ofi_counts_get(&b);
    printf("PE %d of %d: 100 team all-reduces sent %llu messages and read %llu slots\n", me, npes,
           b.messages - a.messages, b.slot_reads - a.slot_reads);
    shmem_team_destroy(t);
    shmalloc_pmix_ofi_counts_get(&a);
    for (i = 0; i < 100; i++) check_reduce(SHMEM_TEAM_SHARED, (uint64_t)i, __LINE__);
    shmalloc_pmix_ofi_counts_get(&b);
    printf("PE %d of %d: 100 shared all-reduces sent %llu messages and read %llu slots\n", me, npes,
           b.messages - a.messages, b.slot_reads - a.slot_reads);
    for (i = 0; i < 300; i++) check_reduce(i % 3 ? SHMEM_TEAM_SHARED : SHMEM_TEAM_WORLD, (uint64_t)i, __LINE__);
}

/* Teams of odd shapes over nodes (SHMALLOC_TEST_NODE_SIZE): every PE,
   every PE but the last (whose node then holds one member), and PEs 1 ..
   npes - 2 (a member alone on the first node and on the last), each
   all-reducing 2000 times, interleaved, every value checked. */
void scenario_teams_across_nodes(void)
{
    shmem_team_t t[3];
    int i, k;
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t[0]), 0);
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes - 1, NULL, 0, &t[1]), 0);
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 2, NULL, 0, &t[2]), 0);
    for (i = 0; i < 2000; i++)
        for (k = 0; k < 3; k++)
            if (t[k] != SHMEM_TEAM_INVALID) check_reduce(t[k], (uint64_t)i * 3 + (uint64_t)k, __LINE__);
    printf("PE %d of %d: 2000 all-reduces in each of its teams done\n", me, npes);
    for (k = 0; k < 3; k++) shmem_team_destroy(t[k]);
}
