/* ends.c - how a collective call ends when a peer does not come: a
   barrier that timed out, a peer that died or finalized while this PE
   waits, and what a PE ended by a signal says it was waiting for.  Above
   the barriers (barrier.c, node.c), whose memory tells which PEs have not
   arrived; progress and the signal handler call in here through what
   start-up registers with them. */
#include "teams.h"

#include <stdio.h>

#define SHM__DEATH_GRACE 1.0 /* s: a message already in flight may still land */

/* The same-node peers whose process is stopped (SIGSTOP, a debugger), up
   to max of them into pes: what a barrier by messages can tell of a PE
   that has not arrived. */
static int shm__stopped_peers(int *pes, int max)
{
    char text[512];
    const char *p;
    int q, n = 0;
    long pid;
    for (q = 0; q < shm__coll.npes && n < max; q++)
        if ((pid = shm__peer_pid(q)) > 0 && (p = shm__proc_state(pid, text, sizeof text)) &&
            (*p == 'T' || *p == 't'))
            pes[n++] = q;
    return n;
}

/* The PEs that have not arrived at the barrier this PE waits in, as far
   as it can tell: first the one a PE of this node gave up waiting for
   (the first cause; it may have come since, and the PEs that gave up are
   now missing: "PE 2, which PE 3 gave up waiting for"), then through
   node memory those of this node that have not entered it ("PE 2, which
   has not arrived", "PEs 1, 2, which have not arrived"); by messages
   only peers of this node that are stopped ("PE 2, which is stopped").
   Nothing, and 0, when none is known.  Async-signal-safe. */
static int shm__append_absent(char *line, size_t *n, size_t cap)
{
    int pes[8], i, count, stopped = 0, by;
    if ((pes[0] = shm__node_gave_up(&by)) >= 0) {
        shm__append(line, n, cap, "PE ");
        shm__append_int(line, n, cap, pes[0]);
        shm__append(line, n, cap, ", which PE ");
        shm__append_int(line, n, cap, by);
        shm__append(line, n, cap, " gave up waiting for");
        return 1;
    }
    count = shm__node_absent(pes, 8);
    if (count < 0 && __atomic_load_n(&shm__coll.waiting_for, __ATOMIC_RELAXED) >= 0)
        stopped = count = shm__stopped_peers(pes, 8);
    if (count <= 0) return 0;
    shm__append(line, n, cap, count > 1 ? "PEs " : "PE ");
    for (i = 0; i < count; i++) {
        if (i) shm__append(line, n, cap, ", ");
        shm__append_int(line, n, cap, pes[i]);
    }
    if (stopped) shm__append(line, n, cap, count > 1 ? ", which are stopped" : ", which is stopped");
    else shm__append(line, n, cap, count > 1 ? ", which have not arrived" : ", which has not arrived");
    return count;
}

/* A barrier that waited too long for PE pe names those that have not
   arrived, when node memory shows them (pe may only wait for them), and
   leaves a word for the node's peers: it gave up. */
void shm__barrier_gave_up(int pe)
{
    const shm__collective *c = &shm__coll;
    char absent[128];
    size_t n = 0;
    int pes[1], by;
    if (c->current && c->current->tag) shm__team_gave_up(c->current->team ? c->current->team : c->current, pe);
    if ((pes[0] = shm__node_gave_up(&by)) >= 0 || shm__node_absent(pes, 1) > 0 ||
        (!c->node && shm__stopped_peers(pes, 1) > 0))
        pe = pes[0];
    shm__node_note_end((uint64_t)pe << SHM__END_SHIFT | SHM__END_GAVE_UP);
    if (shm__append_absent(absent, &n, sizeof absent)) {
        absent[n] = '\0';
        shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_TIMEOUT_PES), c->timeout, absent, c->me, c->npes, c->world.epoch);
    }
    if (!c->node)
        shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_TIMEOUT_MESSAGE), c->timeout, pe, pe, c->me, c->npes, c->world.epoch);
    shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_TIMEOUT), c->timeout, pe, c->me, c->npes, c->world.epoch);
}

/* A team barrier that waited too long for PE pe names the team, in world
   numbers, and its members on this node that are not in this barrier
   (node memory shows which team barrier each is in), else whose message
   it lacks; it leaves the first of them for the node's peers. */
void shm__team_gave_up(const shm__group *g, int pe)
{
    const shm__collective *c = &shm__coll;
    uint64_t mine = (uint64_t)g->tag << 32 | g->epoch, where;
    char list[128], absent[192];
    size_t n = 0;
    int i, q, count = 0;
    list[0] = '\0';
    for (i = 0; i < g->size; i++)
        if ((q = shm__group_member(g, i)) != c->me && shm__node_where_of(q, &where) && where != mine) {
            if (count++) shm__append(list, &n, sizeof list - 1, ", ");
            else pe = q;
            shm__append_int(list, &n, sizeof list - 1, q);
            list[n] = '\0';
        }
    shm__node_note_end((uint64_t)pe << SHM__END_SHIFT | SHM__END_GAVE_UP);
    if (count > 1) snprintf(absent, sizeof absent, "PEs %s, which have not arrived", list);
    else if (count) snprintf(absent, sizeof absent, "PE %s, which has not arrived", list);
    else snprintf(absent, sizeof absent, "PE %d's message (PE %d, or a PE it waits for, has not arrived)", pe, pe);
    if (g->space)
        shm__fatal(SHM__PMIX_MSG(PMIX_SPACE_BARRIER_TIMEOUT), g->space, c->timeout, absent, g->start, g->stride,
                   g->size, g->me, c->me, c->npes, g->epoch);
    else
        shm__fatal(SHM__PMIX_MSG(PMIX_TEAM_BARRIER_TIMEOUT), c->timeout, absent, g->start, g->stride, g->size, g->me,
                   c->me, c->npes, g->epoch);
}

