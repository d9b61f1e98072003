/* bench/core.c - the TLSF core against the allocators users would pick
   instead (issue 6, item 1).

     core ALLOCATOR WORKLOAD [--callgrind | --footprint] [--steps N]
     core shmalloc|shmalloc-separate --fresh MIB

   ALLOCATOR: shmalloc, shmalloc-separate (the core with its metadata kept
   apart, through the allocator hooks), glibc, jemalloc, tcmalloc, mimalloc.
   WORKLOAD: a, b, c or d (see bench/README.md).  A system allocator is linked into a binary
   of its own (core_jemalloc, ...), so each runs in a fresh process with
   nothing else in it; this binary execs its sibling when asked for one it
   does not have.  One line of key=value figures goes to stdout.

   Phases: fill (the live set), warm-up, timed (the steady-state loop, one
   clock reading before and after: ns_per_op), latency (every operation
   timed on its own: p999_ns).  --callgrind runs fill, warm-up and the timed
   loop, the timed loop alone through the op_* wrappers, for
   valgrind --tool=callgrind --toggle-collect='op_*'.  --footprint runs fill,
   warm-up and timed loop writing every page handed out, and reports the
   peak RSS growth (system allocators) or the high-water mark (shmalloc)
   over the peak of live requested bytes.

   For the TLSF core the line also gives its metadata after the timed
   loop: meta_per_block, bytes per used block (a separate core: all it
   holds through the hooks; an inline one: the 16-byte headers of all
   blocks), and meta_fixed, what a fresh, empty core over the heap holds
   (a separate core: through the hooks; an inline one: the region less
   its block space).  --fresh prints meta_fixed alone, for a heap of MIB. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* dladdr, MAP_NORESERVE, MAP_POPULATE */
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <unistd.h>

#include "shmalloc.h"
#include "workload.h"

#if !defined(BENCH_SYSTEM)
#  define BENCH_SYSTEM "glibc" /* the malloc this binary is linked with */
#endif
#define SHM_HEAP_BYTES GIB /* pre-faulted region for the TLSF core */

/* ---- the allocators, behind one table ----------------------------------
   Every entry takes the heap first, so the wrappers of shmalloc and of the
   system allocators do the same work around the call. */
typedef struct allocator {
    void *(*malloc)(void *heap, size_t size);
    void *(*memalign)(void *heap, size_t align, size_t size);
    void *(*realloc)(void *heap, void *ptr, size_t size);
    void (*free)(void *heap, void *ptr);
} allocator;

/* A fresh core over [mem, mem + bytes), inline or separate; a separate
   one writes into its blocks (host memory here) with the single-PE
   transport's fill and copy, memset and memcpy. */
static shmalloc_tlsf *shm_create(void *mem, size_t bytes, int separate)
{
    const shmalloc_transport *host = shmalloc_transport_single();
    shmalloc_memops ops = {NULL, host->fill, host->copy};
    shmalloc_tlsf *t = separate ? shmalloc_tlsf_create_separate(mem, bytes, bytes, &ops)
                                : shmalloc_tlsf_create(mem, bytes);
    if (!t) bench_die("cannot create the TLSF core");
    return t;
}

/* Fill and warm-up go through these: not counted by callgrind. */
static void *shm_malloc(void *h, size_t n) { return shmalloc_tlsf_malloc((shmalloc_tlsf *)h, n); }
static void *shm_memalign(void *h, size_t a, size_t n) { return shmalloc_tlsf_align((shmalloc_tlsf *)h, a, n); }
static void *shm_realloc(void *h, void *p, size_t n) { return shmalloc_tlsf_realloc((shmalloc_tlsf *)h, p, n); }
static void shm_free(void *h, void *p)
{
    if (shmalloc_tlsf_free((shmalloc_tlsf *)h, p) != SHMALLOC_TLSF_OK) bench_die("shmalloc_tlsf_free refused a pointer");
}
static void *sys_malloc(void *h, size_t n)
{
    (void)h;
    return malloc(n);
}
static void *sys_memalign(void *h, size_t a, size_t n)
{
    void *p;
    (void)h;
    return posix_memalign(&p, a, n) ? NULL : p;
}
static void *sys_realloc(void *h, void *p, size_t n)
{
    (void)h;
    return realloc(p, n);
}
static void sys_free(void *h, void *p)
{
    (void)h;
    free(p);
}

