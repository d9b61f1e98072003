/* shmem.c - the SHMEM entry points of the PMIx + libfabric transport, and
   the transport contract it hands the heap: start-up in named steps,
   shut-down, and the calls that only read the PE's state. */
#include "teams.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

shm__entry_state shm__w;

/* >> the transport contract ------------------------------------------------------- */
static int shm__heap_lock(void *user)
{
    return pthread_mutex_lock(&((shm__entry_state *)user)->heap_mutex) == 0 ? 0 : -1;
}

static int shm__heap_unlock(void *user)
{
    return pthread_mutex_unlock(&((shm__entry_state *)user)->heap_mutex) == 0 ? 0 : -1;
}

/* A barrier that combines count values by max on the way (none: a plain
   barrier), through node memory or by messages. */
void shm__world_collective(uint64_t *values, int count)
{
    shmem_quiet();
    shm__coll.calls++; /* one thread at a time: collective calls are */
    SHM__COUNT(calls, 1);
    if (shm__coll.node) shm__node_sync(values, count);
    else if (shm__ofi.ep) shm__disseminate(&shm__coll.world, values, count);
}

static int shm__tp_barrier(void *user)
{
    (void)user;
    shm__world_collective(NULL, 0);
    return 0;
}

static int shm__tp_allreduce_max(void *user, uint64_t *values, int count)
{
    int bad = count < 0 || count > SHMALLOC_REDUCE_MAX;
    (void)user;
    shm__world_collective(values, bad ? 0 : count); /* synchronises even when bad */
    return bad ? -1 : 0;
}

/* One collective call, whatever the count: a node slot and a message
   carry SHMALLOC_REDUCE_AND_MAX values, so a drain is one round. */
static int shm__tp_allreduce_and(void *user, uint64_t *values, int count)
{
    int bad = count < 0 || count > SHMALLOC_REDUCE_AND_MAX;
    (void)user;
    shm__coll.fold_and = 1;
    SHM__COUNT(and_calls, 1);
    shm__world_collective(values, bad ? 0 : count); /* synchronises even when bad */
    shm__coll.fold_and = 0;
    return bad ? -1 : 0;
}

#if defined(SHMALLOC_TESTING)
void shmalloc_pmix_ofi_counts_get(shmalloc_pmix_ofi_counts *out) { *out = shm__coll.counts; }
#endif

static void shm__fill_transport(shm__entry_state *w, shmalloc_transport *tp)
{
    memset(tp, 0, sizeof *tp);
    tp->user = w;
    tp->pe = shm__job.me; /* the heap's reports name this PE */
    tp->npes = shm__job.npes;
    tp->barrier = shm__tp_barrier;
    tp->allreduce_max = shm__tp_allreduce_max;
    tp->allreduce_and = shm__tp_allreduce_and;
    tp->register_region = shm__tp_register;
    tp->deregister_region = shm__tp_deregister;
    tp->team = shm__tp_team;
    tp->team_done = shm__tp_team_done;
    if (shm__ofi.threaded) {
        tp->lock = shm__heap_lock;
        tp->unlock = shm__heap_unlock;
    }
}

/* >> start-up and shut-down ------------------------------------------------------- */
/* Closes what is open, in order; safe at any point of start-up. */
static void shm__teardown(void)
{
    shm__teams_close();
    shm__rma_close();
    shm__memory_close();
    shm__fabric_close();
    shm__node_close();
    shm__pmix_close();
}

/* A failure during start-up closes what is open.  Peers may have died
   meanwhile, or will be ended by the launcher: the files of start-up go
   as with a fatal error. */
static void shm__init_failed(void)
{
    int launched = shm__job.have_pmix;
    shm__teardown();
    if (launched) shm__remove_files();
}

/* The settings, before anything is opened: a bad one ends the PE. */
int shm__pmix_messages = -1;

/* The transport's messages (messages.h) join the table, before any prints. */
static int shm__messages_add(void)
{
    static const shmalloc_message rows[] = {SHMALLOC_PMIX_OFI_MESSAGES(SHMALLOC_MESSAGE_ROW)};
    int first = shmalloc_messages_add(rows, SHMALLOC_PMIX_OFI_MESSAGE_ROWS);
    if (first < 0) return -1;
    if (first != shm__pmix_messages) shm__pmix_messages = first; /* written once: other threads read it */
    return 0;
}

