/* shmalloc.h as allocbench sees it, with the core's metadata kept apart:
   `make bench-cest METADATA=separate` points cest.sh here.  The adapter's
   shmalloc_tlsf_create makes a separate core over the same region, whose
   realloc copies with memcpy (host memory). */
#include "../../shmalloc.h"
#include <string.h>

static int bench_copy(void *user, void *dst, const void *src, size_t n)
{
    (void)user;
    memcpy(dst, src, n);
    return 0;
}
static const shmalloc_memops bench_memops = {NULL, NULL, bench_copy};
#define shmalloc_tlsf_create(mem, bytes) shmalloc_tlsf_create_separate((mem), (bytes), (bytes), &bench_memops)
