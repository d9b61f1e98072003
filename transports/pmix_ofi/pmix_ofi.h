/* pmix_ofi.h - the PMIx + libfabric transport's own header, shared by its
   files and never installed: each layer's state (a struct, and the one
   variable of it that the layer's files define and own), and the
   functions one file offers the others.  Programs include
   ../shmalloc_pmix_ofi.h.

   The files, in layers: each calls only the layers below it, and what a
   lower layer must run of a higher one (a message to deliver, a death to
   check, a barrier that timed out, what to close when start-up fails) is
   registered with it by function pointer.  Each reads only its own state:
   what it needs of a lower layer it is given at its open (shmem.c wires
   them) or asks through that layer's functions; the inline functions at
   the end of this file are the fabric's and the memory layer's, for the
   paths that a call would slow.
     the bottom   options.c    its own environment variables, read once
                               (common/start.c: the heap's, and the table)
                  files.c      /dev/shm files of start-up, ended processes
                  faults.c     messages, and how a PE ends on a failure
                  signals.c    a signal from the launcher
     bootstrap    procs.c      PMIx: deaths reported, the process table
                  bootstrap.c  PMIx: rank and size, key exchange, fences, nodes
     fabric       progress.c   operations posted, the completion queue, waits
                  fabric.c     provider, endpoint, message buffers, registration
     memory       memory.c     the heap's memory, its regions and keys, the peers' heaps
     collectives  barrier.c    dissemination rounds over the fabric (barrier, all-reduce)
                  node.c       the node barrier in shared memory
                  ends.c       a barrier that timed out, a peer that died
                               (collective.h: these three's state and calls)
     entry points rma.c        puts, gets, quiet
                  teams.c      the OpenSHMEM teams, each barrier a group of barrier.c
                  team_heap.c  the contract's team member: a transport over a team's PEs
                               (teams.h: what these two, barrier.c, node.c and ends.c offer for teams)
                  shmem.c      shmem_init and the other entry points, the contract */
#if !defined(SHMALLOC_PMIX_OFI_INTERNAL_H)
#define SHMALLOC_PMIX_OFI_INTERNAL_H

#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, MAP_FIXED_NOREPLACE, memfd_create */
#endif

#include "../../shmalloc.h"
#include "../shmalloc_pmix_ofi.h"
#include "messages.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "../common/internal.h" /* SHM__INTERNAL, SHM__TSAN */
#include "../common/map.h"
#include "../common/start.h"
#include "../common/wait.h"

/* The PMIx and libfabric headers are not clean under our warnings. */
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wpedantic"
#  pragma GCC diagnostic ignored "-Wconversion"
#  pragma GCC diagnostic ignored "-Wsign-conversion"
#  pragma GCC diagnostic ignored "-Wshadow"
#  pragma GCC diagnostic ignored "-Wstrict-prototypes"
#  pragma GCC diagnostic ignored "-Wundef"
#  pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <pmix.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic pop
#endif

#define SHM__MAX_ROUNDS 31        /* dissemination rounds: up to 2^31 PEs */
#define SHM__RECV_SLOTS 64        /* > messages in flight to one PE: 2 epochs x rounds */
/* One message buffer: a 16-byte header and an allreduce_and's values, whole
   cache lines (8 256 bytes), so that a call is one message per round. */
#define SHM__SLOT_BYTES ((16 + 8 * (size_t)SHMALLOC_REDUCE_AND_MAX + 63) & ~(size_t)63)
#define SHM__BOUNCE_BYTES ((size_t)1 << 20) /* FI_MR_LOCAL copies of unregistered buffers */
#define SHM__RAW_KEY_MAX 64       /* FI_MR_RAW key bytes we can carry */
#define SHM__NODE_PREFIX "shmalloc-" /* the node segment's name in /dev/shm, its creator's PID next */

/* ---- options (options.c) ---------------------------------------------------
   What the environment says, read once by shm__read_init_options. */
typedef struct shm__options {
    int any_address;          /* SHMALLOC_PMIX_OFI_ANY_ADDRESS */
    int verbose;              /* SHMALLOC_VERBOSE */
    int direct;               /* SHMALLOC_PMIX_OFI_DIRECT */
    int node_barrier;         /* SHMALLOC_PMIX_OFI_NODE_BARRIER */
    const char *provider;     /* FI_PROVIDER, or NULL */
    int launched;             /* PMIX_NAMESPACE or PMIX_RANK: a PMIx launcher started us */
#if defined(SHMALLOC_TESTING)
    const char *fail_register;  /* SHMALLOC_TEST_FAIL_REGISTER */
    const char *test_node_size; /* SHMALLOC_TEST_NODE_SIZE */
    const char *kill_at;        /* SHMALLOC_TEST_KILL_AT */
    const char *stall_at;       /* SHMALLOC_TEST_STALL_AT */
#endif
} shm__options;

