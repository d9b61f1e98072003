/* test_pthreads_spaces.c - spaces on the pthreads transport: a team's
   PEs make one (shmemx_space_create), allocate in it alone (malloc,
   calloc, align, realloc, shmem_free finding the space), grow it, put
   and get among the members by world PE number; PEs outside the team get
   NULL, 0, SHMEMX_MALLOC_NOT_MEMBER, and a put ends the job naming the
   space; destroy refuses live blocks on every member unless told to
   free them; a team destroyed first leaves its space to be destroyed
   alone.  Every PE ends with shmalloc_check passing (world and spaces). */
#include "pthreads_pes.h"
#include "pthreads_child.h"

static int space_pe_counts[] = {1, 2, 3, 4, 8};

#define SPACE_TEST(name)                                                                               \
    ParameterizedTestParameters(spaces, name)                                                         \
    {                                                                                                 \
        return cr_make_param_array(int, space_pe_counts, sizeof space_pe_counts / sizeof space_pe_counts[0]); \
    }                                                                                                 \
    ParameterizedTest(int *npes, spaces, name, .timeout = TEST_TIMEOUT)

#define SPACE_BYTES ((size_t)64 << 10)

/* The even world PEs: each test's team. */
static shmem_team_t evens(void)
{
    shmem_team_t t = SHMEM_TEAM_INVALID;
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (shmem_n_pes() + 1) / 2, NULL, 0, &t), 0);
    return t;
}

/* Memory a PE supplies for its space, written only through its own fill
   and copy (a device's, stood in for by host memory): what they did. */
static __thread struct engine {
    int fills, copies;
    void *mem;
} engine;
static int engine_fill(void *user, void *dst, int byte, size_t n)
{
    if (user != &engine) return -1;
    engine.fills++;
    memset(dst, byte, n);
    return 0;
}
static int engine_copy(void *user, void *dst, const void *src, size_t n)
{
    if (user != &engine) return -1;
    engine.copies++;
    memmove(dst, src, n);
    return 0;
}
/* make_space_with's metadata: separate, in memory from this PE through the engine. */
#define SPACE_OWN_MEMORY 2

static shmemx_space_t make_space_with(shmem_team_t team, size_t size, size_t max, int metadata)
{
    shmemx_space_config_t config;
    shmemx_space_t s = NULL;
    shmalloc_memops ops = {&engine, engine_fill, engine_copy}; /* read by the create */
    memset(&config, 0, sizeof config);
    config.size = size;
    config.max = max;
    config.metadata = metadata;
    if (metadata == SPACE_OWN_MEMORY) {
        memset(&engine, 0, sizeof engine);
        config.metadata = SHMALLOC_METADATA_SEPARATE;
        config.bytes = shmalloc_heap_bytes(max > size ? max : size);
        config.mem = engine.mem = aligned_alloc(4096, (config.bytes + 4095) & ~(size_t)4095);
        config.memops = &ops;
    }
    PE_CHECK_EQ(shmemx_space_create(team, &config, &s), 0);
    PE_CHECK(s != NULL);
    return s;
}

static shmemx_space_t make_space(shmem_team_t team, size_t size, size_t max)
{
    return make_space_with(team, size, max, SHMALLOC_METADATA_INLINE);
}

/* Every PE: the heap checker passes over the world and its spaces, and
   the world heap is empty. */
static void end_checked(int line)
{
    if (shmalloc_check(-1) != 0) pe_failed(line, "shmalloc_check(-1) failed");
    check_heap_empty(line);
}
#define END_CHECKED() end_checked(__LINE__)

/* Collective over the world: p (a member's block of the space, NULL
   elsewhere) is where shmem_ptr finds each member's copy, and nowhere for
   the others. */
