/* shmalloc_pmix_ofi.h - the PMIx + libfabric transport of shmalloc: PEs are
   processes.  MIT licence: see the end of ../shmalloc.h.

   USAGE
     Link your program with this transport (libshmalloc_pmix_ofi, or its
     sources: transports/pmix_ofi/[a-z]*.c and transports/common/[a-z]*.c), the
     allocator (libshmalloc, shmalloc.c, or a file of your own that defines
     SHMALLOC_IMPLEMENTATION), PMIx and libfabric:

         cc -std=c99 -I. prog.c shmalloc.c transports/pmix_ofi/[a-z]*.c transports/common/[a-z]*.c \
            $(pkg-config --cflags --libs pmix libfabric) -o prog

         #include "transports/shmalloc_pmix_ofi.h"

         int main(void)
         {
             shmem_init();
             int *x = shmem_malloc(sizeof *x);    collective, as usual
             *x = shmem_my_pe();
             shmem_barrier_all();
             ...
             shmem_free(x);
             shmem_finalize();
             return 0;
         }

     Run it with any PMIx launcher:

         mpirun -np 4 ./prog               (Open MPI; as root add
                                            --allow-run-as-root, and
                                            --oversubscribe for more PEs
                                            than cores)
         srun --mpi=pmix -n 4 ./prog       (Slurm)

     Started without a launcher (no PMIx server to reach) the program runs
     as one PE, rank 0 of 1, without libfabric: puts and gets are copies.

   WHAT IT DOES
     shmem_init asks PMIx for the rank and the job size, maps the symmetric
     heap (SHMEM_SYMMETRIC_HEAP_SIZE bytes, or SHMALLOC_HEAP_MAX for a heap
     that grows, plus the allocator's overhead, MAP_NORESERVE) at the same
     virtual address on every PE when it can,
     opens a libfabric reliable-datagram endpoint, swaps endpoint names and
     heap keys through PMIx, and creates the heap collectively.  Remote
     addresses are computed from offsets, so heaps at different addresses
     work too.  When every PE is on one node, barriers and the allocator's
     all-reduce go through a small shared-memory segment: a dissemination
     barrier, in which each PE publishes the barrier's number beside the
     values combined so far and, in each of ceil(log2 P) rounds, reads one
     peer's; on several nodes they are hierarchical: the node's rounds,
     then dissemination rounds of small libfabric messages among one
     leader per node, then the leader's release through the segment.  A
     slot or a message holds up to SHMALLOC_REDUCE_AND_MAX values, so a
     drain's AND is one round: 16 512 bytes of segment per PE per round,
     3 ceil(log2 P) + 2 registered message slots of 8 256 bytes per PE.
     shmem_putmem / shmem_getmem are fi_write / fi_read, waited for on the
     completion queue, except to PEs on the same node: there each heap is
     a memfd that the node's other PEs map whole (growth room included)
     through /proc/PID/fd at start-up, so puts and gets are copies and
     shmem_ptr gives the peer's address.  A copy stores each byte once,
     an aligned 1, 2, 4 or 8 bytes in one store, so a peer that waits for
     a flag, clears it and waits again never sees a put land twice.
     Heaps, the shm provider's files and the node segment leave nothing
     in /dev/shm: the latter two carry their creator's PID and are
     unlinked once every peer has opened them; a PE whose start-up fails
     or that ends abnormally removes its own, and it and every start-up
     remove this user's such files whose process has ended.  A PE that
     fails leaves a process of its own session that removes, once the
     launcher has ended, those of peers mpirun killed (SIGKILL) first.

   TEAMS AND SPACES (shmalloc_teams.h, OpenSHMEM 1.5)
     SHMEM_TEAM_WORLD is every PE; SHMEM_TEAM_SHARED the PEs of this node
     (PMIx host names) when their ranks are strided, else this PE alone.
     shmem_team_split_strided and shmem_team_split_2d are collective over
     the parent team only: one all-reduce over it checks that every member
     passed the same valid arguments (else each returns -1 with a message)
     and agrees a tag that none of them uses, then one barrier over it.  A
     team's shmem_team_sync (and the all-reduces of a heap over it) are
     dissemination rounds under its own barrier numbers: through a small
     segment of its own in /dev/shm when all its PEs are on this node
     (and node memory is in use; its first PE makes it during the split,
     and it is unlinked once every member has it open), else by
     libfabric messages among its PEs under its own tag.
     SHMEM_TEAM_SHARED uses the world's node segment, with no message
     (messages when node memory is off).  Teams with no PE in common
     synchronise at once, and teams that share PEs, used in the same order
     on them, never mix their rounds.  A team barrier that waits past
     SHMALLOC_TIMEOUT ends the PE naming the team (its world
     start, stride and size) and, on this node, the members that are not
     in it.  shmem_team_destroy of a team is local (its PEs must be done
     with it); of SHMEM_TEAM_WORLD or SHMEM_TEAM_SHARED it does nothing.
     shmemx_space_create maps a space (a memfd when the heap is one: the
     team's PEs on this node map it whole, as they map each other's
     heaps), registers each of its regions and swaps bases and keys among
     the team's PEs alone (an all-gather over the team's all-reduce);
     shmem_putmem, shmem_getmem, shmem_ptr and shmem_addr_accessible take
     its addresses with a member's world PE number, and a put or get to
     another PE ends the job with a message naming the space's team.

   PROGRESS AND THREADS
     The providers used here progress manually: a put or get to PE k
     completes only while PE k is inside a shmem call (any of them polls).
     shmem_init is shmem_init_thread(SHMEM_THREAD_SINGLE): one thread per
     PE calls the functions below, and nothing is locked.  FUNNELED and
     SERIALIZED are provided as asked and lock nothing either: the program
     keeps its calls one at a time.  With SHMEM_THREAD_MULTIPLE any thread
     may call at any time: the heap takes a lock around each of its calls,
     and puts, gets and quiets by libfabric take a progress lock while
     they wait (the waiting thread progresses for the whole PE); a barrier
     or a heap growth holds it only per poll, so other threads' puts and
     gets go on while one thread is in a collective call.  Copies to
     same-node peers (memfd) take no lock in any mode.  As OpenSHMEM
     requires, the collective calls (shmem_barrier_all, shmem_malloc and
     the other allocations, shmem_free, shmem_finalize) are made by one
     thread of a PE at a time, in the same order on every PE; shmem_quiet
     completes the puts of every thread of the PE.

   ENVIRONMENT (read once, by shmem_init)
     SHMEM_SYMMETRIC_HEAP_SIZE   heap size, e.g. 512M (the default) or 1.5G;
                                 then SHMEM_SYMMETRIC_SIZE, SMA_SYMMETRIC_SIZE.
     FI_PROVIDER                 libfabric provider, e.g. shm or
                                 "tcp;ofi_rxm".  Unset: shm when every PE is
                                 on one node (PMIx says so), else
                                 "tcp;ofi_rxm".  With tcp also set
                                 FI_TCP_IFACE (lo for one machine).
     SHMALLOC_TIMEOUT            seconds a barrier, a PMIx fence, a put or a
                                 get may wait for a peer (default 60), then
                                 the PE ends with a message (formerly
                                 SHMALLOC_BARRIER_TIMEOUT, still read).
     SHMALLOC_PMIX_OFI_ANY_ADDRESS  1: do not try the common fixed address;
                                 each PE maps its heap at its own address
                                 (tests the offset translation).
     SHMALLOC_HEAP_MAX           the size the heap may grow to (unset or 0:
                                 no growth); each growth registers a new
                                 region and swaps its keys through PMIx.
     SHMALLOC_TEST_FAIL_REGISTER  k or k:n: PE k's registration number n
                                 (0, the default: the heap at start-up; 1:
                                 its first growth) fails, to test that every
                                 PE then fails start-up, or the allocation.
                                 Test builds only (-DSHMALLOC_TESTING).
     SHMALLOC_TEST_KILL_AT       STEP:K: PE K kills itself (SIGKILL) at
                                 the step of start-up named STEP: "endpoint"
                                 and "endpoint open" (before and after
                                 opening it), or the fence "endpoint names",
                                 "node segment", "node segment mapped" or
                                 "heap keys".  Test builds only.
     SHMALLOC_TEST_STALL_AT      STEP:K: PE K waits 2 s at STEP (as above).
                                 Test builds only.
     SHMALLOC_PMIX_OFI_DIRECT    0: private heaps, puts and gets to every
                                 PE by libfabric, shmem_ptr NULL for peers
                                 (1, the default: same-node peers' heaps
                                 are mapped).
     SHMALLOC_HUGE_PAGES         off, auto, 2M or 1G (and SOS's
                                 SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES,
                                 SHMEM_SYMMETRIC_HEAP_PAGE_SIZE): the heap's
                                 pages; see transports/common/map.h.
     SHMALLOC_PMIX_OFI_NODE_BARRIER  0: barriers by messages among all
                                 PEs.  1, the default: through node memory
                                 on each node (PMIx host names), and on
                                 several nodes by messages among the node
                                 leaders only, in between.
     SHMALLOC_TEST_NODE_SIZE  N: ranks 0..N-1, N..2N-1, ... count
                                 as separate nodes (tests the hierarchical
                                 barrier on one machine).  Test builds only.
     SHMALLOC_VERBOSE            1: each PE prints its provider, endpoint,
                                 memory-registration mode and heap address
                                 to stderr at start-up.

   ERRORS (stderr; the PE then exits with status 1 unless said otherwise)
     shmalloc: shmem_init_thread: L is not a thread level (...); nothing
         was initialised
         not an exit: the call returns -1, nothing started.
     shmalloc: SHMEM_SYMMETRIC_HEAP_SIZE="..." is not a heap size ...
         the variable's value does not parse (see shmalloc_parse_size).
     shmalloc: SHMALLOC_TIMEOUT="..." is not a timeout ...
     shmalloc: SHMALLOC_PMIX_OFI_ANY_ADDRESS="..." is not 0 or 1
         (the same for SHMALLOC_PMIX_OFI_DIRECT and the NODE_BARRIER one)
     shmalloc: SHMALLOC_HUGE_PAGES="..." is not auto, off or a huge page size ...
     shmalloc: huge pages fell back: ... the heap of PE k (...) has P: why
         not an error: the heap did not get the pages asked for; it says
         what /proc/self/smaps shows instead, and why.  The PE goes on.
     shmalloc: cannot map N bytes for the symmetric heap (VAR=value) ...
         the heap does not fit the address space or the limits (ulimit -v):
         ask for less with the variable named.
     shmalloc: cannot map N bytes for the symmetric heap: Too many open
         files; raise this process's limit on open files (ulimit -n, now L)
         the heap of a PE with peers on its node is a memfd, which needs a
         file descriptor: raise the limit (with ENFILE, the system's:
         fs.file-max).
     shmalloc: no libfabric provider matches FI_PROVIDER=... ...
         the provider named is not installed, not usable here, or lacks
         RMA plus messages on FI_EP_RDM endpoints.  For shm, when
         /dev/shm is short of room, it says so ("the likely cause: /dev/shm
         has N KiB free of M KiB ..."): free space there, or use
         FI_PROVIDER="tcp;ofi_rxm".
     shmalloc: PE k cannot reserve N bytes in /dev/shm for the node
         barrier (...): barriers go by messages
         not an error: /dev/shm is full (or refuses the file), so every PE
         of the job synchronises by messages instead; the node's leader
         says so once.  The PE goes on.
     shmalloc: <libfabric call> failed: ...
         a libfabric object could not be opened or registered.
     shmalloc: PMIx_Init failed ... / PMIx_Get(...) failed / PMIx_Fence ...
         the launcher's PMIx server misbehaved or went away.
     shmalloc: barrier timed out after N s waiting for PE k, which has
         not arrived
         PE k did not reach the barrier within SHMALLOC_TIMEOUT:
         it hangs, is stopped, computes without calling shmem, or died.
         Through node memory every waiting PE names the PEs that have not
         entered the barrier ("PEs j, k, which have not arrived"), or the
         one another PE gave up waiting for ("PE k, which PE j gave up
         waiting for"), not the PE its round waits for.  By messages a PE
         sees only a stopped peer of its node ("PE k, which is stopped"),
         else only whose message it lacks: "waiting for PE k's message
         (PE k, or a PE it waits for, has not arrived ...)".
     shmalloc: PMIx fence (...) timed out after N s
         start-up could not complete: a PE died or hangs before its fence.
     shmalloc: shmem_putmem to PE k not complete after N s ...
         (or shmem_getmem, shmem_quiet): PE k makes no progress.
     shmalloc: PE k ended without shmem_finalize (PMIx event ...)
         the launcher reported the death of PE k (or, on its node, a
         barrier waiting for it found "its process P is gone"); every PE
         that waits for something ends with this message.  Node memory
         tells how PE k ended, and the message says so instead:
     shmalloc: PE k called shmem_finalize after N rounds and ended (...)
         while PE i waits in its round M (...): the PEs' collective calls
         differ
         the PEs did not make the same collective calls: counted in
         rounds (barriers and all-reduces; shmem_malloc, shmem_free, ...
         make one or two each), PE k skipped one, or PE i made one more.
     shmalloc: PE k ended without shmem_finalize (it returned from main
         or called exit, status S) after N rounds (...) while PE i waits
         in its round M
         as above, but PE k's program ended without shmem_finalize, which
         its exit finalized for it; PE k itself says "PE k ended without
         shmem_finalize (...) after its collective call C, while PE i
         makes ...", counting the heap's calls.
     shmalloc: PE k gave up waiting for this PE (its barrier timed out
         ...): PE i was stopped or busy outside shmem for longer than
         SHMALLOC_TIMEOUT
     shmalloc: PE k gave up waiting for PE j, which has not arrived (...)
         PE k's barrier timed out, and PE j is the one missing.
     shmalloc: PE k was ended by signal S (...) while PE i waits ...
         the launcher ended PE k (after another PE failed) while this PE
         was stopped or late.
     shmalloc: PE k ended (...) while PE i waits in its round M
         without node memory (barriers by messages) nothing says whether
         PE k finalized: it ended early, or made fewer collective calls.
     shmalloc: lost the connection to the PMIx server
     shmalloc: PE i of n ended by signal S while waiting for PE k ...
         the launcher killed this PE (Open MPI's mpirun does so to every
         PE when one dies); PE k is the one it was waiting for, or the
         one missing, named as in "barrier timed out" above.
     shmalloc: <libfabric operation> to/from PE k failed: ...
         a completion reported an error (the peer died, a bad key, ...).
     shmalloc: team barrier timed out after N s waiting for PE k, which
         has not arrived (the team of world PEs start S, stride T, size N;
         its PE i, PE j of n, its barrier B)
         a member of the team did not call shmem_team_sync (or the team's
         collective call) in time; by messages: "waiting for PE k's
         message (PE k, or a PE it waits for, has not arrived)".
     shmalloc: shmem_team_split_strided(start S, stride T, size N) on a
         parent team of P PEs: why; every member of the parent returns -1
         not an exit: the arguments do not make a team of the parent's
         PEs; the call returns -1 and SHMEM_TEAM_INVALID on every member.
     shmalloc: shmem_team_split_strided: the parent team's PEs passed
         different arguments or could not make the team (...)
         not an exit: as above, every member returns -1.
     shmem_putmem: N bytes at P on PE k are not a symmetric range ...
         (or shmem_getmem) the address is outside the heap, or k is not a
         PE: the whole job ends with status 1 (shmem_global_exit).

   SYMMETRIC ADDRESSES
     Only addresses inside the symmetric heap are symmetric: globals and
     statics are not registered, so shmem_putmem to them ends the job.
*/
#ifndef SHMALLOC_PMIX_OFI_H_INCLUDED
#define SHMALLOC_PMIX_OFI_H_INCLUDED

