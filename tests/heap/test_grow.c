/* Heap growth: a region reserved for the largest heap whose blocks start
   small and grow on demand.  The TLSF core's grow, the heap layer's
   collective growth (every region registered, a failed registration leaving
   every heap as it was), SHMALLOC_HEAP_MAX, 4 pthreads PEs allocating
   far beyond their nominal size with the data checked from a neighbour,
   and bad arguments on one PE while the others' calls need growth. */
#define TEST_SUPPORT_PES
#include "test_support.h"

#include "bad_grow.h"

#include <unistd.h>

#define NOMINAL ((size_t)256 << 10)
#define MAX ((size_t)64 << 20)

static void *reserve(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert(p != MAP_FAILED, "cannot reserve %zu bytes", bytes);
    return p;
}

/* ---- the TLSF core ------------------------------------------------------ */
Test(grow_tlsf, a_reserved_region_starts_small_and_grows_into_one_free_block)
{
    size_t bytes = (size_t)4 << 20;
    char *mem = (char *)reserve(bytes);
    shmalloc_tlsf *t = shmalloc_tlsf_create_reserved(mem, bytes, 64 << 10);
    shmalloc_counters c;
    size_t room;
    void *p, *q;
    cr_assert(t != NULL);
    c = counters(t);
    cr_assert(c.capacity == (64 << 10) - 16, "capacity %zu", c.capacity);
    room = shmalloc_tlsf_room(t);
    cr_assert(room > ((size_t)3 << 20) && room < bytes);
    p = shmalloc_tlsf_malloc(t, 40 << 10);
    cr_assert(p != NULL);
    memset(p, 0x5a, 40 << 10);
    cr_assert(shmalloc_tlsf_malloc(t, 100 << 10) == NULL, "100 KiB cannot fit in 64 KiB");
    cr_assert(shmalloc_tlsf_grow(t, 1 << 20) == SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_room(t) == room - (1 << 20));
    c = counters(t);
    cr_assert(c.capacity == (64 << 10) - 16 + (1 << 20));
    cr_assert(c.largest_free >= (1 << 20), "the new bytes merged with the free top block: %zu", c.largest_free);
    q = shmalloc_tlsf_malloc(t, 1 << 20);
    cr_assert(q != NULL && (char *)q > (char *)p);
    memset(q, 0x6b, 1 << 20);
    cr_assert(((unsigned char *)p)[(40 << 10) - 1] == 0x5a, "old blocks are untouched");
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    cr_assert(shmalloc_tlsf_free(t, q) == SHMALLOC_TLSF_OK && shmalloc_tlsf_free(t, p) == SHMALLOC_TLSF_OK);
    cr_assert(counters(t).largest_free == counters(t).capacity, "one free block again");
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    munmap(mem, bytes);
}

Test(grow_tlsf, growth_is_refused_past_the_reservation_or_over_spec_blocks)
{
    size_t bytes = (size_t)1 << 20;
    char *mem = (char *)reserve(bytes);
    shmalloc_tlsf *t = shmalloc_tlsf_create_reserved(mem, bytes, 4096);
    shmalloc_counters before;
    cr_assert(t != NULL);
    before = counters(t);
    cr_assert(shmalloc_tlsf_grow(t, shmalloc_tlsf_room(t) + 1) == SHMALLOC_TLSF_NO_ROOM);
    cr_assert(shmalloc_tlsf_grow(t, (size_t)-1) == SHMALLOC_TLSF_NO_ROOM);
    cr_assert(counters(t).capacity == before.capacity);
    cr_assert(shmalloc_tlsf_sbreak(t, 256) != NULL);
    cr_assert(shmalloc_tlsf_grow(t, 4096) == SHMALLOC_TLSF_NO_ROOM, "the spec area sits where the blocks would grow");
    cr_assert(counters(t).capacity == before.capacity - 256);
    cr_assert(shmalloc_tlsf_sbreak(t, -256) != NULL);
    cr_assert(shmalloc_tlsf_grow(t, shmalloc_tlsf_room(t)) == 0, "all the room, exactly");
    cr_assert(shmalloc_tlsf_room(t) == 0);
    cr_assert(shmalloc_tlsf_grow(t, 32) == SHMALLOC_TLSF_NO_ROOM);
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    /* the whole region is now as if created at full size */
    cr_assert(counters(t).capacity == counters(shmalloc_tlsf_create(mem, bytes)).capacity);
    munmap(mem, bytes);
}

