/* team.c - the teams of the pthreads transport (../shmalloc_teams.h):
   every team is a strided subset of the world with its own barrier and
   handles.  See pthreads.h. */
#include "pthreads.h"

#include <stdio.h>

struct shmalloc_team shmalloc_team_world, shmalloc_team_shared;

/* >> team state ---------------------------------------------------------------*/
int shm__team_init(shm__team *t, shm__run *run, int start, int stride, int size)
{
    int i;
    if (shm__barrier_init(&t->barrier, size, run->start.timeout, start, stride) != 0) return -1;
    t->barrier.team = t != &run->world;
    if (t->barrier.team) t->barrier.pauses = run->world.barrier.pauses; /* the run's threads share the cpus */
    t->members = (struct shmalloc_team *)shmalloc_mem_alloc((size_t)size, sizeof *t->members);
    if (t->members == NULL) {
        shm__barrier_fini(&t->barrier);
        return -1;
    }
    for (i = 0; i < size; i++) {
        t->members[i].team = t;
        t->members[i].pe = &run->pes[start + i * stride];
        t->members[i].index = i;
    }
    t->holders = size;
    t->prev = t->next = t;
    if (t->barrier.team) { /* onto the run's list, after the world */
        pthread_mutex_lock(&run->teams_mutex);
        t->prev = &run->world;
        t->next = run->world.next;
        t->next->prev = t;
        run->world.next = t;
        pthread_mutex_unlock(&run->teams_mutex);
    }
    return 0;
}

/* Frees t (the world's memory is the run's). */
void shm__team_fini(shm__team *t)
{
    shm__run *run = t->members[0].pe->run;
    if (t->barrier.team) {
        pthread_mutex_lock(&run->teams_mutex);
        t->prev->next = t->next;
        t->next->prev = t->prev;
        pthread_mutex_unlock(&run->teams_mutex);
    }
    shm__barrier_fini(&t->barrier);
    shmalloc_mem_free(t->members);
    if (t->barrier.team) shmalloc_mem_free(t);
}

void shm__team_release(shm__team *t)
{
    if (t->barrier.team && __atomic_sub_fetch(&t->holders, 1, __ATOMIC_ACQ_REL) == 0) shm__team_fini(t);
}

void shm__team_leave_all(shm__pe *pe)
{
    shm__run *run = pe->run;
    shm__team *t;
    pthread_mutex_lock(&run->teams_mutex);
    for (t = run->world.next; t != &run->world; t = t->next)
        if (shm__barrier_slot(&t->barrier, pe->index) >= 0)
            shm__barrier_leave(&t->barrier, shm__barrier_slot(&t->barrier, pe->index));
    pthread_mutex_unlock(&run->teams_mutex);
}

void shm__team_sync(struct shmalloc_team *h, uint64_t *values, int count, int op, const void *space)
{
    shm__sync(&h->team->barrier, h->index, ++h->epoch, values, count, op, space);
}

struct shmalloc_team *shm__team_handle(shm__pe *me, shmem_team_t team)
{
    if (me == NULL || team == SHMEM_TEAM_INVALID) return NULL;
    if (team == SHMEM_TEAM_WORLD || team == SHMEM_TEAM_SHARED) return &me->run->world.members[me->index];
    return team->team != NULL && team->pe == me && !team->destroyed ? team : NULL;
}

static struct shmalloc_team *shm__handle(shmem_team_t team) { return shm__team_handle(shm__self, team); }

/* >> queries ------------------------------------------------------------------*/
int shmem_team_my_pe(shmem_team_t team)
{
    struct shmalloc_team *h = shm__handle(team);
    return h != NULL ? h->index : -1;
}

int shmem_team_n_pes(shmem_team_t team)
{
    struct shmalloc_team *h = shm__handle(team);
    return h != NULL ? h->team->barrier.parties : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    struct shmalloc_team *h = shm__handle(team);
    if (h == NULL || config == NULL) return -1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = h->config.num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    const struct shmalloc_team *src = shm__handle(src_team), *dest = shm__handle(dest_team);
    const shm__barrier *s;
    if (src == NULL || dest == NULL) return -1;
    s = &src->team->barrier;
    if (src_pe < 0 || src_pe >= s->parties) return -1;
    return shm__barrier_slot(&dest->team->barrier, s->start + src_pe * s->stride);
}

int shmem_team_sync(shmem_team_t team)
{
    struct shmalloc_team *h = shm__handle(team);
    if (h == NULL) return -1;
    shmem_quiet();
    shm__team_sync(h, NULL, 0, SHM__REDUCE_MAX, NULL);
    return 0;
}

void shmem_team_destroy(shmem_team_t team)
{
    struct shmalloc_team *h = shm__handle(team);
    if (h == NULL || !h->team->barrier.team) return; /* the world and SHARED outlive the run's PEs */
    shmalloc_space_team_destroyed(h->pe->heap, h);
    h->destroyed = 1;
    shm__team_release(h->team);
}

/* >> splits -------------------------------------------------------------------
   A split gives each member of the parent at most one new team, (start,
   stride, size) in parent numbers.  The first member of each new team
   makes it; one barrier of the parent reduces the members' verdicts and
   carries each new team's address in its maker's slot. */