static void shm__init_settings(int level, shmalloc_start *s)
{
    memset(&shm__w, 0, sizeof shm__w); /* and every layer's state */
    memset(&shm__job, 0, sizeof shm__job);
    memset(&shm__ofi, 0, sizeof shm__ofi);
    memset(&shm__mem, 0, sizeof shm__mem);
    memset(&shm__coll, 0, sizeof shm__coll);
    memset(&shm__rma, 0, sizeof shm__rma);
    shm__w.thread_level = level;
    shm__ofi.threaded = level == SHMEM_THREAD_MULTIPLE;
    shm__coll.waiting_for = -1;
    if (shm__messages_add() != 0 || shmalloc_pmix_ofi_options() != 0 || shmalloc_start_read(s, "shmem_init") != 0)
        exit(1); /* it printed why */
    shm__read_init_options(&shm__w.opt);
    shm__faults_open(shm__w.opt.verbose, shm__init_failed);
    if (shm__ofi.threaded && pthread_mutex_init(&shm__w.heap_mutex, NULL) != 0)
        shm__init_fail(SHM__PMIX_MSG(PMIX_HEAP_LOCK_FAILED));
    shm__job.npes = 1;
}

/* PMIx, the heap's memory, libfabric and the node barrier: without a PMIx
   server only the memory, as PE 0 of 1. */
static void shm__init_runtime(const shmalloc_start *s)
{
    const shm__options *o = &shm__w.opt;
    if (shm__pmix_init(o, s->timeout) == 0) {
        int removed;
        shm__start_sweeper(); /* before any file of ours, and before our handlers */
        shm__ends_open(shm__job.me, shm__job.npes);
        shm__install_signals(shm__signal_words);
        if ((removed = shm__sweep(0)) != 0) /* what an earlier job that was killed outright left */
            shm__note(SHM__PMIX_MSG(PMIX_NOTE_FILES_REMOVED), shm__job.me, removed, removed > 1 ? "s" : "");
        shm__map_nodes();
    }
    shmalloc_start_unknown(s, shm__job.me, shm__job.npes);
    shm__place_heap(s, o, shm__job.me, shm__job.npes);
    if (shm__job.have_pmix) {
        shm__fabric_open(shm__job.me, shm__job.npes, shm__job.nodes.count, o->provider, s->timeout,
                         shm__check_deaths);
        shm__node_open(o->node_barrier, &shm__job.nodes, shm__job.proc.nspace);
        shm__barrier_open(s->timeout, shm__barrier_gave_up);
    }
    shm__rma_open(shm__job.me, shm__job.npes, shm__ofi.threaded);
    shm__teams_open(shm__job.me, shm__job.npes);
}

/* Collective: the heap registers its first region through the contract. */
static void shm__init_heap(const shmalloc_start *s)
{
    shmalloc_transport tp;
    shm__fill_transport(&shm__w, &tp);
    shm__w.running = 1;
    shm__mem.heap = shmalloc_start_heap(s, &shm__mem.map, &tp, NULL);
    if (!shm__mem.heap) {
        shm__w.running = 0;
        shm__init_end(); /* it said why */
    }
    shmalloc_set_process_heap(shm__mem.heap);
}

static void shm__barriers_text(char *barriers, size_t cap)
{
    if (!shm__coll.node) snprintf(barriers, cap, "by messages");
    else if (shm__job.nodes.count == 1) snprintf(barriers, cap, "through node memory");
    else snprintf(barriers, cap, "through node memory on each of %d nodes, messages between their leaders",
                  shm__job.nodes.count);
}

/* For SHMALLOC_VERBOSE: one line per PE of what start-up obtained. */
static void shm__describe(void)
{
    const shm__heap_state *h = &shm__mem;
    char fabric[448], barriers[96];
    int q, direct = 0;
    if (!shm__ofi.ep) {
        shm__note(SHM__PMIX_MSG(PMIX_NOTE_SINGLE_PE), h->bytes, (void *)h->base, shmalloc_map_pages_name(&h->map));
        return;
    }
    shm__fabric_text(fabric, sizeof fabric);
    for (q = 0; q < shm__job.npes; q++) direct += shm__peer_heap(q) != NULL;
    shm__barriers_text(barriers, sizeof barriers);
    shm__note(SHM__PMIX_MSG(PMIX_NOTE_STARTED), shm__job.me, shm__job.npes, fabric, h->bytes, (void *)h->base,
              h->same_address ? "same address on every PE" : "addresses differ", shmalloc_map_pages_name(&h->map),
              direct, direct == 1 ? "" : "s", barriers);
}