Test(grow_tlsf, many_small_growths_keep_the_start_map_and_the_checker_exact)
{
    size_t bytes = (size_t)8 << 20, i;
    char *mem = (char *)reserve(bytes);
    shmalloc_tlsf *t = shmalloc_tlsf_create_reserved(mem, bytes, 0);
    void *ptrs[600];
    cr_assert(t != NULL);
    for (i = 0; i < 600; i++) { /* 48 bytes at a time: map words fill across growths */
        ptrs[i] = shmalloc_tlsf_malloc(t, 24);
        if (!ptrs[i]) {
            cr_assert(shmalloc_tlsf_grow(t, 48 + (i % 3) * 16) == SHMALLOC_TLSF_OK);
            ptrs[i] = shmalloc_tlsf_malloc(t, 24);
        }
        cr_assert(ptrs[i] != NULL, "allocation %zu", i);
        memset(ptrs[i], (int)i, 24);
    }
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    for (i = 0; i < 600; i += 2) cr_assert(shmalloc_tlsf_free(t, ptrs[i]) == SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_free(t, ptrs[0]) == SHMALLOC_TLSF_ALREADY_FREE);
    for (i = 1; i < 600; i += 2) cr_assert(((unsigned char *)ptrs[i])[23] == (unsigned char)i);
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    munmap(mem, bytes);
}

/* ---- the heap layer, one PE, with a transport that records registrations ---- */
static struct {
    int registered, deregistered, fail_at; /* fail_at: the registration to refuse, 1-based; 0 none */
    char *base[80];
    size_t bytes[80];
} reg;

static int rec_barrier(void *user) { (void)user; return 0; }
static int rec_reduce(void *user, uint64_t *v, int n) { (void)user, (void)v, (void)n; return 0; }
static int rec_register(void *user, void *base, size_t bytes)
{
    (void)user;
    if (reg.registered + 1 == reg.fail_at) {
        reg.fail_at = 0;
        return -1;
    }
    reg.base[reg.registered] = (char *)base;
    reg.bytes[reg.registered++] = bytes;
    return 0;
}
static int rec_deregister(void *user, void *base, size_t bytes)
{
    int i;
    (void)user;
    for (i = 0; i < reg.registered; i++)
        if (reg.base[i] == (char *)base && reg.bytes[i] == bytes) {
            reg.bytes[i] = 0;
            reg.deregistered++;
            return 0;
        }
    cr_assert(0, "deregistered %zu bytes at %p, never registered", bytes, base);
    return -1;
}

static shmalloc_heap *growing_heap(char **mem, size_t *bytes)
{
    shmalloc_transport tp = transport_for(0, 1);
    shmalloc_heap *h;
    long err = 1;
    tp.barrier = rec_barrier;
    tp.allreduce_max = rec_reduce;
    tp.register_region = rec_register;
    tp.deregister_region = rec_deregister;
    *bytes = shmalloc_heap_bytes(MAX);
    *mem = (char *)reserve(*bytes);
    h = create_from_table(*mem, *bytes, NOMINAL, 1, &tp, &err);
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK);
    return h;
}

