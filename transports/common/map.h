/* map.h - how the transports map a symmetric heap: its pages
   (hugetlbfs pages, else transparent huge pages, else base pages, and what
   was obtained read back from /proc/self/smaps), its place (a power-of-two
   aligned base, at a fixed address when asked) and, for the PMIx
   transport, shareable memory that PEs on the same node map too.

   Part of the API a transport builds on (start.h lists the others):
   installed with the headers, compiled into libshmalloc.  Most transports
   need only shmalloc_map_mem and shmalloc_map_place, through start.h;
   the functions are for one that maps more (a team's heap, a peer's).
   Prints through shmalloc_print.  Linux only.

   ENVIRONMENT (rows of the options table; shmalloc_map_huge_from_table
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
#if !defined(SHMALLOC_MAP_H_INCLUDED)
#define SHMALLOC_MAP_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

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

#if defined(__cplusplus)
extern "C" {
#endif

/* The pages asked for, from the rows below as the options table holds
   them: after shmalloc_options_read (shmalloc_start_read calls it).
   0 with h filled, or -1 after a message naming the variable and value. */
int shmalloc_map_huge_from_table(shmalloc_map_huge *h);
/* Adds the ENVIRONMENT rows above to the options table, before it is
   read (shmalloc_start_options does; again, nothing more): 0, or -1 when
   the table is full. */
int shmalloc_map_options_add(void);
/* The least power of two >= bytes, from floor, at most cap: an alignment
   for a heap's base.  No errors. */
size_t shmalloc_map_pow2_cover(size_t bytes, size_t floor, size_t cap);
/* Maps a heap of `bytes` with the pages h asks for (falling back, with
   m->why saying why); shared: in a memfd that peers can map
   (shmalloc_map_peer); pl NULL: anywhere aligned.  Any time; 0, or -1
   with errno and nothing mapped (shmalloc_start_map turns that into
   advice). */
int shmalloc_map_heap(shmalloc_map_mem *m, size_t bytes, const shmalloc_map_huge *h, int shared,
                      const shmalloc_map_place *pl);
/* The pages m got, for messages: "2 MiB transparent huge pages", ... */
const char *shmalloc_map_pages_name(const shmalloc_map_mem *m);
/* A heap that did not get the pages h asked for says so through the
   output hook (auto: only when it got base pages), naming PE pe: once,
   after mapping.  No errors. */
void shmalloc_map_report(const shmalloc_map_mem *m, const shmalloc_map_huge *h, int pe);
/* Unmaps m and closes its memfd, once the heap over it is destroyed; a
   zeroed or released m is left alone. */
void shmalloc_map_release(shmalloc_map_mem *m);
/* Which node this process is on, as far as sharing memory goes: equal
   ids may map each other's memfds (shmalloc_map_peer).  No errors. */
uint64_t shmalloc_map_node_id(void);
/* A same-node peer's heap memory, through its memfd fd in process pid,
   len bytes: NULL when it cannot be opened (another user, a /proc
   without access); the caller then reaches the peer its other way. */
char *shmalloc_map_peer(long pid, int fd, size_t len);

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_MAP_H_INCLUDED */
