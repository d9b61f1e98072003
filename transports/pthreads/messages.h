/* messages.h - the pthreads transport's messages: its table of IDs and
   texts, which shmalloc_pthreads_run adds (shmalloc_messages_add), and
   how its files print one; tests include it to check them by ID. */
#ifndef SHMALLOC_PTHREADS_MESSAGES_H
#define SHMALLOC_PTHREADS_MESSAGES_H

#include "../../shmalloc.h"
#include "../common/internal.h" /* SHM__INTERNAL */

#define SHMALLOC_PTHREADS_MESSAGES(X) \
    X(PTHREADS_BAD_NPES, "shmalloc_pthreads_run: npes is %d, must be 1..%d\n") \
    X(PTHREADS_NO_PE_MAIN, "shmalloc_pthreads_run: pe_main is NULL\n") \
    X(PTHREADS_NO_MEMORY, "shmalloc_pthreads_run: out of memory for %d PE%s\n") \
    X(PTHREADS_LOCK_FAILED, "shmalloc_pthreads_run: cannot create the lock of PE %d\n") \
    X(PTHREADS_THREAD_FAILED, "shmalloc_pthreads_run: cannot start the thread of PE %d\n") \
    X(PTHREADS_PE_RETURNED, "shmalloc: PE %d waits in barrier %llu for PE%s %s, which ha%s returned from " \
                            "pe_main: the PEs made different numbers of collective calls (SHMALLOC_DEBUG=1 says " \
                            "which)\n") \
    X(PTHREADS_BARRIER_TIMEOUT, "shmalloc: barrier timed out after %d s waiting for PE%s %s (PE %d of %d, " \
                                "barrier %llu)\n") \
    X(PTHREADS_TEAM_BARRIER_TIMEOUT, "shmalloc: team barrier timed out after %d s waiting for world PE%s %s (the " \
                                     "team of %d PE%s from world PE %d by stride %d; its PE %d is world PE %d, " \
                                     "barrier %llu): a member skipped a call on this team, or made the team's " \
                                     "calls in another order\n") \
    X(PTHREADS_SPACE_BARRIER_TIMEOUT, "shmalloc: a call on the space at %p timed out after %d s in its team's " \
                                      "barrier, waiting for world PE%s %s (the team of %d PE%s from world PE %d by " \
                                      "stride %d; its PE %d is world PE %d, barrier %llu): a member skipped a call " \
                                      "on this space or its team, or made them in another order\n") \
    X(PTHREADS_TEAM_BAD_SPLIT, "shmalloc: PE %d: %s: %s; the split fails on every PE of the parent team (%d PE%s " \
                               "from world PE %d by stride %d)\n") \
    X(PTHREADS_SPACE_NOT_MEMBER, "%s: PE %d is not in the team of the space at %p (%d PE%s, world PEs from %d by " \
                                 "stride %d; calling PE %d): give a member's world PE number " \
                                 "(shmem_team_translate_pe)\n")

SHMALLOC_MESSAGE_LAYER(SHMALLOC_PTHREADS_MESSAGES, SHMALLOC_PTHREADS_MESSAGE_ROWS)

/* The table's first ID, once shmalloc_pthreads_run has added it (run.c). */
SHM__INTERNAL extern int shm__pthreads_messages;
#define SHM__PTHREADS_MSG(id) SHMALLOC_MSG_IN(shm__pthreads_messages, id)

#endif /* SHMALLOC_PTHREADS_MESSAGES_H */