Test(grow_heap, allocations_far_beyond_the_nominal_size_grow_the_heap_in_registered_pieces)
{
    char *mem, *base;
    size_t bytes, i, end;
    shmalloc_heap *h = growing_heap(&mem, &bytes);
    unsigned char *p[48];
    long err;
    base = (char *)shmalloc_heap_base(h);
    cr_assert(reg.registered == 1 && reg.base[0] == base && reg.bytes[0] == shmalloc_heap_size(h));
    cr_assert(shmalloc_heap_size(h) < NOMINAL + 4096, "starts at its nominal size: %zu", shmalloc_heap_size(h));
    for (i = 0; i < 48; i++) { /* 48 MiB from a 256 KiB heap */
        p[i] = (unsigned char *)shmalloc_heap_malloc(h, 1 << 20, &err);
        cr_assert(p[i] != NULL && err == SHMEM_MALLOC_OK, "allocation %zu: error %ld", i, err);
        memset(p[i], (int)i + 1, 1 << 20);
    }
    for (i = 0; i < 48; i++) cr_assert(p[i][0] == i + 1 && p[i][(1 << 20) - 1] == i + 1);
    cr_assert(reg.registered > 1 && reg.registered < 12, "doubling keeps the regions few: %d", reg.registered);
    for (end = 0, i = 0; i < (size_t)reg.registered; i++) { /* contiguous, in order, ending at the heap's size */
        cr_assert(reg.base[i] == base + end, "region %zu starts at offset %zu", i, (size_t)(reg.base[i] - base));
        end += reg.bytes[i];
    }
    cr_assert(end == shmalloc_heap_size(h));
    cr_assert(shmalloc_heap_contains(h, p[47] + (1 << 20) - 1));
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    for (i = 0; i < 48; i++) shmalloc_heap_free(h, p[i], &err);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
    cr_assert(reg.deregistered == reg.registered, "every region deregistered at destroy");
    munmap(mem, bytes);
}

Test(grow_heap, realloc_and_align_grow_the_heap_too)
{
    char *mem;
    size_t bytes, i;
    shmalloc_heap *h = growing_heap(&mem, &bytes);
    unsigned char *p, *a;
    long err;
    p = (unsigned char *)shmalloc_heap_malloc(h, 100 << 10, &err);
    cr_assert(p != NULL);
    for (i = 0; i < (100 << 10); i++) p[i] = (unsigned char)(i * 7);
    p = (unsigned char *)shmalloc_heap_realloc(h, p, (size_t)8 << 20, &err);
    cr_assert(p != NULL && err == SHMEM_MALLOC_OK, "realloc to 8 MiB: error %ld", err);
    for (i = 0; i < (100 << 10); i++) cr_assert(p[i] == (unsigned char)(i * 7), "byte %zu kept", i);
    a = (unsigned char *)shmalloc_heap_align(h, (size_t)1 << 20, (size_t)4 << 20, &err);
    cr_assert(a != NULL && ((uintptr_t)a & ((1 << 20) - 1)) == 0, "aligned to 1 MiB: %p, error %ld", (void *)a, err);
    memset(a, 1, (size_t)4 << 20);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_free(h, a, &err);
    shmalloc_heap_free(h, p, &err);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
    munmap(mem, bytes);
}

Test(grow_heap, past_the_reservation_the_call_fails_and_the_heap_is_unchanged)
{
    char *mem;
    size_t bytes, size;
    shmalloc_heap *h;
    void *p;
    long err = 0;
    setenv("SHMALLOC_HEAP_MAX", "64M", 1); /* the variable that set MAX, as a transport reads it */
    cr_assert(shmalloc_options_read(NULL) == 0);
    h = growing_heap(&mem, &bytes);
    capture_start();
    cr_assert(shmalloc_heap_malloc(h, MAX + 4096, &err) == NULL && err == SHMEM_MALLOC_FAIL, "error %ld", err);
    size = shmalloc_heap_size(h);
    cr_assert(size < MAX, "a growth that cannot serve the call is not made");
    p = shmalloc_heap_malloc(h, MAX - (1 << 20), &err);
    cr_assert(p != NULL, "nearly the whole reservation: error %ld", err);
    cr_assert(shmalloc_heap_malloc(h, 2 << 20, &err) == NULL && err == SHMEM_MALLOC_FAIL);
    cr_assert(shmalloc_heap_realloc(h, p, MAX + (1 << 20), &err) == NULL && err == SHMEM_MALLOC_REALLOC_FAILED, "error %ld", err);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "malloc of 67112960 bytes"), "the first failure is reported:\n%s", out_text[2]);
    assert_said(HEAP_OOM_TOO_SMALL, 0, "set SHMALLOC_HEAP_MAX to at least 65M", ""); /* the advice */
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_free(h, p, &err);
    cr_assert(err == SHMEM_MALLOC_OK && shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
    munmap(mem, bytes);
}

