/* The one translation unit that expands shmalloc.h's implementation; every
   test program links it, so the tests see the header as a user would. */
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"
