/* fuzz_tlsf.c - libFuzzer target for the TLSF core.

   The input is a program: each operation takes a few bytes (kind, slot,
   size, alignment).  Every result is checked against a simple model - the
   live blocks with their sizes and tags - and the heap checker runs after
   every operation.  Any disagreement aborts, which libFuzzer reports.
   The first byte picks the core: bit 0 a region that starts small and
   grows, bit 1 separate metadata (else the headers are in the region).
   The allocator hooks are the fuzzer's: an operation may make one of the
   next few refuse, and the call that meets the refusal must fail and
   change nothing (a separate core's records and map come from them).

       make fuzz                  (FUZZ_SECONDS=60 by default)
*/
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hooks: the refuse_in-th call from now returns NULL (0: none). */
static unsigned refuse_in;
static int refused; /* a hook refused during the current operation */
static void *fuzz_malloc(size_t n)
{
    if (refuse_in && !--refuse_in) {
        refused = 1;
        return NULL;
    }
    return malloc(n);
}
#define SHMALLOC_MALLOC(n) fuzz_malloc(n)
#define SHMALLOC_FREE(p) free(p)
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"

#define SLOTS 64
#define HEAP (1u << 18)

typedef struct slot {
    unsigned char *p;
    size_t size;
    size_t align;
    unsigned char tag;
} slot;

static _Alignas(4096) unsigned char region[HEAP];
static slot live[SLOTS];
static shmalloc_tlsf *heap;
static size_t header; /* bytes before a user pointer that its block holds: 16 inline, 0 separate */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void fail(const char *what, size_t i)
{
    fprintf(stderr, "fuzz_tlsf: %s (slot %zu)\n", what, i);
    shmalloc_tlsf_check(heap, 1);
    abort();
}

/* Tags cover both ends of a block and every 61st byte between: enough to
   see a lost copy or an overlap, cheap enough for many runs a second.
   visit(i, n, tagged, set) walks the tagged bytes of a block of `tagged`
   bytes that lie below n. */
static void visit(size_t i, size_t n, size_t tagged, int set)
{
    size_t k, tail = tagged > 64 ? tagged - 64 : 0;
    for (k = 0; k < n; k = k < 64 || k >= tail ? k + 1 : (k / 61 + 1) * 61 < tail ? (k / 61 + 1) * 61 : tail) {
        unsigned char want = (unsigned char)(live[i].tag + k);
        if (set) live[i].p[k] = want;
        else if (live[i].p[k] != want) fail("contents changed", i);
    }
}

static void verify_tag(size_t i, size_t n) { visit(i, n, live[i].size, 0); }
static void set_tag(size_t i) { visit(i, live[i].size, live[i].size, 1); }

/* A new block must be aligned, usable for its size and clear of every
   other live block. */
static void admit(size_t i, unsigned char *p, size_t size, size_t align, unsigned char tag)
{
    size_t k;
    if (((uintptr_t)p & (SHMALLOC_ALIGNMENT - 1)) || ((uintptr_t)p & (align - 1))) fail("misaligned block", i);
    if (shmalloc_tlsf_usable_size(heap, p) < size) fail("usable size below the request", i);
    for (k = 0; k < SLOTS; k++)
        if (k != i && live[k].p && p < live[k].p + live[k].size && live[k].p < p + size) fail("overlap", k);
    live[i].p = p;
    live[i].size = size;
    live[i].align = align;
    live[i].tag = tag;
    set_tag(i);
}

/* Sizes: mostly small, sometimes large, sometimes absurd. */
static size_t pick_size(uint8_t a, uint8_t b)
{
    switch (a >> 6) {
    case 0: return b;
    case 1: return (size_t)b << (a & 15);
    case 2: return ((size_t)1 << (a & 31)) - (b & 31);
    default: return SIZE_MAX - b;
    }
}

/* One decoded operation: the slot it acts on and its two argument bytes,
   with the size and alignment drawn from them. */
typedef struct op {
    size_t i;
    uint8_t kind, a, b;
    size_t size, align;
} op;

/* malloc (kind 0) or memalign (kind 1) into an empty slot */
static void op_allocate(const op *o)
{
    int aligned = o->kind % 7 != 0;
    unsigned char *p;
    if (live[o->i].p) return;
    p = aligned ? shmalloc_tlsf_align(heap, o->align, o->size) : shmalloc_tlsf_malloc(heap, o->size);
    if (p) admit(o->i, p, o->size, aligned ? o->align : 1, o->a);
}

/* realloc keeps contents and alignment */
static void op_realloc(const op *o)
{
    size_t i = o->i;
    unsigned char *p;
    if (!live[i].p || !o->size) return;
    p = shmalloc_tlsf_realloc(heap, live[i].p, o->size);
    if (p) {
        size_t keep = o->size < live[i].size ? o->size : live[i].size;
        live[i].p = p;
        verify_tag(i, keep);
        admit(i, p, o->size, live[i].align, live[i].tag);
    } else {
        verify_tag(i, live[i].size);
    }
}

