/* integrations/sos/shmalloc_sos.c driven as a runtime's heap layer drives
   it: a region mapped with room for the heap, its overhead and the
   runtime's own 1 MiB, set up once; every dl* call; bad pointers; the
   whole region in one block; the check at the end.  The adapter expands
   the header privately; the test's helpers use libshmalloc. */
#include "test_support.h"

#include "integrations/sos/shmalloc_sos.h"

#define SYMMETRIC_SIZE (16 * MIB)
#define RUNTIME_OVERHEAD MIB /* what the runtime adds for its own objects */

static char said[4096];
static int said_lines;
static void keep(const char *line)
{
    size_t n = strlen(said);
    snprintf(said + n, sizeof said - n, "%s\n", line);
    said_lines++;
}

/* The region as the runtime maps it, the heap laid out over all of it. */
static size_t region_length(void) { return SYMMETRIC_SIZE + RUNTIME_OVERHEAD + shmalloc_sos_overhead(SYMMETRIC_SIZE + RUNTIME_OVERHEAD); }
static unsigned char *set_up(void)
{
    unsigned char *base = map_aligned(region_length(), 2 * MIB);
    said[0] = '\0';
    said_lines = 0;
    shmalloc_sos_set_message(keep);
    cr_assert_eq(shmalloc_sos_init(base, region_length()), 0, "init: %s", said);
    return base;
}

static void assert_intact_at_fini(void)
{
    cr_assert_eq(shmalloc_sos_fini(), 0, "fini found damage: %s", said);
}

Test(sos_setup, a_region_too_small_is_refused_with_a_message)
{
    static unsigned char tiny[32] __attribute__((aligned(16)));
    shmalloc_sos_set_message(keep);
    cr_assert_eq(shmalloc_sos_init(tiny, sizeof tiny), -1);
    cr_assert(strstr(said, "cannot lay out a symmetric heap of 32 bytes"), "said: %s", said);
}

Test(sos_setup, the_whole_symmetric_size_and_the_runtime_overhead_fit_in_one_block)
{
    set_up();
    size_t whole = SYMMETRIC_SIZE + RUNTIME_OVERHEAD;
    unsigned char *p = dlmalloc(whole);
    cr_assert(p != NULL, "dlmalloc(%zu) on a fresh heap of %zu bytes", whole, region_length());
    memset(p, 0x5a, whole);
    cr_assert_null(dlmalloc(16), "a second block fits beside the whole region");
    dlfree(p);
    p = dlmalloc(whole);
    cr_assert(p != NULL, "the whole region again after its free");
    dlfree(p);
    cr_assert_eq(said_lines, 0, "said: %s", said);
    assert_intact_at_fini();
}

Test(sos_calls, malloc_calloc_realloc_and_free_keep_contents_and_zero)
{
    set_up();
    unsigned char *dirty = dlmalloc(8192);
    memset(dirty, 0xa5, 8192);
    dlfree(dirty);
    unsigned char *z = dlcalloc(1024, 8);
    cr_assert(z != NULL);
    for (size_t i = 0; i < 8192; i++) cr_assert_eq(z[i], 0, "byte %zu of calloc's block", i);
    unsigned char *p = dlmalloc(1000);
    fill_pattern(p, 1000, 1);
    p = dlrealloc(p, 300000);
    cr_assert(p != NULL && check_pattern(p, 1000, 1), "grown block lost its bytes");
    p = dlrealloc(p, 40);
    cr_assert(p != NULL && check_pattern(p, 40, 1), "shrunk block lost its bytes");
    unsigned char *q = dlrealloc(NULL, 64);
    cr_assert(q != NULL, "realloc(NULL, n) allocates");
    cr_assert_null(dlrealloc(q, 0), "realloc(p, 0) frees");
    dlfree(p);
    dlfree(z);
    dlfree(NULL);
    cr_assert_eq(said_lines, 0, "said: %s", said);
    assert_intact_at_fini();
}

