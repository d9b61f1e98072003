/* spaces.c - the fork transport's side of spaces (shmalloc.h's ">>
   spaces"): their memory, and puts and gets into it.

   Memory mapped shared after the fork would not be seen by the other PE
   processes, so shmalloc_fork_run reserves, before it forks, one shared
   mapping with room for spaces for each PE (SHMALLOC_FORK_SPACES bytes,
   MAP_NORESERVE: pages are taken as they are touched).  A space takes
   the same offset in each member's room, which the members agree on
   through the team's all-reduce: a peer's copy of an address is then at
   the same distance from the peer's room, as in the world heap.  Its
   pages are given back (MADV_REMOVE) when it is destroyed. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MADV_REMOVE */
#endif
#include "team.h"

#include <string.h>
#include <sys/mman.h>

#define SHM__FORK_MAX_SPACES 64        /* spaces alive at once on a PE */
#define SHM__FORK_SPACE_ALIGN ((size_t)64 << 10) /* a space's room starts and ends on this */

/* This PE's spaces: where each lies in its room. */
static struct shm__fork_space {
    shmalloc_heap *heap; /* NULL: a free record */
    size_t offset, bytes;
} shm__fork_spaces[SHM__FORK_MAX_SPACES];

static char *shm__fork_room(int pe) { return shm__fork.spaces + (size_t)pe * SHMALLOC_FORK_SPACES; }

/* The lowest offset at or past `from` where bytes fit in this PE's room
   between its spaces, or UINT64_MAX. */
static uint64_t shm__fork_room_fit(uint64_t from, size_t bytes)
{
    int i, moved = 1;
    while (moved)
        for (moved = 0, i = 0; i < SHM__FORK_MAX_SPACES; i++) {
            const struct shm__fork_space *s = &shm__fork_spaces[i];
            if (s->heap && from < s->offset + s->bytes && s->offset < from + bytes) from = s->offset + s->bytes, moved = 1;
        }
    return from + bytes <= SHMALLOC_FORK_SPACES ? from : UINT64_MAX;
}

/* Collective over t: the lowest offset where bytes fit in every member's
   room (each proposes its own from the others' highest, until all
   propose the same), or UINT64_MAX when one has no room (full: this one). */
static uint64_t shm__fork_room_agree(struct shmalloc_team *t, size_t bytes, int full)
{
    uint64_t from = 0, v[2];
    for (;;) {
        v[0] = full ? UINT64_MAX : shm__fork_room_fit(from, bytes);
        v[1] = ~v[0]; /* its maximum is the complement of the least proposal */
        shm__fork_sync(t, v, 2);
        if (v[0] == UINT64_MAX || v[0] == ~v[1]) return v[0];
        from = v[0];
    }
}

int shmemx_space_create(shmem_team_t team, const shmemx_space_config_t *cfg, shmemx_space_t *space)
{
    struct shmalloc_team *t = shm__fork_team(team);
    struct shm__fork_space *s = shm__fork_spaces;
    shmalloc_heap_config hc;
    size_t bytes;
    uint64_t offset;
    long err = SHMEMX_MALLOC_NOT_MEMBER;
    void *mem = cfg != NULL ? cfg->mem : NULL; /* NULL: the room's */
    if (space != NULL) *space = NULL;
    if (space == NULL) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_SPACE_NOWHERE), shm__fork.me);
        return -1; /* no collective to join */
    }
    if (t == NULL || t->state < 0) { /* the header names this PE and the call */
        shmalloc_space_create(shm__fork.heap, NULL, NULL, 0, NULL, &err);
        return (int)err;
    }
    bytes = shmalloc_start_space(&shm__fork.start, cfg, &hc);
    if (mem == NULL) bytes = (bytes + SHM__FORK_SPACE_ALIGN - 1) & ~(SHM__FORK_SPACE_ALIGN - 1); /* its room */
    while (s < shm__fork_spaces + SHM__FORK_MAX_SPACES && s->heap) s++;
    offset = mem ? 0 : shm__fork_room_agree(t, bytes, s == shm__fork_spaces + SHM__FORK_MAX_SPACES);
    if (offset == UINT64_MAX) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_SPACE_NO_ROOM), shm__fork.me, bytes, (size_t)SHMALLOC_FORK_SPACES,
                       SHM__FORK_MAX_SPACES);
        return SHMEM_MALLOC_FAIL; /* on every member: they agreed */
    }
    *space = shmalloc_space_create(shm__fork.heap, t, mem ? mem : shm__fork_room(shm__fork.me) + offset, bytes, &hc,
                                   &err);
    if (*space == NULL) return (int)err;
    if (!mem) s->heap = *space, s->offset = (size_t)offset, s->bytes = bytes;
    return 0;
}

long shmemx_space_destroy(shmemx_space_t space, long flags)
{
    struct shm__fork_space *s = shm__fork_spaces;
    long e = shmalloc_space_destroy(space, flags);
    while (s < shm__fork_spaces + SHM__FORK_MAX_SPACES && s->heap != space) s++;
    if (e != 0 || space == NULL || s == shm__fork_spaces + SHM__FORK_MAX_SPACES) return e;
    madvise(shm__fork_room(shm__fork.me) + s->offset, s->bytes, MADV_REMOVE); /* fresh zero pages for the next */
    s->heap = NULL;
    return 0;
}

char *shm__fork_space_remote(const char *what, const void *addr, size_t n, int pe)
{
    shmalloc_heap *h = shmalloc_heap_of(shm__fork.heap, addr);
    const struct shmalloc_team *t = h && h != shm__fork.heap ? (const struct shmalloc_team *)shmalloc_space_team(h)
                                                             : NULL;
    uintptr_t a = (uintptr_t)addr, room = (uintptr_t)shm__fork_room(shm__fork.me);
    int shared = a - room < SHMALLOC_FORK_SPACES; /* else the program gave the memory */
    if (t == NULL) return NULL;
    if (shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, (shmem_team_t)t) < 0 || (!shared && pe != shm__fork.me)) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_SPACE_UNREACHABLE), what, shm__fork.me, pe, (void *)h,
                       shared ? "not in its team" : "the program gave its memory, which no other PE maps", t->size,
                       t->start, t->stride, t->size - 1);
        shmem_global_exit(1);
    }
    if (shmalloc_start_range(what, addr, n, pe, shmalloc_heap_base(h), shmalloc_heap_size(h), shm__fork.me,
                             shm__fork.npes) == SIZE_MAX)
        shmem_global_exit(1);
    return shared ? shm__fork_room(pe) + (a - room) : (char *)(uintptr_t)addr;
}
