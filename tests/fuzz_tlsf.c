/* fuzz_tlsf.c - libFuzzer target for the TLSF core.

   The input is a program: each operation takes a few bytes (kind, slot,
   size, alignment).  Every result is checked against a simple model - the
   live blocks with their sizes and tags - and the heap checker runs after
   every operation.  Any disagreement aborts, which libFuzzer reports.

       make fuzz                  (FUZZ_SECONDS=60 by default)
*/
#define _GNU_SOURCE
#include "shmalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    size_t pos, i;
    memset(live, 0, sizeof live);
    /* an odd first byte: a region that starts small and grows (case 5) */
    heap = len && (data[0] & 1) ? shmalloc_tlsf_create_reserved(region, HEAP, (size_t)data[0] << 6)
                                : shmalloc_tlsf_create(region, HEAP);
    if (!heap) fail("create", 0);
    for (pos = 0; pos + 4 <= len; pos += 4) {
        uint8_t kind = data[pos], a = data[pos + 2], b = data[pos + 3];
        size_t size = pick_size(a, b), align = (size_t)1 << (b % 24);
        unsigned char *p;
        i = data[pos + 1] % SLOTS;
        switch (kind % 7) {
        case 0: /* malloc or memalign into an empty slot */
        case 1:
            if (live[i].p) break;
            p = kind % 7 ? shmalloc_tlsf_memalign(heap, align, size) : shmalloc_tlsf_malloc(heap, size);
            if (p) admit(i, p, size, kind % 7 ? align : 1, a);
            break;
        case 2: /* realloc keeps contents and alignment */
            if (!live[i].p || !size) break;
            p = shmalloc_tlsf_realloc(heap, live[i].p, size);
            if (p) {
                size_t keep = size < live[i].size ? size : live[i].size;
                live[i].p = p;
                verify_tag(i, keep);
                admit(i, p, size, live[i].align, live[i].tag);
            } else {
                verify_tag(i, live[i].size);
            }
            break;
        case 3: /* free */
            if (!live[i].p) break;
            verify_tag(i, live[i].size);
            if (shmalloc_tlsf_free(heap, live[i].p) != SHMALLOC_TLSF_OK) fail("free of a live block refused", i);
            if (shmalloc_tlsf_free(heap, live[i].p) == SHMALLOC_TLSF_OK) fail("double free accepted", i);
            live[i].p = NULL;
            break;
        case 4: /* wild and interior pointers are refused */
            p = live[i].p ? live[i].p + 1 + (a % 64) : region + (size % HEAP);
            if (shmalloc_tlsf_validate(heap, p) == SHMALLOC_TLSF_OK) {
                size_t k, owner = 0;
                for (k = 0; k < SLOTS; k++) owner |= live[k].p == p;
                if (!owner) fail("a pointer that is not a block was accepted", i);
                break;
            }
            if (shmalloc_tlsf_free(heap, p) == SHMALLOC_TLSF_OK) fail("bad free accepted", i);
            break;
        case 6: { /* the spec area: taken from the top, never over a live block */
            ptrdiff_t inc = (ptrdiff_t)(b * 64) * (a & 1 ? -1 : 1);
            unsigned char *top = shmalloc_tlsf_sbreak(heap, inc);
            size_t k;
            if (!top) break;
            for (k = 0; k < SLOTS; k++)
                if (live[k].p && live[k].p + live[k].size > top) fail("spec area over a live block", k);
            if (inc > 0) memset(top, 0xee, (size_t)inc);
            break;
        }
        case 5: { /* growth: all of the room, or none of it changes */
            size_t room = shmalloc_tlsf_room(heap), n = (size_t)b * 48 + (a & 15);
            shmalloc_counters before, after;
            shmalloc_tlsf_counters(heap, &before);
            if (shmalloc_tlsf_grow(heap, n) == SHMALLOC_TLSF_OK) {
                size_t got = room - shmalloc_tlsf_room(heap);
                shmalloc_tlsf_counters(heap, &after);
                if (before.spec || got < n || got > n + 47 || after.capacity != before.capacity + got)
                    fail("growth by the wrong amount", i);
            } else if (room >= (n < 32 ? 32 : (n + 15) & ~(size_t)15) && !before.spec) {
                fail("growth refused with room to spare", i);
            }
            if (!(a & 0x80)) break;
        }
        /* fall through */
        default: /* absurd requests fail cleanly */
            if (shmalloc_tlsf_malloc(heap, SIZE_MAX - a) || shmalloc_tlsf_memalign(heap, (size_t)1 << 63, 16) ||
                shmalloc_tlsf_memalign(heap, 24, 16))
                fail("absurd request succeeded", i);
            break;
        }
        if (shmalloc_tlsf_check(heap, -1)) fail("heap check failed", i);
    }
    for (i = 0; i < SLOTS; i++)
        if (live[i].p) {
            verify_tag(i, live[i].size);
            if (shmalloc_tlsf_free(heap, live[i].p)) fail("final free", i);
        }
    {
        shmalloc_counters c;
        shmalloc_tlsf_counters(heap, &c);
        if (c.in_use || c.used_blocks) fail("blocks left over", 0);
    }
    if (shmalloc_tlsf_check(heap, -1)) fail("final heap check", 0);
    return 0;
}
