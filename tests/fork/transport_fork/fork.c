/* fork.c - the fork transport: PEs are processes forked from the caller
   of shmalloc_fork_run.  See shmalloc_fork.h.

   It binds what is its own and takes the rest from the start-up layer
   (transports/common/start.h): options, sizes and pages read once before
   the fork, every PE's heap mapped shared before the fork (so each PE sees
   every heap at the same address), the heap created over the contract,
   and the range check of puts and gets.  Its own: the barrier and the
   all-reduce of a team, through one shared anonymous mapping; the world
   is the first team, teams.c makes the others, and the contract's team
   member gives the header a transport over one for its spaces, whose
   memory spaces.c keeps. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_ANONYMOUS */
#endif
#include "team.h"
#include "transports/common/copy.h"
#include "transports/common/wait.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

shm__fork_run shm__fork = {.me = -1};
int shm__fork_messages = -1;

/* >> barrier and all-reduce -------------------------------------------------- */
/* Names the team and every member that has not reached barrier e. */
static void shm__fork_gave_up(const struct shmalloc_team *t, const shm__fork_slot *slots, uint64_t e)
{
    char late[SHMALLOC_FORK_MAX_PES * 4 + 1] = "";
    size_t used = 0;
    int q;
    for (q = 0; q < t->size && used + 8 < sizeof late; q++)
        if (__atomic_load_n(&slots[q].epoch, __ATOMIC_ACQUIRE) < e)
            used += (size_t)snprintf(late + used, sizeof late - used, "%s%d", used ? ", " : "",
                                     t->start + q * t->stride);
    shmalloc_print(2, SHM__FORK_MSG(FORK_BARRIER_TIMEOUT), shm__fork.me, shm__fork.start.timeout, (unsigned long long)e,
                   t->start, t->stride, t->size - 1, late);
    shmem_global_exit(1);
}

void shm__fork_sync(struct shmalloc_team *t, uint64_t *values, int count)
{
    shm__fork_slot *slots = shm__fork.shared->states[t->state].slots;
    uint64_t e = ++t->epoch;
    int q, i, odd = (int)(e & 1);
    for (i = 0; i < count; i++) slots[t->me].values[odd][i] = values[i];
    __atomic_store_n(&slots[t->me].epoch, e, __ATOMIC_RELEASE);
    for (q = 0; q < t->size; q++) {
        shmalloc_wait w;
        shmalloc_wait_begin(&w, shm__fork.start.timeout, 0, 1000); /* PEs may outnumber cpus: yield at once */
        while (__atomic_load_n(&slots[q].epoch, __ATOMIC_ACQUIRE) < e) {
            int s = shmalloc_wait_step(&w);
            if (s == SHMALLOC_WAIT_EXPIRED) shm__fork_gave_up(t, slots, e);
            if (s == SHMALLOC_WAIT_SLEEP) shmalloc_wait_sleep(&w);
        }
        for (i = 0; i < count; i++)
            if (slots[q].values[odd][i] > values[i]) values[i] = slots[q].values[odd][i];
    }
}

/* The contract's, over the team in user: the world's or a space's. */
static int shm__fork_barrier(void *user)
{
    struct shmalloc_team *t = (struct shmalloc_team *)user;
    if (t->state < 0) return -1; /* destroyed */
    shm__fork_sync(t, NULL, 0);
    return 0;
}

static int shm__fork_allreduce_max(void *user, uint64_t *values, int count)
{
    struct shmalloc_team *t = (struct shmalloc_team *)user;
    int bad = count < 0 || count > SHMALLOC_REDUCE_MAX;
    if (t->state < 0) return -1;
    shm__fork_sync(t, values, bad ? 0 : count); /* synchronises even when bad */
    return bad ? -1 : 0;
}

/* >> the contract ---------------------------------------------------------------- */
/* The contract over team t: the world's transport, or a space's. */
static void shm__fork_contract(struct shmalloc_team *t, shmalloc_transport *tp)
{
    memset(tp, 0, sizeof *tp);
    tp->user = t;
    tp->barrier = shm__fork_barrier;
    tp->allreduce_max = shm__fork_allreduce_max;
    tp->pe = t->me;
    tp->npes = t->size;
    tp->fill = shmalloc_transport_single()->fill; /* host memory */
    tp->copy = shmalloc_transport_single()->copy;
}

