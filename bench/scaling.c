/* bench/scaling.c - does the TLSF core's cost grow with the live set or
   with the heap?

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

/* The command line: LIVE, HEAP_MIB (in bytes here) and the options. */
typedef struct options {
    size_t live, heap, steps;
    int callgrind;
} options;

static options parse_options(int argc, char **argv)
{
    options o = {0, 0, 0, 0};
    int i;
    if (argc < 3) {
        fprintf(stderr, "usage: scaling LIVE HEAP_MIB [--callgrind] [--steps N]\n");
        exit(1);
    }
    o.live = strtoull(argv[1], NULL, 10);
    o.heap = strtoull(argv[2], NULL, 10) * MIB;
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--callgrind")) o.callgrind = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) o.steps = strtoull(argv[++i], NULL, 10);
        else bench_die("unknown option");
    }
    if (o.live < 1 || o.live > UINT32_MAX || o.heap == 0) bench_die("bad LIVE or HEAP_MIB");
    if (!o.steps) o.steps = o.callgrind ? 200000 : 1000000;
    return o;
}

/* A heap over o->heap bytes, its first `need` bytes and a sixteenth more
   faulted in unless under callgrind, which counts instructions: page
   faults do not change them. */
static shmalloc_tlsf *map_heap(const options *o, size_t need)
{
    size_t prefault_bytes = need + need / 16 < o->heap ? need + need / 16 : o->heap;
    void *mem = mmap(NULL, o->heap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    shmalloc_tlsf *t;
    if (mem == MAP_FAILED) bench_die("cannot map the heap");
    t = shmalloc_tlsf_create(mem, o->heap);
    if (!t) bench_die("shmalloc_tlsf_create failed");
    if (!o->callgrind) prefault(mem, prefault_bytes);
    return t;
}

/* Fill, then the timed loop, and the rest of the line: status=ok with the
   figures, or status=oom. */
static void measure(shmalloc_tlsf *t, const options *o)
{
    size_t warm = o->live > 100000 ? o->live : 100000; /* every slot replaced once, at least */
    shmalloc_counters c;
    bench_seq seq;
    uint64_t t0, t1;
    void **slots;
    bench_generate(&seq, 'b', o->live, warm, o->steps, 0);
    slots = (void **)bench_map(o->live * sizeof *slots);
    if (run_ops(t, slots, seq.ops, seq.begin[PHASE_FILL], seq.begin[PHASE_TIMED], 0)) {
        printf(" status=oom\n");
        return;
    }
    t0 = now_ns();
    if (run_ops(t, slots, seq.ops, seq.begin[PHASE_TIMED], seq.begin[PHASE_LAT], 1)) {
        printf(" status=oom\n");
        return;
    }
    t1 = now_ns();
    shmalloc_tlsf_counters(t, &c);
    if (shmalloc_tlsf_check(t, -1) != 0) bench_die("the heap check failed");
    printf(" status=ok ops=%zu ns_per_op=%.2f peak_live=%zu high_water=%zu frag=%.4f\n", 2 * o->steps,
           (double)(t1 - t0) / (double)(2 * o->steps), seq.peak_live[PHASE_TIMED], c.high_water,
           (double)c.high_water / (double)seq.peak_live[PHASE_TIMED]);
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    /* The live set's expected bytes with 10% to spare (fragmentation of b is
       about 6%): below that the heap cannot hold it, and we say so. */
    size_t need = (size_t)((double)o.live * BENCH_MEAN_SIZE * 1.10) + MIB;
    printf("live=%zu heap_mib=%zu", o.live, o.heap / MIB);
    if (need > o.heap - shmalloc_tlsf_overhead(o.heap)) {
        printf(" status=nofit need_mib=%zu\n", need / MIB);
        return 0;
    }
    measure(map_heap(&o, need), &o);
    return 0;
}
