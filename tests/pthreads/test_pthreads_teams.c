/* test_pthreads_teams.c - teams on the pthreads transport
   (transports/shmalloc_teams.h): splits, numbers, translation, config and
   destroy at 1, 2, 3, 4 and 8 PEs; bad splits fail on every member of the
   parent with one message; disjoint teams synchronise at once and
   overlapping ones in the same order, their all-reduce values checked.
   The team's all-reduce is the contract's, reached through the
   transport's own header as a space's heap reaches it. */
#include "pthreads_pes.h"
#include "transports/pthreads/pthreads.h"

static int team_pe_counts[] = {1, 2, 3, 4, 8};

#define TEAM_TEST(name)                                                                              \
    ParameterizedTestParameters(teams, name)                                                        \
    {                                                                                               \
        return cr_make_param_array(int, team_pe_counts, sizeof team_pe_counts / sizeof team_pe_counts[0]); \
    }                                                                                               \
    ParameterizedTest(int *npes, teams, name, .timeout = TEST_TIMEOUT)

/* The world and SHARED (one process: every PE) as the PE knows itself. */
static void pe_world_handles(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_config_t config = {-7};
    (void)arg;
    PE_CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_WORLD), me);
    PE_CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_WORLD), n);
    PE_CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_SHARED), me);
    PE_CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_SHARED), n);
    PE_CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, n - 1, SHMEM_TEAM_SHARED), n - 1);
    PE_CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
    PE_CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
    PE_CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0);
    PE_CHECK_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &config), 0);
    PE_CHECK_EQ(config.num_contexts, 0);
    PE_CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &config) != 0);
    PE_CHECK_EQ(shmem_team_sync(SHMEM_TEAM_WORLD), 0);
    PE_CHECK_EQ(shmem_team_sync(SHMEM_TEAM_SHARED), 0);
    shmem_team_destroy(SHMEM_TEAM_WORLD); /* no effect */
    shmem_team_destroy(SHMEM_TEAM_INVALID);
    PE_CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_WORLD), n);
    shmem_barrier_all();
}

TEAM_TEST(world_and_shared_are_every_pe)
{
    run_pes(*npes, SMALL_HEAP, pe_world_handles, NULL);
}

/* The even PEs of the world, then the odd ones, each with its config. */
static void pe_split_strided(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes(), half = (n + 1) / 2;
    shmem_team_t evens, odds;
    shmem_team_config_t config = {3}, got = {-1};
    (void)arg;
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, half, &config, SHMEM_TEAM_NUM_CONTEXTS, &evens), 0);
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odds), n > 1 ? 0 : -1);
    if (me % 2 == 0) {
        PE_CHECK(evens != SHMEM_TEAM_INVALID && odds == SHMEM_TEAM_INVALID);
        PE_CHECK_EQ(shmem_team_my_pe(evens), me / 2);
        PE_CHECK_EQ(shmem_team_n_pes(evens), half);
        PE_CHECK_EQ(shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
        PE_CHECK_EQ(got.num_contexts, 3);
        PE_CHECK_EQ(shmem_team_translate_pe(evens, half - 1, SHMEM_TEAM_WORLD), 2 * (half - 1));
        PE_CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, evens), me / 2);
        PE_CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, evens), -1);
        PE_CHECK_EQ(shmem_team_translate_pe(evens, half, SHMEM_TEAM_WORLD), -1);
        PE_CHECK_EQ(shmem_team_translate_pe(evens, -1, SHMEM_TEAM_WORLD), -1);
        PE_CHECK_EQ(shmem_team_sync(evens), 0);
        shmem_team_destroy(evens);
    } else {
        PE_CHECK(odds != SHMEM_TEAM_INVALID && evens == SHMEM_TEAM_INVALID);
        PE_CHECK_EQ(shmem_team_my_pe(odds), me / 2);
        PE_CHECK_EQ(shmem_team_n_pes(odds), n / 2);
        PE_CHECK_EQ(shmem_team_get_config(odds, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
        PE_CHECK_EQ(got.num_contexts, 0);
        PE_CHECK_EQ(shmem_team_translate_pe(odds, 0, SHMEM_TEAM_WORLD), 1);
        PE_CHECK_EQ(shmem_team_sync(odds), 0);
        shmem_team_destroy(odds);
    }
    PE_CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
    shmem_barrier_all();
}

TEAM_TEST(split_strided_numbers_the_members_and_leaves_the_rest_out)
{
    run_pes(*npes, SMALL_HEAP, pe_split_strided, NULL);
    /* one PE has no odd PEs: that split, of size 0, is refused once */
    cr_assert_eq(out_said_id(PTHREADS_TEAM_BAD_SPLIT), *npes == 1 ? 1u : 0u, "%s", out_text[2]);
}

/* A split of a split: numbers are the parent's, the members the world's. */
static void pe_split_of_a_split(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t upper, inner = SHMEM_TEAM_INVALID;
    (void)arg;
    /* the world without PE 0, then every second of those from its PE 1 */
    if (n < 3) return;
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &upper), 0);
    if (me >= 1) {
        PE_CHECK_EQ(shmem_team_split_strided(upper, 1, 2, (n - 1) / 2, NULL, 0, &inner), 0);
        if (me % 2 == 0) {
            PE_CHECK_EQ(shmem_team_my_pe(inner), me / 2 - 1);
            PE_CHECK_EQ(shmem_team_translate_pe(inner, 0, SHMEM_TEAM_WORLD), 2);
            PE_CHECK_EQ(shmem_team_translate_pe(inner, shmem_team_my_pe(inner), upper), me - 1);
            PE_CHECK_EQ(shmem_team_sync(inner), 0);
            shmem_team_destroy(inner);
        } else {
            PE_CHECK(inner == SHMEM_TEAM_INVALID);
        }
        shmem_team_destroy(upper);
    } else {
        PE_CHECK(upper == SHMEM_TEAM_INVALID);
        /* a PE outside the parent has no collective to join */
        PE_CHECK(shmem_team_split_strided(upper, 0, 1, 1, NULL, 0, &inner) != 0);
        PE_CHECK(inner == SHMEM_TEAM_INVALID);
    }
    shmem_barrier_all();
}

