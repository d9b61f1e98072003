/* Random calls through the SHMEM names: contents, alignment and a
   consistent heap after every call, each synchronising once. */
#include "test_support.h"

/* ---- randomized calls through the SHMEM names ---------------------------- */

typedef struct model_block {
    unsigned char *p;
    size_t size, align;
    unsigned tag;
} model_block;

#define MODEL_MAX 512
static model_block live[MODEL_MAX];
static size_t n_live;

/* calloc (op 0), align (op 3) or malloc of s bytes, synchronising once;
   0 when it failed as it may, out of memory. */
static int random_allocation(int i, unsigned op, uint64_t x, size_t s, int before)
{
    size_t a = op == 3 ? (size_t)32 << ((x >> 20) % 8) : 16;
    unsigned char *p = op == 0   ? shmem_calloc(1, s)
                       : op == 3 ? shmem_align(a, s)
                                 : shmem_malloc(s);
    cr_assert_eq(syncs() - before, 1, "op %d: allocation synchronised %d times", i, syncs() - before);
    if (!p) {
        cr_assert(malloc_error == SHMEM_MALLOC_FAIL, "op %d: %ld", i, malloc_error);
        return 0;
    }
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert(((uintptr_t)p & (a - 1)) == 0);
    if (op == 0)
        for (size_t k = 0; k < s; k++)
            cr_assert(p[k] == 0, "op %d: calloc byte %zu not zero", i, k);
    live[n_live] = (model_block){p, s, a, (unsigned)i};
    fill_pattern(p, s, live[n_live++].tag);
    return 1;
}

/* A realloc to s bytes keeps contents and alignment; 0 when it failed,
   leaving the block as it was. */
static int random_realloc(int i, uint64_t x, size_t s)
{
    model_block *b = &live[(size_t)(x >> 32) % n_live];
    unsigned char *p = shmem_realloc(b->p, s);
    if (!p) {
        cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED, "op %d: %ld", i, malloc_error);
        cr_assert(check_pattern(b->p, b->size, b->tag), "op %d: failed realloc broke it", i);
        return 0;
    }
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    b->p = p;
    cr_assert(check_pattern(p, s < b->size ? s : b->size, b->tag), "op %d: realloc lost contents", i);
    cr_assert(((uintptr_t)p & (b->align - 1)) == 0, "op %d: alignment lost", i);
    b->size = s;
    b->tag = (unsigned)i;
    fill_pattern(p, s, b->tag);
    return 1;
}

/* A free of an intact block, synchronising once. */
static void random_free(int i, uint64_t x, int before)
{
    size_t k = (size_t)(x >> 32) % n_live;
    cr_assert(check_pattern(live[k].p, live[k].size, live[k].tag), "op %d: block overwritten", i);
    shmem_free(live[k].p);
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    cr_assert_eq(syncs() - before, 1);
    live[k] = live[--n_live];
}

/* One call drawn from x; the heap checker after each that changed the heap. */
static void random_call(int i, uint64_t x)
{
    unsigned op = (unsigned)(x % 10);
    size_t s = 1 + (size_t)((x >> 8) % (1u << (1 + (x >> 40) % 14)));
    int before = syncs(), changed = 1;
    malloc_error = -99;
    if (n_live == 0 || (op < 4 && n_live < MODEL_MAX))
        changed = random_allocation(i, op, x, s, before);
    else if (op < 7)
        changed = random_realloc(i, x, s);
    else
        random_free(i, x, before);
    if (changed)
        cr_assert(shmalloc_check(-1) == 0, "op %d: heap inconsistent", i);
}

Test(shmem_stress, random_shmem_calls_keep_contents_alignment_and_a_consistent_heap,
     .timeout = 60)
{
    uint64_t x = 0x853c49e6748fea9bu;
    make_counting_heap(2 * MIB, 1);
    for (int i = 0; i < 8000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        random_call(i, x);
    }
    cr_assert_eq(heap_counters(shmalloc_current()).used_blocks, n_live);
    assert_heap_ok();
}
