/* shmem.c - the SHMEM names of the pthreads transport: PE numbers,
   barrier, puts and gets.  A put is a copy into the peer's heap, at the
   same offset, that stores each byte once (shm__copy).  See pthreads.h. */
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
    shm__team_sync(&shm__self->run->world.members[shm__self->index], NULL, 0, SHM__REDUCE_MAX);
}

static int shm__valid_pe(const shm__pe *me, int pe)
{
    return me != NULL && pe >= 0 && pe < me->run->npes;
}

void *shmem_ptr(const void *dest, int pe)
{
    shm__pe *me = shm__self;
    size_t offset;

    if (!shm__valid_pe(me, pe) || !shmalloc_heap_contains(me->heap, dest)) return NULL;
    offset = (size_t)((const char *)dest - (const char *)shmalloc_heap_base(me->heap));
    return (char *)shmalloc_heap_base(me->run->pes[pe].heap) + offset;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    shm__pe *me = shm__self;
    return shm__valid_pe(me, pe) && shmalloc_heap_contains(me->heap, addr);
}

/* Peer pe's address of the symmetric range [addr, addr + n); ends the
   process when the range is not wholly inside this PE's heap. */
static char *shm__remote_range(const char *what, const void *addr, size_t n, int pe)
{
    shm__pe *me = shm__self;
    const shmalloc_heap *h = me != NULL ? me->heap : NULL;
    size_t offset = shm__start_range(what, addr, n, pe, h ? shmalloc_heap_base(h) : NULL,
                                     h ? shmalloc_heap_size(h) : 0, shmem_my_pe(), shmem_n_pes());
    if (offset == SIZE_MAX) shmem_global_exit(1);
    return (char *)shmalloc_heap_base(me->run->pes[pe].heap) + offset;
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    shm__copy(shm__remote_range("shmem_putmem", dest, nelems, pe), source, nelems);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    if (nelems == 0) return;
    shm__copy(dest, shm__remote_range("shmem_getmem", source, nelems, pe), nelems);
}

void shmem_global_exit(int status)
{
    /* _exit, not exit: atexit handlers and library destructors would run
       while the other PE threads are still using the heaps. */
    fflush(NULL);
    _exit(status);
}
