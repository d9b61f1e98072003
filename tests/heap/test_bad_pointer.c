/* Pointers that are not a block, passed to free, validate and realloc of
   the TLSF core and to shmem_free and shmem_realloc of the symmetric heap:
   one table of cases (how the pointer is made, the code it gets, the words
   of that code's message) and one parameterized test over it.  Each call
   is refused with its code, changes nothing, synchronises once on the
   heap, and the checker passes afterwards.  Then what a bad argument
   prints. */
#include "test_support.h"

enum layer { CORE, HEAP };

/* How a case's pointers are made from the fixture below; k counts 0..count-1. */
enum make {
    MAKE_NULL,
    MAKE_STACK,          /* a local variable */
    MAKE_DATA,           /* a static object */
    MAKE_BEFORE_BASE,    /* 16 and 4096 bytes before the block space */
    MAKE_LOW_ADDRESS,    /* (void *)16 */
    MAKE_TOP_ADDRESS,    /* UINTPTR_MAX */
    MAKE_PAST_END,       /* the end of the block space + 16 k */
    MAKE_FIRST_HEADER,   /* base + k, inside the first block's header */
    MAKE_INTERIOR,       /* a + 16 (k + 1), inside a used block */
    MAKE_FORGED,         /* inside a, after a copy of b's header */
    MAKE_MISALIGNED,     /* a + k + 1 */
    MAKE_JUST_BEFORE,    /* a - 1, a - 8, a - 16 */
    MAKE_FREED,          /* a freed block between used ones */
    MAKE_MERGED_LOWER,   /* a freed block another one merged into */
    MAKE_MERGED_UPPER,   /* a freed block that merged into the one below */
    MAKE_MERGED_ABOVE,   /* a freed block the one below it, freed later, merged with */
    MAKE_MERGED_BELOW,   /* that one below, the start of the merged block */
    MAKE_IN_FREE,        /* c + 8 (k + 1), inside a free block */
    MAKE_IN_TOP,         /* freed blocks merged into the top: its start, then inside it */
    MAKE_NEVER_USED,     /* in the top, above every block ever handed out */
    MAKE_IN_LARGE_FREE,  /* near the start of a large free block, then near its end */
    MAKE_IN_LARGE_USED,  /* the same in a large used block */
    MAKE_SPEC            /* the start of the spec area (sbreak) */
};

typedef struct bad_case {
    char name[48];
    enum layer layer;
    enum make make;
    int count;           /* pointers made this way */
    int code, or_code;   /* the core's status, or either of two (or_code 0: one) */
    char words[40];      /* in shmalloc_strerror of the heap's code for it */
    int with_allreduce;  /* the heap's transport has one */
} bad_case;

#define OUTSIDE SHMALLOC_TLSF_NOT_IN_HEAP, 0, "not in the symmetric heap"
#define INSIDE SHMALLOC_TLSF_NOT_A_BLOCK, 0, "not the start of a block"
#define FREED SHMALLOC_TLSF_ALREADY_FREE, 0, "already free"
#define EITHER(a, b) a, b, "pointer is not"

