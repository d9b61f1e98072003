/* run.c - shmalloc_pthreads_run: one run, its PE threads
   and the transport contract they bind.  See pthreads.h. */
#include "pthreads.h"

#include <stdio.h>
#include <string.h>

SHMALLOC_TLS shm__pe *shm__self;

/* >> transport ---------------------------------------------------------------
   The shmalloc_transport members; user is the heap's shm__space, its
   member the calling PE's handle of the heap's team. */
static void shm__tp_sync(void *user, uint64_t *values, int count, int op)
{
    const shm__space *s = (const shm__space *)user;
    shm__team_sync(s->member, values, count, op, s->heap); /* a space's calls name it in a timeout */
}

static struct shmalloc_team *shm__member(void *user) { return ((shm__space *)user)->member; }

static int shm__tp_barrier(void *user)
{
    shm__tp_sync(user, NULL, 0, SHM__REDUCE_MAX);
    return 0;
}

static int shm__tp_allreduce_max(void *user, uint64_t *values, int count)
{
    int bad = count < 0 || count > SHMALLOC_REDUCE_MAX;
    shm__tp_sync(user, values, bad ? 0 : count, SHM__REDUCE_MAX); /* even bad */
    return bad ? -1 : 0;
}

static int shm__tp_allreduce_and(void *user, uint64_t *values, int count)
{
    int bad = count < 0 || count > SHMALLOC_REDUCE_AND_MAX;
    shm__tp_sync(user, values, bad ? 0 : count, SHM__REDUCE_AND);
    return bad ? -1 : 0;
}

static int shm__tp_lock(void *user)
{
    return pthread_mutex_lock(&shm__member(user)->pe->lock) == 0 ? 0 : -1;
}

static int shm__tp_unlock(void *user)
{
    return pthread_mutex_unlock(&shm__member(user)->pe->lock) == 0 ? 0 : -1;
}

void shm__team_transport(shm__space *user, shmalloc_transport *tp)
{
    memset(tp, 0, sizeof *tp);
    tp->user = user;
    tp->barrier = shm__tp_barrier;
    tp->allreduce_max = shm__tp_allreduce_max;
    tp->allreduce_and = shm__tp_allreduce_and;
    tp->lock = shm__tp_lock;
    tp->unlock = shm__tp_unlock;
    tp->fill = shmalloc_transport_single()->fill; /* host memory: a space with separate metadata needs them */
    tp->copy = shmalloc_transport_single()->copy;
    tp->team = shm__tp_team;
    tp->team_done = shm__tp_team_done;
    tp->pe = user->member->index;
    tp->npes = user->member->team->barrier.parties;
}

/* >> pe threads --------------------------------------------------------------*/
static int shm__wait_gate(shm__run *w)
{
    int gate;
    pthread_mutex_lock(&w->gate_mutex);
    while (w->gate == 0) pthread_cond_wait(&w->gate_cond, &w->gate_mutex);
    gate = w->gate;
    pthread_mutex_unlock(&w->gate_mutex);
    return gate > 0;
}

static void shm__open_gate(shm__run *w, int gate)
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
    if (failed) __atomic_store_n(&pe->run->create_failed, 1, __ATOMIC_RELAXED);
    shm__team_sync(&pe->run->world.members[pe->index], &failed, 1, SHM__REDUCE_MAX, NULL);
    return failed == 0;
}

static void *shm__pe_thread(void *arg)
{
    shm__pe *pe = (shm__pe *)arg;
    shm__run *w = pe->run;
    shmalloc_transport tp;
    char ended[48];

    if (!shm__wait_gate(w)) return NULL;
    pe->space.member = &w->world.members[pe->index];
    pe->space.prev = pe->space.next = &pe->space;
    shm__team_transport(&pe->space, &tp);
    pe->heap = shmalloc_start_heap(&w->start, &pe->map, &tp, NULL);
    /* If some PE failed, those that succeeded skip destroy too: it is
       collective, and the heaps hold nothing outside the memory we unmap. */
    if (!shm__all_created(pe)) return NULL;
    shm__self = pe;
    shmalloc_set_current(pe->heap);
    w->pe_main(w->arg);
    shmem_quiet();
    shm__space_end_all(pe);
    shm__team_leave_all(pe); /* before the world's last barrier, which a teammate may never reach */
    snprintf(ended, sizeof ended, "PE %d returned from pe_main", pe->index); /* what a mismatch names */
    /* collective: peers may still read this heap until every PE is here */
    shmalloc_heap_destroy_ended(pe->heap, ended);
    shm__barrier_leave(&w->world.barrier, pe->index);
    shmalloc_set_current(NULL);
    shm__self = NULL;
    return NULL;
}

