/* Separate metadata (shmalloc_tlsf_create_separate, and heaps made with
   SHMALLOC_METADATA_SEPARATE): the allocator never loads or stores a byte
   of the memory it manages.  The managed
   range here is a PROT_NONE view of a memfd: one touch and the test dies.
   Its fill and copy go through a second, writable view of the same file,
   as a device's memset and copy engine would; the tests read and write
   blocks through that view too.  Every test that changes a heap ends with
   the checker passing. */
#include "test_support.h"
#include <unistd.h>

typedef struct device {
    char *hidden; /* what the core manages: PROT_NONE */
    char *view;   /* the same bytes, writable */
    size_t bytes;
    int fills, copies;
    int broken; /* the copy engine fails */
} device;

/* A test's devices: each test runs in a process of its own, and the
   mappings go with it. */
static device *dev_make(size_t bytes)
{
    static device devs[8];
    static int used;
    device *d = &devs[used++];
    int fd = memfd_create("shmalloc-device", 0);
    cr_assert(used <= 8 && fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
    d->hidden = mmap(NULL, bytes, PROT_NONE, MAP_SHARED, fd, 0);
    d->view = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    cr_assert(d->hidden != MAP_FAILED && d->view != MAP_FAILED);
    close(fd);
    d->bytes = bytes;
    return d;
}

/* The writable alias of managed address p, which must lie in the range. */
static char *dev_at(const device *d, const void *p, size_t n)
{
    size_t off = (size_t)((const char *)p - d->hidden);
    cr_assert(off <= d->bytes && n <= d->bytes - off, "an access outside the managed range");
    return d->view + off;
}

static int dev_fill(void *user, void *dst, int byte, size_t n)
{
    device *d = user;
    memset(dev_at(d, dst, n), byte, n);
    d->fills++;
    return 0;
}

static int dev_copy(void *user, void *dst, const void *src, size_t n)
{
    device *d = user;
    if (d->broken) return -1;
    memmove(dev_at(d, dst, n), dev_at(d, src, n), n);
    d->copies++;
    return 0;
}

static shmalloc_tlsf *dev_heap(device *d, size_t initial, int with_ops)
{
    shmalloc_memops ops = {d, dev_fill, dev_copy};
    shmalloc_tlsf *t = shmalloc_tlsf_create_separate(d->hidden, d->bytes, initial, with_ops ? &ops : NULL);
    cr_assert(t != NULL);
    return t;
}

/* A block's first and last bytes, written and checked through the view. */
static void tag(const device *d, void *p, size_t n, unsigned char v)
{
    dev_at(d, p, n)[0] = (char)v;
    dev_at(d, p, n)[n - 1] = (char)(v ^ 0xff);
}
static int tagged(const device *d, void *p, size_t n, unsigned char v)
{
    return (unsigned char)dev_at(d, p, n)[0] == v && (unsigned char)dev_at(d, p, n)[n - 1] == (unsigned char)(v ^ 0xff);
}

Test(tlsf_separate, the_whole_api_runs_on_memory_the_core_may_not_touch)
{
    device *d = dev_make(4 * MIB);
    shmalloc_tlsf *t = dev_heap(d, 4 * MIB, 1);
    shmalloc_counters c;
    char *a = shmalloc_tlsf_malloc(t, 100), *b = shmalloc_tlsf_align(t, 4096, 5000), *z;
    cr_assert(a && b && ((uintptr_t)b & 4095) == 0);
    cr_assert_eq(shmalloc_tlsf_usable_size(t, a), 112, "no header: the request rounded to 16");
    cr_assert_eq(shmalloc_tlsf_alignment(t, b), 4096);
    cr_assert_eq(shmalloc_tlsf_validate(t, b), SHMALLOC_TLSF_OK);
    z = shmalloc_tlsf_calloc(t, 10, 30);
    cr_assert(z && d->fills == 1);
    for (int i = 0; i < 300; i++) cr_assert_eq(dev_at(d, z, 300)[i], 0);
    tag(d, a, 100, 0x31);
    a = shmalloc_tlsf_realloc(t, a, 60); /* shrinks in place */
    cr_assert(a && tagged(d, a, 60, 0x31) == 0 && dev_at(d, a, 1)[0] == 0x31);
    tag(d, a, 60, 0x32);
    a = shmalloc_tlsf_realloc(t, a, 100000); /* z follows: moves, through copy */
    cr_assert(a && d->copies == 1 && dev_at(d, a, 1)[0] == 0x32);
    shmalloc_tlsf_counters(t, &c);
    cr_assert_eq(c.used_blocks, 3);
    cr_assert_eq(c.in_use, 100000 + 5008 + 304);
    cr_assert_eq(shmalloc_tlsf_free(t, z), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    shmalloc_tlsf_counters(t, &c);
    cr_assert_eq(c.used_blocks, 0);
    cr_assert_eq(c.largest_free, 4 * MIB, "everything merged back into one block");
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

/* One step of a random workload over `slots` live blocks, as the benchmarks':
   mallocs, aligned ones, reallocs and frees; every block carries a tag
   that must survive, and the offsets are written to `trace`. */
static void random_steps(device *d, shmalloc_tlsf *t, long steps, uint64_t seed, size_t *trace)
{
    enum { SLOTS = 1000 };
    void *p[SLOTS] = {0};
    size_t n[SLOTS] = {0};
    rng_seed(seed);
    for (long k = 0; k < steps; k++) {
        size_t i = rng() % SLOTS, size = 2 + rng() % (rng() % 8 ? 512 : 65536); /* 2: a tag has two bytes */
        if (p[i]) cr_assert(tagged(d, p[i], n[i], (unsigned char)i), "step %ld: block %zu lost its bytes", k, i);
        if (p[i] && rng() % 3 == 0) {
            void *q = shmalloc_tlsf_realloc(t, p[i], size);
            if (q) p[i] = q, n[i] = size;
        } else if (p[i]) {
            cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
            p[i] = NULL;
        } else {
            size_t align = rng() % 4 ? 16 : (size_t)16 << rng() % 9;
            p[i] = shmalloc_tlsf_align(t, align, size);
            if (p[i]) n[i] = size;
            cr_assert(!p[i] || ((uintptr_t)p[i] & (align - 1)) == 0);
        }
        if (p[i]) tag(d, p[i], n[i], (unsigned char)i);
        if (trace) trace[k] = p[i] ? (size_t)((char *)p[i] - d->hidden) : SIZE_MAX;
        if (k % 100000 == 0) assert_tlsf_ok(t);
    }
}

Test(tlsf_separate, a_million_random_steps_keep_every_block_and_a_sound_heap)
{
    device *d = dev_make(64 * MIB);
    shmalloc_tlsf *t = dev_heap(d, 64 * MIB, 1);
    random_steps(d, t, 1000000, 11, NULL);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

Test(tlsf_separate, the_same_calls_give_the_same_offsets)
{
    enum { STEPS = 200000 };
    device *d1 = dev_make(16 * MIB), *d2 = dev_make(16 * MIB);
    shmalloc_tlsf *t1 = dev_heap(d1, 16 * MIB, 1), *t2 = dev_heap(d2, 16 * MIB, 1);
    size_t *o1 = malloc(STEPS * sizeof *o1), *o2 = malloc(STEPS * sizeof *o2);
    random_steps(d1, t1, STEPS, 5, o1);
    random_steps(d2, t2, STEPS, 5, o2);
    cr_assert(memcmp(o1, o2, STEPS * sizeof *o1) == 0);
    free(o1);
    free(o2);
    assert_tlsf_ok(t1);
    assert_tlsf_ok(t2);
    shmalloc_tlsf_destroy(t1);
    shmalloc_tlsf_destroy(t2);
}

/* The codes a bad pointer gets, each checked against the inline core's
   for the same calls, and the heap unchanged after each. */
typedef struct bad_case {
    const char *what;
    int (*make)(shmalloc_tlsf *t, char **ptr);
} bad_case;

static int interior(shmalloc_tlsf *t, char **ptr) { *ptr = (char *)shmalloc_tlsf_malloc(t, 200) + 48; return 0; }
static int off_by_16(shmalloc_tlsf *t, char **ptr) { *ptr = (char *)shmalloc_tlsf_malloc(t, 200) + 16; return 0; }
static int twice(shmalloc_tlsf *t, char **ptr)
{
    shmalloc_tlsf_malloc(t, 64);
    *ptr = shmalloc_tlsf_malloc(t, 64);
    shmalloc_tlsf_malloc(t, 64);
    return shmalloc_tlsf_free(t, *ptr);
}
static int merged_away(shmalloc_tlsf *t, char **ptr)
{
    char *a = shmalloc_tlsf_malloc(t, 64);
    *ptr = shmalloc_tlsf_malloc(t, 64);
    shmalloc_tlsf_malloc(t, 64);
    return shmalloc_tlsf_free(t, a) | shmalloc_tlsf_free(t, *ptr); /* *ptr is now inside a's free block */
}
static int into_free(shmalloc_tlsf *t, char **ptr)
{
    char *a = shmalloc_tlsf_malloc(t, 1000);
    shmalloc_tlsf_malloc(t, 64);
    *ptr = a + 512;
    return shmalloc_tlsf_free(t, a);
}
static int into_top(shmalloc_tlsf *t, char **ptr) { *ptr = (char *)shmalloc_tlsf_malloc(t, 64) + 4096; return 0; }
static int foreign(shmalloc_tlsf *t, char **ptr)
{
    static char elsewhere[64];
    (void)t;
    *ptr = elsewhere + 16;
    return 0;
}

static const bad_case bad_cases[] = {
    {"an interior pointer", interior}, {"a pointer 16 bytes into a block", off_by_16},
    {"a double free", twice},          {"a pointer into a block merged away", merged_away},
    {"a pointer into a free block", into_free}, {"a pointer into the top", into_top},
    {"a foreign pointer", foreign},
};

Test(tlsf_separate, bad_pointers_get_the_inline_cores_codes_and_change_nothing)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        device *d = dev_make(MIB);
        shmalloc_tlsf *s = dev_heap(d, MIB, 1), *in = heap_with_capacity(MIB, NULL);
        char *ps, *pin;
        shmalloc_counters before, after;
        cr_assert_eq(bad_cases[i].make(s, &ps), 0);
        cr_assert_eq(bad_cases[i].make(in, &pin), 0);
        shmalloc_tlsf_counters(s, &before);
        int want = shmalloc_tlsf_free(in, pin);
        cr_assert_neq(want, SHMALLOC_TLSF_OK, "%s: the inline core accepted it", bad_cases[i].what);
        cr_assert_eq(shmalloc_tlsf_validate(s, ps), want, "%s: %d, the inline core %d", bad_cases[i].what, shmalloc_tlsf_validate(s, ps), want);
        cr_assert_eq(shmalloc_tlsf_free(s, ps), want, "%s", bad_cases[i].what);
        cr_assert_null(shmalloc_tlsf_realloc(s, ps, 10), "%s", bad_cases[i].what);
        cr_assert_eq(shmalloc_tlsf_usable_size(s, ps), 0, "%s", bad_cases[i].what);
        shmalloc_tlsf_counters(s, &after);
        cr_assert(memcmp(&before, &after, sizeof before) == 0, "%s changed the heap", bad_cases[i].what);
        assert_tlsf_ok(s);
        assert_tlsf_ok(in);
        shmalloc_tlsf_destroy(s);
    }
}

Test(tlsf_separate, free_null_and_malloc_0_or_too_much_change_nothing_in_both_cores)
{
    device *d = dev_make(MIB);
    shmalloc_tlsf *cores[2] = {dev_heap(d, MIB, 1), heap_with_capacity(MIB, NULL)};
    for (int i = 0; i < 2; i++) {
        shmalloc_counters before, after;
        void *p = shmalloc_tlsf_malloc(cores[i], 64);
        cr_assert(p != NULL);
        shmalloc_tlsf_counters(cores[i], &before);
        cr_assert_eq(shmalloc_tlsf_free(cores[i], NULL), SHMALLOC_TLSF_OK, "core %d", i);
        cr_assert_null(shmalloc_tlsf_malloc(cores[i], 0), "core %d", i);
        cr_assert_null(shmalloc_tlsf_malloc(cores[i], 2 * MIB), "core %d", i);
        cr_assert_null(shmalloc_tlsf_malloc(cores[i], SIZE_MAX), "core %d", i);
        shmalloc_tlsf_counters(cores[i], &after);
        cr_assert(memcmp(&before, &after, sizeof before) == 0, "core %d changed", i);
        cr_assert_eq(shmalloc_tlsf_free(cores[i], p), SHMALLOC_TLSF_OK, "core %d", i);
        assert_tlsf_ok(cores[i]);
    }
    shmalloc_tlsf_destroy(cores[0]);
}

Test(tlsf_separate, growth_adds_to_the_top_up_to_the_reservation)
{
    device *d = dev_make(MIB);
    shmalloc_tlsf *t = dev_heap(d, 64 * KIB, 1);
    void *full;
    cr_assert_null(shmalloc_tlsf_malloc(t, 100 * KIB));
    cr_assert_eq(shmalloc_tlsf_room(t), MIB - 64 * KIB);
    full = shmalloc_tlsf_malloc(t, 64 * KIB); /* no top left: growth makes one */
    cr_assert(full != NULL);
    cr_assert_eq(shmalloc_tlsf_grow(t, 200 * KIB), SHMALLOC_TLSF_OK);
    cr_assert_not_null(shmalloc_tlsf_malloc(t, 100 * KIB));
    cr_assert_eq(shmalloc_tlsf_grow(t, MIB), SHMALLOC_TLSF_NO_ROOM);
    cr_assert_eq(shmalloc_tlsf_grow(t, shmalloc_tlsf_room(t)), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_size(t), MIB);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

Test(tlsf_separate, without_fill_or_copy_calloc_and_a_move_fail_and_change_nothing)
{
    device *d = dev_make(MIB);
    shmalloc_tlsf *t = dev_heap(d, MIB, 0);
    char *a = shmalloc_tlsf_malloc(t, 100), *b = shmalloc_tlsf_malloc(t, 100);
    shmalloc_counters before, after;
    cr_assert(a && b);
    tag(d, a, 100, 0x44);
    shmalloc_tlsf_counters(t, &before);
    cr_assert_null(shmalloc_tlsf_calloc(t, 1, 64));
    cr_assert_null(shmalloc_tlsf_realloc(t, a, 1000), "a, hemmed in by b, would have to move");
    shmalloc_tlsf_counters(t, &after);
    cr_assert(memcmp(&before, &after, sizeof before) == 0);
    cr_assert(tagged(d, a, 100, 0x44));
    cr_assert_eq(shmalloc_tlsf_realloc(t, b, 5000), b, "b grows in place: no copy needed");
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

/* A move whose copy fails leaves the block where it was, whole and
   still the heap's: a slide into the free block before it, and a move to
   a new block. */
Test(tlsf_separate, a_move_whose_copy_fails_changes_nothing)
{
    device *d = dev_make(MIB);
    shmalloc_tlsf *t = dev_heap(d, MIB, 1);
    char *x = shmalloc_tlsf_malloc(t, 200), *a = shmalloc_tlsf_malloc(t, 100), *b = shmalloc_tlsf_malloc(t, 100);
    char *grown[2] = {NULL, NULL};
    size_t to[2] = {150, 5000}; /* 150 fits where x was; 5000 needs a new block */
    shmalloc_counters before, after;
    void *start;
    size_t size;
    int i;
    cr_assert(x && a && b);
    shmalloc_tlsf_free(t, x);
    tag(d, a, 100, 0x5a);
    for (i = 0; i < 2; i++) {
        shmalloc_tlsf_counters(t, &before);
        d->broken = 1;
        cr_assert_null(shmalloc_tlsf_realloc(t, a, to[i]), "a, hemmed in by b, must move: its copy fails");
        d->broken = 0;
        shmalloc_tlsf_counters(t, &after);
        after.high_water = before.high_water; /* a record, not a state: the new block may have raised it */
        cr_assert(memcmp(&before, &after, sizeof before) == 0);
        cr_assert_eq(shmalloc_tlsf_validate(t, a), SHMALLOC_TLSF_OK, "a is still a used block");
        cr_assert_eq(shmalloc_tlsf_block_of(t, a + 50, &start, &size), SHMALLOC_TLSF_OK);
        cr_assert(start == a && size >= 100);
        cr_assert(tagged(d, a, 100, 0x5a));
        assert_tlsf_ok(t);
    }
    for (i = 0; i < 2; i++) { /* and the same moves, with the copy working */
        cr_assert((grown[i] = shmalloc_tlsf_realloc(t, a, to[i])) != NULL);
        cr_assert(i == 0 ? grown[i] == x : grown[i] != a, "moved as planned");
        cr_assert(tagged(d, grown[i], 100, 0x5a));
        a = grown[i];
    }
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_ALREADY_FREE);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

Test(tlsf_separate, the_records_grow_with_the_blocks_and_shrink_back_to_one)
{
    enum { N = 100000 };
    device *d = dev_make(8 * MIB);
    shmalloc_tlsf *t = dev_heap(d, 8 * MIB, 1);
    void **p = malloc(N * sizeof *p);
    shmalloc_counters c;
    for (int i = 0; i < N; i++) cr_assert_not_null(p[i] = shmalloc_tlsf_malloc(t, 32));
    assert_tlsf_ok(t);
    for (int i = 0; i < N; i += 2) cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
    for (int i = 1; i < N; i += 2) cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
    shmalloc_tlsf_counters(t, &c);
    cr_assert_eq(c.used_blocks, 0);
    cr_assert_eq(c.largest_free, 8 * MIB);
    assert_tlsf_ok(t);
    free(p);
    shmalloc_tlsf_destroy(t);
}

/* The blocks, as (offset, size, used) triples, for comparing heaps. */
typedef struct walked {
    size_t n, v[3 * 4096];
} walked;
static int walk_one(void *user, const shmalloc_block_info *b)
{
    walked *w = user;
    cr_assert(w->n + 3 <= sizeof w->v / sizeof w->v[0]);
    w->v[w->n++] = b->offset;
    w->v[w->n++] = b->size;
    w->v[w->n++] = (size_t)b->used;
    return 0;
}
static void same_blocks(shmalloc_tlsf *a, shmalloc_tlsf *b)
{
    static walked wa, wb;
    wa.n = wb.n = 0;
    shmalloc_tlsf_walk(a, walk_one, &wa);
    shmalloc_tlsf_walk(b, walk_one, &wb);
    cr_assert(wa.n == wb.n && memcmp(wa.v, wb.v, wa.n * sizeof wa.v[0]) == 0, "the heaps' blocks differ");
}

/* A take undone leaves the heap exactly as a twin that never took: the
   same blocks, and the same offsets for every later call. */
Test(tlsf_separate, a_take_undone_leaves_the_heap_as_its_twin)
{
    device *d1 = dev_make(64 * MIB), *d2 = dev_make(64 * MIB);
    shmalloc_tlsf *t1 = dev_heap(d1, 64 * MIB, 1), *t2 = dev_heap(d2, 64 * MIB, 1);
    size_t o1[2000], o2[2000];
    random_steps(d1, t1, 3000, 9, NULL);
    random_steps(d2, t2, 3000, 9, NULL);
    rng_seed(21);
    for (int k = 0; k < 2000; k++) {
        shmalloc_tlsf_pending op;
        size_t align = rng() % 3 ? 16 : (size_t)32 << rng() % 8, size = 1 + rng() % 3000;
        void *p1, *p2;
        cr_assert_eq(shmalloc_tlsf_take(t1, align, size, &op), SHMALLOC_TLSF_OK);
        shmalloc_tlsf_undo(t1, &op);
        same_blocks(t1, t2);
        p1 = shmalloc_tlsf_align(t1, align, size);
        p2 = shmalloc_tlsf_align(t2, align, size);
        o1[k] = (size_t)((char *)p1 - d1->hidden);
        o2[k] = (size_t)((char *)p2 - d2->hidden);
        if (rng() % 2) {
            shmalloc_tlsf_free(t1, p1);
            shmalloc_tlsf_free(t2, p2);
        }
    }
    cr_assert(memcmp(o1, o2, sizeof o1) == 0);
    assert_tlsf_ok(t1);
    assert_tlsf_ok(t2);
    shmalloc_tlsf_destroy(t1);
    shmalloc_tlsf_destroy(t2);
}

Test(tlsf_separate, a_resize_is_planned_and_made_at_its_commit)
{
    device *d = dev_make(MIB);
    shmalloc_tlsf *t = dev_heap(d, MIB, 1);
    shmalloc_tlsf_pending op;
    char *a = shmalloc_tlsf_malloc(t, 100), *b = shmalloc_tlsf_malloc(t, 100), *q;
    tag(d, a, 100, 0x55);
    cr_assert_eq(shmalloc_tlsf_resize(t, a, 5000, &op), SHMALLOC_TLSF_OK);
    cr_assert(op.commit_grows);
    shmalloc_tlsf_undo(t, &op); /* nothing was made: nothing to undo */
    cr_assert_eq(shmalloc_tlsf_usable_size(t, a), 112);
    cr_assert_eq(shmalloc_tlsf_resize(t, a, 5000, &op), SHMALLOC_TLSF_OK);
    q = shmalloc_tlsf_commit(t, &op);
    cr_assert(q != NULL && q != a && dev_at(d, q, 1)[0] == 0x55, "moved, through copy");
    cr_assert_eq(shmalloc_tlsf_resize(t, b, (size_t)1 << 40, &op), SHMALLOC_TLSF_NO_ROOM);
    cr_assert_eq(shmalloc_tlsf_resize(t, b + 16, 10, &op), SHMALLOC_TLSF_NOT_A_BLOCK);
    cr_assert_eq(shmalloc_tlsf_resize(t, a, 10, &op), SHMALLOC_TLSF_ALREADY_FREE);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

/* >> the symmetric heap over a device ----------------------------------- */

/* A one-PE heap over d, its fill and copy the device's (or none). */
static shmalloc_heap *dev_sym_heap(device *d, size_t nominal, int debug, int with_ops)
{
    static shmalloc_transport tp;
    shmalloc_heap_config config = {nominal, debug, NULL, SHMALLOC_METADATA_SEPARATE, NULL};
    shmalloc_heap *h;
    long err = -1;
    tp = *shmalloc_transport_single();
    tp.user = d;
    tp.fill = with_ops ? dev_fill : NULL;
    tp.copy = with_ops ? dev_copy : NULL;
    h = shmalloc_heap_create_with(d->hidden, d->bytes, &config, &tp, &err);
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK, "create: %ld", err);
    return h;
}

Test(heap_separate, every_call_runs_on_memory_the_heap_may_not_touch)
{
    device *d = dev_make(16 * MIB);
    shmalloc_heap *h = dev_sym_heap(d, 4 * MIB, 1, 1);
    capture_start(); /* the leak report at the end */
    shmalloc_info info;
    long err;
    char *a = shmalloc_heap_malloc(h, 1000, &err), *z, *big;
    cr_assert(a && err == SHMEM_MALLOC_OK);
    z = shmalloc_heap_calloc(h, 100, 10, &err);
    cr_assert(z && err == SHMEM_MALLOC_OK);
    for (int i = 0; i < 1000; i++) cr_assert_eq(dev_at(d, z, 1000)[i], 0);
    cr_assert_eq((unsigned char)dev_at(d, a, 1000)[999], 0xa1, "debug mode's fill of a new block, through the device");
    tag(d, a, 1000, 0x61);
    a = shmalloc_heap_realloc(h, a, 50000, &err); /* moves past z: copied by the device */
    cr_assert(a && err == SHMEM_MALLOC_OK && tagged(d, a, 1000, 0x61));
    cr_assert_not_null(shmalloc_heap_align(h, 65536, 100, &err));
    big = shmalloc_heap_malloc(h, 8 * MIB, &err); /* past the nominal 4 MiB: the heap grows */
    cr_assert(big && err == SHMEM_MALLOC_OK);
    shmalloc_heap_free_deferred(h, z, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    shmalloc_heap_free_deferred_drain(h, &err);
    cr_assert_eq(shmalloc_heap_hints(h, z), SHMEM_MALLOC_ALREADY_FREE, "drained");
    shmalloc_heap_free(h, big, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    cr_assert_eq(shmalloc_heap_info(h, &info), 0);
    cr_assert(info.heap_size > 8 * MIB && info.used_blocks == 2, "size %zu, %zu blocks", info.heap_size, info.used_blocks);
    cr_assert_eq(shmalloc_heap_check(h, 0), 0);
    shmalloc_heap_destroy(h);
}

Test(heap_separate, bad_pointers_get_their_codes_and_change_nothing)
{
    device *d = dev_make(MIB);
    shmalloc_heap *h = dev_sym_heap(d, MIB, 0, 1);
    static char elsewhere[64];
    long err;
    char *a = shmalloc_heap_malloc(h, 200, &err), *b = shmalloc_heap_malloc(h, 200, &err);
    capture_start();
    shmalloc_heap_free(h, a + 16, &err);
    cr_assert_eq(err, SHMEM_MALLOC_NOT_ALIGNED);
    shmalloc_heap_free(h, elsewhere, &err);
    cr_assert_eq(err, SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
    shmalloc_heap_free(h, a, &err);
    shmalloc_heap_free(h, a, &err);
    cr_assert_eq(err, SHMEM_MALLOC_ALREADY_FREE);
    cr_assert_null(shmalloc_heap_realloc(h, a + 32, 10, &err));
    cr_assert_eq(err, SHMEM_MALLOC_ALREADY_FREE);
    cr_assert_eq(shmalloc_heap_hints(h, b + 48), SHMEM_MALLOC_NOT_ALIGNED);
    shmalloc_heap_free(h, b, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    cr_assert_eq(shmalloc_heap_check(h, 0), 0);
    shmalloc_heap_destroy(h);
}

/* Without fill and copy, what needs them fails with a message that says
   what to do; following it (a transport that has them) makes it work. */
Test(heap_separate, without_fill_and_copy_calloc_and_a_move_fail_and_say_why)
{
    device *d = dev_make(MIB);
    shmalloc_heap *h = dev_sym_heap(d, MIB, 0, 0);
    long err;
    char *a = shmalloc_heap_malloc(h, 100, &err), *b = shmalloc_heap_malloc(h, 100, &err);
    capture_start();
    cr_assert_null(shmalloc_heap_calloc(h, 1, 64, &err));
    cr_assert_eq(err, SHMEMX_MALLOC_NO_MEMOPS);
    assert_said(HEAP_MISUSE, 0, "calloc", "64 bytes", shmalloc_strerror(SHMEMX_MALLOC_NO_MEMOPS));
    cr_assert(strstr(out_text[2], "fill and copy") && strstr(out_text[2], "SHMALLOC_METADATA=inline"));
    cr_assert_null(shmalloc_heap_realloc(h, a, 5000, &err));
    cr_assert_eq(err, SHMEMX_MALLOC_NO_MEMOPS);
    cr_assert_eq(shmalloc_heap_realloc(h, b, 5000, &err), b, "a grow in place needs no copy");
    cr_assert_eq(shmalloc_heap_check(h, 0), 0);
    shmalloc_heap_destroy(h);
    h = dev_sym_heap(d, MIB, 0, 1); /* the advice: a transport with fill and copy */
    cr_assert_not_null(shmalloc_heap_calloc(h, 1, 64, &err));
    cr_assert_eq(shmalloc_heap_check(h, 0), 0);
    shmalloc_heap_destroy(h);
}

Test(tlsf_separate, the_break_moves_as_the_inline_cores_does)
{
    device *d = dev_make(MIB);
    shmalloc_tlsf *t = dev_heap(d, MIB, 1);
    char *end = d->hidden + MIB, *spec;
    void *a = shmalloc_tlsf_malloc(t, 1000);
    shmalloc_counters c;
    cr_assert_eq(shmalloc_tlsf_sbreak(t, 0), end, "no spec area yet: the break is the end");
    spec = shmalloc_tlsf_sbreak(t, 4096);
    cr_assert_eq(spec, end - 4096);
    shmalloc_tlsf_counters(t, &c);
    cr_assert(c.spec == 4096 && c.capacity == MIB - 4096, "spec %zu, capacity %zu", c.spec, c.capacity);
    cr_assert_eq(shmalloc_tlsf_grow_status(t, 16), SHMALLOC_TLSF_NO_ROOM, "the spec area is in the way");
    cr_assert_null(shmalloc_tlsf_sbreak(t, -8192), "more given back than taken");
    cr_assert_null(shmalloc_tlsf_sbreak(t, (ptrdiff_t)MIB), "more than the top holds");
    cr_assert_eq(shmalloc_tlsf_sbreak(t, (ptrdiff_t)(shmalloc_tlsf_top_free(t))), (char *)a + 1008 - 0, "the top taken whole");
    cr_assert_eq(shmalloc_tlsf_top_free(t), 0);
    cr_assert_null(shmalloc_tlsf_malloc(t, 100), "no top, no free block");
    cr_assert_eq(shmalloc_tlsf_sbreak(t, -(ptrdiff_t)(MIB - 1008)), end, "all given back");
    cr_assert_eq(shmalloc_tlsf_top_free(t), MIB - 1008);
    shmalloc_tlsf_counters(t, &c);
    cr_assert(c.spec == 0 && c.capacity == MIB, "spec %zu, capacity %zu", c.spec, c.capacity);
    assert_tlsf_ok(t);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

/* shmalloc_tlsf_block_of against the walk, at bytes around every block's
   edges: a byte a used block holds gives that block; any other gives what
   validate gives the same pointer, and leaves the outputs alone. */
static void probe(shmalloc_tlsf *t, char *p, const walked *w)
{
    char *base = shmalloc_tlsf_base(t), *start = NULL;
    size_t size = 7, i;
    int code = shmalloc_tlsf_block_of(t, p, (void **)&start, &size);
    for (i = 0; i < w->n; i += 3) {
        char *user = base + w->v[i];
        size_t usable = w->v[i + 2] ? shmalloc_tlsf_usable_size(t, user) : 0;
        if (p >= user && (size_t)(p - user) < usable) {
            cr_assert(code == SHMALLOC_TLSF_OK && start == user && size == usable,
                      "offset %td: block %zu (%zu bytes) expected, got code %d", p - base, w->v[i], usable, code);
            return;
        }
    }
    cr_assert(code != SHMALLOC_TLSF_OK && start == NULL && size == 7, "offset %td is in no used block", p - base);
    cr_assert_eq(code, shmalloc_tlsf_validate(t, p), "offset %td", p - base);
}

static void probe_all(shmalloc_tlsf *t)
{
    static walked w;
    char *base = shmalloc_tlsf_base(t);
    static const long edge[] = {-17, -16, -9, -8, -1, 0, 1, 8, 15, 16, 17};
    w.n = 0;
    shmalloc_tlsf_walk(t, walk_one, &w);
    for (size_t i = 0; i < w.n; i += 3) {
        char *user = base + w.v[i];
        size_t span = w.v[i + 1];
        for (size_t e = 0; e < sizeof edge / sizeof edge[0]; e++) {
            probe(t, user + edge[e], &w);
            probe(t, user + span + edge[e], &w);
        }
        probe(t, user + span / 2, &w);
    }
    probe(t, base - 1, &w);
    probe(t, base + shmalloc_tlsf_size(t), &w);
}

/* Blocks up to 48 MiB over a 512 MiB region, resized in place across
   the large blocks' 64 KiB and back: the search climbs every level of
   the large marks' summary, and the checker checks the marks. */
static void block_of_steps(shmalloc_tlsf *t, uint64_t seed)
{
    enum { SLOTS = 300 };
    void *p[SLOTS] = {0};
    rng_seed(seed);
    for (int round = 0; round < 6; round++) {
        for (int k = 0; k < 2000; k++) {
            size_t i = rng() % SLOTS, size = 1 + rng() % (rng() % 16 ? 1024 : rng() % 4 ? 1 << 20 : 48 * MIB);
            if (p[i] && rng() % 2) { /* in place across the large blocks' size, or moved */
                void *q = shmalloc_tlsf_realloc(t, p[i], size);
                if (q) p[i] = q;
            } else if (p[i]) {
                cr_assert_eq(shmalloc_tlsf_free(t, p[i]), SHMALLOC_TLSF_OK);
                p[i] = NULL;
            } else {
                p[i] = shmalloc_tlsf_align(t, rng() % 4 ? 16 : (size_t)16 << rng() % 12, size);
            }
        }
        probe_all(t);
        assert_tlsf_ok(t);
    }
}

Test(tlsf_separate, block_of_finds_the_block_behind_any_byte_in_both_cores)
{
    device *d = dev_make(512 * MIB);
    shmalloc_tlsf *t = dev_heap(d, 512 * MIB, 1);
    void *mem = map_aligned(512 * MIB, MIB);
    shmalloc_tlsf *inl = shmalloc_tlsf_create(mem, 512 * MIB);
    cr_assert(inl != NULL);
    block_of_steps(inl, 3);
    block_of_steps(t, 3);
    shmalloc_tlsf_destroy(t);
}

/* A block that grows in place into the top, far past where any block
   reached before (the start map follows the highest block): block_of
   finds it behind its last byte, and a free of a byte inside it is
   refused as not a block, not as a double free. */
Test(tlsf_separate, block_of_finds_a_block_grown_into_the_top_behind_its_last_byte)
{
    device *d = dev_make(4 * MIB);
    shmalloc_tlsf *t = dev_heap(d, 4 * MIB, 1);
    char *a = shmalloc_tlsf_malloc(t, 100), *grown, *start = NULL;
    size_t size = 0;
    cr_assert_not_null(a);
    grown = shmalloc_tlsf_realloc(t, a, 3 * MIB);
    cr_assert_eq(grown, a, "the top is right behind a: it grows in place");
    cr_assert_eq(shmalloc_tlsf_block_of(t, a + 3 * MIB - 1, (void **)&start, &size), SHMALLOC_TLSF_OK);
    cr_assert(start == a && size == shmalloc_tlsf_usable_size(t, a), "start %p size %zu", (void *)start, size);
    cr_assert_eq(shmalloc_tlsf_free(t, a + 3 * MIB - 16), SHMALLOC_TLSF_NOT_A_BLOCK, "inside a used block");
    cr_assert_eq(shmalloc_tlsf_block_of(t, a + 3 * MIB + 16, (void **)&start, &size), SHMALLOC_TLSF_NOT_A_BLOCK,
                 "past it: the top, never handed out");
    assert_tlsf_ok(t);
    cr_assert_eq(shmalloc_tlsf_free(t, a), SHMALLOC_TLSF_OK);
    assert_tlsf_ok(t);
    shmalloc_tlsf_destroy(t);
}

/* A pointer into a freed block, and one past it into the next. */
Test(tlsf_separate, block_of_says_freed_memory_is_freed)
{
    device *d = dev_make(4 * MIB);
    shmalloc_tlsf *s = dev_heap(d, 4 * MIB, 1), *t;
    void *mem = map_aligned(4 * MIB, MIB), *start = NULL;
    size_t size = 0;
    t = shmalloc_tlsf_create(mem, 4 * MIB);
    for (int mode = 0; mode < 2; mode++, t = s) {
        char *a = shmalloc_tlsf_malloc(t, 1000), *b = shmalloc_tlsf_malloc(t, 5000), *c = shmalloc_tlsf_malloc(t, 10);
        cr_assert(a && b && c);
        cr_assert_eq(shmalloc_tlsf_free(t, b), SHMALLOC_TLSF_OK);
        cr_assert_eq(shmalloc_tlsf_block_of(t, b + 100, &start, &size), SHMALLOC_TLSF_ALREADY_FREE);
        cr_assert_eq(shmalloc_tlsf_block_of(t, c + 9, &start, &size), SHMALLOC_TLSF_OK);
        cr_assert(start == c && size == shmalloc_tlsf_usable_size(t, c));
        cr_assert_eq(shmalloc_tlsf_block_of(t, a + 999, &start, &size), SHMALLOC_TLSF_OK);
        cr_assert(start == a);
        assert_tlsf_ok(t);
    }
    shmalloc_tlsf_destroy(s);
}

/* The lookup a runtime needs from any address to its allocation (a
   tensor's storage, say), in both modes, past a growth too. */
Test(heap_separate, block_of_gives_the_allocation_behind_an_interior_pointer)
{
    device *d = dev_make(64 * MIB);
    void *mem = map_aligned(64 * MIB, MIB);
    shmalloc_heap_config inline_config = {4 * MIB, 0, NULL, SHMALLOC_METADATA_INLINE, NULL};
    shmalloc_heap *hs[2] = {dev_sym_heap(d, 4 * MIB, 0, 1), NULL};
    static char elsewhere[64];
    long err;
    hs[1] = shmalloc_heap_create_with(mem, 64 * MIB, &inline_config, shmalloc_transport_single(), &err);
    cr_assert(hs[1] != NULL);
    for (int m = 0; m < 2; m++) {
        shmalloc_heap *h = hs[m];
        char *a = shmalloc_heap_malloc(h, 1000, &err), *b = shmalloc_heap_align(h, 4096, 3000, &err);
        char *big = shmalloc_heap_malloc(h, 20 * MIB, &err), *start = NULL; /* past the nominal size: grown */
        size_t size = 0;
        cr_assert(a && b && big);
        cr_assert_eq(shmalloc_heap_block_of(h, big + 20 * MIB - 1, (void **)&start, &size), 0);
        cr_assert(start == big && size >= 20 * MIB && size == shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(h), big));
        cr_assert_eq(shmalloc_heap_block_of(h, b + 2999, (void **)&start, &size), 0);
        cr_assert(start == b && size >= 3000);
        cr_assert_eq(shmalloc_heap_block_of(h, a, (void **)&start, &size), 0);
        cr_assert(start == a && size >= 1000);
        shmalloc_heap_free(h, a, &err);
        start = NULL;
        cr_assert_eq(shmalloc_heap_block_of(h, a + 500, (void **)&start, &size), SHMEM_MALLOC_ALREADY_FREE);
        cr_assert_eq(shmalloc_heap_block_of(h, elsewhere, (void **)&start, &size), SHMEM_MALLOC_NOT_IN_SYMM_HEAP);
        cr_assert_null(start, "a failed lookup leaves the outputs alone");
        shmalloc_heap_free(h, b, &err);
        shmalloc_heap_free(h, big, &err);
        cr_assert_eq(shmalloc_heap_check(h, 0), 0);
        shmalloc_heap_destroy(h);
    }
}
