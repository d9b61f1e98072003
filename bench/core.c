/* bench/core.c - wall time and footprint of workloads a-d (bench/README.md).

     core_NAME WORKLOAD [--footprint] [--steps N]

   Linked with NAME's adapter (bench/alloc.h), so each allocator runs in a
   binary of its own, in a fresh process.  One line of key=value figures
   goes to stdout.  Phases: fill (the live set), warm-up, timed (the
   steady-state loop, one clock reading before and after: ns_per_op),
   latency (every call timed on its own: p999_ns).  --footprint runs fill,
   warm-up and timed loop writing every page handed out, and reports the
   highest requested byte ever in use (a region allocator) or the peak RSS
   growth (a system allocator) over the peak of live requested bytes.  The
   counts per op come from bench/cest.c. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* dladdr, MAP_NORESERVE, MAP_POPULATE */
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <unistd.h>

#include "alloc.h"
#include "workload.h"

#define REGION_BYTES GIB /* pre-faulted region for a region allocator */

static const bench_allocator *const A = &bench_allocator_under_test;

/* ---- one run -------------------------------------------------------------- */
typedef struct run {
    void *heap;
    char workload;
    void **slots;
    uint32_t *asked;     /* per slot: the size and alignment of its op */
    int touch;           /* --footprint: write every page handed out, */
    char *base;          /* and (a region) track the highest requested */
    size_t highest;      /* byte ever in use, from the region's base */
    uint32_t *samples;   /* latency phase: one per call */
    size_t nsamples;
} run;

static void *checked(void *p)
{
    if (!p) bench_die("an allocation failed");
    return p;
}

static void give_back(run *r, uint32_t slot)
{
    bench_op old = {slot, r->asked[slot]};
    if (r->slots[slot]) A->free(r->heap, r->slots[slot], BENCH_SIZE(old), r->workload == 'c' ? BENCH_ALIGN(old) : 0);
}

/* The call of op into its slot: realloc (d) or malloc / memalign. */
static void *call(run *r, bench_op op)
{
    void **s = &r->slots[op.slot];
    bench_op old = {op.slot, r->asked[op.slot]};
    r->asked[op.slot] = op.size;
    if (r->workload == 'd')
        return *s ? A->realloc(r->heap, *s, BENCH_SIZE(old), BENCH_SIZE(op), 0) : A->malloc(r->heap, BENCH_SIZE(op));
    return r->workload == 'c' ? A->memalign(r->heap, BENCH_ALIGN(op), BENCH_SIZE(op)) : A->malloc(r->heap, BENCH_SIZE(op));
}

/* ops[begin, end) of workloads b, c, d. */
static void run_ops(run *r, const bench_op *ops, size_t begin, size_t end)
{
    size_t i;
    for (i = begin; i < end; i++) {
        bench_op op = ops[i];
        void **s = &r->slots[op.slot];
        if (r->workload != 'd') give_back(r, op.slot);
        *s = checked(call(r, op));
        if (r->touch) {
            size_t top = (size_t)((char *)*s + BENCH_SIZE(op) - r->base);
            bench_touch(*s, BENCH_SIZE(op));
            if (r->base && top > r->highest) r->highest = top;
        }
    }
}

/* The same, each allocator call timed on its own. */
static void run_ops_timed(run *r, const bench_op *ops, size_t begin, size_t end)
{
    size_t i;
    for (i = begin; i < end; i++) {
        bench_op op = ops[i];
        uint64_t t0 = now_ns(), t1;
        if (r->workload != 'd') {
            give_back(r, op.slot);
            t1 = now_ns();
            r->samples[r->nsamples++] = (uint32_t)(t1 - t0);
            t0 = t1;
        }
        r->slots[op.slot] = call(r, op);
        r->samples[r->nsamples++] = (uint32_t)(now_ns() - t0);
        checked(r->slots[op.slot]);
    }
}

/* Workload a: n times malloc(64) then free, on an empty heap. */
static void run_a(run *r, size_t n, int timed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (timed) {
            uint64_t t0 = now_ns(), t1, t2;
            void *p = A->malloc(r->heap, 64);
            t1 = now_ns();
            A->free(r->heap, checked(p), 64, 0);
            t2 = now_ns();
            r->samples[r->nsamples++] = (uint32_t)(t1 - t0);
            r->samples[r->nsamples++] = (uint32_t)(t2 - t1);
        } else {
            void *p = checked(A->malloc(r->heap, 64));
            if (r->touch) bench_touch(p, 64);
            A->free(r->heap, p, 64, 0);
        }
    }
}