static void op_free(const op *o)
{
    size_t i = o->i;
    if (!live[i].p) return;
    verify_tag(i, live[i].size);
    if (shmalloc_tlsf_free(heap, live[i].p) != SHMALLOC_TLSF_OK) fail("free of a live block refused", i);
    if (shmalloc_tlsf_free(heap, live[i].p) != SHMALLOC_TLSF_ALREADY_FREE) fail("double free not called one", i);
    live[i].p = NULL;
}

/* The block that holds block address q, found by walking the heap. */
typedef struct holder {
    uintptr_t q;
    int found, used;
} holder;

static int find_holder(void *user, const shmalloc_block_info *b)
{
    holder *h = (holder *)user;
    uintptr_t start = (uintptr_t)shmalloc_tlsf_base(heap) + b->offset - header;
    if (h->q < start || h->q - start >= b->size) return 0;
    h->found = 1;
    h->used = b->used;
    return 1;
}

/* A refused pointer's status, from the walk: inside a free block below
   the high-water mark it is a double free, inside a used block or above
   the mark not a block (elsewhere the walk has no say). */
static void expect_refusal(const unsigned char *p, int status, size_t i)
{
    shmalloc_counters c;
    holder h = {(uintptr_t)p - header, 0, 0};
    if (p < region + header) return;
    shmalloc_tlsf_walk(heap, find_holder, &h);
    if (!h.found) return;
    shmalloc_tlsf_counters(heap, &c);
    if (!h.used && shmalloc_tlsf_offset(heap, p) < c.high_water) {
        if (status != SHMALLOC_TLSF_ALREADY_FREE) fail("a pointer into a free block not called a double free", i);
    } else if (status != SHMALLOC_TLSF_NOT_A_BLOCK) {
        fail("a pointer into a used block, or never handed out, not called not a block", i);
    }
}

/* The block behind any byte: the live block whose usable bytes hold p,
   else validate's code, the outputs left alone. */
static void expect_block_of(const unsigned char *p, size_t i)
{
    void *start = NULL;
    size_t size = 1, k, n;
    int code = shmalloc_tlsf_block_of(heap, p, &start, &size);
    for (k = 0; k < SLOTS; k++) {
        if (!live[k].p || p < live[k].p || (size_t)(p - live[k].p) >= (n = shmalloc_tlsf_usable_size(heap, live[k].p)))
            continue;
        if (code != SHMALLOC_TLSF_OK || start != live[k].p || size != n) fail("block_of missed the block behind a byte", i);
        return;
    }
    if (code == SHMALLOC_TLSF_OK || start || size != 1 || code != shmalloc_tlsf_validate(heap, p))
        fail("block_of found a block where none is, or a code validate does not give", i);
}

/* wild and interior pointers are refused, each with its reason */
static void op_bad_pointer(const op *o)
{
    unsigned char *p = live[o->i].p ? live[o->i].p + 1 + (o->a % 64) : region + (o->size % HEAP);
    expect_block_of(p, o->i);
    expect_block_of(region + (o->size % HEAP), o->i);
    if (shmalloc_tlsf_validate(heap, p) == SHMALLOC_TLSF_OK) {
        size_t k, owner = 0;
        for (k = 0; k < SLOTS; k++) owner |= live[k].p == p;
        if (!owner) fail("a pointer that is not a block was accepted", o->i);
        return;
    }
    expect_refusal(p, shmalloc_tlsf_validate(heap, p), o->i);
    if (shmalloc_tlsf_free(heap, p) == SHMALLOC_TLSF_OK) fail("bad free accepted", o->i);
}

/* growth: all of the room, or none of it changes */
static void op_grow(const op *o)
{
    size_t room = shmalloc_tlsf_room(heap), n = (size_t)o->b * 48 + (o->a & 15);
    shmalloc_counters before, after;
    shmalloc_tlsf_counters(heap, &before);
    if (shmalloc_tlsf_grow(heap, n) == SHMALLOC_TLSF_OK) {
        size_t got = room - shmalloc_tlsf_room(heap);
        shmalloc_tlsf_counters(heap, &after);
        if (before.spec || got < n || got > n + 47 || after.capacity != before.capacity + got)
            fail("growth by the wrong amount", o->i);
    } else if (room >= (n < 32 ? 32 : (n + 15) & ~(size_t)15) && !before.spec && !refused) {
        fail("growth refused with room to spare", o->i);
    }
}

/* the spec area: taken from the top, never over a live block */
static void op_sbreak(const op *o)
{
    ptrdiff_t inc = (ptrdiff_t)(o->b * 64) * (o->a & 1 ? -1 : 1);
    unsigned char *top = shmalloc_tlsf_sbreak(heap, inc);
    size_t k;
    if (!top) return;
    for (k = 0; k < SLOTS; k++)
        if (live[k].p && live[k].p + live[k].size > top) fail("spec area over a live block", k);
    if (inc > 0) memset(top, 0xee, (size_t)inc);
}

