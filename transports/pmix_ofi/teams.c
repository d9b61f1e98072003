/* teams.c - the OpenSHMEM 1.5 teams.  A team is a strided subset of the
   world (its group's start, stride and size, in world numbers) with a
   barrier and all-reduce of its own, its own epochs and message tags: a
   team with several PEs on some node synchronises as the world does, its
   PEs on each node through a segment of their own, its node leaders by
   messages under the team's second tag (node.c); any other by messages
   among its PEs (barrier.c).  SHMEM_TEAM_WORLD's collective calls are the world's
   (node memory, then messages between nodes); SHMEM_TEAM_SHARED is the
   PEs of this node when their ranks are strided, else this PE alone, and
   goes through the world's node memory (by messages when it is off).  A split is collective over its parent only: one
   all-reduce over the parent agrees the arguments and a tag that no
   member has used (the greatest of the members' next tags; the new team's
   PEs are among them), then, once the new teams' groups are linked (and
   each node's segment made), a barrier over the parent,
   so that no message of theirs arrives before. */
#include "teams.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SHM__TAG_SHARED 1u

struct shmalloc_team shmalloc_team_world, shmalloc_team_shared;
static uint32_t shm__next_tag; /* greater than the tag of every team this PE has had */

/* This node's PEs, when strided in the world; else this PE alone. */
static void shm__shared_members(shm__group *g, int me)
{
    const shm__nodes *m = &shm__job.nodes;
    int i, stride = m->ranks && m->size > 1 ? m->ranks[1] - m->ranks[0] : 1, strided = m->ranks && stride >= 1;
    for (i = 2; strided && i < m->size; i++) strided = m->ranks[i] - m->ranks[i - 1] == stride;
    g->start = strided ? m->ranks[0] : me;
    g->stride = strided ? stride : 1;
    g->size = strided ? m->size : 1;
    g->me = strided ? m->me : 0;
}

/* SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED, once the barriers are open. */
void shm__teams_open(int me, int npes)
{
    shm__group *w = &shmalloc_team_world.group, *s = &shmalloc_team_shared.group;
    memset(&shmalloc_team_world, 0, sizeof shmalloc_team_world);
    memset(&shmalloc_team_shared, 0, sizeof shmalloc_team_shared);
    w->size = npes;
    w->me = me;
    w->stride = 1;
    shm__shared_members(s, me);
    s->tag = SHM__TAG_SHARED;
    if (shm__group_open(s) != 0) shm__init_fail(SHM__PMIX_MSG(PMIX_NO_MEMORY_PEERS), s->size);
    shm__group_link(s);
    shm__next_tag = SHM__TAG_SHARED + 1;
}

/* Every team's group closed: the teams not destroyed are freed. */
void shm__teams_close(void)
{
    shm__group *g;
    while ((g = shm__coll.world.next) != NULL) {
        if (g->team) g = g->team; /* a team's leaders go with it */
        shm__node_team_close(g);
        shm__group_close(g);
        if (g != &shmalloc_team_shared.group) shmalloc_mem_free(g);
    }
}

int shm__is_team(shmem_team_t t) { return t != SHMEM_TEAM_INVALID && shm__w.running; }

/* A barrier over team t, combining count values by max on the way. */
void shm__team_collective(shmem_team_t t, uint64_t *values, int count)
{
    shm__group *g = &t->group;
    if (t == SHMEM_TEAM_WORLD) {
        shm__world_collective(values, count);
        return;
    }
    shm__node_note_where((uint64_t)g->tag << 32 | g->epoch); /* named should a member not come */
    if (g->nodes) shm__node_team_sync(g, values, count);
    else if (t == SHMEM_TEAM_SHARED && shm__coll.node && g->size > 1) shm__node_shared_sync(g, values, count);
    else shm__disseminate(g, values, count);
    shm__node_note_where(0);
}

int shmem_team_my_pe(shmem_team_t team) { return shm__is_team(team) ? team->group.me : -1; }

int shmem_team_n_pes(shmem_team_t team) { return shm__is_team(team) ? team->group.size : -1; }

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    if (!shm__is_team(team) || !config) return -1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = team->config.num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    const shm__group *s, *d;
    long long world, i;
    if (!shm__is_team(src_team) || !shm__is_team(dest_team)) return -1;
    s = &src_team->group;
    d = &dest_team->group;
    if (src_pe < 0 || src_pe >= s->size) return -1;
    world = s->start + (long long)src_pe * s->stride;
    if (world < d->start || (world - d->start) % d->stride) return -1;
    i = (world - d->start) / d->stride;
    return i < d->size ? (int)i : -1;
}

