/* Random calls through the SHMEM names: contents, alignment and a
   consistent heap after every call, each synchronising once. */
#include "test_support.h"

/* ---- randomized calls through the SHMEM names ---------------------------- */

typedef struct model_block {
    unsigned char *p;
    size_t size, align;
    unsigned tag;
} model_block;

Test(shmem_stress, random_shmem_calls_keep_contents_alignment_and_a_consistent_heap,
     .timeout = 60)
{
    static model_block live[512];
    size_t n = 0;
    uint64_t x = 0x853c49e6748fea9bu;
    make_counting_heap(2 * MIB, 1);
    for (int i = 0; i < 8000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned op = (unsigned)(x % 10);
        size_t s = 1 + (size_t)((x >> 8) % (1u << (1 + (x >> 40) % 14)));
        int before = syncs();
        malloc_error = -99;
        if (n == 0 || (op < 4 && n < 512)) {
            size_t a = op == 3 ? (size_t)32 << ((x >> 20) % 8) : 16;
            unsigned char *p = op == 0   ? shmem_calloc(1, s)
                               : op == 3 ? shmem_align(a, s)
                                         : shmem_malloc(s);
            cr_assert_eq(syncs() - before, 1, "op %d: allocation synchronised %d times", i,
                         syncs() - before);
            if (!p) {
                cr_assert(malloc_error == SHMEM_MALLOC_FAIL, "op %d: %ld", i, malloc_error);
                continue;
            }
            cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
            cr_assert(((uintptr_t)p & (a - 1)) == 0);
            if (op == 0)
                for (size_t k = 0; k < s; k++)
                    cr_assert(p[k] == 0, "op %d: calloc byte %zu not zero", i, k);
            live[n] = (model_block){p, s, a, (unsigned)i};
            fill_pattern(p, s, live[n++].tag);
        } else if (op < 7) {
            size_t k = (size_t)(x >> 32) % n;
            unsigned char *p = shmem_realloc(live[k].p, s);
            if (!p) {
                cr_assert_eq(malloc_error, SHMEM_MALLOC_REALLOC_FAILED, "op %d: %ld", i,
                             malloc_error);
                cr_assert(check_pattern(live[k].p, live[k].size, live[k].tag), "op %d: failed realloc broke it", i);
                continue;
            }
            cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
            live[k].p = p;
            cr_assert(check_pattern(p, s < live[k].size ? s : live[k].size, live[k].tag),
                      "op %d: realloc lost contents", i);
            cr_assert(((uintptr_t)p & (live[k].align - 1)) == 0, "op %d: alignment lost", i);
            live[k].size = s;
            live[k].tag = (unsigned)i;
            fill_pattern(p, s, live[k].tag);
        } else {
            size_t k = (size_t)(x >> 32) % n;
            cr_assert(check_pattern(live[k].p, live[k].size, live[k].tag), "op %d: block overwritten", i);
            shmem_free(live[k].p);
            cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
            cr_assert_eq(syncs() - before, 1);
            live[k] = live[--n];
        }
        cr_assert(shmalloc_check(-1) == 0, "op %d: heap inconsistent", i);
    }
    cr_assert_eq(heap_counters(shmalloc_current()).used_blocks, n);
    assert_heap_ok();
}
