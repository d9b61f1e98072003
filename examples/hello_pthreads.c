/* hello_pthreads.c - symmetric allocation and a ring of puts, PEs as threads.

   Build:  cc -std=c99 -I. examples/hello_pthreads.c shmalloc.c transports/shmalloc_pthreads.c transports/shmalloc_map.c transports/shmalloc_wait.c -pthread
   Run:    ./a.out [npes]       (4 PEs by default)

   Every PE allocates the same arrays with shmem_malloc (so they sit at the
   same offset in every PE's heap), sends its PE number to its right-hand
   neighbour with shmem_putmem, and prints what arrived from the left. */
#include "transports/shmalloc_pthreads.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#define RING_WORDS 8

static int wrong_values; /* PE threads add to it; read after they finish */

static void report_wrong(int me, const char *what, int got, int expected)
{
    fprintf(stderr, "PE %d: %s is %d, expected %d\n", me, what, got, expected);
    __atomic_add_fetch(&wrong_values, 1, __ATOMIC_RELAXED);
}

/* One line per PE in PE order: each PE waits for its turn at a barrier. */
static void print_in_order(int me, int npes, const int *received)
{
    int turn;
    for (turn = 0; turn < npes; turn++) {
        if (turn == me) {
            printf("PE %d of %d received %d from PE %d\n", me, npes, received[0],
                   (me + npes - 1) % npes);
            fflush(stdout);
        }
        shmem_barrier_all();
    }
}

static void hello(void *arg)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int left = (me + npes - 1) % npes, right = (me + 1) % npes, i, heap_ok;
    int *mine = (int *)shmem_malloc(RING_WORDS * sizeof *mine);
    int *received = (int *)shmem_calloc(RING_WORDS, sizeof *received);

    (void)arg;
    if (mine == NULL || received == NULL) {
        fprintf(stderr, "PE %d: shmem_malloc failed (malloc_error %ld)\n", me, malloc_error);
        shmem_global_exit(1);
    }
    for (i = 0; i < RING_WORDS; i++) mine[i] = me;
    /* received is symmetric, so its address here names the neighbour's copy. */
    shmem_putmem(received, mine, RING_WORDS * sizeof *mine, right);
    shmem_barrier_all();

    for (i = 0; i < RING_WORDS; i++)
        if (received[i] != left) report_wrong(me, "received word", received[i], left);
    print_in_order(me, npes, received);
    if (me == 0) shmalloc_stats(1);
    shmem_barrier_all(); /* PE 0's statistics show both arrays still in use */

    shmem_free(received);
    shmem_free(mine);
    if (malloc_error != SHMEM_MALLOC_OK) report_wrong(me, "malloc_error", (int)malloc_error, 0);
    heap_ok = shmalloc_check(-1) == 0;
    assert(heap_ok);
    if (!heap_ok) report_wrong(me, "shmalloc_check(-1)", 1, 0); /* NDEBUG builds */
}

int main(int argc, char **argv)
{
    int npes = argc > 1 ? atoi(argv[1]) : 4;
    if (shmalloc_pthreads_run(npes, (size_t)1 << 20, hello, NULL) != 0) return 1;
    return wrong_values == 0 ? 0 : 1;
}
