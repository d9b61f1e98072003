/* shmem_malloc_with_hints: blocks for remote atomics and signals take
   fetch-and-adds from every PE and count them all. */
#include "sos_check.h"

#define ROUNDS 200

int main(void)
{
    static const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                                 SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
    enum { H = sizeof hints / sizeof hints[0] };
    long *ctr[H];
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    void *anchor = shmem_malloc(16);
    for (int h = 0; h < H; h++) {
        ctr[h] = shmem_malloc_with_hints((size_t)npes * sizeof(long), hints[h]);
        CHECK(ctr[h] != NULL, "shmem_malloc_with_hints(hints %ld)", hints[h]);
        CHECK(same_on_every_pe(offset_from(anchor, ctr[h])), "hints %ld: not symmetric", hints[h]);
        for (int i = 0; i < npes; i++) ctr[h][i] = 0;
    }
    shmem_barrier_all();
    for (int r = 0; r < ROUNDS; r++)
        for (int h = 0; h < H; h++)
            for (int pe = 0; pe < npes; pe++) shmem_long_atomic_fetch_add(&ctr[h][me], 1 + h, pe);
    shmem_barrier_all();
    for (int h = 0; h < H; h++) {
        for (int i = 0; i < npes; i++)
            CHECK(ctr[h][i] == (long)ROUNDS * (1 + h), "counter %d of block %d is %ld", i, h, ctr[h][i]);
        shmem_free(ctr[h]);
    }
    shmem_free(anchor);
    if (me == 0) printf("heap_hints_atomics: %d blocks on %d PEs\n", H, npes);
    shmem_finalize();
    return 0;
}
