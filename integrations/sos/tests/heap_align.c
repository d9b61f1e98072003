/* shmem_align: every power of two from 8 to 1 MiB gives an aligned,
   symmetric, usable block, between small blocks that stay intact. */
#include "sos_check.h"

int main(void)
{
    enum { N = 18 }; /* 8 .. 1 MiB */
    void *big[N], *small[N];
    shmem_init();
    int me = shmem_my_pe();
    void *anchor = shmem_malloc(16);
    for (int i = 0; i < N; i++) {
        size_t align = (size_t)8 << i, n = 100 + (size_t)i * 1000;
        small[i] = shmem_malloc(24);
        big[i] = shmem_align(align, n);
        CHECK(big[i] != NULL, "shmem_align(%zu, %zu)", align, n);
        CHECK(((uintptr_t)big[i] & (align - 1)) == 0, "shmem_align(%zu) = %p", align, big[i]);
        CHECK(same_on_every_pe(offset_from(anchor, big[i])), "shmem_align(%zu) is not symmetric", align);
        fill(small[i], 24, me, (unsigned)i);
        exchange_and_check(big[i], n, (unsigned)i);
    }
    for (int i = 0; i < N; i++) {
        size_t bad = first_bad(small[i], 24, me, (unsigned)i);
        CHECK(bad == 24, "small block %d changed at byte %zu", i, bad);
        shmem_free(big[i]);
        shmem_free(small[i]);
    }
    shmem_free(anchor);
    if (me == 0) printf("heap_align: %d alignments on %d PEs\n", N, shmem_n_pes());
    shmem_finalize();
    return 0;
}
