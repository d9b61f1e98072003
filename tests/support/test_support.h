/* test_support.h - what the test programs share, defined once: memory and
   heaps made for a test, transports for N PEs, capture of the allocator's
   output, fill patterns, heap snapshots and hashes, and the heap-check
   assertions.  Include it first (it defines _GNU_SOURCE and includes
   Criterion or its stand-in, and shmalloc.h).  Everything is static and
   marked unused: each program uses a part. */
#ifndef SHMALLOC_TEST_SUPPORT_H
#define SHMALLOC_TEST_SUPPORT_H

#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* mmap flags, setenv, mkstemp and strsignal in the stand-in runner */
#endif
#include "criterion_shim.h" /* Criterion, or its stand-in under TSan */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SHMALLOC_MESSAGE_FORMATS /* each message's text, for assert_said */
#include "shmalloc.h"
#include "transports/common/messages.h"
#include "transports/pmix_ofi/messages.h"
#include "transports/pthreads/messages.h"
#include "tests/fork/transport_fork/messages.h"

#define TS_UNUSED __attribute__((unused))

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* >> memory ---------------------------------------------------------------- */

/* `bytes` of fresh memory aligned to `align` (a power of two).  Never
   unmapped: each test runs in a process of its own. */
TS_UNUSED static void *map_aligned(size_t bytes, size_t align)
{
    size_t total = bytes + align;
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert(m != MAP_FAILED, "mmap of %zu bytes failed", total);
    return (void *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
}

/* A fresh TLSF heap over a region sized so that malloc(cap) succeeds. */
TS_UNUSED static shmalloc_tlsf *heap_with_capacity(size_t cap, void **mem_out)
{
    size_t bytes = cap + shmalloc_tlsf_overhead(cap);
    void *mem = map_aligned(bytes, MIB);
    shmalloc_tlsf *t = shmalloc_tlsf_create(mem, bytes);
    cr_assert(t != NULL, "create over %zu bytes (cap %zu) failed", bytes, cap);
    if (mem_out) *mem_out = mem;
    return t;
}

/* Allocates blocks of `size` until malloc fails; returns how many. */
TS_UNUSED static size_t fill_heap(shmalloc_tlsf *t, size_t size, void **ptrs, size_t max)
{
    size_t n = 0;
    while (n < max) {
        void *p = shmalloc_tlsf_malloc(t, size);
        if (!p) break;
        ptrs[n++] = p;
    }
    cr_assert(n < max, "heap did not fill within %zu blocks", max);
    return n;
}

/* >> the heap checker ------------------------------------------------------- */

/* Every test that changes a heap ends with one of these.  On failure the
   checker's own report (level 0) is the assertion's message. */
TS_UNUSED static void assert_checked_at(int (*check)(const void *, int), const void *heap, const char *file, int line);
TS_UNUSED static int tlsf_check_fn(const void *t, int level) { return shmalloc_tlsf_check((const shmalloc_tlsf *)t, level); }
TS_UNUSED static int heap_check_fn(const void *h, int level)
{
    (void)h;
    return shmalloc_check(level);
}
#define assert_tlsf_ok(t) assert_checked_at(tlsf_check_fn, (t), __FILE__, __LINE__)
/* The current heap, through shmalloc_check. */
#define assert_heap_ok() assert_checked_at(heap_check_fn, NULL, __FILE__, __LINE__)

/* >> output capture ----------------------------------------------------------
   The allocator's messages by stream (0 other, 1 stdout, 2 stderr), from
   any thread, so that expected messages are asserted on, not printed:
   their IDs in order (out_said() counts one), and their text. */
#define OUT_ROOM ((size_t)1 << 17)
#define OUT_IDS 4096
TS_UNUSED static char out_text[3][OUT_ROOM];
TS_UNUSED static size_t out_len[3];
TS_UNUSED static int out_calls[3];
TS_UNUSED static int out_ids[OUT_IDS];
TS_UNUSED static size_t out_nids;
TS_UNUSED static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

TS_UNUSED static void capture(void *user, int stream, int id, const char *text)
{
    int s = (stream == 1 || stream == 2) ? stream : 0;
    size_t n = strlen(text);
    (void)user;
    pthread_mutex_lock(&out_lock);
    out_calls[s]++;
    if (out_nids < OUT_IDS) out_ids[out_nids++] = id;
    if (out_len[s] + n >= OUT_ROOM) n = OUT_ROOM - 1 - out_len[s];
    memcpy(out_text[s] + out_len[s], text, n);
    out_len[s] += n;
    out_text[s][out_len[s]] = '\0';
    pthread_mutex_unlock(&out_lock);
}

/* Empties the buffers and routes the allocator's output into them. */
TS_UNUSED static void capture_start(void)
{
    int s;
    pthread_mutex_lock(&out_lock);
    for (s = 0; s < 3; s++) out_len[s] = 0, out_calls[s] = 0, out_text[s][0] = '\0';
    out_nids = 0;
    pthread_mutex_unlock(&out_lock);
    shmalloc_set_output(capture, NULL);
}

/* How many times message id (SHMALLOC_MSG_*) was printed since capture_start. */
TS_UNUSED static size_t out_said(int id)
{
    size_t i, n = 0;
    pthread_mutex_lock(&out_lock);
    for (i = 0; i < out_nids; i++) n += out_ids[i] == id;
    pthread_mutex_unlock(&out_lock);
    return n;
}

/* The same for the message named `name`, of any layer: a transport's IDs
   are known once it has added its table (shmalloc_messages_add). */
TS_UNUSED static size_t out_said_named(const char *name)
{
    size_t i, n = 0;
    pthread_mutex_lock(&out_lock);
    for (i = 0; i < out_nids; i++) {
        const char *said_name = shmalloc_message_name(out_ids[i]);
        n += said_name && !strcmp(said_name, name);
    }
    pthread_mutex_unlock(&out_lock);
    return n;
}
#define out_said_id(ID) out_said_named(#ID)

/* Message ID id is named `name` (shmalloc_message_name). */
#define assert_named(id, name)                                                                                  \
    do {                                                                                                        \
        const char *named_ = shmalloc_message_name(id);                                                         \
        cr_assert(named_ && !strcmp(named_, name), "ID %d is %s, not %s", (int)(id), named_ ? named_ : "none",  \
                  name);                                                                                        \
    } while (0)

/* Message ID was printed with these arguments: checked by its ID and by
   the line its own text makes of them, so that its words can change
   without the test. */
#define assert_said(ID, ...)                                                                                    \
    do {                                                                                                        \
        char said_line_[512];                                                                                   \
        snprintf(said_line_, sizeof said_line_, shm__text_##ID, __VA_ARGS__);                                   \
        cr_assert(out_said_id(ID) > 0, "no message " #ID " in\n%s%s", out_text[1], out_text[2]);               \
        cr_assert(strstr(out_text[1], said_line_) || strstr(out_text[2], said_line_), "expected\n%sin\n%s%s",   \
                  said_line_, out_text[1], out_text[2]);                                                         \
    } while (0)

TS_UNUSED static void capture_stop(void) { shmalloc_set_output(NULL, NULL); }

TS_UNUSED static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Occurrences of needle in text. */
TS_UNUSED static size_t count_in(const char *text, const char *needle)
{
    size_t n = 0;
    const char *p;
    for (p = text; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

/* A file's descriptor 2 (after cr_redirect_stderr) read back whole. */
TS_UNUSED static void read_redirected_stderr(char *buf, size_t size)
{
    FILE *f = cr_get_redirected_stderr();
    size_t n;
    fflush(stderr);
    n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
}

TS_UNUSED static void assert_checked_at(int (*check)(const void *, int), const void *heap, const char *file, int line)
{
    if (check(heap, -1) == 0) return;
    capture_start();
    check(heap, 0);
    capture_stop();
    cr_assert(0, "%s:%d: the heap checker failed: %s", file, line, out_text[2]);
}

/* >> fill patterns ------------------------------------------------------------
   Byte i of a block filled with `tag`: start and stride depend on the tag,
   so a stale block of another tag does not pass for a fresh one. */
TS_UNUSED static unsigned char pattern_byte(unsigned tag, size_t i)
{
    unsigned h = tag * 2654435761u;
    return (unsigned char)((h >> 24) + (unsigned)i * (((h >> 16) & 0x7fu) * 2u + 1u));
}

TS_UNUSED static void fill_pattern(void *p, size_t n, unsigned tag)
{
    unsigned char *b = (unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) b[i] = pattern_byte(tag, i);
}

/* Index of the first byte that differs from fill_pattern(.., tag), or n. */
TS_UNUSED static size_t first_unlike(const void *p, size_t n, unsigned tag)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != pattern_byte(tag, i)) return i;
    return n;
}

TS_UNUSED static int check_pattern(const void *p, size_t n, unsigned tag) { return first_unlike(p, n, tag) == n; }

/* >> random numbers: xorshift64*, the same sequence on every run ------------- */
TS_UNUSED static uint64_t rng_state;
TS_UNUSED static void rng_seed(uint64_t s) { rng_state = s ? s : 0x9e3779b97f4a7c15u; }
TS_UNUSED static uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1du;
}
TS_UNUSED static uint64_t rng(void) { return rng_next(&rng_state); }
TS_UNUSED static size_t rng_below(size_t n) { return (size_t)(rng() % n); }
/* 1 .. 2^max_log2, log-uniform. */
TS_UNUSED static size_t rng_size(unsigned max_log2)
{
    unsigned bits = (unsigned)rng_below(max_log2 + 1);
    return 1 + (size_t)(rng() & (((uint64_t)1 << bits) - 1));
}

/* >> heap state ---------------------------------------------------------------- */

TS_UNUSED static shmalloc_counters counters(const shmalloc_tlsf *t)
{
    shmalloc_counters c;
    memset(&c, 0, sizeof c);
    shmalloc_tlsf_counters(t, &c);
    return c;
}

TS_UNUSED static shmalloc_counters heap_counters(shmalloc_heap *h) { return counters(shmalloc_heap_tlsf(h)); }

TS_UNUSED static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

TS_UNUSED static size_t off_of(const shmalloc_tlsf *t, const void *p)
{
    return (size_t)((const char *)p - (const char *)shmalloc_tlsf_base(t));
}

/* The offset of p in the current heap. */
TS_UNUSED static size_t offset_of(const void *p)
{
    return (size_t)((const char *)p - (const char *)shmalloc_heap_base(shmalloc_current()));
}

TS_UNUSED static shmalloc_info info_of(shmalloc_heap *h)
{
    shmalloc_info i;
    memset(&i, 0xff, sizeof i);
    cr_assert_eq(shmalloc_heap_info(h, &i), 0);
    return i;
}

/* A copy of the block list and counters, to prove a call left a heap unchanged. */
#define SNAP_MAX 4096
typedef struct snapshot {
    shmalloc_counters c;
    size_t n;
    int overflow;
    shmalloc_block_info b[SNAP_MAX];
} snapshot;

TS_UNUSED static int snap_cb(void *user, const shmalloc_block_info *bi)
{
    snapshot *s = (snapshot *)user;
    if (s->n == SNAP_MAX) {
        s->overflow = 1;
        return 1;
    }
    s->b[s->n++] = *bi;
    return 0;
}

/* From a small ring: a test compares at most two or three at a time. */
TS_UNUSED static snapshot *take_snapshot(const shmalloc_tlsf *t)
{
    static snapshot ring[4];
    static unsigned next;
    snapshot *s = &ring[next++ % 4];
    memset(s, 0, sizeof *s);
    s->c = counters(t);
    shmalloc_tlsf_walk(t, snap_cb, s);
    cr_assert(!s->overflow, "too many blocks for a snapshot");
    return s;
}

TS_UNUSED static snapshot *heap_snapshot(shmalloc_heap *h) { return take_snapshot(shmalloc_heap_tlsf(h)); }

TS_UNUSED static void assert_same_heap(const snapshot *a, const snapshot *b, const char *what)
{
    size_t i;
    cr_assert_eq(a->c.capacity, b->c.capacity, "%s: capacity changed", what);
    cr_assert_eq(a->c.in_use, b->c.in_use, "%s: in_use %zu -> %zu", what, a->c.in_use, b->c.in_use);
    cr_assert_eq(a->c.free, b->c.free, "%s: free changed", what);
    cr_assert_eq(a->c.largest_free, b->c.largest_free, "%s: largest_free changed", what);
    cr_assert_eq(a->c.used_blocks, b->c.used_blocks, "%s: used_blocks changed", what);
    cr_assert_eq(a->c.high_water, b->c.high_water, "%s: high_water %zu -> %zu", what, a->c.high_water, b->c.high_water);
    cr_assert_eq(a->c.spec, b->c.spec, "%s: spec changed", what);
    cr_assert_eq(a->c.largest_request, b->c.largest_request, "%s: largest_request changed", what);
    cr_assert_eq(a->n, b->n, "%s: block count %zu -> %zu", what, a->n, b->n);
    for (i = 0; i < a->n; i++)
        cr_assert(a->b[i].offset == b->b[i].offset && a->b[i].size == b->b[i].size && a->b[i].used == b->b[i].used,
                  "%s: block %zu changed", what, i);
}

/* FNV-1a over every block's offset, size and state: equal on PEs whose
   heaps hold the same blocks. */
TS_UNUSED static int hash_cb(void *user, const shmalloc_block_info *b)
{
    uint64_t *h = (uint64_t *)user;
    *h = (*h ^ b->offset) * 0x100000001b3ULL;
    *h = (*h ^ (b->size << 1 | (b->used ? 1u : 0u))) * 0x100000001b3ULL;
    return 0;
}

TS_UNUSED static uint64_t heap_hash(const shmalloc_tlsf *t)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    shmalloc_tlsf_walk(t, hash_cb, &h);
    return h;
}

/* >> transports ----------------------------------------------------------------- */

/* A transport for PE `pe` of `npes` with no members: the caller adds them. */
TS_UNUSED static shmalloc_transport transport_for(int pe, int npes)
{
    shmalloc_transport tp;
    memset(&tp, 0, sizeof tp);
    tp.pe = pe;
    tp.npes = npes;
    return tp;
}

/* What a counting transport was asked. */
typedef struct counting {
    int barriers, allreduces, registers, deregisters, locks, unlocks;
    int fail_register;
    void *reg_base;
    size_t reg_bytes;
    void *dereg_base;
    size_t dereg_bytes;
} counting;

TS_UNUSED static counting cnt;

TS_UNUSED static int c_barrier(void *user)
{
    ((counting *)user)->barriers++;
    return 0;
}
TS_UNUSED static int c_allreduce(void *user, uint64_t *values, int count)
{
    (void)values;
    cr_assert(count >= 1 && count <= SHMALLOC_REDUCE_MAX, "allreduce_max with count %d", count);
    ((counting *)user)->allreduces++;
    return 0;
}
TS_UNUSED static int c_register(void *user, void *base, size_t bytes)
{
    counting *c = (counting *)user;
    c->registers++;
    c->reg_base = base;
    c->reg_bytes = bytes;
    return c->fail_register ? -1 : 0;
}
TS_UNUSED static int c_deregister(void *user, void *base, size_t bytes)
{
    counting *c = (counting *)user;
    c->deregisters++;
    c->dereg_base = base;
    c->dereg_bytes = bytes;
    return 0;
}
TS_UNUSED static int c_lock(void *user)
{
    ((counting *)user)->locks++;
    return 0;
}
TS_UNUSED static int c_unlock(void *user)
{
    ((counting *)user)->unlocks++;
    return 0;
}

/* PE `pe` of `npes`, counting into cnt (zeroed here); the all-reduce only
   when asked: without one, each PE decides alone. */
TS_UNUSED static shmalloc_transport counting_transport_for(int pe, int npes, int with_allreduce)
{
    shmalloc_transport tp = transport_for(pe, npes);
    memset(&cnt, 0, sizeof cnt);
    tp.user = &cnt;
    tp.barrier = c_barrier;
    tp.allreduce_max = with_allreduce ? c_allreduce : NULL;
    tp.register_region = c_register;
    tp.deregister_region = c_deregister;
    tp.lock = c_lock;
    tp.unlock = c_unlock;
    return tp;
}

/* The only PE. */
TS_UNUSED static shmalloc_transport counting_transport(int with_allreduce)
{
    return counting_transport_for(0, 1, with_allreduce);
}

TS_UNUSED static int syncs(void) { return cnt.barriers + cnt.allreduces; }

/* An imaginary peer, PE 1 of 2: its values are folded into this PE's
   all-reduce while peer_active, so a peer's failure or different argument
   reaches this PE as it would from a real one. */
TS_UNUSED static int peer_active;
TS_UNUSED static uint64_t peer_values[SHMALLOC_REDUCE_MAX];
TS_UNUSED static int peer_count = 3; /* values the peer contributes */

/* A mismatch adds two rounds to the agreement: to the first, PE 0's call
   (6 values: kind, size, alignment, block, hints, call number), the peer
   adds nothing; to the second (11), its own call, PE 0's with its size,
   when that differs, each value keyed in its high half by 0xffffff - 1. */
TS_UNUSED static uint64_t peer_first[6];

TS_UNUSED static void peer_keyed(uint64_t *values)
{
    uint64_t key = (uint64_t)(0xffffff - 1) << 32, t[6], v[11];
    int i;
    memcpy(t, peer_first, sizeof t);
    t[1] = peer_values[0];
    v[0] = key | t[0];
    for (i = 1; i < 6; i++) v[2 * i - 1] = key | t[i] >> 32, v[2 * i] = key | (t[i] & 0xffffffffu);
    for (i = 0; i < 11; i++)
        if (v[i] > values[i]) values[i] = v[i];
}

TS_UNUSED static int peer_allreduce(void *user, uint64_t *values, int count)
{
    int i;
    (void)user;
    cnt.allreduces++;
    if (count == 6) memcpy(peer_first, values, sizeof peer_first);
    if (count == 11 && peer_active && peer_values[0] != peer_first[1]) peer_keyed(values);
    if (count == 6 || count == 11) return 0;
    if (peer_active)
        for (i = 0; i < count && i < peer_count; i++)
            if (peer_values[i] > values[i]) values[i] = peer_values[i];
    return 0;
}

/* The peer passed the same size but failed with code `e`, ranked as the
   agreement ranks it: a bad argument above a lack of room. */
TS_UNUSED static void peer_fails(size_t size, long e)
{
    int no_room = e == SHMEM_MALLOC_FAIL || e == SHMEM_MALLOC_REALLOC_FAILED;
    peer_values[0] = size;
    peer_values[1] = ~(uint64_t)size;
    peer_values[2] = (uint64_t)-e + (no_room ? 0 : 16);
    peer_active = 1;
}

/* The peer passed another size and succeeded. */
TS_UNUSED static void peer_passes_size(size_t size)
{
    peer_values[0] = size;
    peer_values[1] = ~(uint64_t)size;
    peer_values[2] = 0;
    peer_active = 1;
}

/* >> symmetric heaps on one PE ---------------------------------------------------- */

/* Heaps a test made, destroyed when its process exits: blocks with hints
   keep them in the PE's private memory until then. */
TS_UNUSED static shmalloc_heap *made[16];
TS_UNUSED static int made_count;
TS_UNUSED static void destroy_made(void)
{
    while (made_count) shmalloc_heap_destroy(made[--made_count]);
}
TS_UNUSED static void remember(shmalloc_heap *h)
{
    if (!made_count) atexit(destroy_made);
    cr_assert(made_count < 16);
    made[made_count++] = h;
}

/* A heap made as a runtime makes it, from the options table as last read
   (shmalloc_options_heap_config): debug mode, metadata, size variable. */
TS_UNUSED static shmalloc_heap *create_from_table(void *mem, size_t bytes, size_t nominal, int growable,
                                                  const shmalloc_transport *tp, long *err)
{
    shmalloc_heap_config config;
    shmalloc_options_heap_config(&config, nominal, growable);
    return shmalloc_heap_create_with(mem, bytes, &config, tp, err);
}

/* A heap of `nominal` bytes over shmalloc_heap_bytes(nominal), made current. */
TS_UNUSED static shmalloc_heap *make_heap(size_t nominal, const shmalloc_transport *tp)
{
    size_t bytes = shmalloc_heap_bytes(nominal);
    void *mem;
    long err = 12345;
    shmalloc_heap *h;
    cr_assert(bytes >= nominal, "heap_bytes(%zu) = %zu", nominal, bytes);
    mem = map_aligned(bytes, MIB);
    h = create_from_table(mem, bytes, SIZE_MAX, 0, tp ? tp : shmalloc_transport_single(), &err);
    cr_assert(h != NULL, "heap create over %zu bytes failed: %ld", bytes, err);
    shmalloc_set_current(h);
    remember(h);
    return h;
}

TS_UNUSED static shmalloc_heap *make_counting_heap(size_t nominal, int with_allreduce)
{
    shmalloc_transport tp = counting_transport(with_allreduce);
    return make_heap(nominal, &tp);
}

/* A heap whose all-reduce folds in the imaginary peer's values. */
TS_UNUSED static shmalloc_heap *make_peer_heap(size_t nominal)
{
    shmalloc_transport tp = counting_transport_for(0, 2, 1);
    tp.allreduce_max = peer_allreduce;
    peer_active = 0;
    return make_heap(nominal, &tp);
}

/* A peer heap holding a (40 bytes, in a hole) and b (300), so a list
   holds more than the tail. */
TS_UNUSED static shmalloc_heap *peer_heap_with_blocks(void **a, void **b)
{
    shmalloc_heap *h = make_peer_heap(MIB);
    void *c;
    *a = shmem_malloc(100);
    *b = shmem_malloc(300);
    c = shmem_malloc(100);
    cr_assert(*a && *b && c);
    shmem_free(*a);
    *a = shmem_malloc(40);
    cr_assert(*a);
    return h;
}

/* A heap that grows from `nominal` up to `max` over a reservation, made current. */
TS_UNUSED static shmalloc_heap *make_growable_heap(size_t nominal, size_t max, const shmalloc_transport *tp)
{
    size_t bytes = shmalloc_heap_bytes(max);
    long err = 1;
    shmalloc_heap *h = create_from_table(map_aligned(bytes, MIB), bytes, nominal, tp->allreduce_max != NULL, tp, &err);
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK, "growable heap create failed: %ld", err);
    shmalloc_set_current(h);
    remember(h);
    return h;
}

