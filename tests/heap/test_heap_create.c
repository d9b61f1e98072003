/* Creating and destroying a symmetric heap on one PE: its size and
   extent, registration with the transport, refusals, and calls made with
   no current heap. */
#include "test_support.h"

/* ---- creation ------------------------------------------------------------- */

Test(heap_create, heap_over_heap_bytes_has_nominal_size_and_contains_its_blocks)
{
    shmalloc_heap *h = make_heap(4 * MIB, NULL);
    cr_assert_eq(shmalloc_current(), h);
    cr_assert(shmalloc_heap_size(h) >= 4 * MIB, "size %zu", shmalloc_heap_size(h));
    char *base = shmalloc_heap_base(h);
    cr_assert(((uintptr_t)base & 15) == 0);
    void *p = shmem_malloc(100);
    cr_assert(p);
    cr_assert(shmalloc_heap_contains(h, p));
    cr_assert(shmalloc_heap_contains(h, base));
    int on_stack;
    cr_assert(!shmalloc_heap_contains(h, &on_stack));
    cr_assert(!shmalloc_heap_contains(h, base - 1));
    cr_assert(shmalloc_heap_contains(h, base + shmalloc_heap_size(h) - 1));
    cr_assert(!shmalloc_heap_contains(h, base + shmalloc_heap_size(h)));
    cr_assert(!shmalloc_heap_contains(h, base + shmalloc_heap_size(h) + shmalloc_heap_bytes(4 * MIB)));
    assert_heap_ok();
}

/* With a barrier-only transport and with an all-reduce. */
Test(heap_create, failing_register_region_makes_create_fail_after_synchronising)
{
    int with_allreduce;
    for (with_allreduce = 0; with_allreduce < 2; with_allreduce++) {
        shmalloc_transport tp = counting_transport(with_allreduce);
        size_t bytes = shmalloc_heap_bytes(MIB);
        long err = SHMEM_MALLOC_OK;
        memset(&cnt, 0, sizeof cnt);
        cnt.fail_register = 1;
        cr_assert_null(shmalloc_heap_create(map_aligned(bytes, MIB), bytes, &tp, &err),
                       "create succeeded although register_region failed (all-reduce %d)", with_allreduce);
        cr_assert_eq(err, SHMEMX_MALLOC_REGISTER_FAILED, "err %ld", err);
        cr_assert_eq(cnt.registers, 1);
        cr_assert(cnt.barriers + cnt.allreduces >= 1, "create failed without synchronising");
    }
}

Test(heap_create, create_registers_the_block_space_once_and_destroy_deregisters_it)
{
    shmalloc_heap *h = make_counting_heap(2 * MIB, 0);
    cr_assert_eq(cnt.registers, 1);
    cr_assert_eq(cnt.reg_base, shmalloc_heap_base(h));
    cr_assert(cnt.reg_bytes >= 2 * MIB, "registered %zu bytes", cnt.reg_bytes);
    cr_assert_eq(cnt.reg_bytes, shmalloc_heap_size(h), "registered %zu bytes, heap size %zu",
                 cnt.reg_bytes, shmalloc_heap_size(h));
    cr_assert_eq(cnt.deregisters, 0);
    assert_heap_ok();
    shmalloc_set_current(NULL);
    shmalloc_heap_destroy(h);
    cr_assert_eq(cnt.deregisters, 1);
    cr_assert_eq(cnt.dereg_base, cnt.reg_base);
    cr_assert_eq(cnt.dereg_bytes, cnt.reg_bytes);
}

/* Each cause of a refused create: its own code, whose description names
   it, and its own message on stream 2, which shows the value at fault. */
enum create_fault { NO_TRANSPORT, NO_BARRIER, PE_OUT_OF_RANGE, NO_PES, UNALIGNED, NO_MEMORY, TOO_SMALL, NO_REGISTER };
typedef struct create_case {
    enum create_fault fault;
    long code;
    char words[48]; /* in shmalloc_strerror(code) */
    int message;    /* SHMALLOC_MSG_* */
    char shows[16]; /* in the message */
} create_case;