/* Collective: the heap, the fabric and PMIx closed.  how: NULL for
   shmem_finalize, else the words for a PE that ended without it. */
static void shm__finalize(const char *how)
{
    shmem_barrier_all();
    shmalloc_heap_destroy_ended(shm__mem.heap, how); /* collective; deregisters the heap */
    shmalloc_set_process_heap(NULL);
    shm__mem.heap = NULL;
    shm__coll.finalizing = 1; /* peers now exit normally */
    shm__w.running = 0;
    shm__teardown();
    shm__restore_signals();
    shm__mem.base = NULL;
    if (shm__ofi.threaded) pthread_mutex_destroy(&shm__w.heap_mutex);
}

/* A program that returns from main or calls exit without shmem_finalize
   (as many written for other runtimes do) finalizes here, so the launcher
   sees a clean end and keeps its exit status; peers still in collective
   calls are told it ended so, with its status.  A PE that died took no
   exit path; waiting for it ends this PE as any barrier would. */
static void shm__finalize_at_exit(int status, void *arg)
{
    char how[128];
    (void)arg;
    if (!shm__w.running) return;
    shm__node_note_end(((uint64_t)shm__coll.calls << 8 | (uint64_t)(status & 255)) << SHM__END_SHIFT |
                       SHM__END_EXITED);
    snprintf(how, sizeof how, "PE %d ended without shmem_finalize (it returned from main or called exit, status %d)",
             shm__job.me, status & 255);
    shm__finalize(how);
}

static void shm__init(int level)
{
    static int at_exit;
    shmalloc_start s;
    shm__init_settings(level, &s);
    shm__init_runtime(&s);
    shm__init_heap(&s);
    shm__w.start = s;
    if (!at_exit) at_exit = on_exit(shm__finalize_at_exit, NULL) == 0;
    if (shm__w.opt.verbose) shm__describe();
    shmalloc_options_announce(shm__job.me);
}

void shmem_init(void)
{
    if (!shm__w.running) shm__init(SHMEM_THREAD_SINGLE);
}

int shmem_init_thread(int requested, int *provided)
{
    if (shm__messages_add() != 0) return -1;
    if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE) {
        shmalloc_print(2, SHM__PMIX_MSG(PMIX_BAD_THREAD_LEVEL), requested);
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
    shm__node_note_end((uint64_t)shm__coll.calls << SHM__END_SHIFT | SHM__END_FINALIZED); /* for peers still waiting */
    shm__finalize(NULL);
}

void shmem_global_exit(int status) { shm__pmix_abort(status); }

/* >> the PE and its peers -------------------------------------------------------- */
void shmem_barrier_all(void)
{
    if (!shm__w.running) return;
    shm__tp_barrier(&shm__w);
}

int shmem_my_pe(void) { return shm__w.running ? shm__job.me : -1; }

int shmem_n_pes(void) { return shm__w.running ? shm__job.npes : 0; }

/* A space's address: a member's copy mapped here, else NULL. */
static void *shm__space_ptr(const void *dest, int pe)
{
    size_t offset;
    const shm__team_tp *t = shm__space_find(dest, 1, &offset);
    int m = t ? shm__space_member(t, pe) : -1;
    char *peer = m >= 0 ? shm__space_peer(t, m) : NULL;
    return peer ? peer + offset : NULL;
}

void *shmem_ptr(const void *dest, int pe)
{
    char *peer;
    if (!shm__w.running || pe < 0 || pe >= shm__job.npes) return NULL;
    if (!shm__in_heap(dest, 1)) return shm__space_ptr(dest, pe);
    if (pe == shm__job.me) return (void *)(uintptr_t)dest;
    return (peer = shm__peer_heap(pe)) != NULL ? peer + ((const char *)dest - shm__mem.base) : NULL;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    size_t offset;
    const shm__team_tp *t;
    if (!shm__w.running || pe < 0 || pe >= shm__job.npes) return 0;
    if (shm__in_heap(addr, 1)) return 1;
    return (t = shm__space_find(addr, 1, &offset)) != NULL && shm__space_member(t, pe) >= 0;
}