/* The collective layer's tentative calls: a take into an empty slot or a
   resize of a live one, undone, then made again and kept.  A refusal and
   an undo leave the counters as they were, and the call made again after
   an undo gives the same answer (unless a hook refuses it). */
static void expect_unchanged(const shmalloc_counters *before, const char *what, size_t i)
{
    shmalloc_counters now;
    shmalloc_tlsf_counters(heap, &now);
    if (memcmp(before, &now, sizeof now)) fail(what, i);
}

static int tentative(size_t i, size_t align, size_t size, shmalloc_tlsf_pending *op)
{
    return live[i].p ? shmalloc_tlsf_resize(heap, live[i].p, size, op) : shmalloc_tlsf_take(heap, align, size, op);
}

static void op_tentative(const op *o)
{
    size_t i = o->i, align = o->b & 1 ? o->align : 1, keep = o->size < live[i].size ? o->size : live[i].size;
    shmalloc_tlsf_pending first, again;
    shmalloc_counters before;
    unsigned char *p, *made;
    if (live[i].p && !o->size) return;
    shmalloc_tlsf_counters(heap, &before);
    if (tentative(i, align, o->size, &first) != SHMALLOC_TLSF_OK) {
        expect_unchanged(&before, "a refused tentative call changed the counters", i);
        return;
    }
    made = (unsigned char *)first.ptr;
    shmalloc_tlsf_undo(heap, &first);
    expect_unchanged(&before, "an undo left the counters changed", i);
    if (live[i].p) verify_tag(i, live[i].size);
    if (tentative(i, align, o->size, &again) != SHMALLOC_TLSF_OK) {
        if (!refused) fail("the same tentative call after an undo was refused", i);
        expect_unchanged(&before, "a refused tentative call changed the counters", i);
        return;
    }
    if ((unsigned char *)again.ptr != made) fail("the same tentative call after an undo gave another answer", i);
    p = (unsigned char *)shmalloc_tlsf_commit(heap, &again);
    if (!live[i].p) {
        admit(i, p, o->size, align, o->a);
        return;
    }
    live[i].p = p;
    verify_tag(i, keep);
    admit(i, p, o->size, live[i].align, live[i].tag);
}

/* absurd requests fail cleanly */
static void op_absurd(const op *o)
{
    if (shmalloc_tlsf_malloc(heap, SIZE_MAX - o->a) || shmalloc_tlsf_align(heap, (size_t)1 << 63, 16) ||
        shmalloc_tlsf_align(heap, 24, 16))
        fail("absurd request succeeded", o->i);
}

/* One operation from its four input bytes (kind, slot, a, b), then the heap check. */
static void run_op(const uint8_t *bytes)
{
    op o;
    refused = 0;
    o.kind = bytes[0];
    o.i = bytes[1] % SLOTS;
    o.a = bytes[2];
    o.b = bytes[3];
    o.size = pick_size(o.a, o.b);
    o.align = (size_t)1 << (o.b % 24);
    switch (o.kind % 7) {
    case 0:
    case 1: op_allocate(&o); break;
    case 2: op_realloc(&o); break;
    case 3: op_free(&o); break;
    case 4: op_bad_pointer(&o); break;
    case 5:
        if (o.a & 0x40) refuse_in = 1 + o.b % 4; /* one of the next hook calls, in this operation or a later one */
        op_grow(&o);
        if (o.a & 0x80) op_absurd(&o);
        break;
    case 6:
        if (o.a & 0x40) op_tentative(&o);
        else op_sbreak(&o);
        break;
    }
    if (shmalloc_tlsf_check(heap, -1)) fail("heap check failed", o.i);
}

/* Every block still live keeps its contents and frees; then none is left. */
static void free_all_and_check(void)
{
    shmalloc_counters c;
    size_t i;
    for (i = 0; i < SLOTS; i++)
        if (live[i].p) {
            verify_tag(i, live[i].size);
            if (shmalloc_tlsf_free(heap, live[i].p)) fail("final free", i);
        }
    shmalloc_tlsf_counters(heap, &c);
    if (c.in_use || c.used_blocks) fail("blocks left over", 0);
    if (shmalloc_tlsf_check(heap, -1)) fail("final heap check", 0);
    shmalloc_tlsf_destroy(heap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    const shmalloc_transport *host = shmalloc_transport_single();
    shmalloc_memops ops = {NULL, host->fill, host->copy};
    size_t pos, initial = len && (data[0] & 1) ? (size_t)data[0] << 6 : HEAP; /* growth: kind 5 */
    memset(live, 0, sizeof live);
    refuse_in = 0;
    header = len && (data[0] & 2) ? 0 : 16;
    heap = header ? shmalloc_tlsf_create_reserved(region, HEAP, initial)
                  : shmalloc_tlsf_create_separate(region, HEAP, initial, &ops);
    if (!heap) fail("create", 0);
    for (pos = 0; pos + 4 <= len; pos += 4) run_op(data + pos);
    free_all_and_check();
    return 0;
}