TEAM_TEST(a_split_of_a_split_counts_in_its_parent)
{
    run_pes(*npes, SMALL_HEAP, pe_split_of_a_split, NULL);
}

/* Rows of xrange PEs and their columns; an xrange past the team is one row. */
static void pe_split_2d(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes(), xrange = *(const int *)arg, x, y, cols;
    shmem_team_t row, col;
    shmem_team_config_t config = {5}, got = {0};
    cols = xrange < n ? xrange : n;
    x = me % cols;
    y = me / cols;
    PE_CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, xrange, &config, SHMEM_TEAM_NUM_CONTEXTS, &row, NULL, 0,
                                    &col), 0);
    PE_CHECK_EQ(shmem_team_my_pe(row), x);
    PE_CHECK_EQ(shmem_team_n_pes(row), n - y * cols < cols ? n - y * cols : cols);
    PE_CHECK_EQ(shmem_team_my_pe(col), y);
    PE_CHECK_EQ(shmem_team_n_pes(col), (n - 1 - x) / cols + 1);
    PE_CHECK_EQ(shmem_team_translate_pe(row, 0, SHMEM_TEAM_WORLD), y * cols);
    PE_CHECK_EQ(shmem_team_translate_pe(col, 0, SHMEM_TEAM_WORLD), x);
    PE_CHECK_EQ(shmem_team_translate_pe(row, x, col), y);
    PE_CHECK_EQ(shmem_team_get_config(row, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    PE_CHECK_EQ(got.num_contexts, 5);
    PE_CHECK_EQ(shmem_team_get_config(col, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    PE_CHECK_EQ(got.num_contexts, 0);
    PE_CHECK_EQ(shmem_team_sync(row), 0);
    PE_CHECK_EQ(shmem_team_sync(col), 0);
    shmem_team_destroy(row);
    shmem_team_destroy(col);
    shmem_barrier_all();
}

TEAM_TEST(split_2d_makes_rows_and_columns)
{
    static int xranges[] = {1, 2, 3, 100};
    size_t i;
    for (i = 0; i < sizeof xranges / sizeof xranges[0]; i++)
        run_pes(*npes, SMALL_HEAP, pe_split_2d, &xranges[i]);
}

/* Members destroy their handles one by one: a destroyed handle is
   invalid while the team lives on for the members that kept theirs. */
static void pe_destroy(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t all;
    (void)arg;
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &all), 0);
    if (me != 0) shmem_team_destroy(all);
    shmem_barrier_all();
    if (me != 0) {
        PE_CHECK_EQ(shmem_team_my_pe(all), -1);
        PE_CHECK_EQ(shmem_team_n_pes(all), -1);
        PE_CHECK(shmem_team_sync(all) != 0);
        PE_CHECK_EQ(shmem_team_translate_pe(all, 0, SHMEM_TEAM_WORLD), -1);
    } else {
        PE_CHECK_EQ(shmem_team_my_pe(all), 0);
        PE_CHECK_EQ(shmem_team_n_pes(all), n);
    }
    shmem_barrier_all();
    if (me == 0) shmem_team_destroy(all);
    /* a second team over the same PEs is a new one */
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &all), 0);
    PE_CHECK_EQ(shmem_team_sync(all), 0);
    shmem_team_destroy(all);
    shmem_barrier_all();
}