int shmem_team_sync(shmem_team_t team)
{
    if (!shm__is_team(team)) return -1;
    shm__team_collective(team, NULL, 0);
    return 0;
}

static void shm__team_free(shmem_team_t t)
{
    if (!t) return;
    shm__node_team_close(&t->group);
    shm__group_close(&t->group);
    shmalloc_mem_free(t);
}

/* Its spaces fail every call from now on, until each is destroyed. */
void shmem_team_destroy(shmem_team_t team)
{
    if (!shm__is_team(team) || team == SHMEM_TEAM_WORLD || team == SHMEM_TEAM_SHARED) return;
    if (shm__mem.heap) shmalloc_space_team_destroyed(shm__mem.heap, team);
    shm__team_free(team);
}

/* A new team of the parent's PEs start + i * stride (i < size, parent
   numbers) with this PE its member me; not yet linked.  NULL out of memory. */
static shmem_team_t shm__team_new(shmem_team_t parent, int start, int stride, int size, int me,
                                  const shmem_team_config_t *config, long mask)
{
    const shm__group *p = &parent->group;
    shmem_team_t t = (shmem_team_t)shmalloc_mem_alloc(1, sizeof *t);
    if (!t) return NULL;
    t->group.start = p->start + start * p->stride;
    t->group.stride = size > 1 ? p->stride * stride : 1;
    t->group.size = size;
    t->group.me = me;
    if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) t->config.num_contexts = config->num_contexts;
    if (shm__group_open(&t->group) != 0) {
        shmalloc_mem_free(t);
        return NULL;
    }
    return t;
}

/* What is wrong with a strided split of a parent of n PEs, or NULL. */
static const char *shm__split_fault(int start, int stride, int size, int n)
{
    if (size < 1) return "size must be at least 1";
    if (start < 0 || start >= n) return "start must be a PE of the parent team, 0 to its size - 1";
    if (size > 1 && stride < 1) return "stride must be at least 1";
    if (size > 1 && start + (long long)(size - 1) * stride >= n)
        return "its last PE, start + (size - 1) * stride, is past the parent team's last PE";
    return NULL;
}

#define SHM__SPLIT_ARGS 3

/* The all-reduce over parent that agrees a split: args (the same on every
   member, else the split fails) and that every member could make its
   teams (ok).  0 and *tag, the first of ntags, or -1 with a message. */
static int shm__split_agree(shmem_team_t parent, const char *call, const int args[SHM__SPLIT_ARGS], int ok,
                            int fault_said, uint32_t ntags, uint32_t *tag)
{
    uint64_t v[2 + 2 * SHM__SPLIT_ARGS];
    int i, same = 1;
    v[0] = shm__next_tag;
    v[1] = !ok;
    for (i = 0; i < SHM__SPLIT_ARGS; i++) {
        v[2 + i] = (uint32_t)args[i];
        v[2 + SHM__SPLIT_ARGS + i] = ~(uint64_t)(uint32_t)args[i]; /* the greatest of these, the least arg */
    }
    shm__team_collective(parent, v, 2 + 2 * SHM__SPLIT_ARGS);
    for (i = 0; i < SHM__SPLIT_ARGS; i++)
        same &= v[2 + i] == (uint32_t)args[i] && v[2 + SHM__SPLIT_ARGS + i] == ~(uint64_t)(uint32_t)args[i];
    if (!same || v[1]) {
        if (!same || !fault_said) /* equal arguments at fault: each member said why */
            shmalloc_print(2, SHM__PMIX_MSG(PMIX_TEAM_SPLIT_DIFFER), call, args[0], args[1], args[2],
                           ok ? "" : "; out of memory here", shm__job.me, shm__job.npes);
        return -1;
    }
    *tag = (uint32_t)v[0];
    shm__next_tag = *tag + ntags;
    return 0;
}

/* A new team through node memory (nodes of them): each member opens the
   segment its node's first PE made (mine, when this PE is it) and all
   use node memory, or all go by messages when one could not; then the
   file goes. */
static void shm__split_segment(shmem_team_t t, struct shm__node_slot *mine, int nodes)
{
    shm__group *g = &t->group;
    int first = g->node_ranks ? g->node_ranks[0] : -1, alone = g->node_ranks && g->node_size < 2;
    long creator = first == shm__job.me ? (long)getpid() : first >= 0 ? shm__peer_pid(first) : 0;
    struct shm__node_slot *seg = first == shm__job.me ? mine : shm__node_team_map(g, creator, 0, &g->node_bytes);
    uint64_t failed = !g->node_ranks || (!alone && !seg);
    shm__team_collective(t, &failed, 1); /* by messages: g->nodes is not set yet */
    if (first == shm__job.me && !alone) shm__node_team_unlink(g, creator);
    g->node = seg;
    g->nodes = nodes;
    if (failed) shm__node_team_close(g);
}