static const create_case create_cases[] = {
    {NO_TRANSPORT, SHMEMX_MALLOC_BAD_TRANSPORT, "transport", SHMALLOC_MSG_HEAP_NO_TRANSPORT, ""},
    {NO_BARRIER, SHMEMX_MALLOC_BAD_TRANSPORT, "lacks a barrier", SHMALLOC_MSG_HEAP_NO_BARRIER, ""},
    {PE_OUT_OF_RANGE, SHMEMX_MALLOC_BAD_TRANSPORT, "pe and npes", SHMALLOC_MSG_HEAP_BAD_PE, "PE 2 of 2 PEs"},
    {NO_PES, SHMEMX_MALLOC_BAD_TRANSPORT, "pe and npes", SHMALLOC_MSG_HEAP_BAD_PE, "PE 0 of 0 PEs"},
    {UNALIGNED, SHMEMX_MALLOC_BAD_MEMORY, "not 16-byte aligned", SHMALLOC_MSG_HEAP_UNALIGNED, ""},
    {NO_MEMORY, SHMEMX_MALLOC_BAD_MEMORY, "not 16-byte aligned", SHMALLOC_MSG_HEAP_UNALIGNED, "(nil)"},
    {TOO_SMALL, SHMEMX_MALLOC_BAD_MEMORY, "too small", SHMALLOC_MSG_HEAP_MEMORY_SMALL, " 64 bytes"},
    {NO_REGISTER, SHMEMX_MALLOC_REGISTER_FAILED, "could not register", SHMALLOC_MSG_HEAP_REGISTER_FAILED, ""},
};

ParameterizedTestParameters(heap_create, each_refusal_has_its_own_code_and_message)
{
    return cr_make_param_array(create_case, create_cases, sizeof create_cases / sizeof create_cases[0]);
}

ParameterizedTest(create_case *c, heap_create, each_refusal_has_its_own_code_and_message)
{
    shmalloc_transport tp = counting_transport(1);
    size_t bytes = shmalloc_heap_bytes(MIB);
    char *mem = map_aligned(bytes, MIB);
    long err = SHMEM_MALLOC_OK;
    memset(&cnt, 0, sizeof cnt);
    if (c->fault == NO_BARRIER) tp.barrier = NULL;
    if (c->fault == PE_OUT_OF_RANGE) tp.pe = 2, tp.npes = 2;
    if (c->fault == NO_PES) tp.npes = 0;
    if (c->fault == UNALIGNED) mem += 8, bytes -= 8;
    if (c->fault == NO_MEMORY) mem = NULL;
    if (c->fault == TOO_SMALL) bytes = 64;
    cnt.fail_register = c->fault == NO_REGISTER;
    capture_start();
    cr_assert_null(shmalloc_heap_create(mem, bytes, c->fault == NO_TRANSPORT ? NULL : &tp, &err));
    capture_stop();
    cr_assert_eq(err, c->code, "%s: malloc_error %ld, expected %ld", shmalloc_message_name(c->message), err, c->code);
    cr_assert(strstr(shmalloc_strerror(err), c->words), "the description of %ld is \"%s\", without \"%s\"", err,
              shmalloc_strerror(err), c->words);
    cr_assert_eq(out_said(c->message), 1, "expected %s in\n%s", shmalloc_message_name(c->message), out_text[2]);
    cr_assert_eq(out_nids, 1, "one message:\n%s", out_text[2]);
    cr_assert(strstr(out_text[2], c->shows), "expected \"%s\" in\n%s", c->shows, out_text[2]);
}

/* Memory of the size the message asks for holds a heap. */
Test(heap_create, memory_too_small_names_the_least_that_holds_a_heap)
{
    static unsigned char buf[256] __attribute__((aligned(16)));
    size_t least = 0;
    long err = SHMEM_MALLOC_OK;
    const char *at;
    shmalloc_heap *h;
    capture_start();
    cr_assert_null(shmalloc_heap_create(buf, 64, shmalloc_transport_single(), &err));
    capture_stop();
    at = strstr(out_text[2], "give it at least ");
    cr_assert(at && sscanf(at, "give it at least %zu", &least) == 1, "%s", out_text[2]);
    h = shmalloc_heap_create(map_aligned(least, MIB), least, shmalloc_transport_single(), &err);
    cr_assert(h, "%zu bytes hold no heap either: %ld", least, err);
    shmalloc_set_current(h);
    cr_assert(shmem_malloc(16));
    assert_heap_ok();
}

Test(heap_create, whole_nominal_size_is_one_allocation_on_a_fresh_heap, .timeout = 60)
{
    static const size_t sizes[] = {4096, 100000, MIB, 10000000, 64 * MIB, 512 * MIB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        shmalloc_heap *h = make_heap(sizes[i], NULL);
        malloc_error = -99;
        void *p = shmem_malloc(sizes[i]);
        cr_assert(p != NULL, "shmem_malloc(%zu) on a heap of that nominal size failed: %ld",
                  sizes[i], malloc_error);
        cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
        assert_heap_ok();
        shmem_free(p);
        p = shmem_align(16, sizes[i]);
        cr_assert(p != NULL, "shmem_align(16, %zu) failed", sizes[i]);
        shmem_free(p);
        assert_heap_ok();
        (void)h;
    }
}