Test(sos_calls, memalign_gives_each_power_of_two_and_refuses_others)
{
    set_up();
    for (size_t a = 1; a <= MIB; a <<= 1) {
        void *p = dlmemalign(a, a + 8);
        cr_assert(p != NULL && (uintptr_t)p % a == 0, "memalign(%zu) gave %p", a, p);
        dlfree(p);
    }
    const size_t bad[] = {0, 3, 24, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(dlmemalign(bad[i], 64), "memalign(%zu)", bad[i]);
        char words[64];
        snprintf(words, sizeof words, "alignment %zu is not a power of two", bad[i]);
        cr_assert(strstr(said, words), "said: %s", said);
    }
    assert_intact_at_fini();
}

Test(sos_calls, calloc_overflow_and_requests_too_large_return_null)
{
    set_up();
    cr_assert_null(dlcalloc(SIZE_MAX / 2, 4));
    cr_assert_null(dlmalloc(region_length()));
    unsigned char *p = dlmalloc(100);
    cr_assert_null(dlrealloc(p, region_length()), "realloc beyond the region");
    cr_assert(p != NULL && dlmalloc(SYMMETRIC_SIZE) != NULL, "the heap serves after the failures");
    assert_intact_at_fini();
}

/* Each refusal leaves the heap as it was: the next block lands where it
   would have without them. */
Test(sos_bad_pointer, double_interior_and_outside_frees_and_reallocs_are_refused)
{
    set_up();
    int on_stack = 0;
    unsigned char *p = dlmalloc(256), *q = dlmalloc(256);
    dlfree(p);
    const struct { int realloc; void *ptr; const char *words; } cases[] = {
        {0, p, "free(%p) ignored, symmetric heap unchanged: block is already free"},
        {0, q + 16, "free(%p) ignored, symmetric heap unchanged: pointer is not the start of a block"},
        {0, &on_stack, "free(%p) ignored, symmetric heap unchanged: pointer is not in the heap"},
        {1, p, "realloc(%p) ignored, symmetric heap unchanged: block is already free"},
        {1, q + 32, "realloc(%p) ignored, symmetric heap unchanged: pointer is not the start of a block"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char words[200];
        snprintf(words, sizeof words, cases[i].words, cases[i].ptr);
        if (cases[i].realloc)
            cr_assert_null(dlrealloc(cases[i].ptr, 512), "case %zu", i);
        else
            dlfree(cases[i].ptr);
        cr_assert(strstr(said, words), "case %zu: wanted \"%s\", said: %s", i, words, said);
    }
    cr_assert_eq(said_lines, 5);
    cr_assert_eq(dlmalloc(256), p, "the freed block is reused as if nothing had happened");
    assert_intact_at_fini();
}

/* The same calls over two regions at different addresses give the same
   offsets: what a runtime with one heap per PE relies on. */
static void random_calls(unsigned char *base, size_t *offsets, size_t n)
{
    void *live[64] = {0};
    rng_seed(99);
    for (size_t i = 0; i < n; i++) {
        size_t k = rng_below(64), size = rng_size(16);
        if (live[k] && rng_below(3) == 0) live[k] = dlrealloc(live[k], size);
        else {
            dlfree(live[k]);
            live[k] = rng_below(4) == 0 ? dlmemalign((size_t)64 << rng_below(8), size) : dlmalloc(size);
        }
        offsets[i] = live[k] ? (size_t)((unsigned char *)live[k] - base) : SIZE_MAX;
    }
}

Test(sos_symmetry, the_same_calls_over_two_regions_give_the_same_offsets)
{
    enum { CALLS = 4000 };
    static size_t first[CALLS], second[CALLS];
    unsigned char *a = set_up();
    random_calls(a, first, CALLS);
    assert_intact_at_fini();
    unsigned char *b = set_up();
    cr_assert(a != b);
    random_calls(b, second, CALLS);
    for (size_t i = 0; i < CALLS; i++) cr_assert_eq(first[i], second[i], "call %zu: offset %zu vs %zu", i, first[i], second[i]);
    assert_intact_at_fini();
}

Test(sos_fini, a_write_over_the_next_blocks_header_is_reported)
{
    set_up();
    unsigned char *p = dlmalloc(64);
    unsigned char *q = dlmalloc(64);
    memset(p, 0xff, (size_t)(q - p)); /* runs over q's header */
    cr_assert_eq(shmalloc_sos_fini(), -1);
    cr_assert(strstr(said, "symmetric heap found inconsistent at shmem_finalize"), "said: %s", said);
    cr_assert(said_lines >= 2, "the checker's finding comes first: %s", said);
}
