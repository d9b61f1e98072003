/* shmalloc_teams.h - the OpenSHMEM 1.5 teams every transport provides:
   one declaration of each call, which each transport implements. */
#ifndef SHMALLOC_TEAMS_H_INCLUDED
#define SHMALLOC_TEAMS_H_INCLUDED

#if defined(__cplusplus)
extern "C" {
#endif

typedef struct shmalloc_team *shmem_team_t;   /* each transport defines struct shmalloc_team */
typedef struct { int num_contexts; } shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
extern struct shmalloc_team shmalloc_team_world, shmalloc_team_shared; /* handles; a transport whose PEs
                                                are threads resolves them to the calling PE's team */
#define SHMEM_TEAM_WORLD (&shmalloc_team_world)
#define SHMEM_TEAM_SHARED (&shmalloc_team_shared)
int shmem_team_my_pe(shmem_team_t team);              /* -1: invalid or not a member */
int shmem_team_n_pes(shmem_team_t team);              /* -1: invalid */
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team); /* -1 */
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team);
int shmem_team_sync(shmem_team_t team);               /* 0, nonzero on an invalid team */
void shmem_team_destroy(shmem_team_t team);

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_TEAMS_H_INCLUDED */