static void check_space_symmetric(void *p, int line)
{
    int me = shmem_my_pe(), n = shmem_n_pes(), q;
    shared.ptrs[me] = p;
    shmem_barrier_all();
    for (q = 0; p != NULL && q < n; q++) {
        void *want = q % 2 == 0 ? shared.ptrs[q] : NULL;
        if (shmem_ptr(p, q) != want) pe_failed(line, "shmem_ptr(%p, %d) is %p, not %p", p, q, shmem_ptr(p, q), want);
        if (shmem_addr_accessible(p, q) != (want != NULL))
            pe_failed(line, "shmem_addr_accessible(%p, %d) is %d", p, q, shmem_addr_accessible(p, q));
    }
    shmem_barrier_all();
}
#define CHECK_SPACE_SYMMETRIC(p) check_space_symmetric((p), __LINE__)

/* ---- allocation ------------------------------------------------------------
   arg: the space's metadata, inline or separate (calloc's zeros then go
   through the transport's fill), or SPACE_OWN_MEMORY (through the
   engine's: calloc's zeros and the realloc's move). */
static void pe_allocate(void *arg)
{
    shmem_team_t team = evens();
    shmemx_space_t s = NULL;
    char *a = NULL, *b = NULL, *c = NULL;
    size_t i;
    if (team != SHMEM_TEAM_INVALID) {
        s = make_space_with(team, SPACE_BYTES, 0, *(const int *)arg);
        a = (char *)shmemx_space_malloc(s, 1000);
        b = (char *)shmemx_space_calloc(s, 100, 8);
        c = (char *)shmemx_space_align(s, 4096, 512);
        if (*(const int *)arg == SPACE_OWN_MEMORY) PE_CHECK_EQ(engine.fills, 1);
        PE_CHECK(a != NULL && b != NULL && c != NULL);
        PE_CHECK(shmalloc_heap_contains(s, a) && !shmalloc_heap_contains(shmalloc_current(), a));
        PE_CHECK(shmemx_space_of(a) == s && shmemx_space_of(c) == s);
        for (i = 0; b != NULL && i < 800; i++) PE_CHECK(b[i] == 0);
        PE_CHECK(((uintptr_t)c & 4095u) == 0);
        if (a != NULL) memset(a, 'a', 1000);
        a = (char *)shmemx_space_realloc(s, a, 5000);
        PE_CHECK(a != NULL && shmemx_space_of(a) == s);
        for (i = 0; a != NULL && i < 1000; i++) PE_CHECK(a[i] == 'a');
        if (*(const int *)arg == SPACE_OWN_MEMORY) PE_CHECK_EQ(engine.copies, 1); /* b follows a: a moved */
    }
    CHECK_SPACE_SYMMETRIC(a);
    CHECK_SPACE_SYMMETRIC(c);
    if (s != NULL) {
        shmem_free(a); /* shmem_free finds the space of its pointer */
        shmem_free(b);
        shmem_free(c);
        PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
        PE_CHECK_EQ(shmalloc_check(-1), 0);
        PE_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
        shmem_team_destroy(team);
        free(engine.mem); /* after the destroy, as a runtime frees its device memory */
        engine.mem = NULL;
    }
    END_CHECKED();
}

SPACE_TEST(members_allocate_symmetric_blocks_and_shmem_free_finds_the_space)
{
    static int metadata[] = {SHMALLOC_METADATA_INLINE, SHMALLOC_METADATA_SEPARATE, SPACE_OWN_MEMORY};
    run_pes(*npes, SMALL_HEAP, pe_allocate, &metadata[0]);
    run_pes(*npes, SMALL_HEAP, pe_allocate, &metadata[1]);
    run_pes(*npes, SMALL_HEAP, pe_allocate, &metadata[2]);
}

/* A space of 16 KiB that may grow to 1 MiB takes 256 KiB, then gives it back. */
static void pe_grow(void *arg)
{
    shmem_team_t team = evens();
    shmemx_space_t s;
    char *big = NULL;
    shmalloc_info info;
    (void)arg;
    if (team != SHMEM_TEAM_INVALID) {
        s = make_space(team, 16 << 10, 1 << 20);
        big = (char *)shmemx_space_malloc(s, 256 << 10);
        PE_CHECK(big != NULL);
        PE_CHECK_EQ(shmalloc_heap_info(s, &info), 0);
        PE_CHECK(info.heap_size > (size_t)256 << 10 && info.heap_max >= (size_t)1 << 20);
        if (big != NULL) memset(big, 7, 256 << 10);
    }
    CHECK_SPACE_SYMMETRIC(big);
    if (team != SHMEM_TEAM_INVALID) {
        shmem_free(big);
        PE_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
        shmem_team_destroy(team);
    }
    END_CHECKED();
}

