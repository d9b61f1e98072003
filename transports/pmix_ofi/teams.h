/* teams.h - what the PMIx transport's files offer for teams and spaces:
   a team's segments and leaders across nodes (node.c), the teams (teams.c), and the
   contract's team member with the spaces it carries (team_heap.c).
   Internal, as pmix_ofi.h is. */
#if !defined(SHMALLOC_PMIX_OFI_TEAMS_H)
#define SHMALLOC_PMIX_OFI_TEAMS_H

#include "collective.h"

/* A team's group of barrier.c, and its timeout's report (ends.c). */
SHM__INTERNAL int shm__group_open(shm__group *g);
SHM__INTERNAL void shm__group_link(shm__group *g);
SHM__INTERNAL void shm__group_close(shm__group *g);
SHM__INTERNAL void shm__team_gave_up(const shm__group *g, int pe);
/* A team with several PEs on some node synchronises through node memory:
   on each node its first PE there creates their segment (before the
   split's last barrier over the parent), the others open it, and all the
   team's PEs agree; its node leaders exchange messages. */
SHM__INTERNAL int shm__node_team_plan(shm__group *g, uint32_t tag);
SHM__INTERNAL struct shm__node_slot *shm__node_team_map(const shm__group *g, long creator, int create, size_t *bytes);
SHM__INTERNAL void shm__node_team_unlink(const shm__group *g, long creator);
SHM__INTERNAL void shm__node_team_sync(shm__group *g, uint64_t *values, int count);
SHM__INTERNAL void shm__node_team_close(shm__group *g);
/* SHMEM_TEAM_SHARED through the world's node memory. */
SHM__INTERNAL void shm__node_shared_sync(shm__group *g, uint64_t *values, int count);
/* The team barrier each PE of this node is in (its tag above its epoch), or 0. */
SHM__INTERNAL void shm__node_note_where(uint64_t where);
SHM__INTERNAL int shm__node_where_of(int pe, uint64_t *where);

/* A team (teams.c): a strided subset of the world, in its group's start,
   stride and size. */
struct shmalloc_team {
    shm__group group;       /* first: a linked group is its team */
    shmem_team_config_t config;
};
SHM__INTERNAL void shm__teams_open(int me, int npes);
SHM__INTERNAL void shm__teams_close(void);
SHM__INTERNAL int shm__is_team(shmem_team_t t);
SHM__INTERNAL void shm__team_collective(shmem_team_t t, uint64_t *values, int count);
/* The contract's team and team_done, and spaces' members (team_heap.c). */
SHM__INTERNAL int shm__tp_team(void *user, const void *team, shmalloc_transport *child);
SHM__INTERNAL void shm__tp_team_done(void *child_user);
typedef struct shm__team_tp shm__team_tp;
/* The space holding [addr, addr + n) and *offset there, or NULL. */
SHM__INTERNAL shm__team_tp *shm__space_find(const void *addr, size_t n, size_t *offset);
/* World PE pe's index in the space's team, or -1. */
SHM__INTERNAL int shm__space_member(const shm__team_tp *t, int pe);
/* Member m's copy of the space mapped here (this PE's own included), or NULL. */
SHM__INTERNAL char *shm__space_peer(const shm__team_tp *t, int m);
SHM__INTERNAL size_t shm__space_remote(const shm__team_tp *t, int m, uint64_t offset, size_t len,
                                       shm__remote *remote);
SHM__INTERNAL void shm__space_not_member(const char *what, const shm__team_tp *t, int pe);

#endif /* SHMALLOC_PMIX_OFI_TEAMS_H */
