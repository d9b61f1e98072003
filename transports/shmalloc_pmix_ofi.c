/* shmalloc_pmix_ofi.c - the PMIx + libfabric transport: every PE is a
   process.  PMIx names the PEs and swaps addresses at start-up; libfabric
   carries barriers, the allocator's all-reduce, puts and gets.  See
   shmalloc_pmix_ofi.h. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, MAP_FIXED_NOREPLACE, memfd_create */
#endif

#include "../shmalloc.h"
#include "shmalloc_pmix_ofi.h"
#include "shmalloc_map.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* ThreadSanitizer owns fixed parts of the address space: map anywhere. */
#if defined(__SANITIZE_THREAD__)
#  define SHM__TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define SHM__TSAN 1
#  endif
#endif

#define SHM__MAX_ROUNDS 31        /* dissemination rounds: up to 2^31 PEs */
#define SHM__RECV_SLOTS 64        /* > messages in flight to one PE: 2 epochs x rounds */
#define SHM__SLOT_BYTES 256       /* one message buffer */
#define SHM__BOUNCE_BYTES ((size_t)1 << 20) /* FI_MR_LOCAL copies of unregistered buffers */
#define SHM__RAW_KEY_MAX 64       /* FI_MR_RAW key bytes we can carry */
#define SHM__MSG_MAGIC 0x73686d61u
#define SHM__DEFAULT_TIMEOUT 60
#define SHM__MAX_TIMEOUT 1000000
#define SHM__DEATH_GRACE 1.0      /* s: a message already in flight may still land */
#define SHM__FIXED_FIRST ((uintptr_t)1 << 45) /* 32 TiB: above ASan's shadow, below libraries */
#define SHM__FIXED_END (((uintptr_t)1 << 47) - ((uintptr_t)1 << 40))
#define SHM__FIXED_TRIES 8
#define SHM__LOCAL_KEY 1          /* requested keys, when the provider lets us choose; */
#define SHM__HEAP_KEY 2           /* the heap's pieces take 2, 3, ... */
#define SHM__KEY_EP "shmalloc.ofi.ep"
#define SHM__KEY_NODE "shmalloc.node"
#define SHM__KEY_NODE_OK "shmalloc.node.ok"
#define SHM__NODE_MAX 64          /* PEs per node up to which the node barrier is used */
#define SHM__NODE_SPINS 2000      /* polls with a cpu pause before yielding, when every PE has a cpu */
#define SHM__KEY_HEAP "shmalloc.ofi.heap" /* and the registration's number */

enum { SHM__OP_SEND, SHM__OP_RECV, SHM__OP_WRITE, SHM__OP_READ };

/* The context of every posted operation: completions find it again. */
typedef struct shm__op {
    struct fi_context2 ctx; /* first: FI_CONTEXT and FI_CONTEXT2 modes */
    int kind;
    int index;              /* receive slot, or the peer of an RMA */
    int done;
} shm__op;

/* One barrier / all-reduce message. */
typedef struct shm__msg {
    uint32_t magic;
    uint32_t epoch;         /* the barrier's number */
    uint16_t round;
    uint16_t count;
    int32_t source;
    uint64_t values[SHMALLOC_REDUCE_MAX];
} shm__msg;
#define SHM__MSG_HEADER offsetof(shm__msg, values)

/* A round's message, received possibly before this PE reached the round. */
typedef struct shm__inbox {
    int full;
    int count;
    int source;
    uint64_t values[SHMALLOC_REDUCE_MAX];
} shm__inbox;

/* What PEs swap through PMIx for each registered piece of the heap. */
typedef struct shm__wire_heap {
    uint64_t ok;            /* 0: this PE's registration failed */
    uint64_t base;          /* block space address */
    uint64_t key;
    uint64_t raw_base;      /* FI_MR_RAW only */
    uint64_t raw_size;
    uint8_t raw[SHM__RAW_KEY_MAX];
    uint64_t node, pid;     /* the first piece only: how same-node peers map the heap */
    int64_t fd;             /* its memfd, or -1 */
    uint64_t mapped, at;    /* the memfd's length, and the block space's offset in it */
} shm__wire_heap;

typedef struct shm__peer {
    fi_addr_t addr;
    uint64_t base;
    uint64_t key[SHMALLOC_MAX_REGIONS]; /* per piece; mapped when FI_MR_RAW */
    unsigned char key_mapped[SHMALLOC_MAX_REGIONS];
    int dirty;              /* written since the last quiet */
    shm__op flush;          /* quiet's read */
    char *direct;           /* its block space mapped here (same node), or NULL */
    char *direct_map;       /* that mapping, and its length */
    size_t direct_len;
} shm__peer;

/* A registered piece of this PE's heap: [offset, offset + bytes) from its
   base, the same piece on every PE. */
typedef struct shm__region {
    size_t offset, bytes;
    struct fid_mr *mr;
    void *desc;
} shm__region;

typedef struct shm__node_slot shm__node_slot;

static struct shm__world {
    int running;
    int me, npes;
    /* Barrier messages go among a group: every PE, or one leader per node. */
    int group_size, group_me, rounds;
    int *group;             /* the node leaders' ranks, ascending: the group when smaller than npes */
    int have_pmix;
    pmix_proc_t proc;
    size_t event_ref;
    int event_registered;
    int verbose, any_address, timeout;
    int thread_level;       /* SHMEM_THREAD_*, as provided */
    int threaded;           /* SHMEM_THREAD_MULTIPLE: the locks below are taken */
    /* heap */
    shmalloc_map_mem map;      /* the heap's memory (shmalloc_map.h) */
    int fixed_address, same_address;
    shmalloc_heap *heap;
    size_t nominal;         /* the heap's first size; it may grow to map.bytes */
    char *heap_base;        /* the registered block space */
    size_t heap_bytes;      /* atomic: puts of other threads read it during growth */
    shm__region regions[SHMALLOC_MAX_REGIONS];
    int nregions;
    unsigned registrations; /* attempts so far: names each exchange */
    /* libfabric */
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
    shm__op send_ops[SHM__MAX_ROUNDS], recv_ops[SHM__RECV_SLOTS], rma_op;
    shm__inbox inbox[2][SHM__MAX_ROUNDS];
    uint32_t epoch;
    shm__peer *peers;
    int direct_dirty;       /* atomic; copied into a peer's heap since the last quiet */
    int nodes;              /* nodes the PEs run on; 0: unknown */
    int node_size, node_me; /* PEs on this node, and our index among them */
    int *node_ranks;        /* their ranks, ascending: node_ranks[0] leads */
    int node_size_max;      /* on the most crowded node */
    shm__node_slot *node;   /* the node barrier's segment, or NULL */
    size_t node_bytes;
    uint64_t node_epoch;
    int node_pauses;        /* SHM__NODE_SPINS, or 0 when PEs outnumber cpus */
    char node_file[160];    /* its name until every PE has it open */
    /* failures */
    volatile sig_atomic_t waiting_for; /* PE a barrier waits for, or -1 */
    int dead_pe;            /* atomic: -1 none, -2 the server, else a rank */
    int dead_status;        /* atomic */
    double dead_seen;
    int finalizing;
    char shm_file[160];     /* the shm provider's /dev/shm file, until every peer has it open */
    struct sigaction old_term, old_int;
    int signals_installed;
} shm__w; /* zero until shmem_init */

/* >> threads ----------------------------------------------------------------------
   With SHMEM_THREAD_MULTIPLE, shm__progress_mutex serialises every use of
   the endpoint, the completion queue and what progress writes (the
   barrier's inbox, operations' done flags, the peers' keys and the heap's
   pieces); a thread waiting for a put, a get or a quiet holds it and
   progresses for every thread of the PE.  Barriers and growth take it per
   poll, so puts of other threads go on meanwhile.  shm__heap_mutex is the
   heap's lock (taken before the other, never inside it).  Copies into
   same-node peers' heaps take no lock.  Below MULTIPLE no lock is taken. */
static pthread_mutex_t shm__progress_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t shm__heap_mutex = PTHREAD_MUTEX_INITIALIZER;

static void shm__enter(void)
{
    if (shm__w.threaded) pthread_mutex_lock(&shm__progress_mutex);
}

static void shm__leave(void)
{
    if (shm__w.threaded) pthread_mutex_unlock(&shm__progress_mutex);
}

static int shm__heap_lock(void *user)
{
    (void)user;
    return pthread_mutex_lock(&shm__heap_mutex) == 0 ? 0 : -1;
}

static int shm__heap_unlock(void *user)
{
    (void)user;
    return pthread_mutex_unlock(&shm__heap_mutex) == 0 ? 0 : -1;
}

/* Growth publishes it after the new piece; puts by libfabric read the
   piece under the lock, and direct copies need no more than the size. */
static size_t shm__heap_bytes(void)
{
    return __atomic_load_n(&shm__w.heap_bytes, __ATOMIC_RELAXED);
}

/* >> messages ------------------------------------------------------------------
   Every line starts with "shmalloc: "; fatal ones end the PE. */
static void shm__vsay(const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "shmalloc: %s\n", line);
}

static void shm__note(const char *fmt, ...) SHMALLOC_FORMAT(1, 2);
static void shm__note(const char *fmt, ...)
{
    va_list ap;
    if (!shm__w.verbose) return;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
}

/* A failure after start-up: peers may be waiting for us, so no collective
   clean-up.  The shm provider's file goes; the launcher ends the others. */
static void shm__fatal(const char *fmt, ...) SHMALLOC_FORMAT(1, 2);
static void shm__fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
    if (shm__w.shm_file[0]) unlink(shm__w.shm_file);
    fflush(NULL);
    _exit(1);
}

static void shm__teardown(void);
static void shm__forget_region(int i);

/* A failure during start-up, the same on every PE (a bad variable, no
   provider): close what is open and end cleanly. */
static void shm__init_fail(const char *fmt, ...) SHMALLOC_FORMAT(1, 2);
static void shm__init_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
    shm__teardown();
    fflush(NULL);
    exit(1);
}