/* PE me of npes: what a signal says from now on, and what a barrier's
   end names.  Before shm__node_open. */
void shm__ends_open(int me, int npes)
{
    shm__coll.me = me;
    shm__coll.npes = npes;
}

/* What a PE ended by signal sig says, after "shmalloc: ", and the word it
   leaves for its node's peers; 0 when no PE runs here (before start-up).
   Async-signal-safe: the signal handler's. */
int shm__signal_words(int sig, char *line, size_t *n, size_t cap)
{
    long waiting = (long)__atomic_load_n(&shm__coll.waiting_for, __ATOMIC_RELAXED);
    if (!shm__coll.npes) return 0;
    shm__append(line, n, cap, "PE ");
    shm__append_int(line, n, cap, shm__coll.me);
    shm__append(line, n, cap, " of ");
    shm__append_int(line, n, cap, shm__coll.npes);
    shm__append(line, n, cap, " ended by signal ");
    shm__append_int(line, n, cap, sig);
    if (waiting >= 0) {
        shm__append(line, n, cap, " while waiting for ");
        if (!shm__append_absent(line, n, cap)) {
            shm__append(line, n, cap, "PE ");
            shm__append_int(line, n, cap, waiting);
        }
    }
    if (!shm__node_end_of(shm__coll.me)) shm__node_note_end((uint64_t)sig << SHM__END_SHIFT | SHM__END_SIGNALLED);
    return 1;
}

/* PE pe has ended (evidence says how this PE knows) while this PE waits
   for it: what it left in node memory says whether it finalized or ended
   without shmem_finalize (the PEs' collective calls then differ) or gave
   up waiting for another PE, which is the one to name.  Without node
   memory nothing says whether it finalized. */
static void shm__peer_ended(int pe, const char *evidence)
{
    uint64_t how = shm__node_end_of(pe), detail = SHM__END_DETAIL(how);
    unsigned kind = SHM__END_KIND(how);
    int me = shm__coll.me, npes = shm__coll.npes;
    unsigned long calls = shm__coll.calls;
    if (kind == SHM__END_FINALIZED)
        shm__fatal(SHM__PMIX_MSG(PMIX_PEER_FINALIZED), pe, (unsigned long)detail, evidence, me, calls, me, npes);
    if (kind == SHM__END_EXITED)
        shm__fatal(SHM__PMIX_MSG(PMIX_PEER_EXITED), pe, (int)(detail & 255), (unsigned long)(detail >> 8), evidence, me,
                   calls, me, npes);
    if (kind == SHM__END_GAVE_UP && (int)detail == me)
        shm__fatal(SHM__PMIX_MSG(PMIX_PEER_GAVE_UP_ON_ME), pe, shm__coll.timeout, evidence, me, me, npes);
    if (kind == SHM__END_SIGNALLED)
        shm__fatal(SHM__PMIX_MSG(PMIX_PEER_SIGNALLED), pe, (int)detail, evidence, me, calls, me, npes);
    if (kind == SHM__END_GAVE_UP) {
        shm__node_note_end(how); /* the same cause ends this PE */
        shm__fatal(SHM__PMIX_MSG(PMIX_PEER_GAVE_UP), pe, (int)detail, evidence, me, npes);
    }
    if (shm__coll.node)
        shm__fatal(SHM__PMIX_MSG(PMIX_PEER_NO_FINALIZE), pe, evidence, me, npes);
    shm__fatal(SHM__PMIX_MSG(PMIX_PEER_ENDED), pe, evidence, me, calls, me, npes);
}

/* The peer a barrier waits for, when it shares this node: its process
   looked at every 0.1 s, for launchers that send no event when a PE dies
   (Open MPI under --enable-recovery fails to). */
static void shm__check_awaited(shm__collective *c)
{
    int pe = __atomic_load_n(&c->waiting_for, __ATOMIC_RELAXED);
    long pid = pe >= 0 ? shm__peer_pid(pe) : 0;
    double now;
    if (pid <= 0 || c->finalizing) return;
    now = shmalloc_wait_now();
    if (now - c->awaited_checked < 0.1) return;
    c->awaited_checked = now;
    if (shm__pid_gone(pid)) {
        char evidence[64];
        snprintf(evidence, sizeof evidence, "its process %ld is gone", pid);
        shm__peer_ended(pe, evidence);
    }
}

/* A death the launcher reported, once a message in flight had its chance,
   or one seen on this node.  Progress calls it at every poll. */
void shm__check_deaths(void)
{
    shm__collective *c = &shm__coll;
    int status, dead = shm__dead_pe(&status);
    double now;
    char evidence[96];
    shm__check_awaited(c);
    if (dead == -1 || c->finalizing) return;
    now = shmalloc_wait_now();
    if (c->dead_seen == 0.0) {
        c->dead_seen = now;
        return;
    }
    if (now - c->dead_seen < SHM__DEATH_GRACE) return;
    if (dead == -2) shm__fatal(SHM__PMIX_MSG(PMIX_LOST_SERVER), c->me, c->npes);
    snprintf(evidence, sizeof evidence, "PMIx event %s",
             PMIx_Error_string((pmix_status_t)status));
    shm__peer_ended(dead, evidence);
}
