/* barrier.c - the barrier and the allocator's all-reduce by messages.
   Dissemination among a group (every PE, the node leaders, or a team's
   PEs): in round r each member sends to member me + 2^r and hears from
   member me - 2^r.  Max (and AND) is idempotent, so the same rounds compute
   the all-reduce: after ceil(log2 n) rounds every PE has seen every value.
   A message names its group (tag), barrier (epoch) and round, so one that
   arrives early waits in its group's inbox; peers are at most one barrier
   of a group ahead, so two inboxes per group suffice. */
#include "teams.h"

#include <limits.h>
#include <string.h>

#define SHM__MSG_MAGIC 0x73u

shm__collective shm__coll;

/* One barrier / all-reduce message. */
typedef struct shm__msg {
    uint32_t tag;           /* the group's */
    uint32_t epoch;         /* the barrier's number */
    uint8_t magic;
    uint8_t round;
    uint16_t count;
    int32_t source;
    uint64_t values[SHMALLOC_REDUCE_AND_MAX]; /* only count of them are sent */
} shm__msg;
#define SHM__MSG_HEADER offsetof(shm__msg, values)
typedef char shm__msg_fits_a_slot[sizeof(shm__msg) <= SHM__SLOT_BYTES ? 1 : -1];

/* The group a message's tag names: the world's or a team's this PE has. */
static shm__group *shm__group_of(uint32_t tag)
{
    shm__group *g = &shm__coll.world;
    while (g && g->tag != tag) g = g->next;
    return g;
}

/* A received message, into its inbox (progress calls it). */
static void shm__deliver(const void *message, size_t len)
{
    const shm__msg *m = (const shm__msg *)message;
    int me = shm__coll.me;
    shm__group *g;
    uint32_t e;
    shm__inbox *box;
    if (len < SHM__MSG_HEADER || m->magic != SHM__MSG_MAGIC || m->count > SHMALLOC_REDUCE_AND_MAX ||
        len < SHM__MSG_HEADER + m->count * sizeof(uint64_t))
        shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_MALFORMED), me, len);
    if (!(g = shm__group_of(m->tag))) shm__fatal(SHM__PMIX_MSG(PMIX_TEAM_UNKNOWN_TAG), me, m->tag, (int)m->source);
    if (m->round >= g->rounds) shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_MALFORMED), me, len);
    e = m->epoch;
    /* A peer can be at most one barrier ahead of us. */
    if (e != g->epoch && e != g->epoch + 1u)
        shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_WRONG_EPOCH), me, e, (int)m->source, g->epoch);
    box = &g->inbox[(e & 1u) * (unsigned)g->rounds + m->round];
    if (box->full) shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_TWICE), me, e, m->round);
    box->count = m->count;
    box->source = m->source;
    memcpy(box->values, m->values, m->count * sizeof(uint64_t));
    box->full = 1;
}

/* Round's message to PE to, in the fabric's send slot of the round.  With
   threads the caller holds the progress lock. */
static shm__op *shm__send_round(const shm__group *g, int round, int to, const uint64_t *values, int count)
{
    shm__msg *m = (shm__msg *)shm__send_buffer(round);
    size_t len = SHM__MSG_HEADER + (size_t)count * sizeof *values;
    m->magic = SHM__MSG_MAGIC;
    m->epoch = g->epoch;
    m->round = (uint8_t)round;
    m->count = (uint16_t)count;
    m->source = shm__coll.me;
    m->tag = g->tag;
    if (count) memcpy(m->values, values, (size_t)count * sizeof *values);
    SHM__COUNT(messages, 1);
    SHM__COUNT(bytes, len);
    return shm__send(round, to, len);
}

/* The world rank of the group's member i (taken modulo the group's size). */
int shm__group_member(const shm__group *g, long long i)
{
    int m = (int)(i % g->size);
    return g->ranks ? g->ranks[m] : g->start + m * g->stride;
}