/* Every byte a caller may use must be inside the heap as contains() and the
   transport's registration see it, or a peer's put to it would fail. */
Test(heap_create, every_usable_byte_of_the_last_block_is_contained_and_registered)
{
    shmalloc_heap *h = make_counting_heap(MIB, 0);
    size_t lf = heap_counters(h).largest_free;
    char *reg = cnt.reg_base;
    for (size_t back = 0; back < 64; back += 8) {
        size_t req = lf - SHMALLOC_HEADER + 8 - back;
        char *p = shmem_malloc(req);
        if (!p)
            continue;
        char *last = p + req - 1;
        cr_assert(shmalloc_heap_contains(h, last),
                  "malloc(%zu) on a heap of %zu: its last byte is not contained", req,
                  shmalloc_heap_size(h));
        cr_assert(last >= reg && last < reg + cnt.reg_bytes,
                  "malloc(%zu): last byte %td bytes past the registered region", req,
                  last - (reg + cnt.reg_bytes) + 1);
        shmem_free(p);
    }
    assert_heap_ok();
}

Test(heap_create, whole_nominal_size_calloc_succeeds_and_is_zero)
{
    make_heap(MIB, NULL);
    unsigned char *p = shmem_calloc(1, MIB);
    cr_assert(p != NULL, "shmem_calloc(1, 1 MiB) failed: %ld", malloc_error);
    for (size_t i = 0; i < MIB; i++)
        cr_assert(p[i] == 0);
    assert_heap_ok();
}

Test(heap_create, calls_without_a_current_heap_fail_cleanly)
{
    shmalloc_set_current(NULL);
    shmalloc_set_process_heap(NULL);
    cr_assert_null(shmalloc_current());
    malloc_error = SHMEM_MALLOC_OK;
    capture_start();
    cr_assert_null(shmem_malloc(100));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    cr_assert(!strcmp(shmalloc_strerror(malloc_error),
                      "no symmetric heap (before shmem_init, or after shmem_finalize)"),
              "%s", shmalloc_strerror(malloc_error));
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_align(64, 100));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_calloc(2, 100));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    int x;
    malloc_error = SHMEM_MALLOC_OK;
    shmem_free(&x);
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shmem_realloc(&x, 10));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = SHMEM_MALLOC_OK;
    cr_assert_null(shsbreak(4096));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_NO_HEAP), 1, "the first call says so, no other:\n%s", out_text[2]);
    capture_start();
    int r = shmalloc_check(-1);
    size_t silent = out_len[1] + out_len[2];
    int r0 = shmalloc_check(0);
    shmalloc_stats(0);
    capture_stop();
    cr_assert_neq(r, 0);
    cr_assert_eq(silent, 0);
    cr_assert_neq(r0, 0);
    cr_assert(out_len[2] > 0 && out_len[1] > 0);
}

Test(heap_create, process_heap_is_used_when_the_thread_has_none)
{
    shmalloc_heap *h = make_heap(MIB, NULL);
    shmalloc_set_current(NULL);
    shmalloc_set_process_heap(h);
    cr_assert_eq(shmalloc_current(), h);
    void *p = shmem_malloc(10);
    cr_assert(p && shmalloc_heap_contains(h, p));
    assert_heap_ok();
}

/* ---- after destroy ---------------------------------------------------------
   man 7's lifecycle: destroy, then unmap.  The destroyed heap is no longer
   current, in any thread, nor the process heap: every name fails with
   SHMEMX_MALLOC_NO_HEAP (the first saying so) and touches nothing of it. */

/* A heap over its own mapping, the process heap or this thread's current one, holding one block. */
static shmalloc_heap *lifecycle_heap(void **mem, size_t bytes, int process_wide, void **block)
{
    long err;
    shmalloc_heap *h;
    *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(*mem != MAP_FAILED);
    h = shmalloc_heap_create(*mem, bytes, shmalloc_transport_single(), &err);
    cr_assert_not_null(h, "create: %ld", err);
    if (process_wide) shmalloc_set_process_heap(h);
    else shmalloc_set_current(h);
    *block = shmem_malloc(100);
    cr_assert_not_null(*block);
    assert_heap_ok();
    return h;
}