static double shm__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* >> signals --------------------------------------------------------------------
   Open MPI's mpirun ends every PE with SIGTERM when one dies, and PMIx
   events do not reach its clients: say which PE we were waiting for, and
   remove the shm provider's file, which only fi_close would remove (when
   start-up has not unlinked it yet). */
static void shm__append(char *line, size_t *n, size_t cap, const char *s)
{
    while (*s && *n + 1 < cap) line[(*n)++] = *s++;
}

static void shm__append_int(char *line, size_t *n, size_t cap, long v)
{
    char digits[24];
    int i = 0;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    if (v < 0) shm__append(line, n, cap, "-");
    do digits[i++] = (char)('0' + u % 10); while ((u /= 10) != 0 && i < (int)sizeof digits);
    while (i > 0 && *n + 1 < cap) line[(*n)++] = digits[--i];
}

static void shm__on_signal(int sig)
{
    char line[256];
    size_t n = 0;
    long waiting = (long)shm__w.waiting_for;
    if (!shm__w.running) { /* after shmem_finalize: only pass it on */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    shm__append(line, &n, sizeof line, "shmalloc: PE ");
    shm__append_int(line, &n, sizeof line, shm__w.me);
    shm__append(line, &n, sizeof line, " of ");
    shm__append_int(line, &n, sizeof line, shm__w.npes);
    shm__append(line, &n, sizeof line, " ended by signal ");
    shm__append_int(line, &n, sizeof line, sig);
    if (waiting >= 0) {
        shm__append(line, &n, sizeof line, " while waiting for PE ");
        shm__append_int(line, &n, sizeof line, waiting);
    }
    shm__append(line, &n, sizeof line, " (a launcher ends every PE when one fails)\n");
    if (write(2, line, n) < 0) { /* nothing more to do */ }
    if (shm__w.shm_file[0]) unlink(shm__w.shm_file);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* 1 when process pid has ended (or is a zombie): nobody will remove its
   files but us. */
static int shm__pid_gone(long pid)
{
    char path[48], text[256];
    size_t n;
    FILE *f;
    if (kill((pid_t)pid, 0) == -1) return errno == ESRCH; /* EPERM: alive, another user's */
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL) return 0;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    while (n > 0 && text[n - 1] != ')') n--; /* the state follows the name's closing parenthesis */
    return n > 0 && text[n] == ' ' && text[n + 1] == 'Z';
}

/* At start-up: the shm provider's files (named PID:N:N) of this user whose
   process has ended, left by an earlier job that was killed outright.
   Never another user's, never a live process's. */
static void shm__sweep_stale_shm_files(void)
{
    DIR *dir = opendir("/dev/shm");
    struct dirent *e;
    int removed = 0;
    while (dir && (e = readdir(dir)) != NULL) {
        char path[300], *end;
        struct stat st;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != ':' || pid <= 0 || strspn(end, "0123456789:") != strlen(end)) continue;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || !shm__pid_gone(pid)) continue;
        removed += unlink(path) == 0;
    }
    if (dir) closedir(dir);
    if (removed) shm__note("PE %d removed %d /dev/shm file%s of ended processes", shm__w.me, removed, removed > 1 ? "s" : "");
}

/* Only where the program left the default action.  Installed before the
   endpoint exists, because the shm provider puts its own handler on top
   (it removes its files, then calls the one it found: ours). */
static void shm__install_signals(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = shm__on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(SIGTERM, &sa, &shm__w.old_term);
        shm__w.signals_installed |= 1;
    }
    if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(SIGINT, &sa, &shm__w.old_int);
        shm__w.signals_installed |= 2;
    }
}

static void shm__restore_signals(void)
{
    if (shm__w.signals_installed & 1) sigaction(SIGTERM, &shm__w.old_term, NULL);
    if (shm__w.signals_installed & 2) sigaction(SIGINT, &shm__w.old_int, NULL);
    shm__w.signals_installed = 0;
}

/* >> environment ---------------------------------------------------------------- */
static void shm__read_env(void)
{
    const char *v = getenv("SHMALLOC_BARRIER_TIMEOUT");
    shm__w.timeout = SHM__DEFAULT_TIMEOUT;
    if (v) {
        char *end;
        long t;
        errno = 0;
        t = strtol(v, &end, 10);
        if (errno || end == v || *end || t < 1 || t > SHM__MAX_TIMEOUT) {
            fprintf(stderr, "shmalloc: SHMALLOC_BARRIER_TIMEOUT=\"%s\" is not a timeout: expected a whole "
                    "number of seconds from 1 to %d\n", v, SHM__MAX_TIMEOUT);
            exit(1);
        }
        shm__w.timeout = (int)t;
    }
    v = getenv("SHMALLOC_PMIX_OFI_ANY_ADDRESS");
    if (v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
        fprintf(stderr, "shmalloc: SHMALLOC_PMIX_OFI_ANY_ADDRESS=\"%s\" is not 0 or 1\n", v);
        exit(1);
    }
    shm__w.any_address = v && strcmp(v, "1") == 0;
    v = getenv("SHMALLOC_VERBOSE");
    shm__w.verbose = v && *v && strcmp(v, "0") != 0;
}

/* The variable shmalloc_heap_size_from_env took the size from, or NULL. */
static const char *shm__size_variable(void)
{
    static const char *const names[] = {"SHMEM_SYMMETRIC_HEAP_SIZE", "SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (getenv(names[i])) return names[i];
    return NULL;
}

static int shm__pmix_get_u32(pmix_rank_t rank, const char *key, uint32_t *out);

/* >> memory ----------------------------------------------------------------------
   The same address on every PE when the kernel agrees: a fixed high address
   aligned to a power of two covering the heap, so shmem_align results are
   symmetric too.  Elsewhere the base is aligned to at most 1 GiB.  With
   peers on this node the heap is a memfd they map (shm__map_peer_heap). */
static int shm__shared_heap(void)
{
    const char *v = getenv("SHMALLOC_PMIX_OFI_DIRECT");
    uint32_t local = 0;
    if (v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
        shm__init_fail("SHMALLOC_PMIX_OFI_DIRECT=\"%s\" is not 0 or 1", v);
    if ((v && strcmp(v, "0") == 0) || !shm__w.have_pmix || shm__w.npes < 2) return 0;
    return shm__pmix_get_u32(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, &local) != 0 || local > 1;
}

/* Reserves room for a heap of `max` bytes (the nominal size, or
   SHMALLOC_HEAP_MAX for a heap that grows). */
static void shm__map_heap(size_t max, const shmalloc_map_huge *huge)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = shmalloc_heap_bytes(max), nominal = shm__w.nominal;
    const char *var = shm__size_variable();
    shmalloc_map_place pl = {SHM__FIXED_FIRST, SHM__FIXED_END, SHM__FIXED_TRIES, NULL};
    size_t step = shmalloc_map_pow2_cover(bytes, page, SHMALLOC_MAP_MAX_ALIGN);
    uintptr_t slot = (uintptr_t)shm__w.me + 1;
#if defined(SHM__TSAN)
    pl.first = 0;
#endif
    if (shm__w.any_address) {
        pl.first = 0;
        if (slot < (SHM__FIXED_END - SHM__FIXED_FIRST) / step / 2) pl.hint = (void *)(SHM__FIXED_FIRST + 2 * slot * step);
    }
    if (bytes == 0 || shmalloc_map_heap(&shm__w.map, bytes, huge, shm__shared_heap(), &pl) != 0) {
        int e = bytes ? errno : ENOMEM;
        if (max != nominal)
            shm__init_fail("cannot reserve %zu bytes for the symmetric heap (SHMALLOC_HEAP_MAX=%s): %s; ask for less",
                           bytes, getenv("SHMALLOC_HEAP_MAX"), strerror(e));
        if (var)
            shm__init_fail("cannot map %zu bytes for the symmetric heap (%s=%s asks for %zu bytes): %s; "
                           "ask for less with %s", bytes, var, getenv(var), nominal, strerror(e), var);
        shm__init_fail("cannot map %zu bytes for the symmetric heap (the default of %zu bytes): %s; "
                       "ask for less with SHMEM_SYMMETRIC_HEAP_SIZE", bytes, nominal, strerror(e));
    }
    shm__w.fixed_address = shm__w.map.fixed;
    shmalloc_map_report(&shm__w.map, huge, shm__w.me);
}

/* >> pmix ------------------------------------------------------------------------ */
static void shm__pmix_proc(pmix_proc_t *p, pmix_rank_t rank)
{
    PMIX_PROC_CONSTRUCT(p);
    PMIX_LOAD_PROCID(p, shm__w.proc.nspace, rank);
}

static int shm__pmix_get_u32(pmix_rank_t rank, const char *key, uint32_t *out)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    int ok;
    shm__pmix_proc(&p, rank);
    if (PMIx_Get(&p, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL) return -1;
    ok = v->type == PMIX_UINT32;
    if (ok) *out = v->data.uint32;
    PMIX_VALUE_RELEASE(v);
    return ok ? 0 : -1;
}

/* Host name of PE q, from PMIx (malloc'd), or NULL. */
static char *shm__pmix_host(int q)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    char *host = NULL;
    shm__pmix_proc(&p, (pmix_rank_t)q);
    if (PMIx_Get(&p, PMIX_HOSTNAME, NULL, 0, &v) == PMIX_SUCCESS && v && v->type == PMIX_STRING)
        host = strdup(v->data.string);
    if (v) PMIX_VALUE_RELEASE(v);
    return host;
}

/* leader[q]: the lowest rank on PE q's node.  PMIx's host names decide;
   SHMALLOC_PMIX_OFI_TEST_NODE_SIZE=N (for tests) makes nodes of N
   consecutive ranks instead.  -1 when a host name is missing. */
