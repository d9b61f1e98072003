/* shmalloc.c - the allocator compiled once: libshmalloc, which the
   transport libraries and programs that do not expand the header link. */
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"
