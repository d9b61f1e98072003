/* White-box test of the TLSF mapping: the list key (shm__list_key) and
   mapping insert, its fl/sl form, against the size classes' bounds worked
   out here by other arithmetic, and the lists' bitmap bits and the fast
   search against mapping insert, for every first-level and second-level
   class.
   The mapping is private, so this file expands the implementation itself;
   the Makefile builds it once for each SHMALLOC_SL_LOG2. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* the TSan test runner uses mkstemp, strsignal */
#endif
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"
#include "criterion_shim.h" /* Criterion, or its stand-in under TSan */

static char region[1 << 20] __attribute__((aligned(4096)));

/* The least size of class fl/sl, from its definition: the power of two
   2^(fl + SHM__MIN_LOG2) split into SHM__SL_COUNT equal steps.  sl may be
   SHM__SL_COUNT, which gives the least size of class fl + 1. */
static size_t class_least(unsigned fl, unsigned sl)
{
    return ((size_t)SHM__SL_COUNT + sl) << (fl + SHM__MIN_LOG2) >> SHMALLOC_SL_LOG2;
}

static size_t class_most(unsigned fl, unsigned sl) { return class_least(fl, sl + 1) - 1; }

/* The block sizes (multiples of 16) of class fl/sl; 0 when it has none. */
static int class_blocks(unsigned fl, unsigned sl, size_t *first, size_t *last)
{
    *first = (class_least(fl, sl) + 15) & ~(size_t)15;
    *last = class_most(fl, sl) & ~(size_t)15;
    return *first <= *last;
}

static void expect_insert(size_t size, unsigned fl, unsigned sl)
{
    unsigned f, s;
    shm__mapping_insert(size, &f, &s);
    cr_assert(f == fl && s == sl, "mapping insert of %zu: list %u/%u, expected %u/%u", size, f, s, fl, sl);
    cr_assert(shm__list_key(size) - SHM__KEY_BIAS == shm__list_index(fl, sl),
              "key of %zu: list %zu, expected %u/%u", size, shm__list_key(size) - SHM__KEY_BIAS, fl, sl);
}

Test(mapping, the_minimum_block_is_in_list_0_and_smaller_sizes_in_class_0)
{
    cr_assert_eq(class_least(0, 0), SHM__MIN_BLOCK);
    expect_insert(SHM__MIN_BLOCK, 0, 0);
    cr_assert_eq(shm__list_key(SHM__MIN_BLOCK), SHM__KEY_BIAS);
    for (size_t size = 0; size < SHM__MIN_BLOCK; size++) {
        unsigned fl, sl;
        shm__mapping_insert(size, &fl, &sl);
        cr_assert(fl == 0 && sl == size >> (SHM__MIN_LOG2 - SHMALLOC_SL_LOG2), "size %zu maps to %u/%u", size, fl,
                  sl);
    }
}

/* Every class's least and greatest size, and its first and last block
   size, map to it, and the size below its least to the class before it:
   the key and its fl/sl form are right on every boundary. */
Test(mapping, every_class_holds_the_sizes_between_its_bounds_in_both_forms)
{
    unsigned fl, sl, pfl = 0, psl = 0;
    for (fl = 0; fl < SHM__FL_COUNT; fl++)
        for (sl = 0; sl < SHM__SL_COUNT; sl++) {
            size_t least = class_least(fl, sl), most = class_most(fl, sl), first, last;
            expect_insert(least, fl, sl);
            expect_insert(most, fl, sl);
            if (least > SHM__MIN_BLOCK) expect_insert(least - 1, pfl, psl);
            if (class_blocks(fl, sl, &first, &last)) {
                expect_insert(first, fl, sl);
                expect_insert(last, fl, sl);
            }
            pfl = fl;
            psl = sl;
        }
    cr_assert_eq(class_most(SHM__FL_COUNT - 1, SHM__SL_COUNT - 1), ((size_t)1 << (SHMALLOC_MAX_LOG2 + 2)) - 1);
}

