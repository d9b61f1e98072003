/* team_heap.c - the contract's team member: a transport over a team's
   PEs, for a heap over the team (a space), and the spaces themselves.
   The child's barrier and all-reduces are the team's (teams.c); its
   regions are registered with libfabric and their bases and keys swapped
   among the members alone, by an all-gather made of the team's max
   all-reduce (each member's record in its own place, zeros elsewhere),
   in as few calls as the records fit.  A space the transport maps is a
   memfd, which the members on this node map whole at its first region,
   as they map each other's heaps: puts and gets to them are copies and
   shmem_ptr has their address; to the others they go by libfabric. */
#include "teams.h"
#include "../common/copy.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
    uint64_t node, pid;     /* the first region: how same-node members map the space */
    uint64_t fd;            /* its memfd + 1, or 0 */
    uint64_t mapped, at;    /* the memfd's length, and the block space's offset in it */
} shm__team_wire;
#define SHM__WIRE_WORDS (sizeof(shm__team_wire) / sizeof(uint64_t))

struct shm__team_tp {
    shmem_team_t team;      /* not read after its destroy (team_done may follow it) */
    int npeers, me;         /* its size, and this PE's index */
    int start, stride;      /* its world PEs */
    shmalloc_map_mem map;       /* the space's memory, when the transport mapped it */
    pthread_mutex_t lock;   /* the heap's lock, with SHMEM_THREAD_MULTIPLE */
    char *base;             /* the block space here */
    int nregions;
    shm__region regions[SHMALLOC_MAX_REGIONS];
    shm__heap_peer *peers;  /* by team PE: base (of the first region), keys, mapping */
    const void *space;      /* the space over it, once made: a timeout names it */
};

static unsigned shm__team_keys; /* regions registered so far: their requested keys */
/* The space shmemx_space_create is making: its mapping, for the child. */
static const shmalloc_map_mem *shm__making_map;

