/* Teams take their synchronisation arrays from the symmetric heap inside
   the runtime: creating and destroying teams between user allocations
   keeps the heap symmetric, and collectives on heap buffers stay right. */
#include "sos_check.h"

#define ROUNDS 20
#define N 512

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    void *anchor = shmem_malloc(16);
    for (int r = 0; r < ROUNDS; r++) {
        shmem_team_t evens = SHMEM_TEAM_INVALID;
        int nevens = (npes + 1) / 2;
        long *before = shmem_malloc(N * sizeof(long));
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, nevens, NULL, 0, &evens) == 0, "split");
        long *src = shmem_malloc(N * sizeof(long)), *dst = shmem_malloc((size_t)npes * N * sizeof(long));
        CHECK(before && src && dst, "round %d: allocation", r);
        CHECK(same_on_every_pe(offset_from(anchor, dst)), "round %d: not symmetric after a team split", r);
        for (int i = 0; i < N; i++) src[i] = (long)me * 100000 + r * 1000 + i;
        shmem_barrier_all();
        shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, N * sizeof(long));
        for (int pe = 0; pe < npes; pe++)
            for (int i = 0; i < N; i++)
                CHECK(dst[pe * N + i] == (long)pe * 100000 + r * 1000 + i, "fcollect: PE %d item %d", pe, i);
        if (evens != SHMEM_TEAM_INVALID) {
            shmem_broadcastmem(evens, before, src, N * sizeof(long), 0);
            for (int i = 0; i < N; i++) CHECK(before[i] == r * 1000 + i, "broadcast item %d", i);
            shmem_team_destroy(evens);
        }
        shmem_barrier_all();
        shmem_free(src);
        shmem_free(before);
        shmem_free(dst);
    }
    shmem_free(anchor);
    if (me == 0) printf("heap_teams: %d rounds on %d PEs\n", ROUNDS, npes);
    shmem_finalize();
    return 0;
}