/* >> run ---------------------------------------------------------------------*/
static int shm__run_init(shm__run *w, int npes, const shmalloc_start *start, void (*pe_main)(void *), void *arg)
{
    memset(w, 0, sizeof *w);
    w->start = *start;
    w->npes = npes;
    w->pe_main = pe_main;
    w->arg = arg;
    w->pes = (shm__pe *)shmalloc_mem_alloc((size_t)npes, sizeof *w->pes);
    if (w->pes == NULL) goto fail_alloc;
    if (pthread_mutex_init(&w->teams_mutex, NULL) != 0) goto fail_alloc;
    if (shm__team_init(&w->world, w, 0, 1, npes) != 0) goto fail_teams;
    if (pthread_mutex_init(&w->gate_mutex, NULL) != 0) goto fail_world;
    if (pthread_cond_init(&w->gate_cond, NULL) != 0) goto fail_gate;
    return 0;
fail_gate:
    pthread_mutex_destroy(&w->gate_mutex);
fail_world:
    shm__team_fini(&w->world);
fail_teams:
    pthread_mutex_destroy(&w->teams_mutex);
fail_alloc:
    shmalloc_mem_free(w->pes);
    return -1;
}

static void shm__run_fini(shm__run *w)
{
    int q;
    for (q = 0; q < w->npes; q++) {
        shm__space_unmap_left(&w->pes[q]);
        if (w->pes[q].map.base != NULL) {
            shmalloc_map_release(&w->pes[q].map);
            pthread_mutex_destroy(&w->pes[q].lock);
        }
    }
    pthread_cond_destroy(&w->gate_cond);
    pthread_mutex_destroy(&w->gate_mutex);
    while (w->world.next != &w->world) shm__team_fini(w->world.next); /* teams never destroyed */
    shm__team_fini(&w->world);
    pthread_mutex_destroy(&w->teams_mutex);
    shmalloc_mem_free(w->pes);
}

/* Maps every PE's heap; -1 after a message when one cannot be mapped.  A
   heap short of the huge pages asked for says so when it is the first or
   differs from the first. */
static int shm__map_all(shm__run *w)
{
    int q;
    for (q = 0; q < w->npes; q++) {
        shm__pe *pe = &w->pes[q];
        pe->run = w;
        pe->index = q;
        if (shmalloc_start_map(&w->start, &pe->map, 0, NULL, q) != 0) return -1;
        if (q == 0 || pe->map.pages != w->pes[0].map.pages) shmalloc_map_report(&pe->map, &w->start.huge, q);
        if (pthread_mutex_init(&pe->lock, NULL) != 0) {
            shmalloc_map_release(&pe->map);
            shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_LOCK_FAILED), q);
            return -1;
        }
    }
    return 0;
}

/* Starts the threads behind the gate and joins them; -1 when one could
   not be started (the others then return without touching their heaps). */
static int shm__start_and_join(shm__run *w)
{
    int q, started = 1;
    for (q = 0; q < w->npes && started; q++) {
        shm__pe *pe = &w->pes[q];
        pe->thread_started = pthread_create(&pe->thread, NULL, shm__pe_thread, pe) == 0;
        started = pe->thread_started;
    }
    if (!started)
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_THREAD_FAILED), q - 1);
    shm__open_gate(w, started ? 1 : -1);
    for (q = 0; q < w->npes; q++)
        if (w->pes[q].thread_started) pthread_join(w->pes[q].thread, NULL);
    return started ? 0 : -1;
}

int shm__pthreads_messages = -1;

/* The transport's messages (messages.h) join the table, before any prints. */
static int shm__pthreads_messages_add(void)
{
    static const shmalloc_message rows[] = {SHMALLOC_PTHREADS_MESSAGES(SHMALLOC_MESSAGE_ROW)};
    int first = shmalloc_messages_add(rows, SHMALLOC_PTHREADS_MESSAGE_ROWS);
    if (first < 0) return -1;
    if (first != shm__pthreads_messages) shm__pthreads_messages = first; /* written once: PE threads read it */
    return 0;
}

int shmalloc_pthreads_options(void) { return shmalloc_start_options(); }

int shmalloc_pthreads_run(int npes, size_t nominal, void (*pe_main)(void *arg), void *arg)
{
    static const char who[] = "shmalloc_pthreads_run";
    shm__run w;
    shmalloc_start start;
    int rc;

    if (shm__pthreads_messages_add() != 0) return 1;
    if (npes < 1 || npes > SHMALLOC_PTHREADS_MAX_PES) {
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_BAD_NPES), npes, SHMALLOC_PTHREADS_MAX_PES);
        return 1;
    }
    if (pe_main == NULL) {
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_NO_PE_MAIN));
        return 1;
    }
    /* nominal becomes the table's size: the argument, else the environment's */
    if (shmalloc_start_size(who, nominal) != 0 || shmalloc_start_read(&start, who) != 0) return 1;
    shmalloc_start_unknown(&start, 0, 1); /* the process speaks for its PEs */
    if (shm__run_init(&w, npes, &start, pe_main, arg) != 0) {
        shmalloc_print(2, SHM__PTHREADS_MSG(PTHREADS_NO_MEMORY), npes, npes == 1 ? "" : "s");
        return 1;
    }
    shmalloc_options_announce(0); /* the process speaks for its PEs */
    rc = shm__map_all(&w) == 0 ? shm__start_and_join(&w) : -1;
    if (w.create_failed) rc = -1; /* each PE said why */
    shm__run_fini(&w);
    return rc == 0 ? 0 : 1;
}