typedef struct shm__split {
    char call[96];     /* the call with its arguments, for a message */
    const char *bad;   /* why this PE's arguments are bad, or NULL */
    int start, stride, size; /* this PE's new team; size 0: none */
    const shmem_team_config_t *config;
    long config_mask;
} shm__split;

static void shm__split_refuse(const struct shmalloc_team *parent, const shm__split *s)
{
    const shm__barrier *p = &parent->team->barrier;
    shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_TEAM_BAD_SPLIT), parent->pe->index, s->call, s->bad, p->parties,
                   p->parties > 1 ? "s" : "", p->start, p->stride);
}

/* Collective over parent: 0 with *made this PE's new handle
   (SHMEM_TEAM_INVALID outside any new team), or -1 on every member after
   one message, from the lowest member that saw a cause. */
static int shm__split_parent(struct shmalloc_team *parent, shm__split *s, shmem_team_t *made)
{
    const shm__barrier *p = &parent->team->barrier;
    int me = parent->index, in = s->size > 0 && s->bad == NULL;
    shm__team *t = NULL;
    uint64_t values[2];
    if (in && me == s->start) {
        int stride = s->size > 1 ? p->stride * s->stride : 1;
        t = (shm__team *)shmalloc_mem_alloc(1, sizeof *t);
        if (t == NULL || shm__team_init(t, parent->pe->run, p->start + s->start * p->stride, stride, s->size) != 0) {
            shmalloc_mem_free(t);
            t = NULL;
            s->bad = "out of memory for the new team";
        }
    }
    values[0] = s->bad != NULL ? (uint64_t)(p->parties - me) : 0u; /* the maximum names the lowest */
    values[1] = (uint64_t)(uintptr_t)t;
    shm__team_sync(parent, values, 2, SHM__REDUCE_MAX, NULL);
    if (values[0] != 0) {
        if (p->parties - (int)values[0] == me) shm__split_refuse(parent, s);
        if (t != NULL) shm__team_fini(t);
        return -1;
    }
    if (in) {
        t = (shm__team *)(uintptr_t)shm__published(p, s->start, parent->epoch, 1);
        *made = &t->members[(me - s->start) / s->stride];
        (*made)->config.num_contexts =
            s->config != NULL && (s->config_mask & SHMEM_TEAM_NUM_CONTEXTS) ? s->config->num_contexts : 0;
    }
    return 0;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)
{
    struct shmalloc_team *parent = shm__handle(parent_team);
    shmem_team_t made = SHMEM_TEAM_INVALID;
    shm__split s;
    int n, me;
    if (new_team != NULL) *new_team = SHMEM_TEAM_INVALID;
    if (parent == NULL) return -1; /* not a member: no collective to join */
    n = parent->team->barrier.parties;
    me = parent->index;
    snprintf(s.call, sizeof s.call, "shmem_team_split_strided(start %d, stride %d, size %d)", start, stride, size);
    s.bad = size < 1 ? "size must be 1 or more"
          : start < 0 || start >= n ? "start is not a PE of the parent team"
          : stride < 1 && size > 1 ? "stride must be 1 or more"
          : (long long)start + (long long)(size - 1) * (size > 1 ? stride : 0) >= n
              ? "the last PE, start + (size - 1) * stride, is not a PE of the parent team"
          : new_team == NULL ? "new_team is NULL" : NULL;
    s.start = start;
    s.stride = size > 1 ? stride : 1;
    s.size = s.bad == NULL && me >= start && (me - start) % s.stride == 0 && (me - start) / s.stride < size ? size : 0;
    s.config = config;
    s.config_mask = config_mask;
    if (shm__split_parent(parent, &s, &made) != 0) return -1;
    *new_team = made;
    return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team)
{
    struct shmalloc_team *parent = shm__handle(parent_team);
    shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    shm__split s;
    int n, me;
    if (xaxis_team != NULL) *xaxis_team = SHMEM_TEAM_INVALID;
    if (yaxis_team != NULL) *yaxis_team = SHMEM_TEAM_INVALID;
    if (parent == NULL) return -1;
    n = parent->team->barrier.parties;
    me = parent->index;
    snprintf(s.call, sizeof s.call, "shmem_team_split_2d(xrange %d)", xrange);
    s.bad = xrange < 1 ? "xrange must be 1 or more"
          : xaxis_team == NULL || yaxis_team == NULL ? "xaxis_team or yaxis_team is NULL" : NULL;
    if (xrange > n) xrange = n;
    s.start = xrange > 0 ? me - me % xrange : 0; /* the row */
    s.stride = 1;
    s.size = xrange > 0 && n - s.start < xrange ? n - s.start : xrange;
    s.config = xaxis_config;
    s.config_mask = xaxis_mask;
    if (shm__split_parent(parent, &s, &x) != 0) return -1;
    s.start = me % xrange; /* the column */
    s.stride = xrange;
    s.size = (n - 1 - s.start) / xrange + 1;
    s.config = yaxis_config;
    s.config_mask = yaxis_mask;
    if (shm__split_parent(parent, &s, &y) != 0) {
        shmem_team_destroy(x);
        return -1;
    }
    *xaxis_team = x;
    *yaxis_team = y;
    return 0;
}
