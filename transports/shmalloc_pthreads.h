/* shmalloc_pthreads.h - the pthreads transport of shmalloc: PEs are threads.
   MIT licence: see the end of ../shmalloc.h.

   USAGE
     Link your program with this transport (pthreads/[a-z]*.c
     and common/[a-z]*.c, or libshmalloc_pthreads) and the
     allocator (shmalloc.c, libshmalloc, or a file of your own that defines
     SHMALLOC_IMPLEMENTATION before including shmalloc.h), with -pthread:

         #include "transports/shmalloc_pthreads.h"

         static void pe_main(void *arg)
         {
             int *x = shmem_malloc(sizeof *x);    collective, as usual
             *x = shmem_my_pe();
             shmem_barrier_all();
             ...
             shmem_free(x);
         }

         int main(void) { return shmalloc_pthreads_run(4, 0, pe_main, NULL); }

     shmalloc_pthreads_run starts npes threads, gives each its own symmetric
     heap (nominal bytes, or 0 for SHMEM_SYMMETRIC_HEAP_SIZE and
     its fallbacks, see shmalloc_options; with SHMALLOC_HEAP_MAX
     set it reserves that much and grows, see shmalloc_heap_create_growable),
     runs pe_main(arg) in every one of them and returns once all have
     finished: 0 on success, nonzero (after a message on stderr) when npes
     is outside 1..1024, a size is bad, memory cannot be mapped or a heap
     cannot be created.
     Every PE heap's base is aligned to the smallest power of two covering
     it (at most 1 GiB), so shmem_align results are symmetric.

   OUTSIDE A PE THREAD
     The shmem_* functions below know their PE through a thread-local
     pointer that only the PE threads started by shmalloc_pthreads_run have.
     In any other thread (main, or a helper thread a PE starts):
     shmem_my_pe returns -1, shmem_n_pes 0, shmem_ptr NULL,
     shmem_addr_accessible 0, shmem_barrier_all does nothing, and
     shmem_putmem / shmem_getmem end the process with a message.
     A helper thread may still use its PE's heap through shmalloc_current
     (see ">> threads" in shmalloc.h): each PE's heap has a lock.

   TEAMS AND SPACES
     shmalloc_teams.h: SHMEM_TEAM_SHARED is every PE (one process).  Each
     team has its own barrier; a space's memory is mapped by
     shmemx_space_create and unmapped by shmemx_space_destroy, or when its
     PE returns from pe_main (its live blocks freed).

   SYMMETRIC ADDRESSES
     Only addresses inside a PE's symmetric heap are symmetric: globals and
     statics are shared by every PE thread, so they are not.
*/
#ifndef SHMALLOC_PTHREADS_H_INCLUDED
#define SHMALLOC_PTHREADS_H_INCLUDED

#include "../shmalloc.h"
#include "shmalloc_teams.h"

#include <stddef.h>

#define SHMALLOC_PTHREADS_MAX_PES 1024

#if defined(__cplusplus)
extern "C" {
#endif

int shmalloc_pthreads_run(int npes, size_t nominal, void (*pe_main)(void *arg), void *arg);
/* Adds the transport's variables (the mapping's huge pages,
   SHMALLOC_TIMEOUT) to the options table, for a program that sets
   or lists them before the run; shmalloc_pthreads_run adds them itself.
   0, or -1 when the table is full. */
int shmalloc_pthreads_options(void);

int shmem_my_pe(void);
int shmem_n_pes(void);
/* Completes this PE's puts (shmem_quiet), then waits for every PE. */
void shmem_barrier_all(void);
/* Peer pe's copy of the symmetric object at dest, or NULL when dest is not
   in this PE's heap or one of its spaces, or pe is not a PE (of the
   space's team: pe is always a world PE number). */
void *shmem_ptr(const void *dest, int pe);
/* Copy to / from peer pe's copy of a symmetric object.  A range that is not
   symmetric, or a bad pe (outside a space's team), ends the process with
   status 1 and a message.
   Each byte is stored once, an aligned 1, 2, 4 or 8 bytes in one store,
   so a PE that waits for a flag, clears it and waits again never sees a
   put land twice. */
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
/* Puts are done by the time they return; this orders them (a full fence). */
void shmem_quiet(void);
/* 1 when shmem_ptr(addr, pe) is not NULL, else 0. */
int shmem_addr_accessible(const void *addr, int pe);
/* Flushes stdio and ends the whole process with status, from any thread,
   without running atexit handlers while other PE threads still run. */
void shmem_global_exit(int status);

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_PTHREADS_H_INCLUDED */