/* Every name of the current heap, with none: the code, nothing touched. */
static void assert_every_call_finds_no_heap(void *block)
{
    shmalloc_info info;
    cr_assert_null(shmalloc_current());
    malloc_error = 0;
    cr_assert_null(shmem_malloc(100));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    cr_assert_null(shmem_malloc_with_hints(100, SHMEM_MALLOC_ATOMICS_REMOTE));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    cr_assert_null(shmem_align(64, 100));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    cr_assert_null(shmem_calloc(4, 25));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    cr_assert_null(shmem_realloc(block, 200));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    cr_assert_null(shmem_realloc(NULL, 200));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    shmem_free(block);
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = -99;
    shmem_free(NULL); /* nothing to free: OpenSHMEM's no-op, with or without a heap */
    cr_assert_eq(malloc_error, SHMEM_MALLOC_OK);
    malloc_error = 0;
    cr_assert_null(shsbreak(4096));
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    shmemx_free_deferred(block);
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    malloc_error = 0;
    shmemx_free_deferred_drain();
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
    cr_assert_eq(shmemx_heap_info(&info), -1);
    cr_assert_eq(shmalloc_heap_hints(shmalloc_current(), block), SHMEMX_MALLOC_NO_HEAP);
    cr_assert_eq(shmalloc_heap_block_of(shmalloc_current(), block, NULL, NULL), SHMEMX_MALLOC_NO_HEAP);
    cr_assert(!shmalloc_heap_contains(shmalloc_current(), block));
    cr_assert_neq(shmalloc_check(0), 0);
    shmalloc_stats(2);
}

static void check_destroy_then_unmap(int process_wide)
{
    size_t bytes = shmalloc_heap_bytes(MIB);
    void *mem, *block;
    shmalloc_heap *h = lifecycle_heap(&mem, bytes, process_wide, &block);
    shmalloc_heap_destroy(h);
    cr_assert_eq(munmap(mem, bytes), 0);
    capture_start();
    assert_every_call_finds_no_heap(block);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_NO_HEAP), 1, "said once:\n%s", out_text[2]);
    assert_said(HEAP_NO_HEAP, "malloc");
    cr_assert(strstr(shmalloc_strerror(SHMEMX_MALLOC_NO_HEAP), "after shmem_finalize"), "%s",
              shmalloc_strerror(SHMEMX_MALLOC_NO_HEAP));
    cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_NO_HEAP), 1);
    cr_assert_eq(out_said(SHMALLOC_MSG_STATS_NO_HEAP), 1);
}

Test(heap_create, after_destroy_and_unmap_the_process_heap_is_gone)
{
    check_destroy_then_unmap(1);
}

Test(heap_create, after_destroy_and_unmap_the_current_heap_is_gone)
{
    check_destroy_then_unmap(0);
}

/* Without the unmap, a call must not hand out a block of the dead heap. */
Test(heap_create, a_destroyed_heap_still_mapped_serves_nothing)
{
    size_t bytes = shmalloc_heap_bytes(MIB);
    void *mem, *block;
    shmalloc_heap *h = lifecycle_heap(&mem, bytes, 1, &block);
    shmalloc_heap_destroy(h);
    malloc_error = 0;
    capture_start();
    cr_assert_null(shmem_malloc(64));
    capture_stop();
    cr_assert_eq(malloc_error, SHMEMX_MALLOC_NO_HEAP);
}

/* Another thread that made the heap its own current one. */
typedef struct helper {
    shmalloc_heap *heap;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int step; /* 1: its heap is set; 2: go on */
    void *got;
    long err;
    shmalloc_heap *current_after;
} helper;