/* The new teams (NULL where this PE is not a member) join their tags (a
   team's, then its leaders'), and on each node a team's first PE there
   makes their segment when node memory serves it; the parent's barrier
   then lets members send and open the segment. */
static void shm__split_link(shmem_team_t parent, shmem_team_t *teams, int n, uint32_t tag)
{
    struct shm__node_slot *made[2] = {NULL, NULL};
    int i, nodes[2] = {0, 0};
    for (i = 0; i < n; i++)
        if (teams[i]) {
            shm__group *g = &teams[i]->group;
            g->tag = tag + 2u * (uint32_t)i;
            nodes[i] = shm__node_team_plan(g, g->tag + 1u);
            if (nodes[i] && g->node_ranks && g->node_me == 0 && g->node_size > 1)
                made[i] = shm__node_team_map(g, (long)getpid(), 1, &g->node_bytes);
            shm__group_link(g);
        }
    shm__team_collective(parent, NULL, 0);
    for (i = 0; i < n; i++)
        if (teams[i] && nodes[i]) shm__split_segment(teams[i], made[i], nodes[i]);
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)
{
    static const char call[] = "shmem_team_split_strided";
    const char *fault;
    int args[SHM__SPLIT_ARGS] = {start, stride, size}, p, member, ok = 1;
    char text[64];
    shmem_team_t t = NULL;
    uint32_t tag;
    if (new_team) *new_team = SHMEM_TEAM_INVALID;
    if (!shm__is_team(parent_team) || !new_team) return -1;
    p = parent_team->group.me;
    if ((fault = shm__split_fault(start, stride, size, parent_team->group.size)) != NULL) {
        snprintf(text, sizeof text, "start %d, stride %d, size %d", start, stride, size);
        shmalloc_print(2, SHM__PMIX_MSG(PMIX_TEAM_BAD_SPLIT), call, text, parent_team->group.size, fault, shm__job.me,
                       shm__job.npes);
        ok = 0;
    }
    member = ok && p >= start && (size == 1 ? p == start : (p - start) % stride == 0 && (p - start) / stride < size);
    if (member && !(t = shm__team_new(parent_team, start, stride, size, size == 1 ? 0 : (p - start) / stride,
                                      config, config_mask)))
        ok = 0;
    if (shm__split_agree(parent_team, call, args, ok, fault != NULL, 2, &tag) != 0) {
        shm__team_free(t);
        return -1;
    }
    shm__split_link(parent_team, &t, 1, tag);
    *new_team = t;
    return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team)
{
    static const char call[] = "shmem_team_split_2d";
    shmem_team_t t[2] = {NULL, NULL};
    int n, x, row, col, args[SHM__SPLIT_ARGS] = {xrange, 0, 0}, ok = 1;
    char text[32];
    uint32_t tag;
    if (xaxis_team) *xaxis_team = SHMEM_TEAM_INVALID;
    if (yaxis_team) *yaxis_team = SHMEM_TEAM_INVALID;
    if (!shm__is_team(parent_team) || !xaxis_team || !yaxis_team) return -1;
    n = parent_team->group.size;
    if (xrange < 1) {
        snprintf(text, sizeof text, "xrange %d", xrange);
        shmalloc_print(2, SHM__PMIX_MSG(PMIX_TEAM_BAD_SPLIT), call, text, n, "xrange must be at least 1", shm__job.me,
                       shm__job.npes);
        ok = 0;
    }
    x = xrange < n ? xrange : n;
    if (ok) {
        row = parent_team->group.me / x;
        col = parent_team->group.me % x;
        t[0] = shm__team_new(parent_team, row * x, 1, n - row * x < x ? n - row * x : x, col, xaxis_config,
                             xaxis_mask);
        t[1] = shm__team_new(parent_team, col, x, (n - col + x - 1) / x, row, yaxis_config, yaxis_mask);
        ok = t[0] && t[1];
    }
    if (shm__split_agree(parent_team, call, args, ok, xrange < 1, 4, &tag) != 0) {
        shm__team_free(t[0]);
        shm__team_free(t[1]);
        return -1;
    }
    shm__split_link(parent_team, t, 2, tag);
    *xaxis_team = t[0];
    *yaxis_team = t[1];
    return 0;
}

#if defined(SHMALLOC_TESTING)
int shmalloc_pmix_ofi_team_reduce_max(shmem_team_t team, uint64_t *values, int count)
{
    if (!shm__is_team(team) || count < 0 || count > SHMALLOC_REDUCE_AND_MAX) return -1;
    shm__team_collective(team, values, count);
    return 0;
}
#endif
