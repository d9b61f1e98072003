/* Spaces in the header (">> spaces"): heaps over a transport's team,
   joined to their PE's world heap, on one PE whose transport makes a
   one-PE child for a team handle.  A member that passes its own error
   stands for a peer (the imaginary peer of test_support.h).  The
   transports' own teams are tested with them. */
#include "test_support.h"

/* A team handle of the test transport. */
typedef struct team {
    int member;  /* this PE is in it */
    int peer;    /* the child's all-reduce folds in the imaginary peer */
    int made, done; /* children made and released */
} team;

/* The child's rounds, counted with the world's (syncs()). */
static int t_barrier(void *user)
{
    (void)user;
    cnt.barriers++;
    return 0;
}
static int t_allreduce(void *user, uint64_t *values, int count)
{
    (void)user, (void)values, (void)count;
    cnt.allreduces++;
    return 0;
}

static int t_team(void *user, const void *handle, shmalloc_transport *child)
{
    team *t = (team *)handle;
    (void)user;
    if (!t || !t->member) return 1;
    child->user = t;
    child->pe = 0;
    child->npes = t->peer ? 2 : 1;
    child->barrier = t_barrier;
    child->allreduce_max = t->peer ? peer_allreduce : t_allreduce;
    t->made++;
    return 0;
}
static void t_team_done(void *child_user) { ((team *)child_user)->done++; }

/* A world heap (1 MiB, current) whose transport makes teams. */
static shmalloc_heap *team_world(void)
{
    shmalloc_transport tp = counting_transport(1);
    tp.team = t_team;
    tp.team_done = t_team_done;
    peer_active = 0;
    return make_heap(MIB, &tp);
}

static shmalloc_heap *space_over(shmalloc_heap *world, team *t, size_t nominal, int debug)
{
    shmalloc_heap_config config = {SIZE_MAX, 0, NULL, SHMALLOC_METADATA_INLINE, NULL};
    size_t bytes = shmalloc_heap_bytes(nominal);
    long err = 1;
    shmalloc_heap *s;
    config.debug = debug;
    s = shmalloc_space_create(world, t, map_aligned(bytes, 64 * KIB), bytes, &config, &err);
    cr_assert(s != NULL && err == SHMEM_MALLOC_OK, "space create failed: %ld", err);
    return s;
}

static size_t used_blocks(shmalloc_heap *h)
{
    shmalloc_info info;
    cr_assert_eq(shmalloc_heap_info(h, &info), 0);
    return info.used_blocks;
}

Test(spaces, a_transport_without_team_gives_no_teams_and_names_the_member)
{
    team t = {1, 0, 0, 0};
    size_t bytes = shmalloc_heap_bytes(64 * KIB);
    long err = 0;
    shmalloc_heap *world = make_heap(MIB, NULL);
    capture_start();
    cr_assert_null(shmalloc_space_create(world, &t, map_aligned(bytes, 64 * KIB), bytes, NULL, &err));
    cr_assert_eq(err, SHMEMX_MALLOC_NO_TEAMS);
    assert_said(SPACE_NO_TEAMS, 0, "shmemx_space_create");
    assert_heap_ok();
}

Test(spaces, a_pe_outside_the_team_gets_not_member_and_the_team_no_child)
{
    team t = {0, 0, 0, 0};
    size_t bytes = shmalloc_heap_bytes(64 * KIB);
    long err = 0;
    shmalloc_heap *world = team_world();
    capture_start();
    cr_assert_null(shmalloc_space_create(world, &t, map_aligned(bytes, 64 * KIB), bytes, NULL, &err));
    cr_assert_eq(err, SHMEMX_MALLOC_NOT_MEMBER);
    assert_said(SPACE_NOT_MEMBER, 0, "shmemx_space_create");
    cr_assert_eq(t.made, 0);
    assert_heap_ok();
}

