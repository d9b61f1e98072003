/* bench/workload.h - what bench/core.c and bench/scaling.c share: the
   workloads of bench/README.md, drawn as bench/cest.c draws them, as a
   sequence of operations generated up front from one fixed xorshift64*
   seed (so every allocator sees exactly the same requests, and the timed
   loop does no random-number work), memory from mmap (so the benchmark's
   own arrays never touch the allocator under test), and the clock.
   Everything here is static inline: two programs include it. */
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

#define BENCH_SEED 0x9E3779B97F4A7C15ull
#define BENCH_MIN_SIZE 16u
#define BENCH_MAX_SIZE 65536u
#define BENCH_MEAN_SIZE 8190u /* of the log-uniform draw: 1.5 * (2^16 - 2^4) / 12 */

/* The wrappers that callgrind's --toggle-collect='op_*' counts: never
   inlined, never cloned or merged with a look-alike (GCC's noipa), and the
   empty asm after the call keeps it from becoming a tail jump, which
   callgrind would not count as part of the wrapper. */
#if defined(__clang__)
#  define BENCH_OP __attribute__((noinline))
#else
#  define BENCH_OP __attribute__((noipa))
#endif
#define BENCH_AFTER_CALL() __asm__ __volatile__("" ::: "memory")

static inline void bench_die(const char *what)
{
    fprintf(stderr, "bench: %s\n", what);
    exit(2);
}

/* ---- xorshift64* (Vigna 2016) ------------------------------------------ */
static inline uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* 16 B .. 64 KiB, log-uniform per octave: an octave 2^k, k in 4..15 from
   bits 40 and up of one draw, then a size within [2^k, 2^(k+1)) from its
   low bits.  The draws are bench/cest.c's, so both drivers feed an
   allocator the same requests. */
static inline uint32_t rng_size(uint64_t *state)
{
    uint64_t r = rng_next(state);
    uint32_t base = 1u << (4 + (unsigned)((r >> 40) % 12));
    return base + (uint32_t)(r & (base - 1));
}

/* ---- operation sequences ----------------------------------------------- */
/* One operation: the slot it works on and the size requested; for workload
   c the log2 of the alignment sits in the top byte. */
typedef struct bench_op {
    uint32_t slot;
    uint32_t size;
} bench_op;
#define BENCH_SIZE(op) ((size_t)((op).size & 0xFFFFFFu))
#define BENCH_ALIGN(op) ((size_t)1 << ((op).size >> 24))

enum { PHASE_FILL, PHASE_WARM, PHASE_TIMED, PHASE_LAT, PHASES };

typedef struct bench_seq {
    bench_op *ops;
    size_t begin[PHASES + 1];      /* phase p is ops[begin[p] .. begin[p+1]) */
    size_t peak_live[PHASES];      /* most requested bytes live, from the
                                      start up to the end of phase p */
} bench_seq;

/* Anonymous memory, zeroed and touched now, so that it costs no page
   faults later and is part of any RSS baseline. */
static inline void *bench_map(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
                   0);
    if (p == MAP_FAILED) bench_die("mmap failed");
    return p;
}

/* Workloads b, c and d over `live` slots: a fill of every slot, then
   warm-up, timed and latency steps, drawn exactly as bench/cest.c draws them.
   b and c free a random slot and fill it again (c with an alignment 2^k, k
   uniform in 3..12); d fills its buffers with 16..1024 bytes, then each
   step reallocs a random one by +-(25% + 1..64 B), clamped to [16, 65536]:
   one draw gives the slot (its value modulo `live`), the direction (bit
   20) and the 1..64 (bits 32 and up). */
