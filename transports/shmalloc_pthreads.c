/* shmalloc_pthreads.c - the pthreads transport: every PE is a thread of one
   process, with its own mmap'ed symmetric heap.  See shmalloc_pthreads.h. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_ANONYMOUS and MAP_NORESERVE */
#endif

#include "../shmalloc.h"
#include "shmalloc_pthreads.h"
#include "shmalloc_map.h"
#include "shmalloc_wait.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SHM__SPIN_PAUSE 1000                /* barrier polls with a cpu pause, when every PE has a cpu */
#define SHM__SPIN_YIELD 64                  /* then polls with sched_yield */

/* >> barrier -----------------------------------------------------------------
   Each PE has a slot of whole cache lines.  A PE publishes its values, then
   the number of the barrier it has reached, in its own slot, and waits
   until every slot shows that number: it polls, yields, then sleeps
   (shmalloc_wait.h), and an arriving PE wakes the sleepers only when there
   are any.  A PE that waits longer than the timeout ends the program,
   naming the PEs that did not arrive: one that skipped a collective call
   would otherwise leave its peers waiting forever.  All-reduce values are
   double-buffered by the number's parity: a PE writes a buffer again two
   barriers later, once every PE has passed the barrier in between and so
   has read it.  One barrier per call suffices. */
typedef struct shm__slot {
    uint64_t epoch;                  /* atomic: the last barrier this PE reached */
    uint64_t values[2][SHMALLOC_REDUCE_MAX];
    char pad[64 - sizeof(uint64_t)]; /* whole cache lines */
} shm__slot;

typedef struct shm__barrier {
    shm__slot *slots;    /* one per PE, cache-line aligned */
    int parties;
    int pauses;          /* polls with a cpu pause before yielding: none when PEs outnumber cpus */
    int timeout;         /* seconds a PE waits before the program ends (SHMALLOC_BARRIER_TIMEOUT) */
    unsigned sleepers;   /* atomic: PEs waiting on cond */
    int expired;         /* atomic: a PE has timed out and reports it */
    pthread_mutex_t mutex;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC, the clock of the wait's deadline */
} shm__barrier;

static int shm__cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc;
    if (pthread_condattr_init(&attr) != 0) return -1;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cond, &attr) == 0 ? 0 : -1;
    pthread_condattr_destroy(&attr);
    return rc;
}

static int shm__barrier_init(shm__barrier *b, int parties, int timeout)
{
    void *slots = NULL;
    b->parties = parties;
    b->sleepers = 0;
    b->expired = 0;
    b->timeout = timeout;
    b->pauses = parties <= sysconf(_SC_NPROCESSORS_ONLN) ? SHM__SPIN_PAUSE : 0;
    if (posix_memalign(&slots, 64, (size_t)parties * sizeof(shm__slot)) != 0) return -1;
    memset(slots, 0, (size_t)parties * sizeof(shm__slot));
    b->slots = (shm__slot *)slots;
    if (pthread_mutex_init(&b->mutex, NULL) != 0) goto fail_slots;
    if (shm__cond_init_monotonic(&b->cond) != 0) goto fail_mutex;
    return 0;
fail_mutex:
    pthread_mutex_destroy(&b->mutex);
fail_slots:
    free(slots);
    return -1;
}

static void shm__barrier_fini(shm__barrier *b)
{
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->mutex);
    free(b->slots);
}

static int shm__arrived(const shm__barrier *b, int q, uint64_t epoch)
{
    return __atomic_load_n(&b->slots[q].epoch, __ATOMIC_ACQUIRE) >= epoch;
}

/* Ends the program: PE me waited too long for barrier epoch, unless every
   PE arrived just now.  The first PE to time out names every PE not there;
   the others wait for its exit. */
static void shm__barrier_timeout(shm__barrier *b, int me, uint64_t epoch)
{
    char late[384];
    size_t n = 0;
    int q, missing = 0, listed = 0;
    for (q = 0; q < b->parties; q++) {
        if (shm__arrived(b, q, epoch)) continue;
        missing++;
        if (n + 24 < sizeof late) {
            n += (size_t)snprintf(late + n, sizeof late - n, "%s%d", listed ? ", " : "", q);
            listed++;
        }
    }
    if (missing == 0) return;
    if (__atomic_exchange_n(&b->expired, 1, __ATOMIC_SEQ_CST))
        for (;;) pause();
    if (listed < missing) snprintf(late + n, sizeof late - n, " and %d more", missing - listed);
    shmalloc_print(2, "shmalloc: barrier timed out after %d s waiting for PE%s %s (PE %d of %d, barrier %llu)\n",
                   b->timeout, missing > 1 ? "s" : "", late, me, b->parties, (unsigned long long)epoch);
    shmem_global_exit(1);
}