Test(grow_heap, a_failed_registration_fails_the_call_and_leaves_the_heap_as_it_was)
{
    char *mem;
    size_t bytes, size;
    shmalloc_heap *h = growing_heap(&mem, &bytes);
    void *p;
    long err = 0;
    size = shmalloc_heap_size(h);
    reg.fail_at = 2; /* the first growth */
    capture_start();
    cr_assert(shmalloc_heap_malloc(h, 1 << 20, &err) == NULL && err == SHMEM_MALLOC_FAIL, "error %ld", err);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "malloc of 1048576 bytes"), "the call and its size: %s", out_text[2]);
    cr_assert(shmalloc_heap_size(h) == size && reg.registered == 1);
    p = shmalloc_heap_malloc(h, NOMINAL / 2, &err);
    cr_assert(p != NULL, "the heap still serves what fits");
    shmalloc_heap_free(h, p, &err);
    p = shmalloc_heap_malloc(h, 1 << 20, &err);
    cr_assert(p != NULL && reg.registered == 2, "the next call grows: error %ld", err);
    shmalloc_heap_free(h, p, &err);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
    cr_assert(reg.deregistered == 2);
    munmap(mem, bytes);
}

Test(grow_heap, without_an_all_reduce_or_room_the_heap_does_not_grow)
{
    size_t bytes = shmalloc_heap_bytes(MAX);
    char *mem = (char *)reserve(bytes);
    shmalloc_transport tp = transport_for(0, 1);
    shmalloc_heap *h;
    long err;
    clear_size_env();
    cr_assert(shmalloc_options_read(NULL) == 0); /* the size variable's default in force */
    tp.barrier = rec_barrier; /* no all-reduce: PEs could not agree on growing */
    h = create_from_table(mem, bytes, NOMINAL, 0, &tp, &err);
    cr_assert(h != NULL);
    capture_start();
    cr_assert(shmalloc_heap_malloc(h, 1 << 20, &err) == NULL && err == SHMEM_MALLOC_FAIL);
    cr_assert(shmalloc_heap_size(h) < NOMINAL + 4096);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
    h = create_from_table(mem, shmalloc_heap_bytes(NOMINAL), SIZE_MAX, 0, shmalloc_transport_single(), &err);
    cr_assert(h != NULL);
    cr_assert(shmalloc_heap_malloc(h, 1 << 20, &err) == NULL && err == SHMEM_MALLOC_FAIL);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 2, "%s", out_text[2]);
    cr_assert_eq(count_in(out_text[2], "malloc of 1048576 bytes"), 2, "%s", out_text[2]);
    cr_assert_eq(count_in(out_text[2], "set SHMEM_SYMMETRIC_HEAP_SIZE to at least 1M"), 2,
                 "neither heap can grow:\n%s", out_text[2]);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
    munmap(mem, bytes);
}

Test(grow_heap, the_stats_count_the_growths)
{
    char *mem;
    size_t bytes;
    shmalloc_heap *h = growing_heap(&mem, &bytes);
    void *p;
    long err;
    p = shmalloc_heap_malloc(h, 4 << 20, &err);
    cr_assert(p != NULL);
    capture_start();
    shmalloc_heap_stats(h, 0);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_STATS_GROWTH), 1, "stats say:\n%s", out_text[1]);
    cr_assert(strstr(out_text[1], "grown 1 time") != NULL, "stats say:\n%s", out_text[1]);
    shmalloc_heap_free(h, p, &err);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
    munmap(mem, bytes);
}