/* The contract's team member: *child over the team the handle names,
   which it holds until team_done.  A PE outside the team has no handle of
   it: -1. */
static int shm__fork_team_child(void *user, const void *handle, shmalloc_transport *child)
{
    struct shmalloc_team *t = shm__fork_team((shmem_team_t)handle);
    (void)user;
    if (t == NULL || t->state < 0) return -1;
    shm__fork_contract(t, child);
    t->holds++;
    return 0;
}

static void shm__fork_team_done(void *child_user) { shm__fork_team_drop((struct shmalloc_team *)child_user); }

/* >> one PE ------------------------------------------------------------------ */
/* In the forked process: the heap over the contract, pe_main, the heap
   destroyed.  The exit status of the PE. */
static int shm__fork_pe(int me, void (*pe_main)(void *), void *arg)
{
    shmalloc_transport tp;
    shm__fork.me = me;
    shm__fork_teams_start();
    shm__fork_contract(SHMEM_TEAM_WORLD, &tp);
    tp.team = shm__fork_team_child;
    tp.team_done = shm__fork_team_done;
    shm__fork.heap = shmalloc_start_heap(&shm__fork.start, &shm__fork.maps[me], &tp, NULL);
    if (!shm__fork.heap) return 1; /* on every PE: creation is collective */
    shmalloc_set_process_heap(shm__fork.heap);
    pe_main(arg);
    shmalloc_heap_destroy(shm__fork.heap); /* collective: peers may read this heap until every PE is here */
    shmalloc_set_process_heap(NULL);
    return 0;
}

/* >> the run ------------------------------------------------------------------ */
/* An anonymous mapping the forked PEs share, or NULL after a message. */
static void *shm__fork_map_shared(const char *what, size_t bytes, int flags)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | flags, -1, 0);
    if (m != MAP_FAILED) return m;
    shmalloc_print(2, SHM__FORK_MSG(FORK_MAP_FAILED), bytes, what,
                   strerror(errno));
    return NULL;
}

/* Every PE's heap, shared so the forked PEs see each other's. */
static int shm__fork_map_all(int npes)
{
    int q;
    for (q = 0; q < npes; q++) {
        if (shmalloc_start_map(&shm__fork.start, &shm__fork.maps[q], 1, NULL, q) != 0) return -1;
        if (q == 0 || shm__fork.maps[q].pages != shm__fork.maps[0].pages)
            shmalloc_map_report(&shm__fork.maps[q], &shm__fork.start.huge, q);
    }
    return 0;
}

/* Waits for the PEs started; the first that fails is named and ends the
   others, which would otherwise wait for it until their barrier's
   deadline.  0 when every PE ended with status 0. */
static int shm__fork_join(pid_t *pids, int started)
{
    int status, q, left = started, failed = 0;
    while (left > 0) {
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) return -1;
        for (q = 0; q < started && pids[q] != pid; q++) continue;
        if (q == started) continue; /* not a PE */
        left--;
        pids[q] = 0; /* reaped: its number may be reused */
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        if (!failed++) {
            shmalloc_print(2, SHM__FORK_MSG(FORK_PE_ENDED), q,
                           WIFEXITED(status) ? "status" : "signal",
                           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            for (q = 0; q < started; q++)
                if (pids[q] > 0) kill(pids[q], SIGKILL);
        }
    }
    return failed ? -1 : 0;
}

static int shm__fork_start_and_join(int npes, void (*pe_main)(void *), void *arg)
{
    pid_t pids[SHMALLOC_FORK_MAX_PES];
    int q;
    fflush(NULL); /* nothing buffered is written twice */
    for (q = 0; q < npes; q++) {
        pids[q] = fork();
        if (pids[q] == 0) {
            int status = shm__fork_pe(q, pe_main, arg);
            fflush(NULL);
            _exit(status); /* not exit: the caller's atexit handlers are not the PE's */
        }
        if (pids[q] < 0) {
            shmalloc_print(2, SHM__FORK_MSG(FORK_FORK_FAILED), q,
                           strerror(errno));
            while (q-- > 0) kill(pids[q], SIGKILL);
            return -1;
        }
    }
    return shm__fork_join(pids, npes);
}

