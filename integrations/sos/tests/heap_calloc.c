/* shmem_calloc: zeroed even over memory that held other bytes; an
   overflowing count * size gives NULL on every PE. */
#include "sos_check.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    for (int round = 0; round < 4; round++) {
        size_t n = (size_t)4096 << (round * 3);
        unsigned char *p = shmem_malloc(n);
        CHECK(p != NULL, "shmem_malloc(%zu)", n);
        memset(p, 0xa5, n);
        shmem_free(p);
        unsigned char *z = shmem_calloc(n / 8, 8);
        CHECK(z != NULL, "shmem_calloc(%zu, 8)", n / 8);
        for (size_t i = 0; i < n; i++) CHECK(z[i] == 0, "byte %zu of shmem_calloc(%zu, 8) is %#x", i, n / 8, z[i]);
        exchange_and_check(z, n, (unsigned)round);
        shmem_free(z);
    }
    CHECK(shmem_calloc(SIZE_MAX / 2 + 1, 2) == NULL, "overflowing shmem_calloc succeeded");
    CHECK(shmem_calloc((size_t)1 << 33, (size_t)1 << 33) == NULL, "overflowing shmem_calloc succeeded");
    CHECK(shmem_calloc(0, 8) == NULL && shmem_calloc(8, 0) == NULL, "shmem_calloc of 0 bytes");
    void *p = shmem_calloc(10, 10); /* the heap still serves */
    CHECK(p != NULL, "shmem_calloc(10, 10) after the failures");
    shmem_free(p);
    if (me == 0) printf("heap_calloc: ok on %d PEs\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