/* ---- SHMALLOC_HEAP_MAX ---------------------------------------------------- */
static void pe_heap_max(void *arg)
{
    shmalloc_info i;
    PE_CHECK(shmalloc_heap_info(shmalloc_current(), &i) == 0);
    ((size_t *)arg)[0] = i.heap_size;
    ((size_t *)arg)[1] = i.heap_max;
}

/* The heap a PE gets for SHMALLOC_HEAP_MAX=value: its size and max. */
static int heap_max_with(const char *value, size_t got[2])
{
    got[0] = got[1] = 0;
    if (value) setenv("SHMALLOC_HEAP_MAX", value, 1);
    else unsetenv("SHMALLOC_HEAP_MAX");
    return shmalloc_pthreads_run(1, NOMINAL, pe_heap_max, got);
}

Test(grow_env, heap_max_parses_sizes_and_refuses_bad_values)
{
    size_t got[2];
    cr_assert(heap_max_with(NULL, got) == 0 && got[1] == got[0] && got[0] >= NOMINAL, "unset: no growth");
    cr_assert(heap_max_with("0", got) == 0 && got[1] == got[0] && got[0] >= NOMINAL, "0: no growth");
    cr_assert(heap_max_with("64M", got) == 0 && got[1] >= MAX - MIB && got[1] <= MAX + MIB, "64M: %zu", got[1]);
    capture_start();
    cr_assert(heap_max_with("lots", got) != 0);
    cr_assert(heap_max_with("128K", got) != 0, "below the nominal size");
    cr_assert(heap_max_with("-1G", got) != 0);
    capture_stop();
    unsetenv("SHMALLOC_HEAP_MAX");
    cr_assert(strstr(out_text[2], "SHMALLOC_HEAP_MAX=\"lots\" is not a heap size") &&
                  strstr(out_text[2], "SHMALLOC_HEAP_MAX=\"128K\" (131072 bytes) is below the heap size of 262144 bytes") &&
                  strstr(out_text[2], "SHMALLOC_HEAP_MAX=\"-1G\" is not a heap size"),
              "each bad value is named:\n%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 2, "%s", out_text[2]);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_HEAP_MAX_BELOW), 1, "%s", out_text[2]);
    cr_assert_eq(out_nids, 3, "%s", out_text[2]);
}

static void never_runs(void *arg) { *(int *)arg = 1; }

Test(grow_env, a_bad_heap_max_stops_the_pthreads_transport_before_any_pe_runs)
{
    int ran = 0;
    setenv("SHMALLOC_HEAP_MAX", "12Q", 1);
    capture_start();
    cr_assert(shmalloc_pthreads_run(2, NOMINAL, never_runs, &ran) != 0);
    capture_stop();
    cr_assert(ran == 0);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "SHMALLOC_HEAP_MAX=\"12Q\" is not a heap size"), "%s", out_text[2]);
}

/* Any bad value stops start-up with its one message: nothing about heaps. */
Test(grow_env, a_bad_debug_value_stops_the_pthreads_transport_with_one_message)
{
    int ran = 0;
    setenv("SHMALLOC_DEBUG", "yes", 1);
    capture_start();
    cr_assert(shmalloc_pthreads_run(2, NOMINAL, never_runs, &ran) != 0);
    capture_stop();
    unsetenv("SHMALLOC_DEBUG");
    cr_assert(ran == 0);
    cr_assert(!strcmp(out_text[2], "shmalloc: SHMALLOC_DEBUG=\"yes\" is not a switch: expected 0 (off) or 1 to 9 "
                                   "(on)\n"), "%s", out_text[2]);
}

/* ---- 4 PEs on the pthreads transport -------------------------------------- */
#define PES 4
#define PIECES 24
#define PIECE ((size_t)1 << 20)

static int failures;

static void check(int ok, const char *what, int i)
{
    if (!ok && __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED) == 1)
        fprintf(stderr, "PE %d: %s (piece %d, malloc_error %ld)\n", shmem_my_pe(), what, i, malloc_error);
}

static unsigned char pattern(int pe, int piece, size_t at) { return (unsigned char)(pe * 31 + piece * 7 + (int)(at >> 12)); }

