/* barrier.c - the barrier and all-reduce among the PE threads: see
   pthreads.h. */
#include "pthreads.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define SHM__SPIN_PAUSE 1000 /* barrier polls with a cpu pause, when every PE has a cpu */
#define SHM__SPIN_YIELD 64   /* then polls with sched_yield */

static int shm__cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc;
    if (pthread_condattr_init(&attr) != 0) return -1;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cond, &attr) == 0 ? 0 : -1;
    pthread_condattr_destroy(&attr);
    return rc;
}

int shm__barrier_init(shm__barrier *b, int parties, int timeout, int start, int stride)
{
    b->parties = parties;
    b->start = start;
    b->stride = stride;
    b->team = 0;
    b->sleepers = 0;
    b->leavers = 0;
    b->expired = 0;
    b->timeout = timeout;
    b->pauses = parties <= sysconf(_SC_NPROCESSORS_ONLN) ? SHM__SPIN_PAUSE : 0;
    /* one slot more than the PEs, so that the first can start on a cache line */
    b->slots_mem = shmalloc_mem_alloc((size_t)parties + 1, sizeof(shm__slot));
    if (!b->slots_mem) return -1;
    b->slots = (shm__slot *)(((uintptr_t)b->slots_mem + 63) & ~(uintptr_t)63);
    if (pthread_mutex_init(&b->mutex, NULL) != 0) goto fail_slots;
    if (shm__cond_init_monotonic(&b->cond) != 0) goto fail_mutex;
    return 0;
fail_mutex:
    pthread_mutex_destroy(&b->mutex);
fail_slots:
    shmalloc_mem_free(b->slots_mem);
    return -1;
}

void shm__barrier_fini(shm__barrier *b)
{
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->mutex);
    shmalloc_mem_free(b->slots_mem);
}

static int shm__arrived(const shm__barrier *b, int q, uint64_t epoch)
{
    return __atomic_load_n(&b->slots[q].epoch, __ATOMIC_ACQUIRE) >= epoch;
}

static int shm__ended(const shm__barrier *b, int q) { return __atomic_load_n(&b->slots[q].ended, __ATOMIC_SEQ_CST); }

/* Ends the program: PE me waited too long for barrier epoch, unless every
   PE arrived just now, or (ended) waits for PEs that have ended and will
   never arrive.  The first PE to say so names every such PE (by its world
   number; a team's barrier names the team too, and the space whose call
   waits, if any); the others wait for its exit. */
static void shm__end_for_late_pes(shm__barrier *b, int me, uint64_t epoch, int ended, const void *space)
{
    char late[384];
    size_t n = 0;
    int q, missing = 0, listed = 0;
    for (q = 0; q < b->parties; q++) {
        if (shm__arrived(b, q, epoch) || (ended && !shm__ended(b, q))) continue;
        missing++;
        if (n + 24 < sizeof late) {
            n += (size_t)snprintf(late + n, sizeof late - n, "%s%d", listed ? ", " : "", b->start + q * b->stride);
            listed++;
        }
    }
    if (missing == 0) return;
    if (__atomic_exchange_n(&b->expired, 1, __ATOMIC_SEQ_CST))
        for (;;) pause();
    if (listed < missing) snprintf(late + n, sizeof late - n, " and %d more", missing - listed);
    if (ended)
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_PE_RETURNED), b->start + me * b->stride, (unsigned long long)epoch,
                       missing > 1 ? "s" : "", late, missing > 1 ? "ve" : "s");
    else if (space != NULL)
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_SPACE_BARRIER_TIMEOUT), space, b->timeout, missing > 1 ? "s" : "",
                       late, b->parties, b->parties > 1 ? "s" : "", b->start, b->stride, me, b->start + me * b->stride,
                       (unsigned long long)epoch);
    else if (b->team)
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_TEAM_BARRIER_TIMEOUT), b->timeout, missing > 1 ? "s" : "", late,
                       b->parties, b->parties > 1 ? "s" : "", b->start, b->stride, me, b->start + me * b->stride,
                       (unsigned long long)epoch);
    else
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_BARRIER_TIMEOUT), b->timeout, missing > 1 ? "s" : "", late, me,
                       b->parties, (unsigned long long)epoch);
    shmem_global_exit(1);
}

