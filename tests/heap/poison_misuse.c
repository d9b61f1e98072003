/* poison_misuse.c - a program that misuses a symmetric block on purpose.
   Built with -DSHMALLOC_POISON, the misuse must be reported by the tool:
   AddressSanitizer in an ASan build, Valgrind's memcheck otherwise.
   tests/checks/poison_check.sh runs every mode and checks the report.
   Correct use, a core's region reused after shmalloc_tlsf_destroy
   included, must run clean.

       poison_misuse ok | use-after-free | overflow | overflow-read
*/
#include "transports/shmalloc_pthreads.h"

#include <stdio.h>
#include <string.h>

static const char *mode;
static volatile char sink;

static void pe_main(void *arg)
{
    char *p = shmem_malloc(40), *q;
    (void)arg;
    memset(p, 1, 40);
    if (!strcmp(mode, "overflow")) p[40] = 2;          /* one byte past the request */
    shmem_free(p);
    if (!strcmp(mode, "use-after-free")) p[24] = 3;     /* freed block's payload */
    q = shmem_malloc(4000);
    memset(q, 4, 4000);
    if (!strcmp(mode, "overflow-read")) sink = q[4000]; /* read past a larger block */
    shmem_free(q);
    if (shmalloc_check(0) != 0) printf("heap check failed\n");
}

/* A core's region is the caller's again once the core is destroyed:
   every byte may be written, the free blocks it marked included. */
static int reuse_region(void)
{
    static long double region[(1 << 16) / sizeof(long double)]; /* 16-byte aligned */
    shmalloc_tlsf *t = shmalloc_tlsf_create(region, sizeof region);
    void *p = t ? shmalloc_tlsf_malloc(t, 100) : NULL;
    if (!p || shmalloc_tlsf_free(t, p) != SHMALLOC_TLSF_OK) return 1;
    shmalloc_tlsf_destroy(t);
    memset(region, 5, sizeof region);
    return 0;
}

int main(int argc, char **argv)
{
    mode = argc > 1 ? argv[1] : "ok";
    if (shmalloc_pthreads_run(1, (size_t)1 << 20, pe_main, NULL) || reuse_region()) return 1;
    printf("poison_misuse %s: finished without a report\n", mode);
    return 0;
}
