/* messages.h - the PMIx transport's messages: its table of IDs and
   texts, which shmem_init adds (shmalloc_messages_add), and how its files
   print one; tests include it to check them by ID. */
#ifndef SHMALLOC_PMIX_OFI_MESSAGES_H
#define SHMALLOC_PMIX_OFI_MESSAGES_H

#include "../../shmalloc.h"
#include "../common/internal.h" /* SHM__INTERNAL */

#define SHMALLOC_PMIX_OFI_MESSAGES(X) \
    /* the PMIx transport: start-up (the PE ends) */ \
    X(PMIX_BAD_THREAD_LEVEL, "shmalloc: shmem_init_thread: %d is not a thread level (SHMEM_THREAD_SINGLE 0, " \
                             "SHMEM_THREAD_FUNNELED 1, SHMEM_THREAD_SERIALIZED 2, SHMEM_THREAD_MULTIPLE 3); " \
                             "nothing was initialised\n") \
    X(PMIX_INIT_FAILED, "shmalloc: PMIx_Init failed (%s) although a PMIx launcher started this process\n") \
    X(PMIX_JOB_SIZE_FAILED, "shmalloc: PMIx_Get(PMIX_JOB_SIZE) failed\n") \
    X(PMIX_BAD_RANK, "shmalloc: PMIx rank %u is not below the job size %u\n") \
    X(PMIX_PUT_FAILED, "shmalloc: PMIx_Put(%s) failed: %s\n") \
    X(PMIX_NO_MEMORY_PES, "shmalloc: out of memory for %d PEs\n") \
    X(PMIX_TEST_NODE_SIZE_BAD, "shmalloc: SHMALLOC_TEST_NODE_SIZE=%s is not a number of PEs (1 or more)\n") \
    X(PMIX_FABRIC_CALL_FAILED, "shmalloc: %s failed: %s (provider %s, PE %d of %d)\n") \
    X(PMIX_FABRIC_NO_MEMORY, "shmalloc: %s failed: out of memory\n") \
    X(PMIX_NO_PROVIDER_CHOSEN, "shmalloc: no libfabric provider matches FI_PROVIDER=%s (chosen because " \
                               "FI_PROVIDER is unset and %s) with RMA and messages on FI_EP_RDM endpoints: %s%s\n") \
    X(PMIX_NO_PROVIDER, "shmalloc: no libfabric provider matches FI_PROVIDER=%s with RMA and messages on " \
                        "FI_EP_RDM endpoints: %s%s\n") \
    X(PMIX_BUFFERS_MAP_FAILED, "shmalloc: cannot map %zu bytes for message buffers\n") \
    X(PMIX_NO_MEMORY_PEERS, "shmalloc: out of memory for %d peers\n") \
    X(PMIX_AV_INSERT_FAILED, "shmalloc: fi_av_insert of PE %d failed: %s\n") \
    X(PMIX_HEAP_LOCK_FAILED, "shmalloc: cannot create the heap's lock\n") \
    /* the PMIx transport: notes (SHMALLOC_VERBOSE) and failures that leave the PE running */ \
    X(PMIX_NOTE_SINGLETON, "shmalloc: no PMIx server reachable (PMIx_Init: %s): running as PE 0 of 1, without " \
                           "libfabric\n") \
    X(PMIX_NOTE_NO_EVENTS, "shmalloc: PE %d: PMIx event registration failed (%s): a dead PE is noticed by " \
                           "timeout only\n") \
    X(PMIX_NOTE_NO_HOSTS, "shmalloc: PE %d: PMIx gives no host names: nodes unknown, barriers by messages\n") \
    X(PMIX_NOTE_FILES_REMOVED, "shmalloc: PE %d removed %d /dev/shm file%s of ended processes\n") \
    X(PMIX_NOTE_PEER_UNMAPPED, "shmalloc: PE %d cannot map PE %d's heap (%s): puts and gets to it go through " \
                               "libfabric\n") \
    X(PMIX_NOTE_SINGLE_PE, "shmalloc: PE 0 of 1: heap %zu bytes at %p (%s), no libfabric\n") \
    X(PMIX_NOTE_STARTED, "shmalloc: PE %d of %d: %s, heap %zu bytes at %p (%s, %s), direct copies to %d PE%s of " \
                         "this node, barriers %s\n") \
    X(PMIX_NODE_BARRIER_NO_SPACE, "shmalloc: PE %d cannot reserve %zu bytes in /dev/shm for the node barrier " \
                                  "(%s; /dev/shm has %s): barriers go by messages\n") \
    X(PMIX_MR_REG_FAILED, "shmalloc: fi_mr_reg of the heap (%zu bytes at %p) failed on PE %d: %s\n") \
    X(PMIX_TEST_REGISTER_FAILED, "shmalloc: registration of the heap made to fail on PE %d (number %u; " \
                                 "SHMALLOC_TEST_FAIL_REGISTER)\n") \
    /* the PMIx transport: failures after start-up (the PE ends) */ \
    X(PMIX_GET_NO_MEMORY, "shmalloc: out of memory for PMIx_Get(%s)\n") \
    X(PMIX_GET_TIMEOUT, "shmalloc: PMIx_Get(%s) of PE %d timed out after %d s%s (PE %d of %d)\n") \
    X(PMIX_GET_FAILED, "shmalloc: PMIx_Get(%s) of PE %d failed: %s\n") \
    X(PMIX_FENCE_START_FAILED, "shmalloc: PMIx_Fence_nb (%s) failed: %s\n") \
    X(PMIX_FENCE_TIMEOUT, "shmalloc: PMIx fence (%s) timed out after %d s%s (PE %d of %d)\n") \
    X(PMIX_FENCE_FAILED, "shmalloc: PMIx fence (%s) failed: %s%s (PE %d of %d)\n") \
    X(PMIX_LOST_SERVER, "shmalloc: lost the connection to the PMIx server (PE %d of %d)\n") \
    X(PMIX_BARRIER_TIMEOUT, "shmalloc: barrier timed out after %d s waiting for PE %d (PE %d of %d, barrier %u)\n") \
    X(PMIX_BARRIER_TIMEOUT_PES, "shmalloc: barrier timed out after %d s waiting for %s (PE %d of %d, barrier " \
                                "%u)\n") \
    X(PMIX_BARRIER_TIMEOUT_MESSAGE, "shmalloc: barrier timed out after %d s waiting for PE %d's message (PE %d, " \
                                    "or a PE it waits for, has not arrived; PE %d of %d, barrier %u)\n") \
    X(PMIX_BARRIER_MALFORMED, "shmalloc: PE %d received a malformed message (%zu bytes)\n") \
    X(PMIX_BARRIER_WRONG_EPOCH, "shmalloc: PE %d received barrier %u's message from PE %d during barrier %u\n") \
    X(PMIX_BARRIER_TWICE, "shmalloc: PE %d received two messages for barrier %u round %u\n") \
    X(PMIX_BARRIER_WRONG_PE, "shmalloc: PE %d expected barrier %u round %d from PE %d, got PE %d\n") \
    X(PMIX_SEND_FAILED, "shmalloc: fi_sendmsg to PE %d failed on PE %d: %s\n") \
    X(PMIX_SPACE_NOT_MEMBER, "%s: PE %d is not in the team of the space at %p (%d PE%s, world PEs from %d by " \
                             "stride %d; PE %d of %d): give a member's world PE number (shmem_team_translate_pe)\n") \
    X(PMIX_TEAM_UNKNOWN_TAG, "shmalloc: PE %d received a message of team %u from PE %d, a team it does not have " \
                             "(destroyed, or the PEs' team calls differ)\n") \
    X(PMIX_TEAM_BARRIER_TIMEOUT, "shmalloc: team barrier timed out after %d s waiting for %s (the team of world " \
                                 "PEs start %d, stride %d, size %d; its PE %d, PE %d of %d, its barrier %u)\n") \
    X(PMIX_SPACE_BARRIER_TIMEOUT, "shmalloc: a call on the space at %p timed out after %d s in its team's " \
                                  "barrier, waiting for %s (the team of world PEs start %d, stride %d, size %d; " \
                                  "its PE %d, PE %d of %d, its barrier %u): a member skipped a call on this space " \
                                  "or its team, or made them in another order\n") \
    X(PMIX_TEAM_BAD_SPLIT, "shmalloc: %s(%s) on a parent team of %d PEs: %s; every member of the parent " \
                           "returns -1 (PE %d of %d)\n") \
    X(PMIX_TEAM_SPLIT_DIFFER, "shmalloc: %s: the parent team's PEs passed different arguments or could not " \
                              "make the team (this PE: arguments %d, %d, %d%s); every member of the parent " \
                              "returns -1 (PE %d of %d)\n") \
    X(PMIX_PEER_FINALIZED, "shmalloc: PE %d called shmem_finalize after %lu rounds and ended (%s) while PE %d " \
                           "waits in its round %lu (a round: a barrier or an all-reduce): the PEs' collective " \
                           "calls differ; PE %d of %d stops\n") \
    X(PMIX_PEER_GAVE_UP_ON_ME, "shmalloc: PE %d gave up waiting for this PE (its barrier timed out after %d s; " \
                               "%s): PE %d was stopped or busy outside shmem for longer than " \
                               "SHMALLOC_TIMEOUT; PE %d of %d stops\n") \
    X(PMIX_PEER_EXITED, "shmalloc: PE %d ended without shmem_finalize (it returned from main or called exit, " \
                        "status %d) after %lu rounds (%s) while PE %d waits in its round %lu (a round: a barrier " \
                        "or an all-reduce): the PEs' collective calls differ; PE %d of %d stops\n") \
    X(PMIX_PEER_SIGNALLED, "shmalloc: PE %d was ended by signal %d (%s; a launcher ends every PE when one fails) " \
                           "while PE %d waits in its round %lu (barriers and all-reduces); PE %d of %d stops\n") \
    X(PMIX_PEER_GAVE_UP, "shmalloc: PE %d gave up waiting for PE %d, which has not arrived (its barrier timed " \
                         "out; %s); PE %d of %d stops\n") \
    X(PMIX_PEER_NO_FINALIZE, "shmalloc: PE %d ended without shmem_finalize (%s); PE %d of %d stops\n") \
    X(PMIX_PEER_ENDED, "shmalloc: PE %d ended (%s) while PE %d waits in its round %lu (barriers and all-reduces); " \
                       "PE %d of %d stops\n") \
    X(PMIX_MR_RAW_ATTR_FAILED, "shmalloc: fi_mr_raw_attr failed: %s (a key over %d bytes?)\n") \
    X(PMIX_MR_KEY_UNAVAILABLE, "shmalloc: fi_mr_key of the heap is not available\n") \
    X(PMIX_MR_MAP_RAW_FAILED, "shmalloc: fi_mr_map_raw of PE %d's key failed: %s\n") \
    X(PMIX_TOO_MANY_REGIONS, "shmalloc: more than %d regions of heap to register\n") \
    X(PMIX_CQ_READERR_FAILED, "shmalloc: fi_cq_readerr failed on PE %d\n") \
    X(PMIX_CQ_READ_FAILED, "shmalloc: fi_cq_read failed on PE %d: %s\n") \
    X(PMIX_RECV_FAILED, "shmalloc: fi_recv failed: %s\n") \
    X(PMIX_OP_FAILED, "shmalloc: %s failed on PE %d: %s (%s)\n") \
    X(PMIX_OP_TO_PE_FAILED, "shmalloc: %s %s PE %d failed on PE %d: %s%s%s%s\n") \
    X(PMIX_RMA_FAILED, "shmalloc: %s %s PE %d failed on PE %d: %s\n") \
    X(PMIX_OP_TIMEOUT, "shmalloc: %s to PE %d not complete after %d s on PE %d: PE %d makes no progress (it must " \
                       "call into shmem)\n")

SHMALLOC_MESSAGE_LAYER(SHMALLOC_PMIX_OFI_MESSAGES, SHMALLOC_PMIX_OFI_MESSAGE_ROWS)

/* The table's first ID, once shmem_init has added it (shmem.c). */
SHM__INTERNAL extern int shm__pmix_messages;
#define SHM__PMIX_MSG(id) SHMALLOC_MSG_IN(shm__pmix_messages, id)

#endif /* SHMALLOC_PMIX_OFI_MESSAGES_H */
