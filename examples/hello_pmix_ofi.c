/* hello_pmix_ofi.c - symmetric allocation and a ring of puts, PEs as processes.

   Build:  cc -std=c99 -I. examples/hello_pmix_ofi.c shmalloc.c transports/pmix_ofi/[a-z]*.c transports/common/[a-z]*.c \
              $(pkg-config --cflags --libs pmix libfabric) -o hello_pmix_ofi
   Run:    mpirun -np 4 ./hello_pmix_ofi      (as root: --allow-run-as-root;
                                              more PEs than cores: --oversubscribe)
           ./hello_pmix_ofi                   (no launcher: one PE)

   The ring is in ring.h.  The exit status is nonzero when a value is wrong. */
#include "transports/shmalloc_pmix_ofi.h"

#include "ring.h"

int main(void)
{
    int wrong;
    shmem_init();
    wrong = ring();
    shmem_finalize();
    return wrong == 0 ? 0 : 1;
}