/* Waits for *flag, set by progress; pe is whom it waits for. */
static void shm__await(const int *flag, int pe, shmalloc_wait *w)
{
    __atomic_store_n(&shm__coll.waiting_for, pe, __ATOMIC_RELAXED);
    while (!shm__progress_until(flag))
        if (shmalloc_wait_step(w) == SHMALLOC_WAIT_EXPIRED) shm__coll.gave_up(pe);
}

/* Round r: send to the member 2^r ahead, fold in the message from the one
   2^r behind. */
static shm__op *shm__round(shm__group *g, int r, uint64_t *values, int count, shmalloc_wait *w)
{
    int dist = (int)(1u << r);
    int to = shm__group_member(g, (long long)g->me + dist);
    int from = shm__group_member(g, (long long)g->me - dist + g->size);
    shm__inbox *box = &g->inbox[(g->epoch & 1u) * (unsigned)g->rounds + (unsigned)r];
    shm__op *sent;
    shm__enter();
    sent = shm__send_round(g, r, to, values, count);
    shm__leave();
    shm__await(&box->full, from, w);
    shm__enter();
    if (box->source != from)
        shm__fatal(SHM__PMIX_MSG(PMIX_BARRIER_WRONG_PE), shm__coll.me, g->epoch, r, from, box->source);
    shm__combine(values, box->values, count < box->count ? count : box->count);
    box->full = 0;
    shm__leave();
    return sent;
}

/* Ready for barriers among the world's group node.c set: the rounds
   counted, messages received, and gave_up run when one waits timeout
   seconds. */
void shm__barrier_open(int timeout, void (*gave_up)(int pe))
{
    shm__collective *c = &shm__coll;
    while ((1 << c->world.rounds) < c->world.size) c->world.rounds++;
    c->world.inbox = &c->world_inbox[0][0];
    c->timeout = timeout;
    c->gave_up = gave_up;
    shm__progress_deliver_to(shm__deliver);
}

/* A team's group, its size, members and tag set: its rounds counted and
   its inboxes made.  0, or -1 out of memory. */
int shm__group_open(shm__group *g)
{
    g->rounds = 0;
    while ((1 << g->rounds) < g->size) g->rounds++;
    g->epoch = 0;
    g->next = NULL;
    g->inbox = (shm__inbox *)shmalloc_mem_alloc((size_t)(2 * (g->rounds ? g->rounds : 1)), sizeof *g->inbox);
    return g->inbox ? 0 : -1;
}

/* From now on its messages are received: before any member may send one. */
void shm__group_link(shm__group *g)
{
    shm__enter();
    g->next = shm__coll.world.next;
    shm__coll.world.next = g;
    shm__leave();
}

/* Its messages are no longer received; its inboxes freed. */
void shm__group_close(shm__group *g)
{
    shm__group **p;
    shm__enter();
    for (p = &shm__coll.world.next; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
    shm__leave();
    shmalloc_mem_free(g->inbox);
    g->inbox = NULL;
}

void shm__disseminate(shm__group *g, uint64_t *values, int count)
{
    shm__op *sent[SHM__MAX_ROUNDS];
    shmalloc_wait w; /* one deadline for the whole call */
    int r;
    shmalloc_wait_begin(&w, shm__coll.timeout, 0, SHMALLOC_WAIT_ALL_YIELDS);
    shm__coll.current = g;
    for (r = 0; r < g->rounds; r++) sent[r] = shm__round(g, r, values, count, &w);
    /* Send buffers are reused next barrier: their sends must be done. */
    for (r = 0; r < g->rounds; r++) shm__await(&sent[r]->done, sent[r]->index, &w);
    __atomic_store_n(&shm__coll.waiting_for, -1, __ATOMIC_RELAXED);
    shm__coll.current = NULL;
    shm__enter(); /* other threads' progress checks messages against it */
    g->epoch++;
    shm__leave();
}
