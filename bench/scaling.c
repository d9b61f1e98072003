/* bench/scaling.c - does the TLSF core's cost grow with the live set or
   with the heap?  (issue 6, item 2)

     scaling LIVE HEAP_MIB [--callgrind] [--steps N]

   Workload b (bench/README.md) over LIVE slots on a heap of HEAP_MIB MiB,
   mapped MAP_NORESERVE so that only what is used costs memory.  The range
   the live set is expected to occupy is faulted in before the first call,
   as a symmetric heap would be, so the timed loop takes no page faults.
   One line of key=value figures goes to stdout; status=nofit (the live set
   cannot fit this heap: nothing was run) or status=oom (an allocation
   failed) instead of figures when the combination does not fit. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_NORESERVE, MADV_POPULATE_WRITE */
#endif
#include "shmalloc.h"
#include "workload.h"

#if !defined(MADV_POPULATE_WRITE)
#  define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

BENCH_OP static void *op_shm_malloc(shmalloc_tlsf *t, size_t n)
{
    void *p = shmalloc_tlsf_malloc(t, n);
    BENCH_AFTER_CALL();
    return p;
}

BENCH_OP static void op_shm_free(shmalloc_tlsf *t, void *p)
{
    shmalloc_tlsf_free(t, p); /* checked by the heap check at the end */
    BENCH_AFTER_CALL();
}

/* Returns 0, or -1 when an allocation failed.  `counted`: through the
   op_* wrappers that callgrind counts. */
static int run_ops(shmalloc_tlsf *t, void **slots, const bench_op *ops, size_t begin, size_t end, int counted)
{
    size_t i;
    for (i = begin; i < end; i++) {
        void **s = &slots[ops[i].slot];
        if (counted) {
            if (*s) op_shm_free(t, *s);
            *s = op_shm_malloc(t, BENCH_SIZE(ops[i]));
        } else {
            if (*s) shmalloc_tlsf_free(t, *s);
            *s = shmalloc_tlsf_malloc(t, BENCH_SIZE(ops[i]));
        }
        if (!*s) return -1;
    }
    return 0;
}

/* Faults in [p, p + n): one madvise, or a write per page where the kernel
   lacks MADV_POPULATE_WRITE. */
static void prefault(void *p, size_t n)
{
    if (madvise(p, n, MADV_POPULATE_WRITE) != 0) bench_touch(p, n);
}

int main(int argc, char **argv)
{
    size_t live, heap, steps = 0, warm, need, prefault_bytes;
    int callgrind = 0, i;
    void *mem, **slots;
    shmalloc_tlsf *t;
    shmalloc_counters c;
    bench_seq seq;
    uint64_t t0, t1;

    if (argc < 3) {
        fprintf(stderr, "usage: scaling LIVE HEAP_MIB [--callgrind] [--steps N]\n");
        return 1;
    }
    live = strtoull(argv[1], NULL, 10);
    heap = strtoull(argv[2], NULL, 10) * MIB;
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--callgrind")) callgrind = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = strtoull(argv[++i], NULL, 10);
        else bench_die("unknown option");
    }
    if (live < 1 || live > UINT32_MAX || heap == 0) bench_die("bad LIVE or HEAP_MIB");
    if (!steps) steps = callgrind ? 200000 : 1000000;
    warm = live > 100000 ? live : 100000; /* every slot replaced once, at least */
    printf("live=%zu heap_mib=%zu", live, heap / MIB);

    /* The live set's expected bytes with 10% to spare (fragmentation of b is
       about 6%): below that the heap cannot hold it, and we say so. */
    need = (size_t)((double)live * BENCH_MEAN_SIZE * 1.10) + MIB;
    if (need > heap - shmalloc_tlsf_overhead(heap)) {
        printf(" status=nofit need_mib=%zu\n", need / MIB);
        return 0;
    }
    mem = mmap(NULL, heap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) bench_die("cannot map the heap");
    t = shmalloc_tlsf_create(mem, heap);
    if (!t) bench_die("shmalloc_tlsf_create failed");
    /* Callgrind counts instructions, which page faults do not change. */
    prefault_bytes = need + need / 16 < heap ? need + need / 16 : heap;
    if (!callgrind) prefault(mem, prefault_bytes);

    bench_generate(&seq, 'b', live, warm, steps, 0);
    slots = (void **)bench_map(live * sizeof *slots);
    if (run_ops(t, slots, seq.ops, seq.begin[PHASE_FILL], seq.begin[PHASE_TIMED], 0)) {
        printf(" status=oom\n");
        return 0;
    }
    t0 = now_ns();
    if (run_ops(t, slots, seq.ops, seq.begin[PHASE_TIMED], seq.begin[PHASE_LAT], 1)) {
        printf(" status=oom\n");
        return 0;
    }
    t1 = now_ns();
    shmalloc_tlsf_counters(t, &c);
    if (shmalloc_tlsf_check(t, -1) != 0) bench_die("the heap check failed");
    printf(" status=ok ops=%zu ns_per_op=%.2f peak_live=%zu high_water=%zu frag=%.4f\n", 2 * steps,
           (double)(t1 - t0) / (double)(2 * steps), seq.peak_live[PHASE_TIMED], c.high_water,
           (double)c.high_water / (double)seq.peak_live[PHASE_TIMED]);
    return 0;
}
