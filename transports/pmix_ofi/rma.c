/* rma.c - shmem_putmem, shmem_getmem and shmem_quiet: a copy for this PE
   and for same-node peers whose heap is mapped here (shmalloc_copy: each byte
   stored once), fi_write / fi_read for the others, waited for on the
   completion queue. */
#include "teams.h"
#include "../common/copy.h"

#include <stdio.h>
#include <string.h>

shm__rma_state shm__rma;

/* PE me of npes; threaded: SHMEM_THREAD_MULTIPLE.  After the fabric
   opens, when it does. */
void shm__rma_open(int me, int npes, int threaded)
{
    shm__rma_state *s = &shm__rma;
    s->me = me;
    s->npes = npes;
    s->threaded = threaded;
    if (!shm__fabric_up()) return;
    shm__fabric_rma(&s->means);
    s->peers = (shm__rma_peer *)shmalloc_mem_alloc((size_t)npes, sizeof *s->peers);
    if (!s->peers) shm__init_fail(SHM__PMIX_MSG(PMIX_NO_MEMORY_PEERS), npes);
    s->reach = 1;
}

/* Before the fabric closes; safe at any point of start-up. */
void shm__rma_close(void)
{
    shm__rma.reach = 0;
    shmalloc_mem_free(shm__rma.peers);
    shm__rma.peers = NULL;
}

/* Moves n bytes between local and offset in pe's heap, waiting for each
   piece; a piece stays inside one registered region on both sides.  Local
   memory outside the heap goes through the registered bounce buffer when
   the provider wants local registration (FI_MR_LOCAL). */