void shm__barrier_leave(shm__barrier *b, int me)
{
    __atomic_store_n(&b->slots[me].ended, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&b->leavers, 1u, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&b->mutex);
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mutex);
}

/* Sleeps until PE q reaches barrier epoch, an arriver wakes us, a PE has
   ended, or the wait's deadline.  A sleeper's increment and re-check are
   sequentially consistent with an arriver's epoch store and sleepers load
   (shm__sync). */
static void shm__sleep(shm__barrier *b, int q, uint64_t epoch, const shmalloc_wait *wait)
{
    struct timespec deadline;
    shmalloc_wait_deadline(wait, &deadline);
    __atomic_add_fetch(&b->sleepers, 1u, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&b->mutex);
    while (__atomic_load_n(&b->slots[q].epoch, __ATOMIC_SEQ_CST) < epoch &&
           !__atomic_load_n(&b->leavers, __ATOMIC_SEQ_CST) && /* then a PE waits for one that left: the end */
           pthread_cond_timedwait(&b->cond, &b->mutex, &deadline) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&b->mutex);
    __atomic_sub_fetch(&b->sleepers, 1u, __ATOMIC_SEQ_CST);
}

/* The slow path of barrier epoch for PE me, once PE q was not there yet. */
static void shm__wait_all(shm__barrier *b, int me, uint64_t epoch, int q, const void *space)
{
    shmalloc_wait wait;
    int r;
    shmalloc_wait_begin(&wait, b->timeout, b->pauses, SHM__SPIN_YIELD);
    for (;;) {
        switch (shmalloc_wait_step(&wait)) {
        case SHMALLOC_WAIT_EXPIRED: shm__end_for_late_pes(b, me, epoch, 0, space); break;
        case SHMALLOC_WAIT_SLEEP: shm__sleep(b, q, epoch, &wait); break;
        default: break;
        }
        while (q < b->parties && shm__arrived(b, q, epoch)) q++;
        if (q == b->parties) return;
        for (r = q; r < b->parties; r++)
            if (!shm__arrived(b, r, epoch) && shm__ended(b, r)) shm__end_for_late_pes(b, me, epoch, 1, space);
    }
}

/* The epoch store and the sleepers load are sequentially consistent, so
   an arriver either sees a sleeper or is seen by it. */
void shm__sync(shm__barrier *b, int me, uint64_t epoch, uint64_t *values, int count, int op, const void *space)
{
    shm__slot *mine = &b->slots[me];
    unsigned buf = (unsigned)(epoch & 1u);
    int q = 0, i;
    for (i = 0; i < count; i++) mine->values[buf][i] = values[i];
    mine->counts[buf] = count;
    __atomic_store_n(&mine->epoch, epoch, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&b->mutex);
        pthread_cond_broadcast(&b->cond);
        pthread_mutex_unlock(&b->mutex);
    }
    while (q < b->parties && shm__arrived(b, q, epoch)) q++;
    if (q < b->parties) shm__wait_all(b, me, epoch, q, space);
    for (q = 0; q < b->parties; q++) { /* a peer in a plain barrier (a skipped call) adds no values */
        const uint64_t *theirs = b->slots[q].values[buf];
        for (i = 0; q != me && i < count && i < b->slots[q].counts[buf]; i++) {
            if (op == SHM__REDUCE_AND) values[i] &= theirs[i];
            else if (theirs[i] > values[i]) values[i] = theirs[i];
        }
    }
}

uint64_t shm__published(const shm__barrier *b, int q, uint64_t epoch, int i)
{
    return b->slots[q].values[epoch & 1u][i];
}

int shm__barrier_slot(const shm__barrier *b, int pe)
{
    long from_start = (long)pe - b->start;
    if (from_start < 0 || from_start % b->stride != 0 || from_start / b->stride >= b->parties) return -1;
    return (int)(from_start / b->stride);
}