SPACE_TEST(a_space_grows_on_every_member)
{
    run_pes(*npes, SMALL_HEAP, pe_grow, NULL);
}

/* No config: a space of the run's heap size that does not grow. */
static void pe_default_config(void *arg)
{
    shmem_team_t team = evens();
    shmemx_space_t s = NULL;
    shmalloc_info info;
    (void)arg;
    if (team != SHMEM_TEAM_INVALID) {
        PE_CHECK_EQ(shmemx_space_create(team, NULL, &s), 0);
        PE_CHECK_EQ(shmalloc_heap_info(s, &info), 0);
        PE_CHECK(info.heap_size >= SMALL_HEAP && info.heap_max == info.heap_size);
        shmem_free(shmemx_space_malloc(s, SMALL_HEAP / 2));
        PE_CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
        PE_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
        shmem_team_destroy(team);
    }
    END_CHECKED();
}

SPACE_TEST(no_config_makes_a_space_of_the_heap_size)
{
    run_pes(*npes, SMALL_HEAP, pe_default_config, NULL);
}

/* ---- puts and gets --------------------------------------------------------- */
#define RING 3000

static void pe_put_get(void *arg)
{
    shmem_team_t team = evens();
    int t, n, right, left;
    shmemx_space_t s;
    unsigned char *buf, local[RING];
    size_t at;
    (void)arg;
    if (team != SHMEM_TEAM_INVALID) {
        t = shmem_team_my_pe(team);
        n = shmem_team_n_pes(team);
        right = shmem_team_translate_pe(team, (t + 1) % n, SHMEM_TEAM_WORLD);
        left = shmem_team_translate_pe(team, (t + n - 1) % n, SHMEM_TEAM_WORLD);
        s = make_space(team, SPACE_BYTES, 0);
        buf = (unsigned char *)shmemx_space_malloc(s, RING);
        PE_CHECK(buf != NULL);
        fill_pattern(local, RING, (unsigned)shmem_my_pe());
        shmem_team_sync(team);
        shmem_putmem(buf, local, RING, right);
        shmem_team_sync(team);
        at = first_unlike(buf, RING, (unsigned)left);
        if (at != RING) pe_failed(__LINE__, "byte %zu put by PE %d is wrong", at, left);
        memset(local, 0, sizeof local);
        shmem_getmem(local, buf, RING, right);
        at = first_unlike(local, RING, (unsigned)shmem_my_pe()); /* right holds what this PE put */
        if (at != RING) pe_failed(__LINE__, "byte %zu got from PE %d is wrong", at, right);
        shmem_team_sync(team);
        shmem_free(buf);
        PE_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
        shmem_team_destroy(team);
    }
    END_CHECKED();
}

SPACE_TEST(members_put_and_get_by_world_pe_number)
{
    run_pes(*npes, SMALL_HEAP, pe_put_get, NULL);
}

/* Two disjoint teams, each busy in its own space at the same time. */
#define ROUNDS 300

static void pe_two_spaces(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes(), half = n / 2, r;
    shmem_team_t low, high, mine;
    shmemx_space_t s;
    (void)arg;
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, half, NULL, 0, &low), 0);
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, half, 1, n - half, NULL, 0, &high), 0);
    mine = me < half ? low : high;
    s = make_space(mine, SPACE_BYTES, 0);
    for (r = 0; r < ROUNDS; r++) {
        size_t size = (size_t)(me < half ? 64 + r : 3000 - r);
        char *p = (char *)shmemx_space_malloc(s, size);
        PE_CHECK(p != NULL && shmemx_space_of(p) == s);
        shmem_free(p);
    }
    PE_CHECK_EQ(shmalloc_check(-1), 0);
    PE_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
    shmem_team_destroy(mine);
    END_CHECKED();
}

