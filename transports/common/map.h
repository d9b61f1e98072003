/* map.h - how the transports map a symmetric heap: its pages
   (hugetlbfs pages, else transparent huge pages, else base pages, and what
   was obtained read back from /proc/self/smaps), its place (a power-of-two
   aligned base, at a fixed address when asked) and, for the PMIx
   transport, shareable memory that PEs on the same node map too.

   The transports' memory primitive, compiled once (map.c) and
   linked into each transport library; not part of the allocator's API.
   Prints through shmalloc_print.  Linux only.

   ENVIRONMENT (rows of the options table; shm__map_huge_from_table
   interprets them once the table is read)
     SHMALLOC_HUGE_PAGES   off (the default), auto, 2M or 1G.  auto: the
                           default hugetlbfs size when enough pages are
                           free, else transparent huge pages, and a report
                           only when the heap ends up on base pages.  A
                           size: those hugetlbfs pages, and a report for
                           any fallback.
     SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES  SOS's switch (1/0, y/n, yes/no,
                           on/off, true/false), read when the first is unset;
     SHMEM_SYMMETRIC_HEAP_PAGE_SIZE       with it, the size (default 2M). */
#if !defined(SHM__MAP_H_INCLUDED)
#define SHM__MAP_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "internal.h" /* SHM__INTERNAL */

#define SHM__MAP_MAX_ALIGN ((size_t)1 << 30) /* base alignment cap away from a fixed address */
#define SHM__MAP_THP_BYTES ((size_t)2 << 20)     /* x86-64 and arm64 (4 KiB granule) PMD size */

enum { SHM__MAP_HUGE_OFF, SHM__MAP_HUGE_AUTO, SHM__MAP_HUGE_SIZE };
enum { SHM__MAP_PAGES_BASE, SHM__MAP_PAGES_THP, SHM__MAP_PAGES_HUGETLB };

/* What the environment asks for. */
typedef struct shm__map_huge {
    int mode;             /* SHM__MAP_HUGE_* */
    size_t size;          /* the hugetlbfs page size to try (auto: the default one) */
    char setting[112];    /* "SHMALLOC_HUGE_PAGES=2M", for reports */
} shm__map_huge;

/* Where to put a mapping: [first, end) holds fixed addresses to try, in
   steps of the alignment (first == 0: none), then hint, then anywhere. */
typedef struct shm__map_place {
    uintptr_t first, end;
    int tries;
    void *hint;
} shm__map_place;

/* One heap's memory. */
typedef struct shm__map_mem {
    char *base;
    size_t bytes;         /* what the heap may use: the request in base pages */
    size_t mapped;        /* the mapping's length */
    int fd;               /* the memfd same-node peers open, or -1 */
    int pages;            /* SHM__MAP_PAGES_*, as /proc/self/smaps shows it */
    size_t page_size;     /* bytes per page, as it shows */
    int fixed;            /* 1: at one of place's fixed addresses */
    char why[400];        /* why a better kind of page was not had */
} shm__map_mem;

/* The pages asked for, from the rows below as the options table holds
   them (shmalloc_options_read has read them): 0 with h filled, or -1
   after a message naming the variable and value. */
SHM__INTERNAL int shm__map_huge_from_table(shm__map_huge *h);
/* Adds the ENVIRONMENT rows above to the options table (once): 0, or -1
   when it is full. */
SHM__INTERNAL int shm__map_options_add(void);
/* The least power of two >= bytes, from floor, at most cap. */
SHM__INTERNAL size_t shm__map_pow2_cover(size_t bytes, size_t floor, size_t cap);
/* Maps a heap of `bytes` with the pages h asks for; shared: in a memfd
   that peers can map (shm__map_peer); pl NULL: anywhere aligned.
   0, or -1 with errno. */
SHM__INTERNAL int shm__map_heap(shm__map_mem *m, size_t bytes, const shm__map_huge *h, int shared,
                      const shm__map_place *pl);
/* "2 MiB transparent huge pages", ... */
SHM__INTERNAL const char *shm__map_pages_name(const shm__map_mem *m);
/* A heap that did not get the pages asked for says so, once, through the
   output hook (auto only when it got base pages). */
SHM__INTERNAL void shm__map_report(const shm__map_mem *m, const shm__map_huge *h, int pe);
SHM__INTERNAL void shm__map_release(shm__map_mem *m);
/* Which node this process is on, as far as sharing memory goes. */
SHM__INTERNAL uint64_t shm__map_node_id(void);
/* A same-node peer's heap memory, through its memfd: NULL when it cannot
   be opened (another user, a /proc without access). */
SHM__INTERNAL char *shm__map_peer(long pid, int fd, size_t len);

#endif /* SHM__MAP_H_INCLUDED */