TEAM_TEST(a_destroyed_handle_is_invalid_and_the_team_lives_for_the_others)
{
    run_pes(*npes, SMALL_HEAP, pe_destroy, NULL);
}

/* ---- bad splits ------------------------------------------------------------ */
typedef struct bad_split {
    int start, stride, size; /* in terms of n, the parent's size: added to n when negative */
    int only_last;           /* only the parent's last PE passes these; the others pass a good split */
} bad_split;

static int rel(int v, int n) { return v < 0 ? v + n : v; }

static void pe_bad_split(void *arg)
{
    const bad_split *b = (const bad_split *)arg;
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t t = SHMEM_TEAM_WORLD; /* overwritten with INVALID */
    int rc, use_bad = !b->only_last || me == n - 1;
    rc = use_bad ? shmem_team_split_strided(SHMEM_TEAM_WORLD, rel(b->start, n), b->stride, rel(b->size, n), NULL, 0,
                                            &t)
                 : shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t);
    PE_CHECK(rc != 0);
    PE_CHECK(t == SHMEM_TEAM_INVALID);
    rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, use_bad ? 0 : 1, NULL, 0, &t, NULL, 0, &t);
    PE_CHECK(rc != 0);
    PE_CHECK(t == SHMEM_TEAM_INVALID);
    /* nothing is lost: the world still synchronises and splits */
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t), 0);
    PE_CHECK_EQ(shmem_team_n_pes(t), n);
    shmem_team_destroy(t);
    shmem_barrier_all();
}

static bad_split bad_splits[] = {
    {0, 1, 0, 0},    /* size 0 */
    {0, 1, -1 - 1000, 0}, /* negative size */
    {-1000 - 1, 1, 1, 0}, /* start below 0 */
    {0, 1, 1, 0},    /* placeholder: start n, set below */
    {0, 0, 2, 0},    /* stride 0 with 2 PEs */
    {0, -1, 2, 0},   /* negative stride */
    {0, 1, 1000, 0}, /* past the end */
    {0, 1, 1000, 1}, /* past the end, on one PE only */
};

static void bad_split_cases(int n, void (*each)(int n, bad_split *b))
{
    size_t i;
    for (i = 0; i < sizeof bad_splits / sizeof bad_splits[0]; i++) {
        bad_split b = bad_splits[i];
        if (i == 3) b.start = n;
        each(n, &b);
    }
}

static void run_bad_split(int n, bad_split *b)
{
    run_pes(n, SMALL_HEAP, pe_bad_split, b);
    /* one message for the strided split, one for the 2d (xrange 0) */
    cr_assert_eq(out_said_id(PTHREADS_TEAM_BAD_SPLIT), 2u, "start %d stride %d size %d:\n%s", b->start,
                 b->stride, b->size, out_text[2]);
}

TEAM_TEST(a_bad_split_fails_on_every_parent_member_with_one_message)
{
    bad_split_cases(*npes, run_bad_split);
}

Test(teams, a_bad_split_names_its_arguments_and_the_cause, .timeout = TEST_TIMEOUT)
{
    bad_split b = {1, 2, 3, 0};
    run_pes(4, SMALL_HEAP, pe_bad_split, &b);
    assert_said(PTHREADS_TEAM_BAD_SPLIT, 0, "shmem_team_split_strided(start 1, stride 2, size 3)",
                "the last PE, start + (size - 1) * stride, is not a PE of the parent team", 4, "s", 0, 1);
    assert_said(PTHREADS_TEAM_BAD_SPLIT, 0, "shmem_team_split_2d(xrange 0)", "xrange must be 1 or more", 4, "s", 0, 1);
}