static void shm__transfer(int kind, const char *what, int pe, uint64_t offset, char *local, size_t n)
{
    shm__rma_state *s = &shm__rma;
    int in_heap = shm__in_heap(local, n);
    char *bounce = in_heap ? NULL : s->means.bounce;
    size_t piece = bounce ? SHM__BOUNCE_BYTES : s->means.max_msg;
    while (n > 0) {
        shm__remote remote;
        size_t len = shm__heap_remote(pe, offset, n < piece ? n : piece, &remote);
        void *buf = bounce ? bounce : local, *desc = bounce ? s->means.local_desc : NULL;
        if (in_heap) len = shm__heap_local(local, len, &desc);
        if (bounce && kind == SHM__OP_WRITE) memcpy(bounce, local, len);
        shm__post_rma(kind, pe, buf, desc, len, &remote, &s->op);
        shm__wait_op(&s->op, what, pe);
        if (bounce && kind == SHM__OP_READ) memcpy(local, bounce, len);
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
static void shm__remote_rma(int kind, const char *what, int pe, uint64_t offset, char *local, size_t n)
{
    shm__enter();
    shm__transfer(kind, what, pe, offset, local, n);
    if (kind == SHM__OP_WRITE) shm__rma.peers[pe].dirty = 1;
    shm__leave();
}

/* A put or get at addr in a space, to a member of its team: a copy when
   its copy is mapped here, else by libfabric with the space's keys.  0
   when addr is in no space; a PE outside the team ends the job. */
static int shm__space_rma(int kind, const char *what, const void *addr, char *local, size_t n, int pe)
{
    shm__rma_state *s = &shm__rma;
    size_t offset;
    const shm__team_tp *t = shm__space_find(addr, n, &offset);
    int m;
    char *peer;
    if (!t) return 0;
    if ((m = shm__space_member(t, pe)) < 0) shm__space_not_member(what, t, pe);
    if ((peer = shm__space_peer(t, m)) != NULL) {
        if (kind == SHM__OP_WRITE) shmalloc_copy(peer + offset, local, n);
        else shmalloc_copy(local, peer + offset, n);
        if (kind == SHM__OP_WRITE) __atomic_store_n(&s->direct_dirty, 1, __ATOMIC_RELAXED);
        return 1;
    }
    shm__enter();
    while (n > 0) {
        shm__remote remote;
        size_t len = shm__space_remote(t, m, offset, n < SHM__BOUNCE_BYTES ? n : SHM__BOUNCE_BYTES, &remote);
        char *buf = s->means.bounce ? s->means.bounce : local;
        if (len > s->means.max_msg) len = s->means.max_msg;
        if (s->means.bounce && kind == SHM__OP_WRITE) memcpy(buf, local, len);
        shm__post_rma(kind, pe, buf, s->means.bounce ? s->means.local_desc : NULL, len, &remote, &s->op);
        shm__wait_op(&s->op, what, pe);
        if (s->means.bounce && kind == SHM__OP_READ) memcpy(local, buf, len);
        local += len;
        offset += len;
        n -= len;
    }
    if (kind == SHM__OP_WRITE) s->peers[pe].dirty = 1;
    shm__leave();
    return 1;
}

/* The offset of [addr, addr + n) in the heap; ends the job when the range
   is not symmetric or pe is not a PE.  The PE has a heap from shmem_init
   to shmem_finalize. */
static uint64_t shm__symmetric_range(const char *what, const void *addr, size_t n, int pe)
{
    size_t offset = shmalloc_start_range(what, addr, n, pe, shm__heap_base(), shm__heap_bytes(), shm__rma.me,
                                         shm__rma.npes);
    if (offset == SIZE_MAX) shm__pmix_abort(1);
    return offset;
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t offset;
    char *peer;
    if (nelems == 0) return;
    if (!shm__in_heap(dest, nelems) && pe >= 0 && pe < shm__rma.npes &&
        shm__space_rma(SHM__OP_WRITE, "shmem_putmem", dest, (char *)(uintptr_t)source, nelems, pe))
        return;
    offset = shm__symmetric_range("shmem_putmem", dest, nelems, pe);
    if (pe == shm__rma.me) {
        shmalloc_copy(dest, source, nelems);
        return;
    }
    if ((peer = shm__peer_heap(pe)) != NULL) {
        shmalloc_copy(peer + offset, source, nelems); /* source may be a shmem_ptr address */
        __atomic_store_n(&shm__rma.direct_dirty, 1, __ATOMIC_RELAXED);
        return;
    }
    shm__remote_rma(SHM__OP_WRITE, "shmem_putmem", pe, offset, (char *)(uintptr_t)source, nelems);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t offset;
    char *peer;
    if (nelems == 0) return;
    if (!shm__in_heap(source, nelems) && pe >= 0 && pe < shm__rma.npes &&
        shm__space_rma(SHM__OP_READ, "shmem_getmem", source, (char *)dest, nelems, pe))
        return;
    offset = shm__symmetric_range("shmem_getmem", source, nelems, pe);
    if (pe == shm__rma.me) {
        shmalloc_copy(dest, source, nelems);
        return;
    }
    if ((peer = shm__peer_heap(pe)) != NULL) {
        shmalloc_copy(dest, peer + offset, nelems);
        return;
    }
    shm__remote_rma(SHM__OP_READ, "shmem_getmem", pe, offset, (char *)dest, nelems);
}

/* Quiet's reads, one per peer written to; with threads under the lock. */
static void shm__flush(void)
{
    shm__rma_state *s = &shm__rma;
    int q, pending = 0;
    for (q = 0; q < s->npes; q++) {
        shm__rma_peer *p = &s->peers[q];
        shm__remote remote;
        if (!p->dirty) continue;
        p->dirty = 0;
        if (!s->means.flush_by_read) continue;
        shm__heap_remote(q, 0, 8, &remote);
        shm__post_rma(SHM__OP_READ, q, s->means.flush_word, s->means.local_desc, 8, &remote, &p->flush);
        pending = 1;
    }
    if (!pending) return;
    for (q = 0; q < s->npes; q++)
        if (s->peers[q].flush.kind == SHM__OP_READ && !s->peers[q].flush.done)
            shm__wait_op(&s->peers[q].flush, "shmem_quiet", q);
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
    if (shm__rma.threaded || __atomic_load_n(&shm__rma.direct_dirty, __ATOMIC_RELAXED)) {
#if defined(SHM__TSAN) /* it refuses fences; a sequentially consistent exchange orders as much for it */
        (void)__atomic_exchange_n(&shm__rma.direct_dirty, 0, __ATOMIC_SEQ_CST);
#else
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&shm__rma.direct_dirty, 0, __ATOMIC_RELAXED);
#endif
    }
    if (!shm__rma.reach) return; /* no peers: before shmem_init, after shmem_finalize, or a singleton */
    shm__enter();
    shm__flush();
    shm__leave();
}
