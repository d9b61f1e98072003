/* messages.h - the messages of the start-up every transport shares
   (start.c, map.c): its table of IDs and texts, which shmalloc_start_options
   adds (shmalloc_messages_add), and how its files print one; tests
   include it to check them by ID. */
#ifndef SHM__COMMON_MESSAGES_H_INCLUDED
#define SHM__COMMON_MESSAGES_H_INCLUDED

#include "../../shmalloc.h"
#include "internal.h" /* SHM__INTERNAL */

#define SHMALLOC_START_MESSAGES(X) \
    /* the mapping (map.c) */ \
    X(HUGE_PAGES_FELL_BACK, "shmalloc: huge pages fell back: %s asked for %s; the heap of PE %d (%zu bytes at " \
                            "%p) has %s: %s\n") \
    X(NOT_SYMMETRIC, "%s: %zu bytes at %p on PE %d are not a symmetric range (calling PE %d of %d)\n") \
    /* start-up (start.c) */ \
    X(START_BAD_SIZE, "%s: heap size %zu is not in 1..2^%d\n") \
    X(START_SIZE_TOO_LARGE, "%s: heap size %zu is too large\n") \
    X(START_MAP_FD_LIMIT, "shmalloc: cannot map %zu bytes for the symmetric heap: %s; %s\n") \
    X(START_RESERVE_FAILED, "shmalloc: cannot reserve %zu bytes for the symmetric heap (SHMALLOC_HEAP_MAX=%s): " \
                            "%s; ask for less\n") \
    X(START_MAP_FAILED, "%s: cannot map %zu bytes for the heap of PE %d: %s\n") \
    X(START_MAP_FAILED_VARIABLE, "shmalloc: cannot map %zu bytes for the symmetric heap (%s=%s asks for %zu " \
                                 "bytes): %s; ask for less with %s\n") \
    X(START_MAP_FAILED_DEFAULT, "shmalloc: cannot map %zu bytes for the symmetric heap (the default of %zu " \
                                "bytes): %s; ask for less with SHMEM_SYMMETRIC_HEAP_SIZE\n") \
    X(START_SIZE_RAISED, "shmalloc: %s asks for a heap of %zu bytes, less than the smallest: each PE's heap has " \
                         "%zu bytes (%zu bytes of memory with the allocator's own)\n") \
    X(START_HEAP_CREATE_FAILED, "shmalloc: cannot create the symmetric heap of %zu bytes on PE %d (malloc_error " \
                                "%ld)\n")

SHMALLOC_MESSAGE_LAYER(SHMALLOC_START_MESSAGES, SHMALLOC_START_MESSAGE_ROWS)

/* The table's first ID, once shmalloc_start_options has added it. */
SHM__INTERNAL extern int shm__start_messages;
#define SHM__START_MSG(id) SHMALLOC_MSG_IN(shm__start_messages, id)

#endif /* SHM__COMMON_MESSAGES_H_INCLUDED */
