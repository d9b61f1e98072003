/* shmem_realloc: NULL acts as malloc, 0 frees, growing and shrinking keep
   the contents, and the result is symmetric. */
#include "sos_check.h"

int main(void)
{
    static const size_t steps[] = {10, 100, 5000, 64, 70000, 1 << 20, 33, 4096};
    shmem_init();
    int me = shmem_my_pe();
    void *anchor = shmem_malloc(16);
    unsigned char *p = shmem_realloc(NULL, 24);
    CHECK(p != NULL, "shmem_realloc(NULL, 24)");
    CHECK(same_on_every_pe(offset_from(anchor, p)), "realloc(NULL) is not symmetric");
    size_t n = 24;
    fill(p, n, me, 1);
    void *wall = shmem_malloc(32); /* a used neighbour, so some steps must move */
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        unsigned char *q = shmem_realloc(p, steps[i]);
        CHECK(q != NULL, "shmem_realloc(p, %zu)", steps[i]);
        size_t keep = steps[i] < n ? steps[i] : n;
        size_t bad = first_bad(q, keep, me, 1);
        CHECK(bad == keep, "realloc to %zu lost byte %zu of %zu", steps[i], bad, keep);
        CHECK(same_on_every_pe(offset_from(anchor, q)), "realloc to %zu is not symmetric", steps[i]);
        p = q;
        n = steps[i];
        fill(p, n, me, 1);
        exchange_and_check(p, n, 50u + (unsigned)i);
        fill(p, n, me, 1);
    }
    CHECK(shmem_realloc(p, 0) == NULL, "shmem_realloc(p, 0) is not NULL");
    shmem_free(wall);
    p = shmem_malloc(100); /* the heap still serves */
    CHECK(p != NULL && same_on_every_pe(offset_from(anchor, p)), "malloc after realloc(p, 0)");
    shmem_free(p);
    shmem_free(anchor);
    if (me == 0) printf("heap_realloc: ok on %d PEs\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
