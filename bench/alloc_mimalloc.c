/* bench/alloc_mimalloc.c - mimalloc's malloc, linked ahead of the C library's (bench/allocators). */
#define BENCH_SYSTEM_NAME "mimalloc"
#define BENCH_SYSTEM_LIBRARY "libmimalloc"
#include "alloc_system.h"
