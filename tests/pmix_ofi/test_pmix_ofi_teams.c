/* test_pmix_ofi_teams.c - OpenSHMEM teams on the PMIx + libfabric
   transport, PEs as processes: splits, translations and syncs at 2, 3 and
   4 PEs (oversubscribed) over shm and tcp;ofi_rxm, on one node and on
   nodes of 2 PEs (SHMALLOC_TEST_NODE_SIZE), bad splits failing on every
   PE with their messages, disjoint teams all-reducing at once, teams
   across nodes whose messages go between their node leaders only, and a
   team barrier that a member skips timing out with the team and the PE
   named. */
#include "pmix_ofi_launch.h" /* first: it includes test_support.h */

/* Every one of npes PEs printed OK scenario, and no file is left. */
static void assert_passed(const run *r, int npes, const char *scenario)
{
    char ok[64];
    snprintf(ok, sizeof ok, ": OK %s\n", scenario);
    cr_assert_eq(r->status, 0, "exit status %d after %.1f s:\n%s", r->status, r->seconds, tail(r));
    cr_assert_eq(count(r, ": FAIL"), 0, "failures:\n%s", tail(r));
    cr_assert_eq(count(r, ok), npes, "not every PE passed:\n%s", tail(r));
    cr_assert_eq(r->leftovers, 0, "a clean run left %d /dev/shm files", r->leftovers);
}

/* The teams scenario; node_size PEs per node (0: one node).  Five bad
   strided splits and a bad split_2d each say why on every PE, and the
   split with different sizes says so on every PE. */