/* ---- teams synchronising at once ------------------------------------------
   Each round, a member all-reduces (by maximum) a value that names the team
   and the round, and (by AND) a mask without its own bit: a barrier that
   let in a PE of another team, or of another round, gives another result. */
#define ROUNDS 2000

static void team_round(shmem_team_t team, int tag, int round)
{
    struct shmalloc_team *h = team; /* the calling PE's own handle */
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    uint64_t max[2], and[1];
    max[0] = (uint64_t)round * 4096u + (uint64_t)tag * 64u + (uint64_t)me;
    max[1] = (uint64_t)tag;
    and[0] = ~((uint64_t)1 << me);
    shm__team_sync(h, max, 2, SHM__REDUCE_MAX, NULL);
    shm__team_sync(h, and, 1, SHM__REDUCE_AND, NULL);
    if (max[0] != (uint64_t)round * 4096u + (uint64_t)tag * 64u + (uint64_t)(n - 1) || max[1] != (uint64_t)tag)
        pe_failed(__LINE__, "team %d round %d: the maximum is %llu, %llu", tag, round, (unsigned long long)max[0],
                  (unsigned long long)max[1]);
    if (and[0] != ~(((uint64_t)1 << n) - 1u))
        pe_failed(__LINE__, "team %d round %d: the AND is %llx", tag, round, (unsigned long long)and[0]);
    if (round % 97 == 0 && shmem_team_sync(team) != 0) pe_failed(__LINE__, "team %d: sync failed", tag);
}

/* The low half and the high half of the world, each on its own. */
static void pe_disjoint(void *arg)
{
    int me = shmem_my_pe(), n = shmem_n_pes(), half = n / 2, r;
    shmem_team_t low, high;
    (void)arg;
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, half, NULL, 0, &low), 0);
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, half, 1, n - half, NULL, 0, &high), 0);
    for (r = 1; r <= ROUNDS; r++) team_round(me < half ? low : high, me < half ? 1 : 2, r);
    shmem_team_destroy(me < half ? low : high);
    shmem_barrier_all();
}

ParameterizedTestParameters(teams, disjoint_teams_sync_at_once_without_crossing)
{
    static int counts[] = {2, 4, 8};
    return cr_make_param_array(int, counts, sizeof counts / sizeof counts[0]);
}

ParameterizedTest(int *npes, teams, disjoint_teams_sync_at_once_without_crossing, .timeout = TEST_TIMEOUT)
{
    run_pes(*npes, SMALL_HEAP, pe_disjoint, NULL);
}

/* A: world PEs 0 .. 3n/4 - 1; B: the even ones.  The PEs in both use A
   then B each round; the others their own team only. */
static void pe_overlapping(void *arg)
{
    int n = shmem_n_pes(), r;
    shmem_team_t a, b;
    (void)arg;
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 3 * n / 4, NULL, 0, &a), 0);
    PE_CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, n / 2, NULL, 0, &b), 0);
    for (r = 1; r <= ROUNDS; r++) {
        if (a != SHMEM_TEAM_INVALID) team_round(a, 1, r);
        if (b != SHMEM_TEAM_INVALID) team_round(b, 2, r);
    }
    shmem_team_destroy(a);
    shmem_team_destroy(b);
    shmem_barrier_all();
}

ParameterizedTestParameters(teams, overlapping_teams_used_in_the_same_order_never_mix)
{
    static int counts[] = {4, 8};
    return cr_make_param_array(int, counts, sizeof counts / sizeof counts[0]);
}

ParameterizedTest(int *npes, teams, overlapping_teams_used_in_the_same_order_never_mix, .timeout = TEST_TIMEOUT)
{
    run_pes(*npes, SMALL_HEAP, pe_overlapping, NULL);
}

/* Teams left undestroyed are freed at the run's end (LeakSanitizer). */
static void pe_leaves_teams(void *arg)
{
    shmem_team_t row, col;
    (void)arg;
    PE_CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &col), 0);
    PE_CHECK_EQ(shmem_team_sync(row), 0);
}

TEAM_TEST(teams_never_destroyed_end_with_the_run)
{
    run_pes(*npes, SMALL_HEAP, pe_leaves_teams, NULL);
}