Test(mapping, every_block_size_to_1_MiB_lies_between_its_class_bounds)
{
    for (size_t size = SHM__MIN_BLOCK; size <= ((size_t)1 << 20); size += 16) {
        unsigned fl, sl;
        shm__mapping_insert(size, &fl, &sl);
        cr_assert(class_least(fl, sl) <= size && size <= class_most(fl, sl), "size %zu: list %u/%u holds %zu..%zu",
                  size, fl, sl, class_least(fl, sl), class_most(fl, sl));
        cr_assert(shm__list_key(size) - SHM__KEY_BIAS == shm__list_index(fl, sl), "size %zu", size);
    }
}

/* The index, the key and the bitmap bits a list's sentinel keeps
   name the same list, for every list of a heap. */
Test(mapping, every_list_is_found_by_its_index_its_sizes_and_its_bitmap_bits)
{
    shmalloc_tlsf *t = shmalloc_tlsf_create(region, sizeof region);
    unsigned fl, sl;
    cr_assert(t != NULL);
    cr_assert(t->fl_count >= 10);
    for (fl = 0; fl < t->fl_count; fl++)
        for (sl = 0; sl < SHM__SL_COUNT; sl++) {
            shm__block *list = &t->lists[fl][sl];
            size_t first, last, bits = shm__list_bits(list);
            cr_assert(shm__list(t, shm__list_index(fl, sl)) == list);
            cr_assert(shm__bits_fl(bits) == fl && shm__bits_sl(bits) == 1u << sl, "list %u/%u: bits 0x%zx", fl, sl,
                      bits);
            if (!class_blocks(fl, sl, &first, &last)) continue;
            cr_assert(shm__list_for(t, first) == list && shm__list_for(t, last) == list, "list %u/%u", fl, sl);
        }
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
}

/* The block sizes to try as requests: each class's first and last. */
static size_t request_sizes(size_t *out, size_t most)
{
    size_t n = 0, first, last;
    for (unsigned fl = 0; fl < SHM__FL_COUNT; fl++)
        for (unsigned sl = 0; sl < SHM__SL_COUNT; sl++) {
            if (!class_blocks(fl, sl, &first, &last) || first > most) continue;
            out[n++] = first;
            if (last != first && last <= most) out[n++] = last;
        }
    return n;
}

/* The fast search (the head of mapping insert's list, then the bitmaps
   from the list above it) against the plain mapping: with one free block
   in the heap, of the first or last size of any class, a request finds it
   exactly when it fits, in the list mapping insert gives. */
Test(mapping, a_request_finds_a_lone_free_block_exactly_when_it_fits)
{
    static size_t sizes[2 * SHM__FL_COUNT * SHM__SL_COUNT];
    shmalloc_tlsf *t = shmalloc_tlsf_create(region, sizeof region);
    size_t n, i, j;
    cr_assert(t != NULL);
    n = request_sizes(sizes, t->capacity / 2);
    cr_assert(n > 50);
    for (i = 0; i < n; i++) {
        void *a = shmalloc_tlsf_malloc(t, sizes[i] - 8 - SHM__REDZONE), *guard = shmalloc_tlsf_malloc(t, 1);
        unsigned fl, sl;
        cr_assert(a && guard);
        cr_assert_eq(shm__size(shm__of_user(a)), sizes[i]);
        cr_assert(shmalloc_tlsf_free(t, a) == SHMALLOC_TLSF_OK); /* a listed free block: guard keeps it off the top */
        shm__mapping_insert(sizes[i], &fl, &sl);
        for (j = 0; j < n; j++) {
            shm__block *list = NULL;
            int found = shm__find_list(t, sizes[j], &list);
            cr_assert(found == (sizes[j] <= sizes[i]), "request %zu, free block %zu: %s", sizes[j], sizes[i],
                      found ? "found" : "not found");
            cr_assert(!found || list == &t->lists[fl][sl], "request %zu, free block %zu: wrong list", sizes[j],
                      sizes[i]);
        }
        cr_assert(shmalloc_tlsf_free(t, guard) == SHMALLOC_TLSF_OK);
        cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    }
}
