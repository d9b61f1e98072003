/* hello_pmix_ofi.c - the ring exchange of hello_pthreads.c, with PEs as
   processes: PMIx starts them, libfabric moves the data.

       cc -std=c99 -I. examples/hello_pmix_ofi.c transports/shmalloc_pmix_ofi.c \
          $(pkg-config --cflags --libs pmix libfabric) -o hello_pmix_ofi
       FI_PROVIDER=shm mpirun -np 4 ./hello_pmix_ofi       (or: make demo-pmix)
*/
#include "transports/shmalloc_pmix_ofi.h"

#include <stdio.h>

#define WORDS 16

int main(void)
{
    long *mine, *from_left;
    int me, npes, right, pe, i, wrong = 0;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    mine = shmem_malloc(WORDS * sizeof *mine);   /* collective: same offset everywhere */
    from_left = shmem_malloc(WORDS * sizeof *from_left);
    if (!mine || !from_left) {
        fprintf(stderr, "PE %d: shmem_malloc failed (malloc_error %ld)\n", me, malloc_error);
        shmem_global_exit(1);
    }
    for (i = 0; i < WORDS; i++) mine[i] = 1000L * me + i;
    shmem_barrier_all();
    shmem_putmem(from_left, mine, WORDS * sizeof *mine, right); /* into the right neighbour's copy */
    shmem_barrier_all();
    for (i = 0; i < WORDS; i++) wrong |= from_left[i] != 1000L * ((me + npes - 1) % npes) + i;
    for (pe = 0; pe < npes; pe++) { /* one line per PE, in order */
        if (pe == me)
            printf("PE %d of %d: got words %ld .. %ld from its left neighbour%s\n", me, npes, from_left[0],
                   from_left[WORDS - 1], wrong ? " (WRONG)" : "");
        fflush(stdout);
        shmem_barrier_all();
    }
    if (me == 0) shmalloc_stats(1);
    shmem_free(from_left);
    shmem_free(mine);
    wrong |= shmalloc_check(0) != 0;
    shmem_finalize();
    return wrong;
}
