/* pthreads.h - what the files of the pthreads transport share: the
   barrier, one run and its PEs.  Internal: programs include
   ../shmalloc_pthreads.h.

   barrier.c  the barrier and all-reduce among the PE threads of a team,
              with the deadline of SHMALLOC_TIMEOUT
   team.c     the teams (../shmalloc_teams.h): splits, handles, syncs
   space.c    spaces: the contract's team member, their memory, and
              where a member's copy of a space's address is
   run.c      shmalloc_pthreads_run: maps the heaps, starts the PE threads,
              binds the transport contract
   shmem.c    the SHMEM names that start no heap: PE numbers, puts, gets */
#ifndef SHMALLOC_PTHREADS_INTERNAL_H
#define SHMALLOC_PTHREADS_INTERNAL_H

#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_ANONYMOUS and MAP_NORESERVE */
#endif

#include "../../shmalloc.h"
#include "../shmalloc_pthreads.h"
#include "../common/internal.h" /* SHM__INTERNAL, SHM__TSAN */
#include "../common/map.h"
#include "../common/start.h"
#include "../common/wait.h"
#include "messages.h"

#include <pthread.h>
#include <stdint.h>

/* >> barrier (barrier.c) -------------------------------------------------------
   Each PE has a slot of whole cache lines.  A PE publishes its values, then
   the number of the barrier it has reached, in its own slot, and waits
   until every slot shows that number: it polls, yields, then sleeps
   (common/wait.h), and an arriving PE wakes the sleepers only when there
   are any.  A PE that waits longer than the timeout ends the program,
   naming the PEs that did not arrive: one that skipped a collective call
   would otherwise leave its peers waiting forever; one that has ended
   (shm__barrier_leave) ends it at once.  All-reduce values are
   double-buffered by the number's parity: a PE writes a buffer again two
   barriers later, once every PE has passed the barrier in between and so
   has read it.  One barrier per call suffices.  The values are reduced
   by maximum (allreduce_max) or by bitwise AND (allreduce_and, the
   longer). */
enum { SHM__REDUCE_MAX, SHM__REDUCE_AND };
typedef struct shm__slot {
    uint64_t epoch;                  /* atomic: the last barrier this PE reached */
    uint64_t values[2][SHMALLOC_REDUCE_AND_MAX > SHMALLOC_REDUCE_MAX ? SHMALLOC_REDUCE_AND_MAX : SHMALLOC_REDUCE_MAX];
    int counts[2];                   /* values published with them: 0 for a plain barrier */
    int ended;                       /* atomic: this PE reaches no more barriers */
    char pad[64 - sizeof(uint64_t) - 3 * sizeof(int)]; /* whole cache lines */
} shm__slot;

typedef struct shm__barrier {
    shm__slot *slots;    /* one per PE, cache-line aligned, in slots_mem */
    void *slots_mem;     /* from shmalloc_mem_alloc */
    int parties;         /* slot q is world PE start + q * stride */
    int start, stride;
    int team;            /* a split team's: its messages name the team */
    int pauses;          /* polls with a cpu pause before yielding: none when PEs outnumber cpus */
    int timeout;         /* seconds a PE waits before the program ends (SHMALLOC_TIMEOUT) */
    unsigned sleepers;   /* atomic: PEs waiting on cond */
    unsigned leavers;    /* atomic: PEs that have ended (shm__barrier_leave) */
    int expired;         /* atomic: a PE has timed out and reports it */
    pthread_mutex_t mutex;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC, the clock of the wait's deadline */
} shm__barrier;

SHM__INTERNAL int shm__barrier_init(shm__barrier *b, int parties, int timeout, int start, int stride);
SHM__INTERNAL void shm__barrier_fini(shm__barrier *b);
/* Barrier `epoch` (1, 2, ...: each PE counts its own) for PE me; values
   (count of them) become their maximum over the PEs.  space: the space
   whose call this is, for a timeout's message, or NULL. */
SHM__INTERNAL void shm__sync(shm__barrier *b, int me, uint64_t epoch, uint64_t *values, int count, int op,
                             const void *space);
/* Value i that PE q published in barrier epoch, before it was reduced:
   readable until the caller reaches barrier epoch + 1. */
SHM__INTERNAL uint64_t shm__published(const shm__barrier *b, int q, uint64_t epoch, int i);
/* The slot of world PE pe, or -1 when it is not one of b's. */
SHM__INTERNAL int shm__barrier_slot(const shm__barrier *b, int pe);
/* PE me has returned from pe_main and destroyed its heap: a peer waiting
   for it in a barrier ends the program at once, naming it, rather than at
   the timeout. */
SHM__INTERNAL void shm__barrier_leave(shm__barrier *b, int me);

/* >> teams (team.c) -------------------------------------------------------------
   What a team's members share: its barrier, and one handle per member,
   which only that member's threads change.  The world is a team too.  A
   split's first member makes the new team and publishes it through the
   parent's barrier; the last member to let go of it (shmem_team_destroy,
   or the end of a space over it) frees it, the run's end any left. */
typedef struct shm__run shm__run;
typedef struct shm__pe shm__pe;
typedef struct shm__team shm__team;
typedef struct shm__left_map shm__left_map;