/* The steady-state loop goes through these: what callgrind counts. */
BENCH_OP static void *op_shm_malloc(void *h, size_t n)
{
    void *p = shmalloc_tlsf_malloc((shmalloc_tlsf *)h, n);
    BENCH_AFTER_CALL();
    return p;
}
BENCH_OP static void *op_shm_memalign(void *h, size_t a, size_t n)
{
    void *p = shmalloc_tlsf_align((shmalloc_tlsf *)h, a, n);
    BENCH_AFTER_CALL();
    return p;
}
BENCH_OP static void *op_shm_realloc(void *h, void *p, size_t n)
{
    void *q = shmalloc_tlsf_realloc((shmalloc_tlsf *)h, p, n);
    BENCH_AFTER_CALL();
    return q;
}
BENCH_OP static void op_shm_free(void *h, void *p)
{
    shmalloc_tlsf_free((shmalloc_tlsf *)h, p); /* checked by the heap check at the end */
    BENCH_AFTER_CALL();
}
BENCH_OP static void *op_sys_malloc(void *h, size_t n)
{
    void *p;
    (void)h;
    p = malloc(n);
    BENCH_AFTER_CALL();
    return p;
}
BENCH_OP static void *op_sys_memalign(void *h, size_t a, size_t n)
{
    void *p;
    int e;
    (void)h;
    e = posix_memalign(&p, a, n);
    BENCH_AFTER_CALL();
    return e ? NULL : p;
}
BENCH_OP static void *op_sys_realloc(void *h, void *p, size_t n)
{
    void *q;
    (void)h;
    q = realloc(p, n);
    BENCH_AFTER_CALL();
    return q;
}
BENCH_OP static void op_sys_free(void *h, void *p)
{
    (void)h;
    free(p);
    BENCH_AFTER_CALL();
}

static const allocator shm_plain = {shm_malloc, shm_memalign, shm_realloc, shm_free};
static const allocator shm_op = {op_shm_malloc, op_shm_memalign, op_shm_realloc, op_shm_free};
static const allocator sys_plain = {sys_malloc, sys_memalign, sys_realloc, sys_free};
static const allocator sys_op = {op_sys_malloc, op_sys_memalign, op_sys_realloc, op_sys_free};

/* ---- one run -------------------------------------------------------------- */
typedef struct run {
    const allocator *al;
    void *heap;
    char workload;
    void **slots;
    int separate;        /* shmalloc-separate */
    int touch;           /* --footprint: write every page handed out, */
    char *base;          /* and (shmalloc) track the highest requested */
    size_t highest;      /* byte ever in use, from the heap's base */
    size_t fixed;        /* shm_fixed of the heap */
    uint32_t *samples;   /* latency phase: one per operation */
    size_t nsamples;
} run;

static void *checked(void *p)
{
    if (!p) bench_die("an allocation failed");
    return p;
}

