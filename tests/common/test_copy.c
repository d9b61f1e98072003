/* test_copy.c - shmalloc_copy, the copy of the transports' puts and gets
   (transports/common/copy.h), watched store by store: every byte of the
   target is stored exactly once and no byte around it at all, each store
   aligned to its width; an aligned 1, 2, 4 or 8 bytes is one store of that
   width, and a copy that ends on an aligned word stores that word whole,
   last.  Over every length 0-64 and every target and source alignment
   0-15, then overlapping ranges as memmove takes them (a target above its
   source copied from the end down, its last word first). */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* the TSan test runner uses mkstemp, strsignal */
#endif
#include "criterion_shim.h"

#include <stdint.h>
#include <string.h>

#define SPAN 160 /* bytes watched: the target, with room around it */

typedef struct store {
    size_t at, width; /* offset in the watched span, bytes */
} store;

static unsigned char *watched;
static int writes[SPAN];
static store stores[SPAN];
static size_t nstores;

/* Called by shmalloc_copy before each store (its SHM__COPY_STORE hook). */
static void saw_store(const void *at, size_t width)
{
    size_t off = (size_t)((const unsigned char *)at - watched), i;
    cr_assert(off + width <= SPAN, "a store of %zu bytes outside the watched span", width);
    cr_assert_eq((uintptr_t)at % width, 0, "a store of %zu bytes at offset %zu is not aligned", width, off);
    for (i = 0; i < width; i++) writes[off + i]++;
    stores[nstores].at = off;
    stores[nstores++].width = width;
}

#define SHM__COPY_STORE(type, at, v) \
    (saw_store((at), sizeof(type)), __atomic_store_n((type *)(void *)(at), (v), __ATOMIC_RELAXED))
#define SHM__COPY_STORE16(at, v) (saw_store((at), 16), *(volatile shm__copy128 *)(void *)(at) = (v))
#include "transports/common/copy.h"

static void start_watching(unsigned char *span)
{
    watched = span;
    memset(writes, 0, sizeof writes);
    nstores = 0;
}

/* Every byte of [from, from + n) of the span stored once, every other none. */
static void expect_each_byte_once(size_t from, size_t n, const char *what)
{
    size_t i;
    for (i = 0; i < SPAN; i++)
        cr_assert_eq(writes[i], i >= from && i < from + n ? 1 : 0, "%s: byte %zu of the span stored %d times",
                     what, i, writes[i]);
}

/* The widths a copy to offset `to` of n bytes must use: aligned 1/2/4/8
   bytes in one store; copying up, an aligned end stored last, whole. */
static void expect_whole_words(size_t to, size_t n, int up, const char *what)
{
    if ((n == 1 || n == 2 || n == 4 || n == 8) && to % n == 0) {
        cr_assert_eq(nstores, 1, "%s: an aligned %zu bytes took %zu stores", what, n, nstores);
        cr_assert_eq(stores[0].width, n, "%s: stored by %zu bytes", what, stores[0].width);
    }
    if (up && n >= 8 && (to + n) % 8 == 0) {
        cr_assert_eq(stores[nstores - 1].at, to + n - 8, "%s: the last store is not the last word", what);
        cr_assert_eq(stores[nstores - 1].width, 8, "%s: the last word stored by %zu bytes", what,
                     stores[nstores - 1].width);
    }
}

Test(copy, every_length_and_alignment_stores_each_target_byte_once)
{
    static unsigned char target[SPAN] __attribute__((aligned(16))), source[SPAN] __attribute__((aligned(16)));
    size_t n, to, from, i;
    char what[96];
    for (i = 0; i < SPAN; i++) source[i] = (unsigned char)(i * 7 + 1);
    for (n = 0; n <= 64; n++)
        for (to = 0; to < 16; to++)
            for (from = 0; from < 16; from++) {
                snprintf(what, sizeof what, "%zu bytes to offset %zu from offset %zu", n, 16 + to, from);
                memset(target, 0xa5, sizeof target);
                start_watching(target);
                shmalloc_copy(target + 16 + to, source + from, n);
                expect_each_byte_once(16 + to, n, what);
                expect_whole_words(16 + to, n, 1, what);
                for (i = 0; i < SPAN; i++)
                    cr_assert_eq(target[i], i >= 16 + to && i < 16 + to + n ? source[from + i - 16 - to] : 0xa5,
                                 "%s: byte %zu of the span is %u", what, i, target[i]);
            }
}

Test(copy, overlapping_ranges_copy_as_memmove_storing_each_byte_once)
{
    static unsigned char span[SPAN] __attribute__((aligned(16))), want[SPAN];
    size_t n, at, i;
    int shift;
    char what[96];
    for (n = 0; n <= 40; n++)
        for (at = 40; at < 48; at++)
            for (shift = -17; shift <= 17; shift++) {
                size_t to = (size_t)((long)at + shift);
                snprintf(what, sizeof what, "%zu bytes from offset %zu to offset %zu", n, at, to);
                for (i = 0; i < SPAN; i++) span[i] = (unsigned char)(i * 5 + 3);
                memcpy(want, span, SPAN);
                memmove(want + to, want + at, n);
                start_watching(span);
                shmalloc_copy(span + to, span + at, n);
                expect_each_byte_once(to, n, what);
                expect_whole_words(to, n, shift < 0 || (size_t)shift >= n, what);
                cr_assert(memcmp(span, want, SPAN) == 0, "%s: not what memmove makes", what);
            }
}