/* Sleeps until PE q reaches barrier epoch, an arriver wakes us, or the
   wait's deadline.  A sleeper's increment and re-check are sequentially
   consistent with an arriver's epoch store and sleepers load (shm__sync). */
static void shm__sleep(shm__barrier *b, int q, uint64_t epoch, const shmalloc_wait *wait)
{
    struct timespec deadline;
    shmalloc_wait_deadline(wait, &deadline);
    __atomic_add_fetch(&b->sleepers, 1u, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&b->mutex);
    while (__atomic_load_n(&b->slots[q].epoch, __ATOMIC_SEQ_CST) < epoch &&
           pthread_cond_timedwait(&b->cond, &b->mutex, &deadline) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&b->mutex);
    __atomic_sub_fetch(&b->sleepers, 1u, __ATOMIC_SEQ_CST);
}

/* The slow path of barrier epoch for PE me, once PE q was not there yet. */
static void shm__wait_all(shm__barrier *b, int me, uint64_t epoch, int q)
{
    shmalloc_wait wait;
    shmalloc_wait_begin(&wait, b->timeout, b->pauses, SHM__SPIN_YIELD);
    for (;;) {
        switch (shmalloc_wait_step(&wait)) {
        case SHMALLOC_WAIT_EXPIRED: shm__barrier_timeout(b, me, epoch); break;
        case SHMALLOC_WAIT_SLEEP: shm__sleep(b, q, epoch, &wait); break;
        default: break;
        }
        while (q < b->parties && shm__arrived(b, q, epoch)) q++;
        if (q == b->parties) return;
    }
}

/* Barrier `epoch` (1, 2, ...: each PE counts its own) for PE me; values
   (count of them) become their maximum over the PEs.  The epoch store and
   the sleepers load are sequentially consistent, so an arriver either sees
   a sleeper or is seen by it. */
static void shm__sync(shm__barrier *b, int me, uint64_t epoch, uint64_t *values, int count)
{
    shm__slot *mine = &b->slots[me];
    unsigned buf = (unsigned)(epoch & 1u);
    int q = 0, i;
    for (i = 0; i < count; i++) mine->values[buf][i] = values[i];
    __atomic_store_n(&mine->epoch, epoch, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&b->mutex);
        pthread_cond_broadcast(&b->cond);
        pthread_mutex_unlock(&b->mutex);
    }
    while (q < b->parties && shm__arrived(b, q, epoch)) q++;
    if (q < b->parties) shm__wait_all(b, me, epoch, q);
    for (q = 0; q < b->parties; q++)
        if (q != me)
            for (i = 0; i < count; i++)
                if (b->slots[q].values[buf][i] > values[i]) values[i] = b->slots[q].values[buf][i];
}

/* >> world -------------------------------------------------------------------
   One run of shmalloc_pthreads_run: the PEs, their heaps, the shared state
   of the barrier and the all-reduce. */
typedef struct shm__world shm__world;

typedef struct shm__pe {
    shm__world *world;
    int index;
    uint64_t epoch;        /* barriers this PE has reached */
    shmalloc_map_mem map;      /* the heap's memory (shmalloc_map.h) */
    shmalloc_heap *heap;   /* published to peers by the barrier after create */
    long create_err;
    int thread_started;
    pthread_t thread;
    pthread_mutex_t lock;  /* serialises the threads of this PE */
} shm__pe;

struct shm__world {
    int npes;
    size_t nominal;        /* each heap's first size; it may grow to map.bytes */
    void (*pe_main)(void *arg);
    void *arg;
    shm__barrier barrier;
    int create_failed;     /* written by the threads, read after join */
    shm__pe *pes;
    /* Start gate: threads wait here until all were created, so a failed
       pthread_create cannot leave the others in the first barrier. */
    pthread_mutex_t gate_mutex;
    pthread_cond_t gate_cond;
    int gate;              /* 0 closed, 1 run, -1 give up */
};

