/* shmalloc_teams.h - OpenSHMEM 1.5 teams, which every transport of
   shmalloc implements, and the transport side of spaces.
   MIT licence: see the end of ../shmalloc.h.

   USAGE
     Included by each transport's header (shmalloc_pthreads.h,
     shmalloc_pmix_ofi.h): a program includes its transport's header.

         shmem_team_t pair;
         shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, NULL, 0, &pair);
         if (pair != SHMEM_TEAM_INVALID) {      PEs 0 and 1
             shmem_team_sync(pair);             the two alone
             shmem_team_destroy(pair);
         }

   TEAMS
     Every team is a strided subset of the world: world PEs start,
     start + stride, ... (size of them), kept in world numbers.  A split
     is collective over its parent team only; a PE outside the new team
     gets SHMEM_TEAM_INVALID and 0.  Bad start, stride, size or xrange:
     nonzero on every member of the parent, after a message.  Each team
     has its own barrier and all-reduce, so disjoint teams synchronise at
     once, and overlapping teams used in the same order never mix.
     SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED are handles the calling PE
     resolves to its own team: SHARED is the PEs sharing memory (the node;
     a process of threads; a PE alone when PEs are processes of one
     machine without shared heaps).  A barrier that waits past
     SHMALLOC_TIMEOUT names the team and the PEs that did not
     come. */
#ifndef SHMALLOC_TEAMS_H_INCLUDED
#define SHMALLOC_TEAMS_H_INCLUDED

#include "../shmalloc.h"

typedef struct shmalloc_team *shmem_team_t; /* each transport defines struct shmalloc_team */
typedef struct {
    int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

#if defined(__cplusplus)
extern "C" {
#endif

/* Handles; a transport whose PEs are threads resolves them to the calling PE's team. */
extern struct shmalloc_team shmalloc_team_world, shmalloc_team_shared;
#define SHMEM_TEAM_WORLD (&shmalloc_team_world)
#define SHMEM_TEAM_SHARED (&shmalloc_team_shared)

/* This PE's number in team; -1: invalid or not a member. */
int shmem_team_my_pe(shmem_team_t team);
/* The team's PEs; -1: invalid. */
int shmem_team_n_pes(shmem_team_t team);
/* 0 after filling the members of *config that config_mask names; nonzero
   on an invalid team. */
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
/* src_pe of src_team as a PE of dest_team; -1 when it is not one. */
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
/* Collective over parent_team: the PEs start, start + stride, ... (size
   of them, in parent numbers) become *new_team.  0, or nonzero on every
   member of the parent. */
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team);
/* Collective over parent_team: its PEs as a grid xrange wide; each PE
   joins its row (*xaxis_team) and its column (*yaxis_team). */
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team);
/* Collective over team: a barrier of its PEs.  0; nonzero on an invalid team. */
int shmem_team_sync(shmem_team_t team);
/* Each member, once: the handle is invalid afterwards; the team's spaces
   fail with SHMEMX_MALLOC_TEAM_DESTROYED until destroyed. */
void shmem_team_destroy(shmem_team_t team);

#if !defined(SHMALLOC_NO_SHMEM_NAMES) /* the space types are among those names */
/* Collective over team's PEs only: a space (">> spaces" in shmalloc.h)
   in memory the transport maps (or config->mem).  0, or nonzero (a
   SHMEMX_MALLOC_* code) on every member, *space NULL.  Afterwards
   shmem_ptr, shmem_putmem, shmem_getmem and shmem_addr_accessible take
   its addresses with a member's world PE number; another PE's is NULL,
   0, or the end of the job with a message. */
int shmemx_space_create(shmem_team_t team, const shmemx_space_config_t *config, shmemx_space_t *space);
/* Collective over the space's team: shmalloc_space_destroy, then the
   memory the transport mapped is unmapped. */
long shmemx_space_destroy(shmemx_space_t space, long flags);
#endif

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_TEAMS_H_INCLUDED */