SHM__INTERNAL void shm__read_init_options(shm__options *o);

/* ---- the bottom: files (files.c), faults (faults.c), signals (signals.c) -- */
/* Appends s, or v in decimal, to line[*n], within cap: async-signal-safe. */
SHM__INTERNAL void shm__append(char *line, size_t *n, size_t cap, const char *s);
SHM__INTERNAL void shm__append_int(char *line, size_t *n, size_t cap, long v);

/* This PE's own files of start-up, removed when it ends abnormally. */
enum { SHM__FILE_ENDPOINT, SHM__FILE_NODE, SHM__FILES };
SHM__INTERNAL void shm__files_set(int which, const char *path); /* NULL: forgotten */
SHM__INTERNAL void shm__files_unlink(int which);
SHM__INTERNAL void shm__remove_files(void);
SHM__INTERNAL int shm__sweep(int mine);
SHM__INTERNAL void shm__start_sweeper(void);
SHM__INTERNAL const char *shm__proc_state(long pid, char *text, size_t cap);
SHM__INTERNAL int shm__pid_gone(long pid);
SHM__INTERNAL void shm__dev_shm_space(char *out, size_t cap, unsigned long long *free_bytes);

SHM__INTERNAL void shm__faults_open(int verbose, void (*on_init_fail)(void));
SHM__INTERNAL void shm__note(int id, const char *fmt, ...) SHMALLOC_FORMAT(2, 3);
SHM__INTERNAL void shm__fatal(int id, const char *fmt, ...) SHMALLOC_FORMAT(2, 3);
SHM__INTERNAL void shm__init_fail(int id, const char *fmt, ...) SHMALLOC_FORMAT(2, 3);
SHM__INTERNAL void shm__init_end(void); /* shm__init_fail once the message is out */

/* Appends to line what a PE ended by signal sig says; 0: no PE here. */
typedef int (*shm__signal_words_fn)(int sig, char *line, size_t *n, size_t cap);
SHM__INTERNAL void shm__install_signals(shm__signal_words_fn words);
SHM__INTERNAL void shm__restore_signals(void);

/* ---- bootstrap: PMIx (bootstrap.c) ------------------------------------- */
/* Which PEs share this PE's node (shm__map_nodes). */
typedef struct shm__nodes {
    int count;              /* nodes the PEs run on; 0: unknown */
    int size, me;           /* PEs on this node, and our index among them */
    int *ranks;             /* their ranks, ascending: ranks[0] leads */
    int *leaders;           /* the node leaders' ranks, ascending */
    int *leader_of;         /* each PE's node's leader */
} shm__nodes;

typedef struct shm__boot {
    int have_pmix;
    pmix_proc_t proc;
    size_t event_ref;
    int event_registered;
    int me, npes;
    shm__nodes nodes;
    int timeout;            /* seconds a fence or a get may take */
#if defined(SHMALLOC_TESTING)
    const char *kill_at, *stall_at, *test_node_size; /* the options of the same names */
#endif
} shm__boot;

SHM__INTERNAL extern shm__boot shm__job; /* bootstrap.c's */

SHM__INTERNAL int shm__pmix_init(const shm__options *o, int timeout);
SHM__INTERNAL int shm__pmix_get_u32(pmix_rank_t rank, const char *key, uint32_t *out);
SHM__INTERNAL void shm__pmix_put(const char *key, void *bytes, size_t n);
SHM__INTERNAL size_t shm__pmix_get_bytes(int pe, const char *key, void *out, size_t cap);
SHM__INTERNAL void shm__fence(const char *what, void (*poll)(void));
SHM__INTERNAL void shm__map_nodes(void);
SHM__INTERNAL void shm__pmix_close(void);
SHM__INTERNAL void shm__pmix_abort(int status);
SHM__INTERNAL void shm__pmix_event(size_t ref, pmix_status_t status, const pmix_proc_t *source, pmix_info_t info[],
                                   size_t ninfo, pmix_info_t results[], size_t nresults,
                                   pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata);
SHM__INTERNAL void shm__procs_open(const pmix_proc_t *self, int npes);
SHM__INTERNAL int shm__dead_pe(int *status);
SHM__INTERNAL void shm__gone_pes(char *out, size_t cap);
#if defined(SHMALLOC_TESTING)
SHM__INTERNAL void shm__test_step(const char *what);
#endif

/* ---- fabric (fabric.c, progress.c) ------------------------------------- */
enum { SHM__OP_SEND, SHM__OP_RECV, SHM__OP_WRITE, SHM__OP_READ };

/* The context of every posted operation: completions find it again. */
typedef struct shm__op {
    struct fi_context2 ctx; /* first: FI_CONTEXT and FI_CONTEXT2 modes */
    int kind;
    int index;              /* receive slot, or the peer of an RMA */
    int done;
} shm__op;