static int shm__leaders(int *leader)
{
    const char *v = getenv("SHMALLOC_PMIX_OFI_TEST_NODE_SIZE");
    char **host;
    int *heads, nheads = 0, q, k, rc = 0;
    if (v) {
        char *end;
        long n;
        errno = 0;
        n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < 1 || n > INT32_MAX)
            shm__init_fail("SHMALLOC_PMIX_OFI_TEST_NODE_SIZE=\"%s\" is not a number of PEs (1 or more)", v);
        for (q = 0; q < shm__w.npes; q++) leader[q] = q - (int)(q % n);
        return 0;
    }
    host = (char **)calloc((size_t)shm__w.npes, sizeof *host);
    heads = (int *)malloc((size_t)shm__w.npes * sizeof *heads); /* the leaders so far */
    if (!host || !heads) rc = -1;
    for (q = 0; q < shm__w.npes && rc == 0; q++) {
        host[q] = shm__pmix_host(q);
        if (!host[q]) rc = -1;
        for (k = 0; k < nheads && rc == 0 && strcmp(host[heads[k]], host[q]) != 0; k++) continue;
        if (k == nheads) heads[nheads++] = q;
        leader[q] = heads[k];
    }
    for (q = 0; host && q < shm__w.npes; q++) free(host[q]);
    free(host);
    free(heads);
    return rc;
}

/* Which PEs share this PE's node, and which lead the nodes: the node
   barrier's members and the message group.  Unknown (nodes = 0) when PMIx
   lacks host names. */
static void shm__map_nodes(void)
{
    int *leader = (int *)malloc((size_t)shm__w.npes * sizeof *leader), *count, q;
    shm__w.nodes = 0;
    if (!leader || shm__leaders(leader) != 0) {
        free(leader);
        shm__note("PE %d: PMIx gives no host names: nodes unknown, barriers by messages", shm__w.me);
        return;
    }
    count = (int *)calloc((size_t)shm__w.npes, sizeof *count);
    shm__w.group = (int *)malloc((size_t)shm__w.npes * sizeof *shm__w.group);
    shm__w.node_ranks = (int *)malloc((size_t)shm__w.npes * sizeof *shm__w.node_ranks);
    if (!count || !shm__w.group || !shm__w.node_ranks) shm__init_fail("out of memory for %d PEs", shm__w.npes);
    for (q = 0; q < shm__w.npes; q++) {
        if (leader[q] == q) shm__w.group[shm__w.nodes++] = q;
        if (++count[leader[q]] > shm__w.node_size_max) shm__w.node_size_max = count[leader[q]];
        if (leader[q] == leader[shm__w.me]) {
            if (q == shm__w.me) shm__w.node_me = shm__w.node_size;
            shm__w.node_ranks[shm__w.node_size++] = q;
        }
    }
    free(count);
    free(leader);
}

/* Runs in PMIx's thread: record, and let the polling thread decide. */
static void shm__pmix_event(size_t ref, pmix_status_t status, const pmix_proc_t *source, pmix_info_t info[],
                            size_t ninfo, pmix_info_t results[], size_t nresults,
                            pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    long rank = source ? (long)source->rank : -1;
    int exit_code = -1, have_code = 0;
    size_t i;
    (void)ref, (void)results, (void)nresults;
    for (i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
            rank = (long)info[i].value.data.proc->rank;
        else if (PMIX_CHECK_KEY(&info[i], PMIX_EXIT_CODE) && info[i].value.type == PMIX_INT) {
            exit_code = info[i].value.data.integer;
            have_code = 1;
        }
    }
    if (status == PMIX_ERR_LOST_CONNECTION) rank = -2;
    if (!(status == PMIX_PROC_TERMINATED && have_code && exit_code == 0) && rank != shm__w.me &&
        (rank == -2 || (rank >= 0 && rank < shm__w.npes))) {
        int none = -1;
        __atomic_store_n(&shm__w.dead_status, (int)status, __ATOMIC_RELAXED);
        __atomic_compare_exchange_n(&shm__w.dead_pe, &none, (int)rank, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
    if (cbfunc) cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

static void shm__pmix_register_events(void)
{
    pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_ABORTING, PMIX_PROC_TERMINATED,
                             PMIX_ERR_PROC_TERM_WO_SYNC, PMIX_ERR_LOST_CONNECTION, PMIX_ERR_JOB_TERMINATED};
    pmix_status_t rc = PMIx_Register_event_handler(codes, sizeof codes / sizeof codes[0], NULL, 0,
                                                   shm__pmix_event, NULL, NULL);
    /* Blocking registration returns the handler's reference. */
    if (rc >= 0) {
        shm__w.event_ref = (size_t)rc;
        shm__w.event_registered = 1;
    } else {
        shm__note("PE %d: PMIx event registration failed (%s): a dead PE is noticed by timeout only",
                  shm__w.me, PMIx_Error_string(rc));
    }
}

/* 0 with rank and size, or -1 when no PMIx server is reachable. */
static int shm__pmix_init(void)
{
    pmix_status_t rc = PMIx_Init(&shm__w.proc, NULL, 0);
    uint32_t size = 0;
    if (rc != PMIX_SUCCESS) {
        if (getenv("PMIX_NAMESPACE") || getenv("PMIX_RANK"))
            shm__init_fail("PMIx_Init failed (%s) although a PMIx launcher started this process",
                           PMIx_Error_string(rc));
        shm__note("no PMIx server reachable (PMIx_Init: %s): running as PE 0 of 1, without libfabric",
                  PMIx_Error_string(rc));
        return -1;
    }
    shm__w.have_pmix = 1;
    if (shm__pmix_get_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &size) != 0 || size == 0 || size > INT32_MAX)
        shm__init_fail("PMIx_Get(PMIX_JOB_SIZE) failed");
    if (shm__w.proc.rank >= size) shm__init_fail("PMIx rank %u is not below the job size %u", shm__w.proc.rank, size);
    shm__w.me = (int)shm__w.proc.rank;
    shm__w.npes = (int)size;
    shm__pmix_register_events();
    return 0;
}

static void shm__pmix_put(const char *key, void *bytes, size_t n)
{
    pmix_value_t v;
    pmix_status_t rc;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)bytes; /* PMIx_Put copies */
    v.data.bo.size = n;
    rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) shm__init_fail("PMIx_Put(%s) failed: %s", key, PMIx_Error_string(rc));
}

/* Copies peer pe's value of key into out; returns its length. */
static size_t shm__pmix_get_bytes(int pe, const char *key, void *out, size_t cap)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    pmix_status_t rc;
    size_t n;
    shm__pmix_proc(&p, (pmix_rank_t)pe);
    rc = PMIx_Get(&p, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT || v->data.bo.size > cap) {
        if (v) PMIX_VALUE_RELEASE(v);
        shm__fatal("PMIx_Get(%s) of PE %d failed: %s", key, pe, rc != PMIX_SUCCESS ? PMIx_Error_string(rc) :
                   "not the expected data");
    }
    n = v->data.bo.size;
    memcpy(out, v->data.bo.bytes, n);
    PMIX_VALUE_RELEASE(v);
    return n;
}

static void shm__progress(void);


typedef struct shm__fence_state {
    int done; /* atomic */
    pmix_status_t status;
} shm__fence_state;

static void shm__fence_done(pmix_status_t status, void *cbdata)
{
    shm__fence_state *f = (shm__fence_state *)cbdata;
    f->status = status;
    __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
}

/* A collecting fence that keeps libfabric progressing while it waits: with
   manual progress a peer's RMA or message needs us to poll. */
static void shm__fence(const char *what)
{
    shm__fence_state f = {0, PMIX_SUCCESS};
    pmix_info_t info;
    bool collect = true;
    pmix_status_t rc;
    double deadline = shm__now() + shm__w.timeout;
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = PMIx_Fence_nb(NULL, 0, &info, 1, shm__fence_done, &f);
    if (rc == PMIX_OPERATION_SUCCEEDED) f.done = 1;
    else if (rc != PMIX_SUCCESS) shm__fatal("PMIx_Fence_nb (%s) failed: %s", what, PMIx_Error_string(rc));
    while (!__atomic_load_n(&f.done, __ATOMIC_ACQUIRE)) {
        if (shm__w.ep) {
            shm__enter();
            shm__progress();
            shm__leave();
        }
        if (shm__now() > deadline)
            shm__fatal("PMIx fence (%s) timed out after %d s (PE %d of %d)", what, shm__w.timeout, shm__w.me,
                       shm__w.npes);
        sched_yield();
    }
    PMIX_INFO_DESTRUCT(&info);
    if (f.status != PMIX_SUCCESS) shm__fatal("PMIx fence (%s) failed: %s", what, PMIx_Error_string(f.status));
}

/* >> fabric ------------------------------------------------------------------------ */
static void shm__ofi_check(int rc, const char *call)
{
    if (rc != 0)
        shm__init_fail("%s failed: %s (provider %s, PE %d of %d)", call, fi_strerror(rc < 0 ? -rc : rc),
                       shm__w.prov ? shm__w.prov : "none", shm__w.me, shm__w.npes);
}

static int shm__is_shm(const char *prov)
{
    return strncmp(prov, "shm", 3) == 0 && (prov[3] == '\0' || prov[3] == ';');
}

