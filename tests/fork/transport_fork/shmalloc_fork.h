/* shmalloc_fork.h - a small transport of shmalloc, for its tests and as
   the worked example of README.md's "Adding a transport": PEs are forked
   processes.  MIT licence: see the end of ../../shmalloc.h.

   USAGE
     Link this folder's sources (fork.c: the run, barriers, puts and
     gets; teams.c; spaces.c; the Makefile's $(FORK)) with libshmalloc,
     the allocator and the start-up of transports/common/start.h.  They
     use only installed headers, as a transport outside the tree would:
         static void pe_main(void *arg) { ... shmem_malloc ... }
         int main(void) { return shmalloc_fork_run(4, 0, pe_main, NULL); }
     shmalloc_fork_run forks npes processes (1..64), gives each its
     symmetric heap (nominal bytes, or 0 for SHMEM_SYMMETRIC_HEAP_SIZE and
     its fallbacks; SHMALLOC_HEAP_MAX makes it grow), runs pe_main(arg) in
     every one and returns once all have ended: 0 when each returned from
     pe_main, else 1 after a message (a PE that fails ends the others).
     Every heap lives in shared memory mapped before the fork, so a put
     or a get is a copy into or out of the peer's heap at the same offset.
     A barrier that waits longer than SHMALLOC_TIMEOUT seconds
     ends its PE, naming its team and the PEs it waited for.

   TEAMS
     The OpenSHMEM 1.5 team calls of ../../transports/shmalloc_teams.h,
     each team with its own barrier in shared memory.  SHMEM_TEAM_SHARED
     is every PE: each PE's memory is mapped in every PE's process, so all
     of them share memory, as the node's PEs do.  At most 64 teams are
     alive at once, the world's included (a destroyed team's barrier is
     free again once every member has destroyed it).

   SPACES
     shmemx_space_create(team, config, &space) maps nothing: a space takes
     the same offset in each member's room for spaces, reserved shared
     before the fork (SHMALLOC_FORK_SPACES bytes a PE, MAP_NORESERVE).
     shmem_putmem and shmem_getmem reach a space's address on a member,
     named by its world PE; to another PE they end the job, naming the
     space, its team and the PE.  A space over memory the program gives
     (config->mem) is reached by its own PE alone. */
#ifndef SHMALLOC_FORK_H_INCLUDED
#define SHMALLOC_FORK_H_INCLUDED

#include "shmalloc.h"
#include "transports/shmalloc_teams.h"
#include <stddef.h>

#define SHMALLOC_FORK_MAX_PES 64
#if !defined(SHMALLOC_FORK_SPACES)
#  define SHMALLOC_FORK_SPACES ((size_t)256 << 20) /* each PE's room for spaces, in address space */
#endif

int shmalloc_fork_run(int npes, size_t nominal, void (*pe_main)(void *arg), void *arg);
int shmem_my_pe(void);
int shmem_n_pes(void);
void shmem_barrier_all(void);
/* A range that is not symmetric, or a bad pe, ends the PE with status 1. */
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_quiet(void);
/* Ends this PE with status; shmalloc_fork_run then ends the others. */
void shmem_global_exit(int status);

#endif /* SHMALLOC_FORK_H_INCLUDED */
