/* bench/alloc_shmalloc.c - the TLSF core, its metadata in the region. */
#define BENCH_SHMALLOC_NAME "shmalloc"
#define BENCH_SHMALLOC_SEPARATE 0
#include "alloc_shmalloc.h"
