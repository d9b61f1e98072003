/* bench/alloc_shmalloc-separate.c - the TLSF core, its metadata kept apart. */
#define BENCH_SHMALLOC_NAME "shmalloc-separate"
#define BENCH_SHMALLOC_SEPARATE 1
#include "alloc_shmalloc.h"
