/* shmem.c - the SHMEM names of the pthreads transport: PE numbers,
   barrier, puts and gets.  A put is a copy into the peer's heap, at the
   same offset, that stores each byte once (shmalloc_copy).  See pthreads.h. */
#include "pthreads.h"
#include "../common/copy.h"

#include <stdio.h>
#include <unistd.h>

int shmem_my_pe(void)
{
    return shm__self != NULL ? shm__self->index : -1;
}

int shmem_n_pes(void)
{
    return shm__self != NULL ? shm__self->run->npes : 0;
}

void shmem_quiet(void)
{
    /* Puts are copies, complete on return: only ordering is left. */
#if !defined(SHM__TSAN)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

void shmem_barrier_all(void)
{
    if (shm__self == NULL) return;
    shmem_quiet();
    shm__team_sync(&shm__self->run->world.members[shm__self->index], NULL, 0, SHM__REDUCE_MAX, NULL);
}

static int shm__valid_pe(const shm__pe *me, int pe)
{
    return me != NULL && pe >= 0 && pe < me->run->npes;
}

/* The heap of this PE that holds addr: its world heap, one of its spaces, or NULL. */
static shmalloc_heap *shm__heap_of(const shm__pe *me, const void *addr)
{
    return me != NULL ? shmalloc_heap_of(me->heap, addr) : NULL;
}

/* Peer pe's copy of offset in h, a heap of this PE: NULL when pe is not
   in h's team. */
static char *shm__peer(const shm__pe *me, shmalloc_heap *h, int pe, size_t offset)
{
    if (h == me->heap) return (char *)shmalloc_heap_base(me->run->pes[pe].heap) + offset;
    return shm__space_peer(h, pe, offset);
}

void *shmem_ptr(const void *dest, int pe)
{
    shm__pe *me = shm__self;
    shmalloc_heap *h = shm__heap_of(me, dest);
    if (!shm__valid_pe(me, pe) || h == NULL) return NULL;
    return shm__peer(me, h, pe, (size_t)((const char *)dest - (const char *)shmalloc_heap_base(h)));
}

int shmem_addr_accessible(const void *addr, int pe)
{
    return shmem_ptr(addr, pe) != NULL;
}

/* Peer pe's address of the symmetric range [addr, addr + n); ends the
   process when the range is not wholly inside one heap of this PE (its
   world heap or a space), or pe is not in that space's team. */
static char *shm__remote_range(const char *what, const void *addr, size_t n, int pe)
{
    shm__pe *me = shm__self;
    shmalloc_heap *h = shm__heap_of(me, addr);
    size_t offset;
    char *peer;
    if (h == NULL && me != NULL) h = me->heap; /* the message names the world heap's range */
    offset = shmalloc_start_range(what, addr, n, pe, h ? shmalloc_heap_base(h) : NULL, h ? shmalloc_heap_size(h) : 0,
                                  shmem_my_pe(), shmem_n_pes());
    if (offset == SIZE_MAX) shmem_global_exit(1);
    peer = shm__peer(me, h, pe, offset);
    if (peer == NULL) {
        shm__space_not_member(what, h, pe);
        shmem_global_exit(1);
    }
    return peer;
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    shmalloc_copy(shm__remote_range("shmem_putmem", dest, nelems, pe), source, nelems);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    shmalloc_copy(dest, shm__remote_range("shmem_getmem", source, nelems, pe), nelems);
}

void shmem_global_exit(int status)
{
    /* _exit, not exit: atexit handlers and library destructors would run
       while the other PE threads are still using the heaps. */
    fflush(NULL);
    _exit(status);
}
