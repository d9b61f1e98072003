/* bench/alloc.h - what an allocator gives the benchmarks.

   An allocator is one adapter file, bench/alloc_NAME.c, that defines
   bench_allocator, and one line of bench/allocators (its name, then what
   it links with).  Each driver (core.c: time and footprint; cest.c: the
   cycle estimate) is linked with one adapter, so each allocator runs in a
   binary of its own: build/bench/core_NAME, build/bench/cest_NAME.

   A region allocator (create not NULL) carves every block out of the
   region it is handed; a system allocator takes no region and its malloc
   must be the process's (library names the file it comes from). */
#ifndef BENCH_ALLOC_H
#define BENCH_ALLOC_H

#include <stddef.h>

typedef struct bench_allocator {
    const char *name;    /* as bench/allocators spells it */
    const char *library; /* a system allocator: part of its library's file name */
    /* A region allocator's heap over [region, region + bytes), NULL on failure. */
    void *(*create)(void *region, size_t bytes);
    void (*destroy)(void *heap);
    void *(*malloc)(void *heap, size_t size);
    void *(*memalign)(void *heap, size_t align, size_t size); /* align: 8..4096 */
    /* realloc and free are told the size and alignment (0: malloc's) the
       block was asked with, for allocators that need them; most ignore them. */
    void *(*realloc)(void *heap, void *ptr, size_t old_size, size_t size, size_t align);
    void (*free)(void *heap, void *ptr, size_t size, size_t align);
    /* Optional: 0 when the heap's structure is whole. */
    int (*check)(void *heap);
    /* Optional: extra key=value figures of the heap, each after a space. */
    void (*describe)(void *heap);
} bench_allocator;

extern const bench_allocator bench_allocator_under_test;

#endif /* BENCH_ALLOC_H */