ParameterizedTestParameters(spaces, disjoint_teams_use_their_spaces_at_once)
{
    static int counts[] = {2, 4, 8};
    return cr_make_param_array(int, counts, sizeof counts / sizeof counts[0]);
}

ParameterizedTest(int *npes, spaces, disjoint_teams_use_their_spaces_at_once, .timeout = TEST_TIMEOUT)
{
    run_pes(*npes, SMALL_HEAP, pe_two_spaces, NULL);
}

/* ---- PEs outside the team, and destroy ------------------------------------- */
static shmemx_space_t published_space; /* PE 0's, for the odd PEs to try */

static void pe_outsiders(void *arg)
{
    int me = shmem_my_pe();
    shmem_team_t team = evens();
    shmemx_space_t s = NULL;
    (void)arg;
    if (team != SHMEM_TEAM_INVALID) s = make_space(team, SPACE_BYTES, 0);
    if (me == 0) published_space = s;
    shmem_barrier_all();
    if (team == SHMEM_TEAM_INVALID) {
        shmemx_space_config_t config;
        shmemx_space_t none = published_space; /* overwritten with NULL */
        memset(&config, 0, sizeof config);
        PE_CHECK_EQ(shmemx_space_create(team, &config, &none), SHMEMX_MALLOC_NOT_MEMBER);
        PE_CHECK(none == NULL);
        PE_CHECK(shmemx_space_malloc(published_space, 64) == NULL);
        PE_CHECK_EQ(malloc_error, SHMEMX_MALLOC_NOT_MEMBER);
    }
    shmem_barrier_all();
    if (s != NULL) {
        PE_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
        shmem_team_destroy(team);
    }
    END_CHECKED();
}

Test(spaces, pes_outside_the_team_are_not_members, .timeout = TEST_TIMEOUT)
{
    run_pes(4, SMALL_HEAP, pe_outsiders, NULL);
    cr_assert_eq(out_said(SHMALLOC_MSG_SPACE_NOT_MEMBER), 4u, "%s", out_text[2]); /* 2 PEs, 2 calls */
    assert_said(SPACE_NOT_MEMBER, 1, "shmemx_space_create");
    assert_said(SPACE_NOT_MEMBER, 3, "shmemx_space_malloc");
}

/* PE 0 puts into a space address of world PE 1, outside the team {0, 2}. */
static void pe_put_outside(void *arg)
{
    shmem_team_t team = evens();
    shmemx_space_t s;
    char *p;
    (void)arg;
    if (team == SHMEM_TEAM_INVALID) {
        sleep_seconds(CHILD_BOUND / 2);
        return;
    }
    s = make_space(team, SPACE_BYTES, 0);
    p = (char *)shmemx_space_malloc(s, 64);
    if (shmem_my_pe() == 0) shmem_putmem(p, "x", 1, 1);
    sleep_seconds(CHILD_BOUND / 2);
}

Test(spaces, a_put_to_a_pe_outside_the_team_ends_the_job_naming_the_space, .timeout = TEST_TIMEOUT)
{
    child_result r;
    const char *m;
    run_child(4, "60", pe_put_outside, NULL, &r);
    cr_assert_eq(r.status, 1, "exit status %d; stderr: %s", r.status, r.text);
    cr_assert(r.seconds < CHILD_BOUND / 2, "ended after %.2f s, not at the put", r.seconds);
    cr_assert_eq(count_in(r.text, "[PTHREADS_SPACE_NOT_MEMBER] "), 1, "%s", r.text);
    /* the space's address is the child's: the words around it */
    m = strstr(r.text, "[PTHREADS_SPACE_NOT_MEMBER] shmem_putmem: PE 1 is not in the team of the space at 0x");
    cr_assert(m != NULL, "%s", r.text);
    cr_assert(strstr(m, " (2 PEs, world PEs from 0 by stride 2; calling PE 0)"), "%s", r.text);
}

/* Destroy with a live block: refused on every member, the block intact;
   with SHMALLOC_SPACE_FREE_LIVE it goes. */