/* fi_getinfo with every mr_mode bit offered; the provider's answer rules. */
static void shm__choose_provider(void)
{
    struct fi_info *hints = fi_allocinfo(), *list = NULL, *pick, *i;
    const char *env = getenv("FI_PROVIDER"), *want = NULL;
    int rc;
    if (!hints) shm__init_fail("fi_allocinfo failed: out of memory");
    if (!env || !*env) want = shm__w.nodes == 1 ? "shm" : "tcp;ofi_rxm";
    hints->caps = FI_RMA | FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                  FI_MR_ENDPOINT | FI_MR_RAW;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (want) hints->fabric_attr->prov_name = strdup(want); /* fi_freeinfo frees it */
    rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    if (rc != 0 || !list) {
        if (want)
            shm__init_fail("no libfabric provider matches FI_PROVIDER=%s (chosen because FI_PROVIDER is unset and "
                           "%s) with RMA and messages on FI_EP_RDM endpoints: %s", want,
                           strcmp(want, "shm") == 0 ? "every PE is on this node" : "PEs are on several nodes",
                           fi_strerror(-rc));
        shm__init_fail("no libfabric provider matches FI_PROVIDER=%s with RMA and messages on FI_EP_RDM "
                       "endpoints: %s", env, fi_strerror(-rc));
    }
    /* IPv4 first where sockets are the addresses (tcp lists ::1 too). */
    pick = list;
    for (i = list; i; i = i->next)
        if (i->addr_format == FI_SOCKADDR_IN) {
            pick = i;
            break;
        }
    shm__w.info = fi_dupinfo(pick);
    fi_freeinfo(list);
    if (!shm__w.info) shm__init_fail("fi_dupinfo failed: out of memory");
    shm__w.prov = shm__w.info->fabric_attr->prov_name;
    shm__w.mr_mode = (uint64_t)shm__w.info->domain_attr->mr_mode;
    shm__w.max_msg = shm__w.info->ep_attr->max_msg_size ? shm__w.info->ep_attr->max_msg_size : SIZE_MAX;
    /* shm: delivery-complete breaks it, and quiet flushes with reads instead.
       Others (tcp;ofi_rxm): without it a write may land after a barrier. */
    shm__w.tx_flags = shm__is_shm(shm__w.prov) ? 0 : FI_DELIVERY_COMPLETE;
    shm__w.info->tx_attr->op_flags &= ~(uint64_t)(FI_DELIVERY_COMPLETE | FI_TRANSMIT_COMPLETE);
    shm__w.info->tx_attr->op_flags |= shm__w.tx_flags;
}

/* Registers buf, honouring FI_MR_ENDPOINT; 0 or a libfabric error. */
static int shm__mr_register(void *buf, size_t len, uint64_t access, uint64_t key, struct fid_mr **mr, void **desc)
{
    int rc = fi_mr_reg(shm__w.domain, buf, len, access, 0, key, 0, mr, NULL);
    if (rc) {
        *mr = NULL;
        return rc;
    }
    if (shm__w.mr_mode & FI_MR_ENDPOINT) {
        rc = fi_mr_bind(*mr, &shm__w.ep->fid, 0);
        if (!rc) rc = fi_mr_enable(*mr);
        if (rc) {
            fi_close(&(*mr)->fid);
            *mr = NULL;
            return rc;
        }
    }
    *desc = fi_mr_desc(*mr);
    return 0;
}

static void shm__post_recv(int slot)
{
    shm__op *op = &shm__w.recv_ops[slot];
    ssize_t rc;
    op->kind = SHM__OP_RECV;
    op->index = slot;
    rc = fi_recv(shm__w.ep, shm__w.recv_slots + (size_t)slot * SHM__SLOT_BYTES, SHM__SLOT_BYTES, shm__w.local_desc,
                 FI_ADDR_UNSPEC, &op->ctx);
    if (rc == -FI_EAGAIN) shm__w.recv_unposted |= (uint64_t)1 << slot;
    else if (rc) shm__fatal("fi_recv failed: %s", fi_strerror((int)-rc));
    else shm__w.recv_unposted &= ~((uint64_t)1 << slot);
}

/* The shm provider names its /dev/shm file after the endpoint. */
static void shm__remember_shm_file(const char *name, size_t len)
{
    const char *prefix = "fi_shm://";
    size_t plen = strlen(prefix);
    struct stat st;
    char path[sizeof shm__w.shm_file];
    if (len <= plen || strncmp(name, prefix, plen) != 0 || memchr(name, '\0', len) == NULL) return;
    if ((size_t)snprintf(path, sizeof path, "/dev/shm/%s", name + plen) >= sizeof path) return;
    if (strchr(path + 9, '/') || stat(path, &st) != 0) return;
    memcpy(shm__w.shm_file, path, sizeof path);
}

