/* bench/alloc_glibc.c - the C library's own malloc. */
#define BENCH_SYSTEM_NAME "glibc"
#define BENCH_SYSTEM_LIBRARY "libc.so"
#include "alloc_system.h"
