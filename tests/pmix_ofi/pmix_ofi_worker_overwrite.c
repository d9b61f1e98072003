/* pmix_ofi_worker_overwrite.c - the overwrite scenario: on 2 PEs, PE 1
   puts 16, 32 and 64 bytes past the end of a block on PE 0, as a stray
   put from a peer would, through the transport's put (a direct copy on
   one node, or libfabric RMA).  SHMALLOC_METADATA says what must follow:
   separate, nothing of the allocator's is in the heap, so every later
   call and the checker go as if the put had not happened; inline, the
   put lands on the next block's header, so the collective free of that
   block and a realloc that would grow into it fail on both PEs with
   SHMEMX_MALLOC_CORRUPT_HEAP, nothing crashes, other blocks come and go,
   and once the bytes are put back both blocks free. */
#include "pmix_ofi_worker.h"

#include <stdlib.h>
#include <string.h>

static void separate_round(size_t over)
{
    char *a = (char *)shmem_malloc(100), *b = (char *)shmem_malloc(100), *c;
    unsigned char junk[64];
    CHECK(a != NULL && b != NULL);
    if (!a || !b) return;
    memset(junk, 0xee, sizeof junk);
    shmem_barrier_all();
    if (me == 1) {
        shmem_putmem(a + 100, junk, over, 0); /* into PE 0's heap, past a's end */
        shmem_quiet();
    }
    shmem_barrier_all();
    shmem_free(b); /* the block whose start the put reached */
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmem_free(a);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    c = (char *)shmem_malloc(200); /* a's and b's room, merged */
    CHECK(c == a);
    CHECK_SYMMETRIC(c);
    shmem_free(c);
    CHECK_EQ(shmalloc_check(0), 0);
}

static void inline_round(size_t over)
{
    char *a = (char *)shmem_malloc(100), *b = (char *)shmem_malloc(100), *c;
    size_t end = shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(shmalloc_current()), a);
    unsigned char saved[64], ones[64];
    CHECK(a != NULL && b != NULL);
    if (!a || !b) return;
    memset(ones, 0xff, sizeof ones);
    if (me == 1) {
        shmem_getmem(saved, a + end, over, 0);
        shmem_putmem(a + end, ones, over, 0); /* over b's header on PE 0 */
        shmem_quiet();
    }
    shmem_barrier_all();
    shmem_free(b);
    CHECK_EQ(malloc_error, SHMEMX_MALLOC_CORRUPT_HEAP);
    CHECK(shmem_realloc(a, 5000) == NULL);
    CHECK_EQ(malloc_error, SHMEMX_MALLOC_CORRUPT_HEAP);
    CHECK_EQ(shmalloc_check(-1) != 0, me == 0);
    c = (char *)shmem_malloc(3000);
    CHECK(c != NULL);
    CHECK_SYMMETRIC(c);
    shmem_free(c);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    if (me == 1) {
        shmem_putmem(a + end, saved, over, 0);
        shmem_quiet();
    }
    shmem_barrier_all();
    shmem_free(b);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    shmem_free(a);
    CHECK_EQ(malloc_error, SHMEM_MALLOC_OK);
    CHECK_EQ(shmalloc_check(0), 0);
}

void scenario_overwrite(void)
{
    static const size_t overs[] = {16, 32, 64};
    const char *mode = getenv("SHMALLOC_METADATA");
    size_t baseline = used_blocks(), i;
    if (npes != 2 || !mode) {
        fail(__LINE__, "overwrite needs 2 PEs and SHMALLOC_METADATA, not %d PEs and %s", npes, mode ? mode : "none");
        return;
    }
    for (i = 0; i < sizeof overs / sizeof overs[0]; i++) {
        if (strcmp(mode, "separate") == 0) separate_round(overs[i]);
        else inline_round(overs[i]);
    }
    CHECK_EQ(used_blocks(), baseline);
}
