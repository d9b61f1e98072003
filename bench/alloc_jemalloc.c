/* bench/alloc_jemalloc.c - jemalloc's malloc, linked ahead of the C library's (bench/allocators). */
#define BENCH_SYSTEM_NAME "jemalloc"
#define BENCH_SYSTEM_LIBRARY "libjemalloc"
#include "alloc_system.h"
