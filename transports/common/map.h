/* map.h - how the transports map a symmetric heap: its pages
   (hugetlbfs pages, else transparent huge pages, else base pages, and what
   was obtained read back from /proc/self/smaps), its place (a power-of-two
   aligned base, at a fixed address when asked) and, for the PMIx
   transport, shareable memory that PEs on the same node map too.

   The transports' memory primitive, compiled once (map.c) and
   linked into each transport library; not part of the allocator's API.
   Prints through shmalloc_print.  Linux only.

   ENVIRONMENT (read by shmalloc_map_huge_from_env)
     SHMALLOC_HUGE_PAGES   off (the default), auto, 2M or 1G.  auto: the
                           default hugetlbfs size when enough pages are
                           free, else transparent huge pages, and a report
                           only when the heap ends up on base pages.  A
                           size: those hugetlbfs pages, and a report for
                           any fallback.
     SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES  SOS's switch (1/0, y/n, yes/no,
                           on/off, true/false), read when the first is unset;
     SHMEM_SYMMETRIC_HEAP_PAGE_SIZE       with it, the size (default 2M). */
#if !defined(SHMALLOC_MAP_H_INCLUDED)
#define SHMALLOC_MAP_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "wait.h" /* SHMALLOC_INTERNAL */

#define SHMALLOC_MAP_MAX_ALIGN ((size_t)1 << 30) /* base alignment cap away from a fixed address */
#define SHMALLOC_MAP_THP_BYTES ((size_t)2 << 20)     /* x86-64 and arm64 (4 KiB granule) PMD size */

enum { SHMALLOC_MAP_HUGE_OFF, SHMALLOC_MAP_HUGE_AUTO, SHMALLOC_MAP_HUGE_SIZE };
enum { SHMALLOC_MAP_PAGES_BASE, SHMALLOC_MAP_PAGES_THP, SHMALLOC_MAP_PAGES_HUGETLB };

/* What the environment asks for. */
typedef struct shmalloc_map_huge {
    int mode;             /* SHMALLOC_MAP_HUGE_* */
    size_t size;          /* the hugetlbfs page size to try (auto: the default one) */
    char setting[112];    /* "SHMALLOC_HUGE_PAGES=2M", for reports */
} shmalloc_map_huge;

/* Where to put a mapping: [first, end) holds fixed addresses to try, in
   steps of the alignment (first == 0: none), then hint, then anywhere. */
typedef struct shmalloc_map_place {
    uintptr_t first, end;
    int tries;
    void *hint;
} shmalloc_map_place;

/* One heap's memory. */
typedef struct shmalloc_map_mem {
    char *base;
    size_t bytes;         /* what the heap may use: the request in base pages */
    size_t mapped;        /* the mapping's length */
    int fd;               /* the memfd same-node peers open, or -1 */
    int pages;            /* SHMALLOC_MAP_PAGES_*, as /proc/self/smaps shows it */
    size_t page_size;     /* bytes per page, as it shows */
    int fixed;            /* 1: at one of place's fixed addresses */
    char why[400];        /* why a better kind of page was not had */
} shmalloc_map_mem;

/* 0 with h filled, or -1 after a message naming the variable and value. */
SHMALLOC_INTERNAL int shmalloc_map_huge_from_env(shmalloc_map_huge *h);
/* Adds the ENVIRONMENT rows above to the options table: their first id,
   or -1 when it is full. */
SHMALLOC_INTERNAL int shmalloc_map_options_add(void);
/* The least power of two >= bytes, from floor, at most cap. */
SHMALLOC_INTERNAL size_t shmalloc_map_pow2_cover(size_t bytes, size_t floor, size_t cap);
/* Maps a heap of `bytes` with the pages h asks for; shared: in a memfd
   that peers can map (shmalloc_map_peer); pl NULL: anywhere aligned.
   0, or -1 with errno. */
SHMALLOC_INTERNAL int shmalloc_map_heap(shmalloc_map_mem *m, size_t bytes, const shmalloc_map_huge *h, int shared,
                      const shmalloc_map_place *pl);
/* "2 MiB transparent huge pages", ... */
SHMALLOC_INTERNAL const char *shmalloc_map_pages_name(const shmalloc_map_mem *m);
/* A heap that did not get the pages asked for says so, once, through the
   output hook (auto only when it got base pages). */
SHMALLOC_INTERNAL void shmalloc_map_report(const shmalloc_map_mem *m, const shmalloc_map_huge *h, int pe);
SHMALLOC_INTERNAL void shmalloc_map_release(shmalloc_map_mem *m);
/* Which node this process is on, as far as sharing memory goes. */
SHMALLOC_INTERNAL uint64_t shmalloc_map_node_id(void);
/* A same-node peer's heap memory, through its memfd: NULL when it cannot
   be opened (another user, a /proc without access). */
SHMALLOC_INTERNAL char *shmalloc_map_peer(long pid, int fd, size_t len);

#endif /* SHMALLOC_MAP_H_INCLUDED */