/* ops[begin, end) of workloads b, c, d. */
static void run_ops(run *r, const bench_op *ops, size_t begin, size_t end)
{
    const allocator *al = r->al;
    void *h = r->heap, **slots = r->slots;
    size_t i;
    for (i = begin; i < end; i++) {
        bench_op op = ops[i];
        void **s = &slots[op.slot];
        if (r->workload == 'd') {
            *s = checked(*s ? al->realloc(h, *s, BENCH_SIZE(op)) : al->malloc(h, BENCH_SIZE(op)));
        } else {
            if (*s) al->free(h, *s);
            *s = checked(r->workload == 'c' ? al->memalign(h, BENCH_ALIGN(op), BENCH_SIZE(op))
                                            : al->malloc(h, BENCH_SIZE(op)));
        }
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
    const allocator *al = r->al;
    void *h = r->heap, **slots = r->slots;
    size_t i;
    for (i = begin; i < end; i++) {
        bench_op op = ops[i];
        void **s = &slots[op.slot];
        uint64_t t0, t1, t2;
        if (r->workload == 'd') {
            t0 = now_ns();
            *s = al->realloc(h, *s, BENCH_SIZE(op));
            t1 = now_ns();
            r->samples[r->nsamples++] = (uint32_t)(t1 - t0);
        } else {
            t0 = now_ns();
            al->free(h, *s);
            t1 = now_ns();
            *s = r->workload == 'c' ? al->memalign(h, BENCH_ALIGN(op), BENCH_SIZE(op)) : al->malloc(h, BENCH_SIZE(op));
            t2 = now_ns();
            r->samples[r->nsamples++] = (uint32_t)(t1 - t0);
            r->samples[r->nsamples++] = (uint32_t)(t2 - t1);
        }
        checked(*s);
    }
}

/* Workload a: n times malloc(64) then free, on an empty heap. */
static void run_a(run *r, size_t n, int timed)
{
    const allocator *al = r->al;
    void *h = r->heap;
    size_t i;
    for (i = 0; i < n; i++) {
        if (timed) {
            uint64_t t0 = now_ns(), t1, t2;
            void *p = al->malloc(h, 64);
            t1 = now_ns();
            al->free(h, checked(p));
            t2 = now_ns();
            r->samples[r->nsamples++] = (uint32_t)(t1 - t0);
            r->samples[r->nsamples++] = (uint32_t)(t2 - t1);
        } else {
            void *p = checked(al->malloc(h, 64));
            if (r->touch) bench_touch(p, 64);
            al->free(h, p);
        }
    }
}

/* Frees every slot (system allocators) or starts a fresh heap over the
   same memory (shmalloc), after the warm-up pass. */
static void reset(run *r, size_t live)
{
    size_t i;
    if (r->base) {
        shmalloc_tlsf_destroy((shmalloc_tlsf *)r->heap);
        r->heap = shm_create(r->base, SHM_HEAP_BYTES, r->separate);
    } else {
        for (i = 0; i < live; i++)
            if (r->slots[i]) r->al->free(r->heap, r->slots[i]);
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

static void exec_sibling(const char *name, char **argv)
{
    char self[PATH_MAX], path[PATH_MAX + 32], *slash;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) bench_die("cannot find this program's path");
    self[n] = 0;
    slash = strrchr(self, '/');
    if (slash) slash[1] = 0;
    snprintf(path, sizeof path, "%score_%s", slash ? self : "./", name);
    execv(path, argv);
    fprintf(stderr, "core: %s is not built (%s: missing library?)\n", name, path);
    exit(3);
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
    fprintf(stderr, "usage: core shmalloc|shmalloc-separate|glibc|jemalloc|tcmalloc|mimalloc a|b|c|d "
                    "[--callgrind|--footprint] [--steps N]\n"
                    "       core shmalloc|shmalloc-separate --fresh MIB\n");
    exit(1);
}

/* The step counts, under callgrind too: d's buffers drift in size
   for a long time, so a shorter counted loop would not be the same figure. */
static size_t default_steps(char workload)
{
    return workload == 'c' ? 500000 : 1000000;
}

/* What the command line asks for, and the sizes that follow from it. */
typedef struct options {
    const char *name;
    char workload;
    int callgrind, footprint, is_shm, separate;
    size_t steps, warm, lat, live, fresh_mib;
} options;

/* Parses argv; execs the sibling binary when another system allocator is
   asked for, and refuses to run under the wrong malloc. */
static options parse_options(int argc, char **argv)
{
    options o;
    int i;
    memset(&o, 0, sizeof o);
    if (argc < 3) usage();
    o.name = argv[1];
    o.separate = !strcmp(o.name, "shmalloc-separate");
    o.is_shm = o.separate || !strcmp(o.name, "shmalloc");
    if (argc == 4 && o.is_shm && !strcmp(argv[2], "--fresh")) {
        o.fresh_mib = strtoull(argv[3], NULL, 10);
        if (!o.fresh_mib) usage();
        return o;
    }
    if (strlen(argv[2]) != 1 || argv[2][0] < 'a' || argv[2][0] > 'd') usage();
    o.workload = argv[2][0];
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--callgrind")) o.callgrind = 1;
        else if (!strcmp(argv[i], "--footprint")) o.footprint = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) o.steps = strtoull(argv[++i], NULL, 10);
        else usage();
    }
    if (!o.is_shm && strcmp(o.name, "glibc") && strcmp(o.name, "jemalloc") && strcmp(o.name, "tcmalloc") &&
        strcmp(o.name, "mimalloc"))
        usage();
    if (!o.is_shm && strcmp(o.name, BENCH_SYSTEM)) exec_sibling(o.name, argv);
    if (!o.is_shm && !malloc_is(strcmp(o.name, "glibc") ? o.name : "libc.so")) {
        fprintf(stderr, "core: malloc in this process is not %s's\n", o.name);
        exit(3);
    }
    if (!o.steps) o.steps = default_steps(o.workload);
    /* b, c and d warm up as allocbench does, with a pass of fill and timed
       steps on a fresh heap before the measured one: the counted loop
       follows the fill, as there */
    o.warm = o.workload == 'a' ? 1000 : 0;
    o.lat = o.callgrind || o.footprint ? 0 : o.steps < 200000 ? o.steps : 200000;
    o.live = o.workload == 'a' ? 0 : o.workload == 'd' ? 1000 : 10000;
    return o;
}

