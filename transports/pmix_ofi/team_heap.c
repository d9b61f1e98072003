/* team_heap.c - the contract's team member: a transport over a team's
   PEs, for a heap over the team (a space).  Its barrier and all-reduces
   are the team's (teams.c); its regions are registered with libfabric
   and their bases and keys swapped among the members alone, by an
   all-gather made of the team's max all-reduce (each member's record in
   its own place, zeros elsewhere), in as few calls as the records fit. */
#include "pmix_ofi.h"

#include <stdlib.h>
#include <string.h>

#define SHM__TEAM_KEY_FIRST 4096u /* requested keys of spaces' regions: after the world heap's */
#define SHM__RAW_WORDS (SHM__RAW_KEY_MAX / 8)

/* What a member tells the others of one region: every word nonzero
   where it means something, so the maximum keeps it. */
typedef struct shm__team_wire {
    uint64_t ok;            /* 1: registered, 2: failed */
    uint64_t base;          /* the region's address */
    uint64_t key;
    uint64_t raw_base, raw_size;
    uint64_t raw[SHM__RAW_WORDS];
} shm__team_wire;
#define SHM__WIRE_WORDS (sizeof(shm__team_wire) / sizeof(uint64_t))

typedef struct shm__team_tp {
    shmem_team_t team;      /* not read after its destroy (team_done may follow it) */
    int npeers;             /* its size */
    pthread_mutex_t lock;   /* the heap's lock, with SHMEM_THREAD_MULTIPLE */
    char *base;             /* the block space here */
    int nregions;
    shm__region regions[SHMALLOC_MAX_REGIONS];
    shm__heap_peer *peers;  /* by team PE: base (of the first region) and keys */
} shm__team_tp;

static unsigned shm__team_keys; /* regions registered so far: their requested keys */

static void shm__team_call(shm__team_tp *t, uint64_t *values, int count)
{
    shmem_quiet(); /* as the world's: a barrier completes the puts before it */
    shm__team_collective(t->team, values, count);
}

static int shm__team_barrier(void *user)
{
    shm__team_call((shm__team_tp *)user, NULL, 0);
    return 0;
}

static int shm__team_max(void *user, uint64_t *values, int count)
{
    int bad = count < 0 || count > SHMALLOC_REDUCE_MAX;
    shm__team_call((shm__team_tp *)user, values, bad ? 0 : count); /* synchronises even when bad */
    return bad ? -1 : 0;
}

static int shm__team_and(void *user, uint64_t *values, int count)
{
    int bad = count < 0 || count > SHMALLOC_REDUCE_AND_MAX;
    shm__coll.fold_and = 1;
    shm__team_call((shm__team_tp *)user, values, bad ? 0 : count);
    shm__coll.fold_and = 0;
    return bad ? -1 : 0;
}

static int shm__team_lock(void *user)
{
    return pthread_mutex_lock(&((shm__team_tp *)user)->lock) == 0 ? 0 : -1;
}

static int shm__team_unlock(void *user)
{
    return pthread_mutex_unlock(&((shm__team_tp *)user)->lock) == 0 ? 0 : -1;
}

/* This PE's record of region r (ok: it registered). */
static void shm__team_describe(const shm__region *r, void *base, int ok, shm__team_wire *w)
{
    memset(w, 0, sizeof *w);
    w->ok = ok ? 1 : 2;
    w->base = (uint64_t)(uintptr_t)base;
    if (!ok || !r->mr) return;
    if (shm__fabric_mr_mode() & FI_MR_RAW) {
        size_t size = sizeof w->raw;
        int rc = fi_mr_raw_attr(r->mr, &w->raw_base, (uint8_t *)w->raw, &size, 0);
        if (rc) shm__fatal(SHM__MSG(PMIX_MR_RAW_ATTR_FAILED), fi_strerror(-rc), SHM__RAW_KEY_MAX);
        w->raw_size = size;
    } else if ((w->key = fi_mr_key(r->mr)) == FI_KEY_NOTAVAIL) {
        shm__fatal(SHM__MSG(PMIX_MR_KEY_UNAVAILABLE));
    }
}

/* Member q's record of region i. */
static void shm__team_learn(shm__team_tp *t, int q, int i, const shm__team_wire *w)
{
    shm__heap_peer *p = &t->peers[q];
    if (i == 0) p->base = w->base;
    if (w->ok != 1 || !shm__fabric_up()) return;
    if (shm__fabric_mr_mode() & FI_MR_RAW) {
        int rc = shm__key_map_raw(w->raw_base, (uint8_t *)(uintptr_t)w->raw, (size_t)w->raw_size, &p->key[i]);
        if (rc) shm__fatal(SHM__MSG(PMIX_MR_MAP_RAW_FAILED), shm__group_member(&t->team->group, q), fi_strerror(-rc));
        p->key_mapped[i] = 1;
    } else {
        p->key[i] = w->key;
    }
}

