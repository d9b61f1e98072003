/* A bad shmem_free (a block freed twice, a pointer inside a block) must
   not damage the heap: the program goes on, the blocks it holds keep their
   contents, and new allocations stay symmetric.  OpenSHMEM leaves this
   undefined; an allocator that knows every block start can refuse it. */
#include "sos_check.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    void *anchor = shmem_malloc(16);
    unsigned char *keep = shmem_malloc(1000), *a = shmem_malloc(200), *b = shmem_malloc(300);
    CHECK(keep && a && b, "allocation");
    fill(keep, 1000, me, 7);
    shmem_free(a);
    shmem_free(a);        /* twice */
    shmem_free(b + 16);   /* inside a block */
    size_t bad = first_bad(keep, 1000, me, 7);
    CHECK(bad == 1000, "a live block changed at byte %zu", bad);
    for (int i = 0; i < 50; i++) {
        void *p = shmem_malloc(100 + (size_t)i * 10);
        CHECK(p != NULL && same_on_every_pe(offset_from(anchor, p)), "allocation %d after the bad frees", i);
        exchange_and_check(p, 100, (unsigned)i);
        shmem_free(p);
    }
    shmem_free(b);
    shmem_free(keep);
    shmem_free(anchor);
    if (me == 0) printf("heap_bad_free: the heap survived on %d PEs\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
