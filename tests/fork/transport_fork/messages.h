/* messages.h - the fork transport's messages: its table of IDs and
   texts, which shmalloc_fork_run adds (shmalloc_messages_add), and how
   its files print one: as a transport built apart declares its own. */
#ifndef SHM__FORK_MESSAGES_H_INCLUDED
#define SHM__FORK_MESSAGES_H_INCLUDED

#include "shmalloc.h"

#define SHMALLOC_FORK_MESSAGES(X) \
    X(FORK_BARRIER_TIMEOUT, "shmalloc: PE %d waited %d s in barrier %llu of the team of world PEs %d + %d * " \
                            "(0..%d) for PE %s (SHMALLOC_TIMEOUT)\n") \
    X(FORK_MAP_FAILED, "shmalloc_fork_run: cannot map %zu bytes for %s: %s\n") \
    X(FORK_PE_ENDED, "shmalloc_fork_run: PE %d ended with %s %d\n") \
    X(FORK_FORK_FAILED, "shmalloc_fork_run: cannot fork PE %d: %s\n") \
    X(FORK_BAD_ARGS, "%s: npes is %d (must be 1..%d), pe_main %s\n") \
    X(FORK_SPACE_NOWHERE, "shmemx_space_create: PE %d: no space to set: give one\n") \
    X(FORK_SPACE_NO_ROOM, "shmemx_space_create: PE %d: %zu bytes do not fit beside the spaces of a member (each " \
                          "PE has %zu bytes and %d spaces, SHMALLOC_FORK_SPACES): destroy spaces no longer " \
                          "used\n") \
    X(FORK_SPACE_UNREACHABLE, "%s: PE %d: PE %d cannot reach the space at %p: %s (the space's team: %d PEs, " \
                              "world PEs %d + %d * (0..%d))\n") \
    X(FORK_TEAM_BAD_SPLIT, "shmem_team_split_strided: PE %d: start %d, stride %d, size %d do not fit the parent " \
                           "team of %d PEs%s (start >= 0, stride >= 1, size >= 1, start + stride * (size - 1) < " \
                           "%d)\n") \
    X(FORK_TEAM_NO_MEMORY, "shmem_team_split_strided: PE %d: out of memory\n") \
    X(FORK_TEAM_TOO_MANY, "shmem_team_split_strided: PE %d: %d teams are alive, the most the fork transport " \
                          "holds: destroy the teams no longer used\n") \
    X(FORK_TEAM_BAD_PARENT, "shmem_team_split_strided: PE %d: the parent team is %s\n") \
    X(FORK_TEAM_BAD_2D, "shmem_team_split_2d: PE %d: xrange %d (must be >= 1), parent team of %d PEs (-1: not " \
                        "one), xaxis_team and yaxis_team %s\n")

SHMALLOC_MESSAGE_LAYER(SHMALLOC_FORK_MESSAGES, SHMALLOC_FORK_MESSAGE_ROWS)

/* The table's first ID, once shmalloc_fork_run has added it (fork.c). */
extern int shm__fork_messages; /* the fork library is static: no visibility to set */
#define SHM__FORK_MSG(id) SHMALLOC_MSG_IN(shm__fork_messages, id)

#endif /* SHM__FORK_MESSAGES_H_INCLUDED */