static void pe_destroy_busy(void *arg)
{
    shmem_team_t team = evens();
    shmemx_space_t s;
    char *p;
    (void)arg;
    if (team != SHMEM_TEAM_INVALID) {
        s = make_space(team, SPACE_BYTES, 0);
        p = (char *)shmemx_space_malloc(s, 100);
        PE_CHECK(p != NULL);
        if (p != NULL) p[99] = 9;
        PE_CHECK_EQ(shmemx_space_destroy(s, 0), SHMEMX_MALLOC_SPACE_BUSY);
        PE_CHECK(p != NULL && p[99] == 9 && shmemx_space_of(p) == s);
        PE_CHECK_EQ(shmalloc_check(-1), 0);
        PE_CHECK_EQ(shmemx_space_destroy(s, SHMALLOC_SPACE_FREE_LIVE), 0);
        PE_CHECK(shmemx_space_of(p) == NULL);
        shmem_team_destroy(team);
    }
    END_CHECKED();
}

SPACE_TEST(destroy_refuses_live_blocks_on_every_member_unless_told_to_free_them)
{
    run_pes(*npes, SMALL_HEAP, pe_destroy_busy, NULL);
    cr_assert_eq(out_said(SHMALLOC_MSG_SPACE_BUSY), (size_t)(*npes + 1) / 2, "%s", out_text[2]);
}

/* The team goes first: the space refuses calls, then is destroyed alone. */
static void pe_team_first(void *arg)
{
    shmem_team_t team = evens();
    shmemx_space_t s;
    (void)arg;
    if (team != SHMEM_TEAM_INVALID) {
        s = make_space(team, SPACE_BYTES, 0);
        shmem_team_destroy(team);
        PE_CHECK(shmemx_space_malloc(s, 64) == NULL);
        PE_CHECK_EQ(malloc_error, SHMEMX_MALLOC_TEAM_DESTROYED);
        PE_CHECK_EQ(shmemx_space_destroy(s, 0), 0);
    }
    END_CHECKED();
}

SPACE_TEST(a_space_whose_team_was_destroyed_refuses_calls_and_is_destroyed_alone)
{
    run_pes(*npes, SMALL_HEAP, pe_team_first, NULL);
    cr_assert_eq(out_said(SHMALLOC_MSG_SPACE_TEAM_GONE), (size_t)(*npes + 1) / 2, "%s", out_text[2]);
}

/* Members return from pe_main leaving their space with a live block: the
   run destroys it on each and ends cleanly; the memory of PE 0, which
   returns first, stays readable by the others until every PE has ended,
   then is unmapped. */
static void pe_leaves_a_space(void *arg)
{
    shmem_team_t team = evens();
    shmemx_space_t s;
    int *p, got = 0;
    (void)arg;
    if (team == SHMEM_TEAM_INVALID) return;
    s = make_space(team, SPACE_BYTES, 0);
    p = (int *)shmemx_space_malloc(s, 100);
    PE_CHECK(p != NULL);
    if (p == NULL) return;
    *p = 1000 + shmem_my_pe();
    shared.ptrs[shmem_my_pe()] = shmalloc_heap_base(s);
    shmem_team_sync(team);
    if (shmem_my_pe() == 0) return;
    sleep_seconds(0.05);
    shmem_getmem(&got, p, sizeof got, 0);
    PE_CHECK_EQ(got, 1000);
}

/* 1 when a mapping of this process holds p (/proc/self/maps). */
static int is_mapped(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long long lo, hi;
    char line[512];
    int found = 0;
    cr_assert(f != NULL);
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "%llx-%llx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi;
    fclose(f);
    return found;
}

SPACE_TEST(a_space_left_at_the_end_is_destroyed_and_unmapped)
{
    int q;
    run_pes(*npes, SMALL_HEAP, pe_leaves_a_space, NULL);
    for (q = 0; q < *npes; q += 2) {
        cr_assert(shared.ptrs[q] != NULL);
        cr_assert(!is_mapped(shared.ptrs[q]), "PE %d's space at %p is mapped", q, shared.ptrs[q]);
    }
}
