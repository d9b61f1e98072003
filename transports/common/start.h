/* start.h - the one start-up of every transport: the options read once,
   the heap's sizes and pages worked out, its memory mapped, the heap
   created over the contract the transport fills, and the symmetric range
   check of puts and gets.  A transport adds only what differs: where its
   heap goes and whether peers share it, its barrier, all-reduce,
   registration, puts and gets, and its own option rows.

   A transport's start-up, in order, as tests/fork/transport_fork/fork.c and
   README.md's "Adding a transport" take it:

       shmalloc_start s;
       shmalloc_start_size(who, nominal);        only when the program sets the size
       shmalloc_options_add(rows, n);            only for the transport's own variables
       shmalloc_start_read(&s, who);             every option once, sizes, huge pages
       shmalloc_start_unknown(&s, pe, npes);     misspelt and renamed variables: PE 0 says, once
       shmalloc_start_map(&s, &map[q], shared, pl, q);    for each PE q whose memory
                                                 this process maps (shared: a memfd)
       h = shmalloc_start_heap(&s, &map[pe], &tp, &err);  on each PE, collective

   The heap starts at its mapping's base: shmalloc_heap_base(h) is
   map[pe].base, and an object at offset o of it has its copy on PE q at
   map[q].base + o (shmalloc_start_range gives o, or says why there is none).
   Each returns -1 (NULL) after a message saying why; the transport then
   closes what it opened.  Calls only the allocator's API and map.h,
   never a transport.

   The API a transport builds on, public and installed with the headers
   (include/shmalloc/transports/common/), compiled into libshmalloc: this
   start-up; map.h, its memory; wait.h, waiting with a deadline; copy.h,
   the copy of a put or get that a peer may watch.  man 3 shmalloc_start
   has it all. */
#if !defined(SHMALLOC_START_H_INCLUDED)
#define SHMALLOC_START_H_INCLUDED

#include "../../shmalloc.h"
#include "map.h"

#include <stddef.h>
#include <stdint.h>

/* What start-up found, for the rest of it; read-only afterwards. */
typedef struct shmalloc_start {
    const char *who;        /* the entry point, for messages: "shmalloc_pthreads_run" */
    size_t nominal;         /* the heap's first size: bytes used and registered at first */
    size_t max;             /* what it may grow to (SHMALLOC_HEAP_MAX); nominal: no growth */
    size_t bytes;           /* to reserve for it: shmalloc_heap_bytes(max) */
    const shmalloc_option *size_row, *max_row, *timeout_row; /* the rows they came from, for messages */
    shmalloc_map_huge huge; /* the pages asked for */
    int timeout;            /* SHMALLOC_TIMEOUT: seconds any wait for a peer may take */
    shmalloc_heap_config config; /* the heap's, from the table: debug, metadata, size variable */
} shmalloc_start;

#if defined(__cplusplus)
extern "C" {
#endif

/* Adds the rows start-up reads beyond the heap's to the options table:
   the mapping's (huge pages) and SHMALLOC_TIMEOUT.
   shmalloc_start_read adds them itself; a transport calls it only to offer
   them, with its own, to a program that sets one before start-up
   (shmalloc_pthreads_options).  0, or -1 when the table is full. */
int shmalloc_start_options(void);

/* The program's heap size for the table, before shmalloc_start_read:
   nominal bytes (1..2^MAX_LOG2), or 0 to hand it back to the
   environment.  0, or -1 after a message naming the size and the limit. */
int shmalloc_start_size(const char *who, size_t nominal);

/* Reads every option once and works out s, before anything is mapped
   (after the transport's own rows are added).  0, or -1 after a message
   naming the variable and its value; s is then not to be used. */
int shmalloc_start_read(shmalloc_start *s, const char *who);

/* Says which variables of the environment look like ours but are not
   (shmalloc_options_report_unknown), and that SHMALLOC_BARRIER_TIMEOUT
   is now SHMALLOC_TIMEOUT, on PE 0 alone, for the job's npes PEs: once
   per job, whatever the PEs' processes.  After shmalloc_start_read.  No
   errors. */
void shmalloc_start_unknown(const shmalloc_start *s, int pe, int npes);

/* Maps s->bytes for PE pe's heap: shared, in a memfd peers can map; pl
   NULL: anywhere aligned.  0, or -1 after a message naming what to
   change: the limit on open files, or the variable that set the size. */
int shmalloc_start_map(const shmalloc_start *s, shmalloc_map_mem *m, int shared,
                       const shmalloc_map_place *pl, int pe);

/* Collective, on each PE once its memory is mapped: the heap in m,
   starting at m->base, over the contract tp (fill and copy NULL: memset
   and memcpy).  NULL after a message, with *err (err not NULL) the reason
   (SHMEM_MALLOC_*), on every PE. */
shmalloc_heap *shmalloc_start_heap(const shmalloc_start *s, const shmalloc_map_mem *m,
                                   const shmalloc_transport *tp, long *err);

#if !defined(SHMALLOC_NO_SHMEM_NAMES) /* shmemx_space_config_t is one of them */
/* A space's heap config as config asks (NULL: the heap's nominal size,
   no growth, inline metadata) into *hc, for shmemx_space_create; returns
   the bytes of memory it needs: config's own when it gives memory, else
   shmalloc_heap_bytes of its largest size.  No errors. */
size_t shmalloc_start_space(const shmalloc_start *s, const shmemx_space_config_t *config,
                            shmalloc_heap_config *hc);
#endif

/* Says that [addr, addr + n) on PE pe is not a symmetric range, naming
   the calling PE (me of npes; -1 of 0 outside a run): shmalloc_start_range's
   message, for a transport that checks another way.  No errors. */
void shmalloc_start_bad_range(const char *what, const void *addr, size_t n, int pe, int me,
                              int npes);

/* The offset of [addr, addr + n) (n > 0) in this PE's heap [base, base +
   bytes) when it lies inside and pe is one of npes; else SIZE_MAX, after
   the message (base NULL: no heap).  Inline: every put and get checks. */
static inline size_t shmalloc_start_range(const char *what, const void *addr, size_t n, int pe, const void *base,
                                          size_t bytes, int me, int npes)
{
    uintptr_t a = (uintptr_t)addr, b = (uintptr_t)base;
    if (base != NULL && pe >= 0 && pe < npes && a >= b && a - b <= bytes && n <= bytes - (a - b))
        return (size_t)(a - b);
    shmalloc_start_bad_range(what, addr, n, pe, base != NULL ? me : -1, base != NULL ? npes : 0);
    return SIZE_MAX;
}

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_START_H_INCLUDED */
