/* barrier.c - the barrier and the allocator's all-reduce by messages.
   Dissemination among the group (every PE, or the node leaders): in round
   r each member sends to member me + 2^r and hears from member me - 2^r.
   Max (and AND) is idempotent, so the same rounds compute the all-reduce: after
   ceil(log2 n) rounds every PE has seen every value.  A message names its
   barrier (epoch) and round, so one that arrives early waits in its inbox;
   peers are at most one barrier ahead, so two inboxes suffice. */
#include "pmix_ofi.h"

#include <limits.h>
#include <string.h>

#define SHM__MSG_MAGIC 0x73686d61u

shm__collective shm__coll;

/* One barrier / all-reduce message. */
typedef struct shm__msg {
    uint32_t magic;
    uint32_t epoch;         /* the barrier's number */
    uint16_t round;
    uint16_t count;
    int32_t source;
    uint64_t values[SHMALLOC_REDUCE_AND_MAX]; /* only count of them are sent */
} shm__msg;
#define SHM__MSG_HEADER offsetof(shm__msg, values)
typedef char shm__msg_fits_a_slot[sizeof(shm__msg) <= SHM__SLOT_BYTES ? 1 : -1];

/* A received message, into its inbox (progress calls it). */
static void shm__deliver(const void *message, size_t len)
{
    const shm__msg *m = (const shm__msg *)message;
    shm__collective *c = &shm__coll;
    int me = c->me;
    uint32_t e;
    shm__inbox *box;
    if (len < SHM__MSG_HEADER || m->magic != SHM__MSG_MAGIC || m->round >= c->rounds ||
        m->count > SHMALLOC_REDUCE_AND_MAX || len < SHM__MSG_HEADER + m->count * sizeof(uint64_t))
        shm__fatal(SHM__MSG(PMIX_BARRIER_MALFORMED), me, len);
    e = m->epoch;
    /* A peer can be at most one barrier ahead of us. */
    if (e != c->epoch && e != c->epoch + 1u)
        shm__fatal(SHM__MSG(PMIX_BARRIER_WRONG_EPOCH), me, e, (int)m->source, c->epoch);
    box = &c->inbox[e & 1u][m->round];
    if (box->full) shm__fatal(SHM__MSG(PMIX_BARRIER_TWICE), me, e, m->round);
    box->count = m->count;
    box->source = m->source;
    memcpy(box->values, m->values, m->count * sizeof(uint64_t));
    box->full = 1;
}

/* Round's message to PE to, in the fabric's send slot of the round.  With
   threads the caller holds the progress lock. */
static void shm__send_round(uint32_t epoch, int round, int to, const uint64_t *values, int count)
{
    shm__msg *m = (shm__msg *)shm__send_buffer(round);
    size_t len = SHM__MSG_HEADER + (size_t)count * sizeof *values;
    m->magic = SHM__MSG_MAGIC;
    m->epoch = epoch;
    m->round = (uint16_t)round;
    m->count = (uint16_t)count;
    m->source = shm__coll.me;
    if (count) memcpy(m->values, values, (size_t)count * sizeof *values);
    SHM__COUNT(messages, 1);
    SHM__COUNT(bytes, len);
    shm__coll.sent[round] = shm__send(round, to, len);
}

/* The rank of the group's member i (taken modulo the group's size). */
static int shm__member(long long i)
{
    const shm__collective *c = &shm__coll;
    int m = (int)(i % c->group_size);
    return c->group_size < c->npes ? c->nodes.leaders[m] : m;
}

/* Waits for *flag, set by progress; pe is whom it waits for. */
static void shm__await(const int *flag, int pe, shm__wait *w)
{
    __atomic_store_n(&shm__coll.waiting_for, pe, __ATOMIC_RELAXED);
    while (!shm__progress_until(flag))
        if (shm__wait_step(w) == SHM__WAIT_EXPIRED) shm__coll.gave_up(pe);
}

/* Round r: send to the member 2^r ahead, fold in the message from the one
   2^r behind. */
static void shm__round(uint32_t epoch, int r, uint64_t *values, int count, shm__wait *w)
{
    shm__collective *c = &shm__coll;
    int dist = (int)(1u << r);
    int to = shm__member((long long)c->group_me + dist), from = shm__member((long long)c->group_me - dist + c->group_size);
    shm__inbox *box = &c->inbox[epoch & 1u][r];
    shm__enter();
    shm__send_round(epoch, r, to, values, count);
    shm__leave();
    shm__await(&box->full, from, w);
    shm__enter();
    if (box->source != from)
        shm__fatal(SHM__MSG(PMIX_BARRIER_WRONG_PE), c->me, epoch, r, from, box->source);
    shm__combine(values, box->values, count < box->count ? count : box->count);
    box->full = 0;
    shm__leave();
}

/* Ready for barriers among the group node.c set: the rounds counted,
   messages received, and gave_up run when one waits timeout seconds. */
void shm__barrier_open(int timeout, void (*gave_up)(int pe))
{
    shm__collective *c = &shm__coll;
    while ((1 << c->rounds) < c->group_size) c->rounds++;
    c->timeout = timeout;
    c->gave_up = gave_up;
    shm__progress_deliver_to(shm__deliver);
}

void shm__disseminate(uint64_t *values, int count)
{
    shm__collective *c = &shm__coll;
    uint32_t epoch = c->epoch;
    shm__wait w; /* one deadline for the whole call */
    int r;
    shm__wait_begin(&w, c->timeout, 0, SHM__WAIT_ALL_YIELDS);
    for (r = 0; r < c->rounds; r++) shm__round(epoch, r, values, count, &w);
    /* Send buffers are reused next barrier: their sends must be done. */
    for (r = 0; r < c->rounds; r++) shm__await(&c->sent[r]->done, c->sent[r]->index, &w);
    __atomic_store_n(&shm__coll.waiting_for, -1, __ATOMIC_RELAXED);
    shm__enter(); /* other threads' progress checks messages against it */
    c->epoch = epoch + 1u;
    shm__leave();
}