static void check_teams(const char *provider, int npes, int node_size)
{
    static run r;
    char prov[64], node[64], shared[64];
    const char *env[] = {prov, node, shared, NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(node, sizeof node, "SHMALLOC_TEST_NODE_SIZE=%d", node_size ? node_size : npes);
    snprintf(shared, sizeof shared, "SHMALLOC_TEST_EXPECT_SHARED=%d", node_size ? node_size : npes);
    launch(&r, npes, "teams", env);
    assert_passed(&r, npes, "teams");
    cr_assert_eq(count(&r, "[PMIX_TEAM_BAD_SPLIT] shmalloc: shmem_team_split_strided("), 5 * npes, "%s", tail(&r));
    cr_assert_eq(count(&r, "[PMIX_TEAM_BAD_SPLIT] shmalloc: shmem_team_split_2d(xrange 0)"), npes, "%s", tail(&r));
    cr_assert_eq(count(&r, "[PMIX_TEAM_SPLIT_DIFFER] shmalloc: shmem_team_split_strided: "), npes, "%s", tail(&r));
    cr_assert(has(&r, "(start 0, stride 0, size 2) on a parent team of") && has(&r, "stride must be at least 1"),
              "%s", tail(&r));
    cr_assert(has(&r, "(start -1, stride 1, size 1)") && has(&r, "start must be a PE of the parent team"), "%s",
              tail(&r));
}

Test(pmix_ofi_teams, splits_translations_syncs_shm_2pe, .timeout = TEST_TIMEOUT) { check_teams("shm", 2, 0); }
Test(pmix_ofi_teams, splits_translations_syncs_shm_3pe, .timeout = TEST_TIMEOUT) { check_teams("shm", 3, 0); }
Test(pmix_ofi_teams, splits_translations_syncs_shm_4pe, .timeout = TEST_TIMEOUT) { check_teams("shm", 4, 0); }
Test(pmix_ofi_teams, splits_translations_syncs_tcp_rxm_2pe, .timeout = TEST_TIMEOUT)
{
    check_teams("tcp;ofi_rxm", 2, 0);
}
Test(pmix_ofi_teams, splits_translations_syncs_tcp_rxm_3pe, .timeout = TEST_TIMEOUT)
{
    check_teams("tcp;ofi_rxm", 3, 0);
}
Test(pmix_ofi_teams, splits_translations_syncs_tcp_rxm_4pe, .timeout = TEST_TIMEOUT)
{
    check_teams("tcp;ofi_rxm", 4, 0);
}
/* Nodes of 2 PEs: SHMEM_TEAM_SHARED is the node's pair, and the world's
   barrier and the teams' are hierarchical. */
Test(pmix_ofi_teams, shared_is_the_node_and_splits_work_on_nodes_of_2_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_teams("shm", 4, 2);
}

/* Two disjoint halves all-reduce 3000 and 1000 times at once, then rows,
   columns and halves in turn: every value checked on every PE.  npes PEs,
   node_size a node (0: one node). */
static void check_concurrent(const char *provider, int npes, int node_size)
{
    static run r;
    char prov[64], node[64];
    const char *env[] = {prov, node, NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(node, sizeof node, "SHMALLOC_TEST_NODE_SIZE=%d", node_size ? node_size : npes);
    launch(&r, npes, "teams_concurrent", env);
    assert_passed(&r, npes, "teams_concurrent");
    cr_assert_eq(count(&r, ": 3000 all-reduces in team 0 done"), npes / 2, "%s", tail(&r));
    cr_assert_eq(count(&r, ": 1000 all-reduces in team 1 done"), npes - npes / 2, "%s", tail(&r));
}

Test(pmix_ofi_teams, disjoint_teams_all_reduce_at_once_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_concurrent("shm", 4, 0);
}
Test(pmix_ofi_teams, disjoint_teams_all_reduce_at_once_tcp_rxm_4pe, .timeout = TEST_TIMEOUT)
{
    check_concurrent("tcp;ofi_rxm", 4, 0);
}
/* Halves of 3 across nodes of 2, rows on one node, columns one PE a node. */
Test(pmix_ofi_teams, disjoint_and_overlapping_teams_never_mix_across_nodes_of_2_shm_6pe, .timeout = TEST_TIMEOUT)
{
    check_concurrent("shm", 6, 2);
}

/* Three overlapping teams over 3 nodes of 2 PEs, one whose first and
   last nodes each hold one member: 2000 checked all-reduces each. */
Test(pmix_ofi_teams, teams_across_3_nodes_all_reduce_right_shm_6pe, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_NODE_SIZE=2", "SHMALLOC_PMIX_OFI_NODE_BARRIER=1", NULL};
    launch(&r, 6, "teams_across_nodes", env);
    assert_passed(&r, 6, "teams_across_nodes");
    cr_assert_eq(count(&r, ": 2000 all-reduces in each of its teams done"), 6, "%s", tail(&r));
}

/* World PEs 1..3 make a team (or, when shared, SHMEM_TEAM_SHARED on
   nodes of 2 is the team) and PE 3 sleeps instead of syncing: a member's
   team barrier times out after 2 s naming the team in world numbers and
   PE 3 (through node memory), or PE 3's message (by messages), and the
   job ends. */
static void check_skip(const char *provider, int node_barrier, const char *node_size, int shared, const char *names)
{
    const char *team = shared ? "(the team of world PEs start 2, stride 1, size 2; its PE 0"
                              : "(the team of world PEs start 1, stride 1, size 3; its PE ";
    static run r;
    char prov[64], node[64];
    const char *env[] = {prov, node, "SHMALLOC_TIMEOUT=2",
                         shared ? "SHMALLOC_TEST_SKIP_SHARED=1" : "SHMALLOC_TEST_SKIP_SHARED=0", node_size, NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(node, sizeof node, "SHMALLOC_PMIX_OFI_NODE_BARRIER=%d", node_barrier);
    launch(&r, 4, "team_skip", env);
    cr_assert_neq(r.status, 0, "the job ended well although PE 3 skipped a team barrier:\n%s", tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "the job took %.1f s to end:\n%s", r.seconds, tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "a member came back from the barrier:\n%s", tail(&r));
    cr_assert(count(&r, "[PMIX_TEAM_BARRIER_TIMEOUT] shmalloc: team barrier timed out after 2 s waiting for ") >= 1,
              "%s", tail(&r));
    cr_assert(has(&r, names), "the timeout does not name PE 3 as expected (%s):\n%s", names, tail(&r));
    cr_assert(has(&r, team), "the timeout does not name the team as expected (%s):\n%s", team, tail(&r));
    cr_assert_eq(r.leftovers, 0, "the run left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi_teams, a_skipped_team_barrier_times_out_naming_the_team_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_skip("shm", 1, NULL, 0, "waiting for PE 3, which has not arrived (the team");
}
/* Nodes of 2: PE 2, PE 3's node leader, names it from node memory. */
Test(pmix_ofi_teams, a_skipped_team_barrier_across_nodes_times_out_naming_the_team_shm_4pe,
     .timeout = TEST_TIMEOUT)
{
    check_skip("shm", 1, "SHMALLOC_TEST_NODE_SIZE=2", 0, "waiting for PE 3, which has not arrived (the team");
}
/* SHMEM_TEAM_SHARED on nodes of 2 goes through the world's node memory:
   PE 2 names PE 3 and its node's pair. */
Test(pmix_ofi_teams, a_skipped_shared_barrier_times_out_naming_the_node_pair_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_skip("shm", 1, "SHMALLOC_TEST_NODE_SIZE=2", 1, "waiting for PE 3, which has not arrived (the team");
}
Test(pmix_ofi_teams, a_skipped_team_barrier_times_out_naming_the_team_tcp_rxm_4pe_by_messages,
     .timeout = TEST_TIMEOUT)
{
    check_skip("tcp;ofi_rxm", 0, NULL, 0,
               "waiting for PE 3's message (PE 3, or a PE it waits for, has not arrived) (the team");
}

/* A heap over each half of the world through the contract's team member
   (shmalloc_space_create): the lower half's 2000 malloc and free pairs
   end before the upper half's 2 s sleep does (it never waits for them),
   offsets are symmetric across each half, a mismatch fails on both
   members, a live block keeps the space, and the heaps check clean. */
static void check_team_heaps(const char *provider)
{
    static run r;
    char prov[64];
    const char *env[] = {prov, NULL}, *p;
    int lines = 0;
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    launch(&r, 4, "team_heaps", env);
    assert_passed(&r, 4, "team_heaps");
    for (p = r.out; (p = strstr(p, ": 2000 space pairs in ")) != NULL; p++, lines++) { /* the first team's */
        double s = atof(p + strlen(": 2000 space pairs in "));
        cr_assert(s < 2.0, "the lower half took %.3f s: it waited for the sleeping half:\n%s", s, tail(&r));
    }
    cr_assert_eq(lines, 2, "%s", tail(&r));
    cr_assert_eq(count(&r, "[HEAP_MISMATCH] "), 4, "%s", tail(&r));
    cr_assert_eq(count(&r, "[SPACE_BUSY] "), 4, "%s", tail(&r));
}

Test(pmix_ofi_teams, heaps_over_two_halves_never_wait_for_each_other_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_team_heaps("shm");
}
Test(pmix_ofi_teams, heaps_over_two_halves_never_wait_for_each_other_tcp_rxm_4pe, .timeout = TEST_TIMEOUT)
{
    check_team_heaps("tcp;ofi_rxm");
}

/* The even and the odd PEs each make a space at once and put and get
   around their team, in the first region and in one the space grew for:
   through node memory (direct: mapped copies), or by libfabric with the
   keys the members swapped among themselves (direct 0). */
static void check_spaces(const char *provider, int npes, int direct)
{
    static run r;
    char prov[64], map[64], expect[64];
    const char *env[] = {prov, map, expect, NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(map, sizeof map, "SHMALLOC_PMIX_OFI_DIRECT=%d", direct);
    snprintf(expect, sizeof expect, "SHMALLOC_TEST_EXPECT_DIRECT=%d", direct);
    launch(&r, npes, "spaces", env);
    assert_passed(&r, npes, "spaces");
    cr_assert_eq(count(&r, "[SPACE_BUSY] "), npes, "%s", tail(&r));
    cr_assert_eq(count(&r, "[SPACE_TEAM_GONE] "), npes, "%s", tail(&r));
}

Test(pmix_ofi_teams, spaces_of_two_teams_put_and_get_through_node_memory_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_spaces("shm", 4, 1);
}
Test(pmix_ofi_teams, spaces_of_two_teams_put_and_get_by_their_keys_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_spaces("shm", 4, 0);
}
Test(pmix_ofi_teams, spaces_of_two_teams_put_and_get_by_their_keys_tcp_rxm_3pe, .timeout = TEST_TIMEOUT)
{
    check_spaces("tcp;ofi_rxm", 3, 0);
}
Test(pmix_ofi_teams, spaces_of_two_teams_put_and_get_by_their_keys_tcp_rxm_4pe, .timeout = TEST_TIMEOUT)
{
    check_spaces("tcp;ofi_rxm", 4, 0);
}

/* A put into a space at a PE outside its team ends the job, naming the
   space's team and the PE. */
Test(pmix_ofi_teams, a_put_to_a_pe_outside_the_space_ends_the_job_shm_4pe, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", NULL};
    launch(&r, 4, "space_outsider", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "%s", tail(&r));
    cr_assert(has(&r, "[PMIX_SPACE_NOT_MEMBER] shmem_putmem: PE 1 is not in the team of the space at ") &&
                  has(&r, " (2 PEs, world PEs from 0 by stride 2; PE 0 of 4)"),
              "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the run left %d /dev/shm files", r.leftovers);
}

/* PEs 0 and 1 sync two teams of both in opposite orders: each times out
   in its first team's barrier naming the team and the other PE (through
   node memory: it is in the other team's barrier), without mixing the
   two teams' rounds. */
Test(pmix_ofi_teams, overlapping_teams_synced_in_opposite_orders_time_out_naming_the_pe_shm_2pe,
     .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=2", NULL};
    launch(&r, 2, "teams_crossed", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "%s", tail(&r));
    cr_assert(has(&r, "[PMIX_TEAM_BARRIER_TIMEOUT] shmalloc: team barrier timed out after 2 s waiting for PE 1, "
                      "which has not arrived (the team of world PEs start 0, stride 1, size 2; its PE 0, PE 0 of 2") ||
                  has(&r, "[PMIX_TEAM_BARRIER_TIMEOUT] shmalloc: team barrier timed out after 2 s waiting for PE 0, "
                          "which has not arrived (the team of world PEs start 0, stride 1, size 2; its PE 1, PE 1 of 2"),
              "%s", tail(&r));
    cr_assert_eq(count(&r, "[PMIX_BARRIER_WRONG_EPOCH]") + count(&r, "[PMIX_BARRIER_WRONG_PE]") +
                     count(&r, "[PMIX_TEAM_UNKNOWN_TAG]"),
                 0, "the teams' rounds mixed:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the run left %d /dev/shm files", r.leftovers);
}

/* The same with a space on each of the two teams, allocated in opposite
   orders: the timeout names the space whose call waits. */
Test(pmix_ofi_teams, overlapping_spaces_used_in_opposite_orders_time_out_naming_the_space_shm_2pe,
     .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=2", NULL};
    launch(&r, 2, "spaces_crossed", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert_eq(count(&r, ": FAIL"), 0, "%s", tail(&r));
    cr_assert(has(&r, "[PMIX_SPACE_BARRIER_TIMEOUT] shmalloc: a call on the space at 0x"), "%s", tail(&r));
    cr_assert(has(&r, "timed out after 2 s in its team's barrier, waiting for PE 1, which has not arrived (the "
                      "team of world PEs start 0, stride 1, size 2; its PE 0, PE 0 of 2") ||
                  has(&r, "timed out after 2 s in its team's barrier, waiting for PE 0, which has not arrived (the "
                          "team of world PEs start 0, stride 1, size 2; its PE 1, PE 1 of 2"),
              "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the run left %d /dev/shm files", r.leftovers);
}

/* A team of every PE, 100 all-reduces (values checked): on one node with
   node memory they go through the team's own segment (no message, 2 slot
   reads each at 4 PEs); on nodes of 2 PEs only the team's node leaders
   send, one message a round among the nodes, and the others read their
   node's slot and the leader's release; without node memory, messages
   among all (2 rounds of one message each).  Then 100 of
   SHMEM_TEAM_SHARED: the world's node slots, or messages when node memory
   is off.  team[i], shared[i]: what PE i counted. */
static void check_team_messages(int npes, const char *node_size, const char *node_barrier, const char *const *team,
                                const char *const *shared)
{
    static run r;
    char line[128];
    const char *env[] = {"FI_PROVIDER=shm", node_size, node_barrier, NULL};
    int i;
    launch(&r, npes, "team_messages", env);
    assert_passed(&r, npes, "team_messages");
    for (i = 0; i < npes; i++) {
        snprintf(line, sizeof line, "PE %d of %d: 100 team all-reduces sent %s\n", i, npes, team[i]);
        cr_assert(has(&r, line), "expected: %s\n%s", line, tail(&r));
        snprintf(line, sizeof line, "PE %d of %d: 100 shared all-reduces sent %s\n", i, npes, shared[i]);
        cr_assert(has(&r, line), "expected: %s\n%s", line, tail(&r));
    }
}

#define ALL4(said) (const char *const[]){said, said, said, said}
#define ALL6(said) (const char *const[]){said, said, said, said, said, said}
Test(pmix_ofi_teams, a_team_and_shared_on_one_node_synchronise_through_node_memory_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_team_messages(4, "SHMALLOC_TEST_NODE_SIZE=4", "SHMALLOC_PMIX_OFI_NODE_BARRIER=1",
                        ALL4("0 messages and read 200 slots"), ALL4("0 messages and read 200 slots"));
}
/* SHMEM_TEAM_SHARED is each node's pair: one slot a round, no message. */
Test(pmix_ofi_teams, a_team_across_nodes_sends_messages_only_between_its_leaders_shm_4pe, .timeout = TEST_TIMEOUT)
{
    static const char leader[] = "100 messages and read 100 slots", other[] = "0 messages and read 200 slots";
    check_team_messages(4, "SHMALLOC_TEST_NODE_SIZE=2", "SHMALLOC_PMIX_OFI_NODE_BARRIER=1",
                        (const char *const[]){leader, other, leader, other}, ALL4("0 messages and read 100 slots"));
}
/* 3 nodes: the leaders' dissemination takes 2 rounds. */
Test(pmix_ofi_teams, a_team_across_3_nodes_sends_messages_only_between_its_leaders_shm_6pe, .timeout = TEST_TIMEOUT)
{
    static const char leader[] = "200 messages and read 100 slots", other[] = "0 messages and read 200 slots";
    check_team_messages(6, "SHMALLOC_TEST_NODE_SIZE=2", "SHMALLOC_PMIX_OFI_NODE_BARRIER=1",
                        (const char *const[]){leader, other, leader, other, leader, other},
                        ALL6("0 messages and read 100 slots"));
}
Test(pmix_ofi_teams, a_team_without_node_memory_synchronises_by_messages_shm_4pe, .timeout = TEST_TIMEOUT)
{
    check_team_messages(4, "SHMALLOC_TEST_NODE_SIZE=4", "SHMALLOC_PMIX_OFI_NODE_BARRIER=0",
                        ALL4("200 messages and read 0 slots"), ALL4("200 messages and read 0 slots"));
}