/* The heap size the table reads (SHMALLOC_OPT_HEAP_SIZE), as a runtime
   reads it: 0 with *out set, or -1 after its message, *out unchanged. */
TS_UNUSED static int size_from_table(size_t *out)
{
    if (shmalloc_option_read(SHMALLOC_OPT_HEAP_SIZE) != 0) return -1;
    *out = (size_t)shmalloc_options()[SHMALLOC_OPT_HEAP_SIZE].value;
    return 0;
}

/* The size variables a runtime reads, all unset. */
TS_UNUSED static void clear_size_env(void)
{
    unsetenv("SHMEM_SYMMETRIC_HEAP_SIZE");
    unsetenv("SHMEM_SYMMETRIC_SIZE");
    unsetenv("SMA_SYMMETRIC_SIZE");
}

/* >> checks in PE threads ------------------------------------------------------
   For tests of the pthreads transport (define TEST_SUPPORT_PES before the
   include).  Criterion's asserts belong to the test's main thread, so PE
   threads record failures (a count and the first message) and the main
   thread asserts on them once shmalloc_pthreads_run has returned. */
#if defined(TEST_SUPPORT_PES)
#include <errno.h>
#include <stdarg.h>
#include <time.h>

#include "transports/shmalloc_pthreads.h"

/* Sleeps s seconds, through signals. */
TS_UNUSED static void sleep_seconds(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

TS_UNUSED static int failure_count; /* atomic */
TS_UNUSED static char first_failure[600];

TS_UNUSED static void pe_failed(int line, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (__atomic_add_fetch(&failure_count, 1, __ATOMIC_ACQ_REL) != 1) return;
    n = snprintf(first_failure, sizeof first_failure, "line %d, PE %d of %d: ", line, shmem_my_pe(), shmem_n_pes());
    if (n < 0 || (size_t)n >= sizeof first_failure) n = 0;
    va_start(ap, fmt);
    vsnprintf(first_failure + n, sizeof first_failure - (size_t)n, fmt, ap);
    va_end(ap);
}

#define PE_CHECK(cond)                                                                              \
    do {                                                                                            \
        if (!(cond)) pe_failed(__LINE__, "%s is false (malloc_error %ld)", #cond, malloc_error); \
    } while (0)

#define PE_CHECK_EQ(got, want)                                                               \
    do {                                                                                     \
        long long got_ = (long long)(got), want_ = (long long)(want);                        \
        if (got_ != want_) pe_failed(__LINE__, "%s is %lld, expected %s = %lld", #got, got_, #want, want_); \
    } while (0)

/* In the main thread, after the PEs ended: none of their checks failed. */
TS_UNUSED static void assert_no_pe_failed(void)
{
    int failures = __atomic_load_n(&failure_count, __ATOMIC_ACQUIRE);
    cr_assert_eq(failures, 0, "%d failed checks in PE threads; first: %s\noutput:\n%s", failures, first_failure,
                 out_text[2]);
}
#endif /* TEST_SUPPORT_PES */

#endif /* SHMALLOC_TEST_SUPPORT_H */
