/* collective.h - the PMIx transport's collectives layer: barrier and
   all-reduce by messages (barrier.c), through node memory (node.c), and
   what a barrier does when a peer does not come (ends.c).  Its state and
   calls, for the layers above (teams.h includes it).  Internal, as
   pmix_ofi.h is. */
#if !defined(SHMALLOC_PMIX_OFI_COLLECTIVE_H)
#define SHMALLOC_PMIX_OFI_COLLECTIVE_H

#include "pmix_ofi.h"

/* ---- barrier and all-reduce (barrier.c, node.c) ------------------------ */
/* A round's message, received possibly before this PE reached the round. */
typedef struct shm__inbox {
    int full;
    int count;
    int source;
    uint64_t values[SHMALLOC_REDUCE_AND_MAX];
} shm__inbox;

typedef struct shm__node_slot shm__node_slot;

#if defined(SHMALLOC_TESTING)
#  define SHM__COUNT(field, n) (shm__coll.counts.field += (n))
#else
#  define SHM__COUNT(field, n) ((void)(n))
#endif

/* PEs whose barrier and all-reduce go by messages among them: the world's
   group (every PE, or one leader per node) or a team's.  Its tag names it
   in its messages, so that groups sharing PEs never mix their rounds. */
typedef struct shm__group {
    uint32_t tag;           /* 0: the world's, 1: SHMEM_TEAM_SHARED's, then the teams' */
    int size, me, rounds;   /* members, this PE's index among them, dissemination rounds */
    int start, stride;      /* member i is world PE start + i * stride, */
    const int *ranks;       /* or ranks[i] when not NULL (the node leaders) */
    uint32_t epoch;         /* the barrier's number */
    shm__inbox *inbox;      /* 2 x rounds: by the epoch's parity, then by round */
    struct shm__group *next; /* the teams' groups, after the world's */
    /* A team through node memory (node.c): its PEs on this node share
       slots, its lowest PE on each node (their leader) sends the messages. */
    int nodes;              /* the team's nodes when it goes so, else 0 */
    int *node_ranks;        /* its PEs on this node, ascending */
    int node_size, node_me, node_rounds;
    struct shm__node_slot *node; /* their slots, or NULL (this PE alone) */
    size_t node_bytes;
    struct shm__group *leaders; /* on a leader, with nodes > 1: the leaders' messages */
    struct shm__group *team; /* in a leaders' group: its team */
    const void *space;      /* the space whose call is in its barrier now, or NULL */
} shm__group;

typedef struct shm__collective {
    int me, npes;           /* this PE and the job's size (shm__ends_open) */
    shm__nodes nodes;       /* the bootstrap's map, its arrays borrowed (shm__node_open) */
    shm__group world;       /* the world's barrier messages; the teams' groups follow it */
    shm__group *current;    /* the group a barrier by messages waits in, or NULL */
    shm__node_slot *node;   /* the node barrier's segment, or NULL */
    size_t node_bytes;
    uint64_t node_epoch;
    int node_pauses;        /* SHM__NODE_SPINS, or 0 when PEs outnumber cpus */
    int node_rounds;        /* dissemination rounds among the node's PEs: ceil(log2 node_size) */
    char node_file[160];    /* its name until every PE has it open */
    unsigned long calls;    /* barriers and all-reduces so far: named when a peer has gone */
    int timeout;            /* seconds a barrier may wait */
    void (*gave_up)(int pe); /* a barrier that timed out waiting for pe: it ends the PE */
    int waiting_for;        /* atomic: the PE a barrier waits for, or -1 (also read by the signal handler) */
    double dead_seen;       /* when a death reported was first seen (ends.c) */
    double awaited_checked; /* when the awaited peer's process was last looked at */
    int finalizing;         /* peers that end now end normally */
    int fold_and;           /* values combine by bitwise AND (allreduce_and), else by max */
#if defined(SHMALLOC_TESTING)
    shmalloc_pmix_ofi_counts counts; /* SHM__COUNT adds to them */
#endif
    shm__inbox world_inbox[2][SHM__MAX_ROUNDS]; /* last: 8 KiB each, the other fields share lines */
} shm__collective;

SHM__INTERNAL extern shm__collective shm__coll; /* barrier.c's, node.c's, ends.c's */

SHM__INTERNAL void shm__barrier_open(int timeout, void (*gave_up)(int pe));
SHM__INTERNAL void shm__disseminate(shm__group *g, uint64_t *values, int count);
SHM__INTERNAL int shm__group_member(const shm__group *g, long long i);
/* values[i] := max(values[i], theirs[i]), or their AND while fold_and is
   set.  Inline: every barrier and all-reduce round runs it. */
static inline void shm__combine(uint64_t *values, const uint64_t *theirs, int count)
{
    int i;
    if (shm__coll.fold_and)
        for (i = 0; i < count; i++) values[i] &= theirs[i];
    else
        for (i = 0; i < count; i++)
            if (theirs[i] > values[i]) values[i] = theirs[i];
}
SHM__INTERNAL void shm__node_open(int allowed, const shm__nodes *nodes, const char *nspace);
SHM__INTERNAL void shm__node_sync(uint64_t *values, int count);
SHM__INTERNAL void shm__node_close(void);
/* How a PE ended, for its node's peers: the kind, below a detail shifted
   left by SHM__END_SHIFT: FINALIZED, its rounds; GAVE_UP, the PE its
   barrier timed out for; SIGNALLED, the signal; EXITED (no shmem_finalize),
   its rounds shifted left by 8 over its exit status. */
enum { SHM__END_FINALIZED = 1, SHM__END_GAVE_UP = 2, SHM__END_SIGNALLED = 3, SHM__END_EXITED = 4 };
#define SHM__END_SHIFT 3
#define SHM__END_KIND(how) ((unsigned)((how) & 7u))
#define SHM__END_DETAIL(how) ((how) >> SHM__END_SHIFT)
SHM__INTERNAL void shm__node_note_end(uint64_t how);
SHM__INTERNAL uint64_t shm__node_end_of(int pe);
SHM__INTERNAL int shm__node_gave_up(int *by);
SHM__INTERNAL int shm__node_absent(int *pes, int max);

/* ---- when a peer does not come (ends.c) ------------------------------ */
SHM__INTERNAL void shm__ends_open(int me, int npes);
SHM__INTERNAL void shm__barrier_gave_up(int pe);
SHM__INTERNAL int shm__signal_words(int sig, char *line, size_t *n, size_t cap);
SHM__INTERNAL void shm__check_deaths(void);

#endif /* SHMALLOC_PMIX_OFI_COLLECTIVE_H */