static void shm__team_call(shm__team_tp *t, uint64_t *values, int count)
{
    shm__group *g = &t->team->group;
    shmem_quiet(); /* as the world's: a barrier completes the puts before it */
    g->space = t->space;
    shm__team_collective(t->team, values, count);
    g->space = NULL;
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
static void shm__team_describe(const shm__team_tp *t, const shm__region *r, void *base, int ok, shm__team_wire *w)
{
    memset(w, 0, sizeof *w);
    w->ok = ok ? 1 : 2;
    w->base = (uint64_t)(uintptr_t)base;
    if (r == t->regions && t->map.fd >= 0 && t->map.base) {
        w->node = shmalloc_map_node_id();
        w->pid = (uint64_t)getpid();
        w->fd = (uint64_t)t->map.fd + 1;
        w->mapped = t->map.mapped;
        w->at = (uint64_t)((char *)base - t->map.base);
    }
    if (!ok || !r->mr) return;
    if (shm__fabric_mr_mode() & FI_MR_RAW) {
        size_t size = sizeof w->raw;
        int rc = fi_mr_raw_attr(r->mr, &w->raw_base, (uint8_t *)w->raw, &size, 0);
        if (rc) shm__fatal(SHM__PMIX_MSG(PMIX_MR_RAW_ATTR_FAILED), fi_strerror(-rc), SHM__RAW_KEY_MAX);
        w->raw_size = size;
    } else if ((w->key = fi_mr_key(r->mr)) == FI_KEY_NOTAVAIL) {
        shm__fatal(SHM__PMIX_MSG(PMIX_MR_KEY_UNAVAILABLE));
    }
}

/* Member q's space mapped here when it is on this node and so is ours. */
static void shm__team_map_peer(shm__team_tp *t, int q, const shm__team_wire *w)
{
    shm__heap_peer *p = &t->peers[q];
    if (q == t->me || !w->fd || t->map.fd < 0 || w->node != shmalloc_map_node_id() || w->at >= w->mapped) return;
    if (!(p->direct_map = shmalloc_map_peer((long)w->pid, (int)(w->fd - 1), (size_t)w->mapped))) return;
    p->direct_len = (size_t)w->mapped;
    p->direct = p->direct_map + w->at;
}

/* Member q's record of region i. */
static void shm__team_learn(shm__team_tp *t, int q, int i, const shm__team_wire *w)
{
    shm__heap_peer *p = &t->peers[q];
    if (i == 0) p->base = w->base;
    if (i == 0) shm__team_map_peer(t, q, w);
    if (w->ok != 1 || !shm__fabric_up()) return;
    if (shm__fabric_mr_mode() & FI_MR_RAW) {
        int rc = shm__key_map_raw(w->raw_base, (uint8_t *)(uintptr_t)w->raw, (size_t)w->raw_size, &p->key[i]);
        if (rc) shm__fatal(SHM__PMIX_MSG(PMIX_MR_MAP_RAW_FAILED), shm__group_member(&t->team->group, q),
                           fi_strerror(-rc));
        p->key_mapped[i] = 1;
    } else {
        p->key[i] = w->key;
    }
}

/* Every member's record of region i, this PE's being mine. */
static void shm__team_gather(shm__team_tp *t, int i, const shm__team_wire *mine)
{
    int n = t->npeers, me = t->me, per = SHMALLOC_REDUCE_AND_MAX / (int)SHM__WIRE_WORDS;
    int first, q;
    uint64_t *v = (uint64_t *)shmalloc_mem_alloc(SHMALLOC_REDUCE_AND_MAX, sizeof *v);
    if (!v) shm__fatal(SHM__PMIX_MSG(PMIX_NO_MEMORY_PEERS), n);
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
    shmalloc_mem_free(v);
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
    __atomic_store_n(&t->nregions, i, __ATOMIC_RELEASE);
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
    if (i == SHMALLOC_MAX_REGIONS) shm__fatal(SHM__PMIX_MSG(PMIX_TOO_MANY_REGIONS), SHMALLOC_MAX_REGIONS);
    if (i == 0) t->base = (char *)base;
    r->offset = (size_t)((char *)base - t->base);
    r->bytes = bytes;
    shm__enter();
    if (shm__fabric_up()) {
        int rc = shm__mr_register(base, bytes, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE,
                                  SHM__TEAM_KEY_FIRST + shm__team_keys++, &r->mr, &r->desc);
        if (rc) shmalloc_print(2, SHM__PMIX_MSG(PMIX_MR_REG_FAILED), bytes, base, shm__job.me, fi_strerror(-rc));
        ok = rc == 0;
    }
    shm__team_describe(t, r, base, ok, &mine);
    shm__leave();
    shm__team_gather(t, i, &mine); /* without the lock: the team's rounds poll */
    shm__enter();
    __atomic_store_n(&t->nregions, i + 1, __ATOMIC_RELEASE); /* shm__space_find reads it without the lock */
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
    if (!(t = (shm__team_tp *)shmalloc_mem_alloc(1, sizeof *t))) return -1;
    t->peers = (shm__heap_peer *)shmalloc_mem_alloc((size_t)handle->group.size, sizeof *t->peers);
    if (!t->peers || (shm__ofi.threaded && pthread_mutex_init(&t->lock, NULL) != 0)) {
        shmalloc_mem_free(t->peers);
        shmalloc_mem_free(t);
        return -1;
    }
    t->team = handle;
    t->npeers = handle->group.size;
    t->me = handle->group.me;
    t->start = handle->group.start;
    t->stride = handle->group.stride;
    t->map.fd = -1;
    if (shm__making_map) t->map = *shm__making_map;
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
    int q;
    if (!t) return;
    shm__enter();
    while (t->nregions > 0) shm__team_forget(t, t->nregions - 1);
    shm__leave();
    for (q = 0; q < t->npeers; q++)
        if (t->peers[q].direct_map) munmap(t->peers[q].direct_map, t->peers[q].direct_len);
    if (shm__ofi.threaded) pthread_mutex_destroy(&t->lock);
    shmalloc_mem_free(t->peers);
    shmalloc_mem_free(t);
}

/* >> spaces ------------------------------------------------------------------------ */
int shmemx_space_create(shmem_team_t team, const shmemx_space_config_t *config, shmemx_space_t *space)
{
    const shmalloc_start *st = &shm__w.start;
    shmalloc_heap_config hc;
    shmalloc_map_mem map;
    size_t bytes;
    void *mem = NULL;
    long err = 0;
    shmalloc_heap *made;
    if (space) *space = NULL;
    if (!shm__w.running || !space) return -1; /* no collective to join */
    bytes = shmalloc_start_space(st, config, &hc);
    memset(&map, 0, sizeof map);
    map.fd = -1;
    if (config && config->mem) mem = config->mem;
    else if (shm__is_team(team) && shmalloc_map_heap(&map, bytes, &st->huge, shm__mem.map.fd >= 0, NULL) == 0)
        mem = map.base; /* else NULL: the create fails on every member */
    shm__making_map = &map;
    made = shmalloc_space_create(shm__mem.heap, team, mem, mem == map.base && mem ? map.bytes : bytes, &hc, &err);
    shm__making_map = NULL;
    if (!made) {
        if (map.base) shmalloc_map_release(&map);
        return err ? (int)err : -1;
    }
    ((shm__team_tp *)shmalloc_heap_user(made))->space = made;
    *space = made;
    return 0;
}

long shmemx_space_destroy(shmemx_space_t space, long flags)
{
    shmalloc_map_mem map;
    long rc;
    if (!space || !shmalloc_space_team(space)) return shmalloc_space_destroy(space, flags);
    map = ((shm__team_tp *)shmalloc_heap_user(space))->map; /* the child goes with the space */
    rc = shmalloc_space_destroy(space, flags);
    if (rc == 0 && map.base) shmalloc_map_release(&map);
    return rc;
}

/* >> members' copies ------------------------------------------------------------- */
shm__team_tp *shm__space_find(const void *addr, size_t n, size_t *offset)
{
    shmalloc_heap *h = shm__mem.heap ? shmalloc_heap_of(shm__mem.heap, addr) : NULL;
    shm__team_tp *t;
    size_t bytes;
    int last;
    if (!h || !shmalloc_space_team(h)) return NULL;
    t = (shm__team_tp *)shmalloc_heap_user(h);
    last = __atomic_load_n(&t->nregions, __ATOMIC_ACQUIRE) - 1; /* a growth may be under way */
    if (last < 0) return NULL;
    bytes = t->regions[last].offset + t->regions[last].bytes;
    *offset = (size_t)((const char *)addr - t->base);
    return *offset < bytes && n <= bytes - *offset ? t : NULL;
}

int shm__space_member(const shm__team_tp *t, int pe)
{
    long from = (long)pe - t->start;
    if (from < 0 || from % t->stride || from / t->stride >= t->npeers) return -1;
    return (int)(from / t->stride);
}

char *shm__space_peer(const shm__team_tp *t, int m)
{
    return m == t->me ? t->base : t->peers[m].direct;
}

/* Where [offset, offset + len) of member m's copy is; len cut at the end
   of the region holding offset.  With threads the caller holds the lock. */
size_t shm__space_remote(const shm__team_tp *t, int m, uint64_t offset, size_t len, shm__remote *remote)
{
    int i = t->nregions - 1;
    const shm__region *r;
    while (i > 0 && t->regions[i].offset > offset) i--;
    r = &t->regions[i];
    remote->base = t->peers[m].base + r->offset;
    remote->offset = offset - r->offset;
    remote->key = t->peers[m].key[i];
    return len < r->offset + r->bytes - offset ? len : r->offset + r->bytes - offset;
}

void shm__space_not_member(const char *what, const shm__team_tp *t, int pe)
{
    shmalloc_print(2, SHM__PMIX_MSG(PMIX_SPACE_NOT_MEMBER), what, pe, (void *)t->base, t->npeers,
                   t->npeers > 1 ? "s" : "", t->start, t->stride, shm__job.me, shm__job.npes);
    shm__pmix_abort(1);
}
