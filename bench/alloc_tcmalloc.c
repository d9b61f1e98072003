/* bench/alloc_tcmalloc.c - tcmalloc's malloc, linked ahead of the C library's (bench/allocators). */
#define BENCH_SYSTEM_NAME "tcmalloc"
#define BENCH_SYSTEM_LIBRARY "libtcmalloc"
#include "alloc_system.h"