Test(spaces, shmem_free_and_realloc_find_the_space_of_their_block)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *s = space_over(world, &t, 256 * KIB, 0);
    char *w = shmem_malloc(64), *p = shmemx_space_malloc(s, 100);
    cr_assert(p && w && shmalloc_heap_contains(s, p) && !shmalloc_heap_contains(world, p));
    cr_assert_eq(shmemx_space_of(p), s);
    cr_assert_eq(shmemx_space_of(p + 99), s);
    cr_assert_eq(shmemx_space_of(w), world);
    memset(p, 7, 100);
    p = shmem_realloc(p, 5000);
    cr_assert(p && shmalloc_heap_contains(s, p) && p[99] == 7 && malloc_error == SHMEM_MALLOC_OK);
    shmem_free(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(used_blocks(s), 0);
    cr_assert_eq(used_blocks(world), 1);
    shmem_free(w);
    cr_assert_eq(shmalloc_space_destroy(s, 0), SHMEM_MALLOC_OK);
    cr_assert_eq(t.done, 1);
    assert_heap_ok();
}

Test(spaces, each_of_40_spaces_is_found_from_its_first_and_last_byte)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *s[40];
    char *p[40];
    int i;
    for (i = 0; i < 40; i++) {
        s[i] = space_over(world, &t, 64 * KIB, 0);
        p[i] = shmemx_space_calloc(s[i], 10, 100);
        cr_assert(p[i] && p[i][999] == 0);
    }
    for (i = 0; i < 40; i++) {
        cr_assert_eq(shmalloc_heap_of(world, p[i]), s[i]);
        cr_assert_eq(shmalloc_heap_of(world, p[i] + 999), s[i]);
        cr_assert_eq(shmalloc_heap_of(s[i], p[i]), s[i], "a space finds through its world");
        cr_assert_eq(shmalloc_space_team(s[i]), &t);
    }
    cr_assert_null(shmalloc_heap_of(world, &t), "an address in no heap");
    cr_assert_eq(shmalloc_check(0), 0, "the world and its 40 spaces");
    for (i = 0; i < 40; i += 2) cr_assert_eq(shmalloc_space_destroy(s[i], SHMALLOC_SPACE_FREE_LIVE), 0);
    for (i = 0; i < 40; i++) cr_assert_eq(shmalloc_heap_of(world, p[i]), i % 2 ? s[i] : NULL);
    for (i = 1; i < 40; i += 2) shmem_free(p[i]);
    for (i = 1; i < 40; i += 2) cr_assert_eq(shmalloc_space_destroy(s[i], 0), 0);
    cr_assert_eq(t.made, 40);
    cr_assert_eq(t.done, 40);
    assert_heap_ok();
}

Test(spaces, destroy_with_live_blocks_is_refused_and_changes_nothing)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *s = space_over(world, &t, 64 * KIB, 0);
    char *p = shmemx_space_malloc(s, 100);
    cr_assert(p);
    memset(p, 3, 100);
    capture_start();
    cr_assert_eq(shmalloc_space_destroy(s, 0), SHMEMX_MALLOC_SPACE_BUSY);
    assert_said(SPACE_BUSY, 0, (void *)s, (size_t)1, "");
    cr_assert_eq(t.done, 0);
    cr_assert_eq(shmemx_space_of(p), s);
    cr_assert(p[99] == 3 && used_blocks(s) == 1);
    cr_assert_eq(shmalloc_heap_check(s, 0), 0);
    cr_assert_eq(shmalloc_space_destroy(s, SHMALLOC_SPACE_FREE_LIVE), 0);
    cr_assert_null(shmemx_space_of(p));
    cr_assert_eq(t.done, 1);
    assert_heap_ok();
}

Test(spaces, a_peers_live_blocks_refuse_the_destroy_here_too)
{
    team t = {1, 1, 0, 0};
    shmalloc_heap *world = team_world(), *s = space_over(world, &t, 64 * KIB, 0);
    peer_fails(0, SHMEMX_MALLOC_SPACE_BUSY);
    peer_values[0] = peer_values[1] = 0; /* a destroy names no size */
    cr_assert_eq(shmalloc_space_destroy(s, 0), SHMEMX_MALLOC_SPACE_BUSY);
    cr_assert_eq(t.done, 0);
    peer_active = 0;
    cr_assert_eq(shmalloc_space_destroy(s, 0), 0);
    assert_heap_ok();
}

Test(spaces, debug_mode_names_each_live_block_the_flag_frees_and_no_leak)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *s = space_over(world, &t, 64 * KIB, 1);
    cr_assert(shmemx_space_malloc(s, 100) && shmemx_space_malloc(s, 200));
    capture_start();
    cr_assert_eq(shmalloc_space_destroy(s, SHMALLOC_SPACE_FREE_LIVE), 0);
    assert_said(SPACE_FREES_LIVE, 0, (size_t)2, "s");
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAK), 2);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAKS_BEGIN), 0);
    assert_heap_ok();
}