static void helper_step(helper *w, int step, int wait)
{
    pthread_mutex_lock(&w->lock);
    if (wait)
        while (w->step < step) pthread_cond_wait(&w->cond, &w->lock);
    else {
        w->step = step;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

static void *helper_thread(void *arg)
{
    helper *w = (helper *)arg;
    shmalloc_set_current(w->heap);
    helper_step(w, 1, 0);
    helper_step(w, 2, 1);
    malloc_error = 0;
    w->got = shmem_malloc(64);
    w->err = malloc_error;
    w->current_after = shmalloc_current();
    return NULL;
}

/* Runs a helper thread whose current heap is `heap` until `between` has run. */
static void run_helper(helper *w, shmalloc_heap *heap, void (*between)(void *), void *arg)
{
    pthread_t t;
    memset(w, 0, sizeof *w);
    w->heap = heap;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    cr_assert_eq(pthread_create(&t, NULL, helper_thread, w), 0);
    helper_step(w, 1, 1);
    between(arg);
    helper_step(w, 2, 0);
    pthread_join(t, NULL);
}

typedef struct heaps {
    shmalloc_heap *dead, *reborn;
    void *mem;
    size_t bytes;
} heaps;

/* A heap of 1 MiB made current in a helper thread, then `between` runs
   here while the helper waits, then the helper calls again. */
static void run_with_dead_heap(heaps *s, helper *w, void (*between)(void *arg))
{
    void *block;
    s->bytes = shmalloc_heap_bytes(MIB);
    s->dead = lifecycle_heap(&s->mem, s->bytes, 0, &block);
    capture_start();
    run_helper(w, s->dead, between, s);
    capture_stop();
}

static void destroy_and_unmap(void *arg)
{
    heaps *s = (heaps *)arg;
    shmalloc_heap_destroy(s->dead);
    cr_assert_eq(munmap(s->mem, s->bytes), 0);
}

Test(heap_create, a_thread_that_made_the_heap_current_finds_no_heap_after_destroy)
{
    heaps s;
    helper w;
    run_with_dead_heap(&s, &w, destroy_and_unmap);
    cr_assert_null(w.got);
    cr_assert_eq(w.err, SHMEMX_MALLOC_NO_HEAP);
    cr_assert_null(w.current_after);
    cr_assert_null(shmalloc_current(), "nor in the thread that destroyed it");
}

/* A new heap over the same memory is not the dead one come back. */
static void destroy_and_remake(void *arg)
{
    heaps *s = (heaps *)arg;
    long err;
    shmalloc_heap_destroy(s->dead);
    s->reborn = shmalloc_heap_create(s->mem, s->bytes, shmalloc_transport_single(), &err);
    cr_assert_eq(s->reborn, s->dead, "the same memory gives the same address");
}

Test(heap_create, a_heap_made_where_a_destroyed_one_was_is_not_current_by_accident)
{
    heaps s;
    helper w;
    run_with_dead_heap(&s, &w, destroy_and_remake);
    cr_assert_eq(w.err, SHMEMX_MALLOC_NO_HEAP);
    cr_assert_null(w.current_after);
    shmalloc_set_current(s.reborn);
    cr_assert_eq(heap_counters(s.reborn).used_blocks, 0, "the helper took nothing from the new heap");
    assert_heap_ok();
    shmalloc_heap_destroy(s.reborn);
}

/* Destroying one heap leaves another thread's live heap current. */
static void destroy_other(void *arg)
{
    heaps *s = (heaps *)arg;
    shmalloc_heap_destroy(s->dead);
}

Test(heap_create, destroying_one_heap_leaves_another_threads_heap_current)
{
    heaps s;
    helper w;
    void *block, *mem;
    shmalloc_heap *live;
    s.bytes = shmalloc_heap_bytes(MIB);
    live = lifecycle_heap(&mem, s.bytes, 0, &block);
    s.dead = lifecycle_heap(&s.mem, s.bytes, 0, &block);
    run_helper(&w, live, destroy_other, &s);
    cr_assert_not_null(w.got, "malloc on the live heap: %ld", w.err);
    cr_assert_eq(w.current_after, live);
    cr_assert(shmalloc_heap_contains(live, w.got));
    shmalloc_set_current(live);
    assert_heap_ok();
}

/* Past the 1024 live heaps a process keeps count of, a heap is assumed
   live in the threads that made it current: destroying another heap does
   not take it from them. */
Test(heap_create, a_heap_past_the_first_1024_live_ones_stays_current_in_its_threads, .timeout = 60)
{
    enum { HEAPS = 1025 };
    static shmalloc_heap *heaps_made[HEAPS];
    size_t bytes = shmalloc_heap_bytes(4096);
    char *mem = map_aligned(bytes * HEAPS, 4096);
    heaps s;
    helper w;
    long err;
    int i;
    bytes = (bytes + 15) & ~(size_t)15;
    for (i = 0; i < HEAPS; i++) {
        heaps_made[i] = shmalloc_heap_create(mem + (size_t)i * bytes, bytes, shmalloc_transport_single(), &err);
        cr_assert_not_null(heaps_made[i], "heap %d: %ld", i, err);
    }
    s.dead = heaps_made[0];
    run_helper(&w, heaps_made[HEAPS - 1], destroy_other, &s);
    cr_assert_not_null(w.got, "malloc on the untracked heap: %ld", w.err);
    cr_assert_eq(w.current_after, heaps_made[HEAPS - 1]);
    shmalloc_set_current(heaps_made[HEAPS - 1]);
    assert_heap_ok();
}
