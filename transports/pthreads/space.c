/* space.c - spaces on the pthreads transport: the contract's team
   member, shmemx_space_create and _destroy, and where a member's copy of
   a space's address is.  See pthreads.h. */
#include "pthreads.h"

#include <string.h>

/* >> the contract's team member ---------------------------------------------*/
int shm__tp_team(void *user, const void *team, shmalloc_transport *child)
{
    shm__pe *pe = ((shm__space *)user)->member->pe;
    struct shmalloc_team *h = shm__team_handle(pe, (shmem_team_t)(uintptr_t)team);
    shm__space *s;
    size_t n;
    if (h == NULL) return -1;
    n = (size_t)h->team->barrier.parties;
    s = (shm__space *)shmalloc_mem_alloc(1, sizeof *s + n * sizeof *s->bases);
    if (s == NULL) return -1;
    memset(s, 0, sizeof *s);
    s->member = h;
    s->bases = (char **)(void *)(s + 1);
    s->prev = &pe->space;
    s->next = pe->space.next;
    s->next->prev = s;
    pe->space.next = s;
    __atomic_add_fetch(&h->team->holders, 1, __ATOMIC_ACQ_REL); /* the space outlives shmem_team_destroy */
    shm__team_transport(s, child);
    return 0;
}

void shm__tp_team_done(void *child_user)
{
    shm__space *s = (shm__space *)child_user;
    s->prev->next = s->next;
    s->next->prev = s->prev;
    shm__team_release(s->member->team);
    shmalloc_mem_free(s);
}

/* >> shmemx_space_create and _destroy -----------------------------------------*/
/* Collective over the space's members: each learns where the others' copies start. */
static void shm__space_bases(shm__space *s, char *base)
{
    const shm__barrier *b = &s->member->team->barrier;
    uint64_t mine = (uint64_t)(uintptr_t)base;
    int i;
    shm__team_sync(s->member, &mine, 1, SHM__REDUCE_MAX, s->heap);
    for (i = 0; i < b->parties; i++) s->bases[i] = (char *)(uintptr_t)shm__published(b, i, s->member->epoch, 0);
}

int shmemx_space_create(shmem_team_t team, const shmemx_space_config_t *config, shmemx_space_t *space)
{
    shm__pe *me = shm__self;
    struct shmalloc_team *h = shm__team_handle(me, team);
    shmalloc_heap_config hc;
    shmalloc_map_mem map;
    size_t bytes;
    void *mem = NULL;
    long err = 0;
    shmalloc_heap *made;
    shm__space *rec;
    if (space != NULL) *space = NULL;
    if (me == NULL || space == NULL) return -1; /* no collective to join */
    bytes = shmalloc_start_space(&me->run->start, config, &hc);
    memset(&map, 0, sizeof map);
    if (config != NULL && config->mem != NULL) mem = config->mem;
    else if (h != NULL && bytes != 0 && shmalloc_map_heap(&map, bytes, &me->run->start.huge, 0, NULL) == 0) mem = map.base;
    /* else no memory (a failed map, or not a member): the create fails on every member */
    made = shmalloc_space_create(me->heap, h, mem, map.base != NULL ? map.bytes : bytes, &hc, &err);
    if (made == NULL) {
        if (map.base != NULL) shmalloc_map_release(&map);
        return err != 0 ? (int)err : -1;
    }
    rec = (shm__space *)shmalloc_heap_user(made);
    rec->map = map;
    rec->heap = made;
    shm__space_bases(rec, (char *)shmalloc_heap_base(made));
    *space = made;
    return 0;
}

long shmemx_space_destroy(shmemx_space_t space, long flags)
{
    shmalloc_map_mem map;
    long rc;
    if (space == NULL || shmalloc_space_team(space) == NULL) return shmalloc_space_destroy(space, flags);
    map = ((shm__space *)shmalloc_heap_user(space))->map; /* the child's user goes with the space */
    rc = shmalloc_space_destroy(space, flags);
    if (rc == 0 && map.base != NULL) shmalloc_map_release(&map);
    return rc;
}

/* A space's memory kept past its PE's end: a peer may read it until every
   PE has ended, as the world heap's. */
struct shm__left_map {
    shmalloc_map_mem map;
    shm__left_map *next;
};

void shm__space_end_all(shm__pe *pe)
{
    while (pe->space.next != &pe->space) {
        shm__space *s = pe->space.next;
        shm__left_map *left;
        if (s->heap == NULL) break; /* a create in progress (another thread's): its own to finish */
        left = (shm__left_map *)shmalloc_mem_alloc(1, sizeof *left);
        if (left != NULL && s->map.base != NULL) {
            left->map = s->map;
            left->next = pe->left;
            pe->left = left;
            s->map.base = NULL;
        } else {
            shmalloc_mem_free(left); /* without memory for the record, the space is unmapped now */
        }
        shmalloc_space_team_destroyed(pe->heap, s->member); /* no member will sync on it again */
        if (shmemx_space_destroy(s->heap, SHMALLOC_SPACE_FREE_LIVE) != 0) break;
    }
}

void shm__space_unmap_left(shm__pe *pe)
{
    while (pe->left != NULL) {
        shm__left_map *next = pe->left->next;
        shmalloc_map_release(&pe->left->map);
        shmalloc_mem_free(pe->left);
        pe->left = next;
    }
}

/* >> members' addresses --------------------------------------------------------*/
char *shm__space_peer(shmalloc_heap *space, int pe, size_t offset)
{
    const shm__space *s = (const shm__space *)shmalloc_heap_user(space);
    int member = shm__barrier_slot(&s->member->team->barrier, pe);
    return member >= 0 ? s->bases[member] + offset : NULL;
}

void shm__space_not_member(const char *what, shmalloc_heap *space, int pe)
{
    const shm__barrier *b = &((const shm__space *)shmalloc_heap_user(space))->member->team->barrier;
    shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_SPACE_NOT_MEMBER), what, pe, (void *)space, b->parties,
                   b->parties > 1 ? "s" : "", b->start, b->stride, shmem_my_pe());
}