/* Frees every slot (a system allocator) or starts a fresh heap over the
   same memory (a region allocator), after the warm-up pass. */
static void reset(run *r, size_t live)
{
    size_t i;
    if (r->base) {
        if (A->destroy) A->destroy(r->heap);
        r->heap = A->create(r->base, REGION_BYTES);
        if (!r->heap) bench_die("cannot create a heap over the region");
    } else {
        for (i = 0; i < live; i++) give_back(r, (uint32_t)i);
    }
    memset(r->slots, 0, live * sizeof *r->slots);
}

/* ---- process-level helpers ------------------------------------------------- */
/* Is malloc in this process the one this binary was built for? */
static int malloc_is(const char *library)
{
    Dl_info info;
    void *(*fn)(size_t) = malloc;
    void *addr;
    memcpy(&addr, &fn, sizeof addr); /* ISO C has no function-to-object cast */
    return dladdr(addr, &info) && info.dli_fname && strstr(info.dli_fname, library) != NULL;
}

static size_t rss_bytes(void) /* resident set, read without stdio (no malloc) */
{
    char text[128];
    unsigned long pages = 0, res = 0;
    int fd = open("/proc/self/statm", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    if (sscanf(text, "%lu %lu", &pages, &res) != 2) return 0;
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* Resets the peak RSS to the current one (Linux >= 4.0), so the peak read
   at the end is the run's. */
static int reset_peak_rss(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY), ok;
    if (fd < 0) return 0;
    ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}

static size_t peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024;
}

static void usage(void)
{
    fprintf(stderr, "usage: core_%s a|b|c|d [--footprint] [--steps N]\n", A->name);
    exit(1);
}

/* d's buffers drift in size for a long time: a shorter loop would not
   give the same figure. */
static size_t default_steps(char workload)
{
    return workload == 'c' ? 500000 : 1000000;
}

/* What the command line asks for, and the sizes that follow from it. */
typedef struct options {
    char workload;
    int footprint;
    size_t steps, warm, lat, live;
} options;

/* Parses argv, and refuses to run under another malloc than the one asked for. */
static options parse_options(int argc, char **argv)
{
    options o;
    int i;
    memset(&o, 0, sizeof o);
    if (argc < 2 || strlen(argv[1]) != 1 || argv[1][0] < 'a' || argv[1][0] > 'd') usage();
    o.workload = argv[1][0];
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--footprint")) o.footprint = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) o.steps = strtoull(argv[++i], NULL, 10);
        else usage();
    }
    if (A->library && !malloc_is(A->library)) {
        fprintf(stderr, "core: malloc in this process is not %s's\n", A->name);
        exit(3);
    }
    if (!o.steps) o.steps = default_steps(o.workload);
    /* b, c and d warm up with a pass of fill, timed and latency steps on a
       fresh heap before the measured one, so the timed loop follows the fill */
    o.warm = o.workload == 'a' ? 1000 : 0;
    o.lat = o.footprint ? 0 : o.steps < 200000 ? o.steps : 200000;
    o.live = o.workload == 'a' ? 0 : o.workload == 'd' ? 1000 : 10000;
    return o;
}

/* A region allocator's heap over REGION_BYTES of fresh memory, faulted in
   before the first call, as a symmetric heap is. */
static void map_region(run *r)
{
    void *mem = mmap(NULL, REGION_BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) bench_die("cannot map the region");
    r->base = (char *)mem;
    r->heap = A->create(mem, REGION_BYTES);
    if (!r->heap) bench_die("cannot create a heap over the region");
}

/* The heap, the operation sequence, the slots and the latency samples:
   everything mapped before the first measured call.  The histogram for
   the quantile goes to *hist. */