/* Where a piece of a peer's heap is for an RMA: its region's address
   there, the offset in that region, and the region's key. */
typedef struct shm__remote {
    uint64_t base, offset, key;
} shm__remote;

/* What puts, gets and quiet need of the open fabric (shm__fabric_rma). */
typedef struct shm__rma_means {
    size_t max_msg;         /* the longest RMA */
    char *bounce;           /* SHM__BOUNCE_BYTES for local memory outside the heap (FI_MR_LOCAL), or NULL */
    char *flush_word;       /* quiet's reads land here, */
    void *local_desc;       /* and both are of the message buffers' registration */
    int flush_by_read;      /* quiet reads from each peer written to (no FI_DELIVERY_COMPLETE) */
} shm__rma_means;

typedef struct shm__fabric {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *local_mr;
    void *local_desc;
    uint64_t mr_mode, tx_flags;
    size_t max_msg;
    const char *prov;
    char *local;            /* send slots, receive slots, flush word, bounce buffer */
    size_t local_bytes;
    char *send_slots, *recv_slots, *flush_word, *bounce;
    uint64_t recv_unposted; /* slots whose repost met -FI_EAGAIN */
    shm__op send_ops[SHM__MAX_ROUNDS], recv_ops[SHM__RECV_SLOTS];
    fi_addr_t *addrs;       /* each PE's address */
    void (*deliver)(const void *message, size_t len); /* a received message goes there */
    void (*check)(void);    /* at every poll: a peer that died ends this PE */
    int me, npes;           /* this PE and the job's size, named in messages */
    int timeout;            /* seconds an operation may take */
    int threaded;           /* SHMEM_THREAD_MULTIPLE: the progress lock is taken */
} shm__fabric;

SHM__INTERNAL extern shm__fabric shm__ofi; /* progress.c's, fabric.c's */

SHM__INTERNAL void shm__fabric_open(int me, int npes, int nodes, const char *provider, int timeout,
                                   void (*check)(void));
SHM__INTERNAL int shm__fabric_up(void);
SHM__INTERNAL uint64_t shm__fabric_mr_mode(void);
SHM__INTERNAL int shm__mr_register(void *buf, size_t len, uint64_t access, uint64_t key, struct fid_mr **mr,
                                   void **desc);
SHM__INTERNAL int shm__key_map_raw(uint64_t base, uint8_t *raw, size_t size, uint64_t *key);
SHM__INTERNAL void shm__key_unmap(uint64_t key);
SHM__INTERNAL void shm__post_recv(int slot);
SHM__INTERNAL void *shm__send_buffer(int slot);
SHM__INTERNAL shm__op *shm__send(int slot, int to, size_t len);
SHM__INTERNAL void shm__fabric_rma(shm__rma_means *out);
SHM__INTERNAL void shm__post_rma(int kind, int pe, void *local, void *desc, size_t len, const shm__remote *remote,
                                 shm__op *op);
SHM__INTERNAL void shm__fabric_close(void);
SHM__INTERNAL void shm__fabric_text(char *out, size_t cap);
SHM__INTERNAL const char *shm__op_name(int kind);
SHM__INTERNAL void shm__progress_deliver_to(void (*deliver)(const void *message, size_t len));
SHM__INTERNAL void shm__progress(void);
SHM__INTERNAL void shm__poll(void);
SHM__INTERNAL int shm__progress_until(const int *flag);
SHM__INTERNAL void shm__wait_op(shm__op *op, const char *what, int pe);

/* ---- the heap's memory and regions (memory.c) -------------------------- */
/* A registered region of this PE's heap: [offset, offset + bytes) from its
   base, the same region on every PE. */
typedef struct shm__region {
    size_t offset, bytes;
    struct fid_mr *mr;
    void *desc;
} shm__region;

/* What this PE knows of a peer's heap. */
typedef struct shm__heap_peer {
    uint64_t base;
    uint64_t key[SHMALLOC_MAX_REGIONS]; /* per region; mapped when FI_MR_RAW */
    unsigned char key_mapped[SHMALLOC_MAX_REGIONS];
    long pid;               /* its process, when it shares this PE's node and PID namespace; else 0 */
    char *direct;           /* its block space mapped here (same node), or NULL */
    char *direct_map;       /* that mapping, and its length */
    size_t direct_len;
} shm__heap_peer;