static inline void bench_generate(bench_seq *s, char workload, size_t live, size_t warm, size_t timed, size_t lat)
{
    uint64_t rng = BENCH_SEED;
    uint32_t *sizes = (uint32_t *)bench_map(live * sizeof *sizes);
    size_t total = live + warm + timed + lat, i, live_bytes = 0, peak = 0;
    int phase = 0;
    s->ops = (bench_op *)bench_map(total * sizeof *s->ops);
    s->begin[PHASE_FILL] = 0;
    s->begin[PHASE_WARM] = live;
    s->begin[PHASE_TIMED] = live + warm;
    s->begin[PHASE_LAT] = live + warm + timed;
    s->begin[PHASES] = total;
    for (i = 0; i < total; i++) {
        uint32_t slot = (uint32_t)i, size, align_log2 = 0;
        while (phase < PHASES && i == s->begin[phase + 1]) s->peak_live[phase++] = peak;
        if (workload == 'd') {
            if (i < live) {
                size = BENCH_MIN_SIZE + (uint32_t)(rng_next(&rng) % 1009);
            } else {
                uint64_t r = rng_next(&rng);
                uint32_t old, delta;
                slot = (uint32_t)(r % live);
                old = sizes[slot];
                delta = old / 4 + 1 + (uint32_t)((r >> 32) % 64);
                size = (r >> 20) & 1 ? old + delta : old > delta + BENCH_MIN_SIZE ? old - delta : BENCH_MIN_SIZE;
                if (size > BENCH_MAX_SIZE) size = BENCH_MAX_SIZE;
            }
        } else {
            if (i >= live) slot = (uint32_t)(rng_next(&rng) % live);
            size = rng_size(&rng);
            if (workload == 'c') align_log2 = 3 + (uint32_t)(rng_next(&rng) % 10);
        }
        live_bytes = live_bytes - sizes[slot] + size;
        sizes[slot] = size;
        if (live_bytes > peak) peak = live_bytes;
        s->ops[i].slot = slot;
        s->ops[i].size = size | align_log2 << 24;
    }
    while (phase < PHASES) s->peak_live[phase++] = peak;
    munmap(sizes, live * sizeof *sizes);
}

/* ---- clock ------------------------------------------------------------- */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The q-quantile of n samples (ns), by a histogram of 1-ns buckets below
   2^16 ns and a sort of the few samples above; `hist` is scratch of 2^16
   counters.  The samples above 2^16 are moved to the array's end. */
static inline uint32_t bench_quantile(uint32_t *samples, size_t n, double q, uint32_t *hist)
{
    size_t rank = (size_t)(q * (double)n), i, seen = 0, over = n;
    if (!n) return 0;
    if (rank >= n) rank = n - 1;
    memset(hist, 0, sizeof(uint32_t) << 16);
    for (i = 0; i < over;) {
        if (samples[i] < 65536u) {
            hist[samples[i++]]++;
        } else { /* park it at the end */
            uint32_t x = samples[i];
            samples[i] = samples[--over];
            samples[over] = x;
        }
    }
    for (i = 0; i < 65536u; i++) {
        seen += hist[i];
        if (seen > rank) return (uint32_t)i;
    }
    for (i = over + 1; i < n; i++) { /* insertion sort: few and rare */
        uint32_t x = samples[i];
        size_t j = i;
        while (j > over && samples[j - 1] > x) {
            samples[j] = samples[j - 1];
            j--;
        }
        samples[j] = x;
    }
    return samples[over + (rank - seen)];
}

/* The clock's own cost: the median of back-to-back readings. */
static inline uint32_t bench_clock_cost(uint32_t *scratch, uint32_t *hist)
{
    size_t i;
    for (i = 0; i < 20000; i++) {
        uint64_t t0 = now_ns();
        scratch[i] = (uint32_t)(now_ns() - t0);
    }
    return bench_quantile(scratch, 20000, 0.5, hist);
}

/* Pages of [p, p + n) written once, so RSS shows what the allocator handed
   out; used only when measuring footprint. */
static inline void bench_touch(void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, end = a + n;
    volatile char *c;
    for (; a < end; a = (a | 4095u) + 1) {
        c = (volatile char *)a;
        *c = 1;
    }
}

#endif /* BENCH_WORKLOAD_H */
