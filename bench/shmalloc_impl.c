/* The one translation unit of the benchmarks that expands shmalloc.h's
   implementation, compiled on its own as a user's would be: the benchmark
   calls the allocator across a file boundary, never inlined into its loop. */
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"