static const bad_case cases[] = {
    {"core NULL", CORE, MAKE_NULL, 1, SHMALLOC_TLSF_OK, 0, "no error", 0},
    {"core stack", CORE, MAKE_STACK, 1, OUTSIDE, 0},
    {"core static data", CORE, MAKE_DATA, 1, OUTSIDE, 0},
    {"core before the base", CORE, MAKE_BEFORE_BASE, 2, OUTSIDE, 0},
    {"core address 16", CORE, MAKE_LOW_ADDRESS, 1, OUTSIDE, 0},
    {"core address UINTPTR_MAX", CORE, MAKE_TOP_ADDRESS, 1, OUTSIDE, 0},
    {"core past the block space", CORE, MAKE_PAST_END, 16,
     EITHER(SHMALLOC_TLSF_NOT_IN_HEAP, SHMALLOC_TLSF_NOT_A_BLOCK), 0},
    {"core inside the first header", CORE, MAKE_FIRST_HEADER, 16,
     EITHER(SHMALLOC_TLSF_NOT_A_BLOCK, SHMALLOC_TLSF_NOT_IN_HEAP), 0},
    {"core interior", CORE, MAKE_INTERIOR, 61, INSIDE, 0},
    {"core interior that looks like a header", CORE, MAKE_FORGED, 1, INSIDE, 0},
    {"core misaligned", CORE, MAKE_MISALIGNED, 15, INSIDE, 0},
    {"core just before a block", CORE, MAKE_JUST_BEFORE, 3, INSIDE, 0},
    {"core double free", CORE, MAKE_FREED, 1, FREED, 0},
    {"core double free of a merged block", CORE, MAKE_MERGED_LOWER, 1, FREED, 0},
    {"core double free merged into another", CORE, MAKE_MERGED_UPPER, 1, FREED, 0},
    {"core double free merged with the one below", CORE, MAKE_MERGED_ABOVE, 1, FREED, 0},
    {"core double free that merged upwards", CORE, MAKE_MERGED_BELOW, 1, FREED, 0},
    {"core inside a free block", CORE, MAKE_IN_FREE, 8, FREED, 0},
    {"core double free merged into the top", CORE, MAKE_IN_TOP, 2, FREED, 0},
    {"core never handed out", CORE, MAKE_NEVER_USED, 2, INSIDE, 0},
    {"core inside a large free block", CORE, MAKE_IN_LARGE_FREE, 2, FREED, 0},
    {"core inside a large used block", CORE, MAKE_IN_LARGE_USED, 2, INSIDE, 0},
    {"core spec area", CORE, MAKE_SPEC, 1, INSIDE, 0},
    {"heap stack", HEAP, MAKE_STACK, 1, OUTSIDE, 0},
    {"heap static data", HEAP, MAKE_DATA, 1, OUTSIDE, 0},
    {"heap before the base", HEAP, MAKE_BEFORE_BASE, 2, OUTSIDE, 0},
    {"heap address UINTPTR_MAX", HEAP, MAKE_TOP_ADDRESS, 1, OUTSIDE, 0},
    {"heap interior", HEAP, MAKE_INTERIOR, 61, INSIDE, 0},
    {"heap interior with an all-reduce", HEAP, MAKE_INTERIOR, 1, INSIDE, 1},
    {"heap misaligned", HEAP, MAKE_MISALIGNED, 15, INSIDE, 0},
    {"heap misaligned with an all-reduce", HEAP, MAKE_MISALIGNED, 2, INSIDE, 1},
    {"heap double free", HEAP, MAKE_FREED, 1, FREED, 0},
    {"heap double free with an all-reduce", HEAP, MAKE_FREED, 1, FREED, 1},
    {"heap double free of a merged block", HEAP, MAKE_MERGED_LOWER, 1, FREED, 0},
    {"heap double free merged into another", HEAP, MAKE_MERGED_UPPER, 1, FREED, 0},
    {"heap double free merged with the one below", HEAP, MAKE_MERGED_ABOVE, 1, FREED, 0},
    {"heap merged with the one below, all-reduce", HEAP, MAKE_MERGED_ABOVE, 1, FREED, 1},
    {"heap double free that merged upwards", HEAP, MAKE_MERGED_BELOW, 1, FREED, 0},
    {"heap inside a free block", HEAP, MAKE_IN_FREE, 8, FREED, 0},
    {"heap double free merged into the top", HEAP, MAKE_IN_TOP, 2, FREED, 0},
    {"heap inside a large free block", HEAP, MAKE_IN_LARGE_FREE, 2, FREED, 0},
    {"heap inside a large used block", HEAP, MAKE_IN_LARGE_USED, 2, INSIDE, 0},
    {"heap spec area", HEAP, MAKE_SPEC, 1, INSIDE, 0},
};

