/* A long random sequence of shmem_malloc, shmem_calloc, shmem_align,
   shmem_realloc and shmem_free, the same on every PE: every block is
   symmetric, and every block keeps its contents until it is freed. */
#include "sos_check.h"

#define SLOTS 64
#define OPS 3000

static struct { unsigned char *p; size_t n; unsigned tag; } slot[SLOTS];

static size_t random_size(void)
{
    unsigned bits = (unsigned)(rng() % 17); /* 1 byte .. 64 KiB, log-uniform */
    return 1 + (size_t)(rng() & ((1u << bits) - 1));
}

static void check_slot(int s, int me)
{
    size_t bad = first_bad(slot[s].p, slot[s].n, me, slot[s].tag);
    CHECK(bad == slot[s].n, "slot %d: byte %zu of %zu changed", s, bad, slot[s].n);
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    void *anchor = shmem_malloc(16);
    CHECK(anchor != NULL, "anchor");
    long moves = 0, failures = 0;
    for (unsigned op = 1; op <= OPS; op++) {
        int s = (int)(rng() % SLOTS);
        unsigned kind = (unsigned)(rng() % 5);
        size_t n = random_size();
        if (slot[s].p) {
            check_slot(s, me);
            if (kind < 2) { /* realloc: the prefix survives */
                unsigned char *q = shmem_realloc(slot[s].p, n);
                CHECK(same_on_every_pe(offset_from(anchor, q)), "op %u: realloc of slot %d is not symmetric", op, s);
                if (!q) { failures++; continue; }
                moves += q != slot[s].p;
                size_t keep = n < slot[s].n ? n : slot[s].n;
                size_t bad = first_bad(q, keep, me, slot[s].tag);
                CHECK(bad == keep, "realloc of slot %d to %zu lost byte %zu", s, n, bad);
                slot[s].p = q;
            } else {
                shmem_free(slot[s].p);
                slot[s].p = NULL;
                continue;
            }
        } else if (kind == 0) {
            slot[s].p = shmem_calloc(1, n);
            for (size_t i = 0; slot[s].p && i < n; i++) CHECK(slot[s].p[i] == 0, "calloc byte %zu", i);
        } else if (kind == 1) {
            size_t align = (size_t)16 << (rng() % 9); /* 16 .. 4096 */
            slot[s].p = shmem_align(align, n);
            CHECK(!slot[s].p || ((uintptr_t)slot[s].p & (align - 1)) == 0, "shmem_align(%zu)", align);
        } else {
            slot[s].p = shmem_malloc(n);
        }
        CHECK(same_on_every_pe(offset_from(anchor, slot[s].p)), "op %u: slot %d is not symmetric", op, s);
        if (!slot[s].p) { failures++; continue; }
        slot[s].n = n;
        slot[s].tag = op;
        fill(slot[s].p, n, me, op);
    }
    for (int s = 0; s < SLOTS; s++)
        if (slot[s].p) {
            check_slot(s, me);
            exchange_and_check(slot[s].p, slot[s].n, slot[s].tag);
            shmem_free(slot[s].p);
        }
    shmem_free(anchor);
    CHECK(failures == 0, "%ld allocations failed on a heap far larger than the live data", failures);
    if (me == 0) printf("heap_random: %d operations, %ld moving reallocs, on %d PEs\n", OPS, moves, shmem_n_pes());
    shmem_finalize();
    return 0;
}