static void grow_pe(void *arg)
{
    int me = shmem_my_pe(), right = (me + 1) % PES, left = (me + PES - 1) % PES, i;
    unsigned char *p[PIECES], *buf = (unsigned char *)malloc(PIECE);
    size_t at;
    (void)arg;
    check(buf != NULL, "malloc", 0);
    for (i = 0; i < PIECES; i++) { /* 24 MiB from a 256 KiB heap */
        p[i] = (unsigned char *)shmem_malloc(PIECE);
        check(p[i] != NULL, "shmem_malloc of 1 MiB", i);
        if (!p[i]) return;
        for (at = 0; at < PIECE; at += 4096) p[i][at] = pattern(me, i, at);
    }
    check(shmalloc_heap_size(shmalloc_current()) >= PIECES * PIECE, "heap grew", 0);
    shmem_barrier_all();
    for (i = 0; i < PIECES; i++) { /* the neighbour's copy, read through its heap */
        shmem_getmem(buf, p[i], PIECE, right);
        for (at = 0; at < PIECE; at += 4096) check(buf[at] == pattern(right, i, at), "right neighbour's data", i);
    }
    shmem_barrier_all();
    for (i = 0; i < PIECES; i++) { /* and written into the neighbour's */
        for (at = 0; at < PIECE; at += 4096) buf[at] = pattern(me + 100, i, at);
        shmem_putmem(p[i], buf, PIECE, left);
    }
    shmem_barrier_all();
    for (i = 0; i < PIECES; i++)
        for (at = 0; at < PIECE; at += 4096) check(p[i][at] == pattern(right + 100, i, at), "put from the right", i);
    shmem_barrier_all();
    for (i = 0; i < PIECES; i++) shmem_free(p[i]);
    check(shmalloc_check(0) == 0, "heap check", 0);
    free(buf);
}

Test(grow_pthreads, four_pes_allocate_far_beyond_the_nominal_size_and_see_each_others_data)
{
    setenv("SHMALLOC_HEAP_MAX", "256M", 1);
    cr_assert(shmalloc_pthreads_run(PES, NOMINAL, grow_pe, NULL) == 0);
    cr_assert(failures == 0, "%d checks failed (see stderr)", failures);
}

/* One PE's bad pointer, size or alignment while the others' calls must
   grow the heap: every PE gets its error at once, nothing grows (the
   cases are in bad_grow.h, which the PMIx worker runs too). */
static void bad_grow_pe(void *arg)
{
    (void)arg;
    bad_grow_run(pe_failed);
}

Test(grow_pthreads, a_bad_argument_on_one_pe_fails_every_pes_call_at_once_and_grows_no_heap, .timeout = 60)
{
    int npes;
    setenv("SHMALLOC_HEAP_MAX", "64M", 1);
    for (npes = 2; npes <= 3; npes++) {
        capture_start();
        cr_assert(shmalloc_pthreads_run(npes, MIB, bad_grow_pe, NULL) == 0);
        capture_stop();
        assert_no_pe_failed();
    }
}

/* The out-of-memory advice is the smallest limit that serves the call:
   2 PEs, 1 MiB heaps, a 128 MiB request that SHMALLOC_HEAP_MAX=64M
   refuses; the advised value serves it, a MiB less does not. */
static void malloc_128m_pe(void *arg)
{
    void *p = shmem_malloc(128 * MIB);
    if (shmem_my_pe() == 0) *(int *)arg = p != NULL;
    shmem_free(p);
    PE_CHECK_EQ(shmalloc_check(-1), 0);
}

static int served_with_heap_max(size_t mib)
{
    char max[32];
    int served = -1;
    snprintf(max, sizeof max, "%zuM", mib);
    setenv("SHMALLOC_HEAP_MAX", max, 1);
    capture_start();
    cr_assert(shmalloc_pthreads_run(2, MIB, malloc_128m_pe, &served) == 0);
    capture_stop();
    assert_no_pe_failed();
    return served;
}

