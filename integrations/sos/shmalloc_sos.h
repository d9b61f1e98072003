/* shmalloc_sos.h - the symmetric heap of a runtime built the way Sandia
   OpenSHMEM's is, served by the TLSF core of shmalloc.h: the five dl*
   entry points its heap layer calls, and the set-up around them.
   MIT licence, see shmalloc.h.  The contract is in README.md beside this.

   The runtime maps its heap region once, calls shmalloc_sos_init over the
   whole region (made longer by shmalloc_sos_overhead), then calls the dl*
   functions with its own allocation lock held and its own barriers around
   them, and shmalloc_sos_fini before it unmaps the region. */
#ifndef SHMALLOC_SOS_H_INCLUDED
#define SHMALLOC_SOS_H_INCLUDED

#include <stddef.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Bytes to add to a region of `length` so that one block of `length`
   bytes fits in it (the core's lists and block map sit at its end). */
size_t shmalloc_sos_overhead(size_t length);
/* Lays the heap out over [base, base + length); base 16-byte aligned.
   0 on success, -1 when the region is too small or too large. */
int shmalloc_sos_init(void *base, size_t length);
/* Walks the heap once; 0 when it is intact, -1 (after a message) when a
   program wrote over the heap's structure.  The heap is forgotten. */
int shmalloc_sos_fini(void);

/* Where refusals and findings go, one line each; NULL: stderr. */
typedef void (*shmalloc_sos_message_fn)(const char *line);
void shmalloc_sos_set_message(shmalloc_sos_message_fn fn);

/* dlmalloc's five, over the heap: NULL when nothing fits, the heap
   unchanged; a pointer that is not a live block is refused with a message. */
void *dlmalloc(size_t size);
void *dlcalloc(size_t count, size_t size);
void dlfree(void *ptr);
void *dlrealloc(void *ptr, size_t size);
void *dlmemalign(size_t alignment, size_t size);

#if defined(__cplusplus)
}
#endif
#endif
