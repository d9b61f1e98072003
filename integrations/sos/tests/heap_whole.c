/* SHMEM_SYMMETRIC_SIZE is what a program can allocate: with a 16 MiB heap,
   one 16 MiB block fits (the allocator's own overhead is not taken from
   it), and a block of twice that is refused on every PE. */
#include "sos_check.h"

#define MIB ((size_t)1 << 20)

int main(void)
{
    setenv("SHMEM_SYMMETRIC_SIZE", "16M", 1); /* before shmem_init reads it */
    shmem_init();
    int me = shmem_my_pe();
    unsigned char *p = shmem_malloc(16 * MIB);
    CHECK(same_on_every_pe(p != NULL), "shmem_malloc(16 MiB) differs between PEs");
    CHECK(p != NULL, "shmem_malloc(16 MiB) failed on a 16 MiB heap");
    memset(p, 0x5a, 16 * MIB);                 /* every byte is ours */
    exchange_and_check(p, 4096, 1);
    exchange_and_check(p + 16 * MIB - 4096, 4096, 2);
    shmem_free(p);
    p = shmem_malloc(32 * MIB);
    CHECK(p == NULL, "shmem_malloc(32 MiB) succeeded on a 16 MiB heap");
    p = shmem_malloc(16 * MIB); /* and the whole heap is free again */
    CHECK(p != NULL, "shmem_malloc(16 MiB) after a failure");
    shmem_free(p);
    if (me == 0) printf("heap_whole: 16 MiB of a 16 MiB heap on %d PEs\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