Test(grow_pthreads, the_advised_heap_max_is_the_smallest_that_serves_the_call, .timeout = 60)
{
    const char *at;
    size_t advised = 0;
    cr_assert_eq(served_with_heap_max(64), 0);
    at = strstr(out_text[2], "set SHMALLOC_HEAP_MAX to at least ");
    cr_assert(at && sscanf(at, "set SHMALLOC_HEAP_MAX to at least %zuM", &advised) == 1, "%s", out_text[2]);
    cr_assert_eq(served_with_heap_max(advised), 1, "the advised %zuM did not serve the call", advised);
    cr_assert_eq(served_with_heap_max(advised - 1), 0, "%zuM, a MiB less than advised, served it too", advised - 1);
}

/* ---- a large heap costs memory only where it is used ---------------------- */
static size_t resident_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert(f != NULL);
    cr_assert(fscanf(f, "%lu %lu", &size, &resident) == 2);
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

Test(grow_tlsf, an_8_gib_heap_touches_its_start_map_only_under_the_high_water_mark)
{
    size_t bytes = (size_t)8 << 30, before, used; /* valgrind maps no more */
    char *mem = (char *)reserve(bytes);
    shmalloc_tlsf *t;
    void *p, *q;
    before = resident_bytes();
    t = shmalloc_tlsf_create(mem, bytes); /* a start map of 64 MiB if it were zeroed at once */
    cr_assert(t != NULL);
    p = shmalloc_tlsf_malloc(t, 1 << 20);
    q = shmalloc_tlsf_malloc(t, 100);
    cr_assert(p && q);
    memset(p, 1, 1 << 20);
    used = resident_bytes() - before;
    cr_assert(used < ((size_t)8 << 20), "%zu bytes resident after 1 MiB of allocations", used);
    cr_assert(shmalloc_tlsf_free(t, mem + ((size_t)5 << 30)) == SHMALLOC_TLSF_NOT_A_BLOCK,
              "a pointer where no block ever was is not a block");
    cr_assert(shmalloc_tlsf_free(t, q) == SHMALLOC_TLSF_OK && shmalloc_tlsf_free(t, q) == SHMALLOC_TLSF_ALREADY_FREE);
    cr_assert(shmalloc_tlsf_free(t, p) == SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    munmap(mem, bytes);
}

/* A block that grows in place raises the high-water mark past the zeroed
   map: the map must be zeroed there before a later block is marked in it,
   or zeroing it later would forget that block. */
Test(grow_tlsf, the_start_map_is_zeroed_past_a_block_grown_in_place_before_blocks_start_there)
{
    size_t bytes = (size_t)1 << 30;
    char *mem = (char *)reserve(bytes);
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    char *p, *f, *q, *r;
    cr_assert(t != NULL);
    p = (char *)shmalloc_tlsf_malloc(t, 64);
    cr_assert(p != NULL);
    cr_assert(shmalloc_tlsf_realloc(t, p, (size_t)3 << 20) == p, "grown in place into the free rest");
    cr_assert(shmalloc_tlsf_realloc(t, p, 64) == p, "and shrunk again: the high-water mark stays at 3 MiB");
    f = (char *)shmalloc_tlsf_malloc(t, (size_t)2 << 20); /* below the mark */
    q = (char *)shmalloc_tlsf_malloc(t, 64);
    cr_assert(f && q > f && q < p + (3 << 20), "q starts 2 MiB in, below the high-water mark");
    r = (char *)shmalloc_tlsf_malloc(t, (size_t)256 << 20); /* takes the zeroed map much further */
    cr_assert(r != NULL);
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    cr_assert(shmalloc_tlsf_free(t, q) == SHMALLOC_TLSF_OK, "q is still known to be a block");
    cr_assert(shmalloc_tlsf_free(t, r) == SHMALLOC_TLSF_OK && shmalloc_tlsf_free(t, p) == SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_free(t, f) == SHMALLOC_TLSF_OK);
    cr_assert(shmalloc_tlsf_check(t, 0) == 0);
    munmap(mem, bytes);
}
