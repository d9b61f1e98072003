/* fork_ring.c - the fork transport built outside the tree: each PE puts
   its number into its neighbour's box, prints what it received, and ends
   with the heap checker.  tests/checks/test_install.sh and tests/checks/test_deb.sh
   build it with the fork transport's sources against an installation. */
#include "shmalloc_fork.h"

#include <stdio.h>
#include <stdlib.h>

static void pe_main(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int *box = (int *)shmem_calloc(1, sizeof *box);
    (void)arg;
    if (!box) shmem_global_exit(2);
    shmem_putmem(box, &me, sizeof me, (me + 1) % npes);
    shmem_barrier_all();
    printf("PE %d of %d received %d from PE %d\n", me, npes, *box, (me + npes - 1) % npes);
    fflush(stdout);
    shmem_barrier_all(); /* every PE has read its box */
    shmem_free(box);
    if (shmalloc_check(0) != 0) shmem_global_exit(3);
}

int main(int argc, char **argv)
{
    return shmalloc_fork_run(argc > 1 ? atoi(argv[1]) : 4, 1 << 20, pe_main, NULL);
}