static SHMALLOC_TLS shm__pe *shm__self;

/* >> transport ---------------------------------------------------------------
   The shmalloc_transport members; user is the calling PE's shm__pe. */
static int shm__tp_barrier(void *user)
{
    shm__pe *pe = (shm__pe *)user;
    shm__sync(&pe->world->barrier, pe->index, ++pe->epoch, NULL, 0);
    return 0;
}

static int shm__tp_allreduce_max(void *user, uint64_t *values, int count)
{
    shm__pe *pe = (shm__pe *)user;
    int bad = count < 0 || count > SHMALLOC_REDUCE_MAX;
    shm__sync(&pe->world->barrier, pe->index, ++pe->epoch, values, bad ? 0 : count); /* even when bad */
    return bad ? -1 : 0;
}

static int shm__tp_lock(void *user)
{
    return pthread_mutex_lock(&((shm__pe *)user)->lock) == 0 ? 0 : -1;
}

static int shm__tp_unlock(void *user)
{
    return pthread_mutex_unlock(&((shm__pe *)user)->lock) == 0 ? 0 : -1;
}

/* >> pe threads --------------------------------------------------------------*/
static int shm__wait_gate(shm__world *w)
{
    int gate;
    pthread_mutex_lock(&w->gate_mutex);
    while (w->gate == 0) pthread_cond_wait(&w->gate_cond, &w->gate_mutex);
    gate = w->gate;
    pthread_mutex_unlock(&w->gate_mutex);
    return gate > 0;
}

static void shm__open_gate(shm__world *w, int gate)
{
    pthread_mutex_lock(&w->gate_mutex);
    w->gate = gate;
    pthread_cond_broadcast(&w->gate_cond);
    pthread_mutex_unlock(&w->gate_mutex);
}

/* Collective: 1 when every PE created its heap.  The all-reduce's barrier
   also publishes each pe->heap to the peers. */
static int shm__all_created(shm__pe *pe)
{
    uint64_t failed = pe->heap == NULL ? 1u : 0u;
    if (failed) __atomic_store_n(&pe->world->create_failed, 1, __ATOMIC_RELAXED);
    shm__tp_allreduce_max(pe, &failed, 1);
    return failed == 0;
}

static void *shm__pe_thread(void *arg)
{
    shm__pe *pe = (shm__pe *)arg;
    shm__world *w = pe->world;
    shmalloc_transport tp;
    shmalloc_heap_config config;

    if (!shm__wait_gate(w)) return NULL;
    memset(&tp, 0, sizeof tp);
    tp.user = pe;
    tp.barrier = shm__tp_barrier;
    tp.allreduce_max = shm__tp_allreduce_max;
    tp.lock = shm__tp_lock;
    tp.unlock = shm__tp_unlock;
    tp.pe = pe->index;
    tp.npes = w->npes;
    config.nominal = w->nominal;
    config.debug = shmalloc_options()[SHMALLOC_OPT_DEBUG].value != 0;
    pe->heap = shmalloc_heap_create_with(pe->map.base, pe->map.bytes, &config, &tp, &pe->create_err);
    /* If some PE failed, those that succeeded skip destroy too: it is
       collective, and the heaps hold nothing outside the memory we unmap. */
    if (!shm__all_created(pe)) return NULL;
    shm__self = pe;
    shmalloc_set_current(pe->heap);
    w->pe_main(w->arg);
    shmem_quiet();
    shm__tp_barrier(pe); /* peers may still read this heap */
    shmalloc_heap_destroy(pe->heap);
    shmalloc_set_current(NULL);
    shm__self = NULL;
    return NULL;
}

/* >> run ---------------------------------------------------------------------*/
static int shm__world_init(shm__world *w, int npes, int timeout, void (*pe_main)(void *), void *arg)
{
    memset(w, 0, sizeof *w);
    w->npes = npes;
    w->pe_main = pe_main;
    w->arg = arg;
    w->pes = (shm__pe *)calloc((size_t)npes, sizeof *w->pes);
    if (w->pes == NULL) goto fail_alloc;
    if (shm__barrier_init(&w->barrier, npes, timeout) != 0) goto fail_alloc;
    if (pthread_mutex_init(&w->gate_mutex, NULL) != 0) goto fail_barrier;
    if (pthread_cond_init(&w->gate_cond, NULL) != 0) goto fail_gate;
    return 0;
fail_gate:
    pthread_mutex_destroy(&w->gate_mutex);
fail_barrier:
    shm__barrier_fini(&w->barrier);
fail_alloc:
    free(w->pes);
    return -1;
}