/* Every member's record of region i, this PE's being mine. */
static void shm__team_gather(shm__team_tp *t, int i, const shm__team_wire *mine)
{
    int n = t->npeers, me = t->team->group.me, per = SHMALLOC_REDUCE_AND_MAX / (int)SHM__WIRE_WORDS;
    int first, q;
    uint64_t *v = (uint64_t *)malloc(SHMALLOC_REDUCE_AND_MAX * sizeof *v);
    if (!v) shm__fatal(SHM__MSG(PMIX_NO_MEMORY_PEERS), n);
    for (first = 0; first < n; first += per) {
        int count = (n - first < per ? n - first : per) * (int)SHM__WIRE_WORDS;
        memset(v, 0, (size_t)count * sizeof *v);
        if (me >= first && me < first + per) memcpy(v + (size_t)(me - first) * SHM__WIRE_WORDS, mine, sizeof *mine);
        shm__team_collective(t->team, v, count);
        for (q = first; q < n && q < first + per; q++) {
            const shm__team_wire *w = (const shm__team_wire *)(const void *)(v + (size_t)(q - first) * SHM__WIRE_WORDS);
            shm__team_learn(t, q, i, w);
        }
    }
    free(v);
}

static void shm__team_forget(shm__team_tp *t, int i)
{
    int q;
    for (q = 0; q < t->npeers; q++)
        if (t->peers[q].key_mapped[i]) {
            shm__key_unmap(t->peers[q].key[i]);
            t->peers[q].key_mapped[i] = 0;
        }
    if (t->regions[i].mr) fi_close(&t->regions[i].mr->fid);
    memset(&t->regions[i], 0, sizeof t->regions[i]);
    t->nregions = i;
}

/* Collective over the team: registers the region here and learns every
   member's key, even when this PE's registration failed (the heap's
   all-reduce then fails the call on every member). */
static int shm__team_register(void *user, void *base, size_t bytes)
{
    shm__team_tp *t = (shm__team_tp *)user;
    int i = t->nregions, ok = 1;
    shm__region *r = &t->regions[i];
    shm__team_wire mine;
    if (i == SHMALLOC_MAX_REGIONS) shm__fatal(SHM__MSG(PMIX_TOO_MANY_REGIONS), SHMALLOC_MAX_REGIONS);
    if (i == 0) t->base = (char *)base;
    r->offset = (size_t)((char *)base - t->base);
    r->bytes = bytes;
    shm__enter();
    if (shm__fabric_up()) {
        int rc = shm__mr_register(base, bytes, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE,
                                  SHM__TEAM_KEY_FIRST + shm__team_keys++, &r->mr, &r->desc);
        if (rc) shmalloc_print(2, SHM__MSG(PMIX_MR_REG_FAILED), bytes, base, shm__job.me, fi_strerror(-rc));
        ok = rc == 0;
    }
    shm__team_describe(r, base, ok, &mine);
    shm__leave();
    shm__team_gather(t, i, &mine); /* without the lock: the team's rounds poll */
    shm__enter();
    t->nregions = i + 1;
    if (!ok) shm__team_forget(t, i);
    shm__leave();
    return ok ? 0 : -1;
}

static int shm__team_deregister(void *user, void *base, size_t bytes)
{
    shm__team_tp *t = (shm__team_tp *)user;
    int i = t->nregions - 1;
    (void)bytes;
    if (i < 0 || t->base + t->regions[i].offset != (char *)base) return -1;
    shm__enter();
    shm__team_forget(t, i);
    shm__leave();
    return 0;
}

int shm__tp_team(void *user, const void *team, shmalloc_transport *child)
{
    shmem_team_t handle = (shmem_team_t)(uintptr_t)team;
    shm__team_tp *t;
    (void)user;
    if (!shm__is_team(handle) || handle->group.me < 0) return -1;
    if (!(t = (shm__team_tp *)calloc(1, sizeof *t))) return -1;
    t->peers = (shm__heap_peer *)calloc((size_t)handle->group.size, sizeof *t->peers);
    if (!t->peers || (shm__ofi.threaded && pthread_mutex_init(&t->lock, NULL) != 0)) {
        free(t->peers);
        free(t);
        return -1;
    }
    t->team = handle;
    t->npeers = handle->group.size;
    memset(child, 0, sizeof *child);
    child->user = t;
    child->pe = handle->group.me;
    child->npes = handle->group.size;
    child->barrier = shm__team_barrier;
    child->allreduce_max = shm__team_max;
    child->allreduce_and = shm__team_and;
    child->register_region = shm__team_register;
    child->deregister_region = shm__team_deregister;
    if (shm__ofi.threaded) {
        child->lock = shm__team_lock;
        child->unlock = shm__team_unlock;
    }
    return 0;
}

void shm__tp_team_done(void *child_user)
{
    shm__team_tp *t = (shm__team_tp *)child_user;
    if (!t) return;
    shm__enter();
    while (t->nregions > 0) shm__team_forget(t, t->nregions - 1);
    shm__leave();
    if (shm__ofi.threaded) pthread_mutex_destroy(&t->lock);
    free(t->peers);
    free(t);
}