Test(spaces, a_space_whose_team_was_destroyed_refuses_calls_then_goes_alone)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *s = space_over(world, &t, 64 * KIB, 0);
    void *p = shmemx_space_malloc(s, 100);
    int syncs_before;
    shmalloc_space_team_destroyed(world, &t);
    capture_start();
    cr_assert_null(shmemx_space_malloc(s, 100));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_TEAM_DESTROYED);
    assert_said(SPACE_TEAM_GONE, 0, "malloc", (void *)s);
    shmem_free(p);
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_TEAM_DESTROYED);
    syncs_before = syncs();
    cr_assert_eq(shmalloc_space_destroy(s, 0), SHMEMX_MALLOC_SPACE_BUSY, "its live block still counts");
    cr_assert_eq(shmalloc_space_destroy(s, SHMALLOC_SPACE_FREE_LIVE), 0);
    cr_assert_eq(syncs(), syncs_before, "no round with a team that is gone");
    cr_assert_eq(t.done, 1);
    assert_heap_ok();
}

Test(spaces, realloc_with_another_spaces_block_is_named_and_refused)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *a = space_over(world, &t, 64 * KIB, 0), *b = space_over(world, &t, 64 * KIB, 0);
    char *p = shmemx_space_malloc(a, 100);
    cr_assert(p);
    p[0] = 9;
    capture_start();
    cr_assert_null(shmemx_space_realloc(b, p, 300));
    cr_assert_eq(malloc_error, SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
    assert_said(SPACE_WRONG_SPACE, 0, "shmemx_space_realloc", (void *)p, (void *)b, "another space");
    cr_assert(p[0] == 9 && used_blocks(a) == 1 && used_blocks(b) == 0);
    cr_assert_eq(shmalloc_space_destroy(a, SHMALLOC_SPACE_FREE_LIVE), 0);
    cr_assert_eq(shmalloc_space_destroy(b, 0), 0);
    assert_heap_ok();
}

Test(spaces, a_space_not_joined_to_the_current_heap_is_not_this_pes)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *s = space_over(world, &t, 64 * KIB, 0);
    make_heap(MIB, NULL); /* another PE's heap, current here */
    capture_start();
    cr_assert_null(shmemx_space_malloc(s, 10));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NOT_MEMBER);
    assert_said(SPACE_NOT_MEMBER, 0, "shmemx_space_malloc");
    cr_assert_eq(used_blocks(s), 0);
    shmalloc_set_current(world);
    cr_assert_eq(shmalloc_space_destroy(s, 0), 0);
    assert_heap_ok();
}

/* A PE outside a team has a NULL space: its calls say so, and change nothing. */
Test(spaces, a_null_space_is_named_and_changes_nothing)
{
    shmalloc_heap *world = team_world();
    capture_start();
    cr_assert_null(shmemx_space_calloc(NULL, 2, 10));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NOT_MEMBER);
    assert_said(SPACE_NULL, 0, "shmemx_space_calloc");
    cr_assert_eq(used_blocks(world), 0);
    assert_heap_ok();
}

Test(spaces, a_deferred_release_drains_in_its_spaces_next_call)
{
    team t = {1, 0, 0, 0};
    shmalloc_heap *world = team_world(), *s = space_over(world, &t, 64 * KIB, 0);
    void *p = shmemx_space_malloc(s, 100), *q;
    shmalloc_info info;
    shmemx_free_deferred(p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    q = shmemx_space_malloc(s, 10);
    cr_assert(q);
    cr_assert_eq(shmalloc_heap_info(s, &info), 0);
    cr_assert_eq(info.drained, 1);
    cr_assert_eq(info.used_blocks, 1);
    shmem_free(q);
    cr_assert_eq(shmalloc_space_destroy(s, 0), 0);
    assert_heap_ok();
}

Test(spaces, a_world_heap_is_not_a_space_to_destroy)
{
    shmalloc_heap *world = team_world();
    capture_start();
    cr_assert_eq(shmalloc_space_destroy(world, 0), SHMEMX_MALLOC_NO_HEAP);
    assert_said(SPACE_NOT_A_SPACE, 0, (void *)world);
    cr_assert(shmem_malloc(10) != NULL, "the world heap goes on");
    assert_heap_ok();
}
