/* sos_check.h - helpers of the OpenSHMEM programs that test a runtime's
   symmetric heap (integrations/sos): plain OpenSHMEM 1.5 calls only, so the
   same programs run on stock SOS and on SOS built --with-shmalloc. */
#ifndef SOS_CHECK_H
#define SOS_CHECK_H

#if !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* setenv */
#endif

#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed check names the PE and the line, then ends the whole job. */
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(),     \
                    __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            shmem_global_exit(1);                                                 \
        }                                                                         \
    } while (0)

static long check_src[2], check_max[2], check_min[2]; /* symmetric: static data */

/* 1 when v is the same on every PE (collective). */
static inline int same_on_every_pe(long v)
{
    check_src[0] = v;
    shmem_barrier_all();
    shmem_long_max_reduce(SHMEM_TEAM_WORLD, check_max, check_src, 1);
    shmem_long_min_reduce(SHMEM_TEAM_WORLD, check_min, check_src, 1);
    return check_max[0] == check_min[0];
}

/* The offset of a symmetric block from a block allocated first: the same
   on every PE when the heap is symmetric, whatever each heap's address. */
static inline long offset_from(const void *anchor, const void *p)
{
    return p ? (long)((const char *)p - (const char *)anchor) : -1;
}

/* A byte pattern that depends on who wrote it, which block and where. */
static inline unsigned char pattern(int pe, unsigned tag, size_t i)
{
    return (unsigned char)(pe * 31 + tag * 7 + i * 13 + (i >> 9));
}

static inline void fill(void *p, size_t n, int pe, unsigned tag)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++) c[i] = pattern(pe, tag, i);
}

/* Index of the first byte that differs, or n. */
static inline size_t first_bad(const void *p, size_t n, int pe, unsigned tag)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != pattern(pe, tag, i)) return i;
    return n;
}

/* xorshift64*, seeded the same on every PE so every PE makes the same calls. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static inline uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1du;
}

/* Each PE writes its pattern into its right neighbour's copy of p, and
   checks what its left neighbour wrote into its own: proves p addresses
   the same object on every PE. */
static inline void exchange_and_check(void *p, size_t n, unsigned tag)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    unsigned char *mine = malloc(n);
    CHECK(mine != NULL, "malloc(%zu)", n);
    fill(mine, n, me, tag);
    shmem_barrier_all();
    shmem_putmem(p, mine, n, (me + 1) % npes);
    shmem_barrier_all();
    size_t bad = first_bad(p, n, (me + npes - 1) % npes, tag);
    CHECK(bad == n, "byte %zu of %zu from PE %d is wrong (tag %u)", bad, n, (me + npes - 1) % npes, tag);
    shmem_barrier_all();
    free(mine);
}

#endif