/* What a fresh, empty core over `bytes` at mem holds: through the hooks
   (separate), or the region less its block space (inline). */
static size_t shm_fixed(void *mem, size_t bytes, int separate)
{
    size_t before = bench_private_bytes(), fixed;
    shmalloc_tlsf *t = shm_create(mem, bytes, separate);
    shmalloc_counters c;
    shmalloc_tlsf_counters(t, &c);
    fixed = separate ? bench_private_bytes() - before : bytes - c.capacity;
    shmalloc_tlsf_destroy(t);
    return fixed;
}

/* --fresh: the fixed overhead of a core over MIB MiB. */
static void print_fresh(const options *o)
{
    size_t bytes = o->fresh_mib * MIB, fixed;
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) bench_die("cannot map the heap");
    fixed = shm_fixed(mem, bytes, o->separate);
    printf("allocator=%s heap=%zu meta_fixed=%zu meta_fixed_pct=%.4f\n", o->name, bytes, fixed,
           100.0 * (double)fixed / (double)bytes);
}

/* The TLSF core's heap over SHM_HEAP_BYTES of fresh memory. */
static void map_shm_heap(run *r, int callgrind)
{
    /* a symmetric heap is mapped and faulted in before the first call;
       callgrind counts instructions, which page faults do not change */
    int populate = callgrind ? 0 : MAP_POPULATE;
    void *mem = mmap(NULL, SHM_HEAP_BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | populate, -1, 0);
    if (mem == MAP_FAILED) bench_die("cannot map the heap");
    r->base = (char *)mem;
    r->fixed = shm_fixed(mem, SHM_HEAP_BYTES, r->separate);
    r->heap = shm_create(mem, SHM_HEAP_BYTES, r->separate);
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
    r->separate = o->separate;
    if (o->is_shm) map_shm_heap(r, o->callgrind);
    if (o->workload != 'a') {
        bench_generate(seq, o->workload, o->live, o->warm, o->steps, o->lat);
        r->slots = (void **)bench_map(o->live * sizeof *r->slots);
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
    size_t meta, used_blocks; /* the TLSF core's, after the timed loop */
    double ns_per_op;
    uint32_t p999, clock_cost;
    int peak_ok;
} figures;

static int count_block(void *user, const shmalloc_block_info *block)
{
    (void)block;
    ++*(size_t *)user;
    return 0;
}

/* The core's metadata now: all it holds through the hooks (separate), or
   a 16-byte header per block (inline). */
static void shm_meta(const run *r, figures *f)
{
    shmalloc_counters c;
    size_t blocks = 0;
    shmalloc_tlsf_counters((const shmalloc_tlsf *)r->heap, &c);
    f->used_blocks = c.used_blocks;
    if (r->separate) {
        f->meta = bench_private_bytes();
    } else {
        shmalloc_tlsf_walk((const shmalloc_tlsf *)r->heap, count_block, &blocks);
        f->meta = 16 * blocks;
    }
}

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
    r->al = o->is_shm ? &shm_plain : &sys_plain;
    if (o->workload != 'a' && !o->callgrind && !o->footprint) {
        run_ops(r, seq->ops, seq->begin[PHASE_FILL], seq->begin[PHASE_LAT]);
        reset(r, o->live);
    }
    run_phases(r, seq, PHASE_FILL, PHASE_TIMED, o->warm, 0);

    if (!o->footprint) r->al = o->is_shm ? &shm_op : &sys_op;
    t0 = now_ns();
    run_phases(r, seq, PHASE_TIMED, PHASE_LAT, o->steps, 0);
    t1 = now_ns();
    f.ns_per_op = (double)(t1 - t0) / (double)f.ops_timed;
    if (o->is_shm) shm_meta(r, &f);

    if (o->lat) {
        run_phases(r, seq, PHASE_LAT, PHASES, o->lat, 1);
        f.p999 = bench_quantile(r->samples, r->nsamples, 0.999, hist);
        f.clock_cost = bench_clock_cost(r->samples, hist);
        f.p999 = f.p999 > f.clock_cost ? f.p999 - f.clock_cost : 0;
    }
    return f;
}

