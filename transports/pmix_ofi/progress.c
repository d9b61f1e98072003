/* progress.c - operations and the completion queue: a barrier's message
   and a put's or get's piece are posted here, and as the providers
   progress manually every wait of this PE polls here: received messages
   go to the barrier's inbox, finished operations are marked done, and a
   dead peer is noticed (through what shm__progress_deliver_to and
   shm__fabric_open register). */
#include "pmix_ofi.h"

#include <string.h>

#define SHM__CQ_BATCH 16

shm__fabric shm__ofi;
pthread_mutex_t shm__progress_mutex = PTHREAD_MUTEX_INITIALIZER;

const char *shm__op_name(int kind)
{
    switch (kind) {
    case SHM__OP_SEND: return "barrier message";
    case SHM__OP_RECV: return "barrier receive";
    case SHM__OP_WRITE: return "fi_write";
    default: return "fi_read";
    }
}

/* A completion with an error: a canceled receive is the endpoint closing,
   anything else ends the PE naming the operation and its peer. */
static void shm__cq_failure(void)
{
    struct fi_cq_err_entry err;
    shm__op *op;
    char detail[256] = "";
    int me = shm__ofi.me;
    memset(&err, 0, sizeof err);
    if (fi_cq_readerr(shm__ofi.cq, &err, 0) < 0) shm__fatal(SHM__PMIX_MSG(PMIX_CQ_READERR_FAILED), me);
    op = (shm__op *)err.op_context;
    if (op && op->kind == SHM__OP_RECV && err.err == FI_ECANCELED) return;
    fi_cq_strerror(shm__ofi.cq, err.prov_errno, err.err_data, detail, sizeof detail);
    if (op && op->kind != SHM__OP_RECV)
        shm__fatal(SHM__PMIX_MSG(PMIX_OP_TO_PE_FAILED), shm__op_name(op->kind),
                   op->kind == SHM__OP_READ ? "from" : "to", op->index, me, fi_strerror(err.err),
                   detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
    shm__fatal(SHM__PMIX_MSG(PMIX_OP_FAILED), op ? shm__op_name(op->kind) : "an operation", me, fi_strerror(err.err),
               detail);
}

void shm__post_recv(int slot)
{
    shm__fabric *f = &shm__ofi;
    shm__op *op = &f->recv_ops[slot];
    ssize_t rc;
    op->kind = SHM__OP_RECV;
    op->index = slot;
    rc = fi_recv(f->ep, f->recv_slots + (size_t)slot * SHM__SLOT_BYTES, SHM__SLOT_BYTES, f->local_desc,
                 FI_ADDR_UNSPEC, &op->ctx);
    if (rc == -FI_EAGAIN) f->recv_unposted |= (uint64_t)1 << slot;
    else if (rc) shm__fatal(SHM__PMIX_MSG(PMIX_RECV_FAILED), fi_strerror((int)-rc));
    else f->recv_unposted &= ~((uint64_t)1 << slot);
}

/* Send slot `slot`'s buffer (slot < the rounds), where a message is
   written before shm__send; SHM__SLOT_BYTES long. */
void *shm__send_buffer(int slot)
{
    return shm__ofi.send_slots + (size_t)slot * SHM__SLOT_BYTES;
}

/* Sends the first len bytes of send slot `slot` to pe; the slot may be
   written again once the operation returned is done.  With threads the
   caller holds the progress lock. */
shm__op *shm__send(int slot, int to, size_t len)
{
    shm__fabric *f = &shm__ofi;
    shm__op *op = &f->send_ops[slot];
    struct iovec iov;
    struct fi_msg msg;
    void *desc = f->local_desc;
    ssize_t rc;
    op->kind = SHM__OP_SEND;
    op->index = to;
    op->done = 0;
    iov.iov_base = shm__send_buffer(slot);
    iov.iov_len = len;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = f->addrs[to];
    msg.context = &op->ctx;
    while ((rc = fi_sendmsg(f->ep, &msg, f->tx_flags | FI_COMPLETION)) == -FI_EAGAIN) shm__progress();
    if (rc) shm__fatal(SHM__PMIX_MSG(PMIX_SEND_FAILED), to, f->me, fi_strerror((int)-rc));
    return op;
}

/* A read or write of len bytes between local (desc: its registration,
   or NULL) and the piece remote of PE pe's heap; op is done when it is.
   With threads the caller holds the lock. */
void shm__post_rma(int kind, int pe, void *local, void *desc, size_t len, const shm__remote *remote, shm__op *op)
{
    const shm__fabric *f = &shm__ofi;
    struct iovec iov;
    struct fi_rma_iov rma;
    struct fi_msg_rma msg;
    ssize_t rc;
    op->kind = kind;
    op->index = pe;
    op->done = 0;
    iov.iov_base = local;
    iov.iov_len = len;
    rma.addr = (f->mr_mode & FI_MR_VIRT_ADDR ? remote->base : 0) + remote->offset;
    rma.len = len;
    rma.key = remote->key;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = f->addrs[pe];
    msg.rma_iov = &rma;
    msg.rma_iov_count = 1;
    msg.context = &op->ctx;
    for (;;) {
        rc = kind == SHM__OP_WRITE ? fi_writemsg(f->ep, &msg, f->tx_flags | FI_COMPLETION)
                                   : fi_readmsg(f->ep, &msg, FI_COMPLETION);
        if (rc != -FI_EAGAIN) break;
        shm__progress();
    }
    if (rc) shm__fatal(SHM__PMIX_MSG(PMIX_RMA_FAILED), shm__op_name(kind), kind == SHM__OP_WRITE ? "to" : "from", pe,
                       f->me, fi_strerror((int)-rc));
}

/* The barrier receives the messages. */
void shm__progress_deliver_to(void (*deliver)(const void *message, size_t len))
{
    shm__ofi.deliver = deliver;
}

/* With threads the caller holds the progress lock. */
void shm__progress(void)
{
    shm__fabric *f = &shm__ofi;
    struct fi_cq_data_entry entries[SHM__CQ_BATCH];
    for (;;) {
        ssize_t n = fi_cq_read(f->cq, entries, SHM__CQ_BATCH), i;
        if (n == -FI_EAGAIN) break;
        if (n == -FI_EAVAIL) {
            shm__cq_failure();
            continue;
        }
        if (n < 0) shm__fatal(SHM__PMIX_MSG(PMIX_CQ_READ_FAILED), shm__ofi.me, fi_strerror((int)-n));
        for (i = 0; i < n; i++) {
            shm__op *op = (shm__op *)entries[i].op_context;
            if (op->kind == SHM__OP_RECV) {
                f->deliver(f->recv_slots + (size_t)op->index * SHM__SLOT_BYTES, entries[i].len);
                shm__post_recv(op->index);
            } else {
                op->done = 1;
            }
        }
        if (n < SHM__CQ_BATCH) break;
    }
    if (f->recv_unposted) {
        int slot;
        for (slot = 0; slot < SHM__RECV_SLOTS; slot++)
            if (f->recv_unposted & ((uint64_t)1 << slot)) shm__post_recv(slot);
    }
    if (f->check) f->check();
}

/* One poll, for a wait that holds no lock (a PMIx fence). */
void shm__poll(void)
{
    shm__enter();
    shm__progress();
    shm__leave();
}

/* One poll for a barrier, which holds no lock while it waits: *flag, read
   under the lock, once progress has had its turn. */
int shm__progress_until(const int *flag)
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
void shm__wait_op(shm__op *op, const char *what, int pe)
{
    shmalloc_wait w;
    shmalloc_wait_begin(&w, shm__ofi.timeout, 0, SHMALLOC_WAIT_ALL_YIELDS);
    while (!op->done) {
        shm__progress();
        if (op->done) break;
        if (shmalloc_wait_step(&w) == SHMALLOC_WAIT_EXPIRED)
            shm__fatal(SHM__PMIX_MSG(PMIX_OP_TIMEOUT), what, pe, shm__ofi.timeout, shm__ofi.me, pe);
    }
}
