/* The bad-input matrix: every public allocation call against every kind of
   bad input, as one table.  Each row states the call, the input, the
   expected return and malloc_error; the test runs the row on a heap holding
   one live and one freed block, then proves the heap is unchanged (same
   counters, nothing leaked) and still passes the checker.  The table is
   printed with the outcome of every row.  The heap-size variables get
   their own table: each bad value must stop start-up with a message that
   names the variable and the value. */
#include "test_support.h"

enum call { MALLOC, CALLOC, ALIGN, HINTS, REALLOC, FREE };
enum arg { LIVE, FREED, OUTSIDE, STACK, INTERIOR, MISALIGNED, PAST_END, NONE };

typedef struct row {
    enum call call;
    enum arg ptr;     /* realloc and free: which pointer */
    size_t a, b;      /* sizes, count, alignment, as the call takes them */
    const char *input;
    int returns;      /* 1: a block, 0: NULL */
    long error;       /* malloc_error afterwards */
    int changes_heap; /* the row is a valid call that frees or allocates */
} row;

#define BIG ((size_t)1 << 40) /* valid, but larger than the heap */
static const row rows[] = {
    {MALLOC, NONE, 0, 0, "size 0", 0, SHMEM_MALLOC_OK, 0},
    {MALLOC, NONE, SIZE_MAX, 0, "SIZE_MAX", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {MALLOC, NONE, SIZE_MAX - 15, 0, "SIZE_MAX-15", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {MALLOC, NONE, BIG, 0, "2^40 (beyond the heap)", 0, SHMEM_MALLOC_FAIL, 0},
    {CALLOC, NONE, SIZE_MAX / 2, 3, "count*size overflow", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {CALLOC, NONE, (size_t)1 << 32, (size_t)1 << 32, "2^32 * 2^32", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {CALLOC, NONE, 0, 8, "count 0", 0, SHMEM_MALLOC_OK, 0},
    {CALLOC, NONE, 8, 0, "size 0", 0, SHMEM_MALLOC_OK, 0},
    {CALLOC, NONE, SIZE_MAX, 1, "SIZE_MAX * 1", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {ALIGN, NONE, 0, 64, "alignment 0", 0, SHMEM_MALLOC_MEMALIGN_FAILED, 0},
    {ALIGN, NONE, 3, 64, "alignment 3", 0, SHMEM_MALLOC_MEMALIGN_FAILED, 0},
    {ALIGN, NONE, 24, 64, "alignment 24", 0, SHMEM_MALLOC_MEMALIGN_FAILED, 0},
    {ALIGN, NONE, (size_t)1 << 63, 64, "alignment 2^63", 0, SHMEM_MALLOC_MEMALIGN_FAILED, 0},
    {ALIGN, NONE, SIZE_MAX, 64, "alignment SIZE_MAX", 0, SHMEM_MALLOC_MEMALIGN_FAILED, 0},
    {ALIGN, NONE, 64, SIZE_MAX, "size SIZE_MAX", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {ALIGN, NONE, 64, 0, "size 0", 0, SHMEM_MALLOC_OK, 0},
    {HINTS, NONE, SIZE_MAX, 0, "SIZE_MAX, hints -1", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {HINTS, NONE, 0, 0, "size 0, hints -1", 0, SHMEM_MALLOC_OK, 0},
    {REALLOC, FREED, 64, 0, "freed block", 0, SHMEM_MALLOC_ALREADY_FREE, 0},
    {REALLOC, OUTSIDE, 64, 0, "pointer outside the heap", 0, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, 0},
    {REALLOC, STACK, 64, 0, "stack pointer", 0, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, 0},
    {REALLOC, INTERIOR, 64, 0, "interior pointer", 0, SHMEM_MALLOC_NOT_ALIGNED, 0},
    {REALLOC, MISALIGNED, 64, 0, "misaligned pointer", 0, SHMEM_MALLOC_NOT_ALIGNED, 0},
    {REALLOC, PAST_END, 64, 0, "pointer past the heap", 0, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, 0},
    {REALLOC, LIVE, SIZE_MAX, 0, "size SIZE_MAX", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {REALLOC, LIVE, SIZE_MAX - 15, 0, "size SIZE_MAX-15", 0, SHMEM_MALLOC_BAD_SIZE, 0},
    {REALLOC, LIVE, BIG, 0, "size 2^40", 0, SHMEM_MALLOC_REALLOC_FAILED, 0},
    {REALLOC, FREED, 0, 0, "freed block, size 0", 0, SHMEM_MALLOC_ALREADY_FREE, 0},
    {REALLOC, LIVE, 0, 0, "live block, size 0 (frees it)", 0, SHMEM_MALLOC_OK, 1},
    {FREE, NONE, 0, 0, "NULL", 0, SHMEM_MALLOC_OK, 0},
    {FREE, FREED, 0, 0, "double free", 0, SHMEM_MALLOC_ALREADY_FREE, 0},
    {FREE, OUTSIDE, 0, 0, "pointer outside the heap", 0, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, 0},
    {FREE, STACK, 0, 0, "stack pointer", 0, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, 0},
    {FREE, INTERIOR, 0, 0, "interior pointer", 0, SHMEM_MALLOC_NOT_ALIGNED, 0},
    {FREE, MISALIGNED, 0, 0, "misaligned pointer", 0, SHMEM_MALLOC_NOT_ALIGNED, 0},
    {FREE, PAST_END, 0, 0, "pointer past the heap", 0, SHMEM_MALLOC_NOT_IN_SYMM_HEAP, 0},
};

static const char *const call_names[] = {"shmem_malloc", "shmem_calloc", "shmem_align",
                                         "shmem_malloc_with_hints", "shmem_realloc", "shmem_free"};
static char outside_object[64];

static char *stack_address; /* a local of the test function */

static void *pointer(enum arg a, char *live, char *freed)
{
    switch (a) {
    case LIVE: return live;
    case FREED: return freed;
    case OUTSIDE: return outside_object + 16;
    case STACK: return stack_address;
    case INTERIOR: return live + 32;
    case MISALIGNED: return live + 1;
    case PAST_END: return (char *)shmalloc_heap_base(shmalloc_current()) + shmalloc_heap_size(shmalloc_current()) + 64;
    default: return NULL;
    }
}

static void *run(const row *r, char *live, char *freed)
{
    void *p = pointer(r->ptr, live, freed);
    switch (r->call) {
    case MALLOC: return shmem_malloc(r->a);
    case CALLOC: return shmem_calloc(r->a, r->b);
    case ALIGN: return shmem_align(r->a, r->b);
    case HINTS: return shmem_malloc_with_hints(r->a, -1);
    case REALLOC: return shmem_realloc(p, r->a);
    default: shmem_free(p); return NULL;
    }
}

Test(bad_input, every_call_with_every_bad_input_fails_cleanly_and_loses_nothing)
{
    static char region[1 << 20] __attribute__((aligned(4096)));
    char local[32];
    size_t i, failures = 0;
    shmalloc_heap *h = shmalloc_heap_create(region, sizeof region, shmalloc_transport_single(), NULL);
    cr_assert(h != NULL);
    shmalloc_set_current(h);
    stack_address = local + 16; /* only compared, never dereferenced */
    printf("%-24s %-30s %-8s %-6s %-12s %s\n", "call", "input", "returns", "error", "outcome", "meaning");
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row *r = &rows[i];
        char *live = shmem_malloc(100), *keep = shmem_malloc(100), *freed = shmem_malloc(100), *end = shmem_malloc(100);
        shmalloc_counters before, after;
        void *got;
        long err;
        int ok;
        cr_assert(live && keep && freed && end);
        memset(live, 0x5a, 100);
        shmem_free(freed); /* between two used blocks: stays a free block of its own */
        shmalloc_tlsf_counters(shmalloc_heap_tlsf(h), &before);
        malloc_error = 12345;
        got = run(r, live, freed);
        err = malloc_error;
        shmalloc_tlsf_counters(shmalloc_heap_tlsf(h), &after);
        ok = (got != NULL) == r->returns && err == r->error && shmalloc_check(-1) == 0;
        if (!r->changes_heap)
            ok = ok && after.in_use == before.in_use && after.used_blocks == before.used_blocks &&
                 after.largest_free == before.largest_free && live[0] == 0x5a && live[99] == 0x5a;
        else
            ok = ok && after.used_blocks == before.used_blocks - 1;
        printf("%-24s %-30s %-8s %-6ld %-12s %s\n", call_names[r->call], r->input, got ? "block" : "NULL", err,
               ok ? "as expected" : "WRONG", shmalloc_strerror(err));
        failures += !ok;
        if (got) shmem_free(got);
        if (!r->changes_heap) shmem_free(live);
        shmem_free(keep);
        shmem_free(end);
        if (!ok)
            printf("  %s(%s): returned %p, malloc_error %ld; expected %s and %ld\n", call_names[r->call], r->input,
                   got, err, r->returns ? "a block" : "NULL", r->error);
    }
    printf("bad-input matrix: %zu rows, %zu wrong\n", i, failures);
    cr_assert(failures == 0);
    assert_heap_ok();
    {
        shmalloc_counters c;
        shmalloc_tlsf_counters(shmalloc_heap_tlsf(h), &c);
        cr_assert(c.used_blocks == 0 && c.in_use == 0, "%zu blocks left in use", c.used_blocks);
    }
}

/* ---- heap-size variables ---- */
Test(bad_input, every_bad_heap_size_value_is_refused_with_a_message_naming_it)
{
    static const char *const vars[] = {"SHMEM_SYMMETRIC_HEAP_SIZE", "SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"};
    static const char *const values[] = {"abc", "-1", "1Q", "99999T", "", "0", " 1G", "1G ", "1.5.5G", "0x10"};
    size_t v, k, failures = 0;
    printf("%-26s %-10s %s\n", "variable", "value", "outcome");
    for (v = 0; v < 3; v++)
        for (k = 0; k < sizeof values / sizeof values[0]; k++) {
            size_t size = 7;
            int rc, ok;
            clear_size_env();
            setenv(vars[v], values[k], 1);
            capture_start();
            rc = size_from_table(&size);
            capture_stop();
            ok = rc == -1 && size == 7 && out_said(SHMALLOC_MSG_OPTION_BAD) == 1 &&
                 strstr(out_text[2], vars[v]) != NULL;
            {
                char quoted[64];
                snprintf(quoted, sizeof quoted, "\"%s\"", values[k]);
                ok = ok && strstr(out_text[2], quoted) != NULL;
            }
            printf("%-26s %-10s %s\n", vars[v], values[k], ok ? "refused, message names it" : "WRONG");
            failures += !ok;
            if (!ok) printf("  %s=\"%s\": rc %d, message \"%s\"\n", vars[v], values[k], rc, out_text[2]);
        }
    printf("heap-size matrix: %zu values, %zu wrong\n", v * k, failures);
    cr_assert(failures == 0);
}

/* A refused alignment is told by the one cause it has. */
Test(bad_input, a_bad_alignment_names_the_one_cause_it_has)
{
    static const struct { size_t align; const char *arg, *cause; } cases[] = {
        {0, "alignment 0, 8 bytes", "alignment is 0"},
        {63, "alignment 63, 8 bytes", "alignment is not a power of two"},
        {(size_t)1 << 50, "alignment 1125899906842624, 8 bytes",
         "alignment is larger than the largest heap (SHMALLOC_MAX_LOG2)"},
    };
    size_t i;
    setenv("SHMALLOC_DEBUG", "1", 1); /* every bad argument is reported */
    cr_assert(shmalloc_options_read(NULL) == 0);
    make_counting_heap(MIB, 1);
    unsetenv("SHMALLOC_DEBUG");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        capture_start();
        cr_assert_null(shmem_align(cases[i].align, 8));
        capture_stop();
        cr_assert_eq(malloc_error, SHMEM_MALLOC_MEMALIGN_FAILED);
        assert_said(HEAP_MISUSE, 0, "align", cases[i].arg, cases[i].cause);
    }
    assert_heap_ok();
}
