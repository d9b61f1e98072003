/* hello_pthreads.c - symmetric allocation and a ring of puts, PEs as threads.

   Build:  cc -std=c99 -I. examples/hello_pthreads.c shmalloc.c transports/pthreads/[a-z]*.c transports/common/[a-z]*.c -pthread
   Run:    ./a.out [npes]       (4 PEs by default)

   The ring is in ring.h.  The exit status is nonzero when a value is wrong. */
#include "transports/shmalloc_pthreads.h"

#include <stdlib.h>

#include "ring.h"

static int wrong_values; /* PE threads add to it; read after they finish */

static void hello(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&wrong_values, ring(), __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
    int npes = argc > 1 ? atoi(argv[1]) : 4;
    if (shmalloc_pthreads_run(npes, (size_t)1 << 20, hello, NULL) != 0) return 1;
    return wrong_values == 0 ? 0 : 1;
}
