/* largest_request.h - shmalloc_info's promise on a heap that grows, on
   whichever transport declared the SHMEM names before this include (the
   pthreads tests and the PMIx worker run the same steps): a malloc of n
   bytes succeeds without growing exactly when n <= largest_request.

   With the same seed on every PE: random collective mallocs, aligned
   mallocs, reallocs and frees, the promise checked every fourth step;
   then every other block freed, the heap grown to its maximum
   (SHMALLOC_HEAP_MAX), and blocks of largest_request, now and then a
   little less, until nothing is free; then every block freed.  `fail`
   records a failed check, printf-style, with the line it was made on. */
#include <stdint.h>
#include <string.h>

typedef void (*largest_fail)(int line, const char *fmt, ...);

#define LARGEST_LIVE 128    /* blocks of the random calls */
#define LARGEST_BLOCKS 4096 /* and of the fill, at most */

/* xorshift64*: the same sequence on every PE. */
static uint64_t largest_rng(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1du;
}

static shmalloc_info largest_info(largest_fail fail)
{
    shmalloc_info i;
    memset(&i, 0, sizeof i);
    if (shmemx_heap_info(&i) != 0) fail(__LINE__, "shmemx_heap_info fails");
    return i;
}

/* malloc(largest_request less `less`) succeeds without growing: the
   block, or NULL after a failed check. */
static void *largest_served(size_t less, largest_fail fail)
{
    shmalloc_info i = largest_info(fail);
    size_t n = i.largest_request > less ? i.largest_request - less : i.largest_request;
    void *p = shmem_malloc(n);
    if (!p)
        fail(__LINE__, "malloc(%zu) fails (%ld), largest_request %zu, %zu bytes free", n, malloc_error,
             i.largest_request, i.free);
    if (largest_info(fail).heap_size != i.heap_size) fail(__LINE__, "malloc(%zu) grew the heap", n);
    return p;
}

/* malloc(largest_request + 1) grows the heap, or fails when it cannot. */
static void largest_one_more(int can_grow, largest_fail fail)
{
    shmalloc_info i = largest_info(fail);
    void *p = shmem_malloc(i.largest_request + 1);
    if (p && largest_info(fail).heap_size == i.heap_size)
        fail(__LINE__, "malloc(%zu) succeeds without growing, above largest_request", i.largest_request + 1);
    if (!can_grow && (p || malloc_error != SHMEM_MALLOC_FAIL))
        fail(__LINE__, "malloc(%zu) on a heap at its maximum: %p, malloc_error %ld", i.largest_request + 1, p,
             malloc_error);
    shmem_free(p);
}

/* One random collective call, the same on every PE: half the sizes from
   1 KiB to 2 KiB, where a list holds blocks of several sizes. */
static void largest_step(uint64_t *s, void **live, size_t *nlive)
{
    size_t k = *nlive ? largest_rng(s) % *nlive : 0, n = 1 + largest_rng(s) % ((size_t)1 << (largest_rng(s) % 17));
    unsigned op = (unsigned)(largest_rng(s) % 10);
    if (largest_rng(s) % 2) n = 1024 + largest_rng(s) % 1024;
    void *p;
    if (*nlive && (op < 3 || *nlive == LARGEST_LIVE)) {
        shmem_free(live[k]);
        live[k] = live[--*nlive];
    } else if (*nlive && op < 5) {
        if ((p = shmem_realloc(live[k], n)) != NULL) live[k] = p;
    } else if ((p = op < 7 ? shmem_malloc(n) : shmem_align((size_t)32 << largest_rng(s) % 6, n)) != NULL) {
        live[(*nlive)++] = p;
    }
}

static void largest_request_run(uint64_t seed, largest_fail fail)
{
    void *b[LARGEST_BLOCKS]; /* on the PE's stack: PEs may be threads */
    uint64_t s = seed;
    size_t nlive = 0, step;
    shmalloc_info i;
    for (step = 0; step < 150; step++) {
        largest_step(&s, b, &nlive);
        if (step % 4) continue;
        largest_one_more(1, fail);
        shmem_free(largest_served(0, fail));
    }
    for (step = 0; step < nlive; step++) /* every other block: free ones between used ones */
        if (step % 2) shmem_free(b[step]), b[step] = NULL;
    i = largest_info(fail);
    if (i.heap_max - i.heap_size > 128) shmem_free(shmem_malloc(i.heap_max - i.heap_size - 64)); /* grows it all */
    if (largest_info(fail).heap_size != i.heap_max) fail(__LINE__, "the heap did not grow to its maximum");
    for (step = 0; largest_info(fail).largest_request && nlive < LARGEST_BLOCKS; step++) {
        largest_one_more(0, fail);
        if (!(b[nlive] = largest_served(step % 2 ? largest_rng(&s) % 256 : 0, fail))) break;
        nlive++;
    }
    if (largest_info(fail).free != 0) fail(__LINE__, "%zu bytes free that no malloc serves", largest_info(fail).free);
    if (shmalloc_check(-1) != 0) fail(__LINE__, "shmalloc_check(-1) fails");
    while (nlive) shmem_free(b[--nlive]);
}