typedef struct shm__heap_state {
    int me, npes;           /* this PE and the job's size, given at shm__place_heap */
    shm__heap_peer *peers;
    shmalloc_map_mem map;      /* the heap's memory (common/map.h) */
    int fixed_address, same_address;
    shmalloc_heap *heap;
    char *base;             /* the registered block space */
    size_t bytes;           /* atomic: puts of other threads read it during growth */
    shm__region regions[SHMALLOC_MAX_REGIONS];
    int nregions;
    unsigned registrations; /* attempts so far: names each exchange */
#if defined(SHMALLOC_TESTING)
    const char *fail_register; /* SHMALLOC_TEST_FAIL_REGISTER */
#endif
} shm__heap_state;

SHM__INTERNAL extern shm__heap_state shm__mem; /* memory.c's */

SHM__INTERNAL void shm__place_heap(const shmalloc_start *s, const shm__options *o, int me, int npes);
SHM__INTERNAL int shm__tp_register(void *user, void *base, size_t bytes);
SHM__INTERNAL int shm__tp_deregister(void *user, void *base, size_t bytes);
SHM__INTERNAL size_t shm__heap_remote(int pe, uint64_t offset, size_t len, shm__remote *remote);
SHM__INTERNAL size_t shm__heap_local(const char *local, size_t len, void **desc);
SHM__INTERNAL void shm__memory_close(void);
SHM__INTERNAL long shm__peer_pid(int pe);

/* ---- the entry points (shmem.c, rma.c) ---------------------------------- */
typedef struct shm__entry_state {
    int running;
    int thread_level;       /* SHMEM_THREAD_*, as provided */
    pthread_mutex_t heap_mutex; /* the heap's lock (contract lock/unlock), with MULTIPLE */
    shm__options opt;
    shmalloc_start start;       /* the heap's sizes and pages: a space's defaults */
} shm__entry_state;

SHM__INTERNAL extern shm__entry_state shm__w; /* zero until shmem_init */

/* Puts, gets and quiet (rma.c): what quiet must flush, per peer. */
typedef struct shm__rma_peer {
    int dirty;              /* written by libfabric since the last quiet */
    shm__op flush;          /* quiet's read */
} shm__rma_peer;

typedef struct shm__rma_state {
    int me, npes;           /* this PE and the job's size, given at shm__rma_open */
    int threaded;           /* SHMEM_THREAD_MULTIPLE */
    int reach;              /* peers are reached by libfabric: the fabric is open */
    shm__rma_means means;   /* the fabric's */
    shm__rma_peer *peers;
    shm__op op;             /* a put's or a get's piece under way */
    int direct_dirty;       /* atomic; copied into a peer's heap since the last quiet */
} shm__rma_state;

SHM__INTERNAL extern shm__rma_state shm__rma; /* rma.c's */

SHM__INTERNAL void shm__rma_open(int me, int npes, int threaded);
/* A barrier over every PE combining count values by max (none: a plain
   barrier), through node memory or by messages (shmem.c); the teams (teams.c). */
SHM__INTERNAL void shm__world_collective(uint64_t *values, int count);

SHM__INTERNAL void shm__rma_close(void);

/* With SHMEM_THREAD_MULTIPLE, shm__progress_mutex serialises every use of
   the endpoint, the completion queue and what progress writes (the
   barrier's inbox, operations' done flags, the peers' keys and the heap's
   regions); a thread waiting for a put, a get or a quiet holds it and
   progresses for every thread of the PE.  Barriers and growth take it per
   poll, so puts of other threads go on meanwhile.  The heap's own lock
   (heap_mutex) is taken before it, never inside.  Copies into same-node
   peers' heaps take no lock.  Below MULTIPLE no lock is taken. */
SHM__INTERNAL extern pthread_mutex_t shm__progress_mutex;

static inline void shm__enter(void)
{
    if (shm__ofi.threaded) pthread_mutex_lock(&shm__progress_mutex);
}

static inline void shm__leave(void)
{
    if (shm__ofi.threaded) pthread_mutex_unlock(&shm__progress_mutex);
}

/* Growth publishes it after the new region; puts by libfabric read the
   region under the lock, and direct copies need no more than the size. */
static inline size_t shm__heap_bytes(void)
{
    return __atomic_load_n(&shm__mem.bytes, __ATOMIC_RELAXED);
}

/* This PE's heap's base from shmem_init to shmem_finalize, else NULL. */
static inline char *shm__heap_base(void) { return shm__mem.heap ? shm__mem.base : NULL; }

/* PE pe's heap mapped here (a same-node peer's), or NULL.  While the heap exists. */
static inline char *shm__peer_heap(int pe) { return shm__mem.peers[pe].direct; }

/* 1 when [p, p + n) lies inside this PE's registered heap. */
static inline int shm__in_heap(const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)shm__mem.base;
    size_t bytes;
    if (!shm__mem.base || a < base) return 0;
    bytes = shm__heap_bytes();
    return a - base <= bytes && n <= bytes - (a - base);
}

#endif /* SHMALLOC_PMIX_OFI_INTERNAL_H */
