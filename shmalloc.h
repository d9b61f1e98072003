/* shmalloc.h - the symmetric-heap allocator of an OpenSHMEM runtime.
   MIT licence: see the end of this file.

   USAGE
     In exactly one C file, before the #include:

         #define SHMALLOC_IMPLEMENTATION
         #include "shmalloc.h"

     Every other file includes "shmalloc.h" alone and sees declarations.

   WHAT IS IN HERE, IN THE ORDER DATA FLOWS (the file's order too)
     1. The TLSF core (shmalloc_tlsf_*): a local O(1) allocator over a region
        the caller supplies.  No communication, no libc allocation, no output
        except through the output hook.  Results depend only on the sequence
        of calls and on offsets from the region's base.
     2. The symmetric heap (shmalloc_heap_*): one TLSF heap plus a transport.
        Each call is collective: every PE calls it with the same arguments and
        gets a block at the same offset from its heap's base.  A heap made
        by shmalloc_heap_create_growable (SHMALLOC_HEAP_MAX in the
        transports) grows on every PE at once when it runs out.
     3. SHMEM names: shmem_malloc/shmalloc, shmem_free/shfree,
        shmem_realloc/shrealloc, shmem_align/shmemalign, shmem_calloc,
        shmem_malloc_with_hints, shsbreak, malloc_error, shmalloc_check,
        shmalloc_stats, and shmemx_free_deferred (a local release from any
        thread, freed by a later collective call once every PE released
        the block).  They act on the *current* heap (shmalloc_set_current).
        SHMALLOC_DEBUG=1 in the environment turns on debug mode: asymmetric
        calls are caught on every PE, leaks are listed at the end, fresh
        and freed memory get fill bytes (see ">> heap").

     A program usually gets all of this ready-made: libshmalloc (shmalloc.c,
     this file compiled once) and a transport library that binds the
     contract below (transports/shmalloc_pthreads.h: PEs are threads;
     transports/shmalloc_pmix_ofi.h: PEs are processes).  A runtime that vendors the
     header fills a shmalloc_transport with its own barrier and calls
     shmalloc_heap_create on every PE; see examples/vendor_runtime.c.

   CONTENTS
     Each part opens with a banner, once: search for ">> name".  The
     declarations come first; the implementation follows in the same
     order, each part under ">> name: implementation".  Inside a part,
     "----" lines head its steps.
     >> build options                  macros set at compile time: hooks, tunables
     >> errors                         ERRORS: the values of malloc_error
     >> output                         the output hook
     >> messages                       every line printed, by ID; error texts
     >> private memory                 the library's own (not symmetric)
     >> tlsf                           the core, its tentative operations
     >> transport                      TRANSPORT CONTRACT
     >> heap                           the symmetric heap
     >> spaces                         heaps over a team, found by address
     >> threads                        THREAD SAFETY, the current heap
     >> environment                    run-time options: the variables' table
     >> shmem names                    SHMALLOC(3)
     >> implementation                 only where SHMALLOC_IMPLEMENTATION is
     >> output: implementation
     >> messages: implementation
     >> private memory: implementation
     >> tlsf: implementation
     >> transport: implementation
     >> heap: implementation
     >> spaces: implementation
     >> threads: implementation
     >> environment: implementation
     >> shmem names: implementation
*/
#ifndef SHMALLOC_H_INCLUDED
#define SHMALLOC_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* >> build options ---------------------------------------------------------
   Define any of these before including the header (in the implementation
   file, and consistently in every file for the ones marked "all files").

   SHMALLOC_STATIC           all files: every function static (one-file use).
   SHMALLOC_API              all files: decoration of every public function.
   SHMALLOC_NO_SHMEM_NAMES   all files: leave out shmem_malloc, shfree, ...,
                             malloc_error and the SHMEM_MALLOC_* hints, for
                             runtimes with their own.
   SHMALLOC_ASSERT(c)        internal assertion, used at SHMALLOC_DEBUG_LEVEL >= 2.
   SHMALLOC_MEMCPY, SHMALLOC_MEMMOVE, SHMALLOC_MEMSET   the libc routines used.
   SHMALLOC_MALLOC(n), SHMALLOC_FREE(p)   a pair, both or neither: where the
                             library's private memory comes from and goes
                             back to (malloc and free); see shmalloc_mem_alloc.
   SHMALLOC_DEBUG_LEVEL      0 none; 1 argument validation (the default: bad
                             pointers are always caught); 2 internal
                             assertions; 3 a full heap check after every call.
   SHMALLOC_POISON           mark free memory and slack inaccessible to ASan
                             (ASan builds) or Valgrind, for finding misuse.
   SHMALLOC_SL_LOG2          log2 of the second-level lists per class, 2..5.
   SHMALLOC_MAX_LOG2         log2 of the largest heap, 30..46 (64 TiB).
*/
#if defined(SHMALLOC_STATIC) && (defined(__GNUC__) || defined(__clang__))
#  define SHMALLOC_DEF static __attribute__((unused))
#elif defined(SHMALLOC_STATIC)
#  define SHMALLOC_DEF static
#else
#  define SHMALLOC_DEF extern
#endif
#if !defined(SHMALLOC_API)
#  define SHMALLOC_API
#endif
#if !defined(SHMALLOC_SL_LOG2)
#  define SHMALLOC_SL_LOG2 5 /* 32 lists per power of two: <= 3% waste per class */
#endif
#if !defined(SHMALLOC_MAX_LOG2)
#  define SHMALLOC_MAX_LOG2 46 /* 64 TiB, half of x86-64 user address space */
#endif
#if SHMALLOC_SL_LOG2 < 2 || SHMALLOC_SL_LOG2 > 5
#  error "SHMALLOC_SL_LOG2 must be between 2 and 5"
#endif
#if SHMALLOC_MAX_LOG2 < 30 || SHMALLOC_MAX_LOG2 > 46
#  error "SHMALLOC_MAX_LOG2 must be between 30 and 46"
#endif

/* Thread-local storage for malloc_error and the current heap. */
#if !defined(SHMALLOC_TLS)
#  if defined(__GNUC__) || defined(__clang__)
#    define SHMALLOC_TLS __thread
#  elif defined(__cplusplus) && __cplusplus >= 201103L
#    define SHMALLOC_TLS thread_local
#  elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#    define SHMALLOC_TLS _Thread_local
#  else
#    error "define SHMALLOC_TLS to your compiler's thread-local storage class"
#  endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define SHMALLOC_FORMAT(a, b) __attribute__((format(printf, a, b))) /* printf-style checking */
#else
#  define SHMALLOC_FORMAT(a, b)
#endif

/* The version (semantic: the major changes with the ABI, and before 1.0
   the minor does too); the build, pkg-config and CMake read it here. */
#define SHMALLOC_VERSION_MAJOR 0
#define SHMALLOC_VERSION_MINOR 1
#define SHMALLOC_VERSION_PATCH 0

#define SHMALLOC_ALIGNMENT 16   /* every block starts on this boundary */
#define SHMALLOC_HEADER 16      /* bytes a block costs beyond its rounded size */
#define SHMALLOC_DEFAULT_HEAP_SIZE ((size_t)512 << 20)

/* >> errors ----------------------------------------------------------------
   The values of malloc_error (from the OpenSHMEM reference implementation).
   Caller misuse is returned and recorded; the heap is left unchanged. */
#define SHMEM_MALLOC_OK                 0L
#define SHMEM_MALLOC_BAD_SIZE         (-1L)  /* size too large, count*size overflow */
#define SHMEM_MALLOC_FAIL             (-2L)  /* no block large enough */
#define SHMEM_MALLOC_NOT_IN_SYMM_HEAP (-3L)  /* pointer outside the heap */
#define SHMEM_MALLOC_ALREADY_FREE     (-4L)  /* pointer into a free block */
#define SHMEM_MALLOC_NOT_ALIGNED      (-5L)  /* pointer inside a used block, not its start */
#define SHMEM_MALLOC_SYMMSIZE_FAILED (-10L)  /* PEs passed different arguments */
#define SHMEM_MALLOC_MEMALIGN_FAILED (-11L)  /* alignment 0 or not a power of two */
#define SHMEM_MALLOC_REALLOC_FAILED  (-12L)  /* no room to grow the block */
#define SHMEMX_MALLOC_NO_HEAP        (-13L)  /* no current heap: before shmem_init or after finalize (shmalloc's own) */
/* shmalloc_heap_create's own failures, each with a message naming it (BAD_TRANSPORT
   also any call's whose transport member failed) */
#define SHMEMX_MALLOC_BAD_TRANSPORT  (-14L)  /* no transport, no barrier, pe/npes wrong, or a member failed */
#define SHMEMX_MALLOC_BAD_MEMORY     (-15L)  /* memory not 16-byte aligned, too small or too large */
#define SHMEMX_MALLOC_REGISTER_FAILED (-16L) /* the transport could not register the heap */
/* A block's header, or its neighbour's, was overwritten (a write past the
   end of the block before it?): free and realloc refuse to merge through
   it, and the call fails on every PE with the heap unchanged.  Caught: a
   header whose flags or size no used block has, or whose size leads to no
   recorded block start, a free neighbour whose size does not reach the
   block that links back to it, a "previous block is free" no free block
   backs.  Not caught: a size that still leads to another used block's start
   (shmalloc_check finds it later), and bytes a write left as they were. */
#define SHMEMX_MALLOC_CORRUPT_HEAP   (-17L)
/* A heap with separate metadata must write its memory (calloc, a moving
   realloc) and its transport has no fill or copy. */
#define SHMEMX_MALLOC_NO_MEMOPS      (-18L)
/* Spaces (">> spaces"): a space with live blocks destroyed without
   SHMALLOC_SPACE_FREE_LIVE; a PE not in the team; a transport that cannot
   make teams; a space whose team was destroyed first. */
#define SHMEMX_MALLOC_SPACE_BUSY     (-19L)
#define SHMEMX_MALLOC_NOT_MEMBER     (-20L)
#define SHMEMX_MALLOC_NO_TEAMS       (-21L)
#define SHMEMX_MALLOC_TEAM_DESTROYED (-22L)

/* Hints of shmalloc_heap_malloc_with_hints, the values of OpenSHMEM 1.5's
   SHMEM_MALLOC_ATOMICS_REMOTE and SHMEM_MALLOC_SIGNAL_REMOTE, and of Sandia
   OpenSHMEM's SHMEMX_MALLOC_NO_BARRIER (allocate without synchronising);
   unknown bits are ignored. */
#define SHMALLOC_HINT_ATOMICS_REMOTE 1L
#define SHMALLOC_HINT_SIGNAL_REMOTE  2L
#define SHMALLOC_HINT_NO_BARRIER     (1L << 2)

#if defined(__cplusplus)
extern "C" {
#endif

/* >> output ----------------------------------------------------------------
   Every message goes through one function, in one call (at most 511 bytes;
   a longer one is cut and ends in "...\n"), with its stream and its ID.
   The default writes the text to stdout (stream 1) or stderr (stream 2).
   Passing NULL restores the default. */
typedef void (*shmalloc_output_fn)(void *user, int stream, int id, const char *text);
SHMALLOC_DEF SHMALLOC_API void shmalloc_set_output(shmalloc_output_fn fn, void *user);
/* The mechanism under the messages: prints message id, whose text is fmt,
   through the hook.  A file that defines SHMALLOC_MESSAGE_FORMATS before
   including this header passes a core message as SHM__MSG(ID), and a
   layer's as SHMALLOC_MSG_IN(first, ID) (">> messages"), which the
   compiler checks the arguments against. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_print(int stream, int id, const char *fmt, ...) SHMALLOC_FORMAT(3, 4);

/* >> messages ---------------------------------------------------------------
   Every line the library prints is a row of this table, and each line of
   a transport a row of the transport's own (below): an ID and its text,
   a printf format.  The output hook receives the ID
   with the formatted text, so a runtime can tell messages apart (or word
   them its own way) without matching text, and tests check IDs while the
   wording improves.  The listings of shmalloc_stats and SHMEM_INFO are
   output, not messages: their lines share the STATS_* and INFO_* IDs.
   Stream 1 is what a program would print to stdout (statistics, SHMEM_INFO),
   stream 2 to stderr (everything else). */
#define SHMALLOC_MESSAGES(X) \
    /* the heap checker (shmalloc_check) */ \
    X(CHECK_FINDING, "shmalloc_check: %s%s\n") \
    X(CHECK_BLOCK, "shmalloc_check: %s%s block at offset %zu, %zu bytes\n") \
    X(CHECK_NO_HEAP, "shmalloc_check: no current symmetric heap\n") \
    /* the symmetric heap */ \
    X(HEAP_LOCK_FAILED, "shmalloc: PE %d: the transport's lock returned %d: the call fails with " \
                        "SHMEMX_MALLOC_BAD_TRANSPORT\n") \
    X(HEAP_TRANSPORT_FAILED, "shmalloc: PE %d: %s: the transport's %s returned %d: the call fails on this PE with " \
                             "SHMEMX_MALLOC_BAD_TRANSPORT\n") \
    X(HEAP_TRANSPORT_FAILED_ON, "shmalloc: PE %d: %s fails on every PE with %s: the transport's %s failed on PE " \
                                "%d\n") \
    X(HEAP_DRAIN_TRANSPORT_FAILED, "shmalloc: PE %d: the transport's %s returned %d during a drain: the released " \
                                   "blocks stay allocated until a later call drains them\n") \
    X(HEAP_UNLOCK_FAILED, "shmalloc: PE %d: the transport's unlock failed\n") \
    X(HEAP_NO_TRANSPORT, "shmalloc: shmalloc_heap_create: no transport (shmalloc_transport_single() is the one for " \
                         "one PE)\n") \
    X(HEAP_NO_BARRIER, "shmalloc: shmalloc_heap_create: the transport has no barrier, which every heap needs\n") \
    X(HEAP_BAD_PE, "shmalloc: shmalloc_heap_create: the transport names PE %d of %d PE%s: its pe and npes must " \
                   "satisfy 0 <= pe < npes\n") \
    X(HEAP_UNALIGNED, "shmalloc: PE %d: shmalloc_heap_create: the memory at %p is not 16-byte aligned\n") \
    X(HEAP_MEMORY_SMALL, "shmalloc: PE %d: shmalloc_heap_create: %zu bytes of memory hold no heap: give it at " \
                         "least %zu (shmalloc_heap_bytes of the size wanted)\n") \
    X(HEAP_MEMORY_LARGE, "shmalloc: PE %d: shmalloc_heap_create: %zu bytes of memory are more than a heap can " \
                         "span (SHMALLOC_MAX_LOG2 %d)\n") \
    X(HEAP_REGISTER_FAILED, "shmalloc: PE %d: shmalloc_heap_create: the transport's register_region failed for " \
                            "the first %zu bytes of the heap\n") \
    X(HEAP_OOM, "shmalloc: PE %d: out of symmetric memory: %s of %zu bytes (alignment %zu) needs a free block of " \
                "%zu bytes; the heap has %zu bytes as mapped (at most %zu), %zu free, the largest free block %zu " \
                "bytes\n") \
    X(HEAP_OOM_NO_HEAP_CAN, "shmalloc: PE %d: no heap can serve this call: it needs a heap of %s, more than the " \
                            "largest (%zu%c, SHMALLOC_MAX_LOG2 %d)\n") \
    X(HEAP_OOM_FRAGMENTED, "shmalloc: PE %d: the cause is fragmentation: enough bytes are free, but in smaller " \
                           "blocks; %s, or free blocks sooner\n") \
    X(HEAP_OOM_TOO_SMALL, "shmalloc: PE %d: the heap is too small: %s%s\n") \
    X(HEAP_OOM_QUIET, "shmalloc: PE %d: further failures of this heap are not reported (SHMALLOC_DEBUG=1 reports " \
                      "each)\n") \
    X(HEAP_MISUSE, "shmalloc: PE %d: %s(%s): %s; the call fails on every PE\n") \
    X(HEAP_NO_MEMORY, "shmalloc: PE %d: %s: the allocator's block records could not grow (separate metadata): " \
                      "the allocator hooks (SHMALLOC_MALLOC, or malloc) returned NULL; the process is short of " \
                      "memory, not the heap; the call fails on every PE\n") \
    X(HEAP_CORRUPT, "shmalloc: PE %d: %s(the pointer at offset %zu): the block records %zu bytes (header 0x%zx) " \
                    "and %s: its header was overwritten: a write past the end of the block before it? The call " \
                    "fails on every PE and changes nothing; shmalloc_check names the damage\n") \
    X(HEAP_NO_HEAP, "shmalloc: %s called with no symmetric heap (before shmem_init, or after shmem_finalize or " \
                    "shmalloc_heap_destroy): it fails with SHMEMX_MALLOC_NO_HEAP; further such calls are not " \
                    "reported\n") \
    X(HEAP_MISUSE_QUIET, "shmalloc: PE %d: further bad arguments on this heap are not reported (SHMALLOC_DEBUG=1 " \
                         "reports each)\n") \
    X(HEAP_MISMATCH, "shmalloc: PE %d: %s, differs from PE %d's %s: %s\n") \
    X(HEAP_MISMATCH_ENDED, "shmalloc: %s %s, while PE %d makes %s: %s\n") \
    X(HEAP_MISMATCH_QUIET, "shmalloc: PE %d: further mismatches on this heap are not reported (SHMALLOC_DEBUG=1 " \
                           "reports each, and compares the hints and the number of calls too)\n") \
    X(HEAP_NO_BARRIER_DIFFER, "shmalloc: PE %d: the %llu allocation%s made without a barrier since the last " \
                              "synchronising call differ%s from another PE's (in number, sizes, outcomes or " \
                              "order): %s fails on every PE\n") \
    X(HEAP_LEAKS_BEGIN, "shmalloc: PE %d: %zu block%s still allocated at finalize:\n") \
    X(HEAP_LEAK, "shmalloc: PE %d:   block at offset %zu, %zu bytes usable, %zu with its header\n") \
    X(HEAP_LEAKS, "shmalloc: PE %d: %zu block%s, %zu bytes with headers, leaked%s\n") \
    /* spaces */ \
    X(SPACE_NO_TEAMS, "shmalloc: PE %d: %s: the transport has no team member, so it cannot make spaces (a runtime " \
                      "fills shmalloc_transport's team and team_done: see \"Adding a transport\" in README.md)\n") \
    X(SPACE_NOT_MEMBER, "shmalloc: PE %d: %s: this PE is not in the team: a space is made by its team's PEs " \
                        "alone, and a PE outside a split's team gets SHMEM_TEAM_INVALID\n") \
    X(SPACE_NULL, "shmalloc: PE %d: %s: the space is NULL: shmemx_space_create gives NULL on a PE outside its " \
                  "team and when it fails, so test its result before allocating\n") \
    X(SPACE_BUSY, "shmalloc: PE %d: shmemx_space_destroy: the space at %p has %zu live block%s: free them first, or " \
                  "pass SHMALLOC_SPACE_FREE_LIVE; the space stays as it was on every member\n") \
    X(SPACE_FREES_LIVE, "shmalloc: PE %d: shmemx_space_destroy frees the space's %zu live block%s " \
                        "(SHMALLOC_SPACE_FREE_LIVE):\n") \
    X(SPACE_TEAM_GONE, "shmalloc: PE %d: %s on the space at %p, whose team was destroyed: destroy a space " \
                       "(shmemx_space_destroy) before its team; the call fails with SHMEMX_MALLOC_TEAM_DESTROYED\n") \
    X(SPACE_NOT_A_SPACE, "shmalloc: PE %d: shmemx_space_destroy(%p): not a space (a PE's world heap ends with " \
                         "shmem_finalize); nothing changes\n") \
    X(SPACE_WRONG_SPACE, "shmalloc: PE %d: %s(%p) on the space at %p: the block is in %s; give a call the space " \
                         "that holds the block (shmemx_space_of)\n") \
    /* deferred releases (shmemx_free_deferred) */ \
    X(DEFER_BAD_POINTER, "shmalloc: PE %d: shmemx_free_deferred(%p): %s; nothing is released\n") \
    X(DEFER_NO_HEAP, "shmalloc: shmemx_free_deferred(%p) with no heap (after shmem_finalize, or before " \
                     "shmem_init): nothing is released; further such calls are not reported\n") \
    X(DEFER_RELEASED_ON, "shmalloc: PE %d:     released by shmemx_free_deferred on PE%s %s of %d, not on " \
                         "every PE\n") \
    X(DEFER_UNDRAINED, "shmalloc: PE %d: %zu block%s released by shmemx_free_deferred on this PE stay%s " \
                       "allocated at finalize: not every PE released %s (SHMALLOC_DEBUG=1 names the PEs that " \
                       "did)\n") \
    /* shmalloc_stats */ \
    X(STATS_NO_HEAP, "shmalloc_stats: no current symmetric heap\n") \
    X(STATS_HEAP, "shmalloc_stats: heap at %p, %zu bytes\n") \
    X(STATS_CALLS, "  calls:%s\n") \
    X(STATS_BLOCKS, "  blocks:\n") \
    X(STATS_BLOCK, "  block at offset %zu: %zu bytes with its header, %s\n") \
    X(STATS_COUNTS, "  busy: %zu block%s, %zu bytes with headers\n  free: %zu block%s, %zu bytes with headers, " \
                    "largest %zu\n") \
    X(STATS_SPEC, "  spec: %d block%s, %zu bytes\n  high water: %zu bytes\n") \
    X(STATS_GROWTH, "  grown %zu time%s, %d region%s registered, room for %zu bytes more\n") \
    X(STATS_MAP, "%s%s") \
    /* settings */ \
    X(OPTION_BAD, "shmalloc: %s=%s is not %s%s\n") \
    X(OPTION_UNKNOWN, "shmalloc: %s is set, but shmalloc has no such variable%s%s%s%s\n") \
    X(OPTION_HEAP_MAX_BELOW, "shmalloc: SHMALLOC_HEAP_MAX=%s (%llu bytes) is below the heap size of %zu bytes: " \
                             "the heap would have no room to grow\n") \
    X(OPTION_HUGE_PAGES_BAD, "shmalloc: %s=%s is not %s\n") \
    X(INFO_VERSION, "shmalloc %s: OpenSHMEM 1.5 symmetric heap\n") \
    X(INFO_OPTION, "  %s=%s (%s%s)\n      %s\n") \
    X(OPTION_RENAMED, "shmalloc: %s is renamed %s: its value %s is used, but set %s instead\n") \
    X(MESSAGES_BAD_TABLE, "shmalloc: shmalloc_messages_add(%p, %d): %s; the table is not added\n")

enum {
#define SHMALLOC_MESSAGE_INDEX(id, text) SHMALLOC_MSG_##id,
    SHMALLOC_MESSAGES(SHMALLOC_MESSAGE_INDEX)
    SHMALLOC_MSG_COUNT
};

/* A layer (a transport, a runtime) owns its messages: it declares its
   table in its own header, in rows X(ID, text) like the one above, with
   SHMALLOC_MESSAGE_LAYER, and adds it with shmalloc_messages_add at
   start-up, which gives the layer a range of IDs that no other layer
   has.  Its rows' SHMALLOC_MSG_<ID> then number them within the table
   (from 0, as the core's do), and SHMALLOC_MSG_IN(first, ID) passes the
   message's ID and text to shmalloc_print, checked like SHM__MSG's:
       #define MYRT_MESSAGES(X) X(MYRT_NO_LINK, "myrt: PE %d: no link to PE %d\n")
       SHMALLOC_MESSAGE_LAYER(MYRT_MESSAGES, MYRT_MESSAGE_ROWS)
       static const shmalloc_message rows[] = {MYRT_MESSAGES(SHMALLOC_MESSAGE_ROW)};
       int first = shmalloc_messages_add(rows, MYRT_MESSAGE_ROWS);
       shmalloc_print(2, SHMALLOC_MSG_IN(first, MYRT_NO_LINK), pe, peer); */
typedef struct shmalloc_message {
    const char *name; /* "MYRT_NO_LINK": what shmalloc_message_name gives */
    const char *text; /* its printf format */
} shmalloc_message;
#define SHMALLOC_MESSAGE_ROW(id, text) {#id, text},
#define SHMALLOC_MESSAGE_LAYER(TABLE, ROWS) \
    enum { TABLE(SHMALLOC_MESSAGE_INDEX) ROWS }; \
    TABLE(SHMALLOC_MESSAGE_TEXT)
#define SHMALLOC_MSG_IN(first, id) (first) + SHMALLOC_MSG_##id, shm__text_##id
#if defined(__GNUC__) || defined(__clang__)
#  define SHMALLOC_MESSAGE_TEXT(id, text) static const char shm__text_##id[] __attribute__((unused)) = text;
#else
#  define SHMALLOC_MESSAGE_TEXT(id, text) static const char shm__text_##id[] = text;
#endif
/* The most tables shmalloc_messages_add holds, and rows in one table. */
#define SHMALLOC_MESSAGE_TABLES 16
#define SHMALLOC_MESSAGE_ROWS_MAX 1024
/* Adds a layer's table: the ID of its first row, the others following in
   order.  A table whose names are already there in the same order (the
   layer started again) keeps its IDs, which are returned again.  -1 after
   MESSAGES_BAD_TABLE when rows is NULL, count is not 1..ROWS_MAX, a row
   lacks its name or text, a name is another layer's, or the process holds
   SHMALLOC_MESSAGE_TABLES already.  rows must stay valid.
   Not thread-safe: start-up only. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_messages_add(const shmalloc_message *rows, int count);
/* "HEAP_OOM" for SHMALLOC_MSG_HEAP_OOM, a layer's row's name for its ID;
   NULL for a number no message has. */
SHMALLOC_DEF SHMALLOC_API const char *shmalloc_message_name(int id);

/* A one-line description of a SHMEM_MALLOC_* code, for messages. */
SHMALLOC_DEF SHMALLOC_API const char *shmalloc_strerror(long code);
/* "MAJOR.MINOR.PATCH" of the compiled library, which a program built
   against another header can compare with SHMALLOC_VERSION_*. */
SHMALLOC_DEF SHMALLOC_API const char *shmalloc_version(void);

/* >> private memory --------------------------------------------------------
   The library's own memory (not symmetric: the hint table, a transport's
   arrays) comes from the SHMALLOC_MALLOC/SHMALLOC_FREE pair of the file
   that expands the implementation; transports built apart reach it here.
   count zeroed objects of size bytes, or NULL when count * size overflows
   or memory runs out; shmalloc_mem_free(NULL) does nothing. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_mem_alloc(size_t count, size_t size);
SHMALLOC_DEF SHMALLOC_API void shmalloc_mem_free(void *p);

/* >> tlsf ------------------------------------------------------------------
   The core (shmalloc_tlsf_*): a local allocator over a region. */
typedef struct shmalloc_tlsf shmalloc_tlsf;

/* What the core's calls return; the symmetric heap turns them into
   malloc_error.  A call that fails changes nothing. */
enum {
    SHMALLOC_TLSF_OK = 0,
    SHMALLOC_TLSF_NOT_IN_HEAP,  /* pointer outside the blocks and the spec area */
    SHMALLOC_TLSF_ALREADY_FREE, /* pointer into a free block: a double free */
    SHMALLOC_TLSF_NOT_A_BLOCK,  /* pointer inside the heap, not a used block's start */
    SHMALLOC_TLSF_NO_ROOM,      /* no free block (or reservation) large enough */
    SHMALLOC_TLSF_BAD_SIZE,     /* size above SHMALLOC_TLSF_MAX_REQUEST */
    SHMALLOC_TLSF_BAD_ALIGN,    /* alignment 0, not a power of two, or too large */
    SHMALLOC_TLSF_CORRUPT,      /* a used block whose header, or its neighbour's, was
                                   overwritten: nothing is merged through it */
    SHMALLOC_TLSF_NO_MEMOPS,    /* a separate core must move a block and has no copy */
    SHMALLOC_TLSF_NO_MEMORY     /* a separate core's records could not grow (the hooks returned NULL) */
};
#define SHMALLOC_TLSF_MAX_REQUEST ((size_t)1 << SHMALLOC_MAX_LOG2) /* bytes of the largest request */
/* A one-line description of a SHMALLOC_TLSF_* status, the words of the
   SHMEM_MALLOC_* code of the same meaning but of no symmetric heap: for
   runtimes that call the core directly and report a refused pointer or
   size themselves. */
SHMALLOC_DEF SHMALLOC_API const char *shmalloc_tlsf_strerror(int status);

typedef struct shmalloc_counters {
    size_t capacity;       /* bytes of all blocks, headers included; the last
                              block's payload may reach 8 bytes beyond */
    size_t in_use;         /* bytes in used blocks, headers included */
    size_t free;           /* capacity - in_use */
    size_t spec;           /* bytes of the spec area (shmalloc_tlsf_sbreak) */
    size_t largest_free;   /* size of the largest free block */
    size_t high_water;     /* highest offset ever reached by a used block's
                              usable bytes */
    size_t used_blocks;    /* number of used blocks */
    size_t largest_request; /* the largest malloc that fits now, exactly: 0 when none */
} shmalloc_counters;

typedef struct shmalloc_block_info {
    size_t offset;  /* of the user pointer from the region's base */
    size_t size;    /* bytes of the block, header included */
    int used;       /* 1 used, 0 free */
} shmalloc_block_info;
/* Return nonzero to stop the walk. */
typedef int (*shmalloc_walk_fn)(void *user, const shmalloc_block_info *block);

/* Bytes to add to `capacity` so that a fresh heap created over
   capacity + shmalloc_tlsf_overhead(capacity) bytes can serve one
   shmalloc_tlsf_malloc(capacity).  Control structures live at the region's
   end, so block offsets start near 0. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_overhead(size_t capacity);
/* mem must be 16-byte aligned; NULL when the region is too small or too big. */
SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_tlsf_create(void *mem, size_t bytes);
/* A region that grows: laid out for all `bytes`, but its blocks start as
   `initial` bytes from mem (rounded up to 16, at least 48, at most what
   the region holds).  The allocator touches only those and the control
   block at the region's end, so the rest of a reservation (mmap with
   MAP_NORESERVE) costs nothing until shmalloc_tlsf_grow hands it out. */
SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_tlsf_create_reserved(void *mem, size_t bytes, size_t initial);
/* How a core with separate metadata writes the memory it manages, which
   it never loads or stores itself: fill(user, dst, byte, n) and
   copy(user, dst, src, n), 0 on success, with addresses in the managed
   range (a device's memset and copy engine, say).  Either may be NULL:
   calloc, or a realloc that must move, then fails. */
typedef struct shmalloc_memops {
    void *user;
    int (*fill)(void *user, void *dst, int byte, size_t n);
    int (*copy)(void *user, void *dst, const void *src, size_t n);
} shmalloc_memops;
/* A core over `bytes` at mem (16-byte aligned) that keeps all of its
   state in memory from the allocator hooks and never touches mem: block
   records, found from an offset through buckets, that grow with the
   blocks, and a map of where used blocks start, that grows with the
   highest block.  Its blocks start as `initial` bytes (as
   shmalloc_tlsf_create_reserved's) and grow to `bytes`.  Same placement
   as the inline core's; no header, so a block is its request rounded to
   16.  ops may be NULL.  Free it with shmalloc_tlsf_destroy.  A tentative
   resize makes nothing before its commit. */
SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_tlsf_create_separate(void *mem, size_t bytes, size_t initial,
                                                                     const shmalloc_memops *ops);
/* Frees what a separate core obtained.  An inline one lives in its
   region, which it leaves as the caller may use it again (under
   SHMALLOC_POISON, no byte still marked inaccessible). */
SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_destroy(shmalloc_tlsf *t);
/* Adds `bytes` (rounded up to 16, at least 32) at the top of the blocks, as
   free space merged with a free top block.  SHMALLOC_TLSF_OK, or NO_ROOM
   (nothing changes) when the reservation has less room or the spec area
   is not empty: spec blocks sit where the blocks would grow. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_grow(shmalloc_tlsf *t, size_t bytes);
/* What shmalloc_tlsf_grow(t, bytes) would return, changing nothing: a
   collective layer registers the new region before it grows. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_grow_status(const shmalloc_tlsf *t, size_t bytes);
/* Bytes the blocks may still grow by. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_room(const shmalloc_tlsf *t);
/* Bytes of the free block at the top of the blocks, which a growth
   extends (0 when the last block is used): a block of `need` bytes
   (shmalloc_tlsf_block_need) fits once the blocks grow by need less it. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_top_free(const shmalloc_tlsf *t);
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_malloc(shmalloc_tlsf *t, size_t size);
/* align: any power of two (values below 16 mean 16); NULL on a bad one. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_align(shmalloc_tlsf *t, size_t align, size_t size);
/* The name before 0.2, kept for programs written against it. */
#define shmalloc_tlsf_memalign shmalloc_tlsf_align
/* count * size bytes, zeroed; NULL when the product overflows (heap
   unchanged) or no block fits.  A runtime's calloc without its own check. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_calloc(shmalloc_tlsf *t, size_t count, size_t size);
/* realloc(NULL, n) mallocs; realloc(p, 0) frees and returns NULL; NULL with
   p untouched on failure.  Keeps the block's alignment when it moves. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_realloc(shmalloc_tlsf *t, void *ptr, size_t size);
/* SHMALLOC_TLSF_OK (NULL too), or why ptr is not a used block, or
   SHMALLOC_TLSF_CORRUPT when its header or its neighbour's was overwritten
   (heap unchanged).  realloc returns NULL for the same reasons, but for a
   shrink within the block's slack, which reaches no other block. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_free(shmalloc_tlsf *t, void *ptr);
/* 0 for a pointer that is not a used block. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_usable_size(const shmalloc_tlsf *t, const void *ptr);
/* The alignment a used block keeps when it moves (at least
   SHMALLOC_ALIGNMENT); 0 for a pointer that is not a used block. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_alignment(const shmalloc_tlsf *t, const void *ptr);
/* Moves the break between the blocks and the "spec" area at the top of the
   region, a raw range outside the free lists: increment > 0 takes that
   many bytes (rounded up to 16) from the free block at the top of the
   heap, < 0 gives them back, 0 changes nothing.  Returns the start of the
   spec area afterwards, or NULL (and nothing changes) when the top block
   is not free and large enough, or more is given back than was taken. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_sbreak(shmalloc_tlsf *t, ptrdiff_t increment);
/* What shmalloc_tlsf_sbreak(t, increment) would do, changing nothing:
   SHMALLOC_TLSF_OK, BAD_SIZE (too large to round to 16) or NO_ROOM. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_sbreak_status(const shmalloc_tlsf *t, ptrdiff_t increment);
/* SHMALLOC_TLSF_OK if ptr is the start of a used block, else why not. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_validate(const shmalloc_tlsf *t, const void *ptr);
/* The used block that holds ptr, any of its usable bytes: SHMALLOC_TLSF_OK
   with its user pointer in *start and shmalloc_tlsf_usable_size in *size;
   else why no used block holds ptr, as shmalloc_tlsf_validate gives it
   (SHMALLOC_TLSF_ALREADY_FREE: in a free block), and *start and *size
   are unchanged.  O(1): a bounded number of map words and one block's
   header or record, whatever the heap's size. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_block_of(const shmalloc_tlsf *t, const void *ptr, void **start,
                                                     size_t *size);
/* The figures of shmalloc_counters; walks the heap (time in the number of blocks). */
SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_counters(const shmalloc_tlsf *t, shmalloc_counters *out);
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_base(const shmalloc_tlsf *t);
/* Bytes from the base that user data may occupy: the blocks (the last
   block's payload ends 8 bytes past them) and the spec area. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_size(const shmalloc_tlsf *t);
/* p's offset from the base, for any p: what every PE compares. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_offset(const shmalloc_tlsf *t, const void *p);
SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_walk(const shmalloc_tlsf *t, shmalloc_walk_fn fn, void *user);
/* shmalloc_check semantics: level < 0 silent, 0 first problem to stream 2,
   > 0 also a line per block.  0 when consistent. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_check(const shmalloc_tlsf *t, int level);

/* ---- tentative operations, for a collective layer ----------------------
   A take or a resize is made on every PE before the PEs agree on it, and
   must then be kept on all or undone on all.  The undo is exact: the heap
   is as before, list positions and the high-water mark included, so later
   offsets match those of PEs that took nothing.  Between the two no other
   call may change the heap.  `ptr` is the block once taken or resized (it
   is writable up to its usable size until shmalloc_tlsf_commit); the other
   members are the core's own. */
typedef struct shmalloc_tlsf_pending {
    void *ptr;
    int commit_grows;     /* a resize: the commit gives the block new bytes (a move, or a grow not made yet) */
    int how, next_headed; /* the core's own from here on */
    unsigned fl, sl;
    size_t request, high_water, old_size, new_size;
    void *old, *target;
} shmalloc_tlsf_pending;

/* SHMALLOC_TLSF_OK when shmalloc_tlsf_take(t, align, size, ...) may serve
   the request, else BAD_ALIGN or BAD_SIZE. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_request_status(size_t align, size_t size);
/* Bytes of free block that always serve `size` bytes at `align`: what a
   heap that runs out reports, and grows by. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_block_need(size_t size, size_t align);
/* A tentative memalign of size bytes (align <= SHMALLOC_ALIGNMENT: a plain
   malloc): SHMALLOC_TLSF_OK with op->ptr set, or BAD_ALIGN, BAD_SIZE or
   NO_ROOM with nothing changed. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_take(shmalloc_tlsf *t, size_t align, size_t size,
                                                 shmalloc_tlsf_pending *op);
/* A tentative resize of used block ptr to size bytes (size > 0): planned,
   and made at once (op->ptr = ptr) when it is a grow in place that can be
   undone exactly; otherwise the commit makes it.  SHMALLOC_TLSF_OK, or why
   not (a bad pointer, BAD_SIZE, NO_ROOM) with nothing changed. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_resize(shmalloc_tlsf *t, void *ptr, size_t size,
                                                   shmalloc_tlsf_pending *op);
/* Keeps a take or a resize that returned SHMALLOC_TLSF_OK, making a resize
   not made yet (a move keeps the contents and the alignment); returns the
   block. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_commit(shmalloc_tlsf *t, shmalloc_tlsf_pending *op);
/* Undoes a take or a resize that returned SHMALLOC_TLSF_OK, exactly. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_undo(shmalloc_tlsf *t, shmalloc_tlsf_pending *op);

/* >> transport --------------------------------------------------------------
   How the symmetric heap talks to the other PEs.  `user` is passed back as
   the first argument of every member.  Every member returns 0 on success.

   barrier          REQUIRED.  Returns when every PE has called it.  Called
                    by every collective heap call, even one that fails
                    locally, so no PE is left waiting.
   allreduce_max    optional.  values[0..count) := the maximum over all PEs,
                    count <= SHMALLOC_REDUCE_MAX; it must also
                    synchronise like barrier.  With
                    it, a collective call fails on every PE or on none, and
                    PEs that pass different sizes, alignments or blocks, or
                    make different calls, all get NULL with
                    SHMEM_MALLOC_SYMMSIZE_FAILED.  Without it, each PE
                    decides alone and a failure on one PE is not seen by
                    the others.
   register_region  optional.  Called on every PE at the same point, with a
   deregister_region  region of the block space: the first by
                    shmalloc_heap_create, each new one by the allocation
                    that grows the heap; all deregistered, last first, by
                    shmalloc_heap_destroy.  Regions are contiguous from the
                    base.  Being collective, they may exchange keys (even
                    when their own registration failed).  A failed
                    registration fails create, or the growth and its call,
                    on every PE with the all-reduce; regions that did
                    register are deregistered again.
   lock, unlock     optional.  Serialise the threads of one PE; without them
                    one PE's heap must be used by one thread at a time.
   allreduce_and    optional.  values[0..count) := the bitwise AND over all
                    PEs, count <= SHMALLOC_REDUCE_AND_MAX, in one round (a
                    transport that splits a call into several collective
                    calls makes a drain cost as many); synchronises like
                    barrier.  Drains deferred releases (shmalloc_heap_free_
                    deferred) in one round up to SHMALLOC_REDUCE_AND_MAX * 64
                    = 65 536 live blocks, and one more per 65 536 past
                    that.  Without it, with allreduce_max, a drain
                    sends one value per live block (1 - released, whose
                    maximum is 0 only when every PE released it):
                    SHMALLOC_REDUCE_MAX blocks per round.  Without either,
                    released blocks are never freed.
   fill, copy       optional.  fill(user, dst, byte, n) and copy(user, dst,
                    src, n) write the heap's memory (addresses in it; a
                    copy's ranges never overlap).  A heap with separate
                    metadata (SHMALLOC_METADATA_SEPARATE) writes its memory
                    only through them: calloc's zeroing, a moving realloc's
                    copy, debug mode's fill patterns.  Without them, such a
                    heap's calloc and moving realloc fail on every PE with
                    SHMEMX_MALLOC_NO_MEMOPS and debug fills are skipped; an
                    inline heap ignores them.  A device runtime binds its
                    memset and copy engine.
   pe, npes         REQUIRED: this PE's number and the number of PEs
                    (0 <= pe < npes), which every message names; a heap
                    refuses a transport without them.
   team, team_done  optional, both or neither: what spaces need (">>
                    spaces").  team(user, handle, child) fills *child with
                    a transport over the PEs of the runtime's team `handle`
                    (its own handle, which the header only passes on): pe
                    and npes relative to the team, barrier and all-reduces
                    among its PEs only, registration exchanging keys among
                    them only, lock, unlock, fill and copy as this
                    transport's.  Called by the team's PEs alone, in the
                    same order; it need not synchronise.  Returns 0, or
                    nonzero when this PE is not in the team (or handle is
                    none).  team_done(child->user) releases what the child
                    holds, when its space is destroyed.

   A member that returns nonzero (barrier, allreduce_max, lock) fails the
   call on this PE with SHMEMX_MALLOC_BAD_TRANSPORT and a line naming the
   call, the member and its status.  A failed lock, or a failure in an
   earlier round of the call (create's first of two), reaches every PE
   through the next all-reduce, and the PEs it did not fail on name the
   member and the PE.  A failed allreduce_and leaves the drain for later.

   A growing heap registers at most SHMALLOC_MAX_REGIONS regions.

   Lifecycle: map memory (same size on every PE) -> shmalloc_heap_create on
   every PE (collective) -> collective calls in the same order everywhere ->
   shmalloc_heap_destroy on every PE (collective). */
#define SHMALLOC_REDUCE_MAX 16  /* values of one allreduce_max call, at most */
#define SHMALLOC_MAX_REGIONS 64 /* regions register_region is called with, at most */
#define SHMALLOC_REDUCE_AND_MAX 1024 /* values of one allreduce_and call, at most: 65 536 live blocks */

typedef struct shmalloc_transport {
    void *user;
    int (*barrier)(void *user);
    int (*allreduce_max)(void *user, uint64_t *values, int count);
    int (*register_region)(void *user, void *base, size_t bytes);
    int (*deregister_region)(void *user, void *base, size_t bytes);
    int (*lock)(void *user);
    int (*unlock)(void *user);
    int pe;   /* this PE's number, 0 <= pe < npes */
    int npes; /* the number of PEs */
    int (*allreduce_and)(void *user, uint64_t *values, int count);
    int (*fill)(void *user, void *dst, int byte, size_t n);
    int (*copy)(void *user, void *dst, const void *src, size_t n);
    int (*team)(void *user, const void *team, struct shmalloc_transport *child);
    void (*team_done)(void *child_user);
} shmalloc_transport;

/* A transport for one PE in one thread: barrier and all-reduce do nothing;
   fill and copy are memset and memcpy (host memory). */
SHMALLOC_DEF SHMALLOC_API const shmalloc_transport *shmalloc_transport_single(void);

/* >> heap ------------------------------------------------------------------
   The symmetric heap (shmalloc_heap_*): collective calls. */
typedef struct shmalloc_heap shmalloc_heap;

/* Bytes of memory to map for a heap whose nominal size is `nominal`: the
   allocator's own overhead is added, so one allocation of `nominal` bytes
   succeeds on a fresh heap. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_heap_bytes(size_t nominal);
/* Collective.  The heap lives inside mem (16-byte aligned); the transport is
   copied.  NULL on failure, after a line naming the cause, with *err (when
   err is not NULL) SHMEMX_MALLOC_BAD_TRANSPORT, _BAD_MEMORY or
   _REGISTER_FAILED on every PE (the worst, with an all-reduce). */
SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_create(void *mem, size_t bytes,
                                                              const shmalloc_transport *tp,
                                                              long *err);
/* Collective.  A heap that grows: mem holds `bytes` reserved for the
   largest heap (shmalloc_heap_bytes(max), mapped with MAP_NORESERVE), of
   which the first nominal bytes' worth is used and registered at first
   (nominal SIZE_MAX: all of it, as shmalloc_heap_create does).
   When no PE can serve a collective allocation, every heap grows by the
   same amount (at least doubling, within the reservation), the new region
   is registered on every PE, and the call is tried again; if any PE's
   registration fails, none grows and the call fails.  Needs the
   all-reduce; a heap with spec blocks (shsbreak) does not grow. */
SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_create_growable(void *mem, size_t bytes, size_t nominal,
                                                                       const shmalloc_transport *tp, long *err);
/* What a heap is created with, all of it: the heap reads no variable.
   shmalloc_heap_create and _growable give debug 0, inline metadata and no
   size_var; a runtime fills a config from the options table with
   shmalloc_options_heap_config (">> environment"). */
typedef struct shmalloc_heap_config {
    size_t nominal; /* bytes used and registered at first (SIZE_MAX: all of mem); the rest is room to grow */
    int debug;      /* debug mode: asymmetric calls reported, leaks listed, fill patterns */
    const char *size_var; /* the variable an out-of-memory report says to raise; NULL: the program sets the size */
    int metadata;   /* SHMALLOC_METADATA_INLINE (0), or _SEPARATE: the heap never touches mem itself */
    const shmalloc_memops *memops; /* separate: how mem is written (device memory); NULL: the transport's */
} shmalloc_heap_config;
/* Where a heap keeps its metadata.  INLINE: block headers in mem and the
   control structures at its end (the fastest on host memory).  SEPARATE:
   all of it in memory from the allocator hooks, so that mem may be memory
   this process cannot touch (a device's) and no write into mem, a peer's
   put past a block's end included, can reach the allocator's state; the
   heap writes mem only through the config's memops, else the transport's
   fill and copy. */
#define SHMALLOC_METADATA_INLINE 0
#define SHMALLOC_METADATA_SEPARATE 1
/* Collective: shmalloc_heap_create_growable with a config. */
SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_create_with(void *mem, size_t bytes,
                                                                   const shmalloc_heap_config *config,
                                                                   const shmalloc_transport *tp, long *err);
/* Collective.  Afterwards h is no thread's current heap nor the process
   heap: the SHMEM names fail with SHMEMX_MALLOC_NO_HEAP until another heap
   is made current; then the memory may be unmapped. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_destroy(shmalloc_heap *h);
/* shmalloc_heap_destroy from a runtime's exit handler, for a PE that
   ended without its finalize: a mismatch report begins with `how` ("PE 1
   ended without shmem_finalize (exit status 1)"), not with finalize. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_destroy_ended(shmalloc_heap *h, const char *how);
/* The collective calls.  Each stores its outcome (SHMEM_MALLOC_*) in *err
   when err is not NULL. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_malloc(shmalloc_heap *h, size_t size, long *err);
/* With SHMALLOC_HINT_NO_BARRIER in hints, this PE takes its block without
   synchronising; the next synchronising call compares what every PE did. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_malloc_with_hints(shmalloc_heap *h, size_t size, long hints,
                                                                long *err);
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_calloc(shmalloc_heap *h, size_t count, size_t size, long *err);
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_align(shmalloc_heap *h, size_t align, size_t size, long *err);
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_realloc(shmalloc_heap *h, void *ptr, size_t size, long *err);
/* The lasting hints a block was allocated with (SHMALLOC_HINT_ATOMICS_REMOTE,
   SHMALLOC_HINT_SIGNAL_REMOTE), which shmalloc_heap_realloc keeps; or the
   (negative) SHMEM_MALLOC_* code of a pointer that is not a used block
   (SHMEMX_MALLOC_NO_HEAP when h is NULL, as after a destroy).
   Not collective. */
SHMALLOC_DEF SHMALLOC_API long shmalloc_heap_hints(shmalloc_heap *h, const void *ptr);
/* The allocation that holds ptr, any of its bytes: 0 with its start (the
   pointer the allocating call returned) in *start and its usable bytes in
   *size; else the (negative) SHMEM_MALLOC_* code of a pointer no
   allocation holds (SHMEM_MALLOC_ALREADY_FREE: in freed memory;
   SHMEMX_MALLOC_NO_HEAP: h is NULL), with *start and *size unchanged.  O(1) at any heap size, in both metadata
   modes.  Not collective. */
SHMALLOC_DEF SHMALLOC_API long shmalloc_heap_block_of(shmalloc_heap *h, const void *ptr, void **start, size_t *size);
/* shsbreak: shmalloc_tlsf_sbreak on every PE, agreed like an allocation. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_sbreak(shmalloc_heap *h, ptrdiff_t increment, long *err);
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_free(shmalloc_heap *h, void *ptr, long *err);
/* Not collective: this PE releases the block, which stays allocated until
   every PE has released it; then the next collective call (on every PE)
   frees it.  O(1), makes no transport call, waits for no peer; any thread
   may call it at any time, even during another thread's collective call.
   The pointer is checked at once, between two changes of the heap by
   collective calls (again when one overlapped the check; they change it
   only between their waits for peers), and a collective call takes no
   lock for it while this PE's released set is empty: a bad pointer gets
   the code shmalloc_heap_free would give, a second release
   SHMEM_MALLOC_ALREADY_FREE, and nothing changes.  A release racing a
   collective free or realloc of the same block on this PE is a double
   free, as a free racing a free is. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_free_deferred(shmalloc_heap *h, void *ptr, long *err);
/* Collective: frees, on every PE, the blocks every PE has released, as
   each collective call does first; for programs that want it explicitly. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_free_deferred_drain(shmalloc_heap *h, long *err);
/* Not collective. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_heap_check(shmalloc_heap *h, int level);
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_stats(shmalloc_heap *h, int level);
SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_heap_tlsf(shmalloc_heap *h);
/* Start of the block space: offsets of symmetric objects are from here. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_base(const shmalloc_heap *h);
/* Bytes from the base that user data may occupy: the blocks (the last
   block's payload ends 8 bytes past it) and the spec area. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_heap_size(const shmalloc_heap *h);
/* 1 when p lies in [base, base + shmalloc_heap_size). */
SHMALLOC_DEF SHMALLOC_API int shmalloc_heap_contains(const shmalloc_heap *h, const void *p);

/* This PE's figures, the ones an out-of-memory report gives: a malloc of
   n bytes succeeds without growing exactly when n <= largest_request. */
typedef struct shmalloc_info {
    size_t heap_size;       /* bytes of the blocks now, headers included */
    size_t heap_max;        /* bytes they may grow to (SHMALLOC_HEAP_MAX);
                               heap_size when the heap cannot grow */
    size_t in_use;          /* bytes in used blocks, headers included */
    size_t free;            /* heap_size - in_use */
    size_t largest_free;    /* bytes of the largest free block, header included */
    size_t largest_request; /* the largest malloc that fits now: 0 when none */
    size_t used_blocks;     /* blocks allocated */
    size_t failures;        /* allocations this PE could not serve for lack of room */
    size_t released;        /* blocks this PE released (shmalloc_heap_free_deferred), not yet freed */
    size_t drained;         /* blocks freed by drains so far */
    size_t drain_rounds;    /* all-reduce rounds the drains made beyond their calls' own */
} shmalloc_info;
/* Not collective.  0 with *out filled, or -1 when h is NULL. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_heap_info(shmalloc_heap *h, shmalloc_info *out);

/* >> spaces ----------------------------------------------------------------
   A space is a heap over a team: a transport's team member gives the
   child transport (">> transport"), and the heap is made over it, its
   collective calls made by the team's PEs alone, with every guarantee a
   heap gives, offsets the same from the space's base on every member.  A
   space is joined to its PE's world heap, so that a call given only a
   pointer (shmem_free, shmem_realloc, shmemx_free_deferred) finds the
   heap that holds it, in O(log spaces).  The transport maps a space's
   memory and makes puts and gets reach it. */
/* Collective over the team's PEs only: a heap in mem, bytes (as
   shmalloc_heap_create_with) over world's transport's team `team`,
   joined to world.  NULL on failure, with *err set: SHMEMX_MALLOC_NO_TEAMS
   (world's transport has no team member), _NOT_MEMBER (this PE is not in
   the team), or what shmalloc_heap_create_with gives, on every member. */
SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_space_create(shmalloc_heap *world, const void *team, void *mem,
                                                               size_t bytes, const shmalloc_heap_config *config,
                                                               long *err);
#define SHMALLOC_SPACE_FREE_LIVE 1L /* shmalloc_space_destroy frees the live blocks (named in debug mode) */
/* Collective over the space's team.  With live blocks on a member and
   no SHMALLOC_SPACE_FREE_LIVE: SHMEMX_MALLOC_SPACE_BUSY on every member
   and nothing changes.  0: the space is gone (and its team's child
   released); then the caller unmaps its memory.  A space whose team was
   destroyed is destroyed on this PE alone. */
SHMALLOC_DEF SHMALLOC_API long shmalloc_space_destroy(shmalloc_heap *space, long flags);
/* The heap that holds p: world, one of its spaces, or NULL.  Not
   collective; O(log spaces). */
SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_of(shmalloc_heap *world, const void *p);
/* A space's team handle; NULL for a world heap (or NULL). */
SHMALLOC_DEF SHMALLOC_API const void *shmalloc_space_team(const shmalloc_heap *h);
/* The user pointer of the heap's transport: a space's child's. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_user(const shmalloc_heap *h);
/* A transport's team destroy calls it: the team's spaces of world fail
   every call with SHMEMX_MALLOC_TEAM_DESTROYED, naming the space, until
   shmalloc_space_destroy. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_space_team_destroyed(shmalloc_heap *world, const void *team);

/* >> threads ----------------------------------------------------------------
   The current heap is per thread, falling back to a process-wide one:
   a transport whose PEs are processes calls shmalloc_set_process_heap once;
   one whose PEs are threads calls shmalloc_set_current in each PE thread
   (and a thread a PE starts calls it with its parent's shmalloc_current()).
   With the transport's lock and unlock, several threads of one PE may call
   the heap at once; collective calls keep OpenSHMEM's rule of one thread
   per collective at a time.  Once destroyed, a heap is no thread's current
   heap and not the process heap (no thread may call it meanwhile). */
SHMALLOC_DEF SHMALLOC_API void shmalloc_set_current(shmalloc_heap *h);
SHMALLOC_DEF SHMALLOC_API void shmalloc_set_process_heap(shmalloc_heap *h);
SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_current(void);

/* >> environment ------------------------------------------------------------
   Every environment variable of shmalloc and its transports is one entry
   of one table (shmalloc_options): the heap's own rows here, and those
   each layer adds with shmalloc_options_add (the mapping its huge pages,
   each transport its own).  The table is read at start-up by
   shmalloc_options_read, which checks each value by its kind and refuses
   a bad one with a message naming the variable, the value and what is
   accepted.  A transport reads the table once and gives the heap what it
   needs (shmalloc_heap_config); the heap itself reads no variable. */
enum {
    SHMALLOC_OPT_HEAP_SIZE,          /* SHMEM_SYMMETRIC_HEAP_SIZE and its older names */
    SHMALLOC_OPT_HEAP_MAX,           /* SHMALLOC_HEAP_MAX */
    SHMALLOC_OPT_DEBUG,              /* SHMALLOC_DEBUG: debug mode */
    SHMALLOC_OPT_SHMEM_VERSION,      /* SHMEM_VERSION (OpenSHMEM's): print the version at start-up */
    SHMALLOC_OPT_SHMEM_INFO,         /* SHMEM_INFO (OpenSHMEM's): print the variables at start-up */
    SHMALLOC_OPT_METADATA,           /* SHMALLOC_METADATA: inline or separate (shmalloc_heap_config) */
    SHMALLOC_OPT_CORE_COUNT          /* the heap's own rows; each layer's follow (shmalloc_options_add) */
};
#define SHMALLOC_OPT_MAX 32          /* rows in all */
/* How a value is checked: each kind, what `value` then holds, and what a
   bad value is told it is not and what is accepted (%s: the largest heap,
   "64T").  The one table of kinds: SHMALLOC_KIND_SIZE, ... */
#define SHMALLOC_OPTION_KINDS(X) \
    X(SIZE, "a heap size", /* "512M", "1.5G", "4096": bytes */ \
      ": expected a positive number, decimals allowed, with an optional K, M, G or T suffix (powers of 1024), " \
      "at most %s, e.g. 512M or 1.5G") \
    X(SIZE_OR_OFF, "a heap size", /* a size, or 0 (or empty): 0 */ \
      ": expected 0 (no growth) or a size such as 64G, with an optional K, M, G or T suffix (powers of 1024), " \
      "at most %s") \
    X(SECONDS, "a timeout", ": expected a whole number of seconds from 1 to 1000000") \
    X(SWITCH, "a switch", ": expected 0 (off) or 1 to 9 (on)") /* 0 (or empty): 0; 1 to 9: 1 */ \
    X(BIT, "0 or 1", "") \
    X(YES_NO, "a boolean", ": expected 1/0, y/n, yes/no, on/off or true/false") /* SOS's; empty: no */ \
    X(WORD, "a word", "") /* text its reader checks (e.g. a huge page size the kernel has) */ \
    X(METADATA, "a metadata placement", /* SHMALLOC_METADATA_*; empty: inline */ \
      ": expected inline (block headers in the heap's memory) or separate (none there)")
#define SHMALLOC_KIND_ID(kind, what, expected) SHMALLOC_KIND_##kind,
enum { SHMALLOC_OPTION_KINDS(SHMALLOC_KIND_ID) SHMALLOC_KIND_COUNT };
typedef struct shmalloc_option {
    const char *name;     /* the variable */
    const char *alias[2]; /* read in turn when name is unset (older names, other runtimes'), or NULL */
    int kind;             /* SHMALLOC_KIND_* */
    const char *fallback; /* the value when none of them is set */
    const char *meaning;  /* one line, as the README's tables give it */
    /* what shmalloc_options_read found: */
    const char *source;   /* the variable the value came from; NULL: the fallback; "program": set */
    const char *text;     /* the value as it reads */
    uint64_t value;       /* as the kind says */
} shmalloc_option;

/* The table: shmalloc_option_count() entries, the heap's own first
   (SHMALLOC_OPT_*), then those of each layer in the order they were
   added. */
SHMALLOC_DEF SHMALLOC_API const shmalloc_option *shmalloc_options(void);
SHMALLOC_DEF SHMALLOC_API int shmalloc_option_count(void);
/* The id of the entry whose name (not alias) is `name`, or -1. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_option_find(const char *name);
/* A layer's rows (name, alias, kind, fallback, meaning; the rest is
   ignored) join the table: read, checked, listed by SHMEM_INFO and known
   to the near-miss check like the heap's own.  Returns the id of the
   first, the rest following in order; rows whose first name is already
   there are not added again, and the earlier id is returned; -1 when the
   table has no room (SHMALLOC_OPT_MAX in all).  A transport adds its own
   and its layers' rows before it reads the table.
   Not thread-safe: start-up only. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_options_add(const shmalloc_option *rows, int count);
/* Reads every entry: 0, or -1 after a message for each bad value (each
   other entry is still read).  env (environ, or NULL) is searched for
   SHMALLOC_* variables the table lacks (SHMALLOC_TEST_* are the test
   suite's own) and for near misses of any entry's names (an edit per 8
   characters: SHMEM_SYMMETRIC_HEAP_SZE), each reported once per process
   with the nearest name.
   Not thread-safe: a transport calls it at start-up, before PEs run. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_options_read(char *const *env);
/* The check of env that shmalloc_options_read makes, alone: a transport
   whose PEs are processes reads the table with NULL and calls this on one
   PE, npes the job's PEs, which the report names (npes 1: nothing). */
SHMALLOC_DEF SHMALLOC_API void shmalloc_options_report_unknown(char *const *env, int npes);
/* Reads one entry again: 0, or -1 after its message. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_option_read(int id);
/* The program's own value for an entry, checked as a variable's would be
   (0, or -1 after a message); reads leave it until it is set to NULL,
   which hands the entry back to the environment.  The table keeps the
   pointer: the text must outlive the entry's use. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_option_set(int id, const char *text);
/* Parses "512M", "1.5g", "4096", ... (K/M/G/T, powers of 1024).  Returns 0
   and sets *out on success, -1 on a bad value (empty, not a number, unknown
   suffix, zero, larger than 2^SHMALLOC_MAX_LOG2). */
SHMALLOC_DEF SHMALLOC_API int shmalloc_parse_size(const char *text, size_t *out);
/* A heap's config as the table says (as shmalloc_options_read last found
   it), for a runtime to create its heap with: nominal as given, debug and
   metadata from SHMALLOC_DEBUG and SHMALLOC_METADATA, and size_var the
   variable in force for its size (SHMALLOC_HEAP_MAX's when growable),
   NULL when the program set it or the table was never read. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_options_heap_config(shmalloc_heap_config *config, size_t nominal,
                                                            int growable);
/* value for a message, between two `quote`s, into buf (n bytes, 96 are
   enough): as it is up to 64 characters, else its first 40, "..." and its
   length, so that what the message says after it is never cut.  Every
   message that quotes a variable's value quotes it so.  Returns buf. */
SHMALLOC_DEF SHMALLOC_API const char *shmalloc_option_quote(char *buf, size_t n, const char *value, const char *quote);
/* What SHMEM_VERSION and SHMEM_INFO ask for, to stream 1: a transport
   calls it once start-up is done, on the PE that prints (pe 0; others
   print nothing).  SHMEM_INFO lists every entry of the table: the
   heap's and those the running transport added. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_options_announce(int pe);

/* >> shmem names (SHMALLOC(3), OpenSHMEM 1.5) ------------------------------ */
#if !defined(SHMALLOC_NO_SHMEM_NAMES)
/* Hints of shmem_malloc_with_hints; unknown bits are ignored.  Left out
   with the names: a runtime's own shmem.h defines them in its own way. */
#  define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#  define SHMEM_MALLOC_SIGNAL_REMOTE  2L
#  define SHMEMX_MALLOC_NO_BARRIER    (1L << 2)
#  if defined(SHMALLOC_STATIC) && (defined(__GNUC__) || defined(__clang__))
static SHMALLOC_TLS long malloc_error __attribute__((unused));
#  elif defined(SHMALLOC_STATIC)
static SHMALLOC_TLS long malloc_error;
#  else
extern SHMALLOC_TLS long malloc_error;
#  endif
SHMALLOC_DEF SHMALLOC_API void *shmem_malloc(size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmalloc(size_t size);
SHMALLOC_DEF SHMALLOC_API void shmem_free(void *ptr);
SHMALLOC_DEF SHMALLOC_API void shfree(void *ptr);
SHMALLOC_DEF SHMALLOC_API void *shmem_realloc(void *ptr, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shrealloc(void *ptr, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmem_align(size_t alignment, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmemalign(size_t alignment, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmem_calloc(size_t count, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmem_malloc_with_hints(size_t size, long hints);
SHMALLOC_DEF SHMALLOC_API void *shsbreak(ptrdiff_t increment);
SHMALLOC_DEF SHMALLOC_API int shmalloc_check(int level);
SHMALLOC_DEF SHMALLOC_API void shmalloc_stats(int level);
/* shmalloc_heap_info of the current heap. */
SHMALLOC_DEF SHMALLOC_API int shmemx_heap_info(shmalloc_info *info);
SHMALLOC_DEF SHMALLOC_API void shmemx_free_deferred(void *ptr);
SHMALLOC_DEF SHMALLOC_API void shmemx_free_deferred_drain(void);
/* Spaces (">> spaces"): a transport's shmemx_space_create(team, config,
   &space) makes one, collective over the team's PEs.  The current heap
   is the space of SHMEM_TEAM_WORLD.  Each call below is collective over
   the space's team and keeps every promise of its shmem_ namesake;
   shmem_free, shmem_realloc and shmemx_free_deferred take a space's
   block as they take a world block.  A PE whose current heap the space
   is not joined to gets SHMEMX_MALLOC_NOT_MEMBER. */
typedef shmalloc_heap *shmemx_space_t;
typedef struct shmemx_space_config_t {
    size_t size;   /* nominal bytes; 0: SHMEM_SYMMETRIC_HEAP_SIZE's value */
    size_t max;    /* bytes it may grow to; 0: it does not grow */
    int metadata;  /* SHMALLOC_METADATA_INLINE or _SEPARATE */
    void *mem;     /* memory the caller supplies (NULL: the transport maps it) ... */
    size_t bytes;  /* ... and its bytes, shmalloc_heap_bytes(max, or size) */
    const shmalloc_memops *memops; /* separate metadata: how mem is written (a device's fill and copy);
                                      NULL: the transport's */
} shmemx_space_config_t;
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_malloc(shmemx_space_t space, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_calloc(shmemx_space_t space, size_t count, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_align(shmemx_space_t space, size_t alignment, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_realloc(shmemx_space_t space, void *ptr, size_t size);
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_malloc_with_hints(shmemx_space_t space, size_t size, long hints);
/* The space that holds ptr (the current heap for a world block), or NULL. */
SHMALLOC_DEF SHMALLOC_API shmemx_space_t shmemx_space_of(const void *ptr);
#endif

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_H_INCLUDED */

/* Each message's text as a static array, which gcc and clang check as a
   printf format where SHM__MSG(ID) passes it with its ID: for the
   implementation, and for transports, which define SHMALLOC_MESSAGE_FORMATS.
   Outside the guard, so that an earlier include without them does not hide it. */
#if (defined(SHMALLOC_IMPLEMENTATION) || defined(SHMALLOC_MESSAGE_FORMATS)) && !defined(SHM__MSG)
SHMALLOC_MESSAGES(SHMALLOC_MESSAGE_TEXT)
#  define SHM__MSG(id) SHMALLOC_MSG_##id, shm__text_##id
#endif

/* >> implementation ----------------------------------------------------------
   Expanded once, where SHMALLOC_IMPLEMENTATION is defined: each part's code
   follows under ">> name: implementation", in the declarations' order. */
#if defined(SHMALLOC_IMPLEMENTATION) && !defined(SHMALLOC__IMPLEMENTED)
#define SHMALLOC__IMPLEMENTED

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#  include <sched.h>
#endif

#if !defined(SHMALLOC_MEMCPY)
#  define SHMALLOC_MEMCPY(d, s, n) memcpy((d), (s), (n))
#endif
#if !defined(SHMALLOC_MEMMOVE)
#  define SHMALLOC_MEMMOVE(d, s, n) memmove((d), (s), (n))
#endif
#if !defined(SHMALLOC_MEMSET)
#  define SHMALLOC_MEMSET(d, c, n) memset((d), (c), (n))
#endif
#if defined(SHMALLOC_MALLOC) != defined(SHMALLOC_FREE)
#  error "define SHMALLOC_MALLOC and SHMALLOC_FREE together, or neither: memory from one goes back to the other"
#endif
#if !defined(SHMALLOC_MALLOC)
#  define SHMALLOC_MALLOC(n) malloc(n)
#  define SHMALLOC_FREE(p) free(p)
#endif
#if defined(SHMALLOC_DEBUG)
#  error "SHMALLOC_DEBUG is the environment's switch for debug mode; the compile-time level is SHMALLOC_DEBUG_LEVEL"
#endif
#if !defined(SHMALLOC_DEBUG_LEVEL)
#  define SHMALLOC_DEBUG_LEVEL 1 /* bad pointers are always caught: the start map costs nothing extra */
#endif
#if !defined(SHMALLOC_ASSERT)
#  include <assert.h>
#  define SHMALLOC_ASSERT(c) assert(c)
#endif
#if SHMALLOC_DEBUG_LEVEL >= 2
#  define SHM__ASSERT(c) SHMALLOC_ASSERT(c)
#else
#  define SHM__ASSERT(c) ((void)0)
#endif

/* Poisoning (compile with -DSHMALLOC_POISON): the bytes of free blocks and
   the slack after each request are marked inaccessible, and every block
   gets a 16-byte red zone, so a program's use after free or overflow on a
   symmetric block is reported: by AddressSanitizer in an ASan build, else
   by Valgrind's memcheck (needs valgrind/memcheck.h). */
#if defined(SHMALLOC_POISON) && defined(__SANITIZE_ADDRESS__)
#  define SHMALLOC_ASAN 1
#elif defined(SHMALLOC_POISON) && defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define SHMALLOC_ASAN 1
#  endif
#endif
#if defined(SHMALLOC_POISON) && !defined(SHMALLOC_ASAN)
#  define SHMALLOC_VALGRIND 1
#endif
#if defined(SHMALLOC_ASAN)
#  include <sanitizer/asan_interface.h>
#  define SHM__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#  define SHM__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#  define SHM__IS_POISONED(p) (__asan_region_is_poisoned((void *)(uintptr_t)(p), 8) != NULL) /* a word */
#  define SHM__REDZONE 16
#elif defined(SHMALLOC_VALGRIND)
#  include <valgrind/memcheck.h>
#  define SHM__POISON(p, n) ((void)VALGRIND_MAKE_MEM_NOACCESS((p), (n)))
#  define SHM__UNPOISON(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#  define SHM__IS_POISONED(p) 0
#  define SHM__REDZONE 16
#else
#  define SHM__POISON(p, n) ((void)0)
#  define SHM__UNPOISON(p, n) ((void)0)
#  define SHM__IS_POISONED(p) 0
#  define SHM__REDZONE 0
#endif

typedef char shm__needs_64bit[(sizeof(void *) == 8 && sizeof(size_t) == 8) ? 1 : -1];
typedef char shm__needs_binary64[(sizeof(double) == 8 && DBL_MANT_DIG == 53 && FLT_RADIX == 2) ? 1 : -1]; /* the size classes */

#if defined(__GNUC__) || defined(__clang__)
#  define SHM__LIKELY(c) __builtin_expect(!!(c), 1)
#  define SHM__UNLIKELY(c) __builtin_expect(!!(c), 0)
#  define SHM__NOINLINE __attribute__((noinline))
#  define SHM__FLATTEN __attribute__((flatten)) /* every call inside inlined, where it can be */
#  define SHM__INLINE static inline __attribute__((always_inline))
#else
#  define SHM__INLINE static inline
#  define SHM__LIKELY(c) (c)
#  define SHM__UNLIKELY(c) (c)
#  define SHM__NOINLINE
#  define SHM__FLATTEN
#endif
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#  define SHM__RACY __attribute__((no_sanitize("address", "thread"))) /* reads that race by design */
#else
#  define SHM__RACY
#endif
/* >> output: implementation ------------------------------------------------ */
static void shm__default_output(void *user, int stream, int id, const char *text)
{
    (void)user, (void)id;
    fputs(text, stream == 1 ? stdout : stderr); /* the default output */
}

static shmalloc_output_fn shm__output = shm__default_output;
static void *shm__output_user;

SHMALLOC_DEF SHMALLOC_API void shmalloc_set_output(shmalloc_output_fn fn, void *user)
{
    shm__output = fn ? fn : shm__default_output;
    shm__output_user = fn ? user : NULL;
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_print(int stream, int id, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(line, sizeof line, fmt, ap) >= (int)sizeof line)
        memcpy(line + sizeof line - 5, "...\n", 5); /* cut: still one whole line */
    va_end(ap);
    shm__output(shm__output_user, stream, id, line);
}

/* >> messages: implementation ---------------------------------------------- */
#define SHM__STR(x) #x
#define SHM__XSTR(x) SHM__STR(x)
static struct {
    const shmalloc_message *rows;
    int count, first;
} shm__layers[SHMALLOC_MESSAGE_TABLES];
static int shm__layer_count, shm__next_id = SHMALLOC_MSG_COUNT;

SHMALLOC_DEF SHMALLOC_API const char *shmalloc_message_name(int id)
{
#define SHM__NAME(id, text) #id,
    static const char *const names[] = {SHMALLOC_MESSAGES(SHM__NAME)};
#undef SHM__NAME
    int k;
    if (id >= 0 && id < SHMALLOC_MSG_COUNT) return names[id];
    for (k = 0; k < shm__layer_count; k++)
        if (id >= shm__layers[k].first && id - shm__layers[k].first < shm__layers[k].count)
            return shm__layers[k].rows[id - shm__layers[k].first].name;
    return NULL;
}

/* The ID named `name`, or -1: what keeps every ID's name its own. */
static int shm__message_named(const char *name)
{
    int id;
    for (id = 0; id < shm__next_id; id++)
        if (!strcmp(shmalloc_message_name(id), name)) return id;
    return -1;
}

/* Why rows cannot join, or NULL; *first is set when they are there already. */
static const char *shm__messages_refused(const shmalloc_message *rows, int count, int *first)
{
    int k, id;
    if (!rows) return "the rows are NULL";
    if (count < 1 || count > SHMALLOC_MESSAGE_ROWS_MAX)
        return "count must be 1.." SHM__XSTR(SHMALLOC_MESSAGE_ROWS_MAX) " (SHMALLOC_MESSAGE_ROWS_MAX)";
    for (k = 0; k < count; k++)
        if (!rows[k].name || !rows[k].text) return "a row has no name or no text";
    if ((id = shm__message_named(rows[0].name)) >= SHMALLOC_MSG_COUNT) {
        for (k = 0; k < count && id + k < shm__next_id; k++) {
            const char *name = shmalloc_message_name(id + k);
            if (!name || strcmp(name, rows[k].name)) break;
        }
        if (k == count) return *first = id, NULL;
    }
    for (k = 0; k < count; k++)
        if (shm__message_named(rows[k].name) >= 0) return "a row's name is another message's: each ID has its own name";
    if (shm__layer_count == SHMALLOC_MESSAGE_TABLES)
        return "the process holds " SHM__XSTR(SHMALLOC_MESSAGE_TABLES) " tables already (SHMALLOC_MESSAGE_TABLES)";
    return NULL;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_messages_add(const shmalloc_message *rows, int count)
{
    int first = -1;
    const char *why = shm__messages_refused(rows, count, &first);
    if (why) {
        shmalloc_print(2, SHM__MSG(MESSAGES_BAD_TABLE), (const void *)rows, count, why);
        return -1;
    }
    if (first >= 0) return first;
    shm__layers[shm__layer_count].rows = rows;
    shm__layers[shm__layer_count].count = count;
    shm__layers[shm__layer_count++].first = first = shm__next_id;
    shm__next_id += count;
    return first;
}

SHMALLOC_DEF SHMALLOC_API const char *shmalloc_version(void)
{
    return SHM__XSTR(SHMALLOC_VERSION_MAJOR) "." SHM__XSTR(SHMALLOC_VERSION_MINOR) "." SHM__XSTR(SHMALLOC_VERSION_PATCH);
}

SHMALLOC_DEF SHMALLOC_API const char *shmalloc_strerror(long code)
{
    switch (code) {
    case SHMEM_MALLOC_OK: return "no error";
    case SHMEM_MALLOC_BAD_SIZE: return "size too large, or count * size overflows";
    case SHMEM_MALLOC_FAIL: return "no free block is large enough";
    case SHMEM_MALLOC_NOT_IN_SYMM_HEAP: return "pointer is not in the symmetric heap";
    case SHMEM_MALLOC_ALREADY_FREE: return "block is already free";
    case SHMEM_MALLOC_NOT_ALIGNED: return "pointer is not the start of a block";
    case SHMEM_MALLOC_SYMMSIZE_FAILED: return "PEs passed different arguments";
    case SHMEM_MALLOC_MEMALIGN_FAILED: return "alignment is 0, not a power of two, or too large";
    case SHMEM_MALLOC_REALLOC_FAILED: return "no room to resize the block";
    case SHMEMX_MALLOC_NO_HEAP: return "no symmetric heap (before shmem_init, or after shmem_finalize)";
    case SHMEMX_MALLOC_BAD_TRANSPORT:
        return "the transport lacks a barrier, its pe and npes are wrong, or one of its members failed (the line "
               "printed names it)";
    case SHMEMX_MALLOC_BAD_MEMORY: return "the heap's memory is not 16-byte aligned, or too small or too large";
    case SHMEMX_MALLOC_REGISTER_FAILED: return "the transport could not register the heap's memory";
    case SHMEMX_MALLOC_CORRUPT_HEAP: return "a block's header was overwritten: a write past the end of a block?";
    case SHMEMX_MALLOC_NO_MEMOPS:
        return "the heap keeps its metadata apart and writes its memory only through a fill and copy, which it "
               "lacks: give them in shmalloc_heap_config's memops (a space's config's) or the shmalloc_transport, "
               "or make the heap with inline metadata (SHMALLOC_METADATA=inline, or SHMALLOC_METADATA_INLINE in "
               "shmalloc_heap_config)";
    case SHMEMX_MALLOC_SPACE_BUSY: return "the space still has live blocks (free them, or pass SHMALLOC_SPACE_FREE_LIVE)";
    case SHMEMX_MALLOC_NOT_MEMBER: return "this PE is not in the space's team";
    case SHMEMX_MALLOC_NO_TEAMS: return "the transport cannot make teams (it has no team member)";
    case SHMEMX_MALLOC_TEAM_DESTROYED: return "the space's team was destroyed before the space";
    default: return "unknown error code";
    }
}

/* >> private memory: implementation ----------------------------------------
   Every byte of it through the hook pair. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_mem_alloc(size_t count, size_t size)
{
    void *p;
    if (size && count > SIZE_MAX / size) return NULL;
    p = SHMALLOC_MALLOC(count * size);
    if (p) SHMALLOC_MEMSET(p, 0, count * size);
    return p;
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_mem_free(void *p)
{
    if (p) SHMALLOC_FREE(p);
}

/* >> tlsf: implementation --------------------------------------------------
   Two-level segregated fit (Masmano et al., ECRTS 2004).  A block is
   described by a 16-byte header just before its user pointer:

       prev_phys  the previous block, valid only while that block is free
                  (it is the last word of the previous block's payload)
       header     size | flags: bit 0 this block is free, bit 1 the
                  previous block is free; bits 58..63 the log2 of the
                  alignment a used block was allocated with

   The size is the distance to the next block, so a used block's payload
   runs to the next block's header word: usable = size - 8.  Free blocks
   keep their list links in the payload.  A zero-size used "sentinel" block,
   whose header has bit 2 (END) set, ends the chain.  The last block, when
   it is free (the top, bit 3 set: TOP), is in no list: a request that no
   listed block serves is cut from it, and a block freed next to it joins
   it, with no list work, and the heap reaches no higher than it must.  The
   two bits tell a free's or a resize's neighbour apart in the header word
   it has read anyway.  A bitmap with one bit per 16 bytes marks where used
   blocks start, so every free and realloc pointer is checked exactly,
   without trusting bytes the user may have overwritten; and the size in
   its header, which a write past the end of the block before it reaches,
   is followed only to a start the map records, the sentinel, or a free
   block linked back to it (shm__damaged).  It is zeroed as
   the high-water mark rises, so a heap's size costs nothing up front. */
#define SHM__FREE ((size_t)1)
#define SHM__PREV_FREE ((size_t)2)
#define SHM__END ((size_t)4) /* the sentinel's header, and no block's */
#define SHM__TOP ((size_t)8) /* the top's header, and no other block's */
#define SHM__ALIGN_SHIFT 58
#define SHM__ALIGN_MASK (~(size_t)0 << SHM__ALIGN_SHIFT)
#define SHM__SIZE_MASK (~SHM__ALIGN_MASK & ~(size_t)15)
#define SHM__MIN_LOG2 5 /* first-level class 0 holds the sizes from 2^this */
#define SHM__MIN_BLOCK ((size_t)1 << SHM__MIN_LOG2)
#define SHM__SL_COUNT (1u << SHMALLOC_SL_LOG2)
/* One first-level class per power of two from the minimum block to
   2^(SHMALLOC_MAX_LOG2 + 1): room for a full-size heap's overhead. */
#define SHM__FL_COUNT (SHMALLOC_MAX_LOG2 + 2 - SHM__MIN_LOG2)
#define SHM__MAX_ALIGN ((size_t)1 << SHMALLOC_MAX_LOG2)

typedef struct shm__block {
    struct shm__block *prev_phys;
    size_t header;
    struct shm__block *next_free; /* free blocks only: the payload starts here */
    struct shm__block *prev_free;
} shm__block;

struct shmalloc_tlsf {
    char *base;            /* first block; block offsets are from here */
    shm__block *sentinel;  /* zero-size used block at the end of the blocks */
    char *limit;           /* end of the block space; [sentinel + 16, limit)
                              is the spec area that shmalloc_tlsf_sbreak made */
    char *end;             /* how far shmalloc_tlsf_grow may move limit */
    uint64_t *start_map;   /* bit i: a used block starts at base + 16 i */
    size_t mapped_bits;    /* map bits (block offsets / 16) below which the map is
                              zeroed and below the sentinel: no block ever started above */
    shm__block *mapped_end; /* the block at mapped_bits: every block but the sentinel
                              starts below it, the top too (it starts below the high-water mark) */
    size_t map_clean;      /* bytes of the start map zeroed so far */
    uint64_t *large;       /* the large marks, after the start map */
    size_t large_words;    /* their words (level 0) over the whole reservation */
    size_t capacity;       /* bytes from base to the sentinel */
    size_t malloc_limit;   /* malloc(n) can succeed only for 1 <= n <= this: shm__set_capacity */
    size_t high_water;     /* the counters' other figures are counted on demand */
    uint64_t fl_bitmap;
    uint32_t sl_bitmap[SHM__FL_COUNT];
    unsigned fl_count;     /* first-level classes this region can hold */
    struct shm__records *records; /* separate metadata (shmalloc_tlsf_create_separate), else NULL */
    /* circular free lists, each with a sentinel node of size 0: unlinking
       needs no list index and no NULL checks */
    shm__block lists[][SHM__SL_COUNT];
};

SHM__INLINE unsigned shm__fls(size_t x) /* index of the highest set bit; x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_clzll((unsigned long long)x) ^ 63u; /* one bsr */
#else
    unsigned i = 0;
    while (x >>= 1) i++;
    return i;
#endif
}

SHM__INLINE unsigned shm__ctz(uint64_t x) /* index of the lowest set bit; x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll((unsigned long long)x);
#else
    unsigned i = 0;
    while (!(x & 1)) { x >>= 1; i++; }
    return i;
#endif
}

/* ---- where used blocks start: a map with a bit per 16 bytes of blocks,
   which free checks a pointer against, and beside it the large marks, a
   bit per SHM__LARGE bytes where a used block of that size or more starts
   (one at most).  The block that holds any byte is then found in a fixed
   number of words, whatever the heap's size (shm__holder_bit): a block
   smaller than SHM__LARGE starts in the map's last SHM__LARGE bytes below
   the byte, a larger one at the last start of the nearest large mark.
   Only large blocks change the marks, so the common paths pay one test. */
#define SHM__LARGE_LOG2 16
#define SHM__LARGE ((size_t)1 << SHM__LARGE_LOG2)
#define SHM__GRANULE_BITS (SHM__LARGE / 16) /* start-map bits a large mark spans */
#define SHM__MARK_LEVELS 12                 /* 64-bit offsets over SHM__LARGE, 6 bits a level */

/* Did a block resized between `small` and `big` bytes, one way or the
   other, cross SHM__LARGE (so its mark flips)? */
SHM__INLINE int shm__crossed_large(size_t small, size_t big) { return big >= SHM__LARGE && small < SHM__LARGE; }

/* The marks have a summary above them, one bit per word of the level below,
   set while that word is not zero, up to a level of one word: the nearest
   mark below any bit is a fixed number of words away.  Level k + 1 follows
   level k in memory; `words` words of marks (level 0) take
   shm__marks_words(words) in all.  Only the first `valid` words of level 0
   are read, and the words above them. */
static size_t shm__marks_words(size_t words)
{
    size_t total = words;
    for (; words > 1; total += words) words = (words + 63) / 64;
    return total;
}

SHM__INLINE void shm__marks_flip(uint64_t *m, size_t words, size_t bit)
{
    uint64_t one, old;
    for (; words > 1; m += words, words = (words + 63) / 64, bit >>= 6) {
        one = (uint64_t)1 << (bit & 63);
        old = m[bit >> 6];
        m[bit >> 6] = old ^ one;
        if (old & ~one) return; /* that word was and stays non-zero: the levels above hold */
    }
    m[0] ^= (uint64_t)1 << bit;
}

/* The summary over the first `valid` words, recomputed. */
static void shm__marks_rebuild(uint64_t *m, size_t words, size_t valid)
{
    size_t j;
    for (; words > 1; m += words, words = (words + 63) / 64, valid = (valid + 63) / 64) {
        for (j = 0; j < (valid + 63) / 64; j++) m[words + j] = 0;
        for (j = 0; j < valid; j++) m[words + (j >> 6)] |= (uint64_t)(m[j] != 0) << (j & 63);
    }
}

/* Set bits in `words` words. */
static size_t shm__bits(const uint64_t *m, size_t words)
{
    size_t n = 0, i;
    uint64_t w;
    for (i = 0; i < words; i++)
        for (w = m[i]; w; w &= w - 1) n++;
    return n;
}

/* Is the large mark of the block at `off` set? */
SHM__INLINE int shm__marked_large(const uint64_t *large, size_t off)
{
    return (int)(large[off >> SHM__LARGE_LOG2 >> 6] >> (off >> SHM__LARGE_LOG2 & 63) & 1);
}

/* Does the summary over the first `valid` words match them? */
static int shm__marks_sound(const uint64_t *m, size_t words, size_t valid)
{
    size_t j;
    for (; words > 1; m += words, words = (words + 63) / 64, valid = (valid + 63) / 64)
        for (j = 0; j < valid; j++)
            if ((m[words + (j >> 6)] >> (j & 63) & 1) != (m[j] != 0)) return 0;
    return 1;
}

/* The highest mark at or below `bit`, or SIZE_MAX: up the levels while
   the word holds no mark at or below, then down along set bits.  A word
   that reads zero on the way down (a racing reader) gives SIZE_MAX. */
static SHM__RACY size_t shm__marks_below(const uint64_t *m, size_t words, size_t valid, size_t bit)
{
    const uint64_t *at[SHM__MARK_LEVELS];
    size_t lim[SHM__MARK_LEVELS], i = bit;
    unsigned k = 0;
    uint64_t w;
    at[0] = m;
    lim[0] = valid;
    for (;; k++) {
        if (i >> 6 >= lim[k]) return SIZE_MAX;
        if ((w = at[k][i >> 6] & (~(uint64_t)0 >> (63 - (i & 63)))) != 0) break;
        if (words == 1 || i < 64) return SIZE_MAX;
        at[k + 1] = at[k] + words;
        words = (words + 63) / 64;
        lim[k + 1] = (lim[k] + 63) / 64;
        i = (i >> 6) - 1;
    }
    i = (i & ~(size_t)63) + shm__fls(w);
    while (k--) {
        if (i >= lim[k] || !(w = at[k][i])) return SIZE_MAX;
        i = i * 64 + shm__fls(w);
    }
    return i;
}

/* The last marked start bit at or below map bit `bit` (a map bit per
   1 << shift bytes) of a block that may hold the bytes of that bit, or
   SIZE_MAX: the last start in the SHM__LARGE bytes up to it; past them
   only a large block can, and it is the last start below the nearest
   large mark.  `valid` words of the map, `large_valid` of the
   large marks' level 0, may be read. */
static SHM__RACY size_t shm__holder_bit(const uint64_t *map, size_t valid, const uint64_t *large, size_t large_words,
                                        size_t large_valid, size_t bit, unsigned shift)
{
    size_t span = SHM__LARGE >> shift, lo = bit >= span ? bit - span + 1 : 0, i = bit, g;
    uint64_t w;
    if (bit >> 6 >= valid) return SIZE_MAX;
    for (;; i = (i & ~(size_t)63) - 1) {
        if ((w = map[i >> 6] & (~(uint64_t)0 >> (63 - (i & 63)))) != 0) {
            i = (i & ~(size_t)63) + shm__fls(w);
            if (i >= lo) return i;
            break;
        }
        if (i >> 6 == lo >> 6) break;
    }
    if (bit < span) return SIZE_MAX;
    g = shm__marks_below(large, large_words, large_valid, (bit - span) / span);
    if (g == SIZE_MAX) return SIZE_MAX;
    for (i = (g + 1) * (span / 64); i-- > g * (span / 64);)
        if (i < valid && map[i]) return i * 64 + shm__fls(map[i]);
    return SIZE_MAX;
}

SHM__INLINE size_t shm__size(const shm__block *b) { return b->header & SHM__SIZE_MASK; }
/* A free block's size from its header word, which has no alignment bits:
   a mask that fits an instruction's immediate. */
SHM__INLINE size_t shm__free_size(size_t header) { return header & ~(size_t)15; }
SHM__INLINE shm__block *shm__at(const void *p, size_t off) { return (shm__block *)((uintptr_t)p + off); }
SHM__INLINE void *shm__user(const shm__block *b) { return (char *)(uintptr_t)b + 16; }
SHM__INLINE shm__block *shm__of_user(const void *p) { return (shm__block *)((uintptr_t)p - 16); }
SHM__INLINE size_t shm__offset(const shmalloc_tlsf *t, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)t->base);
}
SHM__INLINE size_t shm__align_of(const shm__block *b)
{
    return (size_t)1 << (b->header >> SHM__ALIGN_SHIFT);
}

/* ---- block headers: the flags are written only through these ---- */
SHM__INLINE int shm__is_free(const shm__block *b) { return (b->header & SHM__FREE) != 0; }
SHM__INLINE int shm__is_prev_free(const shm__block *b) { return (b->header & SHM__PREV_FREE) != 0; }
SHM__INLINE int shm__is_top(const shm__block *b) { return (b->header & SHM__TOP) != 0; }
/* The sentinel's previous block is free only when it is the top. */
SHM__INLINE int shm__has_top(const shmalloc_tlsf *t) { return shm__is_prev_free(t->sentinel); }

/* A listed free block: its neighbours are used, or they would have merged. */
SHM__INLINE void shm__set_free(shm__block *b, size_t size) { b->header = size | SHM__FREE; }
/* The top: the last block, free and in no list. */
SHM__INLINE void shm__set_top(shm__block *b, size_t size) { b->header = size | SHM__FREE | SHM__TOP; }
/* A used block; flags are its shm__align_bits and SHM__PREV_FREE when its previous block is free. */
SHM__INLINE void shm__set_used(shm__block *b, size_t size, size_t flags) { b->header = size | flags; }
SHM__INLINE size_t shm__align_bits(size_t align) { return (size_t)shm__fls(align) << SHM__ALIGN_SHIFT; }
/* The sentinel, its previous block used. */
SHM__INLINE void shm__set_end(shm__block *b) { b->header = SHM__END; }

/* b's previous block is now the free block prev, or is used. */
SHM__INLINE void shm__set_prev_free(shm__block *b, shm__block *prev)
{
    b->prev_phys = prev;
    b->header |= SHM__PREV_FREE;
}
SHM__INLINE void shm__set_prev_used(shm__block *b) { b->header &= ~SHM__PREV_FREE; }

/* Block size serving a request of n bytes (n <= SHMALLOC_TLSF_MAX_REQUEST): the
   payload plus the header word, rounded to 16; never below the minimum. */
SHM__INLINE size_t shm__block_size(size_t n)
{
    size_t s = (n + 8 + SHM__REDZONE + 15) & ~(size_t)15;
    return s < SHM__MIN_BLOCK ? SHM__MIN_BLOCK : s;
}

/* ---- the mapping: which list a size belongs to ----
   Mapping insert, in the TLSF paper's words: a free block of `size` bytes
   is filed in list fl/sl, where fl is the log2 of the size less
   SHM__MIN_LOG2 and sl the SHMALLOC_SL_LOG2 bits below its top bit.  It is
   defined once, as a key: the bits of the size as a double are its exponent
   (the log2, biased by 1023) and then the bits below its top bit, so
   shifted to keep SHMALLOC_SL_LOG2 of those they are fl + SHM__MIN_LOG2 +
   1023 and sl side by side (exact for sizes below 2^53, which is beyond
   every class).  Hence shm__list_key(size) == shm__list_index(fl, sl) +
   SHM__KEY_BIAS, and two sizes share a list exactly when their keys agree.
   The fast paths use the key; shm__mapping_insert splits it into fl/sl. */

/* List fl/sl's index in the one array of lists, fl_count rows of SHM__SL_COUNT. */
SHM__INLINE size_t shm__list_index(unsigned fl, unsigned sl) { return fl << SHMALLOC_SL_LOG2 | sl; }

/* The list of a free block of `size` >= SHM__MIN_BLOCK bytes, as a key. */
#define SHM__KEY_BIAS ((size_t)(1023 + SHM__MIN_LOG2) << SHMALLOC_SL_LOG2)
SHM__INLINE size_t shm__list_key(size_t size)
{
    union { double d; uint64_t u; } x;
    x.d = (double)(int64_t)size; /* signed: one instruction, and sizes are far below 2^63 */
    return (size_t)(x.u >> (52 - SHMALLOC_SL_LOG2));
}

/* The key as fl/sl.  A size below the minimum block (a region's, or a
   corrupt one) maps to first-level class 0, its bits below SHM__MIN_BLOCK's
   giving the second level. */
SHM__INLINE void shm__mapping_insert(size_t size, unsigned *fl, unsigned *sl)
{
    size_t i = shm__list_key(size < SHM__MIN_BLOCK ? size | SHM__MIN_BLOCK : size) - SHM__KEY_BIAS;
    *fl = (unsigned)(i >> SHMALLOC_SL_LOG2);
    *sl = (unsigned)i & (SHM__SL_COUNT - 1);
}

/* The sentinel node of list i (shm__list_index). */
SHM__INLINE shm__block *shm__list(const shmalloc_tlsf *t, size_t i)
{
    return (shm__block *)((uintptr_t)t + offsetof(shmalloc_tlsf, lists) + i * sizeof(shm__block));
}

/* The sentinel node of the list with key `key` (shm__list_key), in 64-bit
   arithmetic that folds the offset of the lists and the key's bias into the
   address's constant. */
SHM__INLINE shm__block *shm__list_at(const shmalloc_tlsf *t, size_t key)
{
    return (shm__block *)((uintptr_t)t + (offsetof(shmalloc_tlsf, lists) - SHM__KEY_BIAS * sizeof(shm__block)) +
                          key * sizeof(shm__block));
}

/* The sentinel node of the list of a free block of `size` bytes (>= SHM__MIN_BLOCK). */
SHM__INLINE shm__block *shm__list_for(const shmalloc_tlsf *t, size_t size)
{
    return shm__list_at(t, shm__list_key(size));
}

/* ---- free lists: circular, doubly linked, low addresses first, a bit each in the bitmaps ---- */
/* A list's sentinel node keeps its bitmap bits where a block has its
   prev_phys, fl << 32 | 1 << sl, so a list that empties or refills finds
   them in a word it has just touched.  Its header is 0, a size no request
   fits, so an empty list's head is never taken. */
SHM__INLINE void shm__list_init(shm__block *list, size_t fl, size_t sl)
{
    list->next_free = list->prev_free = list;
    list->header = 0;
    list->prev_phys = (shm__block *)(uintptr_t)(fl << 32 | (size_t)1 << sl);
}
SHM__INLINE size_t shm__list_bits(const shm__block *list) { return (size_t)(uintptr_t)list->prev_phys; }
SHM__INLINE size_t shm__bits_fl(size_t bits) { return bits >> 32; }
SHM__INLINE uint32_t shm__bits_sl(size_t bits) { return (uint32_t)bits; } /* the list's bit in sl_bitmap[fl] */

/* The bits of the list with sentinel node `list`, which was empty. */
SHM__INLINE void shm__filled(shmalloc_tlsf *t, const shm__block *list)
{
    size_t bits = shm__list_bits(list);
    t->fl_bitmap |= (uint64_t)1 << shm__bits_fl(bits);
    t->sl_bitmap[shm__bits_fl(bits)] |= shm__bits_sl(bits);
}

/* Pushes b at the head of the list with sentinel node `list`. */
SHM__INLINE void shm__push_head(shmalloc_tlsf *t, shm__block *b, shm__block *list)
{
    shm__block *head = list->next_free;
    b->next_free = head;
    head->prev_free = b; /* between the two stores to b, which are not to become one vector store */
    b->prev_free = list;
    list->next_free = b;
    if (head == list) shm__filled(t, list);
}

/* `yes` when `cond` holds, else `no`, by a conditional move: for a test
   that is a coin toss (an address against another), which a branch would
   mispredict half the time.  The hints tell each compiler the odds; clang
   also needs both values in registers first, which the empty asm does. */
SHM__INLINE shm__block *shm__pick(int cond, shm__block *yes, shm__block *no)
{
#if defined(__clang__)
    __asm__("" : "+r"(yes), "+r"(no));
    return __builtin_unpredictable(cond) ? yes : no;
#elif defined(__GNUC__) && __GNUC__ >= 9
    return __builtin_expect_with_probability(cond, 1, 0.5) ? yes : no;
#else
    return cond ? yes : no;
#endif
}

/* Files b in the list with sentinel node `list`: first when it lies below
   the head, else last, so the head, which every search takes, leans to low
   addresses and the heap's top is reached later (an empty list's sentinel,
   in the control block after the blocks, is above every block).  Freeing a
   block just taken is therefore not always the exact inverse of taking
   it: shm__untake is.  Whether b lies above the head is a coin toss, so
   b's neighbours are selected with conditional moves (shm__pick).  Small
   changes here can turn them back into a branch: read the generated code
   after one (bench/README.md, "Why the core's code looks as it does"). */
SHM__INLINE void shm__push_on(shmalloc_tlsf *t, shm__block *b, shm__block *list)
{
    shm__block *head = list->next_free, *last = list->prev_free;
    int above = b > head;
    shm__block *prev = shm__pick(above, last, list), *next = shm__pick(above, list, head);
    SHM__ASSERT(b < list);
    b->prev_free = prev;
    prev->next_free = b; /* between the two stores to b, which are not to become one vector store */
    b->next_free = next;
    next->prev_free = b;
    if (head == list) shm__filled(t, list); /* b, below the sentinel, is the head */
}


/* Files free block b, of `size` bytes, in its list. */
SHM__INLINE void shm__push_size(shmalloc_tlsf *t, shm__block *b, size_t size) { shm__push_on(t, b, shm__list_for(t, size)); }


/* The bits of the list with sentinel node `list`, which has just become empty. */
SHM__INLINE void shm__emptied(shmalloc_tlsf *t, const shm__block *list)
{
    size_t bits = shm__list_bits(list), fl = shm__bits_fl(bits);
    t->sl_bitmap[fl] &= ~shm__bits_sl(bits);
    if (!t->sl_bitmap[fl]) t->fl_bitmap &= ~((uint64_t)1 << fl);
}

SHM__INLINE void shm__remove(shmalloc_tlsf *t, shm__block *b)
{
    shm__block *next = b->next_free, *prev = b->prev_free;
    next->prev_free = prev;
    prev->next_free = next;
    if (next == prev) shm__emptied(t, prev); /* only the sentinel is left */
}

/* Unlinks b, the head of the list with sentinel node `list`; the list's
   index is worked out only when it empties. */
SHM__INLINE void shm__pop(shmalloc_tlsf *t, shm__block *b, shm__block *list)
{
    shm__block *next = b->next_free;
    list->next_free = next;
    next->prev_free = list;
    if (next == list) shm__emptied(t, list);
}

/* b takes old's place in its list: a block that only changes size within
   its class keeps its position, with no bitmap work. */
SHM__INLINE void shm__replace(shm__block *old, shm__block *b)
{
    b->next_free = old->next_free;
    b->prev_free = old->prev_free;
    b->next_free->prev_free = b;
    b->prev_free->next_free = b;
}

/* The index (shm__list_index) of the first non-empty list above list
   fl/sl, whose bit in sl_bitmap[fl] is sl_bit, or SIZE_MAX: the
   bitmaps' search, for both cores. */
SHM__INLINE size_t shm__index_above(const shmalloc_tlsf *t, size_t fl, uint32_t sl_bit)
{
    uint32_t sl_map = t->sl_bitmap[fl] & (0u - (sl_bit << 1)); /* the lists above in this class; none above the last */
    if (SHM__UNLIKELY(!sl_map)) {
        uint64_t fl_map = t->fl_bitmap & (~(uint64_t)0 << (fl + 1));
        if (!fl_map) return SIZE_MAX;
        fl = shm__ctz(fl_map);
        sl_map = t->sl_bitmap[fl];
    }
    return shm__list_index((unsigned)fl, shm__ctz(sl_map));
}

/* Is a list above *list, the list of the size searched for, not empty?
   *list is then the first such. */
SHM__INLINE int shm__find_above(const shmalloc_tlsf *t, shm__block **list)
{
    size_t bits = shm__list_bits(*list);
    size_t i = shm__index_above(t, shm__bits_fl(bits), shm__bits_sl(bits));
    if (i == SIZE_MAX) return 0;
    *list = shm__list(t, i);
    return 1;
}

/* ---- placement rules: what both cores decide, wherever they keep a block's size ----
   A cut from a free block (a carve, the top's cut, a grow into a free
   neighbour) leaves the rest a free block of its own only when it makes a
   minimum block; fewer bytes stay the taken block's slack. */
SHM__INLINE int shm__rest_splits(size_t rest) { return rest >= SHM__MIN_BLOCK; }
/* A shrink gives its tail back only when it is more than a minimum block:
   a block that shrinks often grows again into those bytes, and a free
   block that small is seldom of use. */
SHM__INLINE int shm__tail_goes_back(size_t tail) { return tail > SHM__MIN_BLOCK; }
/* The bytes after an aligned block carved from a free block's end become
   a free block only when they are more than half the aligned block (so
   at least a minimum block: it is one, and they are a multiple of 16);
   fewer stay its slack: fewer list moves and merges. */
SHM__INLINE int shm__tail_stays_apart(size_t tail, size_t size) { return tail > size / 2; }
/* A realloc that cannot grow in place slides down into a free previous
   block, with the next one's bytes when free (room: the block's own and
   those), when the previous one starts on the block's alignment and is
   smaller than SHM__SLIDE_MAX; else it moves to a new block of the same
   alignment.  Sliding down fills a small hole; a large one is kept for the
   requests that need it, as sliding into whatever lies below a growing
   block keeps raising the top of the heap. */
#define SHM__SLIDE_MAX ((size_t)8192)
SHM__INLINE int shm__may_slide(size_t prev_size, uintptr_t prev_start, size_t room, size_t size, size_t align)
{
    return prev_size < SHM__SLIDE_MAX && room + prev_size >= size && !(prev_start & (align - 1));
}
/* Can the break move by inc (a multiple of 16), with `spec` bytes above
   it and a free top of `top` bytes (0: none)?  Up, the top gives them and
   keeps at least a minimum block, or goes whole; down, they join the top,
   or make a block of their own. */
SHM__INLINE int shm__break_moves(size_t spec, size_t top, ptrdiff_t inc)
{
    size_t n = (size_t)(inc < 0 ? -inc : inc);
    if (inc < 0) return n <= spec && (top || shm__rest_splits(n));
    return !inc || (top && (top == n || (top > n && shm__rest_splits(top - n))));
}

/* The own list's search, when neither the lists above nor the top serve
   a request: its first SHM__OWN_SCAN blocks, a bound that keeps malloc
   O(1); largest_request counts the same blocks (shm__largest_served). */
#define SHM__OWN_SCAN 8

/* The first of the first SHM__OWN_SCAN blocks of list `list` that has
   `size` bytes or more, or NULL. */
SHM__INLINE shm__block *shm__find_own(const shm__block *list, size_t size)
{
    shm__block *b = list->next_free;
    unsigned k;
    for (k = 0; k < SHM__OWN_SCAN && b != list; k++, b = b->next_free)
        if (b->header >= size) return b; /* as shm__find_list_fits */
    return NULL;
}

/* The index (shm__list_index) of the highest non-empty list, or
   SIZE_MAX: for both cores. */
SHM__INLINE size_t shm__index_highest(const shmalloc_tlsf *t)
{
    unsigned fl;
    if (!t->fl_bitmap) return SIZE_MAX;
    fl = shm__fls(t->fl_bitmap);
    return shm__list_index(fl, shm__fls(t->sl_bitmap[fl]));
}

/* Is there a listed free block of at least `size` bytes (the top is
   tried after, by the caller)?  It is then the head of the list with
   sentinel node *list (otherwise *list is unset); changes nothing.  The
   head of mapping insert's list is tried first: a close fit, and the only
   chance for a request of (nearly) the whole largest listed block.
   Otherwise the first non-empty list above it, any block of which fits:
   what the paper's mapping search finds, with no mapping of its own.
   An answer, not a block, so the caller tests no pointer for NULL.  This
   one is for a size known to be at most the capacity, which keeps the list
   among the heap's classes. */
SHM__INLINE int shm__find_list_fits(const shmalloc_tlsf *t, size_t size, shm__block **list)
{
    *list = shm__list_for(t, size);
    /* a free block's header is its size and the free bit (its previous block
       is used), so it is at least size exactly when the block fits; an
       empty list's sentinel has a header of 0 */
    if ((*list)->next_free->header >= size) return 1;
    return shm__find_above(t, list);
}

SHM__INLINE int shm__find_list(const shmalloc_tlsf *t, size_t size, shm__block **list)
{
    if (size > t->capacity) return 0;
    return shm__find_list_fits(t, size, list);
}

/* The block shm__find_list finds, or NULL; *index its list. */
SHM__INLINE shm__block *shm__find(const shmalloc_tlsf *t, size_t size, unsigned *index)
{
    shm__block *list;
    if (!shm__find_list(t, size, &list)) return NULL;
    *index = (unsigned)(list - &t->lists[0][0]);
    return list->next_free;
}

/* Gap between a free block's user pointer u and the first one aligned to
   `align` that can start a block: a gap must hold a free block, so 16
   becomes 16 + align.  Both cores' (a separate core's block is its user
   pointer). */
SHM__INLINE size_t shm__gap_at(uintptr_t u, size_t align)
{
    size_t gap = (size_t)(((u + align - 1) & ~(uintptr_t)(align - 1)) - u);
    return gap && gap < SHM__MIN_BLOCK ? gap + align : gap;
}
SHM__INLINE size_t shm__gap(const shm__block *b, size_t align) { return shm__gap_at((uintptr_t)shm__user(b), align); }

/* The search size that guarantees room for `size` bytes at `align`. */
SHM__INLINE size_t shm__aligned_need(size_t size, size_t align)
{
    return align <= SHMALLOC_ALIGNMENT ? size : size + align + 16;
}

SHM__INLINE shm__block *shm__find_aligned(const shmalloc_tlsf *t, size_t size, size_t align, unsigned *fl,
                                          unsigned *sl)
{
    unsigned i = 0; /* set only when a block is found */
    shm__block *b = shm__find(t, shm__aligned_need(size, align), &i);
    *fl = i >> SHMALLOC_SL_LOG2;
    *sl = i & (SHM__SL_COUNT - 1);
    return b;
}

/* The start-map bit of the block at offset off, a multiple of 16, as
   shm__valid computes it: after a free's test the compiler reuses the word. */
SHM__INLINE size_t shm__bit(size_t off) { return off >> 4 | off << 60; }

/* Words of the large marks that `clean` bytes of start map cover. */
SHM__INLINE size_t shm__large_valid(size_t clean) { return (clean / 8 + SHM__GRANULE_BITS - 1) / SHM__GRANULE_BITS; }

/* Large block b's mark flips, as its start bit does. */
static SHM__NOINLINE void shm__mark_large(shmalloc_tlsf *t, const shm__block *b)
{
    shm__marks_flip(t->large, t->large_words, shm__offset(t, b) >> SHM__LARGE_LOG2);
}

/* Marks b's start used, or not: the bit is the other way, so it flips.
   A large block's mark flips apart, out of the common paths' way
   (shm__large_taken, shm__release_large), as a call in them would cost
   every call a frame. */
SHM__INLINE void shm__mark_used(shmalloc_tlsf *t, const shm__block *b, int used)
{
    size_t bit = shm__bit(shm__offset(t, b));
    SHM__ASSERT(bit >= t->mapped_bits || (t->start_map[bit >> 6] >> (bit & 63) & 1) == (uint64_t)!used);
    t->start_map[bit >> 6] ^= (uint64_t)1 << (bit & 63);
    (void)used;
}

/* Large block b, just marked used below the zeroed map's end, gets its
   mark; returns its user pointer, as the take that calls it. */
static SHM__NOINLINE void *shm__large_taken(shmalloc_tlsf *t, shm__block *b)
{
    shm__mark_large(t, b);
    return shm__user(b);
}

/* Used block b was resized in place between `small` and `big` bytes, one
   way or the other: its mark flips if that crossed SHM__LARGE. */
SHM__INLINE void shm__resized(shmalloc_tlsf *t, const shm__block *b, size_t small, size_t big)
{
    if (SHM__UNLIKELY(shm__crossed_large(small, big)))
        shm__marks_flip(t->large, t->large_words, shm__offset(t, b) >> SHM__LARGE_LOG2); /* inline: a call costs a frame */
}

/* ---- vouching for headers: a write past a block's end lands on the next
   block's header, and a size followed blindly leads anywhere ---- */
/* Is start-map bit `bit`, below mapped_bits, set? */
SHM__INLINE int shm__marked_bit(const shmalloc_tlsf *t, size_t bit)
{
    return (int)(t->start_map[bit >> 6] >> (bit & 63) & 1);
}

/* Is b, below mapped_end, a recorded used block's start? */
SHM__INLINE int shm__marked(const shmalloc_tlsf *t, const shm__block *b)
{
    return shm__marked_bit(t, shm__offset(t, b) >> 4);
}

/* The same for any b in the blocks: past the zeroed map no block starts. */
SHM__INLINE int shm__starts_used(const shmalloc_tlsf *t, const shm__block *b)
{
    size_t bit = shm__offset(t, b) >> 4;
    if (bit >= t->mapped_bits) return 0;
    return shm__marked_bit(t, bit);
}

/* Is f, whose header word `header` says it is a listed free block (f at
   most the sentinel), one?  Its size must reach, below the sentinel, a
   block whose back link names f.  The merge writes that link anyway, so
   the check costs no cache line.  The size is masked as a used block's,
   so that no size wraps round: the merge takes it so too. */
SHM__INLINE int shm__listed_sound(const shmalloc_tlsf *t, const shm__block *f, size_t header)
{
    const shm__block *after = shm__at(f, header & SHM__SIZE_MASK);
    return (uintptr_t)after < (uintptr_t)t->sentinel && after->prev_phys == f;
}

/* Is next, whose header word says it is the top (TOP) or the sentinel
   (END), what it says?  The top ends at the sentinel, which links back to
   it; the sentinel's word is END and maybe PREV_FREE. */
SHM__INLINE int shm__last_sound(const shmalloc_tlsf *t, const shm__block *next, size_t header)
{
    const shm__block *after = shm__at(next, shm__free_size(header));
    if (SHM__LIKELY(after == t->sentinel && after->prev_phys == next)) return 1;
    return next == t->sentinel && (header & ~SHM__PREV_FREE) == SHM__END;
}

/* Does b's "previous block is free" hold?  Its link must name a block in
   the blocks, on a 16-byte boundary, at least a minimum block below b, and
   whose header is a listed free block's of exactly that size.  One test
   of the gap, rotated as shm__bit rotates, covers the boundary, the
   minimum and a link above b. */
SHM__INLINE int shm__prev_sound(const shmalloc_tlsf *t, const shm__block *b)
{
    const shm__block *prev = b->prev_phys;
    size_t gap = (size_t)((uintptr_t)b - (uintptr_t)prev);
    return shm__bit(gap - SHM__MIN_BLOCK) >> (SHMALLOC_MAX_LOG2 + 1) == 0 && (uintptr_t)prev >= (uintptr_t)t->base &&
           prev->header == (gap | SHM__FREE);
}

/* Is b's header word `header` one a used block can have: no free, end or
   top flag, and a size that leads to `next`, no further than the
   sentinel?  A size below the minimum block leads inside b, where no block
   starts: free's test of the next block finds it, after clearing b's bit. */
SHM__INLINE int shm__used_sound(const shmalloc_tlsf *t, const shm__block *next, size_t header)
{
    return !(header & (SHM__FREE | SHM__END | SHM__TOP)) && (uintptr_t)next <= (uintptr_t)t->sentinel;
}

/* Is next, which a sound used block's size leads to, the block its header
   word says, told apart as free and the resizes tell it: the sentinel or
   the top, a listed free block, or a recorded used block's start? */
SHM__INLINE int shm__next_sound(const shmalloc_tlsf *t, const shm__block *next, size_t next_header)
{
    if (next_header & (SHM__FREE | SHM__END))
        return next_header & (SHM__TOP | SHM__END) ? shm__last_sound(t, next, next_header)
                                                    : shm__listed_sound(t, next, next_header);
    return shm__starts_used(t, next);
}

/* Does a used block's size lead to next, a block whose header word says
   what it is (shm__next_sound)?  One comparison with mapped_end bounds
   next and lets its start-map bit be read: only the sentinel starts at or
   above it. */
SHM__INLINE int shm__reaches_block(const shmalloc_tlsf *t, const shm__block *next)
{
    size_t header;
    if (SHM__UNLIKELY((uintptr_t)next >= (uintptr_t)t->mapped_end))
        return next == t->sentinel && shm__last_sound(t, next, next->header);
    header = next->header;
    if (header & (SHM__FREE | SHM__END))
        return header & (SHM__TOP | SHM__END) ? shm__last_sound(t, next, header) : shm__listed_sound(t, next, header);
    return shm__marked(t, next);
}

/* The end of a merging free: b, of `size` bytes up to `next`, has grown
   over the free block anchor (which may be b itself), of anchor_size
   bytes, and takes its place in the lists.  Returns SHMALLOC_TLSF_OK, so
   that free can end in a jump to the merges. */
SHM__INLINE int shm__merged(shmalloc_tlsf *t, shm__block *b, size_t size, shm__block *anchor, size_t anchor_size,
                             shm__block *next)
{
    size_t key;
    SHM__UNPOISON((char *)b + 16, 16); /* the links, in a short request's slack */
    key = shm__list_key(size); /* compared as keys: the push needs b's anyway */
    if (shm__list_key(anchor_size) == key) {
        if (anchor != b) shm__replace(anchor, b);
    } else {
        shm__remove(t, anchor);
        shm__push_on(t, b, shm__list_at(t, key));
    }
    shm__set_free(b, size);
    shm__set_prev_free(next, b);
    SHM__POISON((char *)b + 32, size - 32); /* all but header and links */
    return SHMALLOC_TLSF_OK;
}

/* [b, b + size), which ends at the sentinel, becomes the top: free and in
   no list.  Returns SHMALLOC_TLSF_OK, for the merges' jumps. */
SHM__INLINE int shm__to_top(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    shm__block *end = t->sentinel; /* which callers often hold: b + size */
    SHM__ASSERT(shm__at(b, size) == end);
    SHM__UNPOISON((char *)b + 16, 16); /* as a listed block's links are */
    shm__set_top(b, size);
    end->prev_phys = b;
    end->header = SHM__END | SHM__PREV_FREE; /* whole: a write past the end of the block below may have reached it */
    SHM__POISON((char *)b + 32, size - 32);
    return SHMALLOC_TLSF_OK;
}

/* A free that found a header it cannot trust gives b back its start-map
   bit, the only thing it changed. */
static SHM__NOINLINE int shm__unreleased(shmalloc_tlsf *t, const shm__block *b)
{
    shm__mark_used(t, b, 1);
    return SHMALLOC_TLSF_CORRUPT;
}

/* b, of `size` bytes, merges with prev, its free previous block, which is
   listed (the top is last), and with the next one too when that is free
   (its header word is next_header); shm__release_flagged has checked
   them. */
static SHM__NOINLINE int shm__merge_prev(shmalloc_tlsf *t, shm__block *b, size_t size, size_t next_header,
                                         shm__block *prev)
{
    shm__block *next = shm__at(b, size);
    size_t prev_size = (size_t)((uintptr_t)b - (uintptr_t)prev);
    if (next_header & SHM__FREE) {
        size_t nsize = next_header & SHM__SIZE_MASK;
        if (!(next_header & SHM__TOP)) shm__remove(t, next);
        size += nsize;
        next = shm__at(next, nsize);
    }
    if (next_header & (SHM__TOP | SHM__END)) {
        shm__remove(t, prev);
        return shm__to_top(t, prev, size + prev_size);
    }
    return shm__merged(t, prev, size + prev_size, prev, prev_size, next);
}

/* A free of b, of `size` bytes, whose header word `header` has a flag:
   PREV_FREE, or one no used block has.  The previous block and the next
   are checked (shm__prev_sound, shm__reaches_block) before
   shm__merge_prev, out of line so that the checks' registers do not cost
   the merge a frame. */
static SHM__NOINLINE int shm__release_flagged(shmalloc_tlsf *t, shm__block *b, size_t size, size_t header)
{
    shm__block *next = shm__at(b, size);
    if (SHM__UNLIKELY((header & (SHM__FREE | SHM__END | SHM__TOP)) || !shm__prev_sound(t, b) ||
                      !shm__reaches_block(t, next)))
        return shm__unreleased(t, b);
    return shm__merge_prev(t, b, size, next->header, b->prev_phys);
}

/* b, of `size` bytes, merges with the free next block (header word
   next_header), checked first; the previous block is used.  The
   sentinel's header (END) comes here too: it counts as a next block of
   size 0, and b becomes the top as it does when the next block is the
   top. */
static int shm__merge_next(shmalloc_tlsf *t, shm__block *b, size_t size, size_t next_header)
{
    shm__block *next = shm__at(b, size);
    size_t nsize;
    if (next_header & (SHM__TOP | SHM__END)) {
        if (SHM__UNLIKELY(!shm__last_sound(t, next, next_header))) return shm__unreleased(t, b);
        return shm__to_top(t, b, size + shm__free_size(next_header));
    }
    nsize = next_header & SHM__SIZE_MASK;
    if (SHM__UNLIKELY(!shm__listed_sound(t, next, next_header))) return shm__unreleased(t, b);
    return shm__merged(t, b, size + nsize, next, nsize, shm__at(next, nsize));
}

/* b's size leads to mapped_end or above, where only the sentinel starts:
   b is the last block, and becomes the top, or its size is no block's. */
static SHM__NOINLINE int shm__release_last(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    if (shm__at(b, size) != t->sentinel) return shm__unreleased(t, b);
    return shm__merge_next(t, b, size, t->sentinel->header);
}

/* Files [b, b + size) as a free block of its own: neither neighbour is
   free, and next is not the sentinel. */
SHM__INLINE void shm__file_alone(shmalloc_tlsf *t, shm__block *b, size_t size, shm__block *next)
{
    SHM__UNPOISON((char *)b + 16, 16);
    shm__set_free(b, size);
    shm__push_size(t, b, size);
    shm__set_prev_free(next, b);
    SHM__POISON((char *)b + 32, size - 32);
}

#if SHMALLOC_DEBUG_LEVEL >= 2
#  define SHM__MAP_CHUNK ((size_t)64) /* the least map zeroed at once: small, so tests cross it often */
#else
#  define SHM__MAP_CHUNK ((size_t)4096)
#endif

/* Bytes of start map (whole words) covering `area` bytes of blocks. */
SHM__INLINE size_t shm__map_bytes(size_t area) { return (area / 16 + 63) / 64 * 8; }
/* Words of large marks over `area` bytes of blocks. */
SHM__INLINE size_t shm__large_words(size_t area) { return (area + 64 * SHM__LARGE - 1) / (64 * SHM__LARGE); }
/* Bytes of start map and large marks over `area` bytes of blocks. */
SHM__INLINE size_t shm__marks_bytes(size_t area)
{
    return shm__map_bytes(area) + shm__marks_words(shm__large_words(area)) * 8;
}

/* Bytes of start map a high-water mark of `end` needs: the blocks below
   it, and the one that starts 8 bytes under it (the top, or the block
   after the highest), so that every block but the sentinel starts below
   mapped_end. */
SHM__INLINE size_t shm__map_needs(size_t end) { return shm__map_bytes(end + 8); }

static void shm__limit_mapped(shmalloc_tlsf *t)
{
    size_t covered = t->map_clean * 128, blocks = shm__offset(t, t->sentinel); /* 8 bits a byte, 16 bytes a bit */
    t->mapped_bits = (covered < blocks ? covered : blocks) / 16;
    t->mapped_end = shm__at(t->base, t->mapped_bits * 16);
}

/* The start map is zeroed as the high-water mark rises, not when the heap
   is made: a large heap costs nothing until it is used.  The zeroed part
   covers the high-water mark and the block that starts under it
   (shm__map_needs); `b`, a block just marked past it, is marked
   again. */
static void shm__clean_map(shmalloc_tlsf *t, size_t end, const shm__block *b)
{
    size_t from, want = shm__map_needs(end), all = shm__map_bytes((size_t)(t->end - t->base));
    want = want > 2 * t->map_clean ? want : 2 * t->map_clean; /* in doublings */
    want = want < SHM__MAP_CHUNK ? SHM__MAP_CHUNK : want;
    want = want < all ? want : all;
    SHMALLOC_MEMSET((char *)t->start_map + t->map_clean, 0, want - t->map_clean);
    from = shm__large_valid(t->map_clean);
    SHMALLOC_MEMSET(t->large + from, 0, (shm__large_valid(want) - from) * 8);
    t->map_clean = want;
    shm__limit_mapped(t);
    if (b) t->start_map[shm__offset(t, b) >> 10] |= (uint64_t)1 << (shm__offset(t, b) >> 4 & 63);
    shm__marks_rebuild(t->large, t->large_words, shm__large_valid(want)); /* the levels above the new words */
}

/* A new high-water mark `end`, the end of the usable bytes of the block
   just marked used whose user pointer is `user`.  Out of line and
   returning `user`, the value the common path returns too, so that it
   keeps nothing across a call. */
static SHM__NOINLINE void *shm__raise(shmalloc_tlsf *t, size_t end, void *user)
{
    t->high_water = end;
    if (SHM__UNLIKELY(shm__map_needs(end) > t->map_clean)) shm__clean_map(t, end, shm__of_user(user));
    if (shm__size(shm__of_user(user)) >= SHM__LARGE) shm__mark_large(t, shm__of_user(user));
    return user;
}

/* The used block b of `size` bytes, its header written, cut from a listed
   free block, into the start map; returns its user pointer.  A listed
   block's next block is used, so b ends below the high-water mark, where
   the map is zeroed. */
SHM__INLINE void *shm__taken_listed(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    SHM__ASSERT(shm__offset(t, b) + size + 8 <= t->high_water);
    shm__mark_used(t, b, 1);
    if (SHM__UNLIKELY(size >= SHM__LARGE)) return shm__large_taken(t, b);
    return shm__user(b);
}

/* The same for a block cut from the top, which may raise the high-water mark. */
SHM__INLINE void *shm__taken(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    size_t end = shm__offset(t, b) + size + 8; /* the high-water mark: the end of the usable bytes */
    shm__mark_used(t, b, 1);
    if (SHM__UNLIKELY(end > t->high_water)) return shm__raise(t, end, shm__user(b));
    if (SHM__UNLIKELY(size >= SHM__LARGE)) return shm__large_taken(t, b);
    return shm__user(b);
}

/* Takes free block b, the head of `list`, whole.  A block from the
   request's own list (an exact-class hit) is taken so: its tail, less than
   a list's width, would cost a header write in a line nothing else
   touches, and a free block that small seldom serves a request. */
SHM__INLINE void *shm__take_whole(shmalloc_tlsf *t, shm__block *b, shm__block *list)
{
    size_t bsize = shm__free_size(b->header);
    SHM__UNPOISON((char *)b + 32, bsize - 32);
    shm__pop(t, b, list);
    shm__set_prev_used(shm__at(b, bsize));
    shm__set_used(b, bsize, 0); /* a listed block is free, so its previous block is used */
    return shm__taken_listed(t, b, bsize);
}

/* Cuts free block b, the head of `list`, down to `size` and marks it
   used; the tail goes back to the free lists, in b's place when it stays
   in b's list.  A block of the request's own list is taken whole. */
SHM__INLINE void *shm__carve(shmalloc_tlsf *t, shm__block *b, size_t size, shm__block *list)
{
    size_t bsize = shm__free_size(b->header), rest_size = bsize - size;
    shm__block *next = shm__at(b, bsize);
    SHM__ASSERT(size >= SHM__MIN_BLOCK && bsize >= size && !(size & 15));
    if (list == shm__list_for(t, size)) return shm__take_whole(t, b, list);
    if (shm__rest_splits(rest_size)) {
        shm__block *rest = shm__at(b, size);
        shm__block *rest_list = shm__list_for(t, rest_size);
        shm__set_free(rest, rest_size);
        next->prev_phys = rest;
        SHM__POISON((char *)rest + 32, rest_size - 32);
        if (rest_list == list) {
            shm__block *after = b->next_free;
            rest->next_free = after;
            after->prev_free = rest;
            rest->prev_free = list;
            list->next_free = rest;
        } else {
            shm__pop(t, b, list);
            shm__push_on(t, rest, rest_list);
        }
        bsize = size;
    } else {
        shm__pop(t, b, list);
        shm__set_prev_used(next);
    }
    shm__set_used(b, bsize, 0); /* a listed block is free, so its previous block is used */
    return shm__taken_listed(t, b, bsize);
}

/* Takes `size` bytes at `align` from the end of free block b, the head of
   `list`, which must have room for size + align + 16: b keeps its start
   and mostly its list, and the bytes after the aligned block become a free
   block, or its slack when too few for one or at most half the
   block's size (fewer list moves and merges, and a free block that small
   is seldom of use).  (The top is carved from its start instead, so the
   heap reaches no further than it must: shm__take_top.) */
SHM__INLINE void *shm__carve_end(shmalloc_tlsf *t, shm__block *b, shm__block *list, size_t size, size_t align)
{
    size_t bsize = shm__free_size(b->header), front, tail;
    shm__block *next = shm__at(b, bsize), *a, *front_list;
    a = shm__of_user((void *)(((uintptr_t)next - size + 16) & ~(uintptr_t)(align - 1)));
    front = (size_t)((uintptr_t)a - (uintptr_t)b);
    tail = bsize - front - size;
    SHM__ASSERT(front >= SHM__MIN_BLOCK && tail < align && !(tail & 15));
    if (shm__tail_stays_apart(tail, size)) {
        shm__block *rest = shm__at(a, size);
        shm__set_free(rest, tail);
        next->prev_phys = rest;
        shm__push_size(t, rest, tail);
        SHM__POISON((char *)rest + 32, tail - 32);
    } else {
        size += tail;
        shm__set_prev_used(next);
    }
    shm__set_free(b, front);
    front_list = shm__list_for(t, front); /* needed when b moves, which is nearly always */
    if (front_list != list) {
        shm__pop(t, b, list);
        shm__push_on(t, b, front_list);
    }
    SHM__POISON((char *)b + 32, front - 32);
    shm__set_used(a, size, shm__align_bits(align));
    shm__set_prev_free(a, b);
    return shm__taken_listed(t, a, size);
}

/* Takes the free block b, the head of `list`, for `size` bytes at
   `align`.  A listed block is never the last: its next block is used. */
SHM__INLINE void *shm__take_at(shmalloc_tlsf *t, shm__block *b, shm__block *list, size_t size, size_t align)
{
    SHM__UNPOISON((char *)b + 32, shm__free_size(b->header) - 32);
    if (align <= SHMALLOC_ALIGNMENT) return shm__carve(t, b, size, list);
    return shm__carve_end(t, b, list, size, align);
}

/* The bytes before the first user pointer at `align` in the top that can
   start a block (shm__gap), or SIZE_MAX when there is no top. */
SHM__INLINE size_t shm__top_gap(const shmalloc_tlsf *t, size_t align)
{
    if (!shm__has_top(t)) return SIZE_MAX;
    return align <= SHMALLOC_ALIGNMENT ? 0 : shm__gap(t->sentinel->prev_phys, align);
}

/* The top's size, from where it ends rather than from its header, which a
   write past the end of the block below can reach: a take rewrites it. */
SHM__INLINE size_t shm__top_size(const shmalloc_tlsf *t)
{
    return (size_t)((uintptr_t)t->sentinel - (uintptr_t)t->sentinel->prev_phys);
}

/* Can the top serve `size` bytes (a block size) at `align`? */
SHM__INLINE int shm__top_fits(const shmalloc_tlsf *t, size_t size, size_t align)
{
    size_t gap = shm__top_gap(t, align), tsize;
    if (gap == SIZE_MAX) return 0;
    tsize = shm__top_size(t);
    return tsize >= gap && tsize - gap >= size;
}

/* The top's bytes after `size` bytes from a, which starts in it: their
   count, as a signed figure, is negative when the top has too few. */
SHM__INLINE ptrdiff_t shm__top_after(const shmalloc_tlsf *t, const shm__block *a, size_t size)
{
    return (ptrdiff_t)((uintptr_t)t->sentinel - (uintptr_t)shm__at(a, size));
}

/* Cuts the used block a of `size` bytes, with header flags `flags`, from
   the start of the top's bytes that begin at a (shm__top_after of them are
   left); the rest stays the top, or becomes a's slack when too small for a
   block. */
SHM__INLINE void *shm__cut_top(shmalloc_tlsf *t, shm__block *a, size_t size, size_t flags)
{
    shm__block *end = t->sentinel, *rest = shm__at(a, size);
    size_t rest_size = (size_t)shm__top_after(t, a, size);
    if (SHM__LIKELY(shm__rest_splits(rest_size))) {
        shm__set_top(rest, rest_size);
        end->prev_phys = rest;
        SHM__POISON((char *)rest + 32, rest_size - 32);
    } else {
        size += rest_size;
        shm__set_prev_used(end);
    }
    shm__set_used(a, size, flags);
    return shm__taken(t, a, size);
}

/* The block shm__find_own finds in the list of `size` bytes (a block
   size), taken whole, or NULL. */
static SHM__NOINLINE void *shm__take_own(shmalloc_tlsf *t, size_t size)
{
    shm__block *list, *b;
    if (size > t->capacity) return NULL; /* no list of the heap's holds it */
    list = shm__list_for(t, size);
    if (!(b = shm__find_own(list, size))) return NULL;
    shm__remove(t, b);
    shm__push_head(t, b, list); /* shm__take_whole takes a list's head */
    return shm__take_whole(t, b, list);
}

/* A used block of `size` bytes from the top, or when it has too few from
   the request's own list (shm__take_own), or NULL.  What no listed block
   serves comes here, so a heap that only takes and gives back (a malloc
   and a free of one size, over and over) does so with no list work.  Out
   of line, as is the aligned form below: the common paths keep their
   registers. */
static SHM__NOINLINE void *shm__take_top(shmalloc_tlsf *t, size_t size)
{
    shm__block *a;
    if (!shm__has_top(t)) return shm__take_own(t, size); /* else the sentinel's link is a user's bytes */
    a = t->sentinel->prev_phys;
    if (shm__top_after(t, a, size) < 0) return shm__take_own(t, size);
    SHM__UNPOISON((char *)a + 32, shm__top_size(t) - 32);
    return shm__cut_top(t, a, size, 0);
}

/* The same at `align`: the bytes before the aligned block (the gap)
   become a listed free block. */
static SHM__NOINLINE void *shm__take_top_aligned(shmalloc_tlsf *t, size_t size, size_t align)
{
    shm__block *g, *a;
    size_t gap;
    if (align <= SHMALLOC_ALIGNMENT) return shm__take_top(t, size);
    if (!shm__top_fits(t, size, align)) return NULL;
    g = t->sentinel->prev_phys;
    gap = shm__top_gap(t, align);
    SHM__UNPOISON((char *)g + 32, shm__top_size(t) - 32);
    if (!gap) return shm__cut_top(t, g, size, shm__align_bits(align));
    a = shm__at(g, gap);
    a->prev_phys = g;
    shm__set_free(g, gap);
    shm__push_size(t, g, gap);
    SHM__POISON((char *)g + 32, gap - 32);
    return shm__cut_top(t, a, size, shm__align_bits(align) | SHM__PREV_FREE);
}

/* Takes the free block b that shm__find_aligned found in list fl/sl. */
SHM__INLINE void *shm__take(shmalloc_tlsf *t, shm__block *b, unsigned fl, unsigned sl, size_t size, size_t align)
{
    return shm__take_at(t, b, shm__list(t, shm__list_index(fl, sl)), size, align);
}

/* Frees the used block b (its start validated, its bit cleared by
   shm__release); returns SHMALLOC_TLSF_OK, or SHMALLOC_TLSF_CORRUPT,
   changing nothing (the bit is set again), when b's header or a neighbour
   it leads to cannot be trusted (shm__damaged).  A header with
   a flag (a free previous block, or a flag no used block has) goes to
   shm__release_flagged; the merges check the neighbours they merge
   with. */
SHM__INLINE int shm__release_block(shmalloc_tlsf *t, shm__block *b, size_t header, size_t size)
{
    size_t next_header;
    shm__block *next = shm__at(b, size);
    if (header & (SHM__PREV_FREE | SHM__FREE | SHM__END | SHM__TOP)) return shm__release_flagged(t, b, size, header);
    if (SHM__UNLIKELY((uintptr_t)next >= (uintptr_t)t->mapped_end)) return shm__release_last(t, b, size);
    next_header = next->header;
    if (next_header & (SHM__FREE | SHM__END)) return shm__merge_next(t, b, size, next_header);
    if (SHM__UNLIKELY(!shm__marked_bit(t, shm__bit(shm__offset(t, b)) + (size >> 4)))) return shm__unreleased(t, b);
    shm__file_alone(t, b, size, next);
    return SHMALLOC_TLSF_OK;
}

/* A large block's release, which takes its mark too when it is freed. */
static SHM__NOINLINE int shm__release_large(shmalloc_tlsf *t, shm__block *b)
{
    size_t g = shm__offset(t, b) >> SHM__LARGE_LOG2;
    int status = shm__release_block(t, b, b->header, shm__size(b));
    if (status == SHMALLOC_TLSF_OK) shm__marks_flip(t->large, t->large_words, g);
    return status;
}

SHM__INLINE int shm__release(shmalloc_tlsf *t, shm__block *b)
{
    size_t header, size;
    shm__mark_used(t, b, 0); /* first: the word shm__valid read dies here, and a size of 0 leads to b, unmarked */
    header = b->header;
    size = header & SHM__SIZE_MASK;
    if (SHM__UNLIKELY(size >= SHM__LARGE)) return shm__release_large(t, b);
    return shm__release_block(t, b, header, size);
}

/* Free block f, which followed `prev` in its list before a take (the
   list's sentinel node when f headed it), does again; the top is in no
   list. */
static void shm__put_after(shmalloc_tlsf *t, shm__block *f, shm__block *prev)
{
    if ((f->header & SHM__TOP) || f->prev_free == prev) return;
    shm__remove(t, f); /* f has company, prev: the list stays filled */
    f->prev_free = prev;
    f->next_free = prev->next_free;
    prev->next_free->prev_free = f;
    prev->next_free = f;
}

/* Free block f, which headed its list before a take, heads it again. */
static void shm__to_head(shmalloc_tlsf *t, shm__block *f)
{
    if (!(f->header & SHM__TOP)) shm__put_after(t, f, shm__list_for(t, shm__size(f)));
}

/* Gives back the used block b that a take has just cut (a collective
   allocation another PE failed): b merges back into the block it was cut
   from, which heads its list again, or follows `after` when the take
   found it there (shm__own_prev), so the heap is exactly as before the
   take and later offsets match the PEs' that took nothing. */
static void shm__untake(shmalloc_tlsf *t, shm__block *b, shm__block *after)
{
    shm__block *f = b->header & SHM__PREV_FREE ? b->prev_phys : b;
    shm__release(t, b);
    if (after) shm__put_after(t, f, after);
    else shm__to_head(t, f);
}

/* The used block whose bytes (its header too) hold q, an address in
   the blocks, or NULL.  It reads the map, the marks and one used block's
   header, each within the heap, so a change racing it gives a wrong
   answer, never a fault (shm__validate_racing). */
static SHM__RACY const shm__block *shm__used_holder(const shmalloc_tlsf *t, uintptr_t q)
{
    size_t clean = t->map_clean, i;
    const shm__block *b;
    i = shm__holder_bit(t->start_map, clean / 8, t->large, t->large_words, shm__large_valid(clean),
                        (q - (uintptr_t)t->base) / 16, 4);
    if (i >= t->mapped_bits) return NULL;
    b = shm__at(t->base, i * 16);
    return q - (uintptr_t)b < (b->header & SHM__SIZE_MASK) ? b : NULL;
}

/* Is q, a block address below the zeroed map's end, in a free block?
   The blocks tile the space up to the sentinel, so in one when no used
   block holds it.  Only the maps and used blocks' headers are read, never
   bytes a user may have written. */
static int shm__in_free(const shmalloc_tlsf *t, uintptr_t q)
{
    return q < (uintptr_t)t->sentinel && !shm__used_holder(t, q);
}

/* Why ptr, which is not the user pointer of a used block, is not: in a
   free block it is memory already freed (a double free, even of a block
   that has since merged with a neighbour), elsewhere in the blocks it is
   not a block's start.  Off the hot path, and out of line to keep it so. */
static SHM__NOINLINE int shm__invalid(const shmalloc_tlsf *t, const void *ptr)
{
    uintptr_t u = (uintptr_t)ptr, lo = (uintptr_t)t->base + 16;
    if (u < lo || (u - lo) / 16 >= t->mapped_bits) /* where no block ever started, or the spec area */
        return u >= lo && u < (uintptr_t)t->limit ? SHMALLOC_TLSF_NOT_A_BLOCK : SHMALLOC_TLSF_NOT_IN_HEAP;
    if (shm__offset(t, ptr) >= t->high_water) return SHMALLOC_TLSF_NOT_A_BLOCK; /* never handed out */
    return shm__in_free(t, u - 16) ? SHMALLOC_TLSF_ALREADY_FREE : SHMALLOC_TLSF_NOT_A_BLOCK;
}

/* Is ptr the user pointer of a used block?  The start map answers: ptr
   must be in the zeroed part of the map (below the sentinel), on a 16-byte
   boundary, and marked.  The offset rotated right by 4 is the block's bit
   when ptr is on a boundary, and above every bit when it is not: one
   comparison makes both tests. */
SHM__INLINE int shm__valid(const shmalloc_tlsf *t, const void *ptr)
{
    size_t off = shm__offset(t, ptr) - 16, bit = shm__bit(off);
    return bit < t->mapped_bits && (t->start_map[bit >> 6] >> (bit & 63) & 1);
}

/* Can free and resize trust the header of used block b (the start map
   vouches for b's start) and the neighbours it leads to?  NULL when they
   can; else b, when its own header is no used block's, or the neighbour
   its header leads to, which is not a block (b's size or the neighbour's
   header was overwritten).  A size that leads to another used block's
   start passes: only the checker's walk finds that. */
SHM__INLINE const shm__block *shm__damaged(const shmalloc_tlsf *t, const shm__block *b)
{
    const shm__block *next = shm__at(b, shm__size(b));
    if (!shm__used_sound(t, next, b->header) || shm__size(b) < SHM__MIN_BLOCK) return b;
    if (shm__is_prev_free(b) && !shm__prev_sound(t, b)) return b->prev_phys;
    return shm__next_sound(t, next, next->header) ? NULL : next;
}

/* Is ptr a used block's user pointer (else why not), and are its header
   and neighbours sound? */
SHM__INLINE int shm__validate(const shmalloc_tlsf *t, const void *ptr)
{
    if (SHM__UNLIKELY(!shm__valid(t, ptr))) return shm__invalid(t, ptr);
    return SHM__UNLIKELY(shm__damaged(t, shm__of_user(ptr)) != NULL) ? SHMALLOC_TLSF_CORRUPT : SHMALLOC_TLSF_OK;
}

/* shm__validate's answer for a check that another thread's change of the
   heap may overlap: it reads the bounds, the start map and one used
   block's header, each within the heap, and walks no list, so an overlapped change
   gives a wrong answer, never a fault or an endless loop.  The caller
   keeps an answer only when no change overlapped it (shm__check_release);
   the sanitizers do not see these reads. */
static SHM__RACY SHM__NOINLINE int shm__validate_racing(const shmalloc_tlsf *t, const void *ptr)
{
    uintptr_t u = (uintptr_t)ptr, base = (uintptr_t)t->base, q = u - 16;
    size_t mapped = t->mapped_bits, bit = (q - base) / 16;
    if (u < base + 16 || bit >= mapped)
        return u >= base + 16 && u < (uintptr_t)t->limit ? SHMALLOC_TLSF_NOT_A_BLOCK : SHMALLOC_TLSF_NOT_IN_HEAP;
    if (!((q - base) & 15) && (t->start_map[bit >> 6] >> (bit & 63) & 1)) return SHMALLOC_TLSF_OK;
    if (u - base >= t->high_water) return SHMALLOC_TLSF_NOT_A_BLOCK; /* never handed out */
    return q < (uintptr_t)t->sentinel && !shm__used_holder(t, q) ? SHMALLOC_TLSF_ALREADY_FREE /* as shm__in_free */
                                                                 : SHMALLOC_TLSF_NOT_A_BLOCK;
}

/* ---- resize: planned first, so a collective realloc can agree before
   anything changes ---------------------------------------------------- */
enum { SHM__IN_PLACE = 1, SHM__INTO_PREV, SHM__MOVE };
typedef struct shm__resize {
    int how;
    size_t size;        /* the new block size */
    shm__block *target; /* SHM__MOVE: the free block to move to (NULL: the top), */
    unsigned fl, sl;    /* and its list */
} shm__resize;

/* Order of preference: in place (shrink, or grow into a free next block),
   into a free previous block (shm__may_slide), then move. */

/* The bytes used block b can have where it starts: its own and a free next block's. */
SHM__INLINE size_t shm__room(const shm__block *b)
{
    const shm__block *next = shm__at(b, shm__size(b));
    return shm__size(b) + (shm__is_free(next) ? shm__size(next) : 0);
}

/* The plan for used block b when its room is less than r->size. */
static int shm__plan_elsewhere(const shmalloc_tlsf *t, const shm__block *b, size_t avail, shm__resize *r)
{
    if (shm__is_prev_free(b)) {
        const shm__block *prev = b->prev_phys;
        r->how = SHM__INTO_PREV;
        if (shm__may_slide(shm__size(prev), (uintptr_t)shm__user(prev), avail, r->size, shm__align_of(b)))
            return SHMALLOC_TLSF_OK;
    }
    r->how = SHM__MOVE;
    r->target = shm__find_aligned(t, r->size, shm__align_of(b), &r->fl, &r->sl);
    return r->target || shm__top_fits(t, r->size, shm__align_of(b)) ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_NO_ROOM;
}

static int shm__plan_resize(const shmalloc_tlsf *t, const void *ptr, size_t n, shm__resize *r)
{
    int e = shm__validate(t, ptr);
    const shm__block *b = shm__of_user(ptr);
    size_t avail;
    if (e) return e;
    if (n > SHMALLOC_TLSF_MAX_REQUEST) return SHMALLOC_TLSF_BAD_SIZE;
    r->size = shm__block_size(n);
    avail = shm__room(b);
    r->how = SHM__IN_PLACE;
    if (avail >= r->size) return SHMALLOC_TLSF_OK;
    return shm__plan_elsewhere(t, b, avail, r);
}

/* Free block f of `size` bytes takes the place of free block old, of
   old_size bytes, which it overlaps and ends with: a used neighbour grew
   into old's front or gave its tail to it.  f keeps old's list position
   when the two sizes share a list (compared as keys: the push needs f's
   anyway).  old is not the top. */
SHM__INLINE void shm__refile(shmalloc_tlsf *t, shm__block *old, size_t old_size, shm__block *f, size_t size)
{
    shm__block *next_free = old->next_free, *prev_free = old->prev_free; /* f's header may cover them */
    size_t key = shm__list_key(size);
    shm__set_free(f, size);
    shm__at(f, size)->prev_phys = f;
    if (shm__list_key(old_size) == key) {
        f->next_free = next_free;
        next_free->prev_free = f;
        f->prev_free = prev_free;
        prev_free->next_free = f;
        return;
    }
    next_free->prev_free = prev_free;
    prev_free->next_free = next_free;
    if (next_free == prev_free) shm__emptied(t, prev_free);
    shm__push_on(t, f, shm__list_at(t, key));
}

/* Used block b gives back its bytes beyond `size` (a block size, more
   than a minimum block below b's), merged with a free next block.
   Returns 0, changing nothing, when b's header or the next block it would
   reach cannot be trusted (shm__used_sound, shm__next_sound), else 1. */
SHM__INLINE int shm__give_tail(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    size_t header = b->header, bsize = header & SHM__SIZE_MASK, tail = bsize - size, next_header, nsize;
    shm__block *next = shm__at(b, bsize), *rest = shm__at(b, size);
    if (SHM__UNLIKELY(!shm__used_sound(t, next, header))) return 0;
    next_header = next->header;
    if (SHM__UNLIKELY(!shm__next_sound(t, next, next_header))) return 0;
    b->header -= tail; /* the caller moves b's large mark */
    if (!(next_header & (SHM__FREE | SHM__END))) {
        shm__file_alone(t, rest, tail, next);
        return 1;
    }
    nsize = next_header & SHM__SIZE_MASK; /* 0 for the sentinel */
    if (next_header & (SHM__TOP | SHM__END)) {
        shm__to_top(t, rest, tail + nsize);
        return 1;
    }
    shm__refile(t, next, nsize, rest, tail + nsize);
    SHM__POISON((char *)rest + 32, tail + nsize - 32);
    return 1;
}

/* Shrinks used block b to `size` (a block size, at most b's): the tail
   goes back (shm__give_tail), unless it is one minimum block or less,
   which stays as b's slack: a block that shrinks often grows again into
   those bytes, and a free block that small is seldom of use.  Returns 0,
   changing nothing, when the tail cannot go back, else 1. */
SHM__INLINE int shm__shrink_in_place(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    size_t old = shm__size(b);
    SHM__UNPOISON(shm__user(b), old - 8); /* the slack after the old request */
    if (!shm__tail_goes_back(old - size)) return 1;
    if (!shm__give_tail(t, b, size)) return 0;
    shm__resized(t, b, size, old);
    return 1;
}

/* Grows used block b to `size` (a block size, above b's) into the front of
   a free next block.  Returns 0, changing nothing, when the next block is
   not free or too small, or when b's header or the next block's cannot be
   trusted. */
SHM__INLINE int shm__grow_in_place(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    size_t header = b->header, bsize = header & SHM__SIZE_MASK, end, next_header, nsize;
    shm__block *next = shm__at(b, bsize), *rest = shm__at(b, size);
    if (SHM__UNLIKELY(!shm__used_sound(t, next, header))) return 0;
    next_header = next->header;
    nsize = next_header & SHM__SIZE_MASK; /* when it is free */
    if (!(next_header & SHM__FREE) || bsize + nsize < size) return 0;
    if (SHM__UNLIKELY(next_header & SHM__TOP ? !shm__last_sound(t, next, next_header)
                                             : !shm__listed_sound(t, next, next_header)))
        return 0;
    SHM__UNPOISON(shm__user(b), bsize - 8);
    SHM__UNPOISON((char *)next + 32, nsize - 32);
    if (shm__rest_splits(bsize + nsize - size)) {
        if (next_header & SHM__TOP) {
            shm__to_top(t, rest, bsize + nsize - size);
        } else {
            shm__refile(t, next, nsize, rest, bsize + nsize - size);
            SHM__POISON((char *)rest + 32, bsize + nsize - size - 32);
        }
    } else { /* too little is left for a block: b takes all of next */
        if (!(next_header & SHM__TOP)) shm__remove(t, next);
        shm__set_prev_used(shm__at(next, nsize));
        size = bsize + nsize;
    }
    b->header = header + (size - bsize);
    shm__resized(t, b, bsize, size);
    end = shm__offset(t, b) + size + 8; /* the high-water mark */
    if (end > t->high_water) {
        t->high_water = end;
        if (SHM__UNLIKELY(shm__map_needs(end) > t->map_clean)) shm__clean_map(t, end, NULL);
    }
    return 1;
}

/* Resizes used block b to `size` (a block size) where it is; 0, changing
   nothing, when it cannot. */
SHM__INLINE int shm__resize_in_place(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    if (size > shm__size(b)) return shm__grow_in_place(t, b, size);
    return shm__shrink_in_place(t, b, size);
}

static void *shm__commit_resize(shmalloc_tlsf *t, void *ptr, size_t n, const shm__resize *r)
{
    shm__block *b = shm__of_user(ptr);
    size_t keep = shm__size(b) - 8 < n ? shm__size(b) - 8 : n;
    if (r->how == SHM__IN_PLACE) {
        shm__resize_in_place(t, b, r->size);
        return ptr;
    }
    SHM__UNPOISON(ptr, shm__size(b) - 8); /* the slack after the old request */
    if (r->how == SHM__MOVE) {
        void *q = r->target ? shm__take(t, r->target, r->fl, r->sl, r->size, shm__align_of(b))
                            : shm__take_top_aligned(t, r->size, shm__align_of(b));
        SHMALLOC_MEMCPY(q, ptr, keep);
        shm__release(t, b);
        return q;
    }
    { /* SHM__INTO_PREV: b's header is inside the copy's destination */
        shm__block *prev = b->prev_phys;
        size_t header = b->header, psize = shm__size(prev);
        shm__remove(t, prev);
        shm__mark_used(t, b, 0);
        if ((header & SHM__SIZE_MASK) >= SHM__LARGE) shm__mark_large(t, b);
        SHM__UNPOISON((char *)prev + 32, psize - 32);
        SHMALLOC_MEMMOVE(shm__user(prev), ptr, keep);
        shm__set_used(prev, psize + (header & SHM__SIZE_MASK), header & SHM__ALIGN_MASK);
        shm__mark_used(t, prev, 1);
        if (psize + (header & SHM__SIZE_MASK) >= SHM__LARGE) shm__mark_large(t, prev);
        shm__resize_in_place(t, prev, r->size); /* then the next block, or the tail */
        return shm__user(prev);
    }
}

/* ---- TLSF public API -------------------------------------------------- */

/* The capacity, and the largest request malloc can serve within it (a
   block of shm__block_size(n) <= capacity, a multiple of 16), so that
   malloc tests a request's size once. */
static void shm__set_capacity(shmalloc_tlsf *t, size_t capacity)
{
    size_t most = capacity >= SHM__MIN_BLOCK ? capacity - 8 - SHM__REDZONE : 0;
    t->capacity = capacity;
    t->malloc_limit = most < SHMALLOC_TLSF_MAX_REQUEST ? most : SHMALLOC_TLSF_MAX_REQUEST;
}

/* The classes a region of `bytes` can need, and the control block's size:
   small heaps get small control blocks. */
static unsigned shm__fl_count(size_t bytes)
{
    unsigned fl, sl;
    shm__mapping_insert(bytes, &fl, &sl);
    return fl + 1 < SHM__FL_COUNT ? fl + 1 : SHM__FL_COUNT;
}

static size_t shm__control_bytes(size_t bytes)
{
    size_t n = sizeof(shmalloc_tlsf) + shm__fl_count(bytes) * sizeof(shm__block[SHM__SL_COUNT]);
    return (n + 15) & ~(size_t)15;
}

/* ---- separate metadata: a core that never touches the memory it manages
   Every block has a record in one array obtained through the library's
   allocator hooks: its offset and size, its physical neighbours and, when
   free, its list links, all as record indices.  Used blocks are found from
   their offset through buckets chained through their records' fnext,
   and the block that holds any offset through the start map's marks.
   Placement is the inline core's: the same mapping, filing order, carves
   and top, so the same calls give the same offsets on every PE.  What
   the core would write into blocks (calloc's zeroing, a moving realloc's
   copy) goes through the caller's shmalloc_memops, or fails without it.
   Record 0 closes the chain of blocks (its next is the first, its prev the
   last) and has size 0, so that a neighbour test needs no NULL test;
   records 1 .. lists are the free lists' sentinels, offset ~0 so that
   every block files below them; spare records form a stack through fnext,
   and one never used has fnext 0, meaning the record after it. ---- */
typedef struct shm__rec {
    uint64_t off;          /* of the block (its user pointer) from base */
    uint64_t size;         /* bytes | SHM__FREE | SHM__TOP; a used block's align log2 on top */
    uint32_t prev, next;   /* physical neighbours, 0 at the ends; a sentinel's next: its list bits */
    uint32_t fprev, fnext; /* free: the list (a first's fprev is stale, shm__rec_before); used: the bucket chain; spare: the stack */
} shm__rec;

struct shm__records {
    shm__rec *r;           /* on a cache line's start, in the allocation at r_mem */
    void *r_mem;
    uint32_t cap, spare;   /* records allocated; top of the spare stack */
    uint32_t fresh;        /* the first record never used */
    size_t capacity;       /* bytes of the blocks (the inline paths see 0, so come here) */
    size_t malloc_limit;   /* malloc(n) can succeed only for 1 <= n <= this: shm__rec_set_capacity */
    uint32_t *buckets;     /* as many as records: a chain of one on average */
    uint32_t bucket_shift; /* 64 - log2(buckets) */
    uint64_t *map;         /* the start map: bit i, a used block starts in [32 i, 32 i + 32), up to the highest block */
    size_t map_words;
    uint64_t *large;       /* the large marks, after the map in its allocation */
    size_t large_words;
    uint32_t top;          /* the last block when free, in no list; 0: none */
    uint32_t lists;        /* fl_count * SHM__SL_COUNT */
    shmalloc_memops ops;
};

#define SHM__REC_HEADROOM 4 /* records one call can create, at most */

SHM__INLINE shm__rec *shm__r(const shmalloc_tlsf *t) { return t->records->r; }
SHM__INLINE uint32_t shm__rec_list(size_t size) { return (uint32_t)(shm__list_key(size) - SHM__KEY_BIAS + 1); }
SHM__INLINE size_t shm__rec_fsize(const shm__rec *x) { return (size_t)x->size & ~(size_t)15; }
SHM__INLINE size_t shm__rec_usize(const shm__rec *x) { return (size_t)x->size & SHM__SIZE_MASK; }
SHM__INLINE size_t shm__rec_alignment(const shm__rec *x) { return (size_t)1 << (x->size >> SHM__ALIGN_SHIFT); }
/* A request's block: no header, so its bytes rounded to 16, at least the minimum. */
SHM__INLINE size_t shm__rec_bsize(size_t n)
{
    size_t s = (n + 15) & ~(size_t)15;
    return s < SHM__MIN_BLOCK ? SHM__MIN_BLOCK : s;
}
SHM__INLINE void *shm__rec_user(const shmalloc_tlsf *t, uint32_t b) { return t->base + shm__r(t)[b].off; }

SHM__INLINE uint32_t *shm__bucket(const struct shm__records *s, uint64_t off)
{
    return &s->buckets[(uint32_t)(off * 0x9E3779B97F4A7C15ull >> s->bucket_shift)];
}

static void shm__bucket_put(struct shm__records *s, uint32_t i)
{
    uint32_t *h = shm__bucket(s, s->r[i].off);
    s->r[i].fnext = *h;
    *h = i;
}

/* The used block at off: its record, or 0. */
SHM__INLINE uint32_t shm__rec_find(const shmalloc_tlsf *t, uint64_t off)
{
    const struct shm__records *s = t->records;
    uint32_t i = *shm__bucket(s, off);
    if (SHM__LIKELY(s->r[i].off == off)) return i; /* the chain's first; r[0], offset 0, answers 0 for an empty one */
    while (i && s->r[i].off != off) i = s->r[i].fnext;
    return i;
}

/* A separate core's start map has a bit per 32 bytes, not 16: its blocks
   have no header, so at least SHM__MIN_BLOCK lies between two starts. */
#define SHM__REC_MAP_LOG2 5
#define SHM__REC_MAP_WORD ((size_t)64 << SHM__REC_MAP_LOG2) /* bytes a map word spans */
SHM__INLINE size_t shm__rec_map_words(size_t end) { return (end + SHM__REC_MAP_WORD - 1) / SHM__REC_MAP_WORD; }

SHM__INLINE void shm__rec_flip_start(struct shm__records *s, size_t off)
{
    s->map[off >> (SHM__REC_MAP_LOG2 + 6)] ^= (uint64_t)1 << (off >> SHM__REC_MAP_LOG2 & 63);
}

/* Used block i's start bit and, if it is large, its mark flip. */
SHM__INLINE void shm__rec_mark(struct shm__records *s, uint32_t i)
{
    size_t off = (size_t)s->r[i].off;
    shm__rec_flip_start(s, off);
    if (SHM__UNLIKELY(shm__rec_usize(&s->r[i]) >= SHM__LARGE))
        shm__marks_flip(s->large, s->large_words, off >> SHM__LARGE_LOG2);
}

/* Used block i, at ptr, crossed SHM__LARGE in a resize in place: its mark
   flips.  Out of line, returning ptr for a tail call: a flip inline costs
   realloc a frame. */
static SHM__NOINLINE void *shm__rec_remark(struct shm__records *s, uint32_t i, void *ptr)
{
    shm__marks_flip(s->large, s->large_words, (size_t)s->r[i].off >> SHM__LARGE_LOG2);
    return ptr;
}

/* Takes the used block at off out of its bucket (not the map): its record, or 0. */
SHM__INLINE uint32_t shm__rec_unhash(shmalloc_tlsf *t, uint64_t off)
{
    struct shm__records *s = t->records;
    uint32_t *h = shm__bucket(s, off), i;
    for (i = *h; i; h = &s->r[i].fnext, i = *h)
        if (s->r[i].off == off) {
            *h = s->r[i].fnext;
            return i;
        }
    return 0;
}

/* The map and marks cover the blocks up to `end` bytes: 0, or -1
   (nothing changed) when the hooks have no memory for them.  They double. */
static int shm__rec_cover(struct shm__records *s, size_t end)
{
    size_t words = s->map_words, need = shm__rec_map_words(end), large;
    uint64_t *m;
    if (need <= words) return 0;
    words = words * 2 > need ? words * 2 : need;
    large = shm__large_words(words * SHM__REC_MAP_WORD);
    if (!(m = (uint64_t *)shmalloc_mem_alloc(words + shm__marks_words(large), sizeof *m))) return -1;
    if (s->map) {
        SHMALLOC_MEMCPY(m, s->map, s->map_words * sizeof *m);
        SHMALLOC_MEMCPY(m + words, s->large, s->large_words * sizeof *m);
    }
    shm__marks_rebuild(m + words, large, s->large_words);
    shmalloc_mem_free(s->map);
    s->map = m;
    s->map_words = words;
    s->large = m + words;
    s->large_words = large;
    return 0;
}

SHM__INLINE uint32_t shm__rec_new(shmalloc_tlsf *t)
{
    struct shm__records *s = t->records;
    uint32_t i = s->spare, nx = s->r[i].fnext;
    s->spare = nx ? nx : i + 1;
    s->fresh += !nx;
    return i;
}

SHM__INLINE void shm__rec_drop(shmalloc_tlsf *t, uint32_t i)
{
    struct shm__records *s = t->records;
    s->r[i].fnext = s->spare;
    s->spare = i;
}

/* An array of cap zeroed records that starts a cache line, so that none
   spans two: its allocation goes to *mem, or NULL. */
static shm__rec *shm__rec_array(uint32_t cap, void **mem)
{
    char *p = (char *)shmalloc_mem_alloc((size_t)cap + 2, sizeof(shm__rec));
    *mem = p;
    return p ? (shm__rec *)(void *)(p + ((0u - (uintptr_t)p) & 63)) : NULL;
}

/* Doubles the records and the buckets: 0, or -1 (nothing changed) when
   the hooks have no memory. */
static SHM__NOINLINE int shm__rec_more(shmalloc_tlsf *t)
{
    struct shm__records *s = t->records;
    uint32_t cap = s->cap * 2, i;
    shm__rec *r;
    uint32_t *b;
    void *mem;
    if (s->cap > UINT32_MAX / 2) return -1;
    r = shm__rec_array(cap, &mem);
    b = (uint32_t *)shmalloc_mem_alloc(cap, sizeof *b);
    if (!r || !b) {
        shmalloc_mem_free(mem);
        shmalloc_mem_free(b);
        return -1;
    }
    SHMALLOC_MEMCPY(r, s->r, s->cap * sizeof *r); /* the new half is zeroed: never used */
    shmalloc_mem_free(s->r_mem);
    shmalloc_mem_free(s->buckets);
    s->r = r;
    s->r_mem = mem;
    s->buckets = b;
    s->cap = cap;
    s->bucket_shift--;
    for (i = s->r[0].next; i; i = s->r[i].next)
        if (!(s->r[i].size & SHM__FREE)) shm__bucket_put(s, i);
    return 0;
}

/* Are the records too few for what a call may create? */
SHM__INLINE int shm__rec_short(const shmalloc_tlsf *t)
{
    return t->records->fresh + SHM__REC_HEADROOM > t->records->cap;
}

/* Room for the records a call may create: 0, or -1 when there is none. */
SHM__INLINE int shm__rec_room(shmalloc_tlsf *t)
{
    return SHM__UNLIKELY(shm__rec_short(t)) ? shm__rec_more(t) : 0;
}

/* Does the start map reach `end`, where a block taken from the top would
   end?  It grows if not: 1, or 0 when the hooks have no memory.  The map
   follows the highest block so, not the limit. */
SHM__INLINE int shm__rec_mapped(shmalloc_tlsf *t, size_t end)
{
    struct shm__records *s = t->records;
    return SHM__LIKELY(end <= s->map_words * SHM__REC_MAP_WORD) ||
           !shm__rec_cover(s, end < s->capacity ? end : s->capacity);
}

/* shm__rec_room, and the map for a block of n bytes on `align` from the
   top: what a call's status says before the PEs agree on it. */
static int shm__rec_ready(shmalloc_tlsf *t, size_t n, size_t align)
{
    const struct shm__records *s = t->records;
    size_t end = s->top ? (size_t)s->r[s->top].off + shm__rec_bsize(n) + (align > SHMALLOC_ALIGNMENT ? align : 0) : 0;
    return !shm__rec_mapped(t, end) || shm__rec_room(t) ? -1 : 0;
}

/* As shm__set_capacity: malloc tests a request's size once. */
static void shm__rec_set_capacity(struct shm__records *s, size_t capacity)
{
    size_t most = capacity >= SHM__MIN_BLOCK ? capacity & ~(size_t)15 : 0;
    s->capacity = capacity;
    s->malloc_limit = most < SHMALLOC_TLSF_MAX_REQUEST ? most : SHMALLOC_TLSF_MAX_REQUEST;
}

/* ---- the free lists, as the inline core's, over record indices ---- */
SHM__INLINE void shm__rec_filled(shmalloc_tlsf *t, uint32_t l)
{
    uint32_t bits = shm__r(t)[l].next, fl = bits >> 8;
    t->fl_bitmap |= (uint64_t)1 << fl;
    t->sl_bitmap[fl] |= 1u << (bits & 255);
}

SHM__INLINE void shm__rec_emptied(shmalloc_tlsf *t, uint32_t l)
{
    uint32_t bits = shm__r(t)[l].next, fl = bits >> 8;
    t->sl_bitmap[fl] &= ~(1u << (bits & 255));
    if (!t->sl_bitmap[fl]) t->fl_bitmap &= ~((uint64_t)1 << fl);
}

/* First when below the head, else last (shm__push_on), selected without a branch. */
SHM__INLINE void shm__rec_push(shmalloc_tlsf *t, uint32_t b, uint32_t l)
{
    shm__rec *r = shm__r(t);
    uint32_t head = r[l].fnext, last = r[l].fprev, above = 0u - (uint32_t)(r[b].off > r[head].off);
    uint32_t prev = l ^ ((last ^ l) & above), next = head ^ ((l ^ head) & above);
    r[b].fprev = prev;
    r[prev].fnext = b;
    r[b].fnext = next;
    r[next].fprev = b;
    if (head == l) shm__rec_filled(t, l);
}

/* What comes before free block b, listed for `size` bytes: a pop leaves
   the new first's fprev naming the block it took, which no longer links
   to it; that saves the pop a write to a cold record. */
SHM__INLINE uint32_t shm__rec_before(const shmalloc_tlsf *t, uint32_t b, size_t size)
{
    uint32_t prev = shm__r(t)[b].fprev;
    return shm__r(t)[prev].fnext == b ? prev : shm__rec_list(size);
}

/* Free block b, listed for `size` bytes, leaves its list. */
SHM__INLINE void shm__rec_remove(shmalloc_tlsf *t, uint32_t b, size_t size)
{
    shm__rec *r = shm__r(t);
    uint32_t next = r[b].fnext, prev = shm__rec_before(t, b, size);
    r[next].fprev = prev;
    r[prev].fnext = next;
    if (next == prev) shm__rec_emptied(t, prev);
}

SHM__INLINE void shm__rec_pop(shmalloc_tlsf *t, uint32_t b, uint32_t l)
{
    shm__rec *r = shm__r(t);
    uint32_t next = r[b].fnext;
    r[l].fnext = next;
    if (next == l) {
        r[l].fprev = l;
        shm__rec_emptied(t, l);
    }
}

/* Free block b, not the top, changed size from old: to its new list, if another. */
SHM__INLINE void shm__rec_relist(shmalloc_tlsf *t, uint32_t b, size_t old, size_t size)
{
    if (shm__list_key(old) == shm__list_key(size)) return;
    shm__rec_remove(t, b, old);
    shm__rec_push(t, b, shm__rec_list(size));
}

/* shm__find_above over the records: the first non-empty list above *l. */
SHM__INLINE int shm__rec_above(const shmalloc_tlsf *t, uint32_t *l)
{
    uint32_t bits = shm__r(t)[*l].next;
    size_t i = shm__index_above(t, bits >> 8, 1u << (bits & 255));
    if (i == SIZE_MAX) return 0;
    *l = 1 + (uint32_t)i;
    return 1;
}

/* ---- taking ---- */
/* Used block b is indexed and marked; a large one's mark flips at a tail
   call, so that taking keeps no frame. */
SHM__INLINE void *shm__rec_taken(shmalloc_tlsf *t, uint32_t b)
{
    struct shm__records *s = t->records;
    size_t off = (size_t)s->r[b].off, size = shm__rec_usize(&s->r[b]);
    shm__bucket_put(s, b);
    shm__rec_flip_start(s, off);
    if (off + size > t->high_water) t->high_water = off + size;
    if (SHM__UNLIKELY(size >= SHM__LARGE)) return shm__rec_remark(s, b, t->base + off);
    return t->base + off;
}

/* A new used record of `size` bytes at free f's start; f moves up behind
   it (its list is the caller's business). */
SHM__INLINE uint32_t shm__rec_cut(shmalloc_tlsf *t, uint32_t f, size_t size, size_t flags)
{
    shm__rec *r = shm__r(t);
    uint32_t u = shm__rec_new(t), p = r[f].prev;
    r[u].off = r[f].off;
    r[u].size = size | flags;
    r[u].prev = p;
    r[u].next = f;
    r[p].next = u;
    r[f].prev = u;
    r[f].off += size;
    return u;
}

/* shm__find_own over the records: 0 for none. */
SHM__INLINE uint32_t shm__rec_find_own(const shmalloc_tlsf *t, uint32_t l, size_t size)
{
    const shm__rec *r = shm__r(t);
    uint32_t b = r[l].fnext;
    unsigned k;
    for (k = 0; k < SHM__OWN_SCAN && b != l; k++, b = r[b].fnext)
        if (r[b].size >= size) return b;
    return 0;
}

/* The block of `size` bytes (a block size) that shm__rec_find_own finds
   in its own list, taken whole, or NULL. */
static SHM__NOINLINE void *shm__rec_take_own(shmalloc_tlsf *t, size_t size)
{
    uint32_t h;
    if (size > t->records->capacity || !(h = shm__rec_find_own(t, shm__rec_list(size), size))) return NULL;
    shm__rec_remove(t, h, shm__rec_fsize(&shm__r(t)[h]));
    shm__r(t)[h].size &= ~SHM__FREE;
    return shm__rec_taken(t, h);
}

/* A used block of `size` bytes from the top; when the top has too few, an
   unaligned request (flags 0) tries its own list (shm__rec_take_own). */
static SHM__NOINLINE void *shm__rec_take_top(shmalloc_tlsf *t, size_t size, size_t flags)
{
    shm__rec *r = shm__r(t);
    uint32_t top = t->records->top;
    size_t tsize;
    if (!top) return flags ? NULL : shm__rec_take_own(t, size);
    tsize = shm__rec_fsize(&r[top]);
    if (tsize < size || !shm__rec_mapped(t, r[top].off + size)) return flags ? NULL : shm__rec_take_own(t, size);
    if (shm__rest_splits(tsize - size)) {
        uint32_t u = shm__rec_cut(t, top, size, flags);
        r[top].size = (tsize - size) | SHM__FREE | SHM__TOP;
        return shm__rec_taken(t, u);
    }
    r[top].size = tsize | flags;
    t->records->top = 0;
    return shm__rec_taken(t, top);
}

SHM__INLINE void *shm__rec_whole(shmalloc_tlsf *t, uint32_t b, uint32_t l)
{
    shm__rec_pop(t, b, l);
    shm__r(t)[b].size &= ~SHM__FREE;
    return shm__rec_taken(t, b);
}

/* As shm__carve: the front is taken, the rest keeps b's record and its
   list place when it stays in b's list. */
SHM__INLINE void *shm__rec_carve(shmalloc_tlsf *t, uint32_t b, uint32_t l, size_t size)
{
    shm__rec *r = shm__r(t);
    size_t rest = shm__rec_fsize(&r[b]) - size;
    uint32_t u;
    if (l == shm__rec_list(size) || !shm__rest_splits(rest)) return shm__rec_whole(t, b, l);
    u = shm__rec_cut(t, b, size, 0);
    r[b].size = rest | SHM__FREE;
    if (shm__rec_list(rest) != l) {
        shm__rec_pop(t, b, l);
        shm__rec_push(t, b, shm__rec_list(rest));
    }
    return shm__rec_taken(t, u);
}

/* As shm__carve_end: `size` at `align` from b's end; b keeps its start,
   the bytes after the aligned block become a free block or its slack. */
static void *shm__rec_carve_end(shmalloc_tlsf *t, uint32_t b, uint32_t l, size_t size, size_t align)
{
    shm__rec *r = shm__r(t);
    uintptr_t base = (uintptr_t)t->base;
    size_t end = r[b].off + shm__rec_fsize(&r[b]), aoff, front, tail;
    uint32_t a = shm__rec_new(t), n = r[b].next;
    aoff = ((base + end - size) & ~(uintptr_t)(align - 1)) - base;
    front = aoff - r[b].off;
    tail = end - aoff - size;
    if (shm__tail_stays_apart(tail, size)) {
        uint32_t f = shm__rec_new(t);
        r[f].off = aoff + size;
        r[f].size = tail | SHM__FREE;
        r[f].prev = a;
        r[f].next = n;
        r[n].prev = f;
        r[a].next = f;
        shm__rec_push(t, f, shm__rec_list(tail));
    } else {
        size += tail;
        r[a].next = n;
        r[n].prev = a;
    }
    r[a].off = aoff;
    r[a].size = size | shm__align_bits(align);
    r[a].prev = b;
    r[b].next = a;
    r[b].size = front | SHM__FREE;
    if (shm__rec_list(front) != l) {
        shm__rec_pop(t, b, l);
        shm__rec_push(t, b, shm__rec_list(front));
    }
    return shm__rec_taken(t, a);
}

/* The block before the one shm__rec_malloc of `size` bytes (a block
   size), which no search of the lists above serves, takes from its own
   list, or 0: as shm__own_prev. */
static uint32_t shm__rec_own_prev(const shmalloc_tlsf *t, size_t size, size_t align)
{
    const shm__rec *r = shm__r(t);
    uint32_t top = t->records->top, b;
    if (align > SHMALLOC_ALIGNMENT || size > t->records->capacity || (top && shm__rec_fsize(&r[top]) >= size))
        return 0;
    b = shm__rec_find_own(t, shm__rec_list(size), size);
    return b ? shm__rec_before(t, b, shm__rec_fsize(&r[b])) : 0;
}

static void *shm__rec_malloc(shmalloc_tlsf *t, size_t n);

/* malloc when the records are short: they double, and malloc starts again
   (a block size is its own).  Reached at a tail call: malloc keeps no
   frame for it. */
static SHM__NOINLINE void *shm__rec_malloc_more(shmalloc_tlsf *t, size_t size)
{
    return shm__rec_more(t) ? NULL : shm__rec_malloc(t, size);
}

/* malloc's block of `size` bytes when no list serves it: as the inline
   malloc, the top, then the own list. */
static SHM__NOINLINE void *shm__rec_malloc_top(shmalloc_tlsf *t, size_t size)
{
    uint32_t h = t->records->top; /* 0 for none: r[0]'s size is 0 */
    if (SHM__UNLIKELY(shm__rec_short(t))) return shm__rec_malloc_more(t, size);
    if (SHM__LIKELY(shm__rec_fsize(&shm__r(t)[h]) >= size + SHM__MIN_BLOCK &&
                    shm__r(t)[h].off + size <= t->records->map_words * SHM__REC_MAP_WORD)) {
        shm__r(t)[h].size -= size; /* take_top's common cut, inline: its frame would cost more */
        return shm__rec_taken(t, shm__rec_cut(t, h, size, 0));
    }
    return shm__rec_take_top(t, size, 0);
}

/* malloc's block of `size` bytes from the lists, or else the top. */
static SHM__NOINLINE void *shm__rec_malloc_listed(shmalloc_tlsf *t, size_t size)
{
    uint32_t l = shm__rec_list(size), h = shm__r(t)[l].fnext;
    if (SHM__UNLIKELY(shm__rec_short(t))) return shm__rec_malloc_more(t, size);
    if (shm__r(t)[h].size >= size) return shm__rec_whole(t, h, l);
    if (shm__rec_above(t, &l)) return shm__rec_carve(t, shm__r(t)[l].fnext, l, size);
    return shm__rec_malloc_top(t, size);
}

/* The inline core's malloc sends here every request its paths refuse:
   all of a separate core's (see shmalloc_tlsf_create_separate), and its
   own 0 and too large, which find no records.  Its two ways are out of
   line, at tail calls: with no listed block, the lists' frame is not paid. */
static void *shm__rec_malloc(shmalloc_tlsf *t, size_t n)
{
    if (!t->records || n - 1 >= t->records->malloc_limit) return NULL;
    if (!t->fl_bitmap) return shm__rec_malloc_top(t, shm__rec_bsize(n)); /* every list is empty */
    return shm__rec_malloc_listed(t, shm__rec_bsize(n));
}

/* The top's aligned block; the gap before it becomes a listed free block. */
static void *shm__rec_top_aligned(shmalloc_tlsf *t, size_t size, size_t align)
{
    shm__rec *r = shm__r(t);
    uint32_t top = t->records->top, g;
    size_t gap, tsize;
    if (!top) return NULL;
    gap = shm__gap_at((uintptr_t)t->base + r[top].off, align);
    tsize = shm__rec_fsize(&r[top]);
    if (tsize < gap || tsize - gap < size || !shm__rec_mapped(t, r[top].off + gap + size)) return NULL;
    if (gap) {
        g = shm__rec_cut(t, top, gap, SHM__FREE);
        r[top].size = (tsize - gap) | SHM__FREE | SHM__TOP;
        shm__rec_push(t, g, shm__rec_list(gap));
    }
    return shm__rec_take_top(t, size, shm__align_bits(align));
}

static void *shm__rec_align(shmalloc_tlsf *t, size_t align, size_t n)
{
    size_t size, need;
    uint32_t l;
    if (align <= SHMALLOC_ALIGNMENT) return shm__rec_malloc(t, n);
    if (n - 1 >= SHMALLOC_TLSF_MAX_REQUEST || shm__rec_room(t)) return NULL;
    size = shm__rec_bsize(n);
    need = shm__aligned_need(size, align);
    if (need > t->records->capacity) return shm__rec_top_aligned(t, size, align);
    l = shm__rec_list(need);
    if (shm__r(t)[shm__r(t)[l].fnext].size < need && !shm__rec_above(t, &l)) return shm__rec_top_aligned(t, size, align);
    return shm__rec_carve_end(t, shm__r(t)[l].fnext, l, size, align);
}

/* ---- giving back ---- */
/* Used block b, between free p and n, merges into p (and n, when free).
   The release's out-of-line steps return SHMALLOC_TLSF_OK for a free's
   tail call. */
static SHM__NOINLINE int shm__rec_merge_prev(shmalloc_tlsf *t, uint32_t b, uint32_t p, uint32_t n)
{
    shm__rec *r = shm__r(t);
    size_t psize = shm__rec_fsize(&r[p]), total = psize + shm__rec_usize(&r[b]);
    uint32_t after = n;
    if (r[n].size & SHM__FREE) {
        total += shm__rec_fsize(&r[n]);
        after = r[n].next;
        if (n == t->records->top) t->records->top = 0;
        else shm__rec_remove(t, n, shm__rec_fsize(&r[n]));
        shm__rec_drop(t, n);
    }
    r[p].next = after;
    r[after].prev = p;
    shm__rec_drop(t, b);
    if (!after) { /* p reaches the end: the top */
        shm__rec_remove(t, p, psize);
        r[p].size = total | SHM__FREE | SHM__TOP;
        t->records->top = p;
        return SHMALLOC_TLSF_OK;
    }
    r[p].size = total | SHM__FREE;
    shm__rec_relist(t, p, psize, total);
    return SHMALLOC_TLSF_OK;
}

/* Used block b, after used p, merges with free n, not the top, which
   takes b's start and keeps its list place when its class stays. */
static SHM__NOINLINE int shm__rec_merge_next(shmalloc_tlsf *t, uint32_t b, uint32_t p, uint32_t n)
{
    shm__rec *r = shm__r(t);
    size_t nsize = shm__rec_fsize(&r[n]), total = nsize + shm__rec_usize(&r[b]);
    r[n].off = r[b].off;
    r[n].prev = p;
    r[p].next = n;
    shm__rec_drop(t, b);
    r[n].size = total | SHM__FREE;
    shm__rec_relist(t, n, nsize, total);
    return SHMALLOC_TLSF_OK;
}

/* Used block b, between used blocks, is filed. */
static SHM__NOINLINE int shm__rec_file(shmalloc_tlsf *t, uint32_t b, size_t size)
{
    shm__r(t)[b].size = size | SHM__FREE;
    shm__rec_push(t, b, shm__rec_list(size));
    return SHMALLOC_TLSF_OK;
}

/* Used block b, out of its bucket, merges with its free neighbours. */
SHM__INLINE int shm__rec_release(shmalloc_tlsf *t, uint32_t b)
{
    shm__rec *r = shm__r(t);
    size_t size = shm__rec_usize(&r[b]);
    uint32_t p = r[b].prev, n = r[b].next;
    if (r[p].size & SHM__FREE) return shm__rec_merge_prev(t, b, p, n);
    if (r[n].size & SHM__TOP) { /* inline: a call would cost the free a frame */
        r[n].off = r[b].off;
        r[n].size += size;
        r[n].prev = p;
        r[p].next = n;
        shm__rec_drop(t, b);
    } else if (r[n].size & SHM__FREE) {
        return shm__rec_merge_next(t, b, p, n);
    } else if (!n) {
        r[b].size = size | SHM__FREE | SHM__TOP;
        t->records->top = b;
    } else {
        return shm__rec_file(t, b, size);
    }
    return SHMALLOC_TLSF_OK;
}

/* The used block that holds offset off, below the capacity, or 0: the
   map and marks say where it starts, a bucket which it is. */
static uint32_t shm__rec_holder(const shmalloc_tlsf *t, uint64_t off)
{
    const struct shm__records *s = t->records;
    size_t i = (size_t)off >> SHM__REC_MAP_LOG2;
    uint32_t b = s->r[0].prev; /* the last block */
    if (i >> 6 >= s->map_words) { /* past the map: the last used block, grown in place beyond it, or the top */
        if (s->r[b].off > off) b = s->r[b].prev;
        return !(s->r[b].size & SHM__FREE) && off - s->r[b].off < shm__rec_usize(&s->r[b]) ? b : 0;
    }
    b = 0;
    do { /* twice when off's own 32 bytes hold a start above it */
        i = shm__holder_bit(s->map, s->map_words, s->large, s->large_words, s->large_words, i, SHM__REC_MAP_LOG2);
        if (i == SIZE_MAX) return 0;
        if (!(b = shm__rec_find(t, (uint64_t)i << SHM__REC_MAP_LOG2)))
            b = shm__rec_find(t, ((uint64_t)i << SHM__REC_MAP_LOG2) + 16); /* the one block that starts in them */
    } while (b && s->r[b].off > off && i-- > 0);
    return b && off - s->r[b].off < shm__rec_usize(&s->r[b]) ? b : 0;
}

/* Why ptr, which no bucket holds, is not a used block, as shm__invalid
   says it: in memory handed out and freed since, a double free; elsewhere
   not a block's start. */
static SHM__NOINLINE int shm__rec_invalid(const shmalloc_tlsf *t, const void *ptr)
{
    uintptr_t q = (uintptr_t)ptr, base = (uintptr_t)t->base;
    if (q < base || q >= (uintptr_t)t->limit) return SHMALLOC_TLSF_NOT_IN_HEAP;
    if (q - base >= t->high_water) return SHMALLOC_TLSF_NOT_A_BLOCK; /* never handed out */
    if (q - base >= t->records->capacity) return SHMALLOC_TLSF_NOT_IN_HEAP; /* the spec area */
    return shm__rec_holder(t, q - base) ? SHMALLOC_TLSF_NOT_A_BLOCK : SHMALLOC_TLSF_ALREADY_FREE; /* the blocks tile */
}

SHM__INLINE uint64_t shm__rec_offset(const shmalloc_tlsf *t, const void *ptr)
{
    return (uint64_t)((uintptr_t)ptr - (uintptr_t)t->base);
}

/* free's pointer at offset off, which no bucket holds: NULL, or a bad one.
   Its offset, not the pointer, so that the free keeps one value less. */
static SHM__NOINLINE int shm__rec_unheld(const shmalloc_tlsf *t, uint64_t off)
{
    uintptr_t q = (uintptr_t)t->base + (uintptr_t)off;
    return q ? shm__rec_invalid(t, (const void *)q) : SHMALLOC_TLSF_OK;
}

/* A large block's free: its mark flips out of line, so that the others' keeps no frame. */
static SHM__NOINLINE int shm__rec_free_large(shmalloc_tlsf *t, uint32_t b)
{
    shm__rec_mark(t->records, b);
    return shm__rec_release(t, b);
}

/* Used block b, out of its bucket, is freed. */
SHM__INLINE int shm__rec_free_used(shmalloc_tlsf *t, uint32_t b)
{
    if (SHM__UNLIKELY(shm__rec_usize(&shm__r(t)[b]) >= SHM__LARGE)) return shm__rec_free_large(t, b);
    shm__rec_flip_start(t->records, (size_t)shm__r(t)[b].off);
    return shm__rec_release(t, b);
}

/* The inline core's free sends here every pointer its start map refuses:
   all of a separate core's, and its own bad ones; NULL is no error. */
static int shm__rec_free(shmalloc_tlsf *t, void *ptr)
{
    uint32_t b;
    uint64_t off;
    if (!t->records) return ptr ? shm__invalid(t, ptr) : SHMALLOC_TLSF_OK;
    off = shm__rec_offset(t, ptr);
    b = shm__rec_unhash(t, off); /* NULL's offset lies beyond every block */
    if (SHM__UNLIKELY(!b)) return shm__rec_unheld(t, off);
    return shm__rec_free_used(t, b);
}

static int shm__rec_validate(const shmalloc_tlsf *t, const void *ptr)
{
    return shm__rec_find(t, shm__rec_offset(t, ptr)) ? SHMALLOC_TLSF_OK : shm__rec_invalid(t, ptr);
}

/* ---- resizing ---- */
/* Free block f, listed for `old` bytes, not the top, changed size to list
   l's: to that list, returning ptr for a resize's tail call, so that the
   resize keeps no frame. */
static SHM__NOINLINE void *shm__rec_relisted(shmalloc_tlsf *t, uint32_t f, size_t old, uint32_t l, void *ptr)
{
    shm__rec_remove(t, f, old);
    shm__rec_push(t, f, l);
    return ptr;
}

/* Used block b (at ptr) gives back its bytes beyond `size` when they are
   more than a minimum block (else they stay its slack, as in the inline
   core): ptr. */
SHM__INLINE void *shm__rec_give_back(shmalloc_tlsf *t, uint32_t b, size_t size, size_t tail, void *ptr)
{
    shm__rec *r = shm__r(t);
    uint32_t n = r[b].next, f;
    r[b].size -= tail;
    if (r[n].size & SHM__FREE) {
        size_t nsize = shm__rec_fsize(&r[n]);
        r[n].off = r[b].off + size;
        r[n].size += tail;
        if ((r[n].size & SHM__TOP) || shm__list_key(nsize) == shm__list_key(nsize + tail)) return ptr;
        return shm__rec_relisted(t, n, nsize, shm__rec_list(nsize + tail), ptr);
    }
    f = shm__rec_new(t);
    r[f].off = r[b].off + size;
    r[f].prev = b;
    r[f].next = n;
    r[b].next = f;
    r[n].prev = f;
    if (!n) {
        r[f].size = tail | SHM__FREE | SHM__TOP;
        t->records->top = f;
        return ptr;
    }
    r[f].size = tail | SHM__FREE;
    shm__rec_push(t, f, shm__rec_list(tail));
    return ptr;
}

SHM__INLINE void shm__rec_shrink(shmalloc_tlsf *t, uint32_t b, size_t size)
{
    size_t tail = shm__rec_usize(&shm__r(t)[b]) - size;
    if (shm__tail_goes_back(tail)) shm__rec_give_back(t, b, size, tail, NULL);
}

/* Used block b grows to `size` into a free next block: 0, changing
   nothing, when it is not free or too small. */
SHM__INLINE int shm__rec_grow(shmalloc_tlsf *t, uint32_t b, size_t size)
{
    shm__rec *r = shm__r(t);
    size_t bsize = shm__rec_usize(&r[b]), nsize;
    uint32_t n = r[b].next, after;
    if (!(r[n].size & SHM__FREE)) return 0;
    nsize = shm__rec_fsize(&r[n]);
    if (bsize + nsize < size) return 0;
    if (shm__rest_splits(bsize + nsize - size)) {
        r[n].off += size - bsize;
        r[n].size -= size - bsize;
        if (n != t->records->top) shm__rec_relist(t, n, nsize, bsize + nsize - size);
    } else { /* too little is left for a block: b takes all of n */
        after = r[n].next;
        if (n == t->records->top) t->records->top = 0;
        else shm__rec_remove(t, n, nsize);
        r[b].next = after;
        r[after].prev = b;
        shm__rec_drop(t, n);
        size = bsize + nsize;
    }
    r[b].size += size - bsize;
    if (r[b].off + size > t->high_water) t->high_water = r[b].off + size;
    return 1;
}

/* Can used block b grow to `size` by sliding down into its free previous
   block (shm__may_slide)?  Only into one at least as large as the bytes
   kept, so that the copy's ranges never overlap (a device's copy engine
   need not allow it). */
static uint32_t shm__rec_slide(const shmalloc_tlsf *t, uint32_t b, size_t size, size_t keep)
{
    const shm__rec *r = shm__r(t);
    uint32_t p = r[b].prev, n = r[b].next;
    size_t room = shm__rec_usize(&r[b]) + (r[n].size & SHM__FREE ? shm__rec_fsize(&r[n]) : 0);
    size_t psize = shm__rec_fsize(&r[p]);
    if (!(r[p].size & SHM__FREE) || psize < (keep < size ? keep : size) ||
        !shm__may_slide(psize, (uintptr_t)t->base + r[p].off, room, size, shm__rec_alignment(&r[b])))
        return 0;
    return p;
}

/* Used block b (at ptr) grows to `size` (a block size) elsewhere, through
   the caller's copy: down into its free previous block p, or to a new
   block of its alignment.  NULL, changing nothing, without room or copy. */
static SHM__NOINLINE void *shm__rec_move(shmalloc_tlsf *t, uint32_t b, void *ptr, size_t size)
{
    const shmalloc_memops *ops = &t->records->ops;
    shm__rec *r;
    size_t keep;
    uint32_t p;
    void *q;
    if (!ops->copy || shm__rec_room(t)) return NULL; /* before r: the records may move */
    r = shm__r(t);
    keep = shm__rec_usize(&r[b]);
    p = r[r[b].prev].size & SHM__FREE ? shm__rec_slide(t, b, size, keep) : 0; /* most have a used one: no call */
    if (p) {
        if (ops->copy(ops->user, t->base + r[p].off, ptr, keep)) return NULL;
        shm__rec_mark(t->records, shm__rec_unhash(t, r[b].off));
        shm__rec_remove(t, p, shm__rec_fsize(&r[p]));
        r[p].size = (shm__rec_fsize(&r[p]) + keep) | (r[b].size & SHM__ALIGN_MASK);
        r[p].next = r[b].next;
        r[r[b].next].prev = p;
        shm__rec_drop(t, b);
        if (size > shm__rec_usize(&r[p])) shm__rec_grow(t, p, size); /* room enough: the slide said so */
        else shm__rec_shrink(t, p, size);
        return shm__rec_taken(t, p);
    }
    if (!(q = shm__rec_align(t, shm__rec_alignment(&r[b]), size))) return NULL;
    shm__rec_unhash(t, r[b].off); /* b's lines are warm before the copy, and it needs no second lookup */
    if (ops->copy(ops->user, q, ptr, keep)) {
        shm__bucket_put(t->records, b);
        shm__rec_free(t, q);
        return NULL;
    }
    shm__rec_free_used(t, b);
    return q;
}

/* A valid block's grow into its free next block that shm__rec_regrow
   leaves: one that takes all of it, or one that crosses SHM__LARGE. */
static SHM__NOINLINE void *shm__rec_regrow_rest(shmalloc_tlsf *t, uint32_t b, void *ptr, size_t size)
{
    size_t old = shm__rec_usize(&shm__r(t)[b]);
    shm__rec_grow(t, b, size);
    return shm__crossed_large(old, shm__rec_usize(&shm__r(t)[b])) ? shm__rec_remark(t->records, b, ptr) : ptr;
}

/* A valid block's grow to `size` (a block size) into its free next block,
   which keeps a block after it; the rest out of line.  As the shrink, it
   keeps no frame: the top is known by its flag, not by a load. */
static SHM__NOINLINE void *shm__rec_regrow(shmalloc_tlsf *t, uint32_t b, void *ptr, size_t size)
{
    shm__rec *r = shm__r(t);
    size_t grow = size - shm__rec_usize(&r[b]), nsize;
    uint32_t x = r[b].next;
    if (!(r[x].size & SHM__FREE) || (nsize = shm__rec_fsize(&r[x])) < grow) return shm__rec_move(t, b, ptr, size);
    if (SHM__UNLIKELY(!shm__rest_splits(nsize - grow) || shm__crossed_large(size - grow, size)))
        return shm__rec_regrow_rest(t, b, ptr, size);
    r[x].off += grow;
    r[x].size -= grow;
    r[b].size += grow;
    if (r[b].off + size > t->high_water) t->high_water = r[b].off + size;
    if ((r[x].size & SHM__TOP) || shm__list_key(nsize) == shm__list_key(nsize - grow)) return ptr;
    return shm__rec_relisted(t, x, nsize, shm__rec_list(nsize - grow), ptr);
}

/* A valid block's shrink that needs more records or crosses SHM__LARGE. */
static SHM__NOINLINE void *shm__rec_reshrink_rest(shmalloc_tlsf *t, uint32_t b, void *ptr, size_t size)
{
    size_t old = shm__rec_usize(&shm__r(t)[b]);
    if (shm__rec_room(t)) return NULL;
    if (shm__crossed_large(size, old)) shm__rec_remark(t->records, b, ptr);
    return shm__rec_give_back(t, b, size, old - size, ptr);
}

/* A valid block's shrink that gives its tail back; one that needs
   records or crosses SHM__LARGE is out of line. */
static SHM__NOINLINE void *shm__rec_reshrink(shmalloc_tlsf *t, uint32_t b, void *ptr, size_t size)
{
    const struct shm__records *s = t->records;
    size_t old = shm__rec_usize(&s->r[b]);
    if (SHM__UNLIKELY(s->fresh + SHM__REC_HEADROOM > s->cap || shm__crossed_large(size, old)))
        return shm__rec_reshrink_rest(t, b, ptr, size);
    return shm__rec_give_back(t, b, size, old - size, ptr);
}

/* realloc(NULL, n), realloc(p, 0), a pointer no bucket holds, a request too large. */
static SHM__NOINLINE void *shm__rec_realloc_edge(shmalloc_tlsf *t, void *ptr, size_t n)
{
    if (!ptr) return shm__rec_malloc(t, n);
    if (!n) shm__rec_free(t, ptr);
    return NULL;
}

static SHM__NOINLINE void *shm__realloc_planned(shmalloc_tlsf *t, void *ptr, size_t size);

/* Every path but the shrink within the slack is out of line and reached
   at a tail call: the common grow and shrink keep no frame.  The inline
   core's realloc sends here every call its start map refuses.  NULL is
   in no bucket (its offset is no block's), so one test sends it, n == 0
   and a bad pointer to the edge. */
static void *shm__rec_realloc(shmalloc_tlsf *t, void *ptr, size_t n)
{
    uint32_t b;
    size_t size, old;
    if (!t->records) return shm__realloc_planned(t, ptr, n);
    b = shm__rec_find(t, shm__rec_offset(t, ptr));
    if (SHM__UNLIKELY(!b || n - 1 >= SHMALLOC_TLSF_MAX_REQUEST)) return shm__rec_realloc_edge(t, ptr, n);
    size = shm__rec_bsize(n);
    if (size > (old = shm__rec_usize(&shm__r(t)[b]))) return shm__rec_regrow(t, b, ptr, size);
    if (shm__tail_goes_back(old - size)) return shm__rec_reshrink(t, b, ptr, size);
    return ptr;
}

static void *shm__rec_calloc(shmalloc_tlsf *t, size_t count, size_t size)
{
    const shmalloc_memops *ops = &t->records->ops;
    void *p;
    if (!ops->fill || (count && size > SIZE_MAX / count)) return NULL;
    p = shm__rec_malloc(t, count * size);
    if (p && ops->fill(ops->user, p, 0, count * size)) {
        shm__rec_free(t, p);
        return NULL;
    }
    return p;
}

/* ---- walking and checking ---- */
static void shm__rec_walk(const shmalloc_tlsf *t, shmalloc_walk_fn fn, void *user)
{
    const shm__rec *r = shm__r(t);
    uint32_t i;
    for (i = r[0].next; i; i = r[i].next) {
        shmalloc_block_info info;
        info.offset = (size_t)r[i].off;
        info.used = !(r[i].size & SHM__FREE);
        info.size = info.used ? shm__rec_usize(&r[i]) : shm__rec_fsize(&r[i]);
        if (fn(user, &info)) return;
    }
}

/* Would shm__rec_align(t, align, n) find room, changing nothing? */
static int shm__rec_fits(const shmalloc_tlsf *t, size_t align, size_t n)
{
    const shm__rec *r = shm__r(t);
    size_t size = shm__rec_bsize(n), need = align <= SHMALLOC_ALIGNMENT ? size : shm__aligned_need(size, align), gap;
    uint32_t l = shm__rec_list(need), top = t->records->top;
    if (need <= t->records->capacity && (r[r[l].fnext].size >= need || shm__rec_above(t, &l))) return 1;
    if (!top) return 0;
    gap = shm__gap_at((uintptr_t)t->base + r[top].off, align); /* 0 at 16 or less */
    return shm__rec_fsize(&r[top]) >= gap && shm__rec_fsize(&r[top]) - gap >= size;
}

/* Undoes the take that gave used block b: b merges back into the free
   block it was cut from, which heads its list again, or follows record
   `after` when the take found it there, as shm__untake. */
static void shm__rec_untake(shmalloc_tlsf *t, uint32_t b, uint32_t after)
{
    shm__rec *r = shm__r(t);
    uint32_t p = r[b].prev, n = r[b].next, f = r[p].size & SHM__FREE ? p : r[n].size & SHM__FREE ? n : b;
    shm__rec_mark(t->records, shm__rec_unhash(t, r[b].off));
    shm__rec_release(t, b);
    if (r[f].size & SHM__TOP) return;
    if (!after) after = shm__rec_list(shm__rec_fsize(&r[f])); /* to the head */
    if (r[after].fnext == f) return;
    shm__rec_remove(t, f, shm__rec_fsize(&r[f])); /* f has company, after: the list stays filled */
    r[f].fnext = r[after].fnext;
    r[f].fprev = after;
    r[r[after].fnext].fprev = f;
    r[after].fnext = f;
}

/* The plan of a resize of ptr to n bytes, changing nothing but the
   records' room: SHMALLOC_TLSF_OK when shm__rec_realloc will succeed. */
static int shm__rec_resize_status(shmalloc_tlsf *t, const void *ptr, size_t n)
{
    const shm__rec *r = shm__r(t);
    uint32_t b = shm__rec_find(t, shm__rec_offset(t, ptr)), next;
    size_t size = shm__rec_bsize(n), keep;
    if (!b) return shm__rec_invalid(t, ptr);
    if (n - 1 >= SHMALLOC_TLSF_MAX_REQUEST) return SHMALLOC_TLSF_BAD_SIZE;
    if (shm__rec_ready(t, n, shm__rec_alignment(&shm__r(t)[b]))) return SHMALLOC_TLSF_NO_MEMORY;
    r = shm__r(t);
    next = r[b].next;
    if (size <= shm__rec_usize(&r[b])) return SHMALLOC_TLSF_OK;
    if ((r[next].size & SHM__FREE) && shm__rec_usize(&r[b]) + shm__rec_fsize(&r[next]) >= size) return SHMALLOC_TLSF_OK;
    keep = shm__rec_usize(&r[b]) < n ? shm__rec_usize(&r[b]) : n;
    if (!shm__rec_slide(t, b, size, keep) && !shm__rec_fits(t, shm__rec_alignment(&r[b]), n))
        return SHMALLOC_TLSF_NO_ROOM;
    return t->records->ops.copy ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_NO_MEMOPS; /* a move, which needs the copy */
}

/* shm__largest_served over the records. */
static size_t shm__rec_largest_served(const shmalloc_tlsf *t)
{
    const shm__rec *r = shm__r(t);
    uint32_t top = t->records->top, l, b;
    size_t most = top ? shm__rec_fsize(&r[top]) : 0, i = shm__index_highest(t);
    unsigned k;
    if (i == SIZE_MAX) return most;
    l = 1 + (uint32_t)i;
    for (k = 0, b = r[l].fnext; k < SHM__OWN_SCAN && b != l; k++, b = r[b].fnext)
        if (shm__rec_fsize(&r[b]) > most) most = shm__rec_fsize(&r[b]);
    return most;
}

/* The counters the walk does not give (shmalloc_tlsf_counters). */
static void shm__rec_counters(const shmalloc_tlsf *t, shmalloc_counters *out)
{
    out->capacity = t->records->capacity;
    out->free = out->capacity - out->in_use;
    out->spec = (size_t)(t->limit - t->base) - out->capacity; /* the spec area lies between the blocks and the limit */
    out->high_water = t->high_water;
    out->largest_request = shm__rec_largest_served(t); /* no header */
}

/* The blocks grow by n bytes at their end (from the spec area, or new
   memory: the caller moves the limit), into the top. */
static int shm__rec_extend(shmalloc_tlsf *t, size_t n)
{
    struct shm__records *s = t->records;
    shm__rec *r;
    uint32_t last;
    if (shm__rec_room(t)) return SHMALLOC_TLSF_NO_ROOM;
    r = s->r;
    if (s->top) {
        r[s->top].size += n;
    } else {
        last = r[0].prev;
        s->top = shm__rec_new(t);
        r[s->top].off = s->capacity;
        r[s->top].size = n | SHM__FREE | SHM__TOP;
        r[s->top].prev = last;
        r[s->top].next = 0;
        r[last].next = r[0].prev = s->top;
    }
    shm__rec_set_capacity(s, s->capacity + n);
    return SHMALLOC_TLSF_OK;
}

/* shm__break_moves, the top a record; a break moved down with no top
   makes one, so needs a record's room (a test every PE answers alike). */
static int shm__rec_sbreak_ok(const shmalloc_tlsf *t, ptrdiff_t inc)
{
    const struct shm__records *s = t->records;
    size_t spec = (size_t)(t->limit - t->base) - s->capacity, top = s->top ? shm__rec_fsize(&s->r[s->top]) : 0;
    return shm__break_moves(spec, top, inc) && (inc >= 0 || top || s->fresh + SHM__REC_HEADROOM <= s->cap);
}

/* Moves the break (shm__sbreak): the top shrinks or grows to match. */
static void *shm__rec_sbreak(shmalloc_tlsf *t, ptrdiff_t inc)
{
    struct shm__records *s = t->records;
    shm__rec *r = s->r;
    size_t n = (size_t)(inc < 0 ? -inc : inc);
    if (inc > 0 && shm__rec_fsize(&r[s->top]) == n) { /* the top goes whole */
        uint32_t last = r[s->top].prev;
        r[last].next = 0;
        r[0].prev = last;
        shm__rec_drop(t, s->top);
        s->top = 0;
        shm__rec_set_capacity(s, s->capacity - n);
    } else if (inc > 0) {
        r[s->top].size -= n;
        shm__rec_set_capacity(s, s->capacity - n);
    } else if (inc < 0) {
        shm__rec_extend(t, n);
    }
    return t->base + s->capacity;
}

static void shm__rec_destroy(shmalloc_tlsf *t)
{
    shmalloc_mem_free(t->records->r_mem);
    shmalloc_mem_free(t->records->buckets);
    shmalloc_mem_free(t->records->map);
    shmalloc_mem_free(t->records);
    shmalloc_mem_free(t);
}

SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_tlsf_create_separate(void *mem, size_t bytes, size_t initial,
                                                                     const shmalloc_memops *ops)
{
    shmalloc_tlsf *t = (shmalloc_tlsf *)shmalloc_mem_alloc(1, sizeof *t);
    struct shm__records *s = (struct shm__records *)shmalloc_mem_alloc(1, sizeof *s);
    uint32_t i, cap = 64;
    bytes &= ~(size_t)15;
    if (!t || !s || !mem || ((uintptr_t)mem & 15) || bytes < SHM__MIN_BLOCK ||
        bytes - 1 >= (size_t)1 << (SHMALLOC_MAX_LOG2 + 1)) {
        shmalloc_mem_free(t);
        shmalloc_mem_free(s);
        return NULL;
    }
    SHMALLOC_MEMSET(t, 0, sizeof *t);
    t->records = s;
    t->fl_count = shm__fl_count(bytes);
    s->lists = t->fl_count * SHM__SL_COUNT;
    while (cap < s->lists + 2 + SHM__REC_HEADROOM) cap *= 2;
    s->cap = cap;
    s->bucket_shift = 64 - shm__fls(cap);
    s->r = shm__rec_array(cap, &s->r_mem);
    s->buckets = (uint32_t *)shmalloc_mem_alloc(cap, sizeof *s->buckets);
    initial = initial < bytes ? (initial + 15) & ~(size_t)15 : bytes;
    initial = initial < SHM__MIN_BLOCK ? SHM__MIN_BLOCK : initial;
    if (!s->r || !s->buckets || shm__rec_cover(s, 1)) {
        shm__rec_destroy(t);
        return NULL;
    }
    if (ops) s->ops = *ops;
    for (i = 1; i <= s->lists; i++) {
        s->r[i].off = ~(uint64_t)0;
        s->r[i].fprev = s->r[i].fnext = i;
        s->r[i].next = (i - 1) >> SHMALLOC_SL_LOG2 << 8 | ((i - 1) & (SHM__SL_COUNT - 1));
    }
    s->top = s->r[0].next = s->r[0].prev = s->lists + 1;
    s->r[s->top].size = initial | SHM__FREE | SHM__TOP;
    s->spare = s->fresh = s->lists + 2;
    t->base = (char *)mem;
    t->limit = (char *)mem + initial;
    t->end = (char *)mem + bytes;
    shm__rec_set_capacity(s, initial); /* t's capacity, malloc_limit and mapped_bits stay 0: the inline paths send every call here */
    return t;
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_destroy(shmalloc_tlsf *t)
{
    if (t && t->records) shm__rec_destroy(t);
    else if (t) SHM__UNPOISON(t->base, (size_t)(t->end - t->base)); /* the region is the caller's again */
}

SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_overhead(size_t capacity)
{
    size_t area, bytes, total, last;
    if (capacity > SHMALLOC_TLSF_MAX_REQUEST) return 0;
    area = ((capacity + 15) & ~(size_t)15) + 32; /* block header, sentinel */
    total = bytes = area + shm__marks_bytes(area);
    do { /* the control block grows with the region it is part of */
        last = total;
        total = bytes + shm__control_bytes(last);
    } while (total != last);
    return total - capacity;
}

/* The block space of an inline core over `bytes`, sentinel included: the
   largest whose start map and control still fit (0: none). */
static size_t shm__inline_area(size_t bytes)
{
    size_t area, control = shm__control_bytes(bytes);
    if (bytes < control + 16 + SHM__MIN_BLOCK) return 0;
    /* a bit per 16 bytes and a mark per SHM__LARGE: 1/128 + 1/(8 SHM__LARGE) more */
    area = (bytes - control) / (8 * SHM__LARGE + SHM__LARGE / 16 + 1) * (8 * SHM__LARGE) & ~(size_t)15;
    while (area && area + shm__marks_bytes(area) + control > bytes) area -= 16;
    while (area + 16 + shm__marks_bytes(area + 16) + control <= bytes) area += 16;
    return area;
}

SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_tlsf_create_reserved(void *mem, size_t bytes, size_t initial)
{
    size_t area = shm__inline_area(bytes), i, j;
    shmalloc_tlsf *t;
    shm__block *first;
    if (!mem || ((uintptr_t)mem & 15) || area < 16 + SHM__MIN_BLOCK || area - 16 >= (size_t)1 << (SHMALLOC_MAX_LOG2 + 1)) return NULL;
    if (initial > area - 15) initial = area;
    initial = (initial + 15) & ~(size_t)15;
    if (initial < 16 + SHM__MIN_BLOCK) initial = 16 + SHM__MIN_BLOCK;

    t = (shmalloc_tlsf *)(void *)((char *)mem + area);
    SHMALLOC_MEMSET(t, 0, sizeof *t);
    t->fl_count = shm__fl_count(bytes);
    t->base = (char *)mem;
    shm__set_capacity(t, initial - 16);
    t->sentinel = shm__at(mem, initial - 16);
    t->limit = (char *)mem + initial;
    t->end = (char *)mem + area;
    t->start_map = (uint64_t *)(void *)((char *)t + shm__control_bytes(bytes));
    t->large = t->start_map + shm__map_bytes(area) / 8;
    t->large_words = shm__large_words(area);
    t->mapped_bits = 0; /* map_clean 0: zeroed by the first allocation */
    t->mapped_end = (shm__block *)mem;
    for (i = 0; i < t->fl_count; i++)
        for (j = 0; j < SHM__SL_COUNT; j++) shm__list_init(&t->lists[i][j], i, j);

    SHM__UNPOISON(mem, initial); /* memory an earlier heap may have poisoned */
    first = (shm__block *)mem;
    shm__set_end(t->sentinel);
    shm__to_top(t, first, t->capacity);
    return t;
}

SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_tlsf_create(void *mem, size_t bytes)
{
    return shmalloc_tlsf_create_reserved(mem, bytes, SIZE_MAX);
}

/* Marks the slack after a request of n bytes inaccessible (poisoning only),
   up to the next block's first word, which the allocator uses. */
SHM__INLINE void *shm__fit(void *p, size_t n)
{
    if (p) SHM__POISON((char *)p + n, shm__size(shm__of_user(p)) - 16 - n);
    (void)n;
    return p;
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_malloc(shmalloc_tlsf *t, size_t size)
{
    shm__block *list;
    size_t bsize;
    if (size - 1 >= t->malloc_limit) return shm__rec_malloc(t, size); /* 0, too large, or separate: its limit is 0 */
    bsize = shm__block_size(size);
    list = shm__list_for(t, bsize);
    if (list->next_free->header >= bsize) /* as shm__find_list_fits: an exact-class hit */
        return shm__fit(shm__take_whole(t, list->next_free, list), size);
    /* no listed block at all (a heap that only takes and gives back): the top, with no search */
    if (!t->fl_bitmap || !shm__find_above(t, &list)) return shm__fit(shm__take_top(t, bsize), size);
    return shm__fit(shm__take_at(t, list->next_free, list, bsize, 0), size);
}

static int shm__bad_align(size_t align)
{
    return align == 0 || (align & (align - 1)) || align > SHM__MAX_ALIGN;
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_align(shmalloc_tlsf *t, size_t align, size_t size)
{
    shm__block *list;
    size_t bsize;
    if (shm__bad_align(align)) return NULL;
    if (align <= SHMALLOC_ALIGNMENT) return shmalloc_tlsf_malloc(t, size); /* every block is aligned so */
    if (size - 1 >= SHMALLOC_TLSF_MAX_REQUEST) return NULL;
    bsize = shm__block_size(size);
    if (!shm__find_list(t, shm__aligned_need(bsize, align), &list)) /* a separate core's capacity is 0: here too */
        return t->records ? shm__rec_align(t, align, size) : shm__fit(shm__take_top_aligned(t, bsize, align), size);
    return shm__fit(shm__take_at(t, list->next_free, list, bsize, align), size);
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_calloc(shmalloc_tlsf *t, size_t count, size_t size)
{
    void *p;
    if (t->records) return shm__rec_calloc(t, count, size);
    if (count && size > SIZE_MAX / count) return NULL;
    p = shmalloc_tlsf_malloc(t, count * size);
    if (p) SHMALLOC_MEMSET(p, 0, count * size);
    return p;
}

/* A pointer the start map refuses (a bad one, or any of a separate core,
   whose map is empty) is shm__rec_free's; NULL is told apart only then. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_free(shmalloc_tlsf *t, void *ptr)
{
    shm__block *b = shm__of_user(ptr);
    if (SHM__LIKELY(shm__valid(t, ptr))) return shm__release(t, b);
    return b != shm__of_user(NULL) ? shm__rec_free(t, shm__user(b)) : SHMALLOC_TLSF_OK;
}

/* realloc's shrink of b below SHM__LARGE: its mark goes, at a tail call,
   so that the shrink keeps no frame. */
static SHM__NOINLINE void *shm__shrunk_large(shmalloc_tlsf *t, shm__block *b, size_t size)
{
    shm__mark_large(t, b);
    return shm__fit(shm__user(b), size);
}

/* Out of line: its frame would cost the in-place path. */
static SHM__NOINLINE void *shm__realloc_planned(shmalloc_tlsf *t, void *ptr, size_t size)
{
    shm__resize r;
    if (!ptr) return shmalloc_tlsf_malloc(t, size);
    if (!size) {
        shmalloc_tlsf_free(t, ptr);
        return NULL;
    }
    return shm__plan_resize(t, ptr, size, &r) ? NULL : shm__fit(shm__commit_resize(t, ptr, size, &r), size);
}

/* A valid block grows to `size` bytes (block size bsize): in place, or
   planned from there, not checked again.  Out of line: its registers would
   cost the shrink a frame. */
static SHM__NOINLINE void *shm__realloc_grow(shmalloc_tlsf *t, void *ptr, size_t size, size_t bsize)
{
    shm__block *b = shm__of_user(ptr);
    shm__resize r;
    if (shm__grow_in_place(t, b, bsize)) return shm__fit(ptr, size);
    if (shm__damaged(t, b)) return NULL; /* before a plan that may reach the previous block or free b */
    r.size = bsize;
    if (shm__plan_elsewhere(t, b, shm__room(b), &r)) return NULL;
    return shm__fit(shm__commit_resize(t, ptr, size, &r), size);
}

/* A valid block gives back the tail beyond `bsize`, when its header and
   the next block it reaches are sound.  Out of line, as the grow: their
   checks' registers would cost the other paths a frame. */
static SHM__NOINLINE void *shm__realloc_shrink(shmalloc_tlsf *t, shm__block *b, size_t size, size_t bsize)
{
    size_t old = shm__size(b);
    SHM__UNPOISON(shm__user(b), old - 8); /* the slack after the old request */
    if (!shm__give_tail(t, b, bsize)) return NULL;
    if (SHM__UNLIKELY(shm__crossed_large(bsize, old))) return shm__shrunk_large(t, b, size);
    return shm__fit(shm__user(b), size);
}

/* Valid requests go straight to the shrink or the grow, without the plan:
   the plan finds the same answer, and is left for the errors.  A shrink
   that keeps its tail touches no other block, and checks nothing. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_realloc(shmalloc_tlsf *t, void *ptr, size_t size)
{
    if (SHM__LIKELY(shm__valid(t, ptr) && size - 1 < SHMALLOC_TLSF_MAX_REQUEST)) {
        size_t bsize = shm__block_size(size), old = shm__size(shm__of_user(ptr));
        if (bsize > old) return shm__realloc_grow(t, ptr, size, bsize);
        if (shm__tail_goes_back(old - bsize)) return shm__realloc_shrink(t, shm__of_user(ptr), size, bsize);
        SHM__UNPOISON(ptr, old - 8); /* the slack after the old request */
        return shm__fit(ptr, size);
    }
    return shm__rec_realloc(t, ptr, size);
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_validate(const shmalloc_tlsf *t, const void *ptr)
{
    return t->records ? shm__rec_validate(t, ptr) : shm__validate(t, ptr);
}

static int shm__rec_block_of(const shmalloc_tlsf *t, const void *ptr, void **start, size_t *size)
{
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)t->base;
    const shm__rec *b;
    uint32_t i;
    if ((uintptr_t)ptr < (uintptr_t)t->base || off >= t->records->capacity || !(i = shm__rec_holder(t, off)))
        return shm__rec_invalid(t, ptr);
    b = &shm__r(t)[i];
    *start = t->base + b->off;
    *size = shm__rec_usize(b);
    return SHMALLOC_TLSF_OK;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_block_of(const shmalloc_tlsf *t, const void *ptr, void **start,
                                                     size_t *size)
{
    uintptr_t u = (uintptr_t)ptr, base = (uintptr_t)t->base;
    const shm__block *b = NULL;
    size_t n;
    if (t->records) return shm__rec_block_of(t, ptr, start, size);
    if (u >= base + 16 && (u - 8 - base) / 16 < t->mapped_bits) /* the usable bytes: from 16 past a block's start to 8 past its end */
        b = shm__used_holder(t, u - 8);
    if (!b || u < (uintptr_t)shm__user(b)) return shm__invalid(t, ptr);
    if (!(n = shmalloc_tlsf_usable_size(t, shm__user(b)))) return SHMALLOC_TLSF_CORRUPT; /* its header was overwritten */
    *start = shm__user(b);
    *size = n;
    return SHMALLOC_TLSF_OK;
}

/* ptr is a used block's user pointer and its own header is sound (its
   neighbours may not be): what the block's size and alignment need. */
static int shm__own_sound(const shmalloc_tlsf *t, const void *ptr)
{
    const shm__block *b = shm__of_user(ptr);
    return shm__valid(t, ptr) && shm__used_sound(t, shm__at(b, shm__size(b)), b->header);
}

SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_usable_size(const shmalloc_tlsf *t, const void *ptr)
{
    uint32_t b;
    if (!t->records) return shm__own_sound(t, ptr) ? shm__size(shm__of_user(ptr)) - 8 : 0;
    b = shm__rec_find(t, shm__rec_offset(t, ptr));
    return b ? shm__rec_usize(&shm__r(t)[b]) : 0;
}

/* A plain block records alignment 1 (no bits), and is aligned to 16. */
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_alignment(const shmalloc_tlsf *t, const void *ptr)
{
    size_t align;
    if (t->records) {
        uint32_t b = shm__rec_find(t, shm__rec_offset(t, ptr));
        if (!b) return 0;
        align = shm__rec_alignment(&shm__r(t)[b]);
    } else {
        if (!shm__own_sound(t, ptr)) return 0;
        align = shm__align_of(shm__of_user(ptr));
    }
    return align < SHMALLOC_ALIGNMENT ? SHMALLOC_ALIGNMENT : align;
}

static int shm__sbreak_ok(const shmalloc_tlsf *t, ptrdiff_t inc)
{
    size_t spec = (size_t)(t->limit - (char *)t->sentinel) - 16;
    return shm__break_moves(spec, shm__has_top(t) ? shm__size(t->sentinel->prev_phys) : 0, inc);
}

/* Moves the sentinel; the top shrinks or grows to match. */
static void *shm__sbreak(shmalloc_tlsf *t, ptrdiff_t inc)
{
    shm__block *old = t->sentinel, *top = old->prev_phys;
    size_t n = (size_t)(inc < 0 ? -inc : inc);
    if (inc > 0) {
        SHM__UNPOISON((char *)old - n, n + 16); /* the new sentinel and the spec bytes */
        if (shm__size(top) == n) { /* the top goes whole: the sentinel takes its place */
            t->sentinel = top;
            shm__set_end(top);
        } else {
            top->header -= n;
            t->sentinel = shm__at(old, 0 - n);
            shm__set_end(t->sentinel);
            shm__set_prev_free(t->sentinel, top);
        }
        shm__set_capacity(t, t->capacity - n);
    } else if (inc < 0) {
        t->sentinel = shm__at(old, n);
        shm__set_end(t->sentinel);
        shm__set_capacity(t, t->capacity + n);
        if (shm__is_prev_free(old)) shm__to_top(t, top, shm__size(top) + n);
        else shm__to_top(t, old, n);
    }
    shm__limit_mapped(t);
    return (char *)t->sentinel + 16;
}

/* The increment rounded away from zero to 16; 0 when it cannot be. */
static ptrdiff_t shm__sbreak_round(ptrdiff_t increment, int *bad)
{
    *bad = increment <= -PTRDIFF_MAX || increment >= PTRDIFF_MAX - 15;
    if (*bad) return 0;
    return increment < 0 ? -((-increment + 15) & ~(ptrdiff_t)15) : (increment + 15) & ~(ptrdiff_t)15;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_sbreak_status(const shmalloc_tlsf *t, ptrdiff_t increment)
{
    int bad;
    ptrdiff_t inc = shm__sbreak_round(increment, &bad);
    if (bad) return SHMALLOC_TLSF_BAD_SIZE;
    if (t->records) return shm__rec_sbreak_ok(t, inc) ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_NO_ROOM;
    return shm__sbreak_ok(t, inc) ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_NO_ROOM;
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_sbreak(shmalloc_tlsf *t, ptrdiff_t increment)
{
    int bad;
    if (shmalloc_tlsf_sbreak_status(t, increment)) return NULL;
    if (t->records) return shm__rec_sbreak(t, shm__sbreak_round(increment, &bad));
    return shm__sbreak(t, shm__sbreak_round(increment, &bad));
}

SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_room(const shmalloc_tlsf *t) { return (size_t)(t->end - t->limit); }
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_top_free(const shmalloc_tlsf *t)
{
    if (t->records) return t->records->top ? shm__rec_fsize(&shm__r(t)[t->records->top]) : 0;
    return shm__has_top(t) ? shm__size(t->sentinel->prev_phys) : 0;
}

/* The bytes a growth of `bytes` adds. */
static size_t shm__grow_bytes(size_t bytes)
{
    size_t n = (bytes + 15) & ~(size_t)15;
    return n < SHM__MIN_BLOCK ? SHM__MIN_BLOCK : n;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_grow_status(const shmalloc_tlsf *t, size_t bytes)
{
    size_t room = shmalloc_tlsf_room(t);
    size_t blocks = t->records ? t->records->capacity : (size_t)((char *)t->sentinel + 16 - t->base);
    if (bytes > room || shm__grow_bytes(bytes) > room || t->limit != t->base + blocks) /* a spec area is in the way */
        return SHMALLOC_TLSF_NO_ROOM;
    return SHMALLOC_TLSF_OK;
}

/* The new bytes are a spec area given straight back: the old sentinel
   becomes the header of the free space, merged with the top block. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_grow(shmalloc_tlsf *t, size_t bytes)
{
    size_t n = shm__grow_bytes(bytes);
    if (shmalloc_tlsf_grow_status(t, bytes)) return SHMALLOC_TLSF_NO_ROOM;
    if (t->records) {
        if (shm__rec_extend(t, n)) return SHMALLOC_TLSF_NO_ROOM;
        t->limit += n;
        return SHMALLOC_TLSF_OK;
    }
    SHM__UNPOISON(t->limit, n);
    t->limit += n;
    shm__sbreak(t, -(ptrdiff_t)n); /* limits `mapped_bits` too */
    return SHMALLOC_TLSF_OK;
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_base(const shmalloc_tlsf *t) { return t->base; }
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_size(const shmalloc_tlsf *t) { return (size_t)(t->limit - t->base); }
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_offset(const shmalloc_tlsf *t, const void *p) { return shm__offset(t, p); }

SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_walk(const shmalloc_tlsf *t, shmalloc_walk_fn fn, void *user)
{
    if (t->records) {
        shm__rec_walk(t, fn, user);
        return;
    }
    const shm__block *b = (const shm__block *)(const void *)t->base;
    while (b < t->sentinel) {
        shmalloc_block_info info;
        info.offset = shm__offset(t, b) + 16;
        info.size = shm__size(b);
        info.used = !shm__is_free(b);
        /* a corrupted size ends the walk rather than leave the heap */
        if (info.size < SHM__MIN_BLOCK || info.size > (size_t)((uintptr_t)t->sentinel - (uintptr_t)b)) return;
        if (fn(user, &info)) return;
        b = shm__at(b, info.size);
    }
}

/* One block into the counters' sums. */
static int shm__count_block(void *user, const shmalloc_block_info *b)
{
    shmalloc_counters *out = (shmalloc_counters *)user;
    if (b->used) {
        out->in_use += b->size;
        out->used_blocks++;
    } else if (b->size > out->largest_free) {
        out->largest_free = b->size;
    }
    return 0;
}

/* The largest block malloc serves: the top, or one of the first
   SHM__OWN_SCAN blocks of the highest list, which a request of any lower
   list finds (shm__take_own's bound). */
static size_t shm__largest_served(const shmalloc_tlsf *t)
{
    size_t most = shm__has_top(t) ? shm__top_size(t) : 0, i = shm__index_highest(t);
    const shm__block *list, *b;
    unsigned k;
    if (i == SIZE_MAX) return most;
    list = shm__list(t, i);
    for (k = 0, b = list->next_free; k < SHM__OWN_SCAN && b != list; k++, b = b->next_free)
        if (shm__free_size(b->header) > most) most = shm__free_size(b->header);
    return most;
}

/* Counted on demand, one step per block: malloc and free keep no counts
   but the high-water mark, which the start map's zeroing needs anyway. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_counters(const shmalloc_tlsf *t, shmalloc_counters *out)
{
    size_t most;
    out->in_use = out->used_blocks = out->largest_free = 0;
    shmalloc_tlsf_walk(t, shm__count_block, out);
    if (t->records) {
        shm__rec_counters(t, out);
        return;
    }
    out->capacity = t->capacity;
    out->free = t->capacity - out->in_use;
    out->spec = (size_t)(t->limit - (char *)t->sentinel) - 16;
    out->high_water = t->high_water;
    /* the inverse of shm__block_size: the largest n whose block malloc serves */
    most = shm__largest_served(t);
    out->largest_request = most >= SHM__MIN_BLOCK ? most - 8 - SHM__REDZONE : 0;
    if (out->largest_request > t->malloc_limit) out->largest_request = t->malloc_limit;
}

/* ---- checker: never follows a size or a link out of the block space ---- */
/* The likely cause of a header that is not a block's, as free's message gives it. */
#define SHM__OVERWRITTEN " (a header overwritten: a write past the end of the block before it?)"

typedef struct shm__checker {
    const shmalloc_tlsf *t;
    int level, problems;
    char who[24]; /* "PE 3: " for a heap's PE, which every line names; else empty */
} shm__checker;

static void shm__problem(shm__checker *c, const char *fmt, ...) SHMALLOC_FORMAT(2, 3);
static void shm__problem(shm__checker *c, const char *fmt, ...)
{
    char line[400];
    va_list ap;
    if (c->level >= 0 && (c->problems == 0 || c->level > 0)) {
        va_start(ap, fmt);
        vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        shmalloc_print(2, SHM__MSG(CHECK_FINDING), c->who, line);
    }
    c->problems++;
}

static int shm__in_blocks(const shmalloc_tlsf *t, const shm__block *b)
{
    return (uintptr_t)b >= (uintptr_t)t->base && (uintptr_t)b < (uintptr_t)t->sentinel &&
           !(shm__offset(t, b) & 15);
}

/* Does a block start at b?  Used blocks are in the start map; a free one
   must have a sane size and its successor's back link. */
static int shm__plausible(const shmalloc_tlsf *t, const shm__block *b)
{
    size_t size;
    if (b == t->sentinel || shm__starts_used(t, b)) return 1;
    if (SHM__IS_POISONED(&b->header)) return 0;
    size = shm__size(b);
    return shm__is_free(b) && size >= SHM__MIN_BLOCK &&
           size <= (size_t)((uintptr_t)t->sentinel - (uintptr_t)b) && shm__at(b, size)->prev_phys == b;
}

/* One block of a sane size: its flags, back link, start-map bit,
   alignment and the high-water mark; off is its user pointer's offset. */
static void shm__check_block(shm__checker *c, const shm__block *b, size_t off, size_t size, size_t prev_free)
{
    const shmalloc_tlsf *t = c->t;
    if (shm__is_free(b) && !shm__is_top(b) != (shm__at(b, size) != t->sentinel))
        shm__problem(c, "free block at offset %zu: %s", off,
                     shm__is_top(b) ? "says it is the top, and is not last" : "is last, and not the top");
    if (!shm__is_prev_free(b) != !prev_free)
        shm__problem(c, "block at offset %zu: says the previous block is %s, it is %s", off,
                     shm__is_prev_free(b) ? "free" : "used", prev_free ? "free" : "used");
    if (shm__is_free(b)) {
        if (prev_free) shm__problem(c, "block at offset %zu: two free blocks side by side", off);
        if (shm__at(b, size)->prev_phys != b)
            shm__problem(c, "free block at offset %zu: the next block's back link is wrong", off);
        if (shm__starts_used(t, b)) shm__problem(c, "free block at offset %zu is marked used", off);
        if (b->header & SHM__ALIGN_MASK) shm__problem(c, "free block at offset %zu carries alignment bits", off);
    } else {
        if (!shm__starts_used(t, b)) shm__problem(c, "used block at offset %zu is not marked used", off);
        if ((uintptr_t)shm__user(b) & (shm__align_of(b) - 1))
            shm__problem(c, "used block at offset %zu is not aligned to its %zu", off, shm__align_of(b));
        if (off + size - 8 > t->high_water)
            shm__problem(c, "used block at offset %zu ends above the high-water mark %zu", off, t->high_water);
    }
}

/* The physical chain: sizes, flags, back links, start map, high-water mark.
   Returns the number of free blocks seen but the top, which is in no list. */
static size_t shm__check_chain(shm__checker *c)
{
    const shmalloc_tlsf *t = c->t;
    const shm__block *b = (const shm__block *)(const void *)t->base;
    size_t nfree = 0, nused = 0, nlarge = 0, unmarked = 0, prev_free = 0, marked;
    while (b != t->sentinel) {
        size_t off = shm__offset(t, b) + 16, size, is_free;
        if (SHM__IS_POISONED(&b->header)) {
            shm__problem(c, "block at offset %zu lies inside a free block", off);
            return nfree;
        }
        size = shm__size(b);
        is_free = b->header & SHM__FREE;
        if (size < SHM__MIN_BLOCK || size > (size_t)((uintptr_t)t->sentinel - (uintptr_t)b) ||
            (b->header & SHM__END) || ((b->header & SHM__TOP) && !is_free)) {
            shm__problem(c, "block at offset %zu: header 0x%zx %s" SHM__OVERWRITTEN, off, b->header,
                         b->header & (SHM__END | SHM__TOP) ? "is not a multiple of 16"
                         : size < SHM__MIN_BLOCK           ? "gives a size below the minimum block"
                                                           : "gives a size that runs past the end of the heap");
            return nfree;
        }
        shm__check_block(c, b, off, size, prev_free);
        if (is_free) nfree++;
        else nused++, nlarge += size >= SHM__LARGE, unmarked += size >= SHM__LARGE && !shm__marked_large(t->large, shm__offset(t, b));
        if (c->level > 0)
            shmalloc_print(2, SHM__MSG(CHECK_BLOCK), c->who, is_free ? "free" : "used", off, size);
        prev_free = is_free;
        b = shm__at(b, size);
        if (!shm__plausible(t, b)) {
            shm__problem(c, "block at offset %zu: its size %zu leads to offset %zu, where no block starts" SHM__OVERWRITTEN,
                         off, size, shm__offset(t, b) + 16);
            return nfree;
        }
    }
    if (t->sentinel->header != ((prev_free ? SHM__PREV_FREE : 0) | SHM__END))
        shm__problem(c, "end-of-heap marker overwritten (header 0x%zx)", t->sentinel->header);
    if ((marked = shm__bits(t->start_map, t->map_clean / 8)) != nused)
        shm__problem(c, "start map marks %zu blocks used, the heap has %zu", marked, nused);
    if (unmarked || shm__bits(t->large, shm__large_valid(t->map_clean)) != nlarge ||
        !shm__marks_sound(t->large, t->large_words, shm__large_valid(t->map_clean)))
        shm__problem(c, "the large marks disagree with the %zu used blocks of %zu bytes or more", nlarge, SHM__LARGE);
    return nfree - prev_free;
}

/* The free lists and bitmaps; a list longer than the free blocks is a cycle. */
static void shm__check_lists(shm__checker *c, size_t nfree)
{
    const shmalloc_tlsf *t = c->t;
    size_t listed = 0;
    unsigned fl, sl;
    if (t->fl_bitmap >> t->fl_count) shm__problem(c, "first-level bitmap has bits beyond its classes");
    for (fl = 0; fl < t->fl_count; fl++) {
        if (!(t->fl_bitmap >> fl & 1) != !t->sl_bitmap[fl])
            shm__problem(c, "first-level bitmap bit %u disagrees with its second-level word", fl);
        for (sl = 0; sl < SHM__SL_COUNT; sl++) {
            const shm__block *list = &t->lists[fl][sl], *e = list->next_free, *prev = list;
            size_t n = 0;
            unsigned efl, esl;
            if (!(t->sl_bitmap[fl] >> sl & 1) != (e == list))
                shm__problem(c, "list %u/%u: bitmap says %s", fl, sl, e == list ? "non-empty" : "empty");
            if (list->header) /* malloc would take the sentinel node for a block */
                shm__problem(c, "list %u/%u: sentinel node has a size (0x%zx)", fl, sl, list->header);
            for (; e != list; prev = e, e = e->next_free) {
                if (!shm__in_blocks(t, e) || SHM__IS_POISONED(&e->header)) {
                    shm__problem(c, "list %u/%u: link %p points outside the heap", fl, sl, (const void *)e);
                    break;
                }
                shm__mapping_insert(shm__size(e), &efl, &esl);
                if (!shm__is_free(e))
                    shm__problem(c, "list %u/%u: block at offset %zu is used", fl, sl, shm__offset(t, e) + 16);
                else if (efl != fl || esl != sl)
                    shm__problem(c, "list %u/%u: free block at offset %zu of %zu bytes belongs in list %u/%u", fl, sl,
                                 shm__offset(t, e) + 16, shm__size(e), efl, esl);
                if (e->prev_free != prev)
                    shm__problem(c, "list %u/%u: block at offset %zu has a wrong back link", fl, sl,
                                 shm__offset(t, e) + 16);
                if (++n > nfree) {
                    shm__problem(c, "list %u/%u: more entries than free blocks (a cycle)", fl, sl);
                    break;
                }
            }
            listed += n;
        }
    }
    if (listed != nfree) shm__problem(c, "%zu free blocks in the heap, %zu in the free lists", nfree, listed);
}

/* The separate core's chain: contiguous from 0 to the capacity, linked
   both ways, no two free blocks side by side, the top last; every free
   block in its list and every used one in its bucket and the map, and
   nothing else there. */
/* Each free list links both ways (but for its first's fprev) and its
   bitmap bit says whether it has blocks; a list longer than the records
   is a cycle. */
static void shm__rec_check_lists(shm__checker *c)
{
    const shmalloc_tlsf *t = c->t;
    const shm__rec *r = t->records->r;
    uint32_t l, x, prev, n;
    for (l = 1; l <= t->records->lists; l++) {
        for (prev = l, x = r[l].fnext, n = 0; x != l && n < t->records->cap; prev = x, x = r[x].fnext, n++)
            if (prev != l && r[x].fprev != prev)
                shm__problem(c, "free list %u: a block's fprev is not its predecessor", (unsigned)l);
        if (x != l || r[l].fprev != prev) shm__problem(c, "free list %u: it does not end at its last block", (unsigned)l);
        if (!(t->sl_bitmap[(l - 1) >> SHMALLOC_SL_LOG2] >> ((l - 1) & (SHM__SL_COUNT - 1)) & 1) != !n)
            shm__problem(c, "free list %u: its bitmap bit disagrees with its blocks", (unsigned)l);
    }
}

static void shm__rec_check(shm__checker *c)
{
    const shmalloc_tlsf *t = c->t;
    const struct shm__records *s = t->records;
    const shm__rec *r = s->r;
    uint64_t off = 0;
    uint32_t i, p = 0, x;
    int prev_free = 0;
    size_t marked = shm__bits(s->map, s->map_words), large = shm__bits(s->large, s->large_words);
    if (!shm__marks_sound(s->large, s->large_words, s->large_words))
        shm__problem(c, "the large marks' summary disagrees with them");
    if ((uintptr_t)r & 63) shm__problem(c, "the records do not start a cache line: half of them span two");
    for (i = r[0].next; i; p = i, i = r[i].next) {
        int is_free = (r[i].size & SHM__FREE) != 0;
        size_t size = is_free ? shm__rec_fsize(&r[i]) : shm__rec_usize(&r[i]), at = (size_t)off;
        if (i <= s->lists || i >= s->cap || r[i].off != off || r[i].prev != p || size < SHM__MIN_BLOCK) {
            shm__problem(c, "block at offset %zu: record %u is not a block's that starts there", at, (unsigned)i);
            return;
        }
        if (c->level > 0) shmalloc_print(2, SHM__MSG(CHECK_BLOCK), c->who, is_free ? "free" : "used", at, size);
        if (is_free && prev_free) shm__problem(c, "block at offset %zu: two free blocks side by side", at);
        if ((r[i].size & SHM__TOP) && (i != s->top || r[i].next))
            shm__problem(c, "free block at offset %zu: says it is the top, and is not last", at);
        if (is_free && !(r[i].size & SHM__TOP)) {
            uint32_t l = shm__rec_list(size);
            for (x = r[l].fnext; x != l && x != i; x = r[x].fnext) {}
            if (x != i) shm__problem(c, "free block at offset %zu is not in its list", at);
        }
        if (!is_free && (shm__rec_find(t, off) != i ||
                         !(s->map[off >> (SHM__REC_MAP_LOG2 + 6)] >> (off >> SHM__REC_MAP_LOG2 & 63) & 1)))
            shm__problem(c, "used block at offset %zu is not marked used", at);
        if (!is_free && size >= SHM__LARGE) {
            if (!shm__marked_large(s->large, at)) shm__problem(c, "used block at offset %zu has no large mark", at);
            large--;
        }
        marked -= !is_free;
        prev_free = is_free;
        off += size;
    }
    if (off != s->capacity || r[0].prev != p)
        shm__problem(c, "the blocks end at offset %zu, not at the capacity %zu", (size_t)off, s->capacity);
    if (marked || large) shm__problem(c, "the start map or the large marks mark blocks the heap does not have");
    shm__rec_check_lists(c);
}

/* shmalloc_tlsf_check for a heap of PE pe, which its lines name (-1: none). */
static int shm__check(const shmalloc_tlsf *t, int level, int pe)
{
    shm__checker c;
    c.t = t;
    c.level = level;
    c.problems = 0;
    c.who[0] = '\0';
    if (pe >= 0) snprintf(c.who, sizeof c.who, "PE %d: ", pe);
    if (t->records) shm__rec_check(&c);
    else shm__check_lists(&c, shm__check_chain(&c));
    return c.problems;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_check(const shmalloc_tlsf *t, int level) { return shm__check(t, level, -1); }

/* ---- tentative operations: kept on every PE or undone on every PE ---- */
enum { SHM__TAKE = 0 }; /* a pending take's `how`; a resize's is its plan's */

SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_request_status(size_t align, size_t size)
{
    if (shm__bad_align(align)) return SHMALLOC_TLSF_BAD_ALIGN;
    return size > SHMALLOC_TLSF_MAX_REQUEST ? SHMALLOC_TLSF_BAD_SIZE : SHMALLOC_TLSF_OK;
}

SHMALLOC_DEF SHMALLOC_API size_t shmalloc_tlsf_block_need(size_t size, size_t align)
{
    return shm__aligned_need(shm__block_size(size), align);
}

/* The block before the one a take of `size` bytes (a block size) at
   `align` that no search of the lists above serves takes from its own
   list (shm__take_own), or NULL: the undo puts it back there. */
static shm__block *shm__own_prev(const shmalloc_tlsf *t, size_t size, size_t align)
{
    shm__block *b;
    if (align > SHMALLOC_ALIGNMENT || size > t->capacity || shm__top_fits(t, size, align)) return NULL;
    b = shm__find_own(shm__list_for(t, size), size);
    return b ? b->prev_free : NULL;
}

/* Records what every pending operation's commit and undo need. */
static void shm__pending(const shmalloc_tlsf *t, shmalloc_tlsf_pending *op, int how, size_t size)
{
    op->ptr = NULL;
    op->how = how;
    op->request = size;
    op->high_water = t->high_water;
}

/* shmalloc_tlsf_align's search and take without its fit (the slack's
   poisoning), which waits for the commit: the caller may fill the block. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_take(shmalloc_tlsf *t, size_t align, size_t size,
                                                 shmalloc_tlsf_pending *op)
{
    int status = shmalloc_tlsf_request_status(align, size);
    size_t bsize = shm__block_size(size);
    unsigned fl, sl;
    shm__block *b;
    shm__pending(t, op, SHM__TAKE, size);
    if (status) return status;
    if (t->records) {
        if (shm__rec_ready(t, size, align)) return SHMALLOC_TLSF_NO_MEMORY;
        op->fl = shm__rec_fits(t, align, size) ? 0 : shm__rec_own_prev(t, shm__rec_bsize(size), align);
        op->ptr = shm__rec_align(t, align, size);
        return op->ptr ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_NO_ROOM;
    }
    b = shm__find_aligned(t, bsize, align, &fl, &sl);
    op->target = b ? NULL : shm__own_prev(t, bsize, align);
    op->ptr = b ? shm__take(t, b, fl, sl, bsize, align) : shm__take_top_aligned(t, bsize, align);
    return op->ptr ? SHMALLOC_TLSF_OK : SHMALLOC_TLSF_NO_ROOM;
}

/* Does the free block after b head its list?  Its undo must put it back there. */
static int shm__next_heads(const shmalloc_tlsf *t, const shm__block *b)
{
    const shm__block *next = shm__at(b, shm__size(b));
    return shm__is_free(next) && next->prev_free == shm__list_for(t, shm__size(next));
}

/* A grow of b to `size` into the free next block is undone exactly by
   shrinking back when the next block is the top (in no list), when the
   free part it leaves stays in the next block's list (the list keeps its
   order), or when the next block heads its list (it is put back at the
   head).  A grow of one minimum block or less cannot be shrunk back: a
   shrink keeps such a tail as slack. */
static int shm__grow_undoable(const shmalloc_tlsf *t, const shm__block *b, size_t size)
{
    const shm__block *next = shm__at(b, shm__size(b));
    size_t grown = size - shm__size(b), nsize = shm__size(next);
    if (!shm__tail_goes_back(grown)) return 0;
    if (shm__is_top(next)) return 1;
    if (shm__rest_splits(nsize - grown) && shm__list_key(nsize - grown) == shm__list_key(nsize)) return 1;
    return next->prev_free == shm__list_for(t, nsize); /* the head: its predecessor is the list's sentinel */
}

/* Only a grow in place that can be undone is made before the commit: a
   shrink needs nothing early, and a move copies after the agreement. */
SHMALLOC_DEF SHMALLOC_API int shmalloc_tlsf_resize(shmalloc_tlsf *t, void *ptr, size_t size,
                                                   shmalloc_tlsf_pending *op)
{
    shm__resize r = {0, 0, NULL, 0, 0};
    shm__block *b = shm__of_user(ptr);
    int status;
    if (t->records) { /* nothing early: the commit makes it */
        shm__pending(t, op, SHM__IN_PLACE, size);
        op->old = ptr;
        status = shm__rec_resize_status(t, ptr, size);
        op->commit_grows = !status && shm__rec_bsize(size) > shmalloc_tlsf_usable_size(t, ptr);
        return status;
    }
    status = shm__plan_resize(t, ptr, size, &r);
    shm__pending(t, op, r.how, size);
    op->commit_grows = 0;
    op->old = ptr;
    if (status) return status;
    op->new_size = r.size;
    op->target = r.target;
    op->fl = r.fl;
    op->sl = r.sl;
    op->old_size = shm__size(b);
    op->next_headed = shm__next_heads(t, b);
    if (r.how == SHM__IN_PLACE && r.size <= op->old_size) return SHMALLOC_TLSF_OK;
    if (r.how != SHM__IN_PLACE || !shm__grow_undoable(t, b, r.size)) {
        op->commit_grows = 1;
        return SHMALLOC_TLSF_OK;
    }
    shm__grow_in_place(t, b, r.size);
    op->ptr = ptr;
    return SHMALLOC_TLSF_OK;
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_tlsf_commit(shmalloc_tlsf *t, shmalloc_tlsf_pending *op)
{
    if (t->records) {
        if (!op->ptr) op->ptr = shm__rec_realloc(t, op->old, op->request); /* cannot fail: planned */
        return op->ptr;
    }
    if (!op->ptr && op->how != SHM__TAKE) { /* a resize not made yet */
        shm__resize r;
        r.how = op->how;
        r.size = op->new_size;
        r.target = (shm__block *)op->target;
        r.fl = op->fl;
        r.sl = op->sl;
        op->ptr = shm__commit_resize(t, op->old, op->request, &r);
    }
    return shm__fit(op->ptr, op->request);
}

/* A take merges back into the block it was cut from; an early grow
   shrinks back, the free block it grew into heading its list again if it
   did before. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_tlsf_undo(shmalloc_tlsf *t, shmalloc_tlsf_pending *op)
{
    shm__block *b;
    if (!op->ptr) return; /* a resize not made yet changed nothing */
    if (t->records) { /* only a take is made early */
        shm__rec_untake(t, shm__rec_find(t, shm__rec_offset(t, op->ptr)), op->fl);
        t->high_water = op->high_water;
        op->ptr = NULL;
        return;
    }
    b = shm__of_user(op->ptr);
    if (op->how == SHM__TAKE) {
        shm__untake(t, b, (shm__block *)op->target);
    } else {
        shm__shrink_in_place(t, b, op->old_size);
        if (op->next_headed) shm__to_head(t, shm__at(b, op->old_size));
    }
    t->high_water = op->high_water;
    op->ptr = NULL;
}

/* The malloc_error of a TLSF status: the one place the core's statuses
   become SHMEM codes.  No room is a failed realloc when resizing. */
static long shm__malloc_error(int status, int resizing)
{
    switch (status) {
    case SHMALLOC_TLSF_OK: return SHMEM_MALLOC_OK;
    case SHMALLOC_TLSF_NOT_IN_HEAP: return SHMEM_MALLOC_NOT_IN_SYMM_HEAP;
    case SHMALLOC_TLSF_ALREADY_FREE: return SHMEM_MALLOC_ALREADY_FREE;
    case SHMALLOC_TLSF_NOT_A_BLOCK: return SHMEM_MALLOC_NOT_ALIGNED;
    case SHMALLOC_TLSF_BAD_SIZE: return SHMEM_MALLOC_BAD_SIZE;
    case SHMALLOC_TLSF_BAD_ALIGN: return SHMEM_MALLOC_MEMALIGN_FAILED;
    case SHMALLOC_TLSF_CORRUPT: return SHMEMX_MALLOC_CORRUPT_HEAP;
    case SHMALLOC_TLSF_NO_MEMOPS: return SHMEMX_MALLOC_NO_MEMOPS;
    case SHMALLOC_TLSF_NO_MEMORY: return SHMEM_MALLOC_FAIL; /* not the heap's room: no growth, no advice to grow */
    default: return resizing ? SHMEM_MALLOC_REALLOC_FAILED : SHMEM_MALLOC_FAIL; /* SHMALLOC_TLSF_NO_ROOM */
    }
}

SHMALLOC_DEF SHMALLOC_API const char *shmalloc_tlsf_strerror(int status)
{
    switch (status) { /* a core's heap need not be symmetric */
    case SHMALLOC_TLSF_NOT_IN_HEAP: return "pointer is not in the heap";
    case SHMALLOC_TLSF_NO_ROOM: return "no free block is large enough";
    case SHMALLOC_TLSF_NO_MEMORY: return "the block records could not grow: the allocator hooks returned NULL";
    default: return shmalloc_strerror(shm__malloc_error(status, 0));
    }
}

/* >> transport: implementation ---------------------------------------------
   The members a call may find failed, as messages name them; the
   transport of one PE (shmalloc_transport_single). */
enum { SHM__TP_NONE, SHM__TP_LOCK, SHM__TP_BARRIER, SHM__TP_ALLREDUCE_MAX, SHM__TP_ALLREDUCE_AND, SHM__TP_REGISTER,
       SHM__TP_MEMBERS };
static const char *const shm__tp_names[SHM__TP_MEMBERS] = {"",         "lock",          "barrier",
                                                           "allreduce_max", "allreduce_and", "register_region"};

static int shm__noop(void *user) { (void)user; return 0; }
static int shm__noop_reduce(void *user, uint64_t *values, int count)
{
    (void)user, (void)values, (void)count;
    return 0;
}
/* fill and copy for memory this process may touch */
static int shm__host_fill(void *user, void *dst, int byte, size_t n)
{
    (void)user;
    SHMALLOC_MEMSET(dst, byte, n);
    return 0;
}
static int shm__host_copy(void *user, void *dst, const void *src, size_t n)
{
    (void)user;
    SHMALLOC_MEMCPY(dst, src, n);
    return 0;
}
static const shmalloc_transport shm__single = {NULL, shm__noop, shm__noop_reduce, NULL, NULL, NULL, NULL, 0, 1,
                                               shm__noop_reduce, shm__host_fill, shm__host_copy, NULL, NULL};

SHMALLOC_DEF SHMALLOC_API const shmalloc_transport *shmalloc_transport_single(void) { return &shm__single; }

/* >> heap: implementation --------------------------------------------------
   The collective layer.  A call takes the lock, does its local part, then
   agrees with the other PEs through the all-reduce (which is also its
   barrier): each of size, kind, alignment and block offset with its
   complement, and the negated error code, all maximised, so that
   max(x) != min(x) reveals PEs that passed different values of x and
   every PE sees the worst failure.  In debug mode
   (SHMALLOC_DEBUG=1 in the environment) the call counts and hints are
   agreed too, and a mismatch is reported by every PE.  A mismatch's
   report, and the naming of a transport member that failed on another
   PE, take one or two more all-reduces, on that error path only.

   The layer uses the TLSF core through its API alone.  malloc takes its
   block before agreeing, with the core's tentative take (calloc zeroes it
   then too, so no peer's put can land before the zeroing), and commits it,
   or undoes it exactly if any PE failed, so later offsets still match.
   realloc's tentative resize grows in place before agreeing where the core
   can undo the grow, and a shrink commits after agreeing, so that one
   synchronisation suffices; a move and other grows commit after agreeing,
   then synchronise again (shmalloc_heap_realloc says why).  The core's
   statuses become malloc_error in shm__malloc_error.

   SHMEMX_MALLOC_NO_BARRIER allocations do their local part only and fold
   the call into a digest the next agreement compares (shm__order). */
enum { SHM__MALLOC, SHM__FREE_CALL, SHM__REALLOC, SHM__ALIGN, SHM__CALLOC, SHM__SBREAK, SHM__DRAIN, SHM__CREATE,
       SHM__GROW, SHM__DESTROY, SHM__CLOSE, SHM__CALLS };
static const char *const shm__call_names[SHM__CALLS] = {"malloc", "free",   "realloc", "align", "calloc",
                                                        "sbreak", "drain",  "create",  "grow",  "finalize",
                                                        "space_destroy"};

#define SHM__FILL_NEW 0xa1  /* debug mode: bytes of a fresh block */
#define SHM__FILL_FREED 0xdf /* debug mode: bytes of a freed block */

/* What the next agreement also compares, beyond its own call. */
typedef struct shm__order {
    uint64_t calls;   /* collective calls made on this heap, for debug mode */
    uint64_t pending; /* allocations made without a barrier since the last agreement */
    uint64_t digest;  /* of those allocations, in order: 0 when there are none */
    int mismatch_reported; /* outside debug mode a mismatch is reported once */
    unsigned changes; /* atomic: odd while a call changes the heap (shm__hold) */
    int release_lock; /* atomic: the released set's (shm__lock_released) */
    int separate;     /* SHMALLOC_METADATA_SEPARATE: calls hold heap_lock (shm__hold), and
                         mem is written only through the transport's fill and copy */
    int heap_lock;    /* atomic */
    size_t releases;  /* atomic: blocks in the released set */
    size_t fresh;     /* atomic: releases since the last drain */
    int drain;        /* the last agreement found fresh releases on some PE */
    int tp_failed;    /* the member (SHM__TP_*) that failed last on this PE */
    const char *ending; /* a destroy at a PE's end: shmalloc_heap_destroy_ended's words */
} shm__order;

typedef struct shm__table {
    uint64_t *slots;
    size_t cap, count;
} shm__table;

/* A world heap's spaces, by base, under lock: see shmalloc_heap_of. */
typedef struct shm__spaces {
    shmalloc_heap **by_base;
    size_t count, cap; /* count: atomic, read without the lock to skip an empty list */
    int lock;
} shm__spaces;

struct shmalloc_heap {
    shmalloc_tlsf *tlsf;
    shmalloc_transport tp;
    shmalloc_memops memops; /* how a separate core's memory is written */
    int debug;
    int growable;   /* room to grow and an all-reduce to agree on it */
    const char *size_var; /* shmalloc_heap_config's */
    int regions;    /* registered regions: [ends[i - 1], ends[i]) from the base */
    size_t size;    /* atomic: ends[regions - 1], read from any thread (shmalloc_heap_size) */
    size_t ends[SHMALLOC_MAX_REGIONS];
    size_t calls[SHM__CALLS];
    shm__order order;
    shm__table hints;    /* blocks with hints: see shm__table_put */
    shm__table released; /* blocks this PE released, not yet freed; under order.release_lock */
    size_t drained;      /* blocks freed by drains */
    size_t drain_rounds; /* all-reduce rounds the drains made */
    size_t failures;  /* allocations this PE could not serve for lack of room */
    int oom_reported; /* outside debug mode, the first failure is reported, no other */
    int misuse_reported; /* and the first bad argument */
    uint64_t serial;  /* its number among the heaps of this process: see shm__live_serials */
    shmalloc_heap *world; /* a space: the heap it is joined to; NULL: a world heap */
    const void *team;     /* a space: its team's handle */
    int team_gone;        /* a space: its team was destroyed (shmalloc_space_team_destroyed) */
    int live_named;       /* a space destroyed with its live blocks: they are no leaks */
    shm__spaces spaces;   /* a world heap: its spaces */
};
#define SHM__HEAP_BYTES ((sizeof(shmalloc_heap) + 15) & ~(size_t)15)

/* Writes n bytes of `byte` at dst in the heap's memory: directly, or
   through the transport's fill when the metadata is separate (memory this
   process may not touch).  -1 when that has none. */
static int shm__fill(const shmalloc_heap *h, void *dst, int byte, size_t n)
{
    if (h->order.separate) return h->memops.fill ? h->memops.fill(h->memops.user, dst, byte, n) : -1;
    SHMALLOC_MEMSET(dst, byte, n);
    return 0;
}

static void shm__set(long *err, long e)
{
    if (err) *err = e;
}

/* "s" after a count other than 1: "1 block", "2 blocks". */
static const char *shm__s(size_t n) { return n == 1 ? "" : "s"; }

/* Gives the cpu away while waiting for a lock whose holder may be
   descheduled: with more PEs' threads than cores, spinning would only
   delay it. */
static void shm__yield(void)
{
#if defined(__unix__) || defined(__APPLE__)
    sched_yield();
#endif
}

/* A deferred release (shmalloc_heap_free_deferred), from any thread at
   any time, checks its pointer against the heap between two changes,
   never during one, without making the call that changes it take a lock:
   the call holds the heap (changes odd) while it changes it, except while
   it waits for peers (shm__agree, shm__wait), and the release checks
   again when changes moved meanwhile (a sequence lock; shm__check_release).
   So a release waits at most for one call's local part, and a call with
   nothing released takes no lock at all.  The released set and its
   counts have a lock of their own (shm__lock_released), which a call
   takes only when the set has blocks. */
#if defined(__GNUC__) || defined(__clang__)
#  define SHM__LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#  define SHM__LOAD_ACQUIRE(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#  define SHM__STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#  define SHM__STORE_RELEASE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#  if defined(__SANITIZE_THREAD__) /* gcc's ThreadSanitizer has no thread fences; its x86-64 orders these */
#    define SHM__FENCE(order) __atomic_signal_fence(order)
#  else
#    define SHM__FENCE(order) __atomic_thread_fence(order)
#  endif
#else /* no atomics: releases only from the threads that make the collective calls */
#  define SHM__LOAD(x) (x)
#  define SHM__LOAD_ACQUIRE(x) (x)
#  define SHM__STORE(x, v) ((x) = (v))
#  define SHM__STORE_RELEASE(x, v) ((x) = (v))
#  define SHM__FENCE(order) ((void)0)
#endif

static void shm__spin_lock(int *lock)
{
#if defined(__GNUC__) || defined(__clang__)
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(lock, __ATOMIC_RELAXED)) shm__yield(); /* the holder may need this cpu */
#else
    *lock = 1;
#endif
}

static void shm__spin_unlock(int *lock)
{
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
#else
    *lock = 0;
#endif
}

/* A heap with separate metadata cannot be checked by racing reads (its
   records move when they double): its calls also hold heap_lock while
   they change it, and a release checks under it (shm__check_release). */
static void shm__hold(shm__order *o)
{
    if (o->separate) shm__spin_lock(&o->heap_lock);
    SHM__STORE(o->changes, o->changes + 1); /* odd; only the thread in the call writes it */
    SHM__FENCE(__ATOMIC_RELEASE);            /* odd before any change */
}

static void shm__let_go(shm__order *o)
{
    SHM__STORE_RELEASE(o->changes, o->changes + 1); /* even, after every change */
    if (o->separate) shm__spin_unlock(&o->heap_lock);
}

static void shm__lock_released(shm__order *o) { shm__spin_lock(&o->release_lock); }
static void shm__unlock_released(shm__order *o) { shm__spin_unlock(&o->release_lock); }

/* The transport's lock, then the heap held: SHMEM_MALLOC_OK when the
   transport's is held.  A call that could not take it changes nothing, yet
   a collective one still agrees, so no PE is left waiting; its failure is
   what every PE learns. */
static long shm__lock(shmalloc_heap *h)
{
    long e = SHMEM_MALLOC_OK;
    int status = h->tp.lock ? h->tp.lock(h->tp.user) : 0;
    if (status) {
        shmalloc_print(2, SHM__MSG(HEAP_LOCK_FAILED), h->tp.pe, status);
        h->order.tp_failed = SHM__TP_LOCK;
        e = SHMEMX_MALLOC_BAD_TRANSPORT;
    }
    shm__hold(&h->order);
    return e;
}

/* Undoes shm__lock; a failed unlock is said, the call's outcome stands
   (it is the same on every PE). */
static void shm__unlock(shmalloc_heap *h, long held)
{
    shm__let_go(&h->order);
    if (held != SHMEM_MALLOC_OK || !h->tp.unlock || !h->tp.unlock(h->tp.user)) return;
    shmalloc_print(2, SHM__MSG(HEAP_UNLOCK_FAILED), h->tp.pe);
}

/* ---- tables of blocks ----
   A few bits per block, for the few blocks that have any, in a small
   open-addressing table in the PE's private memory, one word per block:
   (offset + 16) | bits, bits in 1..15.  Plain blocks cost nothing.  Two
   tables: the hints that describe a block (SHMEM_MALLOC_ATOMICS_REMOTE,
   SHMEM_MALLOC_SIGNAL_REMOTE), which stay with it and which shmem_realloc
   carries to the resized block (OpenSHMEM 1.6), and the blocks this PE
   released with shmalloc_heap_free_deferred. */
#define SHM__KEPT_HINTS (SHMALLOC_HINT_ATOMICS_REMOTE | SHMALLOC_HINT_SIGNAL_REMOTE)

static size_t shm__table_home(const shm__table *t, uint64_t key)
{
    return (size_t)((key >> 4) * 0x9e3779b97f4a7c15u >> 24) & (t->cap - 1);
}

/* The slot of the block at `offset`, or the empty slot where it would go. */
static size_t shm__table_slot(const shm__table *t, size_t offset)
{
    uint64_t key = (uint64_t)offset + 16;
    size_t i = shm__table_home(t, key);
    while (t->slots[i] && (t->slots[i] & ~(uint64_t)15) != key) i = (i + 1) & (t->cap - 1);
    return i;
}

static long shm__table_get(const shm__table *t, size_t offset)
{
    return t->count ? (long)(t->slots[shm__table_slot(t, offset)] & 15) : 0;
}

/* Room for one more block: 0, or -1 when memory runs out. */
static int shm__table_reserve(shm__table *t)
{
    uint64_t *old = t->slots;
    size_t i, cap = t->cap;
    if ((t->count + 1) * 2 <= cap) return 0;
    t->slots = (uint64_t *)shmalloc_mem_alloc(cap ? cap * 2 : 64, sizeof *old);
    if (!t->slots) {
        t->slots = old;
        return -1;
    }
    t->cap = cap ? cap * 2 : 64;
    for (i = 0; i < cap; i++)
        if (old[i]) t->slots[shm__table_slot(t, (size_t)(old[i] & ~(uint64_t)15) - 16)] = old[i];
    shmalloc_mem_free(old);
    return 0;
}

/* After shm__table_reserve (or the removal of another block); bits 0 keep nothing. */
static void shm__table_put(shm__table *t, size_t offset, long bits)
{
    size_t i;
    if (!(bits & 15)) return;
    i = shm__table_slot(t, offset);
    t->count += !t->slots[i];
    t->slots[i] = ((uint64_t)offset + 16) | (uint64_t)(bits & 15);
}

/* Removes the block's entry; the entries after it that probed past it move
   back, so no lookup ever stops early. */
static void shm__table_drop(shm__table *t, size_t offset)
{
    size_t mask = t->cap - 1, i, j;
    if (!t->count || !t->slots[i = shm__table_slot(t, offset)]) return;
    t->slots[i] = 0;
    t->count--;
    for (j = (i + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
        size_t home = shm__table_home(t, t->slots[j]);
        if (((j - home) & mask) >= ((j - i) & mask)) { /* home is not between i and j: it may move to i */
            t->slots[i] = t->slots[j];
            t->slots[j] = 0;
            i = j;
        }
    }
}

static void shm__table_free(shm__table *t)
{
    shmalloc_mem_free(t->slots);
    t->slots = NULL;
    t->cap = t->count = 0;
}

SHMALLOC_DEF SHMALLOC_API long shmalloc_heap_hints(shmalloc_heap *h, const void *ptr)
{
    long r, held;
    if (!h) return SHMEMX_MALLOC_NO_HEAP;
    if ((held = shm__lock(h))) {
        shm__unlock(h, held);
        return held;
    }
    r = shm__malloc_error(shmalloc_tlsf_validate(h->tlsf, ptr), 0);
    if (!r) r = shm__table_get(&h->hints, shmalloc_tlsf_offset(h->tlsf, ptr));
    shm__unlock(h, held);
    return r;
}

SHMALLOC_DEF SHMALLOC_API long shmalloc_heap_block_of(shmalloc_heap *h, const void *ptr, void **start, size_t *size)
{
    long r, held;
    if (!h) return SHMEMX_MALLOC_NO_HEAP;
    held = shm__lock(h);
    r = held ? held : shm__malloc_error(shmalloc_tlsf_block_of(h->tlsf, ptr, start, size), 0);
    shm__unlock(h, held);
    return r;
}

/* One collective call as the PEs must agree on it. */
typedef struct shm__call {
    int kind;
    size_t size, align, offset; /* offset: the block freed or resized */
    long hints;
    int again; /* this PE must synchronise again after committing; agreed: any PE must */
} shm__call;

/* A value and its complement: their maxima over the PEs are its maximum
   and (complemented) its minimum, equal only when every PE had the same. */
static void shm__pair(uint64_t *v, uint64_t x)
{
    v[0] = x;
    v[1] = ~x;
}
static int shm__same(const uint64_t *v) { return v[0] == ~v[1]; }
/* The same for a size, a block or an alignment, which a PE that found it
   bad leaves at 0, 0: the same on every PE that named one. */
static int shm__same_named(const uint64_t *v) { return shm__same(v) || !(v[0] | v[1]); }

/* The arguments of call c that it has, as a message gives them. */
static void shm__call_args(char *buf, size_t n, const shm__call *c)
{
    char hints[32] = "";
    if (c->hints) snprintf(hints, sizeof hints, ", hints %ld", c->hints);
    if (c->kind == SHM__FREE_CALL) snprintf(buf, n, "the block at offset %zu", c->offset);
    else if (c->kind == SHM__REALLOC && c->align > SHMALLOC_ALIGNMENT)
        snprintf(buf, n, "the block at offset %zu, alignment %zu, %zu bytes%s", c->offset, c->align, c->size, hints);
    else if (c->kind == SHM__REALLOC) snprintf(buf, n, "the block at offset %zu, %zu bytes%s", c->offset, c->size, hints);
    else if (c->kind == SHM__ALIGN) snprintf(buf, n, "alignment %zu, %zu bytes%s", c->align, c->size, hints);
    else if (c->kind == SHM__DESTROY || c->kind == SHM__CLOSE) buf[0] = '\0';
    else snprintf(buf, n, "%zu bytes%s", c->size, hints);
}

/* A call as a mismatch report gives it: kind, size, alignment, block,
   hints and the PE's collective call number (one count, one word, in
   every report: a finalize counts none).  A PE's end without its
   finalize (shmalloc_heap_destroy_ended) has a kind of its own here. */
enum { SHM__T_KIND, SHM__T_SIZE, SHM__T_ALIGN, SHM__T_OFFSET, SHM__T_HINTS, SHM__T_CALLS, SHM__T_FIELDS };
enum { SHM__ENDED = SHM__CALLS };

static void shm__call_tuple(uint64_t *t, const shm__call *c, uint64_t calls, const char *ending)
{
    t[SHM__T_KIND] = c->kind == SHM__DESTROY && ending ? (uint64_t)SHM__ENDED : (uint64_t)c->kind;
    t[SHM__T_SIZE] = c->size;
    t[SHM__T_ALIGN] = c->align;
    t[SHM__T_OFFSET] = c->offset;
    t[SHM__T_HINTS] = (uint64_t)c->hints;
    t[SHM__T_CALLS] = calls;
}

/* "malloc(100 bytes), its collective call 2" */
static void shm__call_text(char *buf, size_t n, const uint64_t *t)
{
    shm__call c = {0, 0, 0, 0, 0, 0};
    char args[128];
    const char *end = t[SHM__T_KIND] == SHM__ENDED ? "end without finalize" : "finalize";
    c.kind = t[SHM__T_KIND] < SHM__CALLS ? (int)t[SHM__T_KIND] : SHM__DESTROY;
    c.size = (size_t)t[SHM__T_SIZE], c.align = (size_t)t[SHM__T_ALIGN], c.offset = (size_t)t[SHM__T_OFFSET];
    c.hints = (long)t[SHM__T_HINTS];
    shm__call_args(args, sizeof args, &c);
    if (c.kind == SHM__DESTROY && !t[SHM__T_CALLS]) snprintf(buf, n, "%s, before any collective call", end);
    else if (c.kind == SHM__DESTROY)
        snprintf(buf, n, "%s, after its collective call %llu", end, (unsigned long long)t[SHM__T_CALLS]);
    else
        snprintf(buf, n, "%s(%s), its collective call %llu", shm__call_names[c.kind], args,
                 (unsigned long long)t[SHM__T_CALLS]);
}

/* "the calls, the sizes and the blocks": where calls a and b differ, as
   the agreement compares them (hints and call numbers in debug mode). */
static int shm__differences(char *buf, size_t n, const uint64_t *a, const uint64_t *b, int debug)
{
    static const char *const what[SHM__T_FIELDS] = {"the calls", "the sizes", "the alignments", "the blocks",
                                                    "the hints", "the call numbers"};
    const char *found[SHM__T_FIELDS];
    int k = 0, i;
    size_t len = 0;
    uint64_t ka = a[SHM__T_KIND] == SHM__ENDED ? SHM__DESTROY : a[SHM__T_KIND]; /* an end is a finalize */
    uint64_t kb = b[SHM__T_KIND] == SHM__ENDED ? SHM__DESTROY : b[SHM__T_KIND];
    int none = ka == SHM__DESTROY || kb == SHM__DESTROY; /* a finalize has no arguments */
    for (i = 0; i < SHM__T_FIELDS; i++)
        if ((i == SHM__T_KIND ? ka != kb : a[i] != b[i]) && (debug || i < SHM__T_HINTS) &&
            !(none && i != SHM__T_KIND && i != SHM__T_CALLS))
            found[k++] = what[i];
    buf[0] = '\0';
    for (i = 0; i < k && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i == 0 ? "" : i + 1 < k ? ", " : " and ", found[i]);
    return k;
}

/* A member of the transport returned `status` on this PE during call
   `kind`: said, kept for the next agreement to name, and the call's code. */
static long shm__transport_failed(const shmalloc_transport *tp, shm__order *o, int kind, int member, int status)
{
    shmalloc_print(2, SHM__MSG(HEAP_TRANSPORT_FAILED), tp->pe, shm__call_names[kind], shm__tp_names[member], status);
    o->tp_failed = member;
    return SHMEMX_MALLOC_BAD_TRANSPORT;
}

/* One all-reduce of an error path (a report's), the heap held again after
   it: 0, or SHMEMX_MALLOC_BAD_TRANSPORT after its message. */
static long shm__error_round(const shmalloc_transport *tp, shm__order *o, int kind, uint64_t *v, int count)
{
    int status;
    shm__let_go(o);
    status = tp->allreduce_max(tp->user, v, count);
    shm__hold(o);
    return status ? shm__transport_failed(tp, o, kind, SHM__TP_ALLREDUCE_MAX, status) : SHMEM_MALLOC_OK;
}

/* This PE's side of a mismatch, named against the first PE whose call
   differs from its own, with that PE's arguments.  Two more all-reduces,
   paid only here: PE 0's call, then, from every PE whose call differs from
   PE 0's, its call with its number in every value's high bits (the
   maximum is the lowest such PE's, whole); a PE that differs from PE 0
   names PE 0, one that does not names that PE.  No PE differs in what
   the agreement compares when only the digests did (said already).  0, or
   the code of a failed round. */
static long shm__report_mismatch(const shmalloc_transport *tp, shm__order *o, const shm__call *c, int debug)
{
    uint64_t mine[SHM__T_FIELDS], first[SHM__T_FIELDS], keyed[2 * SHM__T_FIELDS - 1], key, *other = first;
    char own[192], theirs[192], what[160];
    int i, pe = 0, differs;
    long e;
    shm__call_tuple(mine, c, o->calls, o->ending);
    for (i = 0; i < SHM__T_FIELDS; i++) first[i] = tp->pe == 0 ? mine[i] : 0;
    if ((e = shm__error_round(tp, o, c->kind, first, SHM__T_FIELDS))) return e;
    differs = shm__differences(what, sizeof what, mine, first, debug) != 0;
    key = differs ? (uint64_t)(0xffffff - tp->pe) << 32 : 0;
    keyed[0] = differs ? key | mine[0] : 0; /* a kind fits in 32 bits */
    for (i = 1; i < SHM__T_FIELDS; i++) {
        keyed[2 * i - 1] = differs ? key | mine[i] >> 32 : 0;
        keyed[2 * i] = differs ? key | (mine[i] & 0xffffffffu) : 0;
    }
    if ((e = shm__error_round(tp, o, c->kind, keyed, 2 * SHM__T_FIELDS - 1)) || (!differs && !keyed[0])) return e;
    if (!differs) { /* the lowest PE whose call differs from PE 0's, and so from this PE's */
        pe = 0xffffff - (int)(keyed[0] >> 32);
        other[0] = keyed[0] & 0xffffffffu;
        for (i = 1; i < SHM__T_FIELDS; i++) other[i] = (keyed[2 * i - 1] << 32) | (keyed[2 * i] & 0xffffffffu);
    }
    shm__differences(what, sizeof what, mine, other, debug);
    shm__call_text(theirs, sizeof theirs, other);
    if (mine[SHM__T_KIND] == SHM__ENDED) { /* "PE 1 returned from pe_main after its collective call 3, while ..." */
        if (o->calls) snprintf(own, sizeof own, "after its collective call %llu", (unsigned long long)o->calls);
        else snprintf(own, sizeof own, "before any collective call");
        shmalloc_print(2, SHM__MSG(HEAP_MISMATCH_ENDED), o->ending, own, pe, theirs, what);
        return SHMEM_MALLOC_OK;
    }
    shm__call_text(own, sizeof own, mine);
    shmalloc_print(2, SHM__MSG(HEAP_MISMATCH), tp->pe, own, pe, theirs, what);
    return SHMEM_MALLOC_OK;
}

/* How much an error tells, as the agreement ranks it: a bad argument (or
   a failed transport) on any PE outranks a lack of room (SHMEM_MALLOC_FAIL,
   _REALLOC_FAILED), which a call with that argument could never have cured. */
static int shm__bad_argument(long e) { return e && e != SHMEM_MALLOC_FAIL && e != SHMEM_MALLOC_REALLOC_FAILED; }
static uint64_t shm__rank(long e) { return (uint64_t)-e + (shm__bad_argument(e) ? 16 : 0); }
static long shm__ranked(uint64_t r) { return r >= 16 ? -(long)(r - 16) : -(long)r; }

/* A value the agreement compares, or a pair of zeros, which no maximum
   sees, for an argument this PE found bad. */
static void shm__pair_named(uint64_t *v, uint64_t x, int bad)
{
    shm__pair(v, x);
    if (bad) v[0] = v[1] = 0;
}

/* What this PE contributes to the agreement on c (see shm__agree). */
static void shm__agree_values(uint64_t *v, const shmalloc_transport *tp, const shm__order *o, const shm__call *c,
                              long err, uint64_t digest)
{
    int none = c->kind == SHM__DESTROY || c->kind == SHM__CLOSE; /* no size, alignment or block to compare */
    int bad_block = none || err == SHMEM_MALLOC_NOT_IN_SYMM_HEAP || err == SHMEM_MALLOC_ALREADY_FREE ||
                    err == SHMEM_MALLOC_NOT_ALIGNED;
    shm__pair_named(v, c->size, none || err == SHMEM_MALLOC_BAD_SIZE);
    v[2] = shm__rank(err);
    shm__pair(v + 3, digest);
    /* Relaxed, no lock: a release this load misses is seen by a later call's, and a
       drain takes its bits from the whole set under the set's lock, so none is lost. */
    v[5] = (uint64_t)c->again | (SHM__LOAD(o->fresh) ? 2u : 0u);
    shm__pair(v + 6, (uint64_t)c->kind);
    shm__pair_named(v + 8, c->align, err == SHMEM_MALLOC_MEMALIGN_FAILED || bad_block);
    shm__pair_named(v + 10, c->offset, bad_block);
    shm__pair(v + 12, o->calls << 24 | ((uint64_t)tp->pe & 0xffffff));
    shm__pair(v + 14, (uint64_t)c->hints);
}

/* The member whose failure on this PE brought err to the agreement: the
   last that failed here (every BAD_TRANSPORT records its own), or
   register_region. */
static int shm__failed_member(const shm__order *o, long err)
{
    if (err == SHMEMX_MALLOC_REGISTER_FAILED) return SHM__TP_REGISTER;
    return err == SHMEMX_MALLOC_BAD_TRANSPORT ? o->tp_failed : SHM__TP_NONE;
}

/* Every PE agreed on e, a member's failure on some PE: one more round (on
   this error path only) names the member and the lowest PE it failed on,
   which the PEs where it did not fail say; that PE said it already. */
static long shm__name_failure(const shmalloc_transport *tp, shm__order *o, int kind, long e, int member)
{
    uint64_t v = member ? (uint64_t)member << 24 | (uint64_t)(0xffffff - tp->pe) : 0;
    long failed;
    if (tp->npes == 1) return e; /* no other PE to tell */
    if ((failed = shm__error_round(tp, o, kind, &v, 1))) return failed;
    if (!member && v >> 24 > SHM__TP_NONE && v >> 24 < SHM__TP_MEMBERS)
        shmalloc_print(2, SHM__MSG(HEAP_TRANSPORT_FAILED_ON), tp->pe, shm__call_names[kind],
                       e == SHMEMX_MALLOC_REGISTER_FAILED ? "SHMEMX_MALLOC_REGISTER_FAILED" : "SHMEMX_MALLOC_BAD_TRANSPORT",
                       shm__tp_names[v >> 24], 0xffffff - (int)(v & 0xffffff));
    return e;
}

/* The agreement of every collective call, in one all-reduce: the call's
   size, kind, alignment and block, its error's rank (shm__rank), the
   digest of the allocations made without a barrier since the last one and
   whether any PE synchronises again (c->again, updated); in debug mode
   also the running call number and the hints.  A mismatch fails the call
   on every PE with SHMEM_MALLOC_SYMMSIZE_FAILED: PEs that freed or resized
   different blocks, or aligned them differently, would have different
   heaps from then on.  A PE whose size, pointer or alignment is bad names
   no such value (nor, for a bad pointer, the block's alignment): the
   others' are compared, and the bad argument's error is what every PE
   learns.  Every decision after the call (to grow the heap, say) is made
   from these agreed values, so every PE takes the same path. */
static long shm__agree(const shmalloc_transport *tp, int debug, shm__order *o, shm__call *c, long err)
{
    uint64_t v[SHMALLOC_REDUCE_MAX], pending = o->pending, digest = o->digest;
    int same, failed;
    o->pending = o->digest = 0; /* the next agreement starts afresh */
    o->drain = 0;
    if (!tp->allreduce_max) {
        shm__let_go(o);
        failed = tp->barrier(tp->user);
        shm__hold(o);
        return failed ? shm__transport_failed(tp, o, c->kind, SHM__TP_BARRIER, failed) : err;
    }
    shm__agree_values(v, tp, o, c, err, digest);
    shm__let_go(o);
    failed = tp->allreduce_max(tp->user, v, debug ? SHMALLOC_REDUCE_MAX : 12);
    shm__hold(o);
    if (failed) return shm__transport_failed(tp, o, c->kind, SHM__TP_ALLREDUCE_MAX, failed);
    c->again = (v[5] & 1) != 0;
    o->drain = (v[5] & 2) && shm__same(v + 3); /* the same blocks everywhere: see shm__drain */
    same = shm__same_named(v) && shm__same(v + 3) && shm__same(v + 6) && shm__same_named(v + 8) &&
           shm__same_named(v + 10);
    if (debug) same = same && shm__same(v + 14) && v[12] >> 24 == ~v[13] >> 24;
    if (same && SHM__LIKELY(!v[2])) return SHMEM_MALLOC_OK;
    if (same && (v[2] == shm__rank(SHMEMX_MALLOC_BAD_TRANSPORT) || v[2] == shm__rank(SHMEMX_MALLOC_REGISTER_FAILED)))
        return shm__name_failure(tp, o, c->kind, shm__ranked(v[2]), shm__failed_member(o, err));
    if (same) return shm__ranked(v[2]);
    if (!shm__same(v + 3))
        shmalloc_print(2, SHM__MSG(HEAP_NO_BARRIER_DIFFER), tp->pe, (unsigned long long)pending, shm__s(pending),
                       pending == 1 ? "s" : "", shm__call_names[c->kind]);
    failed = 0;
    if (debug) {
        failed = (int)shm__report_mismatch(tp, o, c, debug);
        o->calls = v[12] >> 24; /* every PE goes on from the same number */
    } else if (shm__same(v + 3) && !o->mismatch_reported) { /* agreed: every PE reports, or none */
        o->mismatch_reported = 1;
        failed = (int)shm__report_mismatch(tp, o, c, debug);
        shmalloc_print(2, SHM__MSG(HEAP_MISMATCH_QUIET), tp->pe);
    }
    return failed ? SHMEMX_MALLOC_BAD_TRANSPORT : SHMEM_MALLOC_SYMMSIZE_FAILED;
}

typedef struct shm__leaks {
    const shmalloc_heap *h;
    size_t count, bytes;
    const uint64_t *released_on; /* of the first 16: the PEs that released each */
} shm__leaks;

static void shm__pe_list(char *buf, size_t n, uint64_t mask);

static int shm__leak_block(void *user, const shmalloc_block_info *b)
{
    shm__leaks *l = (shm__leaks *)user;
    char pes[192];
    uint64_t on;
    if (!b->used) return 0;
    if (++l->count <= 16) {
        shmalloc_print(2, SHM__MSG(HEAP_LEAK), l->h->tp.pe, b->offset,
                       shmalloc_tlsf_usable_size(l->h->tlsf, (char *)shmalloc_tlsf_base(l->h->tlsf) + b->offset), b->size);
        if ((on = l->released_on[l->count - 1]) != 0) {
            shm__pe_list(pes, sizeof pes, on);
            shmalloc_print(2, SHM__MSG(DEFER_RELEASED_ON), l->h->tp.pe, on & (on - 1) ? "s" : "", pes,
                           l->h->tp.npes);
        }
    }
    l->bytes += b->size;
    return 0;
}

/* Debug mode: what the program never freed, at heap destruction, with the
   PEs that released each of the first 16 (released_on). */
static void shm__report_leaks(const shmalloc_heap *h, const uint64_t *released_on)
{
    shm__leaks l = {NULL, 0, 0, NULL};
    l.released_on = released_on;
    shmalloc_counters c;
    l.h = h;
    shmalloc_tlsf_counters(h->tlsf, &c);
    if (!c.used_blocks) return;
    shmalloc_print(2, SHM__MSG(HEAP_LEAKS_BEGIN), h->tp.pe, c.used_blocks, shm__s(c.used_blocks));
    shmalloc_tlsf_walk(h->tlsf, shm__leak_block, &l);
    shmalloc_print(2, SHM__MSG(HEAP_LEAKS), h->tp.pe, l.count, shm__s(l.count), l.bytes,
                   l.count > 16 ? " (first 16 shown)" : "");
}

static void shm__debug_check(const shmalloc_heap *h)
{
#if SHMALLOC_DEBUG_LEVEL >= 3
    SHMALLOC_ASSERT(shm__check(h->tlsf, 0, h->tp.pe) == 0);
#else
    (void)h;
#endif
}

/* ---- deferred releases ----
   shmalloc_heap_free_deferred records the block in this PE's released set
   and counts it in order.fresh; the next agreement carries "fresh releases
   here" in a bit beside `again`, so a call costs nothing more while no PE
   has any.  When some PE has, every PE drains after its call (shm__drain):
   the live blocks, numbered in offset order, get one bit each, set where
   this PE released the block, and one bitwise AND over the PEs gives the
   blocks every PE released, freed in ascending offset everywhere.  The
   numbering is the same on every PE because the agreement found the same
   allocations made without a barrier (else no PE drains).  A block
   released on some PEs only stays allocated and in their sets. */

/* The released set changed: its count, which calls read without its lock. */
static void shm__count_released(shmalloc_heap *h) { SHM__STORE(h->order.releases, h->released.count); }

/* A collective call frees or moves the block at offset: this PE's release
   of it goes; 1 when there was one.  The set's lock only when the set has
   blocks (a release of this very block racing the call is a double free):
   the test inline, the rest out of line. */
static SHM__NOINLINE int shm__drop_release_locked(shmalloc_heap *h, size_t offset)
{
    int had;
    shm__lock_released(&h->order);
    had = shm__table_get(&h->released, offset) != 0;
    shm__table_drop(&h->released, offset);
    shm__count_released(h);
    shm__unlock_released(&h->order);
    return had;
}

SHM__INLINE int shm__drop_release(shmalloc_heap *h, size_t offset)
{
    return SHM__LOAD(h->order.releases) ? shm__drop_release_locked(h, offset) : 0;
}

/* Block ptr is released by this PE again (a resize of it failed). */
static void shm__keep_release(shmalloc_heap *h, size_t offset)
{
    shm__lock_released(&h->order);
    shm__table_put(&h->released, offset, 1);
    SHM__STORE(h->order.fresh, h->order.fresh + 1);
    shm__count_released(h);
    shm__unlock_released(&h->order);
}

/* The block at ptr, agreed, not in the released set: freed, its hints
   dropped; debug mode fills it, the slack too (the free poisons it again). */
SHM__INLINE void shm__free_agreed(shmalloc_heap *h, void *ptr)
{
    size_t offset = shmalloc_tlsf_offset(h->tlsf, ptr);
    shm__table_drop(&h->hints, offset);
    if (h->debug) {
        size_t usable = shmalloc_tlsf_usable_size(h->tlsf, ptr);
        SHM__UNPOISON(ptr, usable);
        shm__fill(h, ptr, SHM__FILL_FREED, usable); /* skipped without a fill */
    }
    shmalloc_tlsf_free(h->tlsf, ptr);
}

/* The block at ptr, agreed: freed, and this PE's release of it dropped. */
static void shm__free_block(shmalloc_heap *h, void *ptr)
{
    shm__drop_release(h, shmalloc_tlsf_offset(h->tlsf, ptr));
    shm__free_agreed(h, ptr);
}

/* words[0..ceil(bits/64)) := their bitwise AND over the PEs, in pieces of
   SHMALLOC_REDUCE_AND_MAX words, each one round of allreduce_and; without
   it one value per bit, 1 - bit, whose maximum over the PEs is 0 only when
   every PE had the bit: SHMALLOC_REDUCE_MAX bits per round of
   allreduce_max.  Every PE calls it with the same bits.  0, or -1 when the
   transport failed. */
static int shm__reduce_and(shmalloc_heap *h, uint64_t *words, size_t bits)
{
    const shmalloc_transport *tp = &h->tp;
    uint64_t v[SHMALLOC_REDUCE_MAX];
    size_t i, j, k, n = (bits + 63) / 64;
    int failed = 0;
    shm__let_go(&h->order);
    for (i = 0; tp->allreduce_and && i < n && !failed; i += k, h->drain_rounds++) {
        k = n - i < SHMALLOC_REDUCE_AND_MAX ? n - i : SHMALLOC_REDUCE_AND_MAX;
        failed = tp->allreduce_and(tp->user, words + i, (int)k);
    }
    for (i = 0; !tp->allreduce_and && i < bits && !failed; i += k, h->drain_rounds++) {
        k = bits - i < SHMALLOC_REDUCE_MAX ? bits - i : SHMALLOC_REDUCE_MAX;
        for (j = 0; j < k; j++) v[j] = ~words[(i + j) / 64] >> ((i + j) % 64) & 1;
        failed = tp->allreduce_max(tp->user, v, (int)k);
        for (j = 0; j < k; j++)
            if (v[j]) words[(i + j) / 64] &= ~((uint64_t)1 << ((i + j) % 64));
    }
    shm__hold(&h->order);
    if (failed)
        shmalloc_print(2, SHM__MSG(HEAP_DRAIN_TRANSPORT_FAILED), tp->pe,
                       shm__tp_names[tp->allreduce_and ? SHM__TP_ALLREDUCE_AND : SHM__TP_ALLREDUCE_MAX], failed);
    return failed ? -1 : 0;
}

typedef struct shm__live {
    uint64_t *offsets; /* of the used blocks, ascending */
    size_t count;
} shm__live;

static int shm__live_block(void *user, const shmalloc_block_info *b)
{
    shm__live *l = (shm__live *)user;
    if (b->used) l->offsets[l->count++] = b->offset;
    return 0;
}

/* A PE with no memory for the bitmap contributes zeros in the same
   pieces, so that every PE makes the same rounds and none frees. */
static void shm__reduce_nothing(shmalloc_heap *h, size_t bits)
{
    uint64_t none[SHMALLOC_REDUCE_AND_MAX];
    size_t i, piece = (size_t)SHMALLOC_REDUCE_AND_MAX * 64;
    for (i = 0; i < bits; i += piece) {
        SHMALLOC_MEMSET(none, 0, sizeof none);
        shm__reduce_and(h, none, bits - i < piece ? bits - i : piece);
    }
}

/* After a collective call whose agreement found fresh releases (on every
   PE alike): frees the blocks every PE released.  Returns how many. */
static SHM__NOINLINE size_t shm__drain_agreed(shmalloc_heap *h)
{
    shmalloc_counters c;
    shm__live l = {NULL, 0};
    uint64_t *bits;
    size_t i, fresh, freed = 0;
    int failed;
    h->order.drain = 0;
    shmalloc_tlsf_counters(h->tlsf, &c);
    if (!c.used_blocks) return 0;
    l.offsets = (uint64_t *)shmalloc_mem_alloc(c.used_blocks + (c.used_blocks + 63) / 64, sizeof(uint64_t));
    if (!l.offsets) { /* kept fresh: a later call tries again */
        shm__reduce_nothing(h, c.used_blocks);
        return 0;
    }
    bits = l.offsets + c.used_blocks;
    shmalloc_tlsf_walk(h->tlsf, shm__live_block, &l);
    shm__lock_released(&h->order);
    fresh = h->order.fresh;
    SHM__STORE(h->order.fresh, 0);
    for (i = 0; i < l.count; i++)
        if (shm__table_get(&h->released, (size_t)l.offsets[i])) bits[i / 64] |= (uint64_t)1 << (i % 64);
    shm__unlock_released(&h->order);
    failed = shm__reduce_and(h, bits, c.used_blocks);
    shm__lock_released(&h->order);
    if (failed) SHM__STORE(h->order.fresh, h->order.fresh + fresh); /* a later call tries again */
    for (i = 0; !failed && i < l.count; i++)
        if ((bits[i / 64] >> (i % 64) & 1) && shm__table_get(&h->released, (size_t)l.offsets[i])) {
            shm__table_drop(&h->released, (size_t)l.offsets[i]);
            shm__free_agreed(h, (char *)shmalloc_tlsf_base(h->tlsf) + l.offsets[i]);
            freed++;
        }
    shm__count_released(h);
    shm__unlock_released(&h->order);
    h->drained += freed;
    shmalloc_mem_free(l.offsets);
    return freed;
}

/* Every collective call drains after its agreement: the test inline, the
   drain out of line, so that a call with nothing released pays a load. */
SHM__INLINE size_t shm__drain(shmalloc_heap *h) { return h->order.drain ? shm__drain_agreed(h) : 0; }

/* "0, 2": the PEs whose bits are set in mask (PEs 0..63). */
static void shm__pe_list(char *buf, size_t n, uint64_t mask)
{
    size_t len = 0;
    int pe;
    buf[0] = '\0';
    for (pe = 0; pe < 64 && len < n; pe++)
        if (mask >> pe & 1) len += (size_t)snprintf(buf + len, n - len, "%s%d", len ? ", " : "", pe);
}

typedef struct shm__marks {
    const shmalloc_heap *h;
    uint64_t *words;
    size_t count;
} shm__marks;

/* The complement of this PE's bit (PEs 0..63) for each of the first 16
   used blocks it released, all ones for the others. */
static int shm__mark_block(void *user, const shmalloc_block_info *b)
{
    shm__marks *m = (shm__marks *)user;
    int pe = m->h->tp.pe;
    if (!b->used || m->count == 16) return m->count == 16;
    m->words[m->count++] = ~(pe < 64 && shm__table_get(&m->h->released, b->offset) ? (uint64_t)1 << pe : 0);
    return 0;
}

/* Debug mode, at finalize, collective: on[i] := the PEs that released the
   i-th of the first 16 used blocks, as the AND of the complements (16
   words on every PE, whatever blocks it has); 0 when the transport
   failed. */
static void shm__released_on(shmalloc_heap *h, uint64_t *on)
{
    shm__marks m;
    size_t i;
    m.h = h;
    m.words = on;
    m.count = 0;
    for (i = 0; i < 16; i++) on[i] = ~(uint64_t)0;
    shm__lock_released(&h->order);
    shmalloc_tlsf_walk(h->tlsf, shm__mark_block, &m);
    shm__unlock_released(&h->order);
    if (shm__reduce_and(h, on, 16 * 64)) m.count = 0;
    for (i = 0; i < 16; i++) on[i] = i < m.count ? ~on[i] : 0;
}

/* Finalize: the drain is done, and what this PE released stays allocated
   because some PE did not release it.  Debug mode names the PEs that did,
   by block, with the leaks (collective); otherwise one line says so. */
static void shm__report_unreleased(shmalloc_heap *h, int any_released)
{
    uint64_t on[16] = {0};
    size_t n = SHM__LOAD(h->order.releases);
    if (h->debug && !h->live_named) {
        if (any_released) shm__released_on(h, on); /* agreed: every PE makes the round or none */
        shm__report_leaks(h, on);
    } else if (n)
        shmalloc_print(2, SHM__MSG(DEFER_UNDRAINED), h->tp.pe, n, shm__s(n), n == 1 ? "s" : "",
                       n == 1 ? "it" : "them");
}

/* 1 the first time, 0 after: a message said once per process. */
static int shm__first(int *said)
{
#if defined(__GNUC__) || defined(__clang__)
    return !__atomic_exchange_n(said, 1, __ATOMIC_RELAXED);
#else
    int first = !*said;
    *said = 1;
    return first;
#endif
}

/* ---- live heaps ----
   A destroyed heap stops being current in every thread, and the process
   heap.  Destroy cannot reach other threads' current heaps, so it counts
   itself in shm__destroys, and a thread that sees the count move looks
   its heap up among the live ones (shmalloc_current).  By serial number,
   not address: a heap mapped where a destroyed one was is another heap.
   Past SHM__LIVE_MAX live heaps, a heap is untracked: assumed live. */
#define SHM__LIVE_MAX 1024
#define SHM__UNTRACKED ((uint64_t)1 << 63)
static uint64_t shm__live_serials[SHM__LIVE_MAX]; /* serials of live heaps, under shm__live_lock */
static size_t shm__live_count;
static uint64_t shm__serials;            /* under shm__live_lock */
static uint64_t shm__destroys;           /* atomic: heaps destroyed */
static int shm__live_lock;
static shmalloc_heap *shm__process_heap; /* atomic */
static SHMALLOC_TLS shmalloc_heap *shm__current;
static SHMALLOC_TLS uint64_t shm__current_serial, shm__current_seen; /* its serial; shm__destroys when looked up */

static uint64_t shm__live_add(void)
{
    uint64_t serial;
    shm__spin_lock(&shm__live_lock);
    serial = ++shm__serials;
    if (shm__live_count < SHM__LIVE_MAX) shm__live_serials[shm__live_count++] = serial;
    else serial |= SHM__UNTRACKED;
    shm__spin_unlock(&shm__live_lock);
    return serial;
}

/* h is no longer current anywhere: here at once, elsewhere at the next look. */
static void shm__live_drop(const shmalloc_heap *h)
{
    size_t i = 0;
    shm__spin_lock(&shm__live_lock);
    while (i < shm__live_count && shm__live_serials[i] != h->serial) i++;
    if (i < shm__live_count) shm__live_serials[i] = shm__live_serials[--shm__live_count];
    if (SHM__LOAD(shm__process_heap) == h) SHM__STORE(shm__process_heap, NULL);
    SHM__STORE_RELEASE(shm__destroys, shm__destroys + 1);
    shm__spin_unlock(&shm__live_lock);
    if (shm__current == h) shm__current = NULL;
}

/* A heap was destroyed since this thread last looked: is its own still live? */
static SHM__NOINLINE void shm__current_look(void)
{
    size_t i = 0;
    shm__spin_lock(&shm__live_lock);
    shm__current_seen = shm__destroys;
    while (i < shm__live_count && shm__live_serials[i] != shm__current_serial) i++;
    if (i == shm__live_count && !(shm__current_serial & SHM__UNTRACKED)) shm__current = NULL;
    shm__spin_unlock(&shm__live_lock);
}

/* A call with no heap: the code, and a line the first time in the process. */
static void shm__no_heap(int kind, long *err)
{
    static int said;
    if (shm__first(&said)) shmalloc_print(2, SHM__MSG(HEAP_NO_HEAP), shm__call_names[kind]);
    shm__set(err, SHMEMX_MALLOC_NO_HEAP);
}

/* A call that cannot go on: no heap, or a space whose team is gone
   (the child transport would synchronise with a team that is no more). */
static int shm__unusable(shmalloc_heap *h, int kind, long *err)
{
    if (!h) shm__no_heap(kind, err);
    else if (SHM__LOAD(h->team_gone)) {
        shmalloc_print(2, SHM__MSG(SPACE_TEAM_GONE), h->tp.pe, shm__call_names[kind], (void *)h);
        shm__set(err, SHMEMX_MALLOC_TEAM_DESTROYED);
    } else return 0;
    return 1;
}

SHMALLOC_DEF SHMALLOC_API size_t shmalloc_heap_bytes(size_t nominal)
{
    size_t overhead = shmalloc_tlsf_overhead(nominal);
    return overhead ? nominal + overhead + SHM__HEAP_BYTES + 16 : 0;
}

/* Registers [from, to) of the block space on this PE; 0 or an error. */
static long shm__register(const shmalloc_transport *tp, shmalloc_tlsf *t, size_t from, size_t to)
{
    if (!tp->register_region) return SHMEM_MALLOC_OK;
    return tp->register_region(tp->user, (char *)shmalloc_tlsf_base(t) + from, to - from)
               ? SHMEMX_MALLOC_REGISTER_FAILED
               : SHMEM_MALLOC_OK;
}

static void shm__deregister(const shmalloc_transport *tp, shmalloc_tlsf *t, size_t from, size_t to)
{
    if (tp->deregister_region) tp->deregister_region(tp->user, (char *)shmalloc_tlsf_base(t) + from, to - from);
}

/* Why a transport cannot carry a heap, said once: 0 when it can. */
static long shm__transport_fault(const shmalloc_transport *tp)
{
    if (!tp)
        shmalloc_print(2, SHM__MSG(HEAP_NO_TRANSPORT));
    else if (!tp->barrier)
        shmalloc_print(2, SHM__MSG(HEAP_NO_BARRIER));
    else if (tp->npes < 1 || tp->pe < 0 || tp->pe >= tp->npes)
        shmalloc_print(2, SHM__MSG(HEAP_BAD_PE), tp->pe, tp->npes, tp->npes == 1 ? "" : "s");
    else return SHMEM_MALLOC_OK;
    return SHMEMX_MALLOC_BAD_TRANSPORT;
}

/* Why mem, bytes holds no heap (the core refused it): said, and the code. */
static long shm__memory_fault(int pe, const void *mem, size_t bytes)
{
    size_t least = shmalloc_heap_bytes(SHM__MIN_BLOCK);
    if (!mem || ((uintptr_t)mem & 15))
        shmalloc_print(2, SHM__MSG(HEAP_UNALIGNED), pe, mem);
    else if (bytes < least)
        shmalloc_print(2, SHM__MSG(HEAP_MEMORY_SMALL), pe, bytes, least);
    else
        shmalloc_print(2, SHM__MSG(HEAP_MEMORY_LARGE), pe, bytes, SHMALLOC_MAX_LOG2);
    return SHMEMX_MALLOC_BAD_MEMORY;
}

/* A heap's core over mem: inline, in the tbytes before the heap's own
   struct, or separate, its state and the heap's from the hooks and its
   blocks spanning what an inline heap's would, so both serve the same
   sizes.  NULL when mem cannot hold one. */
static shmalloc_tlsf *shm__heap_core(void *mem, size_t bytes, size_t nominal, int separate,
                                     const shmalloc_memops *ops, size_t *tbytes)
{
    size_t first = (nominal + 15) & ~(size_t)15;
    *tbytes = 0;
    if (!mem || ((uintptr_t)mem & 15) || bytes <= SHM__HEAP_BYTES + 16) return NULL;
    *tbytes = (bytes - SHM__HEAP_BYTES) & ~(size_t)15;
    if (!separate) return shmalloc_tlsf_create_reserved(mem, *tbytes, first + 32);
    *tbytes = shm__inline_area(*tbytes);
    return *tbytes < 16 + SHM__MIN_BLOCK ? NULL : shmalloc_tlsf_create_separate(mem, *tbytes - 16, first + 16, ops);
}

SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_create_with(void *mem, size_t bytes,
                                                                   const shmalloc_heap_config *config,
                                                                   const shmalloc_transport *tp, long *err)
{
    shmalloc_tlsf *t = NULL;
    shmalloc_heap *h = NULL;
    size_t tbytes = 0, first = 0;
    long e = SHMEM_MALLOC_OK, registered = SHMEM_MALLOC_FAIL;
    size_t nominal = config ? config->nominal : SIZE_MAX;
    int debug = config && config->debug, separate = config && config->metadata == SHMALLOC_METADATA_SEPARATE;
    shm__call call = {SHM__CREATE, 0, 0, 0, 0, 0};
    shm__order order = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL};
    shmalloc_memops ops;
    if ((e = shm__transport_fault(tp))) {
        shm__set(err, e);
        return NULL;
    }
    if (nominal > SHMALLOC_TLSF_MAX_REQUEST) nominal = SHMALLOC_TLSF_MAX_REQUEST; /* all the region holds */
    if (config && config->memops) ops = *config->memops;
    else ops.user = tp->user, ops.fill = tp->fill, ops.copy = tp->copy;
    t = shm__heap_core(mem, bytes, nominal, separate, &ops, &tbytes);
    if (!t) e = shm__memory_fault(tp->pe, mem, bytes);
    else first = shmalloc_tlsf_size(t);
    if (!e && separate && !(h = (shmalloc_heap *)shmalloc_mem_alloc(1, sizeof *h))) e = SHMEM_MALLOC_FAIL;
    if (!e && (e = registered = shm__register(tp, t, 0, first)))
        shmalloc_print(2, SHM__MSG(HEAP_REGISTER_FAILED), tp->pe, first);
    call.size = bytes; /* the same reservation, */
    e = shm__agree(tp, debug, &order, &call, e);
    call.size = first; /* and the same first region, on every PE */
    e = shm__agree(tp, debug, &order, &call, e);
    if (e) {
        if (registered == SHMEM_MALLOC_OK) shm__deregister(tp, t, 0, first);
        if (separate) shmalloc_tlsf_destroy(t);
        if (separate) shmalloc_mem_free(h);
        shm__set(err, e);
        return NULL;
    }
    if (!separate) h = (shmalloc_heap *)(void *)((char *)mem + tbytes);
    SHMALLOC_MEMSET(h, 0, sizeof *h);
    h->tlsf = t;
    h->tp = *tp;
    h->memops = ops;
    h->debug = debug;
    h->order.separate = separate;
    h->size_var = config ? config->size_var : NULL;
    h->growable = tp->allreduce_max && !shmalloc_tlsf_grow_status(t, 0); /* room for the least growth */
    h->regions = 1;
    h->ends[0] = h->size = first;
    h->serial = shm__live_add();
    shm__set(err, SHMEM_MALLOC_OK);
    return h;
}

SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_create_growable(void *mem, size_t bytes, size_t nominal,
                                                                       const shmalloc_transport *tp, long *err)
{
    shmalloc_heap_config config = {SIZE_MAX, 0, NULL, SHMALLOC_METADATA_INLINE, NULL};
    config.nominal = nominal;
    return shmalloc_heap_create_with(mem, bytes, &config, tp, err);
}

SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_create(void *mem, size_t bytes, const shmalloc_transport *tp,
                                                              long *err)
{
    return shmalloc_heap_create_growable(mem, bytes, SIZE_MAX, tp, err);
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_destroy_ended(shmalloc_heap *h, const char *how)
{
    if (h) h->order.ending = how;
    shmalloc_heap_destroy(h);
}

/* Agreed as a call, not counted as one: a PE that made fewer calls meets
   the others' last ones here, and the reports give the true counts. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_destroy(shmalloc_heap *h)
{
    shm__call call = {SHM__DESTROY, 0, 0, 0, 0, 0};
    long e;
    int i, any;
    if (!h) return;
    shm__live_drop(h);
    shm__hold(&h->order);
    shm__lock_released(&h->order); /* every release, not only the fresh, is named below */
    SHM__STORE(h->order.fresh, h->order.fresh + (h->released.count != 0));
    shm__unlock_released(&h->order);
    h->order.drain = 0;
    e = SHM__LOAD(h->team_gone) ? SHMEMX_MALLOC_TEAM_DESTROYED /* no team to tell */
                                : shm__agree(&h->tp, h->debug, &h->order, &call, SHMEM_MALLOC_OK);
    any = h->order.drain && e == SHMEM_MALLOC_OK && h->tp.allreduce_max;
    shm__drain(h);
    shm__report_unreleased(h, any);
    shm__table_free(&h->hints);
    shm__lock_released(&h->order);
    shm__table_free(&h->released);
    shm__count_released(h);
    shm__unlock_released(&h->order);
    shm__let_go(&h->order);
    for (i = h->regions - 1; i >= 0; i--) shm__deregister(&h->tp, h->tlsf, i ? h->ends[i - 1] : 0, h->ends[i]);
    shmalloc_mem_free(h->spaces.by_base); /* spaces are destroyed first: see shmalloc_space_destroy */
    if (h->order.separate) { /* the rest lives in mem, which the caller unmaps */
        shmalloc_tlsf_destroy(h->tlsf);
        shmalloc_mem_free(h);
    }
}

/* A growth that failed fails its call as no room would, unless the
   transport failed. */
static long shm__grow_error(long agreed)
{
    return agreed == SHMEMX_MALLOC_BAD_TRANSPORT ? agreed : SHMEM_MALLOC_FAIL;
}

/* The agreed call found no room for `need` bytes: grow every heap by the
   same amount, registered everywhere, or none.  The PEs agree on the
   growth before registering (a registration may exchange keys, so every
   PE makes it or none does) and again on the registrations.  At least
   doubles the blocks, so a heap has few regions; each new region ends on a
   64 KiB boundary from the base.  0 when the heap grew. */
static long shm__grow(shmalloc_heap *h, size_t need)
{
    shmalloc_tlsf *t = h->tlsf;
    size_t have = shmalloc_tlsf_size(t), room = shmalloc_tlsf_room(t), top = shmalloc_tlsf_top_free(t), want, g;
    shm__call call = {SHM__GROW, 0, 0, 0, 0, 0};
    long e = SHMEM_MALLOC_OK, agreed;
    want = need + need / 8 + 64; /* the top block may be used; the search rounds up */
    g = want > have ? want : have;
    g = ((have + g + 0xffff) & ~(size_t)0xffff) - have;
    if (g > room) g = room; /* the last of the room may still do, with the free top block */
    if (need > g + top || h->regions == SHMALLOC_MAX_REGIONS || shmalloc_tlsf_grow_status(t, g)) e = SHMEM_MALLOC_FAIL;
    call.size = g;
    if ((agreed = shm__agree(&h->tp, h->debug, &h->order, &call, e))) return shm__grow_error(agreed);
    shm__let_go(&h->order); /* a registration may exchange keys */
    e = shm__register(&h->tp, t, have, have + g);
    shm__hold(&h->order);
    if ((agreed = shm__agree(&h->tp, h->debug, &h->order, &call, e))) {
        if (!e) shm__deregister(&h->tp, t, have, have + g);
        return shm__grow_error(agreed);
    }
    shmalloc_tlsf_grow(t, g); /* checked above: it cannot fail */
    h->ends[h->regions++] = have + g;
    SHM__STORE_RELEASE(h->size, have + g); /* a thread's put or lookup may read it meanwhile */
    h->calls[SHM__GROW]++;
    return SHMEM_MALLOC_OK;
}

static void shm__info(const shmalloc_heap *h, shmalloc_info *out)
{
    shmalloc_counters c;
    shmalloc_tlsf_counters(h->tlsf, &c);
    out->heap_size = c.capacity;
    out->heap_max = c.capacity + (h->growable ? shmalloc_tlsf_room(h->tlsf) : 0);
    out->in_use = c.in_use;
    out->free = c.free;
    out->largest_free = c.largest_free;
    out->largest_request = c.largest_request;
    out->used_blocks = c.used_blocks;
    out->failures = h->failures;
    out->released = SHM__LOAD(h->order.releases);
    out->drained = h->drained;
    out->drain_rounds = h->drain_rounds;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_heap_info(shmalloc_heap *h, shmalloc_info *out)
{
    long held;
    if (!h || !out) return -1;
    if ((held = shm__lock(h))) {
        shm__unlock(h, held);
        return -1;
    }
    shm__info(h, out);
    shm__unlock(h, held);
    return 0;
}

/* A size for advice: rounded up to whole KiB, from 1 MiB on to whole
   MiB, in the largest unit it is a whole number of ("2K", "1536K", "3M",
   "1T"), as SHMEM_SYMMETRIC_HEAP_SIZE takes it. */
static const char *shm__size_text(char *buf, size_t n, size_t bytes)
{
    size_t step = bytes < ((size_t)1 << 20) ? (size_t)1 << 10 : (size_t)1 << 20, whole;
    int unit = 0;
    whole = (bytes / step + (bytes % step != 0)) * (step >> 10); /* KiB */
    while (unit < 3 && whole && !(whole & 1023)) whole >>= 10, unit++;
    snprintf(buf, n, "%zu%c", whole, "KMGT"[unit]);
    return buf;
}

/* What to do for a heap of `advised` bytes: raise the variable that sets
   the size, or, when the program sets it, have the program ask for more. */
static const char *shm__raise_text(const shmalloc_heap *h, char *buf, size_t n, size_t advised)
{
    char size[32];
    shm__size_text(size, sizeof size, advised);
    if (h->size_var) snprintf(buf, n, "set %s to at least %s%s", h->size_var, size,
                              h->growable ? "" : " (a nominal size: the heap as mapped is larger)");
    else snprintf(buf, n, "the program sets the heap's size, not a variable: have it ask for at least %s (a "
                  "nominal size)", size);
    return buf;
}

/* This PE could not serve a request of `size` bytes: what the heap holds,
   whether fragmentation is the cause, and the variable to change, with
   the smallest value that serves the call.  The first time on each heap,
   or every time in debug mode. */
static void shm__report_oom(shmalloc_heap *h, int kind, size_t size, size_t align)
{
    shmalloc_info i;
    size_t need = shmalloc_tlsf_block_need(size, align), advised;
    char text[32], raise[160];
    int pe = h->tp.pe, fragmented;
    h->failures++;
    if (align < SHMALLOC_ALIGNMENT) align = SHMALLOC_ALIGNMENT; /* what a smaller alignment gets */
    if (h->oom_reported && !h->debug) return;
    h->oom_reported = 1;
    shm__info(h, &i);
    fragmented = need <= i.free;
    shmalloc_print(2, SHM__MSG(HEAP_OOM), pe, shm__call_names[kind], size, align, need, i.heap_size, i.heap_max, i.free,
                   i.largest_free);
    /* the smallest heap that serves the call: the same blocks, the top one
       larger by what it lacks (a heap of N bytes holds a block of N + 16) */
    advised = i.heap_size - shmalloc_tlsf_top_free(h->tlsf) + need - SHMALLOC_HEADER;
    if (advised > SHMALLOC_TLSF_MAX_REQUEST) /* no size variable takes it */
        shmalloc_print(2, SHM__MSG(HEAP_OOM_NO_HEAP_CAN), pe, shm__size_text(text, sizeof text, advised),
                       SHMALLOC_TLSF_MAX_REQUEST >> (SHMALLOC_MAX_LOG2 >= 40 ? 40 : 30),
                       SHMALLOC_MAX_LOG2 >= 40 ? 'T' : 'G', SHMALLOC_MAX_LOG2);
    else if (fragmented)
        shmalloc_print(2, SHM__MSG(HEAP_OOM_FRAGMENTED), pe, shm__raise_text(h, raise, sizeof raise, advised));
    else
        shmalloc_print(2, SHM__MSG(HEAP_OOM_TOO_SMALL), pe, shm__raise_text(h, raise, sizeof raise, advised),
                       h->growable || !h->size_var ? "" : ", or SHMALLOC_HEAP_MAX to let the heap grow");
    if (!h->debug)
        shmalloc_print(2, SHM__MSG(HEAP_OOM_QUIET), pe);
}

/* What this PE's bad argument was, for shm__report_misuse. */
static void shm__misuse_text(char *arg, size_t n, const shm__call *c, const void *ptr, long e)
{
    if (ptr && e == SHMEM_MALLOC_NOT_IN_SYMM_HEAP) snprintf(arg, n, "%p, outside the heap", ptr);
    else if (ptr && e != SHMEM_MALLOC_BAD_SIZE) snprintf(arg, n, "the pointer at offset %zu", c->offset);
    else if (ptr) snprintf(arg, n, "the block at offset %zu, %zu bytes", c->offset, c->size);
    else if (c->kind == SHM__CALLOC && c->size == SIZE_MAX) snprintf(arg, n, "count * size overflows");
    else if (c->kind == SHM__ALIGN) snprintf(arg, n, "alignment %zu, %zu bytes", c->align, c->size);
    else snprintf(arg, n, "%zu bytes", c->size);
}

/* Which of SHMEM_MALLOC_MEMALIGN_FAILED's causes `align` has. */
static const char *shm__align_fault(size_t align)
{
    if (!align) return "alignment is 0";
    if (align & (align - 1)) return "alignment is not a power of two";
    return "alignment is larger than the largest heap (SHMALLOC_MAX_LOG2)";
}

/* This PE passed a bad argument (a size, pointer or alignment): the call,
   the argument and what is wrong, in one line.  Every time in debug mode,
   else the heap's first. */
/* A block free or realloc would not merge through (SHMEMX_MALLOC_CORRUPT_HEAP):
   it and the neighbour that disagrees with it, every time. */
static void shm__report_damage(const shmalloc_heap *h, const shm__call *c, const void *ptr)
{
    const shmalloc_tlsf *t = h->tlsf;
    const shm__block *b = shm__of_user(ptr), *d = shm__damaged(t, b);
    char what[160];
    size_t at = shm__offset(t, d) + 16;
    if (d == b) snprintf(what, sizeof what, "no used block has that header");
    else if (d == b->prev_phys && shm__is_prev_free(b))
        snprintf(what, sizeof what, "says its neighbour before it, at offset %zu, is free, which it is not", at);
    else
        snprintf(what, sizeof what, "leads to its neighbour at offset %zu (header 0x%zx), which is not a block", at,
                 d->header);
    shmalloc_print(2, SHM__MSG(HEAP_CORRUPT), h->tp.pe, shm__call_names[c->kind], c->offset, shm__size(b), b->header,
                   what);
}

static void shm__report_misuse(shmalloc_heap *h, const shm__call *c, const void *ptr, long e)
{
    char arg[96];
    if (e == SHMEMX_MALLOC_BAD_TRANSPORT) return; /* the transport's lock, said where it failed */
    if (e == SHMEMX_MALLOC_CORRUPT_HEAP && ptr) {
        shm__report_damage(h, c, ptr);
        return;
    }
    if (h->misuse_reported && !h->debug) return;
    shm__misuse_text(arg, sizeof arg, c, ptr, e);
    shmalloc_print(2, SHM__MSG(HEAP_MISUSE), h->tp.pe, shm__call_names[c->kind], arg,
                   e == SHMEM_MALLOC_MEMALIGN_FAILED ? shm__align_fault(c->align) : shmalloc_strerror(e));
    if (!h->debug && !h->misuse_reported)
        shmalloc_print(2, SHM__MSG(HEAP_MISUSE_QUIET), h->tp.pe);
    h->misuse_reported = 1;
}

/* This PE's part of malloc, align and calloc: the block a collective call
   would take, still pending (or e = SHMEM_MALLOC_FAIL), zeroed or filled
   before the commit poisons its slack. */
static void *shm__take_local(shmalloc_heap *h, const shm__call *call, int zero, shmalloc_tlsf_pending *op, long *e,
                             int *short_here)
{
    int status;
    op->ptr = NULL;
    if (!*e && zero && h->order.separate && !h->memops.fill) *e = SHMEMX_MALLOC_NO_MEMOPS;
    if (!*e && (status = shmalloc_tlsf_take(h->tlsf, call->align, call->size, op)) != SHMALLOC_TLSF_OK) {
        *e = shm__malloc_error(status, 0);
        *short_here = status == SHMALLOC_TLSF_NO_ROOM;
        if (status == SHMALLOC_TLSF_NO_MEMORY) shmalloc_print(2, SHM__MSG(HEAP_NO_MEMORY), h->tp.pe, shm__call_names[call->kind]);
    }
    if (op->ptr && zero && shm__fill(h, op->ptr, 0, call->size)) *e = SHMEMX_MALLOC_NO_MEMOPS; /* the fill failed */
    else if (op->ptr && h->debug && !zero) /* the whole usable size */
        shm__fill(h, op->ptr, SHM__FILL_NEW, shmalloc_tlsf_usable_size(h->tlsf, op->ptr));
    if (shm__bad_argument(*e)) shm__report_misuse(h, call, NULL, *e);
    return op->ptr;
}

/* The local part, then the agreement: `e` is an error found before
   (calloc's overflow).  The block goes back, exactly, if any PE failed.
   *short_here: this PE had no room. */
static void *shm__alloc_agreed(shmalloc_heap *h, shm__call *call, int zero, long *e, int *short_here)
{
    shmalloc_tlsf_pending op;
    void *p;
    *short_here = 0;
    p = shm__take_local(h, call, zero, &op, e, short_here);
    *e = shm__agree(&h->tp, h->debug, &h->order, call, *e);
    if (!p) return NULL;
    if (!*e) return shmalloc_tlsf_commit(h->tlsf, &op);
    shmalloc_tlsf_undo(h->tlsf, &op);
    return NULL;
}

/* Folds x into a digest (multiply, xorshift): a change in any value or in
   their order changes the digest, but for a 2^-64 chance. */
static uint64_t shm__fold(uint64_t digest, uint64_t x)
{
    digest = (digest ^ x) * 0x9e3779b97f4a7c15u;
    return digest ^ (digest >> 29);
}

/* SHMEMX_MALLOC_NO_BARRIER: this PE's part alone.  The heap is as
   deterministic as for a collective call, so every PE that made the same
   calls gets the same offset; the call, its outcome and its offset go into
   the digest the next agreement compares.  0 when done; 1 when a heap that
   can grow found no room: the call then synchronises to grow it.  The
   core's take is inlined here, as no barrier hides the cost of a call. */
static SHM__FLATTEN int shm__alloc_unsynced(shmalloc_heap *h, const shm__call *call, void **p, long *e,
                                            int *short_here)
{
    shm__order *o = &h->order;
    shmalloc_tlsf_pending op;
    *p = shm__take_local(h, call, 0, &op, e, short_here);
    if (*p) shmalloc_tlsf_commit(h->tlsf, &op); /* no agreement to wait for */
    if (*short_here && h->growable) {
        *e = SHMEM_MALLOC_OK;
        *short_here = 0;
        return 1;
    }
    o->pending++;
    o->digest = shm__fold(o->digest, (uint64_t)call->kind << 32 | (uint64_t)-*e);
    o->digest = shm__fold(o->digest, call->size);
    o->digest = shm__fold(o->digest, (uint64_t)call->hints);
    o->digest = shm__fold(o->digest, *p ? shmalloc_tlsf_offset(h->tlsf, *p) : ~(uint64_t)0);
    o->digest += !o->digest; /* 0 means "none" */
    return 0;
}

/* malloc, align and calloc; a growing heap grows once when no PE found room. */
static void *shm__alloc(shmalloc_heap *h, int kind, size_t align, size_t size, long hints, int zero, long e,
                        long *err)
{
    void *p = NULL;
    int short_here = 0;
    long held;
    shm__call call = {0, 0, 0, 0, 0, 0};
    if (shm__unusable(h, kind, err)) return NULL;
    if (size == 0 && !e) { /* OpenSHMEM 1.5: NULL, no barrier */
        shm__set(err, SHMEM_MALLOC_OK);
        return NULL;
    }
    held = shm__lock(h);
    h->calls[kind]++;
    h->order.calls++;
    if (!e) e = held;
    if (!e && (hints & SHM__KEPT_HINTS)) { /* else the take finds a bad request */
        e = shm__malloc_error(shmalloc_tlsf_request_status(align, size), 0);
        if (!e && shm__table_reserve(&h->hints)) e = SHMEM_MALLOC_FAIL; /* no private memory */
    }
    call.kind = kind;
    call.size = size;
    call.align = align;
    call.hints = hints;
    if (!(hints & SHMALLOC_HINT_NO_BARRIER) || shm__alloc_unsynced(h, &call, &p, &e, &short_here)) {
        long before = e;
        p = shm__alloc_agreed(h, &call, zero, &e, &short_here);
        if (e == SHMEM_MALLOC_FAIL && shm__drain(h) && !(e = before)) /* room made by the drain */
            p = shm__alloc_agreed(h, &call, zero, &e, &short_here);
        if (e == SHMEM_MALLOC_FAIL && h->growable && !(e = shm__grow(h, shmalloc_tlsf_block_need(size, align))))
            p = shm__alloc_agreed(h, &call, zero, &e, &short_here);
    }
    shm__drain(h);
    if (p) shm__table_put(&h->hints, shmalloc_tlsf_offset(h->tlsf, p), hints & SHM__KEPT_HINTS);
    if (short_here && e == SHMEM_MALLOC_FAIL) shm__report_oom(h, kind, size, align); /* not a mismatch's */
    shm__debug_check(h);
    shm__unlock(h, held);
    shm__set(err, e);
    return p;
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_malloc(shmalloc_heap *h, size_t size, long *err)
{
    return shm__alloc(h, SHM__MALLOC, SHMALLOC_ALIGNMENT, size, 0, 0, SHMEM_MALLOC_OK, err);
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_malloc_with_hints(shmalloc_heap *h, size_t size, long hints, long *err)
{
    return shm__alloc(h, SHM__MALLOC, SHMALLOC_ALIGNMENT, size, hints, 0, SHMEM_MALLOC_OK, err);
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_align(shmalloc_heap *h, size_t align, size_t size, long *err)
{
    return shm__alloc(h, SHM__ALIGN, align, size, 0, 0, SHMEM_MALLOC_OK, err);
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_calloc(shmalloc_heap *h, size_t count, size_t size, long *err)
{
    int overflow = count && size > SIZE_MAX / count;
    return shm__alloc(h, SHM__CALLOC, SHMALLOC_ALIGNMENT, overflow ? SIZE_MAX : count * size, 0, 1,
                      overflow ? SHMEM_MALLOC_BAD_SIZE : SHMEM_MALLOC_OK, err);
}

static void shm__free(shmalloc_heap *h, int kind, void *ptr, long *err)
{
    shm__call call = {0, 0, 0, 0, 0, 0};
    long e, held;
    if (!ptr) {
        shm__set(err, SHMEM_MALLOC_OK);
        return;
    }
    if (shm__unusable(h, kind, err)) return;
    held = shm__lock(h);
    h->calls[kind]++;
    h->order.calls++;
    call.kind = kind;
    call.offset = shmalloc_tlsf_offset(h->tlsf, ptr);
    e = held ? held : shm__malloc_error(shmalloc_tlsf_validate(h->tlsf, ptr), 0);
    if (shm__bad_argument(e)) shm__report_misuse(h, &call, ptr, e);
    e = shm__agree(&h->tp, h->debug, &h->order, &call, e);
    if (!e) shm__free_block(h, ptr); /* a release of it is dropped: the collective free wins */
    shm__drain(h);
    shm__debug_check(h);
    shm__unlock(h, held);
    shm__set(err, e);
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_free(shmalloc_heap *h, void *ptr, long *err)
{
    shm__free(h, SHM__FREE_CALL, ptr, err);
}

/* ptr's malloc_error, checked between two changes of the heap: again
   when a change overlapped the check (see shm__hold).  Under the released
   set's lock, let go while a call changes the heap, which it may need. */
static long shm__check_release(shmalloc_heap *h, const void *ptr)
{
    shm__order *o = &h->order;
    if (o->separate) { /* under heap_lock, taken without the set's, as calls take them in the other order */
        long e;
        shm__unlock_released(o);
        shm__spin_lock(&o->heap_lock);
        e = shm__malloc_error(shmalloc_tlsf_validate(h->tlsf, ptr), 0);
        shm__spin_unlock(&o->heap_lock);
        shm__lock_released(o);
        return e;
    }
    for (;;) {
        unsigned before = SHM__LOAD_ACQUIRE(o->changes);
        if (!(before & 1)) {
            int status = shm__validate_racing(h->tlsf, ptr);
            SHM__FENCE(__ATOMIC_ACQUIRE); /* the reads above before the count's second look */
            if (SHM__LOAD(o->changes) == before) return shm__malloc_error(status, 0);
        }
        shm__unlock_released(o);
        shm__yield(); /* the call may need this cpu */
        shm__lock_released(o);
    }
}

/* Checked and recorded under the released set's lock alone: collective
   calls never hold it while they wait, so this never waits for a peer. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_free_deferred(shmalloc_heap *h, void *ptr, long *err)
{
    static int no_heap_said;
    size_t offset;
    long e;
    if (!ptr) {
        shm__set(err, SHMEM_MALLOC_OK);
        return;
    }
    if (!h) {
        if (shm__first(&no_heap_said)) shmalloc_print(2, SHM__MSG(DEFER_NO_HEAP), ptr);
        shm__set(err, SHMEMX_MALLOC_NO_HEAP);
        return;
    }
    shm__lock_released(&h->order);
    e = shm__check_release(h, ptr);
    offset = e ? 0 : shmalloc_tlsf_offset(h->tlsf, ptr);
    if (!e && shm__table_get(&h->released, offset)) e = SHMEM_MALLOC_ALREADY_FREE;
    if (!e && shm__table_reserve(&h->released)) e = SHMEM_MALLOC_FAIL; /* no private memory */
    if (!e) {
        shm__table_put(&h->released, offset, 1);
        SHM__STORE(h->order.fresh, h->order.fresh + 1);
        shm__count_released(h);
    }
    shm__unlock_released(&h->order);
    if (e) shmalloc_print(2, SHM__MSG(DEFER_BAD_POINTER), h->tp.pe, ptr, shmalloc_strerror(e));
    shm__set(err, e);
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_free_deferred_drain(shmalloc_heap *h, long *err)
{
    shm__call call = {SHM__DRAIN, 0, 0, 0, 0, 0};
    long e, held;
    if (shm__unusable(h, SHM__DRAIN, err)) return;
    held = shm__lock(h);
    h->calls[SHM__DRAIN]++;
    h->order.calls++;
    e = shm__agree(&h->tp, h->debug, &h->order, &call, held);
    shm__drain(h);
    shm__debug_check(h);
    shm__unlock(h, held);
    shm__set(err, e);
}

/* Plans the resize, then agrees; *local: this PE's own outcome.  A grow
   that the core can undo is made before the agreement, so that no peer's
   put, as soon as the agreement lets it return, reaches a free block this
   PE has yet to take; a failure undoes it.  A move or another grow sets
   call->again: it is made after the agreement, which is also the barrier
   that completes the peers' writes to the old block (OpenSHMEM's barrier
   on entry). */
static void shm__realloc_agreed(shmalloc_heap *h, void *ptr, shm__call *call, shmalloc_tlsf_pending *op, long *e,
                                long *local)
{
    size_t old = shmalloc_tlsf_usable_size(h->tlsf, ptr), size = call->size;
    int status = shmalloc_tlsf_resize(h->tlsf, ptr, size, op);
    *local = shm__malloc_error(status, 1);
    if (status == SHMALLOC_TLSF_NO_MEMORY) shmalloc_print(2, SHM__MSG(HEAP_NO_MEMORY), h->tp.pe, "realloc");
    call->again = !*local && op->commit_grows;
    if (op->ptr && h->debug && size > old) shm__fill(h, (char *)op->ptr + old, SHM__FILL_NEW, size - old);
    *e = shm__agree(&h->tp, h->debug, &h->order, call, *local);
    if (*e) shmalloc_tlsf_undo(h->tlsf, op);
}

/* The agreed resize is made: a late one now, its new bytes filled in
   debug mode, and then the PEs synchronise again when any must. */
static void *shm__realloc_commit(shmalloc_heap *h, void *ptr, const shm__call *call, shmalloc_tlsf_pending *op,
                                 long *e)
{
    size_t old = shmalloc_tlsf_usable_size(h->tlsf, ptr), size = call->size;
    int late = !op->ptr;
    void *q = shmalloc_tlsf_commit(h->tlsf, op);
    if (late && h->debug && size > old) shm__fill(h, (char *)q + old, SHM__FILL_NEW, size - old);
    if (late && call->again) {
        int status;
        shm__let_go(&h->order);
        status = h->tp.barrier(h->tp.user);
        shm__hold(&h->order);
        if (status) *e = shm__transport_failed(&h->tp, &h->order, SHM__REALLOC, SHM__TP_BARRIER, status);
    }
    return q;
}

/* One synchronisation for a shrink and for a grow in place that can be
   undone exactly; two for a move and for the other grows: they commit
   after the agreement, and every PE synchronises again before returning,
   since a peer may write to the new or grown part as soon as it returns.
   When that barrier fails, the block has moved all the same: it is
   returned, with the transport's code. */
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_realloc(shmalloc_heap *h, void *ptr, size_t size, long *err)
{
    shmalloc_tlsf_pending op;
    shm__call call = {SHM__REALLOC, 0, 0, 0, 0, 0};
    void *q = NULL;
    long e, local, held, released, grown;
    if (!ptr) return shm__alloc(h, SHM__REALLOC, SHMALLOC_ALIGNMENT, size, 0, 0, SHMEM_MALLOC_OK, err);
    if (!size) {
        shm__free(h, SHM__REALLOC, ptr, err);
        return NULL;
    }
    if (shm__unusable(h, SHM__REALLOC, err)) return NULL;
    held = shm__lock(h);
    h->calls[SHM__REALLOC]++;
    h->order.calls++;
    call.size = size;
    call.offset = shmalloc_tlsf_offset(h->tlsf, ptr);
    if (held) { /* agreed all the same, so no PE waits for this one */
        shm__set(err, shm__agree(&h->tp, h->debug, &h->order, &call, held));
        shm__drain(h);
        shm__unlock(h, held);
        return NULL;
    }
    call.hints = shm__table_get(&h->hints, call.offset); /* the block's, agreed in debug mode and kept */
    call.align = shmalloc_tlsf_alignment(h->tlsf, ptr); /* kept by a move: agreed too */
    released = shm__drop_release(h, call.offset); /* out of the drains while resized */
    shm__realloc_agreed(h, ptr, &call, &op, &e, &local);
    if (shm__bad_argument(local)) shm__report_misuse(h, &call, ptr, local);
    if (e == SHMEM_MALLOC_REALLOC_FAILED && shm__drain(h)) shm__realloc_agreed(h, ptr, &call, &op, &e, &local);
    if (e == SHMEM_MALLOC_REALLOC_FAILED && h->growable &&
        (grown = shm__grow(h, shmalloc_tlsf_block_need(size, call.align))) != SHMEM_MALLOC_FAIL) {
        if (grown) e = grown; /* the transport failed */
        else shm__realloc_agreed(h, ptr, &call, &op, &e, &local);
    }
    if (local == SHMEM_MALLOC_REALLOC_FAILED && e == local) shm__report_oom(h, SHM__REALLOC, size, call.align);
    if (!e) q = shm__realloc_commit(h, ptr, &call, &op, &e);
    if (!e && q != ptr && call.hints) {
        shm__table_drop(&h->hints, call.offset);
        shm__table_put(&h->hints, shmalloc_tlsf_offset(h->tlsf, q), call.hints);
    }
    if (e && released) shm__keep_release(h, call.offset); /* the block stays; the realloc won otherwise */
    shm__drain(h);
    shm__debug_check(h);
    shm__unlock(h, held);
    shm__set(err, e);
    return q;
}

SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_sbreak(shmalloc_heap *h, ptrdiff_t increment, long *err)
{
    shm__call call = {SHM__SBREAK, 0, 0, 0, 0, 0};
    void *p = NULL;
    long e, held;
    if (shm__unusable(h, SHM__SBREAK, err)) return NULL;
    e = held = shm__lock(h);
    h->calls[SHM__SBREAK]++;
    h->order.calls++;
    call.size = (size_t)increment;
    if (!e) e = shm__malloc_error(shmalloc_tlsf_sbreak_status(h->tlsf, increment), 0);
    e = shm__agree(&h->tp, h->debug, &h->order, &call, e);
    if (!e) p = shmalloc_tlsf_sbreak(h->tlsf, increment);
    shm__drain(h);
    shm__debug_check(h);
    shm__unlock(h, held);
    shm__set(err, e);
    return p;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_heap_check(shmalloc_heap *h, int level)
{
    int problems;
    long held;
    if (!h) {
        if (level >= 0) shmalloc_print(2, SHM__MSG(CHECK_NO_HEAP));
        return 1;
    }
    if ((held = shm__lock(h))) {
        shm__unlock(h, held);
        return 1;
    }
    problems = shm__check(h->tlsf, level, h->tp.pe);
    shm__unlock(h, held);
    return problems;
}

/* Statistics: counts from one walk, then the map and the block lines. */
typedef struct shm__tally {
    size_t count[2], bytes[2]; /* [0] free, [1] busy */
    char map[201];
    size_t fill;
    int level;
} shm__tally;

static int shm__tally_block(void *user, const shmalloc_block_info *b)
{
    shm__tally *s = (shm__tally *)user;
    s->count[b->used]++;
    s->bytes[b->used] += b->size;
    if (s->level >= 2)
        shmalloc_print(1, SHM__MSG(STATS_BLOCK), b->offset, b->size, b->used ? "busy" : "free");
    return 0;
}

static int shm__map_block(void *user, const shmalloc_block_info *b)
{
    shm__tally *s = (shm__tally *)user;
    s->map[s->fill++] = b->used ? '*' : '.';
    if (s->fill == sizeof s->map - 1) {
        s->map[s->fill] = 0;
        shmalloc_print(1, SHM__MSG(STATS_MAP), s->map, "");
        s->fill = 0;
    }
    return 0;
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_heap_stats(shmalloc_heap *h, int level)
{
    shmalloc_counters c;
    shm__tally s;
    long held;
    int i;
    char calls[320]; /* SHM__CREATE names of at most 16 and counts of at most 20 characters */
    size_t len;
    if (!h) {
        shmalloc_print(1, SHM__MSG(STATS_NO_HEAP));
        return;
    }
    SHMALLOC_MEMSET(&s, 0, sizeof s);
    s.level = level;
    if ((held = shm__lock(h))) {
        shm__unlock(h, held);
        return;
    }
    shmalloc_tlsf_counters(h->tlsf, &c);
    shmalloc_print(1, SHM__MSG(STATS_HEAP), shmalloc_tlsf_base(h->tlsf), c.capacity);
    for (i = 0, len = 0; i < SHM__CREATE; i++) /* one line, one message */
        len += (size_t)snprintf(calls + len, sizeof calls - len, " %s %zu%s", shm__call_names[i], h->calls[i],
                                i + 1 < SHM__CREATE ? "," : "");
    shmalloc_print(1, SHM__MSG(STATS_CALLS), calls);
    if (level >= 2) shmalloc_print(1, SHM__MSG(STATS_BLOCKS));
    shmalloc_tlsf_walk(h->tlsf, shm__tally_block, &s);
    shmalloc_print(1, SHM__MSG(STATS_COUNTS), s.count[1], shm__s(s.count[1]), s.bytes[1], s.count[0],
                   shm__s(s.count[0]), s.bytes[0], c.largest_free);
    shmalloc_print(1, SHM__MSG(STATS_SPEC), c.spec != 0, shm__s(c.spec != 0), c.spec, c.high_water);
    if (h->growable)
        shmalloc_print(1, SHM__MSG(STATS_GROWTH), h->calls[SHM__GROW], h->calls[SHM__GROW] == 1 ? "" : "s", h->regions,
                       h->regions == 1 ? "" : "s", shmalloc_tlsf_room(h->tlsf));
    if (level >= 1) {
        shmalloc_print(1, SHM__MSG(STATS_MAP), "  map: ", "");
        shmalloc_tlsf_walk(h->tlsf, shm__map_block, &s);
        s.map[s.fill] = 0;
        shmalloc_print(1, SHM__MSG(STATS_MAP), s.map, c.spec ? "@\n" : "\n"); /* the spec area: one block, at the top */
    }
    shm__unlock(h, held);
}

SHMALLOC_DEF SHMALLOC_API shmalloc_tlsf *shmalloc_heap_tlsf(shmalloc_heap *h) { return h ? h->tlsf : NULL; }
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_base(const shmalloc_heap *h)
{
    return h ? shmalloc_tlsf_base(h->tlsf) : NULL;
}
SHMALLOC_DEF SHMALLOC_API size_t shmalloc_heap_size(const shmalloc_heap *h)
{
    return h ? SHM__LOAD_ACQUIRE(h->size) : 0;
}
SHMALLOC_DEF SHMALLOC_API int shmalloc_heap_contains(const shmalloc_heap *h, const void *p)
{
    return h && (uintptr_t)p >= (uintptr_t)shmalloc_heap_base(h) &&
           shmalloc_tlsf_offset(h->tlsf, p) < shmalloc_heap_size(h);
}

/* >> spaces: implementation --------------------------------------------------
   A world heap keeps its spaces in an array sorted by base, under a spin
   lock (a deferred release may look one up from any thread).  Spaces never
   overlap, so the last base at or below p is the only candidate. */
static size_t shm__spaces_below(const shm__spaces *l, const void *p)
{
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)shmalloc_heap_base(l->by_base[mid]) <= (uintptr_t)p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Room for one more space: 0, or -1 with no private memory. */
static int shm__spaces_reserve(shm__spaces *l)
{
    shmalloc_heap **a;
    size_t cap = l->cap ? 2 * l->cap : 8;
    if (l->count < l->cap) return 0;
    if (!(a = (shmalloc_heap **)shmalloc_mem_alloc(cap, sizeof *a))) return -1;
    shm__spin_lock(&l->lock);
    if (l->count) SHMALLOC_MEMCPY(a, l->by_base, l->count * sizeof *a);
    shmalloc_mem_free(l->by_base);
    l->by_base = a;
    l->cap = cap;
    shm__spin_unlock(&l->lock);
    return 0;
}

static void shm__spaces_put(shm__spaces *l, shmalloc_heap *space, int add)
{
    size_t i;
    shm__spin_lock(&l->lock);
    i = shm__spaces_below(l, shmalloc_heap_base(space));
    if (add) {
        SHMALLOC_MEMMOVE(l->by_base + i + 1, l->by_base + i, (l->count - i) * sizeof *l->by_base);
        l->by_base[i] = space;
        SHM__STORE(l->count, l->count + 1);
    } else if (i && l->by_base[i - 1] == space) {
        SHMALLOC_MEMMOVE(l->by_base + i - 1, l->by_base + i, (l->count - i) * sizeof *l->by_base);
        SHM__STORE(l->count, l->count - 1);
    }
    shm__spin_unlock(&l->lock);
}

SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_heap_of(shmalloc_heap *world, const void *p)
{
    shmalloc_heap *h = NULL;
    shm__spaces *l;
    size_t i;
    if (world && world->world) world = world->world;
    if (!world || shmalloc_heap_contains(world, p)) return world;
    l = &world->spaces;
    if (!SHM__LOAD(l->count)) return NULL;
    shm__spin_lock(&l->lock);
    i = shm__spaces_below(l, p);
    if (i && shmalloc_heap_contains(l->by_base[i - 1], p)) h = l->by_base[i - 1];
    shm__spin_unlock(&l->lock);
    return h;
}

SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_space_create(shmalloc_heap *world, const void *team, void *mem,
                                                               size_t bytes, const shmalloc_heap_config *config,
                                                               long *err)
{
    shmalloc_transport child;
    shmalloc_heap *h;
    if (shm__unusable(world, SHM__CREATE, err)) return NULL;
    if (world->world) world = world->world;
    if (!world->tp.team || !world->tp.team_done) {
        shmalloc_print(2, SHM__MSG(SPACE_NO_TEAMS), world->tp.pe, "shmemx_space_create");
        shm__set(err, SHMEMX_MALLOC_NO_TEAMS);
        return NULL;
    }
    SHMALLOC_MEMSET(&child, 0, sizeof child);
    if (world->tp.team(world->tp.user, team, &child)) {
        shmalloc_print(2, SHM__MSG(SPACE_NOT_MEMBER), world->tp.pe, "shmemx_space_create");
        shm__set(err, SHMEMX_MALLOC_NOT_MEMBER);
        return NULL;
    }
    if (shm__spaces_reserve(&world->spaces)) mem = NULL; /* no private memory: fails on every member */
    if (!(h = shmalloc_heap_create_with(mem, bytes, config, &child, err))) {
        world->tp.team_done(child.user);
        return NULL;
    }
    h->world = world;
    h->team = team;
    shm__spaces_put(&world->spaces, h, 1);
    return h;
}

/* The members agree whether the space may go: SPACE_BUSY on every member
   while one has live blocks and no SHMALLOC_SPACE_FREE_LIVE. */
static long shm__space_close(shmalloc_heap *h, long flags)
{
    shm__call call = {SHM__CLOSE, 0, 0, 0, 0, 0};
    uint64_t none[16] = {0};
    shmalloc_counters c;
    long e, held = shm__lock(h);
    h->calls[SHM__CLOSE]++;
    h->order.calls++;
    shmalloc_tlsf_counters(h->tlsf, &c);
    e = held ? held : c.used_blocks && !(flags & SHMALLOC_SPACE_FREE_LIVE) ? SHMEMX_MALLOC_SPACE_BUSY : 0;
    if (e == SHMEMX_MALLOC_SPACE_BUSY)
        shmalloc_print(2, SHM__MSG(SPACE_BUSY), h->tp.pe, (void *)h, c.used_blocks, shm__s(c.used_blocks));
    if (!SHM__LOAD(h->team_gone)) e = shm__agree(&h->tp, h->debug, &h->order, &call, e);
    if (!e && c.used_blocks && h->debug) {
        shm__leaks l = {NULL, 0, 0, NULL};
        l.h = h, l.released_on = none;
        shmalloc_print(2, SHM__MSG(SPACE_FREES_LIVE), h->tp.pe, c.used_blocks, shm__s(c.used_blocks));
        shmalloc_tlsf_walk(h->tlsf, shm__leak_block, &l);
    }
    h->live_named = !e;
    shm__unlock(h, held);
    return e;
}

SHMALLOC_DEF SHMALLOC_API long shmalloc_space_destroy(shmalloc_heap *space, long flags)
{
    shmalloc_heap *world;
    void *child;
    long e;
    if (!space || !space->world) {
        if (space) shmalloc_print(2, SHM__MSG(SPACE_NOT_A_SPACE), space->tp.pe, (void *)space);
        else shm__no_heap(SHM__CLOSE, &e);
        return SHMEMX_MALLOC_NO_HEAP;
    }
    if ((e = shm__space_close(space, flags))) return e;
    world = space->world;
    child = space->tp.user;
    shm__spaces_put(&world->spaces, space, 0);
    shmalloc_heap_destroy(space);
    world->tp.team_done(child);
    return SHMEM_MALLOC_OK;
}

SHMALLOC_DEF SHMALLOC_API const void *shmalloc_space_team(const shmalloc_heap *h) { return h ? h->team : NULL; }
SHMALLOC_DEF SHMALLOC_API void *shmalloc_heap_user(const shmalloc_heap *h) { return h ? h->tp.user : NULL; }

SHMALLOC_DEF SHMALLOC_API void shmalloc_space_team_destroyed(shmalloc_heap *world, const void *team)
{
    size_t i;
    if (!world) return;
    shm__spin_lock(&world->spaces.lock);
    for (i = 0; i < world->spaces.count; i++)
        if (world->spaces.by_base[i]->team == team) SHM__STORE(world->spaces.by_base[i]->team_gone, 1);
    shm__spin_unlock(&world->spaces.lock);
}

/* >> threads: implementation -----------------------------------------------
   The current heap (see shm__live_serials). */
SHMALLOC_DEF SHMALLOC_API void shmalloc_set_current(shmalloc_heap *h)
{
    shm__current = h;
    shm__current_serial = h ? h->serial : 0;
    shm__current_seen = SHM__LOAD_ACQUIRE(shm__destroys);
}
SHMALLOC_DEF SHMALLOC_API void shmalloc_set_process_heap(shmalloc_heap *h) { SHM__STORE(shm__process_heap, h); }
SHMALLOC_DEF SHMALLOC_API shmalloc_heap *shmalloc_current(void)
{
    if (!shm__current) return SHM__LOAD_ACQUIRE(shm__process_heap); /* which destroy clears itself */
    if (SHM__UNLIKELY(shm__current_seen != SHM__LOAD_ACQUIRE(shm__destroys))) shm__current_look();
    return shm__current ? shm__current : SHM__LOAD_ACQUIRE(shm__process_heap);
}

/* >> environment: implementation ------------------------------------------- */
static shmalloc_option shm__options[SHMALLOC_OPT_MAX] = {
    {"SHMEM_SYMMETRIC_HEAP_SIZE", {"SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"}, SHMALLOC_KIND_SIZE, "512M",
     "heap size per PE, e.g. 512M, 1.5G, 4096", NULL, NULL, 0},
    {"SHMALLOC_HEAP_MAX", {NULL, NULL}, SHMALLOC_KIND_SIZE_OR_OFF, "0",
     "size the heap may grow to, e.g. 64G; 0: no growth", NULL, NULL, 0},
    {"SHMALLOC_DEBUG", {"SHMEM_DEBUG", NULL}, SHMALLOC_KIND_SWITCH, "0",
     "1: debug mode (asymmetric calls reported, leaks listed, fill patterns)", NULL, NULL, 0},
    {"SHMEM_VERSION", {NULL, NULL}, SHMALLOC_KIND_YES_NO, "0",
     "yes: PE 0 prints the library's version at start-up", NULL, NULL, 0},
    {"SHMEM_INFO", {NULL, NULL}, SHMALLOC_KIND_YES_NO, "0",
     "yes: PE 0 prints every variable its transport reads, its value and meaning, at start-up", NULL, NULL, 0},
    {"SHMALLOC_METADATA", {NULL, NULL}, SHMALLOC_KIND_METADATA, "inline",
     "separate: the allocator's state outside the heap's memory, which it never touches", NULL, NULL, 0},
};
static int shm__option_count = SHMALLOC_OPT_CORE_COUNT;

SHMALLOC_DEF SHMALLOC_API const shmalloc_option *shmalloc_options(void) { return shm__options; }
SHMALLOC_DEF SHMALLOC_API int shmalloc_option_count(void) { return shm__option_count; }

SHMALLOC_DEF SHMALLOC_API int shmalloc_option_find(const char *name)
{
    int id;
    for (id = 0; name && id < shm__option_count; id++)
        if (!strcmp(shm__options[id].name, name)) return id;
    return -1;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_options_add(const shmalloc_option *rows, int count)
{
    int id, k;
    if (!rows || count < 1) return -1;
    if ((id = shmalloc_option_find(rows[0].name)) >= 0) return id;
    if (count > SHMALLOC_OPT_MAX - shm__option_count) return -1;
    id = shm__option_count;
    for (k = 0; k < count; k++) {
        shmalloc_option *o = &shm__options[id + k];
        *o = rows[k];
        o->source = NULL, o->text = NULL, o->value = 0;
    }
    shm__option_count += count;
    return id;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_parse_size(const char *text, size_t *out)
{
    const char *p = text;
    uint64_t whole = 0, frac = 0, scale = 1, limit = (uint64_t)1 << SHMALLOC_MAX_LOG2, value;
    unsigned shift = 0;
    int digits = 0;
    if (!p) return -1;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        if (whole > limit) return -1;
    }
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (scale < 1000000000) { /* nine decimals are plenty */
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
    if (!digits) return -1;
    switch (*p) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    case '\0': break;
    default: return -1;
    }
    if (*p && p[1]) return -1;
    if (whole > limit >> shift) return -1;
    value = (whole << shift) + (uint64_t)((double)frac / (double)scale * (double)((uint64_t)1 << shift));
    if (value == 0 || value > limit) return -1;
    *out = (size_t)value;
    return 0;
}

/* SOS's booleans: 1 yes, 0 no, -1 neither. */
static int shm__yes_no(const char *v)
{
    static const char *const words[] = {"0", "n", "no", "off", "false", "1", "y", "yes", "on", "true"};
    size_t i, n;
    for (i = 0; i < sizeof words / sizeof words[0]; i++) {
        for (n = 0; v[n] && words[i][n] && (v[n] | 0x20) == (words[i][n] | 0x20); n++) continue;
        if (!v[n] && !words[i][n]) return i >= 5;
    }
    return -1;
}

/* o->text checked by its kind into o->value: 0, or -1 when it is bad. */
static int shm__option_parse(shmalloc_option *o)
{
    const char *t = o->text;
    size_t size = 0;
    switch (o->kind) {
    case SHMALLOC_KIND_SIZE_OR_OFF:
        if (!*t || !strcmp(t, "0")) return (int)(o->value = 0);
        /* fall through */
    case SHMALLOC_KIND_SIZE:
        if (shmalloc_parse_size(t, &size)) return -1;
        o->value = size;
        return 0;
    case SHMALLOC_KIND_SECONDS: {
        uint64_t n = 0;
        for (; *t >= '0' && *t <= '9' && n <= 1000000; t++) n = n * 10 + (uint64_t)(*t - '0');
        if (*t || t == o->text || n < 1 || n > 1000000) return -1;
        o->value = n;
        return 0;
    }
    case SHMALLOC_KIND_SWITCH:
        if (*t && (t[1] || *t < '0' || *t > '9')) return -1;
        o->value = *t && *t != '0';
        return 0;
    case SHMALLOC_KIND_BIT:
        if (strcmp(t, "0") && strcmp(t, "1")) return -1;
        o->value = *t == '1';
        return 0;
    case SHMALLOC_KIND_YES_NO:
        if (*t && shm__yes_no(t) < 0) return -1;
        o->value = *t && shm__yes_no(t) == 1;
        return 0;
    case SHMALLOC_KIND_METADATA:
        if (*t && strcmp(t, "inline") && strcmp(t, "separate")) return -1;
        o->value = *t == 's' ? SHMALLOC_METADATA_SEPARATE : SHMALLOC_METADATA_INLINE;
        return 0;
    default:
        o->value = 0;
        return 0;
    }
}

/* SHMALLOC_OPTION_KINDS's texts, by kind. */
#define SHM__KIND_TEXT(kind, what, expected) {what, expected},
static const struct shm__kind {
    const char *what, *expected;
} shm__kinds[] = {SHMALLOC_OPTION_KINDS(SHM__KIND_TEXT)};

/* The largest heap, as the docs write it: "64T", or "512G" below 1T. */
static const char *shm__largest_text(char *buf, size_t n)
{
    unsigned shift = SHMALLOC_MAX_LOG2 >= 40 ? SHMALLOC_MAX_LOG2 - 40 : SHMALLOC_MAX_LOG2 - 30;
    snprintf(buf, n, "%llu%c", 1ull << shift, SHMALLOC_MAX_LOG2 >= 40 ? 'T' : 'G');
    return buf;
}

SHMALLOC_DEF SHMALLOC_API const char *shmalloc_option_quote(char *buf, size_t n, const char *value, const char *quote)
{
    size_t len = strlen(value);
    if (len <= 64) snprintf(buf, n, "%s%s%s", quote, value, quote);
    else snprintf(buf, n, "%s%.40s...%s (%zu characters)", quote, value, quote, len);
    return buf;
}

/* o->text checked; a bad value is refused with a message, and the
   fallback stands. */
static int shm__option_report(shmalloc_option *o)
{
    char expected[160], value[96], largest[32];
    if (!shm__option_parse(o)) return 0;
    snprintf(expected, sizeof expected, shm__kinds[o->kind].expected, shm__largest_text(largest, sizeof largest));
    shmalloc_print(2, SHM__MSG(OPTION_BAD), o->source, shmalloc_option_quote(value, sizeof value, o->text, "\""),
                   shm__kinds[o->kind].what, expected);
    o->text = o->fallback;
    shm__option_parse(o);
    return -1;
}

/* The one place the environment is read. */
static int shm__option_load(shmalloc_option *o)
{
    const char *names[3];
    size_t i;
    names[0] = o->name, names[1] = o->alias[0], names[2] = o->alias[1];
    o->source = NULL;
    o->text = o->fallback;
    for (i = 0; i < 3 && !o->source; i++)
        if (names[i] && getenv(names[i])) o->source = names[i], o->text = getenv(names[i]);
    return shm__option_report(o);
}

static const char shm__by_program[] = "program";

SHMALLOC_DEF SHMALLOC_API int shmalloc_option_read(int id)
{
    if (id < 0 || id >= shm__option_count) return -1;
    return shm__options[id].source == shm__by_program ? 0 : shm__option_load(&shm__options[id]);
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_option_set(int id, const char *text)
{
    shmalloc_option *o;
    if (id < 0 || id >= shm__option_count) return -1;
    o = &shm__options[id];
    if (!text) {
        o->source = NULL;
        return shm__option_load(o);
    }
    o->source = shm__by_program;
    o->text = text;
    return shm__option_report(o);
}

/* Edits between a and b (each under 64 characters), for the nearest name. */
static size_t shm__distance(const char *a, const char *b)
{
    size_t row[64], i, j, n = strlen(b), diag, up;
    if (strlen(a) >= 64 || n >= 64) return 64;
    for (j = 0; j <= n; j++) row[j] = j;
    for (i = 1; a[i - 1]; i++) {
        diag = row[0];
        row[0] = i;
        for (j = 1; j <= n; j++) {
            up = row[j];
            row[j] = a[i - 1] == b[j - 1] ? diag : 1 + (diag < up ? (diag < row[j - 1] ? diag : row[j - 1])
                                                                  : (up < row[j - 1] ? up : row[j - 1]));
            diag = up;
        }
    }
    return row[n];
}

/* The entry name or alias nearest `name`, *distance edits away. */
static const char *shm__nearest(const char *name, size_t *distance)
{
    const char *best = NULL;
    size_t k, j, d;
    *distance = SIZE_MAX;
    for (k = 0; k < (size_t)shm__option_count; k++)
        for (j = 0; j < 3; j++) {
            const char *known = j ? shm__options[k].alias[j - 1] : shm__options[k].name;
            if (known && (d = shm__distance(name, known)) < *distance) *distance = d, best = known;
        }
    return best;
}

static int shm__ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n > m && !strcmp(s + n - m, end);
}

/* Variables of env that no entry has but that look like ours: every
   SHMALLOC_* one, and any other within an edit per 8 characters of an
   entry's name (SHMEM_SYMMETRIC_HEAP_SZE), which other libraries' names
   (SHMEM_BOUNCE_SIZE, FI_PROVIDER_PATH, OMPI_*, SLURM_*) are not, nor an
   entry's name under another's prefix (OSHMEM_VERSION).  Said once per
   process. */
SHMALLOC_DEF SHMALLOC_API void shmalloc_options_report_unknown(char *const *env, int npes)
{
    static int reported;
    char job[64] = "";
    if (!env) return;
    if (npes > 1) snprintf(job, sizeof job, " (said once for the job's %d PEs)", npes);
    for (; *env && !reported; env++) {
        char name[64];
        const char *best;
        size_t n = strcspn(*env, "="), d;
        int ours = !strncmp(*env, "SHMALLOC_", 9);
        if (n >= sizeof name || !strncmp(*env, "SHMALLOC_TEST_", 14)) continue;
        memcpy(name, *env, n);
        name[n] = '\0';
        best = shm__nearest(name, &d);
        if (d == 0 || (!ours && (d > (strlen(best) / 8 ? strlen(best) / 8 : 1) || shm__ends_with(name, best))))
            continue;
        if (d >= 4) best = NULL; /* too far to suggest */
        shmalloc_print(2, SHM__MSG(OPTION_UNKNOWN), name, best ? " (did you mean " : "", best ? best : "",
                       best ? "?)" : "", job);
    }
    reported = 1;
}

SHMALLOC_DEF SHMALLOC_API int shmalloc_options_read(char *const *env)
{
    int id, bad = 0;
    for (id = 0; id < shm__option_count; id++) bad |= shmalloc_option_read(id);
    shmalloc_options_report_unknown(env, 1);
    return bad ? -1 : 0;
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_options_heap_config(shmalloc_heap_config *config, size_t nominal,
                                                            int growable)
{
    const shmalloc_option *o = &shm__options[growable ? SHMALLOC_OPT_HEAP_MAX : SHMALLOC_OPT_HEAP_SIZE];
    SHMALLOC_MEMSET(config, 0, sizeof *config);
    config->nominal = nominal;
    config->debug = shm__options[SHMALLOC_OPT_DEBUG].value != 0;
    config->metadata = (int)shm__options[SHMALLOC_OPT_METADATA].value;
    if (o->text && o->source != shm__by_program) config->size_var = o->source ? o->source : growable ? NULL : o->name;
}

SHMALLOC_DEF SHMALLOC_API void shmalloc_options_announce(int pe)
{
    int id;
    if (pe != 0) return;
    if (shm__options[SHMALLOC_OPT_SHMEM_VERSION].value || shm__options[SHMALLOC_OPT_SHMEM_INFO].value)
        shmalloc_print(1, SHM__MSG(INFO_VERSION), shmalloc_version());
    if (!shm__options[SHMALLOC_OPT_SHMEM_INFO].value) return;
    for (id = 0; id < shm__option_count; id++) {
        const shmalloc_option *o = &shm__options[id];
        char value[96];
        shmalloc_print(1, SHM__MSG(INFO_OPTION), o->name,
                       shmalloc_option_quote(value, sizeof value, o->text ? o->text : o->fallback, ""),
                       o->source ? "from " : "the default", o->source ? o->source : "", o->meaning);
    }
}

/* >> shmem names: implementation ------------------------------------------- */
#if !defined(SHMALLOC_NO_SHMEM_NAMES)
#  if defined(SHMALLOC_STATIC)
static SHMALLOC_TLS long malloc_error = SHMEM_MALLOC_OK;
#  else
SHMALLOC_TLS long malloc_error = SHMEM_MALLOC_OK;
#  endif

SHMALLOC_DEF SHMALLOC_API void *shmem_malloc(size_t size)
{
    return shmalloc_heap_malloc(shmalloc_current(), size, &malloc_error);
}
SHMALLOC_DEF SHMALLOC_API void *shmalloc(size_t size) { return shmem_malloc(size); }
/* The heap a pointer-only call acts on: the space that holds ptr, else
   the current heap (which then reports the bad pointer). */
static shmalloc_heap *shm__heap_for(const void *ptr)
{
    shmalloc_heap *h = shmalloc_current(), *s = h ? shmalloc_heap_of(h, ptr) : NULL;
    return s ? s : h;
}
SHMALLOC_DEF SHMALLOC_API void shmem_free(void *ptr) { shmalloc_heap_free(shm__heap_for(ptr), ptr, &malloc_error); }
SHMALLOC_DEF SHMALLOC_API void shfree(void *ptr) { shmem_free(ptr); }
SHMALLOC_DEF SHMALLOC_API void *shmem_realloc(void *ptr, size_t size)
{
    return shmalloc_heap_realloc(ptr ? shm__heap_for(ptr) : shmalloc_current(), ptr, size, &malloc_error);
}
SHMALLOC_DEF SHMALLOC_API void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
SHMALLOC_DEF SHMALLOC_API void *shmem_align(size_t alignment, size_t size)
{
    return shmalloc_heap_align(shmalloc_current(), alignment, size, &malloc_error);
}
SHMALLOC_DEF SHMALLOC_API void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
SHMALLOC_DEF SHMALLOC_API void *shmem_calloc(size_t count, size_t size)
{
    return shmalloc_heap_calloc(shmalloc_current(), count, size, &malloc_error);
}
SHMALLOC_DEF SHMALLOC_API void *shsbreak(ptrdiff_t increment)
{
    return shmalloc_heap_sbreak(shmalloc_current(), increment, &malloc_error);
}
SHMALLOC_DEF SHMALLOC_API void *shmem_malloc_with_hints(size_t size, long hints)
{
    return shmalloc_heap_malloc_with_hints(shmalloc_current(), size, hints, &malloc_error);
}
/* The current heap and then each of its spaces: 0 and fn's, in turn. */
static int shm__each_space(shmalloc_heap *h, int (*fn)(shmalloc_heap *h, int level), int level)
{
    size_t i;
    int sum = fn(h, level);
    /* Spaces come and go only by this thread's collective calls: no lock. */
    for (i = 0; h && i < h->spaces.count; i++) sum += fn(h->spaces.by_base[i], level);
    return sum;
}
static int shm__stats(shmalloc_heap *h, int level)
{
    shmalloc_heap_stats(h, level);
    return 0;
}
SHMALLOC_DEF SHMALLOC_API int shmalloc_check(int level)
{
    return shm__each_space(shmalloc_current(), shmalloc_heap_check, level);
}
SHMALLOC_DEF SHMALLOC_API void shmalloc_stats(int level) { (void)shm__each_space(shmalloc_current(), shm__stats, level); }
SHMALLOC_DEF SHMALLOC_API int shmemx_heap_info(shmalloc_info *info)
{
    return shmalloc_heap_info(shmalloc_current(), info);
}
SHMALLOC_DEF SHMALLOC_API void shmemx_free_deferred(void *ptr)
{
    shmalloc_heap_free_deferred(shm__heap_for(ptr), ptr, &malloc_error);
}
SHMALLOC_DEF SHMALLOC_API void shmemx_free_deferred_drain(void)
{
    shmalloc_heap_free_deferred_drain(shmalloc_current(), &malloc_error);
}

/* space, when the calling PE's current heap is it or its world; else NULL
   after a line, with SHMEMX_MALLOC_NOT_MEMBER (or _NO_HEAP) in malloc_error. */
static shmalloc_heap *shm__space_mine(shmemx_space_t space, const char *call)
{
    shmalloc_heap *h = shmalloc_current();
    if (space && h && (space == h || space->world == h)) return space;
    if (!h) {
        shm__no_heap(SHM__MALLOC, &malloc_error);
        return NULL;
    }
    if (!space) shmalloc_print(2, SHM__MSG(SPACE_NULL), h->tp.pe, call);
    else shmalloc_print(2, SHM__MSG(SPACE_NOT_MEMBER), h->tp.pe, call);
    malloc_error = SHMEMX_MALLOC_NOT_MEMBER;
    return NULL;
}
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_malloc(shmemx_space_t space, size_t size)
{
    shmalloc_heap *h = shm__space_mine(space, "shmemx_space_malloc");
    return h ? shmalloc_heap_malloc(h, size, &malloc_error) : NULL;
}
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_calloc(shmemx_space_t space, size_t count, size_t size)
{
    shmalloc_heap *h = shm__space_mine(space, "shmemx_space_calloc");
    return h ? shmalloc_heap_calloc(h, count, size, &malloc_error) : NULL;
}
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_align(shmemx_space_t space, size_t alignment, size_t size)
{
    shmalloc_heap *h = shm__space_mine(space, "shmemx_space_align");
    return h ? shmalloc_heap_align(h, alignment, size, &malloc_error) : NULL;
}
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_malloc_with_hints(shmemx_space_t space, size_t size, long hints)
{
    shmalloc_heap *h = shm__space_mine(space, "shmemx_space_malloc_with_hints");
    return h ? shmalloc_heap_malloc_with_hints(h, size, hints, &malloc_error) : NULL;
}
/* A block of another space is named, then refused on every member by the
   realloc itself (not in this space's heap). */
SHMALLOC_DEF SHMALLOC_API void *shmemx_space_realloc(shmemx_space_t space, void *ptr, size_t size)
{
    shmalloc_heap *h = shm__space_mine(space, "shmemx_space_realloc"), *holder;
    if (!h) return NULL;
    holder = ptr ? shmalloc_heap_of(h, ptr) : h;
    if (holder && holder != h)
        shmalloc_print(2, SHM__MSG(SPACE_WRONG_SPACE), h->tp.pe, "shmemx_space_realloc", ptr, (void *)h,
                       holder->world ? "another space" : "the world heap");
    return shmalloc_heap_realloc(h, ptr, size, &malloc_error);
}
SHMALLOC_DEF SHMALLOC_API shmemx_space_t shmemx_space_of(const void *ptr)
{
    return shmalloc_heap_of(shmalloc_current(), ptr);
}
#endif

#endif /* SHMALLOC_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 The shmalloc authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
