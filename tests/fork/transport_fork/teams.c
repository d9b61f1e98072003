/* teams.c - the fork transport's teams: the OpenSHMEM 1.5 team calls of
   ../../transports/shmalloc_teams.h over fork.c's barrier.  A split
   agrees on every parent member through one parent barrier whose
   all-reduce carries any member's failure and the new team's barrier,
   which its first member takes from the shared ones.  See team.h. */
#include "team.h"

#include <string.h>

struct shmalloc_team shmalloc_team_world, shmalloc_team_shared;

void shm__fork_teams_start(void)
{
    struct shmalloc_team w = {0, 1, 0, 0, 0, 1, 0, {0}};
    w.size = shm__fork.npes;
    w.me = shm__fork.me;
    shmalloc_team_world = w;
}

/* SHMEM_TEAM_SHARED is the world: every PE maps every PE's memory. */
struct shmalloc_team *shm__fork_team(shmem_team_t team)
{
    if (shm__fork.me < 0 || team == SHMEM_TEAM_INVALID) return NULL;
    return team == SHMEM_TEAM_SHARED ? SHMEM_TEAM_WORLD : team;
}

/* >> the shared barriers ---------------------------------------------------- */
/* A free barrier for a team of `members`: its index, or -1 when all are taken. */
static int shm__fork_state_take(int members)
{
    shm__fork_shared *sh = shm__fork.shared;
    uint64_t used = __atomic_load_n(&sh->used, __ATOMIC_ACQUIRE);
    int i;
    do {
        if (~used == 0) return -1;
        i = __builtin_ctzll(~used);
    } while (!__atomic_compare_exchange_n(&sh->used, &used, used | (uint64_t)1 << i, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    memset(sh->states[i].slots, 0, sizeof sh->states[i].slots); /* its last members have all let go */
    __atomic_store_n(&sh->states[i].members, (uint64_t)members, __ATOMIC_RELEASE);
    return i;
}

/* One member lets go of barrier i; the last frees it. */
static void shm__fork_state_give(int i)
{
    shm__fork_shared *sh = shm__fork.shared;
    if (__atomic_sub_fetch(&sh->states[i].members, 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_and_fetch(&sh->used, ~((uint64_t)1 << i), __ATOMIC_RELEASE);
}

/* >> queries -------------------------------------------------------------------- */
int shmem_team_my_pe(shmem_team_t team)
{
    struct shmalloc_team *t = shm__fork_team(team);
    return t ? t->me : -1;
}

int shmem_team_n_pes(shmem_team_t team)
{
    struct shmalloc_team *t = shm__fork_team(team);
    return t ? t->size : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    struct shmalloc_team *t = shm__fork_team(team);
    if (t == NULL || (config_mask != 0 && config == NULL)) return -1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = t->config.num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    struct shmalloc_team *s = shm__fork_team(src_team), *d = shm__fork_team(dest_team);
    int offset;
    if (s == NULL || d == NULL || src_pe < 0 || src_pe >= s->size) return -1;
    offset = s->start + src_pe * s->stride - d->start; /* from d's first PE, in world PEs */
    if (offset < 0 || offset % d->stride != 0 || offset / d->stride >= d->size) return -1;
    return offset / d->stride;
}

/* >> splits ---------------------------------------------------------------------- */
/* Whether start, stride (1 for one PE), size pick PEs of parent p; if not,
   says why. */
static int shm__fork_split_fits(const struct shmalloc_team *p, int start, int stride, int size, int has_config)
{
    long long last = (long long)start + (long long)stride * (size - 1);
    if (start >= 0 && stride >= 1 && size >= 1 && last < p->size && has_config) return 1;
    shmalloc_print(2, SHM__FORK_MSG(FORK_TEAM_BAD_SPLIT), shm__fork.me, start, stride, size, p->size,
                   has_config ? "" : ", or config is NULL with SHMEM_TEAM_NUM_CONTEXTS", p->size);
    return 0;
}

/* The new team's PE, before the parent barrier: its memory, and from its
   first member the shared barrier (*state).  NULL after a message. */
static struct shmalloc_team *shm__fork_split_join(const struct shmalloc_team *p, int start, int stride, int size,
                                                  int *state)
{
    struct shmalloc_team *t = (struct shmalloc_team *)shmalloc_mem_alloc(1, sizeof *t);
    if (t == NULL) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_TEAM_NO_MEMORY), shm__fork.me);
        return NULL;
    }
    if (p->me == start && (*state = shm__fork_state_take(size)) < 0) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_TEAM_TOO_MANY), shm__fork.me, SHM__FORK_MAX_TEAMS);
        shmalloc_mem_free(t);
        return NULL;
    }
    t->start = p->start + start * p->stride;
    t->stride = size == 1 ? 1 : stride * p->stride;
    t->size = size;
    t->me = (p->me - start) / stride;
    t->holds = 1;
    return t;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)
{
    struct shmalloc_team *p = shm__fork_team(parent_team), *t = NULL;
    uint64_t agreed[2] = {0, 0}; /* any member's failure; the new team's barrier + 1 */
    int state = -1, member;
    if (new_team != NULL) *new_team = SHMEM_TEAM_INVALID;
    if (p == NULL || p->state < 0 || new_team == NULL) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_TEAM_BAD_PARENT), shm__fork.me,
                       new_team ? "not one (SHMEM_TEAM_INVALID or destroyed)" : "given no new_team");
        return -1; /* not a parent member: nobody to agree with */
    }
    if (size == 1) stride = 1; /* any stride picks one PE */
    if (!shm__fork_split_fits(p, start, stride, size, config != NULL || !(config_mask & SHMEM_TEAM_NUM_CONTEXTS))) {
        agreed[0] = 1;
    } else {
        member = p->me >= start && (p->me - start) % stride == 0 && (p->me - start) / stride < size;
        if (member && (t = shm__fork_split_join(p, start, stride, size, &state)) == NULL) agreed[0] = 1;
        if (state >= 0) agreed[1] = (uint64_t)state + 1;
    }
    shm__fork_sync(p, agreed, 2);
    if (agreed[0] != 0 || agreed[1] == 0) {
        if (state >= 0) __atomic_and_fetch(&shm__fork.shared->used, ~((uint64_t)1 << state), __ATOMIC_RELEASE);
        shmalloc_mem_free(t);
        return -1; /* the member that failed said why */
    }
    if (t == NULL) return 0;
    t->state = (int)agreed[1] - 1;
    t->config.num_contexts = (config_mask & SHMEM_TEAM_NUM_CONTEXTS) ? config->num_contexts : 0;
    *new_team = t;
    return 0;
}