/* first, a (1000 bytes), b, c (freed), w, m1 and m2 (freed, m2 merged
   into m1), w2, u1 and u2 (freed, u1 merged with u2), w3, big1 (freed)
   and big2 of 200 KiB, w4, t1 and t2 (freed into the top), in address
   order; a holds a copy of b's header. */
typedef struct fixture {
    shmalloc_tlsf *t;
    int heap; /* the calls go through the SHMEM names */
    char *base, *end, *a, *b, *c, *m1, *m2, *u1, *u2, *big1, *big2, *t1, *t2;
} fixture;

#define BIG ((size_t)200 * 1024)

static void *fixture_malloc(const fixture *f, size_t n)
{
    void *p = f->heap ? shmem_malloc(n) : shmalloc_tlsf_malloc(f->t, n);
    cr_assert(p, "fixture malloc(%zu) failed", n);
    return p;
}

static void fixture_free(const fixture *f, void *p)
{
    if (f->heap) shmem_free(p);
    else cr_assert_eq(shmalloc_tlsf_free(f->t, p), SHMALLOC_TLSF_OK);
}

static void make_fixture(fixture *f, const bad_case *c)
{
    memset(f, 0, sizeof *f);
    f->heap = c->layer == HEAP;
    if (f->heap) f->t = shmalloc_heap_tlsf(make_counting_heap(MIB, c->with_allreduce));
    else f->t = heap_with_capacity(MIB, NULL);
    f->base = shmalloc_tlsf_base(f->t);
    fixture_malloc(f, 100);
    f->a = fixture_malloc(f, 1000);
    f->b = fixture_malloc(f, 100);
    f->c = fixture_malloc(f, 100);
    fixture_malloc(f, 100);
    f->m1 = fixture_malloc(f, 100);
    f->m2 = fixture_malloc(f, 100);
    fixture_malloc(f, 100);
    f->u1 = fixture_malloc(f, 100);
    f->u2 = fixture_malloc(f, 100);
    fixture_malloc(f, 100);
    f->big1 = fixture_malloc(f, BIG);
    f->big2 = fixture_malloc(f, BIG);
    fixture_malloc(f, 100);
    f->t1 = fixture_malloc(f, 100);
    f->t2 = fixture_malloc(f, 100);
    fixture_free(f, f->c);
    fixture_free(f, f->m1);
    fixture_free(f, f->m2);
    fixture_free(f, f->u2);
    fixture_free(f, f->u1);
    fixture_free(f, f->big1);
    fixture_free(f, f->t2);
    fixture_free(f, f->t1);
    memcpy(f->a + 480, f->b - 16, 16);
    f->end = f->base + counters(f->t).capacity;
}

static char static_object[32];

static void *make_pointer(fixture *f, enum make how, int k, void *stack)
{
    static const int before[] = {16, 4096}, just_before[] = {1, 8, 16};
    switch (how) {
    case MAKE_NULL: return NULL;
    case MAKE_STACK: return stack;
    case MAKE_DATA: return static_object;
    case MAKE_BEFORE_BASE: return f->base - before[k];
    case MAKE_LOW_ADDRESS: return (void *)(uintptr_t)16;
    case MAKE_TOP_ADDRESS: return (void *)UINTPTR_MAX;
    case MAKE_PAST_END: return f->end + 16 * k;
    case MAKE_FIRST_HEADER: return f->base + k;
    case MAKE_INTERIOR: return f->a + 16 * (k + 1);
    case MAKE_FORGED: return f->a + 496;
    case MAKE_MISALIGNED: return f->a + k + 1;
    case MAKE_JUST_BEFORE: return f->a - just_before[k];
    case MAKE_FREED: return f->c;
    case MAKE_MERGED_LOWER: return f->m1;
    case MAKE_MERGED_UPPER: return f->m2;
    case MAKE_MERGED_ABOVE: return f->u2;
    case MAKE_MERGED_BELOW: return f->u1;
    case MAKE_IN_FREE: return f->c + 8 * (k + 1);
    case MAKE_IN_TOP: return k ? f->t2 : f->t1;
    case MAKE_NEVER_USED: return f->t2 + (k ? 4096 : 160);
    case MAKE_IN_LARGE_FREE: return k ? f->big1 + BIG - 64 : f->big1 + 16;
    case MAKE_IN_LARGE_USED: return k ? f->big2 + BIG - 64 : f->big2 + 16;
    case MAKE_SPEC: {
        void *p = f->heap ? shsbreak(1024) : shmalloc_tlsf_sbreak(f->t, 1024);
        cr_assert(p, "sbreak(1024) failed");
        return p;
    }
    }
    return NULL;
}