static void shm__fabric_open(void)
{
    struct fi_av_attr av_attr;
    struct fi_cq_attr cq_attr;
    char name[256];
    size_t name_len = sizeof name, page = (size_t)sysconf(_SC_PAGESIZE);
    char *names;
    int q, rc, slots;

    shm__choose_provider();
    shm__ofi_check(fi_fabric(shm__w.info->fabric_attr, &shm__w.fabric, NULL), "fi_fabric");
    shm__ofi_check(fi_domain(shm__w.fabric, shm__w.info, &shm__w.domain, NULL), "fi_domain");
    memset(&av_attr, 0, sizeof av_attr);
    av_attr.type = FI_AV_TABLE;
    av_attr.count = (size_t)shm__w.npes;
    shm__ofi_check(fi_av_open(shm__w.domain, &av_attr, &shm__w.av, NULL), "fi_av_open");
    memset(&cq_attr, 0, sizeof cq_attr);
    cq_attr.format = FI_CQ_FORMAT_DATA;
    shm__ofi_check(fi_cq_open(shm__w.domain, &cq_attr, &shm__w.cq, NULL), "fi_cq_open");
    shm__ofi_check(fi_endpoint(shm__w.domain, shm__w.info, &shm__w.ep, NULL), "fi_endpoint");
    shm__ofi_check(fi_ep_bind(shm__w.ep, &shm__w.av->fid, 0), "fi_ep_bind(av)");
    shm__ofi_check(fi_ep_bind(shm__w.ep, &shm__w.cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    shm__ofi_check(fi_enable(shm__w.ep), "fi_enable");
    shm__ofi_check(fi_getname(&shm__w.ep->fid, name, &name_len), "fi_getname");
    if (shm__is_shm(shm__w.prov)) shm__remember_shm_file(name, name_len);

    /* Message slots, the flush word and the bounce buffer, in one region. */
    shm__w.local_bytes = ((size_t)(SHM__MAX_ROUNDS + SHM__RECV_SLOTS) * SHM__SLOT_BYTES + 64 + SHM__BOUNCE_BYTES +
                          page - 1) & ~(page - 1);
    shm__w.local = (char *)mmap(NULL, shm__w.local_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (shm__w.local == (char *)MAP_FAILED) {
        shm__w.local = NULL;
        shm__init_fail("cannot map %zu bytes for message buffers", shm__w.local_bytes);
    }
    shm__w.send_slots = shm__w.local;
    shm__w.recv_slots = shm__w.send_slots + (size_t)SHM__MAX_ROUNDS * SHM__SLOT_BYTES;
    shm__w.flush_word = shm__w.recv_slots + (size_t)SHM__RECV_SLOTS * SHM__SLOT_BYTES;
    shm__w.bounce = shm__w.flush_word + 64;
    if (shm__w.mr_mode & FI_MR_LOCAL)
        shm__ofi_check(shm__mr_register(shm__w.local, shm__w.local_bytes, FI_SEND | FI_RECV | FI_READ | FI_WRITE,
                                        SHM__LOCAL_KEY, &shm__w.local_mr, &shm__w.local_desc),
                       "fi_mr_reg(message buffers)");
    slots = SHM__RECV_SLOTS;
    if (shm__w.info->rx_attr->size && shm__w.info->rx_attr->size < (size_t)slots) slots = (int)shm__w.info->rx_attr->size;
    for (q = 0; q < slots; q++) shm__post_recv(q);

    /* Swap endpoint names; fi_av_insert one at a time keeps the table's
       index equal to the rank whatever the address format. */
    shm__pmix_put(SHM__KEY_EP, name, name_len);
    shm__fence("endpoint names");
    shm__w.peers = (shm__peer *)calloc((size_t)shm__w.npes, sizeof *shm__w.peers);
    names = (char *)malloc(sizeof name);
    if (!shm__w.peers || !names) shm__init_fail("out of memory for %d peers", shm__w.npes);
    for (q = 0; q < shm__w.npes; q++) {
        shm__pmix_get_bytes(q, SHM__KEY_EP, names, sizeof name);
        rc = fi_av_insert(shm__w.av, names, 1, &shm__w.peers[q].addr, 0, NULL);
        if (rc != 1) shm__init_fail("fi_av_insert of PE %d failed: %s", q, fi_strerror(rc < 0 ? -rc : FI_EINVAL));
    }
    free(names);
}

static void shm__describe(void)
{
    char addr[128] = "", modes[128] = "", barriers[96];
    size_t len = sizeof addr, name_len;
    char name[256];
    static const struct { uint64_t bit; const char *name; } bits[] = {
        {FI_MR_LOCAL, "LOCAL"}, {FI_MR_RAW, "RAW"}, {FI_MR_VIRT_ADDR, "VIRT_ADDR"}, {FI_MR_ALLOCATED, "ALLOCATED"},
        {FI_MR_PROV_KEY, "PROV_KEY"}, {FI_MR_MMU_NOTIFY, "MMU_NOTIFY"}, {FI_MR_RMA_EVENT, "RMA_EVENT"},
        {FI_MR_ENDPOINT, "ENDPOINT"}};
    size_t i;
    int direct = 0;
    if (!shm__w.verbose) return;
    if (!shm__w.ep) {
        shm__note("PE 0 of 1: heap %zu bytes at %p (%s), no libfabric", shm__w.heap_bytes, (void *)shm__w.heap_base,
                  shmalloc_map_pages_name(&shm__w.map));
        return;
    }
    name_len = sizeof name;
    if (fi_getname(&shm__w.ep->fid, name, &name_len) == 0) fi_av_straddr(shm__w.av, name, addr, &len);
    for (i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (shm__w.mr_mode & bits[i].bit) {
            if (modes[0]) strcat(modes, "|");
            strcat(modes, bits[i].name);
        }
    for (i = 0; i < (size_t)shm__w.npes; i++) direct += shm__w.peers[i].direct != NULL;
    if (!shm__w.node) snprintf(barriers, sizeof barriers, "by messages");
    else if (shm__w.nodes == 1) snprintf(barriers, sizeof barriers, "through node memory");
    else snprintf(barriers, sizeof barriers, "through node memory on each of %d nodes, messages between their leaders",
                  shm__w.nodes);
    shm__note("PE %d of %d: provider %s, endpoint %s, mr_mode %s, %s, heap %zu bytes at %p (%s, %s), "
              "direct copies to %d PEs of this node, barriers %s",
              shm__w.me, shm__w.npes, shm__w.prov, addr, modes[0] ? modes : "0",
              shm__w.tx_flags ? "FI_DELIVERY_COMPLETE" : "quiet flushes by read", shm__w.heap_bytes,
              (void *)shm__w.heap_base, shm__w.same_address ? "same address on every PE" : "addresses differ",
              shmalloc_map_pages_name(&shm__w.map), direct, barriers);
}

/* Closes what is open, in order; safe at any point of start-up. */
static void shm__teardown(void)
{
    int q;
    while (shm__w.nregions > 0) shm__forget_region(shm__w.nregions - 1);
    if (shm__w.local_mr) fi_close(&shm__w.local_mr->fid);
    if (shm__w.ep) fi_close(&shm__w.ep->fid); /* removes the shm provider's file */
    if (shm__w.av) fi_close(&shm__w.av->fid);
    if (shm__w.cq) fi_close(&shm__w.cq->fid);
    if (shm__w.domain) fi_close(&shm__w.domain->fid);
    if (shm__w.fabric) fi_close(&shm__w.fabric->fid);
    if (shm__w.info) fi_freeinfo(shm__w.info);
    if (shm__w.local) munmap(shm__w.local, shm__w.local_bytes);
    if (shm__w.node) munmap(shm__w.node, shm__w.node_bytes);
    shm__w.node = NULL;
    if (shm__w.node_file[0]) shm_unlink(shm__w.node_file);
    shm__w.node_file[0] = '\0';
    shmalloc_map_release(&shm__w.map);
    for (q = 0; shm__w.peers && q < shm__w.npes; q++)
        if (shm__w.peers[q].direct_map) munmap(shm__w.peers[q].direct_map, shm__w.peers[q].direct_len);
    free(shm__w.peers);
    free(shm__w.group);
    free(shm__w.node_ranks);
    shm__w.group = shm__w.node_ranks = NULL;
    shm__w.local_mr = NULL;
    shm__w.ep = NULL;
    shm__w.av = NULL;
    shm__w.cq = NULL;
    shm__w.domain = NULL;
    shm__w.fabric = NULL;
    shm__w.info = NULL;
    shm__w.prov = NULL;
    shm__w.local = NULL;
    shm__w.peers = NULL;
    shm__w.shm_file[0] = '\0';
    if (shm__w.event_registered) PMIx_Deregister_event_handler(shm__w.event_ref, NULL, NULL);
    shm__w.event_registered = 0;
    if (shm__w.have_pmix) PMIx_Finalize(NULL, 0);
    shm__w.have_pmix = 0;
}

/* >> progress ------------------------------------------------------------------------ */
static const char *shm__op_name(int kind)
{
    switch (kind) {
    case SHM__OP_SEND: return "barrier message";
    case SHM__OP_RECV: return "barrier receive";
    case SHM__OP_WRITE: return "fi_write";
    default: return "fi_read";
    }
}

static void shm__deliver(const shm__msg *m, size_t len)
{
    uint32_t e;
    shm__inbox *box;
    if (len < SHM__MSG_HEADER || m->magic != SHM__MSG_MAGIC || m->round >= shm__w.rounds ||
        m->count > SHMALLOC_REDUCE_MAX || len < SHM__MSG_HEADER + m->count * sizeof(uint64_t))
        shm__fatal("PE %d received a malformed message (%zu bytes)", shm__w.me, len);
    e = m->epoch;
    /* A peer can be at most one barrier ahead of us. */
    if (e != shm__w.epoch && e != shm__w.epoch + 1u)
        shm__fatal("PE %d received barrier %u's message from PE %d during barrier %u", shm__w.me, e, (int)m->source,
                   shm__w.epoch);
    box = &shm__w.inbox[e & 1u][m->round];
    if (box->full) shm__fatal("PE %d received two messages for barrier %u round %u", shm__w.me, e, m->round);
    box->count = m->count;
    box->source = m->source;
    memcpy(box->values, m->values, m->count * sizeof(uint64_t));
    box->full = 1;
}

static void shm__cq_failure(void)
{
    struct fi_cq_err_entry err;
    shm__op *op;
    char detail[256] = "";
    memset(&err, 0, sizeof err);
    if (fi_cq_readerr(shm__w.cq, &err, 0) < 0) shm__fatal("fi_cq_readerr failed on PE %d", shm__w.me);
    op = (shm__op *)err.op_context;
    if (op && op->kind == SHM__OP_RECV && err.err == FI_ECANCELED) return;
    fi_cq_strerror(shm__w.cq, err.prov_errno, err.err_data, detail, sizeof detail);
    if (op && op->kind != SHM__OP_RECV)
        shm__fatal("%s %s PE %d failed on PE %d: %s%s%s%s", shm__op_name(op->kind),
                   op->kind == SHM__OP_READ ? "from" : "to", op->index, shm__w.me, fi_strerror(err.err),
                   detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
    shm__fatal("%s failed on PE %d: %s (%s)", op ? shm__op_name(op->kind) : "an operation", shm__w.me,
               fi_strerror(err.err), detail);
}

/* A death the launcher reported, once a message in flight had its chance. */
static void shm__check_deaths(void)
{
    int dead = __atomic_load_n(&shm__w.dead_pe, __ATOMIC_ACQUIRE);
    double now;
    if (dead == -1 || shm__w.finalizing) return;
    now = shm__now();
    if (shm__w.dead_seen == 0.0) {
        shm__w.dead_seen = now;
        return;
    }
    if (now - shm__w.dead_seen < SHM__DEATH_GRACE) return;
    if (dead == -2) shm__fatal("lost the connection to the PMIx server (PE %d of %d)", shm__w.me, shm__w.npes);
    shm__fatal("PE %d ended without shmem_finalize (PMIx event %s); PE %d of %d stops", dead,
               PMIx_Error_string((pmix_status_t)__atomic_load_n(&shm__w.dead_status, __ATOMIC_RELAXED)),
               shm__w.me, shm__w.npes);
}

/* Reaps completions: messages go to their inbox, operations are marked. */
static void shm__progress(void)
{
    struct fi_cq_data_entry entries[16];
    for (;;) {
        ssize_t n = fi_cq_read(shm__w.cq, entries, 16), i;
        if (n == -FI_EAGAIN) break;
        if (n == -FI_EAVAIL) {
            shm__cq_failure();
            continue;
        }
        if (n < 0) shm__fatal("fi_cq_read failed on PE %d: %s", shm__w.me, fi_strerror((int)-n));
        for (i = 0; i < n; i++) {
            shm__op *op = (shm__op *)entries[i].op_context;
            if (op->kind == SHM__OP_RECV) {
                shm__deliver((const shm__msg *)(const void *)(shm__w.recv_slots +
                                                              (size_t)op->index * SHM__SLOT_BYTES),
                             entries[i].len);
                shm__post_recv(op->index);
            } else {
                op->done = 1;
            }
        }
        if (n < 16) break;
    }
    if (shm__w.recv_unposted) {
        int slot;
        for (slot = 0; slot < SHM__RECV_SLOTS; slot++)
            if (shm__w.recv_unposted & ((uint64_t)1 << slot)) shm__post_recv(slot);
    }
    shm__check_deaths();
}

/* One poll for a barrier, which holds no lock while it waits: *flag, read
   under the lock, once progress has had its turn. */
static int shm__progress_until(const int *flag)
{
    int v;
    shm__enter();
    v = *flag;
    if (!v) {
        shm__progress();
        v = *flag;
    }
    shm__leave();
    return v;
}

/* Waits for op, at most the timeout; what and pe name it in the message.
   With threads the caller holds the lock. */
static void shm__wait_op(shm__op *op, const char *what, int pe)
{
    double deadline = 0.0;
    int spins = 0;
    while (!op->done) {
        shm__progress();
        if (op->done) break;
        if (++spins == 64) deadline = shm__now() + shm__w.timeout;
        if (spins > 64 && (spins & 63) == 0 && shm__now() > deadline)
            shm__fatal("%s to PE %d not complete after %d s on PE %d: PE %d makes no progress (it must call "
                       "into shmem)", what, pe, shm__w.timeout, shm__w.me, pe);
        sched_yield();
    }
}

/* >> barrier and all-reduce ----------------------------------------------------------
   Dissemination among the group (every PE, or the node leaders): in round
   r each member sends to member me + 2^r and hears from member me - 2^r.  Max is idempotent, so the same rounds compute the all-reduce:
   after ceil(log2 n) rounds every PE has seen every value.  A message names
   its barrier (epoch) and round, so one that arrives early waits in its
   inbox; peers are at most one barrier ahead, so two inboxes suffice. */
static void shm__send_round(uint32_t epoch, int round, int to, const uint64_t *values, int count)
{
    shm__msg *m = (shm__msg *)(void *)(shm__w.send_slots + (size_t)round * SHM__SLOT_BYTES);
    shm__op *op = &shm__w.send_ops[round];
    struct iovec iov;
    struct fi_msg msg;
    void *desc = shm__w.local_desc;
    ssize_t rc;
    m->magic = SHM__MSG_MAGIC;
    m->epoch = epoch;
    m->round = (uint16_t)round;
    m->count = (uint16_t)count;
    m->source = shm__w.me;
    if (count) memcpy(m->values, values, (size_t)count * sizeof *values);
    op->kind = SHM__OP_SEND;
    op->index = to;
    op->done = 0;
    iov.iov_base = m;
    iov.iov_len = SHM__MSG_HEADER + (size_t)count * sizeof *values;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = shm__w.peers[to].addr;
    msg.context = &op->ctx;
    while ((rc = fi_sendmsg(shm__w.ep, &msg, shm__w.tx_flags | FI_COMPLETION)) == -FI_EAGAIN) shm__progress();
    if (rc) shm__fatal("fi_sendmsg to PE %d failed on PE %d: %s", to, shm__w.me, fi_strerror((int)-rc));
}

static void shm__barrier_timeout(int pe)
{
    shm__fatal("barrier timed out after %d s waiting for PE %d (PE %d of %d, barrier %u)", shm__w.timeout, pe,
               shm__w.me, shm__w.npes, shm__w.epoch);
}

/* The rank of the group's member i (taken modulo the group's size). */
static int shm__member(long long i)
{
    int m = (int)(i % shm__w.group_size);
    return shm__w.group_size < shm__w.npes ? shm__w.group[m] : m;
}

static void shm__disseminate(uint64_t *values, int count)
{
    uint32_t epoch = shm__w.epoch;
    double deadline = shm__now() + shm__w.timeout;
    int r, i, n = shm__w.group_size;
    for (r = 0; r < shm__w.rounds; r++) {
        int dist = (int)(1u << r);
        int to = shm__member((long long)shm__w.group_me + dist), from = shm__member((long long)shm__w.group_me - dist + n);
        shm__inbox *box = &shm__w.inbox[epoch & 1u][r];
        shm__enter();
        shm__send_round(epoch, r, to, values, count);
        shm__leave();
        shm__w.waiting_for = from;
        while (!shm__progress_until(&box->full)) {
            if (shm__now() > deadline) shm__barrier_timeout(from);
            sched_yield();
        }
        shm__enter();
        if (box->source != from)
            shm__fatal("PE %d expected barrier %u round %d from PE %d, got PE %d", shm__w.me, epoch, r, from,
                       box->source);
        for (i = 0; i < count && i < box->count; i++)
            if (box->values[i] > values[i]) values[i] = box->values[i];
        box->full = 0;
        shm__leave();
    }
    /* Send buffers are reused next barrier: their sends must be done. */
    for (r = 0; r < shm__w.rounds; r++) {
        shm__op *op = &shm__w.send_ops[r];
        shm__w.waiting_for = op->index;
        while (!shm__progress_until(&op->done)) {
            if (shm__now() > deadline) shm__barrier_timeout(op->index);
            sched_yield();
        }
    }
    shm__w.waiting_for = -1;
    shm__enter(); /* other threads' progress checks messages against it */
    shm__w.epoch = epoch + 1u;
    shm__leave();
}

/* >> node barrier --------------------------------------------------------------------
   PEs on one node synchronise through a small shared segment instead of
   messages: each PE has a slot of its own cache lines, publishes its values
   and then the barrier's number there.  When every PE is on this node,
   each waits until every slot shows that number.  On several nodes the
   barrier is hierarchical: the node's leader (its lowest rank) waits for
   its node's slots, runs the dissemination rounds with the other nodes'
   leaders by messages, and publishes the result and the number in the
   release slot that the node's other PEs wait on.  Values are
   double-buffered by the number's parity: a PE writes a buffer again only
   two barriers later, after every PE has passed the barrier in between and
   so has read it.  SHMALLOC_PMIX_OFI_NODE_BARRIER=0 keeps messages among
   all PEs. */
struct shm__node_slot {
    uint64_t epoch;                         /* atomic: the last barrier this PE reached */
    uint64_t values[2][SHMALLOC_REDUCE_MAX];
    char pad[64 - sizeof(uint64_t)];        /* a slot is whole cache lines */
};

/* 1 when barriers may use node memory: allowed, and some node has
   several PEs, none too many. */
static int shm__node_wanted(void)
{
    const char *v = getenv("SHMALLOC_PMIX_OFI_NODE_BARRIER");
    if (v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
        shm__init_fail("SHMALLOC_PMIX_OFI_NODE_BARRIER=\"%s\" is not 0 or 1", v);
    return !(v && strcmp(v, "0") == 0) && shm__w.nodes > 0 && shm__w.nodes < shm__w.npes &&
           shm__w.node_size_max <= SHM__NODE_MAX;
}

/* The node's segment: its leader creates it, the others open it after a
   fence, and it is unlinked after a second fence, so a crash later leaves
   no file.  Every PE learns whether every node managed, and all use node
   memory or none does. */
static void shm__node_open(void)
{
    int leader = shm__w.node_ranks ? shm__w.node_ranks[0] : 0;
    size_t bytes = (size_t)(shm__w.node_size + 1) * sizeof(shm__node_slot);
    uint64_t ok = 0, all = 1;
    int q, fd = -1;
    char *p;
    shm__w.group_size = shm__w.npes;
    shm__w.group_me = shm__w.me;
    if (!shm__node_wanted()) return;
    snprintf(shm__w.node_file, sizeof shm__w.node_file, "/shmalloc-%.100s-%d", shm__w.proc.nspace, leader);
    for (p = shm__w.node_file + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            *p = '_';
    if (shm__w.me == leader) {
        shm_unlink(shm__w.node_file); /* a stale one from a crashed job of the same name */
        fd = shm_open(shm__w.node_file, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0 && ftruncate(fd, (off_t)bytes) != 0) {
            close(fd);
            fd = -1;
        }
        ok = fd >= 0;
        shm__pmix_put(SHM__KEY_NODE, &ok, sizeof ok);
    }
    shm__fence("node segment");
    if (shm__w.me != leader) {
        shm__pmix_get_bytes(leader, SHM__KEY_NODE, &ok, sizeof ok);
        if (ok) fd = shm_open(shm__w.node_file, O_RDWR, 0600);
    }
    if (fd >= 0) {
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m != MAP_FAILED) {
            shm__w.node = (shm__node_slot *)m;
            shm__w.node_bytes = bytes;
        }
    }
    /* Spin first only on one node with a cpu per PE: across nodes a
       barrier waits for the network anyway, and a spinning PE would hold
       the cpu its node's leader needs. */
    shm__w.node_pauses = shm__w.nodes == 1 && shm__w.node_size <= sysconf(_SC_NPROCESSORS_ONLN) ? SHM__NODE_SPINS : 0;
    ok = shm__w.node != NULL;
    shm__pmix_put(SHM__KEY_NODE_OK, &ok, sizeof ok);
    shm__fence("node segment mapped");
    if (shm__w.me == leader) shm_unlink(shm__w.node_file);
    shm__w.node_file[0] = '\0';
    for (q = 0; q < shm__w.npes; q++) {
        uint64_t theirs = 1;
        if (q != shm__w.me) shm__pmix_get_bytes(q, SHM__KEY_NODE_OK, &theirs, sizeof theirs);
        all &= theirs;
    }
    if (!all && shm__w.node) { /* every PE decides alike: messages for all */
        munmap(shm__w.node, shm__w.node_bytes);
        shm__w.node = NULL;
    }
    if (shm__w.node && shm__w.nodes > 1) { /* messages among the leaders only */
        shm__w.group_size = shm__w.nodes;
        for (q = 0; q < shm__w.nodes; q++)
            if (shm__w.group[q] == leader) shm__w.group_me = q;
    }
}

static void shm__cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Waits until slot s shows barrier epoch; pe is the PE that writes it. */
static void shm__node_wait(const shm__node_slot *s, uint64_t epoch, int pe, double *deadline, int *spins)
{
    while (__atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE) < epoch) {
        if (++*spins <= shm__w.node_pauses) {
            shm__cpu_pause();
            continue;
        }
        /* A PE that is not here yet may need our progress, or be gone. */
        shm__w.waiting_for = pe;
        if (*deadline == 0.0) *deadline = shm__now() + shm__w.timeout;
        shm__enter();
        shm__progress();
        shm__leave();
        if (shm__now() > *deadline) shm__barrier_timeout(pe);
        sched_yield();
    }
}

static void shm__max_into(uint64_t *values, const uint64_t *theirs, int count)
{
    int i;
    for (i = 0; i < count; i++)
        if (theirs[i] > values[i]) values[i] = theirs[i];
}

static void shm__node_sync(uint64_t *values, int count)
{
    uint64_t epoch = ++shm__w.node_epoch;
    shm__node_slot *mine = &shm__w.node[shm__w.node_me], *release = &shm__w.node[shm__w.node_size];
    unsigned buf = (unsigned)(epoch & 1u);
    double deadline = 0.0;
    int q, i, spins = 0;
    for (i = 0; i < count; i++) mine->values[buf][i] = values[i];
    __atomic_store_n(&mine->epoch, epoch, __ATOMIC_RELEASE);
    if (shm__w.nodes == 1 || shm__w.node_me == 0) /* everyone here, or the leader: gather the node */
        for (q = 0; q < shm__w.node_size; q++) {
            shm__node_wait(&shm__w.node[q], epoch, shm__w.node_ranks[q], &deadline, &spins);
            if (q != shm__w.node_me) shm__max_into(values, shm__w.node[q].values[buf], count);
        }
    if (shm__w.nodes > 1 && shm__w.node_me == 0) {
        shm__disseminate(values, count);
        for (i = 0; i < count; i++) release->values[buf][i] = values[i];
        __atomic_store_n(&release->epoch, epoch, __ATOMIC_RELEASE);
    } else if (shm__w.nodes > 1) {
        shm__node_wait(release, epoch, shm__w.node_ranks[0], &deadline, &spins);
        for (i = 0; i < count; i++) values[i] = release->values[buf][i];
    } else {
        shm__enter();
        shm__w.epoch = (uint32_t)epoch; /* names the barrier in messages */
        shm__leave();
    }
    shm__w.waiting_for = -1;
}

/* >> transport contract ------------------------------------------------------------- */
static int shm__tp_barrier(void *user)
{
    (void)user;
    shmem_quiet();
    if (shm__w.node) shm__node_sync(NULL, 0);
    else if (shm__w.ep) shm__disseminate(NULL, 0);
    return 0;
}

static int shm__tp_allreduce_max(void *user, uint64_t *values, int count)
{
    int bad = count < 0 || count > SHMALLOC_REDUCE_MAX;
    (void)user;
    shmem_quiet();
    if (shm__w.node) shm__node_sync(values, bad ? 0 : count); /* synchronises even when bad */
    else if (shm__w.ep) shm__disseminate(values, bad ? 0 : count);
    return bad ? -1 : 0;
}

/* SHMALLOC_PMIX_OFI_FAIL_REGISTER=PE[:N], for the tests: PE's registration
   number N (0, the default: the heap at start-up; 1: its first growth;
   ...) fails. */
static int shm__registration_fails(unsigned n)
{
    const char *v = getenv("SHMALLOC_PMIX_OFI_FAIL_REGISTER"), *colon;
    if (!v || atoi(v) != shm__w.me) return 0;
    colon = strchr(v, ':');
    return (colon ? (unsigned)atoi(colon + 1) : 0u) == n;
}

/* Closes piece i and forgets the peers' keys for it. */
static void shm__forget_region(int i)
{
    shm__region *r = &shm__w.regions[i];
    int q;
    if (shm__w.peers && shm__w.domain)
        for (q = 0; q < shm__w.npes; q++)
            if (shm__w.peers[q].key_mapped[i]) {
                fi_mr_unmap_key(shm__w.domain, shm__w.peers[q].key[i]);
                shm__w.peers[q].key_mapped[i] = 0;
            }
    if (r->mr) fi_close(&r->mr->fid);
    memset(r, 0, sizeof *r);
    shm__w.nregions = i;
    __atomic_store_n(&shm__w.heap_bytes, i ? shm__w.regions[i - 1].offset + shm__w.regions[i - 1].bytes : 0,
                     __ATOMIC_RELEASE);
    if (!i) shm__w.heap_base = NULL;
}

/* Every peer has opened this PE's shm provider file by now (it inserted
   our address before the heap's first fence): its name can go, so even a
   SIGKILL later leaves nothing in /dev/shm. */
static void shm__unlink_endpoint_file(void)
{
    if (!shm__w.shm_file[0]) return;
    unlink(shm__w.shm_file);
    shm__w.shm_file[0] = '\0';
}

/* This PE's record of piece i, and its key for the peers. */
static void shm__describe_region(const shm__region *r, int ok, shm__wire_heap *mine)
{
    memset(mine, 0, sizeof *mine);
    mine->ok = (uint64_t)ok;
    mine->base = (uint64_t)(uintptr_t)shm__w.heap_base;
    mine->node = r == &shm__w.regions[0] ? shmalloc_map_node_id() : 0;
    mine->pid = (uint64_t)getpid();
    mine->fd = shm__w.map.fd;
    mine->mapped = shm__w.map.mapped;
    mine->at = (uint64_t)(shm__w.heap_base - shm__w.map.base);
    if (!ok || !r->mr) return;
    if (shm__w.mr_mode & FI_MR_RAW) {
        size_t size = sizeof mine->raw;
        int rc = fi_mr_raw_attr(r->mr, &mine->raw_base, mine->raw, &size, 0);
        if (rc) shm__fatal("fi_mr_raw_attr failed: %s (a key over %d bytes?)", fi_strerror(-rc), SHM__RAW_KEY_MAX);
        mine->raw_size = size;
    } else {
        mine->key = fi_mr_key(r->mr);
        if (mine->key == FI_KEY_NOTAVAIL) shm__fatal("fi_mr_key of the heap is not available");
    }
}

/* A same-node peer's block space, mapped here whole (the pieces it may
   grow into too), so puts and gets to it are copies and shmem_ptr has an
   address for it.  A peer that cannot be mapped is reached by libfabric. */
static void shm__map_peer_heap(int q, const shm__wire_heap *theirs, const shm__wire_heap *mine)
{
    shm__peer *p = &shm__w.peers[q];
    if (theirs->fd < 0 || mine->fd < 0 || theirs->node != mine->node || theirs->at >= theirs->mapped) return;
    p->direct_map = shmalloc_map_peer((long)theirs->pid, (int)theirs->fd, (size_t)theirs->mapped);
    if (!p->direct_map) {
        shm__note("PE %d cannot map PE %d's heap (%s): puts and gets to it go through libfabric", shm__w.me, q,
                  strerror(errno));
        return;
    }
    p->direct_len = (size_t)theirs->mapped;
    p->direct = p->direct_map + theirs->at;
}

/* Called on every PE at the same point (heap creation, each growth): every
   PE registers its piece and learns every peer's key through a PMIx fence,
   even when its own registration failed, so none is left waiting.  A peer
   whose registration failed makes the heap's all-reduce fail the call,
   which deregisters the pieces that did register.  Other threads' puts
   may run meanwhile: libfabric calls and the new piece's state are
   changed under the lock, and the heap's new size is published last. */
static int shm__tp_register(void *user, void *base, size_t bytes)
{
    shm__region *r = &shm__w.regions[shm__w.nregions];
    shm__wire_heap mine, theirs;
    char key[64];
    unsigned n = shm__w.registrations++;
    int ok = 1, i = shm__w.nregions, q;
    (void)user;
    if (i == SHMALLOC_MAX_REGIONS) shm__fatal("more than %d pieces of heap to register", SHMALLOC_MAX_REGIONS);
    if (i == 0) shm__w.heap_base = (char *)base;
    shm__enter();
    r->offset = (size_t)((char *)base - shm__w.heap_base);
    r->bytes = bytes;
    if (shm__registration_fails(n)) {
        fprintf(stderr, "shmalloc: registration of the heap made to fail on PE %d (number %u; "
                "SHMALLOC_PMIX_OFI_FAIL_REGISTER)\n", shm__w.me, n);
        ok = 0;
    } else if (shm__w.ep) {
        int rc = shm__mr_register(base, bytes, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE,
                                  SHM__HEAP_KEY + (uint64_t)i, &r->mr, &r->desc);
        if (rc) {
            fprintf(stderr, "shmalloc: fi_mr_reg of the heap (%zu bytes at %p) failed on PE %d: %s\n", bytes, base,
                    shm__w.me, fi_strerror(-rc));
            ok = 0;
        }
    }
    if (shm__w.ep) {
        shm__describe_region(r, ok, &mine);
        shm__leave();
        snprintf(key, sizeof key, "%s.%u", SHM__KEY_HEAP, n);
        shm__pmix_put(key, &mine, sizeof mine);
        shm__fence("heap keys");
        shm__enter();
        if (i == 0) {
            shm__w.same_address = 1;
            shm__unlink_endpoint_file();
        }
        for (q = 0; q < shm__w.npes; q++) {
            shm__peer *p = &shm__w.peers[q];
            if (q == shm__w.me) theirs = mine;
            else shm__pmix_get_bytes(q, key, &theirs, sizeof theirs);
            if (i == 0) {
                p->base = theirs.base;
                if (theirs.base != mine.base) shm__w.same_address = 0;
                if (q != shm__w.me) shm__map_peer_heap(q, &theirs, &mine);
            }
            if (!ok || !theirs.ok) continue;
            if (shm__w.mr_mode & FI_MR_RAW) {
                int rc = fi_mr_map_raw(shm__w.domain, theirs.raw_base, theirs.raw, (size_t)theirs.raw_size, &p->key[i], 0);
                if (rc) shm__fatal("fi_mr_map_raw of PE %d's key failed: %s", q, fi_strerror(-rc));
                p->key_mapped[i] = 1;
            } else {
                p->key[i] = theirs.key;
            }
        }
    } else if (i == 0) {
        shm__w.same_address = 1;
    }
    if (!ok) {
        shm__forget_region(i);
        shm__leave();
        return -1;
    }
    shm__w.nregions = i + 1;
    __atomic_store_n(&shm__w.heap_bytes, r->offset + bytes, __ATOMIC_RELEASE);
    shm__leave();
    return 0;
}

/* The heap deregisters its pieces last first. */
static int shm__tp_deregister(void *user, void *base, size_t bytes)
{
    int i = shm__w.nregions - 1;
    (void)user, (void)bytes;
    if (i < 0 || shm__w.heap_base + shm__w.regions[i].offset != (char *)base) return -1;
    shm__enter();
    shm__forget_region(i);
    shm__leave();
    return 0;
}

/* >> rma ------------------------------------------------------------------------------ */
static int shm__in_heap(const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)shm__w.heap_base;
    size_t bytes;
    if (!shm__w.heap_base || a < base) return 0;
    bytes = shm__heap_bytes();
    return a - base <= bytes && n <= bytes - (a - base);
}

/* The piece holding heap offset `offset` (< heap_bytes). */
static const shm__region *shm__region_at(size_t offset)
{
    int i = shm__w.nregions - 1;
    while (i > 0 && shm__w.regions[i].offset > offset) i--;
    return &shm__w.regions[i];
}

/* len bytes at `offset` into piece r of pe's heap. */
static void shm__post_rma(int kind, int pe, void *local, void *desc, size_t len, const shm__region *r, uint64_t offset,
                          shm__op *op)
{
    struct iovec iov;
    struct fi_rma_iov rma;
    struct fi_msg_rma msg;
    ssize_t rc;
    op->kind = kind;
    op->index = pe;
    op->done = 0;
    iov.iov_base = local;
    iov.iov_len = len;
    rma.addr = (shm__w.mr_mode & FI_MR_VIRT_ADDR ? shm__w.peers[pe].base + r->offset : 0) + offset;
    rma.len = len;
    rma.key = shm__w.peers[pe].key[r - shm__w.regions];
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = shm__w.peers[pe].addr;
    msg.rma_iov = &rma;
    msg.rma_iov_count = 1;
    msg.context = &op->ctx;
    for (;;) {
        rc = kind == SHM__OP_WRITE ? fi_writemsg(shm__w.ep, &msg, shm__w.tx_flags | FI_COMPLETION)
                                   : fi_readmsg(shm__w.ep, &msg, FI_COMPLETION);
        if (rc != -FI_EAGAIN) break;
        shm__progress();
    }
    if (rc) shm__fatal("%s %s PE %d failed on PE %d: %s", shm__op_name(kind), kind == SHM__OP_WRITE ? "to" : "from",
                       pe, shm__w.me, fi_strerror((int)-rc));
}

/* Moves n bytes between local and offset in pe's heap, waiting for each
   piece; a piece stays inside one registered region on both sides.  Local
   memory outside the heap goes through the registered bounce buffer when
   the provider wants local registration (FI_MR_LOCAL). */
static void shm__transfer(int kind, const char *what, int pe, uint64_t offset, char *local, size_t n)
{
    int in_heap = shm__in_heap(local, n);
    int bounce = !in_heap && (shm__w.mr_mode & FI_MR_LOCAL);
    size_t piece = bounce ? SHM__BOUNCE_BYTES : shm__w.max_msg;
    while (n > 0) {
        const shm__region *r = shm__region_at(offset);
        size_t len = n < piece ? n : piece;
        void *buf = bounce ? shm__w.bounce : local, *desc = bounce ? shm__w.local_desc : NULL;
        if (len > r->offset + r->bytes - offset) len = r->offset + r->bytes - offset;
        if (in_heap) {
            const shm__region *l = shm__region_at((size_t)(local - shm__w.heap_base));
            size_t at = (size_t)(local - shm__w.heap_base);
            if (len > l->offset + l->bytes - at) len = l->offset + l->bytes - at;
            desc = l->desc;
        }
        if (bounce && kind == SHM__OP_WRITE) memcpy(shm__w.bounce, local, len);
        shm__post_rma(kind, pe, buf, desc, len, r, offset - r->offset, &shm__w.rma_op);
        shm__wait_op(&shm__w.rma_op, what, pe);
        if (bounce && kind == SHM__OP_READ) memcpy(local, shm__w.bounce, len);
        local += len;
        offset += len;
        n -= len;
    }
}

/* A put or get by libfabric, under the lock with threads.  Kept out of
   line: the copies to this PE and to same-node peers stay short. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void shm__rma(int kind, const char *what, int pe, uint64_t offset, char *local, size_t n)
{
    shm__enter();
    shm__transfer(kind, what, pe, offset, local, n);
    if (kind == SHM__OP_WRITE) shm__w.peers[pe].dirty = 1;
    shm__leave();
}

/* The offset of [addr, addr + n) in the heap; ends the job when the range
   is not symmetric or pe is not a PE. */
static uint64_t shm__symmetric_range(const char *what, const void *addr, size_t n, int pe)
{
    if (!shm__w.running || pe < 0 || pe >= shm__w.npes || !shm__in_heap(addr, n)) {
        fprintf(stderr, "%s: %zu bytes at %p on PE %d are not a symmetric range (calling PE %d of %d)\n", what, n,
                addr, pe, shmem_my_pe(), shmem_n_pes());
        shmem_global_exit(1);
    }
    return (uint64_t)((uintptr_t)addr - (uintptr_t)shm__w.heap_base);
}

/* >> shmem ---------------------------------------------------------------------------- */
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t offset;
    if (nelems == 0) return;
    offset = shm__symmetric_range("shmem_putmem", dest, nelems, pe);
    if (pe == shm__w.me) {
        memmove(dest, source, nelems);
        return;
    }
    if (shm__w.peers[pe].direct) {
        memmove(shm__w.peers[pe].direct + offset, source, nelems); /* source may be a shmem_ptr address */
        __atomic_store_n(&shm__w.direct_dirty, 1, __ATOMIC_RELAXED);
        return;
    }
    shm__rma(SHM__OP_WRITE, "shmem_putmem", pe, offset, (char *)(uintptr_t)source, nelems);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t offset;
    if (nelems == 0) return;
    offset = shm__symmetric_range("shmem_getmem", source, nelems, pe);
    if (pe == shm__w.me) {
        memmove(dest, source, nelems);
        return;
    }
    if (shm__w.peers[pe].direct) {
        memmove(dest, shm__w.peers[pe].direct + offset, nelems);
        return;
    }
    shm__rma(SHM__OP_READ, "shmem_getmem", pe, offset, (char *)dest, nelems);
}

/* Quiet's reads, one per peer written to; with threads under the lock. */
static void shm__flush(void)
{
    int q, pending = 0;
    for (q = 0; q < shm__w.npes; q++) {
        shm__peer *p = &shm__w.peers[q];
        if (!p->dirty) continue;
        p->dirty = 0;
        if (shm__w.tx_flags & FI_DELIVERY_COMPLETE) continue;
        shm__post_rma(SHM__OP_READ, q, shm__w.flush_word, shm__w.local_desc, 8, &shm__w.regions[0], 0, &p->flush);
        pending = 1;
    }
    if (!pending) return;
    for (q = 0; q < shm__w.npes; q++)
        if (shm__w.peers[q].flush.kind == SHM__OP_READ && !shm__w.peers[q].flush.done)
            shm__wait_op(&shm__w.peers[q].flush, "shmem_quiet", q);
}

/* Writes are waited for as they go; with FI_DELIVERY_COMPLETE their
   completion already means they are in the target's memory.  Without it
   (shm) a read from each target written to since the last quiet comes back
   only after the target has handled the earlier writes.  Copies into
   same-node peers' heaps need only a fence before what follows; with
   threads, every quiet fences, as the flag may be another thread's.  The
   lock is held to the end, so a quiet that finds another thread's flush
   under way returns after it. */
void shmem_quiet(void)
{
    if (shm__w.threaded || __atomic_load_n(&shm__w.direct_dirty, __ATOMIC_RELAXED)) {
#if defined(SHM__TSAN) /* it refuses fences; a sequentially consistent exchange orders as much for it */
        (void)__atomic_exchange_n(&shm__w.direct_dirty, 0, __ATOMIC_SEQ_CST);
#else
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&shm__w.direct_dirty, 0, __ATOMIC_RELAXED);
#endif
    }
    if (!shm__w.running || !shm__w.ep) return;
    shm__enter();
    shm__flush();
    shm__leave();
}

void shmem_barrier_all(void)
{
    if (!shm__w.running) return;
    shm__tp_barrier(NULL);
}

int shmem_my_pe(void) { return shm__w.running ? shm__w.me : -1; }

int shmem_n_pes(void) { return shm__w.running ? shm__w.npes : 0; }

void *shmem_ptr(const void *dest, int pe)
{
    if (!shm__w.running || pe < 0 || pe >= shm__w.npes || !shm__in_heap(dest, 1)) return NULL;
    if (pe == shm__w.me) return (void *)(uintptr_t)dest;
    return shm__w.peers && shm__w.peers[pe].direct ? shm__w.peers[pe].direct + ((const char *)dest - shm__w.heap_base)
                                                   : NULL;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    return shm__w.running && pe >= 0 && pe < shm__w.npes && shm__in_heap(addr, 1);
}

void shmem_global_exit(int status)
{
    fflush(NULL);
    /* First: the launcher may kill us before PMIx_Abort returns. */
    if (shm__w.shm_file[0]) unlink(shm__w.shm_file);
    if (shm__w.have_pmix) PMIx_Abort(status, "shmem_global_exit", NULL, 0);
    _exit(status);
}

static void shm__init(int level)
{
    shmalloc_transport tp;
    shmalloc_map_huge huge;
    size_t nominal, max;
    long err = SHMEM_MALLOC_OK;
    memset(&shm__w, 0, sizeof shm__w);
    shm__w.thread_level = level;
    shm__w.threaded = level == SHMEM_THREAD_MULTIPLE;
    shm__w.waiting_for = -1;
    shm__w.dead_pe = -1;
    shm__read_env();
    if (shmalloc_options_read(NULL) != 0) exit(1); /* the table the heap takes debug mode from; it printed why */
    if (shmalloc_heap_size_from_env(&nominal) != 0 || shmalloc_heap_max_from_env(nominal, &max) != 0 ||
        shmalloc_map_huge_from_env(&huge) != 0)
        exit(1); /* it printed why */
    shm__w.nominal = nominal;
    shm__w.npes = 1;
    if (shm__pmix_init() == 0) {
        shm__install_signals();
        shm__sweep_stale_shm_files();
        shm__map_nodes();
    }
    shm__map_heap(max, &huge);
    if (shm__w.have_pmix) {
        shm__fabric_open();
        shm__node_open();
        while ((1 << shm__w.rounds) < shm__w.group_size) shm__w.rounds++;
    }

    memset(&tp, 0, sizeof tp);
    tp.pe = shm__w.me;
    tp.npes = shm__w.npes;
    tp.barrier = shm__tp_barrier;
    tp.allreduce_max = shm__tp_allreduce_max;
    tp.register_region = shm__tp_register;
    tp.deregister_region = shm__tp_deregister;
    if (shm__w.threaded) {
        tp.lock = shm__heap_lock;
        tp.unlock = shm__heap_unlock;
    }
    shm__w.running = 1; /* the barrier inside create runs shmem_quiet */
    shm__w.heap = shmalloc_heap_create_growable(shm__w.map.base, shm__w.map.bytes, max > nominal ? nominal : SIZE_MAX,
                                                &tp, &err);
    if (!shm__w.heap) {
        shm__w.running = 0;
        shm__init_fail("cannot create the symmetric heap of %zu bytes on PE %d (malloc_error %ld)", nominal,
                       shm__w.me, err);
    }
    shmalloc_set_process_heap(shm__w.heap);
    shm__describe();
}

void shmem_init(void)
{
    if (!shm__w.running) shm__init(SHMEM_THREAD_SINGLE);
}

int shmem_init_thread(int requested, int *provided)
{
    if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE) {
        fprintf(stderr, "shmalloc: shmem_init_thread: %d is not a thread level (SHMEM_THREAD_SINGLE 0, "
                "SHMEM_THREAD_FUNNELED 1, SHMEM_THREAD_SERIALIZED 2, SHMEM_THREAD_MULTIPLE 3); nothing was "
                "initialised\n", requested);
        return -1;
    }
    if (!shm__w.running) shm__init(requested);
    if (provided) *provided = shm__w.thread_level;
    return 0;
}

void shmem_query_thread(int *provided)
{
    if (provided) *provided = shm__w.running ? shm__w.thread_level : SHMEM_THREAD_SINGLE;
}

void shmem_finalize(void)
{
    if (!shm__w.running) return;
    shmem_barrier_all();
    shmalloc_heap_destroy(shm__w.heap); /* collective; deregisters the heap */
    shmalloc_set_process_heap(NULL);
    shm__w.heap = NULL;
    shm__w.finalizing = 1; /* peers now exit normally */
    shm__w.running = 0;
    shm__teardown();
    shm__restore_signals();
    shm__w.heap_base = NULL;
}