int shmalloc_fork_run(int npes, size_t nominal, void (*pe_main)(void *arg), void *arg)
{
    static const char who[] = "shmalloc_fork_run";
    size_t shared = sizeof(shm__fork_shared), spaces = (size_t)npes * SHMALLOC_FORK_SPACES;
    static const shmalloc_message rows[] = {SHMALLOC_FORK_MESSAGES(SHMALLOC_MESSAGE_ROW)};
    int q, rc = -1;
    if ((shm__fork_messages = shmalloc_messages_add(rows, SHMALLOC_FORK_MESSAGE_ROWS)) < 0) return 1;
    if (npes < 1 || npes > SHMALLOC_FORK_MAX_PES || pe_main == NULL) {
        shmalloc_print(2, SHM__FORK_MSG(FORK_BAD_ARGS), who, npes,
                       SHMALLOC_FORK_MAX_PES, pe_main ? "given" : "NULL");
        return 1;
    }
    if (shmalloc_start_size(who, nominal) != 0 || shmalloc_start_read(&shm__fork.start, who) != 0) return 1;
    shmalloc_start_unknown(&shm__fork.start, 0, 1); /* the process speaks for the PEs it forks */
    shm__fork.shared = (shm__fork_shared *)shm__fork_map_shared("the barriers", shared, 0);
    shm__fork.spaces = (char *)shm__fork_map_shared("the spaces (SHMALLOC_FORK_SPACES a PE)", spaces, MAP_NORESERVE);
    memset(shm__fork.maps, 0, sizeof shm__fork.maps);
    shm__fork.npes = npes;
    if (shm__fork.shared && shm__fork.spaces && shm__fork_map_all(npes) == 0) {
        shm__fork.shared->used = 1; /* states[0]: the world's */
        rc = shm__fork_start_and_join(npes, pe_main, arg);
    }
    for (q = 0; q < npes; q++)
        if (shm__fork.maps[q].base) shmalloc_map_release(&shm__fork.maps[q]);
    if (shm__fork.shared) munmap(shm__fork.shared, shared);
    if (shm__fork.spaces) munmap(shm__fork.spaces, spaces);
    shm__fork.shared = NULL;
    shm__fork.spaces = NULL;
    return rc == 0 ? 0 : 1;
}

/* >> the SHMEM names ------------------------------------------------------------ */
int shmem_my_pe(void) { return shm__fork.me; }

int shmem_n_pes(void) { return shm__fork.me >= 0 ? shm__fork.npes : 0; }

void shmem_quiet(void)
{
    /* Puts are plain copies, complete on return: only ordering is left. */
#if !defined(__SANITIZE_THREAD__) /* gcc refuses a fence under ThreadSanitizer */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

void shmem_barrier_all(void)
{
    if (shm__fork.me < 0) return;
    shmem_quiet();
    shm__fork_sync(SHMEM_TEAM_WORLD, NULL, 0);
}

/* Peer pe's address of the symmetric range [addr, addr + n); ends the PE
   when it is not one. */
static char *shm__fork_remote(const char *what, const void *addr, size_t n, int pe)
{
    const shmalloc_heap *h = shm__fork.heap;
    char *in_space = h && !shmalloc_heap_contains(h, addr) ? shm__fork_space_remote(what, addr, n, pe) : NULL;
    size_t offset;
    if (in_space) return in_space;
    offset = shmalloc_start_range(what, addr, n, pe, h ? shmalloc_heap_base(h) : NULL, h ? shmalloc_heap_size(h) : 0,
                                  shm__fork.me, shm__fork.npes);
    if (offset == SIZE_MAX) shmem_global_exit(1);
    return shm__fork.maps[pe].base + offset; /* every heap starts at its mapping's base */
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    shmalloc_copy(shm__fork_remote("shmem_putmem", dest, nelems, pe), source, nelems);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    shmalloc_copy(dest, shm__fork_remote("shmem_getmem", source, nelems, pe), nelems);
}

void shmem_global_exit(int status)
{
    fflush(NULL);
    _exit(status);
}