static void shm__world_fini(shm__world *w)
{
    int q;
    for (q = 0; q < w->npes; q++) {
        if (w->pes[q].map.base != NULL) {
            shmalloc_map_release(&w->pes[q].map);
            pthread_mutex_destroy(&w->pes[q].lock);
        }
    }
    pthread_cond_destroy(&w->gate_cond);
    pthread_mutex_destroy(&w->gate_mutex);
    shm__barrier_fini(&w->barrier);
    free(w->pes);
}

/* Maps every PE's heap; -1 after a message when one cannot be mapped.  A
   heap short of the huge pages asked for says so when it is the first or
   differs from the first. */
static int shm__map_all(shm__world *w, size_t bytes, const shmalloc_map_huge *huge)
{
    int q;
    for (q = 0; q < w->npes; q++) {
        shm__pe *pe = &w->pes[q];
        pe->world = w;
        pe->index = q;
        if (shmalloc_map_heap(&pe->map, bytes, huge, 0, NULL) != 0) {
            fprintf(stderr, "shmalloc_pthreads_run: cannot map %zu bytes for the heap of PE %d: %s\n",
                    bytes, q, strerror(errno));
            return -1;
        }
        if (q == 0 || pe->map.pages != w->pes[0].map.pages) shmalloc_map_report(&pe->map, huge, q);
        if (pthread_mutex_init(&pe->lock, NULL) != 0) {
            shmalloc_map_release(&pe->map);
            fprintf(stderr, "shmalloc_pthreads_run: cannot create the lock of PE %d\n", q);
            return -1;
        }
    }
    return 0;
}

/* Starts the threads behind the gate and joins them; -1 when one could
   not be started (the others then return without touching their heaps). */
static int shm__start_and_join(shm__world *w)
{
    int q, started = 1;
    for (q = 0; q < w->npes && started; q++) {
        shm__pe *pe = &w->pes[q];
        pe->thread_started = pthread_create(&pe->thread, NULL, shm__pe_thread, pe) == 0;
        started = pe->thread_started;
    }
    if (!started)
        fprintf(stderr, "shmalloc_pthreads_run: cannot start the thread of PE %d\n", q - 1);
    shm__open_gate(w, started ? 1 : -1);
    for (q = 0; q < w->npes; q++)
        if (w->pes[q].thread_started) pthread_join(w->pes[q].thread, NULL);
    return started ? 0 : -1;
}

static void shm__report_create_failure(const shm__world *w)
{
    int q;
    for (q = 0; q < w->npes; q++) {
        if (w->pes[q].heap == NULL) {
            fprintf(stderr, "shmalloc_pthreads_run: PE %d could not create its heap "
                    "(malloc_error %ld)\n", q, w->pes[q].create_err);
            return;
        }
    }
}

/* The run-time options, once per run; heap_size, when not 0, stands for
   the heap size variables. */
static int shm__read_options(size_t heap_size)
{
    char text[32];
    snprintf(text, sizeof text, "%zu", heap_size);
    if (heap_size > ((size_t)1 << SHMALLOC_MAX_LOG2)) {
        fprintf(stderr, "shmalloc_pthreads_run: heap size %zu is not in 1..2^%d\n", heap_size, SHMALLOC_MAX_LOG2);
        return -1;
    }
    if (shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, heap_size ? text : NULL) != 0) return -1;
    return shmalloc_options_read(environ);
}

/* The nominal size and the bytes to reserve: shmalloc_heap_bytes of
   SHMALLOC_HEAP_MAX when the heap may grow, else of the nominal size. */
