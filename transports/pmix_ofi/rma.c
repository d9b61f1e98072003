/* rma.c - shmem_putmem, shmem_getmem and shmem_quiet: a copy for this PE
   and for same-node peers whose heap is mapped here, fi_write / fi_read
   for the others, waited for on the completion queue. */
#include "pmix_ofi.h"

#include <stdio.h>
#include <string.h>

/* The region holding heap offset `offset` (< the heap's bytes). */
static const shm__region *shm__region_at(size_t offset)
{
    int i = shm__mem.nregions - 1;
    while (i > 0 && shm__mem.regions[i].offset > offset) i--;
    return &shm__mem.regions[i];
}

/* len bytes at `offset` into region r of pe's heap. */
static void shm__post_rma(int kind, int pe, void *local, void *desc, size_t len, const shm__region *r, uint64_t offset,
                          shm__op *op)
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
    rma.addr = (f->mr_mode & FI_MR_VIRT_ADDR ? shm__mem.peers[pe].base + r->offset : 0) + offset;
    rma.len = len;
    rma.key = shm__mem.peers[pe].key[r - shm__mem.regions];
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = f->peers[pe].addr;
    msg.rma_iov = &rma;
    msg.rma_iov_count = 1;
    msg.context = &op->ctx;
    for (;;) {
        rc = kind == SHM__OP_WRITE ? fi_writemsg(f->ep, &msg, f->tx_flags | FI_COMPLETION)
                                   : fi_readmsg(f->ep, &msg, FI_COMPLETION);
        if (rc != -FI_EAGAIN) break;
        shm__progress();
    }
    if (rc) shm__fatal(SHM__MSG(PMIX_RMA_FAILED), shm__op_name(kind), kind == SHM__OP_WRITE ? "to" : "from", pe,
                       shm__job.me, fi_strerror((int)-rc));
}

/* Moves n bytes between local and offset in pe's heap, waiting for each
   piece; a piece stays inside one registered region on both sides.  Local
   memory outside the heap goes through the registered bounce buffer when
   the provider wants local registration (FI_MR_LOCAL). */
static void shm__transfer(int kind, const char *what, int pe, uint64_t offset, char *local, size_t n)
{
    shm__fabric *f = &shm__ofi;
    char *heap = shm__mem.base;
    int in_heap = shm__in_heap(local, n);
    int bounce = !in_heap && (f->mr_mode & FI_MR_LOCAL);
    size_t piece = bounce ? SHM__BOUNCE_BYTES : f->max_msg;
    while (n > 0) {
        const shm__region *r = shm__region_at(offset);
        size_t len = n < piece ? n : piece;
        void *buf = bounce ? f->bounce : local, *desc = bounce ? f->local_desc : NULL;
        if (len > r->offset + r->bytes - offset) len = r->offset + r->bytes - offset;
        if (in_heap) {
            size_t at = (size_t)(local - heap);
            const shm__region *l = shm__region_at(at);
            if (len > l->offset + l->bytes - at) len = l->offset + l->bytes - at;
            desc = l->desc;
        }
        if (bounce && kind == SHM__OP_WRITE) memcpy(f->bounce, local, len);
        shm__post_rma(kind, pe, buf, desc, len, r, offset - r->offset, &f->rma_op);
        shm__wait_op(&f->rma_op, what, pe);
        if (bounce && kind == SHM__OP_READ) memcpy(local, f->bounce, len);
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
    if (kind == SHM__OP_WRITE) shm__ofi.peers[pe].dirty = 1;
    shm__leave();
}

/* The offset of [addr, addr + n) in the heap; ends the job when the range
   is not symmetric or pe is not a PE.  The PE has a heap from shmem_init
   to shmem_finalize. */
static uint64_t shm__symmetric_range(const char *what, const void *addr, size_t n, int pe)
{
    size_t offset = shm__start_range(what, addr, n, pe, shm__mem.heap ? shm__mem.base : NULL, shm__heap_bytes(),
                                     shm__job.me, shm__job.npes);
    if (offset == SIZE_MAX) shm__pmix_abort(1);
    return offset;
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t offset;
    if (nelems == 0) return;
    offset = shm__symmetric_range("shmem_putmem", dest, nelems, pe);
    if (pe == shm__job.me) {
        memmove(dest, source, nelems);
        return;
    }
    if (shm__mem.peers[pe].direct) {
        memmove(shm__mem.peers[pe].direct + offset, source, nelems); /* source may be a shmem_ptr address */
        __atomic_store_n(&shm__ofi.direct_dirty, 1, __ATOMIC_RELAXED);
        return;
    }
    shm__rma(SHM__OP_WRITE, "shmem_putmem", pe, offset, (char *)(uintptr_t)source, nelems);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t offset;
    if (nelems == 0) return;
    offset = shm__symmetric_range("shmem_getmem", source, nelems, pe);
    if (pe == shm__job.me) {
        memmove(dest, source, nelems);
        return;
    }
    if (shm__mem.peers[pe].direct) {
        memmove(dest, shm__mem.peers[pe].direct + offset, nelems);
        return;
    }
    shm__rma(SHM__OP_READ, "shmem_getmem", pe, offset, (char *)dest, nelems);
}

/* Quiet's reads, one per peer written to; with threads under the lock. */
static void shm__flush(void)
{
    shm__fabric *f = &shm__ofi;
    int q, pending = 0;
    for (q = 0; q < shm__job.npes; q++) {
        shm__peer *p = &f->peers[q];
        if (!p->dirty) continue;
        p->dirty = 0;
        if (f->tx_flags & FI_DELIVERY_COMPLETE) continue;
        shm__post_rma(SHM__OP_READ, q, f->flush_word, f->local_desc, 8, &shm__mem.regions[0], 0, &p->flush);
        pending = 1;
    }
    if (!pending) return;
    for (q = 0; q < shm__job.npes; q++)
        if (f->peers[q].flush.kind == SHM__OP_READ && !f->peers[q].flush.done)
            shm__wait_op(&f->peers[q].flush, "shmem_quiet", q);
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
    if (shm__ofi.threaded || __atomic_load_n(&shm__ofi.direct_dirty, __ATOMIC_RELAXED)) {
#if defined(SHM__TSAN) /* it refuses fences; a sequentially consistent exchange orders as much for it */
        (void)__atomic_exchange_n(&shm__ofi.direct_dirty, 0, __ATOMIC_SEQ_CST);
#else
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&shm__ofi.direct_dirty, 0, __ATOMIC_RELAXED);
#endif
    }
    if (!shm__ofi.ep) return; /* no peers: before shmem_init, after shmem_finalize, or a singleton */
    shm__enter();
    shm__flush();
    shm__leave();
}
