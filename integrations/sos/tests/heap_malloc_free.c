/* shmem_malloc and shmem_free: blocks of many sizes are symmetric (same
   offset on every PE), aligned, and hold what a neighbour puts into them. */
#include "sos_check.h"

int main(void)
{
    static const size_t sizes[] = {1, 8, 15, 16, 17, 100, 1000, 4096, 4097, 65536, 100000, 1 << 20, 3 << 20};
    enum { N = sizeof sizes / sizeof sizes[0] };
    void *p[N];
    shmem_init();
    void *anchor = shmem_malloc(64);
    CHECK(anchor != NULL, "shmem_malloc(64)");
    for (int i = 0; i < N; i++) {
        p[i] = shmem_malloc(sizes[i]);
        CHECK(p[i] != NULL, "shmem_malloc(%zu)", sizes[i]);
        CHECK(((uintptr_t)p[i] & 15) == 0, "shmem_malloc(%zu) = %p is not 16-byte aligned", sizes[i], p[i]);
        CHECK(same_on_every_pe(offset_from(anchor, p[i])), "shmem_malloc(%zu) is not symmetric", sizes[i]);
    }
    for (int i = 0; i < N; i++) exchange_and_check(p[i], sizes[i], (unsigned)i);
    for (int i = 0; i < N; i += 2) shmem_free(p[i]);
    for (int i = 1; i < N; i += 2) { /* odd blocks survive their neighbours' release */
        exchange_and_check(p[i], sizes[i], 100u + (unsigned)i);
        shmem_free(p[i]);
    }
    shmem_free(NULL); /* nothing */
    shmem_free(anchor);
    CHECK(shmem_malloc(0) == NULL, "shmem_malloc(0) is not NULL");
    if (shmem_my_pe() == 0) printf("heap_malloc_free: %d sizes on %d PEs\n", N, shmem_n_pes());
    shmem_finalize();
    return 0;
}
