/* team.h - what fork.c (the run, barriers, puts and gets) and teams.c
   (the team calls, the contract's team member, spaces) share.  Internal
   to the fork transport. */
#ifndef SHM__FORK_TEAM_H_INCLUDED
#define SHM__FORK_TEAM_H_INCLUDED

#include "shmalloc_fork.h"
#include "transports/common/start.h"
#include "messages.h"

#include <stdint.h>

#define SHM__FORK_MAX_TEAMS 64 /* teams alive at once, the world's included: the bits of one word */

/* A PE publishes its all-reduce values, then the number of the barrier
   it has reached, in its own slot.  Values are double-buffered by the
   number's parity: a PE writes a buffer again two barriers later, when
   every member has read it. */
typedef struct shm__fork_slot {
    uint64_t epoch; /* atomic: the last barrier this PE reached */
    uint64_t values[2][SHMALLOC_REDUCE_MAX];
} shm__fork_slot;

/* A team's barrier: a slot per member, by its number in the team, and
   how many members have not destroyed the team yet (the last frees it). */
typedef struct shm__fork_state {
    uint64_t members; /* atomic */
    shm__fork_slot slots[SHMALLOC_FORK_MAX_PES];
} shm__fork_state;

/* The barriers, in one anonymous mapping shared before the fork. */
typedef struct shm__fork_shared {
    uint64_t used; /* atomic: bit i is set while states[i] belongs to a team */
    shm__fork_state states[SHM__FORK_MAX_TEAMS];
} shm__fork_shared;

/* A team as one PE holds it: world numbers, and its own barriers. */
struct shmalloc_team {
    int start, stride, size; /* world PEs start, start + stride, ... (stride 1 when size is 1) */
    int me;                  /* this PE's number in the team */
    int state;               /* its barrier, shared->states[state]; -1 once destroyed */
    int holds;               /* the handle, and each space's child transport over it */
    uint64_t epoch;          /* barriers this PE has reached in it */
    shmem_team_config_t config;
};

/* One run; each PE process has its copy, and shares only what the
   pointers lead to. */
typedef struct shm__fork_run {
    shm__fork_shared *shared;
    shmalloc_map_mem maps[SHMALLOC_FORK_MAX_PES]; /* every PE's heap memory, shared */
    char *spaces;          /* every PE's room for spaces, shared: PE q's at spaces + q * SHMALLOC_FORK_SPACES */
    shmalloc_start start;
    int npes;
    int me;                /* this process's PE; -1 outside a PE */
    shmalloc_heap *heap;
} shm__fork_run;

extern shm__fork_run shm__fork;

/* Barrier of team t; count values become their maximum over its members. */
void shm__fork_sync(struct shmalloc_team *t, uint64_t *values, int count);
/* The world team of this PE, at its start. */
void shm__fork_teams_start(void);
/* The team a handle names (SHMEM_TEAM_SHARED: the world's); NULL for
   SHMEM_TEAM_INVALID or outside a PE. */
struct shmalloc_team *shm__fork_team(shmem_team_t team);
/* Lets go of a hold on t; the last frees it. */
void shm__fork_team_drop(struct shmalloc_team *t);

/* Peer pe's address of [addr, addr + n) in one of this PE's spaces; NULL
   when addr is in none.  Ends the PE when pe is not in the space's team
   or the range is not in the space. */
char *shm__fork_space_remote(const char *what, const void *addr, size_t n, int pe);

#endif /* SHM__FORK_TEAM_H_INCLUDED */