struct shmalloc_team {
    shm__team *team;       /* NULL in the global handles SHMEM_TEAM_WORLD and _SHARED */
    shm__pe *pe;           /* the member this handle belongs to */
    int index;             /* its number in the team */
    int destroyed;         /* by shmem_team_destroy: the handle is invalid */
    uint64_t epoch;        /* barriers it has reached in this team */
    shmem_team_config_t config;
};

struct shm__team {
    shm__barrier barrier;  /* slot i: member i, world PE barrier.start + i * barrier.stride */
    struct shmalloc_team *members;
    int holders;           /* atomic: members not destroyed, and spaces over the team */
    shm__team *prev, *next; /* the run's teams (teams_mutex) */
};

/* A heap's transport user: the PE's handle of the heap's team, and for a
   space (space.c) the memory the transport mapped for it and where each
   member's copy of it starts.  A PE's world heap has its own (shm__pe). */
typedef struct shm__space {
    struct shmalloc_team *member;
    shmalloc_map_mem map;      /* map.base NULL: the program's memory, or the world heap (the PE's map) */
    char **bases;          /* a space's: member i's copy at bases[i]; NULL for the world heap */
    shmalloc_heap *heap;   /* a space's, once made */
    struct shm__space *prev, *next; /* the PE's spaces, from the world's (collective calls alone change them) */
} shm__space;

SHM__INTERNAL int shm__team_init(shm__team *t, shm__run *run, int start, int stride, int size);
SHM__INTERNAL void shm__team_fini(shm__team *t);
/* Barrier (count 0) or all-reduce of the members of handle h, for a call
   on space (NULL: on the team itself). */
SHM__INTERNAL void shm__team_sync(struct shmalloc_team *h, uint64_t *values, int count, int op, const void *space);
/* PE me's own handle behind team (WORLD and SHARED resolved), or NULL:
   an invalid handle, one destroyed, or another PE's. */
SHM__INTERNAL struct shmalloc_team *shm__team_handle(shm__pe *me, shmem_team_t team);
/* PE pe has returned from pe_main, so makes no more calls on its split
   teams: a member that waits for it in one ends the program at once
   (shm__barrier_leave). */
SHM__INTERNAL void shm__team_leave_all(shm__pe *pe);
/* Lets go of team t: frees it when no member or space holds it. */
SHM__INTERNAL void shm__team_release(shm__team *t);

/* >> spaces (space.c) -----------------------------------------------------------*/
/* The contract's team and team_done: a child over the PE's handle of team,
   holding the team until the space is destroyed. */
SHM__INTERNAL int shm__tp_team(void *user, const void *team, shmalloc_transport *child);
SHM__INTERNAL void shm__tp_team_done(void *child_user);
/* PE pe has returned from pe_main: the spaces it left are destroyed on
   it alone, their live blocks freed; their memory stays mapped until
   shm__space_unmap_left, once every PE has ended. */
SHM__INTERNAL void shm__space_end_all(shm__pe *pe);
SHM__INTERNAL void shm__space_unmap_left(shm__pe *pe);
/* World PE pe's copy of offset in space; NULL when pe is not a member. */
SHM__INTERNAL char *shm__space_peer(shmalloc_heap *space, int pe, size_t offset);
/* Says that world PE pe is not in space's team, for call what. */
SHM__INTERNAL void shm__space_not_member(const char *what, shmalloc_heap *space, int pe);

/* >> run (run.c) ---------------------------------------------------------------
   One run of shmalloc_pthreads_run: the PEs, their heaps, the world team. */
struct shm__pe {
    shm__run *run;
    int index;
    shmalloc_map_mem map;      /* the heap's memory (common/map.h) */
    shm__space space;      /* its transport's user: member is the PE's world handle */
    shm__left_map *left;   /* the memory of spaces left at pe_main's end (space.c) */
    shmalloc_heap *heap;   /* published to peers by the barrier after create */
    int thread_started;
    pthread_t thread;
    pthread_mutex_t lock;  /* serialises the threads of this PE */
};

struct shm__run {
    int npes;
    shmalloc_start start;      /* what start-up found: sizes, pages, timeout */
    void (*pe_main)(void *arg);
    void *arg;
    shm__team world;       /* members[q]: PE q's handle of SHMEM_TEAM_WORLD */
    pthread_mutex_t teams_mutex; /* the list of teams from world */
    int create_failed;     /* written by the threads, read after join */
    shm__pe *pes;
    /* Start gate: threads wait here until all were created, so a failed
       pthread_create cannot leave the others in the first barrier. */
    pthread_mutex_t gate_mutex;
    pthread_cond_t gate_cond;
    int gate;              /* 0 closed, 1 run, -1 give up */
};

/* The calling thread's PE while it runs pe_main, else NULL. */
extern SHM__INTERNAL SHMALLOC_TLS shm__pe *shm__self;

/* The contract over the members of user's team. */
SHM__INTERNAL void shm__team_transport(shm__space *user, shmalloc_transport *tp);

#endif /* SHMALLOC_PTHREADS_INTERNAL_H */