static void prepare(run *r, const options *o, bench_seq *seq, uint32_t **hist)
{
    size_t ops_lat = o->workload == 'd' ? o->lat : 2 * o->lat;
    memset(r, 0, sizeof *r);
    r->workload = o->workload;
    r->touch = o->footprint;
    if (A->create) map_region(r);
    if (o->workload != 'a') {
        bench_generate(seq, o->workload, o->live, o->warm, o->steps, o->lat);
        r->slots = (void **)bench_map(o->live * sizeof *r->slots);
        r->asked = (uint32_t *)bench_map(o->live * sizeof *r->asked);
    }
    if (o->lat) {
        r->samples = (uint32_t *)bench_map(ops_lat * sizeof *r->samples + 20000 * sizeof *r->samples);
        *hist = (uint32_t *)bench_map(sizeof(uint32_t) << 16);
    }
}

/* Phases [from, to) of workloads b, c, d, or a_count rounds of workload a;
   each call timed on its own when `timed`. */
static void run_phases(run *r, const bench_seq *seq, int from, int to, size_t a_count, int timed)
{
    if (r->workload == 'a') run_a(r, a_count, timed);
    else if (timed) run_ops_timed(r, seq->ops, seq->begin[from], seq->begin[to]);
    else run_ops(r, seq->ops, seq->begin[from], seq->begin[to]);
}

/* What a run measured. */
typedef struct figures {
    size_t ops_timed, rss0;
    double ns_per_op;
    uint32_t p999, clock_cost;
    int peak_ok;
} figures;

static figures measure(run *r, const options *o, const bench_seq *seq, uint32_t *hist)
{
    figures f;
    uint64_t t0, t1;
    memset(&f, 0, sizeof f);
    f.ops_timed = o->workload == 'd' ? o->steps : 2 * o->steps;
    if (o->footprint) {
        f.peak_ok = reset_peak_rss();
        f.rss0 = rss_bytes();
    }
    if (o->workload != 'a' && !o->footprint) {
        run_ops(r, seq->ops, seq->begin[PHASE_FILL], seq->begin[PHASE_LAT]);
        reset(r, o->live);
    }
    run_phases(r, seq, PHASE_FILL, PHASE_TIMED, o->warm, 0);

    t0 = now_ns();
    run_phases(r, seq, PHASE_TIMED, PHASE_LAT, o->steps, 0);
    t1 = now_ns();
    f.ns_per_op = (double)(t1 - t0) / (double)f.ops_timed;

    if (o->lat) {
        run_phases(r, seq, PHASE_LAT, PHASES, o->lat, 1);
        f.p999 = bench_quantile(r->samples, r->nsamples, 0.999, hist);
        f.clock_cost = bench_clock_cost(r->samples, hist);
        f.p999 = f.p999 > f.clock_cost ? f.p999 - f.clock_cost : 0;
    }
    return f;
}

/* One line of key=value figures, after the heap check; the adapter's own
   figures come last. */
static void print_figures(const run *r, const options *o, const bench_seq *seq, const figures *f)
{
    size_t peak_live = o->workload == 'a' ? 64 : seq->peak_live[o->lat ? PHASE_LAT : PHASE_TIMED];
    if (A->check && A->check(r->heap) != 0) bench_die("the heap check failed");
    printf("allocator=%s workload=%c ops=%zu ns_per_op=%.2f", A->name, o->workload, f->ops_timed, f->ns_per_op);
    if (o->lat) printf(" p999_ns=%u clock_ns=%u", f->p999, f->clock_cost);
    if (o->footprint && o->workload != 'a' && r->base) {
        printf(" peak_live=%zu highest=%zu frag=%.4f frag_kind=highest_byte", peak_live, r->highest,
               (double)r->highest / (double)peak_live);
    } else if (o->footprint && !r->base) {
        size_t grown = peak_rss_bytes() - f->rss0;
        printf(" peak_live=%zu footprint=%zu frag=%.4f frag_kind=footprint%s", peak_live, grown,
               (double)grown / (double)peak_live, f->peak_ok ? "" : "(ru_maxrss,no-reset)");
    }
    if (A->describe) A->describe(r->heap);
    printf("\n");
}

int main(int argc, char **argv)
{
    static char out[BUFSIZ]; /* stdout's buffer: none from malloc, which a heap's figures count */
    options o;
    bench_seq seq = {0};
    uint32_t *hist = NULL;
    run r;
    figures f;
    setvbuf(stdout, out, _IOFBF, sizeof out);
    o = parse_options(argc, argv);
    prepare(&r, &o, &seq, &hist);
    f = measure(&r, &o, &seq, hist);
    print_figures(&r, &o, &seq, &f);
    if (A->destroy) A->destroy(r.heap);
    return 0;
}