/* The malloc_error the symmetric heap sets for a core status. */
static long heap_code(int status)
{
    switch (status) {
    case SHMALLOC_TLSF_OK: return SHMEM_MALLOC_OK;
    case SHMALLOC_TLSF_NOT_IN_HEAP: return SHMEM_MALLOC_NOT_IN_SYMM_HEAP;
    case SHMALLOC_TLSF_ALREADY_FREE: return SHMEM_MALLOC_ALREADY_FREE;
    case SHMALLOC_TLSF_NOT_A_BLOCK: return SHMEM_MALLOC_NOT_ALIGNED;
    default: cr_assert(0, "status %d has no heap code", status); return 0;
    }
}

static void expect_status(const bad_case *c, int got, const char *call, int k)
{
    cr_assert(got == c->code || (c->or_code && got == c->or_code), "%s, pointer %d: %s gave %d, expected %d",
              c->name, k, call, got, c->code);
}

static void expect_malloc_error(const bad_case *c, long got, const char *call, int k)
{
    long want = heap_code(c->code), or_want = c->or_code ? heap_code(c->or_code) : want;
    cr_assert(got == want || got == or_want, "%s, pointer %d: %s set malloc_error %ld, expected %ld", c->name, k,
              call, got, want);
    cr_assert(strstr(shmalloc_strerror(got), c->words), "%s: the message of %ld is \"%s\", without \"%s\"", c->name,
              got, shmalloc_strerror(got), c->words);
}

static long heap_call(const bad_case *c, void *p, int realloc_size, int k)
{
    int before = syncs();
    void *r = NULL;
    malloc_error = SHMEM_MALLOC_OK;
    if (realloc_size < 0) shmem_free(p);
    else r = shmem_realloc(p, (size_t)realloc_size);
    cr_assert_null(r, "%s, pointer %d: realloc returned a block", c->name, k);
    cr_assert_eq(syncs() - before, 1, "%s, pointer %d: %d synchronisations", c->name, k, syncs() - before);
    return malloc_error;
}

/* free, then realloc to 50 and to 0 (a NULL pointer only frees). */
static void refuse_every_call(const bad_case *c, fixture *f, void *p, int k)
{
    static const int sizes[] = {-1, 50, 0};
    int i, calls = c->make == MAKE_NULL ? 1 : 3;
    for (i = 0; i < calls; i++) {
        const char *call = i == 0 ? "free" : i == 1 ? "realloc(p, 50)" : "realloc(p, 0)";
        if (f->heap) {
            expect_malloc_error(c, heap_call(c, p, sizes[i], k), call, k);
        } else if (i == 0) {
            expect_status(c, shmalloc_tlsf_free(f->t, p), call, k);
        } else {
            cr_assert_null(shmalloc_tlsf_realloc(f->t, p, (size_t)sizes[i]), "%s, pointer %d: %s returned a block",
                           c->name, k, call);
        }
    }
    if (!f->heap && c->make != MAKE_NULL) expect_status(c, shmalloc_tlsf_validate(f->t, p), "validate", k);
}

