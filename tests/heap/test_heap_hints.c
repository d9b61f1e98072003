/* Hints kept with a block: through realloc, only the lasting ones, and
   thousands of blocks through the hint table's growth and removals. */
#include "test_support.h"

/* ---- hints kept with the block --------------------------------------------- */

#define BOTH_HINTS (SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE)

Test(hints, realloc_keeps_the_hints_when_the_block_moves_grows_or_shrinks)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    char *p = shmem_malloc_with_hints(100, BOTH_HINTS), *wall = shmem_malloc(100);
    char *plain = shmem_malloc(100);
    cr_assert(p && wall && plain);
    cr_assert_eq(shmalloc_heap_hints(h, p), BOTH_HINTS);
    cr_assert_eq(shmalloc_heap_hints(h, plain), 0);
    memset(p, 0x3c, 100);
    char *moved = shmem_realloc(p, 5000);
    cr_assert(moved && moved != p, "the block after it is used: it moves");
    cr_assert(moved[99] == 0x3c);
    cr_assert_eq(shmalloc_heap_hints(h, moved), BOTH_HINTS);
    cr_assert_eq(shmalloc_heap_hints(h, p), SHMEM_MALLOC_ALREADY_FREE, "the old block is gone");
    char *shrunk = shmem_realloc(moved, 50);
    cr_assert(shrunk == moved);
    cr_assert_eq(shmalloc_heap_hints(h, shrunk), BOTH_HINTS);
    char *grown = shmem_realloc(shrunk, 20000);
    cr_assert(grown == shrunk, "grows into the free top block");
    cr_assert_eq(shmalloc_heap_hints(h, grown), BOTH_HINTS);
    /* a plain block reusing a freed hinted block's place has no hints */
    shmem_free(grown);
    char *again = shmem_malloc(5000);
    cr_assert(again == grown, "the same offset again");
    cr_assert_eq(shmalloc_heap_hints(h, again), 0);
    cr_assert_eq(shmalloc_heap_hints(h, again + 16), SHMEM_MALLOC_NOT_ALIGNED);
    cr_assert_eq(shmalloc_heap_hints(NULL, again), SHMEMX_MALLOC_NO_HEAP);
    shmem_free(again);
    shmem_free(wall);
    shmem_free(plain);
    assert_heap_ok();
}

Test(hints, only_the_lasting_hints_are_kept)
{
    shmalloc_heap *h = make_counting_heap(MIB, 1);
    char *a = shmem_malloc_with_hints(64, SHMEM_MALLOC_SIGNAL_REMOTE | SHMEMX_MALLOC_NO_BARRIER);
    char *b = shmem_malloc_with_hints(64, 1L << 20);
    char *c = shmem_malloc_with_hints(64, -1L);
    cr_assert(a && b && c);
    cr_assert_eq(shmalloc_heap_hints(h, a), SHMEM_MALLOC_SIGNAL_REMOTE, "no-barrier is the call's, not the block's");
    cr_assert_eq(shmalloc_heap_hints(h, b), 0, "unknown bits are ignored");
    cr_assert_eq(shmalloc_heap_hints(h, c), BOTH_HINTS);
    shmem_free(a);
    shmem_free(b);
    shmem_free(c);
    assert_heap_ok();
}

/* Thousands of hinted blocks grow the table several times; freeing a
   random half removes entries in the middle of probe runs. */
Test(hints, thousands_of_blocks_keep_their_hints_through_table_growth_and_removals)
{
    static char *blocks[3000];
    shmalloc_heap *h = make_counting_heap(4 * MIB, 1);
    uint64_t x = 0x2545f4914f6cdd1du;
    for (int i = 0; i < 3000; i++) {
        blocks[i] = shmem_malloc_with_hints(16 + (size_t)(i % 7) * 16, i % 4);
        cr_assert(blocks[i]);
    }
    for (int i = 0; i < 3000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (x & 1) {
            shmem_free(blocks[i]);
            blocks[i] = NULL;
        }
    }
    for (int i = 0; i < 3000; i++)
        if (blocks[i]) cr_assert_eq(shmalloc_heap_hints(h, blocks[i]), i % 4, "block %d", i);
    for (int i = 0; i < 3000; i++)
        if (blocks[i]) {
            blocks[i] = shmem_realloc(blocks[i], 200 + (size_t)i);
            cr_assert(blocks[i]);
        }
    for (int i = 0; i < 3000; i++)
        if (blocks[i]) {
            cr_assert_eq(shmalloc_heap_hints(h, blocks[i]), i % 4, "block %d after realloc", i);
            shmem_free(blocks[i]);
        }
    cr_assert_eq(heap_counters(h).used_blocks, 0);
    assert_heap_ok();
}