#include "../shmalloc.h"
#include "shmalloc_teams.h"

#include <stddef.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Thread levels of OpenSHMEM 1.5 (see PROGRESS AND THREADS). */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Collective start-up and shut-down (see WHAT IT DOES).  A second
   shmem_init does nothing; so does shmem_finalize without shmem_init. */
void shmem_init(void);
void shmem_finalize(void);
/* shmem_init providing the thread level requested, which *provided
   (when not NULL) receives: 0.  After start-up it only reports the level
   in force.  A level that is not one of the four: -1 and a message on
   stderr, nothing started, *provided untouched. */
int shmem_init_thread(int requested, int *provided);
/* The level in force; SHMEM_THREAD_SINGLE before start-up. */
void shmem_query_thread(int *provided);

/* -1 and 0 before shmem_init. */
int shmem_my_pe(void);
int shmem_n_pes(void);
/* Completes this PE's puts (shmem_quiet), then waits for every PE. */
void shmem_barrier_all(void);
/* Where this PE can load and store pe's copy of the object at dest: dest
   itself for this PE, the peer's heap mapped here for a PE on this node,
   NULL for other nodes, addresses outside the heap, or with
   SHMALLOC_PMIX_OFI_DIRECT=0. */
void *shmem_ptr(const void *dest, int pe);
/* Copy to / from peer pe's copy of a symmetric object.  A range that is not
   symmetric, or a bad pe, ends the job with status 1 and a message.  They
   return when the local buffer may be reused. */
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
/* Every put issued before it has reached its target's memory. */
void shmem_quiet(void);
/* 1 when addr is in this PE's heap and pe is a PE, else 0. */
int shmem_addr_accessible(const void *addr, int pe);
/* Ends every PE of the job with status (PMIx_Abort), flushing stdio. */
void shmem_global_exit(int status);
/* Adds the transport's variables (the mapping's huge pages,
   SHMALLOC_TIMEOUT and the SHMALLOC_PMIX_OFI_* ones above) to the
   options table, for a program that sets or lists them before shmem_init;
   shmem_init adds them itself.  0, or -1 when the table is full. */
int shmalloc_pmix_ofi_options(void);

#if defined(SHMALLOC_TESTING)
/* What this PE's collective calls (barriers and the heap's all-reduces)
   have done since shmem_init, in a transport built with SHMALLOC_TESTING:
   the node barrier's slot reads and the cache lines they span (a poll
   that finds an older barrier's number is not counted: the line is
   fetched again only once its writer has stored), and the messages sent
   and their bytes. */
typedef struct shmalloc_pmix_ofi_counts {
    unsigned long long calls, slot_reads, lines_read, messages, bytes;
    unsigned long long and_calls; /* of the calls, bitwise-AND all-reduces (deferred releases' drains) */
} shmalloc_pmix_ofi_counts;
void shmalloc_pmix_ofi_counts_get(shmalloc_pmix_ofi_counts *out);
/* An all-reduce by max over the team's PEs (its own barrier), as a team's
   heap makes; 0, or -1 for an invalid team or count. */
int shmalloc_pmix_ofi_team_reduce_max(shmem_team_t team, uint64_t *values, int count);
#endif

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_PMIX_OFI_H_INCLUDED */