/* One line of key=value figures; for shmalloc, after the heap check. */
static void print_figures(const run *r, const options *o, const bench_seq *seq, const figures *f)
{
    size_t peak_live = o->workload == 'a' ? 64 : seq->peak_live[o->lat ? PHASE_LAT : PHASE_TIMED];
    printf("allocator=%s workload=%c ops=%zu ns_per_op=%.2f", o->name, o->workload, f->ops_timed, f->ns_per_op);
    if (o->lat) printf(" p999_ns=%u clock_ns=%u", f->p999, f->clock_cost);
    if (o->is_shm) {
        shmalloc_counters c;
        const shmalloc_tlsf *tlsf = (const shmalloc_tlsf *)r->heap;
        shmalloc_tlsf_counters(tlsf, &c);
        if (shmalloc_tlsf_check(tlsf, 0) != 0) bench_die("the heap check failed");
        if (o->footprint && o->workload != 'a') /* allocbench's figure: the highest requested byte */
            printf(" peak_live=%zu highest=%zu frag=%.4f frag_kind=highest_byte", peak_live, r->highest,
                   (double)r->highest / (double)peak_live);
        else
            printf(" peak_live=%zu high_water=%zu frag=%.4f frag_kind=high_water", peak_live, c.high_water,
                   (double)c.high_water / (double)peak_live);
        if (f->used_blocks)
            printf(" meta_bytes=%zu used_blocks=%zu meta_per_block=%.1f", f->meta, f->used_blocks,
                   (double)f->meta / (double)f->used_blocks);
        printf(" meta_fixed=%zu meta_fixed_pct=%.4f", r->fixed, 100.0 * (double)r->fixed / (double)SHM_HEAP_BYTES);
    } else if (o->footprint) {
        size_t grown = peak_rss_bytes() - f->rss0;
        printf(" peak_live=%zu footprint=%zu frag=%.4f frag_kind=footprint%s", peak_live, grown,
               (double)grown / (double)peak_live, f->peak_ok ? "" : "(ru_maxrss,no-reset)");
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    bench_seq seq = {0};
    uint32_t *hist = NULL;
    run r;
    figures f;
    if (o.fresh_mib) {
        print_fresh(&o);
        return 0;
    }
    prepare(&r, &o, &seq, &hist);
    f = measure(&r, &o, &seq, hist);
    print_figures(&r, &o, &seq, &f);
    if (o.is_shm) shmalloc_tlsf_destroy((shmalloc_tlsf *)r.heap);
    return 0;
}