ParameterizedTestParameters(bad_pointer, is_refused_with_its_code_and_changes_nothing)
{
    return cr_make_param_array(bad_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(bad_case *c, bad_pointer, is_refused_with_its_code_and_changes_nothing)
{
    fixture f;
    void *ptrs[64];
    int on_stack = 0, k;
    snapshot *before, *after;
    cr_assert(c->count <= 64);
    make_fixture(&f, c);
    for (k = 0; k < c->count; k++) ptrs[k] = make_pointer(&f, c->make, k, &on_stack);
    before = take_snapshot(f.t);
    for (k = 0; k < c->count; k++) refuse_every_call(c, &f, ptrs[k], k);
    after = take_snapshot(f.t);
    assert_same_heap(before, after, c->name);
    assert_tlsf_ok(f.t);
    if (f.heap) assert_heap_ok();
}

/* ---- what a bad argument prints ------------------------------------------
   The PE that passed it prints the call, the argument (a pointer as its
   offset, or "outside the heap") and what is wrong: in debug mode one line
   for each, outside it the heap's first only, with a note that further
   ones are not reported. */
#define MISUSES 7

static void misuse_every_way(char want[MISUSES][200])
{
    shmalloc_tlsf *t = shmalloc_heap_tlsf(shmalloc_current());
    char *a = (char *)shmem_malloc(100), *b = (char *)shmem_malloc(100), *c = (char *)shmem_malloc(100);
    int x;
    cr_assert(a && b && c);
    shmem_free(b);
    capture_start();
    shmem_free(&x);
    shmem_free(a + 16);
    shmem_free(b);
    cr_assert_null(shmem_align(3, 8));
    cr_assert_null(shmem_malloc((size_t)1 << 62));
    cr_assert_null(shmem_calloc(SIZE_MAX / 2, 4));
    cr_assert_null(shmem_realloc(&x, 10));
    capture_stop();
    snprintf(want[0], 200, "shmalloc: PE 0: free(%p, outside the heap): pointer is not in the symmetric heap; the "
             "call fails on every PE\n", (void *)&x);
    snprintf(want[1], 200, "shmalloc: PE 0: free(the pointer at offset %zu): pointer is not the start of a block;",
             shmalloc_tlsf_offset(t, a + 16));
    snprintf(want[2], 200, "shmalloc: PE 0: free(the pointer at offset %zu): block is already free;",
             shmalloc_tlsf_offset(t, b));
    snprintf(want[3], 200, "shmalloc: PE 0: align(alignment 3, 8 bytes): alignment is not a power of two; the call "
             "fails on every PE\n"); /* the one cause that applies */
    snprintf(want[4], 200, "shmalloc: PE 0: malloc(%zu bytes): size too large", (size_t)1 << 62);
    snprintf(want[5], 200, "shmalloc: PE 0: calloc(count * size overflows): size too large");
    snprintf(want[6], 200, "shmalloc: PE 0: realloc(%p, outside the heap): pointer is not in", (void *)&x);
    shmem_free(a);
    shmem_free(c);
}

Test(bad_argument, in_debug_mode_each_one_prints_a_line_naming_the_call_and_the_argument)
{
    char want[MISUSES][200];
    int i;
    setenv("SHMALLOC_DEBUG", "1", 1);
    cr_assert(shmalloc_options_read(NULL) == 0);
    make_counting_heap(MIB, 1);
    unsetenv("SHMALLOC_DEBUG");
    cr_assert(shmalloc_options_read(NULL) == 0);
    misuse_every_way(want);
    for (i = 0; i < MISUSES; i++) cr_assert(strstr(out_text[2], want[i]), "expected\n%s\nin\n%s", want[i], out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISUSE), MISUSES, "%s", out_text[2]);
    cr_assert_eq(out_nids, MISUSES, "%s", out_text[2]);
    assert_heap_ok();
}

Test(bad_argument, outside_debug_mode_the_heaps_first_is_printed_once)
{
    char want[MISUSES][200];
    make_counting_heap(MIB, 1);
    misuse_every_way(want);
    cr_assert(strstr(out_text[2], want[0]), "expected\n%s\nin\n%s", want[0], out_text[2]);
    assert_said(HEAP_MISUSE_QUIET, 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISUSE), 1, "%s", out_text[2]);
    cr_assert_eq(out_nids, 2, "%s", out_text[2]);
    assert_heap_ok();
}
