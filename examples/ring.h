/* ring.h - the program both hello examples run, on whichever transport
   declared the SHMEM names before this include.

   Every PE allocates the same arrays with shmem_malloc (so they sit at the
   same offset in every PE's heap), sends its PE number to its right-hand
   neighbour with shmem_putmem, and prints what arrived from the left. */
#include <stdio.h>

#define RING_WORDS 8

static int ring_wrong(int me, const char *what, long got, long expected)
{
    fprintf(stderr, "PE %d: %s is %ld, expected %ld\n", me, what, got, expected);
    return 1;
}

/* One line per PE in PE order: each PE waits for its turn at a barrier.
   (Launchers forward each process's output separately, so the order on a
   terminal can still differ.) */
static void ring_print_in_order(int me, int npes, const int *received)
{
    int turn;
    for (turn = 0; turn < npes; turn++) {
        if (turn == me) {
            printf("PE %d of %d received %d from PE %d\n", me, npes, received[0], (me + npes - 1) % npes);
            fflush(stdout);
        }
        shmem_barrier_all();
    }
}

/* Runs the ring on this PE; returns how many values it found wrong. */
static int ring(void)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int left = (me + npes - 1) % npes, right = (me + 1) % npes, i, wrong = 0;
    int *mine = (int *)shmem_malloc(RING_WORDS * sizeof *mine);
    int *received = (int *)shmem_calloc(RING_WORDS, sizeof *received);
    if (mine == NULL || received == NULL) {
        fprintf(stderr, "PE %d: shmem_malloc failed (malloc_error %ld)\n", me, malloc_error);
        shmem_global_exit(1);
    }
    for (i = 0; i < RING_WORDS; i++) mine[i] = me;
    /* received is symmetric, so its address here names the neighbour's copy. */
    shmem_putmem(received, mine, RING_WORDS * sizeof *mine, right);
    shmem_barrier_all();

    for (i = 0; i < RING_WORDS; i++)
        if (received[i] != left) wrong += ring_wrong(me, "received word", received[i], left);
    ring_print_in_order(me, npes, received);
    if (me == 0) shmalloc_stats(1);
    shmem_barrier_all(); /* PE 0's statistics show both arrays still in use */

    shmem_free(received);
    shmem_free(mine);
    if (malloc_error != SHMEM_MALLOC_OK) wrong += ring_wrong(me, "malloc_error", malloc_error, SHMEM_MALLOC_OK);
    if (shmalloc_check(-1) != 0) wrong += ring_wrong(me, "shmalloc_check(-1)", 1, 0);
    return wrong;
}