static int shm__check_size(size_t *nominal, size_t *bytes)
{
    size_t max, heap_size = (size_t)shmalloc_options()[SHMALLOC_OPT_HEAP_SIZE].value;
    if (shmalloc_heap_max_from_env(heap_size, &max) != 0) return -1;
    *nominal = max > heap_size ? heap_size : SIZE_MAX; /* SIZE_MAX: no growth */
    *bytes = shmalloc_heap_bytes(max);
    if (*bytes < max) {
        fprintf(stderr, "shmalloc_pthreads_run: heap size %zu is too large\n", heap_size);
        return -1;
    }
    return 0;
}

int shmalloc_pthreads_run(int npes, size_t heap_size, void (*pe_main)(void *arg), void *arg)
{
    shm__world w;
    shmalloc_map_huge huge;
    size_t nominal, bytes;
    int rc;

    if (npes < 1 || npes > SHMALLOC_PTHREADS_MAX_PES) {
        fprintf(stderr, "shmalloc_pthreads_run: npes is %d, must be 1..%d\n", npes,
                SHMALLOC_PTHREADS_MAX_PES);
        return 1;
    }
    if (pe_main == NULL) {
        fprintf(stderr, "shmalloc_pthreads_run: pe_main is NULL\n");
        return 1;
    }
    if (shm__read_options(heap_size) != 0 || shm__check_size(&nominal, &bytes) != 0 ||
        shmalloc_map_huge_from_env(&huge) != 0)
        return 1;
    if (shm__world_init(&w, npes, (int)shmalloc_options()[SHMALLOC_OPT_BARRIER_TIMEOUT].value, pe_main, arg) != 0) {
        fprintf(stderr, "shmalloc_pthreads_run: out of memory for %d PEs\n", npes);
        return 1;
    }
    w.nominal = nominal;
    rc = shm__map_all(&w, bytes, &huge) == 0 ? shm__start_and_join(&w) : -1;
    if (rc == 0 && w.create_failed) {
        shm__report_create_failure(&w);
        rc = -1;
    }
    shm__world_fini(&w);
    return rc == 0 ? 0 : 1;
}

/* >> shmem -------------------------------------------------------------------*/
int shmem_my_pe(void)
{
    return shm__self != NULL ? shm__self->index : -1;
}

int shmem_n_pes(void)
{
    return shm__self != NULL ? shm__self->world->npes : 0;
}

void shmem_quiet(void)
{
    /* Puts are plain memcpy, complete on return: only ordering is left. */
#if !defined(SHMALLOC_TSAN)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

void shmem_barrier_all(void)
{
    if (shm__self == NULL) return;
    shmem_quiet();
    shm__tp_barrier(shm__self);
}

static int shm__valid_pe(const shm__pe *me, int pe)
{
    return me != NULL && pe >= 0 && pe < me->world->npes;
}

void *shmem_ptr(const void *dest, int pe)
{
    shm__pe *me = shm__self;
    size_t offset;

    if (!shm__valid_pe(me, pe) || !shmalloc_heap_contains(me->heap, dest)) return NULL;
    offset = (size_t)((const char *)dest - (const char *)shmalloc_heap_base(me->heap));
    return (char *)shmalloc_heap_base(me->world->pes[pe].heap) + offset;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    shm__pe *me = shm__self;
    return shm__valid_pe(me, pe) && shmalloc_heap_contains(me->heap, addr);
}

/* Peer pe's address of the symmetric range [addr, addr + n); ends the
   process when the range is not wholly inside this PE's heap. */
static char *shm__remote_range(const char *what, const void *addr, size_t n, int pe)
{
    shm__pe *me = shm__self;
    uintptr_t last = (uintptr_t)addr + (n - 1);
    char *remote = (char *)shmem_ptr(addr, pe);

    if (remote == NULL || last < (uintptr_t)addr ||
        !shmalloc_heap_contains(me->heap, (const void *)last)) {
        fprintf(stderr, "%s: %zu bytes at %p on PE %d are not a symmetric range "
                "(calling PE %d of %d)\n", what, n, addr, pe, shmem_my_pe(), shmem_n_pes());
        shmem_global_exit(1);
    }
    return remote;
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    memcpy(shm__remote_range("shmem_putmem", dest, nelems, pe), source, nelems);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    memcpy(dest, shm__remote_range("shmem_getmem", source, nelems, pe), nelems);
}

void shmem_global_exit(int status)
{
    /* _exit, not exit: atexit handlers and library destructors would run
       while the other PE threads are still using the heaps. */
    fflush(NULL);
    _exit(status);
}