/* Rows of xrange parent PEs (the x axis), then columns (the y axis): a
   split of the parent for each, so each is collective over the parent. */
int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team)
{
    int n = shmem_team_n_pes(parent_team), i, rc = 0;
    shmem_team_t got;
    if (xaxis_team != NULL) *xaxis_team = SHMEM_TEAM_INVALID;
    if (yaxis_team != NULL) *yaxis_team = SHMEM_TEAM_INVALID;
    if (n < 1 || xrange < 1 || xaxis_team == NULL || yaxis_team == NULL) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_TEAM_BAD_2D), shm__fork.me, xrange, n,
                       xaxis_team && yaxis_team ? "given" : "not both given");
        return -1;
    }
    if (xrange > n) xrange = n; /* one row: the whole parent */
    for (i = 0; i < n; i += xrange) {
        rc |= shmem_team_split_strided(parent_team, i, 1, n - i < xrange ? n - i : xrange, xaxis_config,
                                       xaxis_mask, &got);
        if (got != SHMEM_TEAM_INVALID) *xaxis_team = got;
    }
    for (i = 0; i < xrange; i++) {
        rc |= shmem_team_split_strided(parent_team, i, xrange, (n - i + xrange - 1) / xrange, yaxis_config,
                                       yaxis_mask, &got);
        if (got != SHMEM_TEAM_INVALID) *yaxis_team = got;
    }
    if (rc == 0) return 0;
    shmem_team_destroy(*xaxis_team); /* every split agreed on every parent member: all fail alike */
    shmem_team_destroy(*yaxis_team);
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    return -1;
}

/* >> sync and destroy ------------------------------------------------------------ */
int shmem_team_sync(shmem_team_t team)
{
    struct shmalloc_team *t = shm__fork_team(team);
    if (t == NULL || t->state < 0) return -1;
    shmem_quiet();
    shm__fork_sync(t, NULL, 0);
    return 0;
}

void shm__fork_team_drop(struct shmalloc_team *t)
{
    if (--t->holds == 0) shmalloc_mem_free(t);
}

/* The team's spaces refuse their calls from now on; its barrier is free
   for another team once every member has destroyed it. */
void shmem_team_destroy(shmem_team_t team)
{
    struct shmalloc_team *t = shm__fork_team(team);
    if (t == NULL || t == SHMEM_TEAM_WORLD || t->state < 0) return; /* the world lives as long as the run */
    shmalloc_space_team_destroyed(shm__fork.heap, t);
    shm__fork_state_give(t->state);
    t->state = -1;
    shm__fork_team_drop(t);
}
