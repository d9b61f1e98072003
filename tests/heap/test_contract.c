/* The transport contract as the heap keeps it: a transport must name its
   PE and the number of PEs; every callback gets the transport's user
   pointer; the statuses of lock and unlock are honoured. */
#include "test_support.h"

static char region[1 << 20] __attribute__((aligned(4096)));

/* What the callbacks saw. */
static struct calls {
    int barriers, reduces, registers, locks, unlocks, wrong_user;
    int lock_fails, unlock_fails; /* what lock and unlock return, 0: success */
} seen;

static void check_user(void *user)
{
    if (user != &seen) seen.wrong_user++;
}
static int t_barrier(void *user)
{
    check_user(user);
    seen.barriers++;
    return 0;
}
static int t_reduce(void *user, uint64_t *values, int count)
{
    (void)values, (void)count;
    check_user(user);
    seen.reduces++;
    return 0;
}
static int t_register(void *user, void *base, size_t bytes)
{
    (void)base, (void)bytes;
    check_user(user);
    seen.registers++;
    return 0;
}
static int t_lock(void *user)
{
    check_user(user);
    seen.locks++;
    return seen.lock_fails;
}
static int t_unlock(void *user)
{
    check_user(user);
    seen.unlocks++;
    return seen.unlock_fails;
}

static shmalloc_transport transport(int pe, int npes)
{
    shmalloc_transport tp;
    memset(&tp, 0, sizeof tp);
    tp.user = &seen;
    tp.barrier = t_barrier;
    tp.allreduce_max = t_reduce;
    tp.register_region = t_register;
    tp.lock = t_lock;
    tp.unlock = t_unlock;
    tp.pe = pe;
    tp.npes = npes;
    return tp;
}

static shmalloc_heap *create(int pe, int npes, long *err)
{
    shmalloc_transport tp = transport(pe, npes);
    shmalloc_heap *h;
    capture_start();
    h = shmalloc_heap_create(region, sizeof region, &tp, err);
    capture_stop();
    return h;
}

Test(contract, a_transport_that_names_no_pe_or_pe_count_is_refused)
{
    static const int cases[][2] = {{0, 0}, {-1, 2}, {2, 2}, {5, 1}};
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long err = 0;
        memset(&seen, 0, sizeof seen);
        cr_assert_null(create(cases[i][0], cases[i][1], &err), "PE %d of %d accepted", cases[i][0], cases[i][1]);
        cr_assert_eq(err, SHMEMX_MALLOC_BAD_TRANSPORT);
        assert_said(HEAP_BAD_PE, cases[i][0], cases[i][1], cases[i][1] == 1 ? "" : "s");
        cr_assert_eq(seen.registers + seen.barriers + seen.reduces, 0, "refused before any collective step");
    }
}

Test(contract, every_callback_gets_the_user_pointer_and_messages_name_the_pe)
{
    long err;
    void *p;
    shmalloc_heap *h;
    memset(&seen, 0, sizeof seen);
    h = create(3, 4, &err);
    cr_assert_not_null(h);
    p = shmalloc_heap_malloc(h, 100, &err);
    cr_assert_not_null(p);
    capture_start();
    cr_assert_null(shmalloc_heap_malloc(h, 4 << 20, &err)); /* out of memory: reported by this PE */
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_OOM), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "PE 3: "), "the message names the PE: %s", out_text[2]);
    shmalloc_heap_free(h, p, &err);
    cr_assert(seen.registers == 1 && seen.reduces >= 3 && seen.locks >= 3 && seen.unlocks == seen.locks);
    cr_assert_eq(seen.wrong_user, 0, "%d callbacks got another user pointer", seen.wrong_user);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
}

Test(contract, a_failed_lock_fails_the_call_changes_nothing_and_still_agrees)
{
    long err;
    shmalloc_counters before, after;
    shmalloc_heap *h;
    void *p, *q;
    int reduces;
    memset(&seen, 0, sizeof seen);
    h = create(0, 1, &err);
    p = shmalloc_heap_malloc(h, 100, &err);
    cr_assert_not_null(p);
    shmalloc_tlsf_counters(shmalloc_heap_tlsf(h), &before);
    seen.lock_fails = -3;
    capture_start();
    reduces = seen.reduces;
    cr_assert_null(shmalloc_heap_malloc(h, 64, &err));
    cr_assert_eq(err, SHMEMX_MALLOC_BAD_TRANSPORT);
    shmalloc_heap_free(h, p, &err);
    cr_assert_eq(err, SHMEMX_MALLOC_BAD_TRANSPORT);
    cr_assert_null(shmalloc_heap_realloc(h, p, 200, &err));
    cr_assert_eq(err, SHMEMX_MALLOC_BAD_TRANSPORT);
    cr_assert_null(shmalloc_heap_sbreak(h, 64, &err));
    cr_assert_eq(err, SHMEMX_MALLOC_BAD_TRANSPORT);
    cr_assert_eq(seen.reduces - reduces, 4, "each collective call still agreed, so no peer waits");
    cr_assert_eq(shmalloc_heap_check(h, -1), 1, "the checker cannot look without the lock");
    capture_stop();
    assert_said(HEAP_LOCK_FAILED, 0, -3);
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_MISUSE), 0, "a failed lock is no bad argument:\n%s", out_text[2]);
    cr_assert_eq(seen.unlocks, seen.locks - 5, "no unlock without the lock");
    seen.lock_fails = 0;
    shmalloc_tlsf_counters(shmalloc_heap_tlsf(h), &after);
    cr_assert(after.in_use == before.in_use && after.used_blocks == before.used_blocks, "the heap is unchanged");
    cr_assert(shmalloc_tlsf_usable_size(shmalloc_heap_tlsf(h), p) >= 100, "the block is still allocated");
    q = shmalloc_heap_malloc(h, 64, &err);
    cr_assert_not_null(q);
    shmalloc_heap_free(h, q, &err);
    shmalloc_heap_free(h, p, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
}

Test(contract, a_failed_unlock_is_said_and_the_outcome_stands)
{
    long err;
    shmalloc_heap *h;
    void *p;
    memset(&seen, 0, sizeof seen);
    h = create(1, 2, &err);
    seen.unlock_fails = 1;
    capture_start();
    p = shmalloc_heap_malloc(h, 100, &err);
    capture_stop();
    seen.unlock_fails = 0;
    cr_assert_not_null(p, "the PEs agreed on the block: it stands");
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    assert_said(HEAP_UNLOCK_FAILED, 1);
    shmalloc_heap_free(h, p, &err);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
}

/* An allreduce_and that fails during a drain: said, naming the member and
   its status; the released block stays allocated until a later drain,
   which frees it. */
static int and_fails; /* what allreduce_and returns */
static int t_and(void *user, uint64_t *values, int count)
{
    (void)values, (void)count;
    check_user(user);
    return and_fails;
}

Test(contract, a_failed_allreduce_and_is_said_and_the_drain_waits_for_a_later_call)
{
    shmalloc_transport tp = transport(0, 1);
    shmalloc_heap *h;
    long err;
    void *p;
    memset(&seen, 0, sizeof seen);
    tp.allreduce_and = t_and;
    h = shmalloc_heap_create(region, sizeof region, &tp, &err);
    cr_assert_not_null(h);
    p = shmalloc_heap_malloc(h, 100, &err);
    shmalloc_heap_free_deferred(h, p, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    and_fails = -5;
    capture_start();
    shmalloc_heap_free_deferred_drain(h, &err);
    capture_stop();
    assert_said(HEAP_DRAIN_TRANSPORT_FAILED, 0, "allreduce_and", -5);
    cr_assert_eq(shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), p), SHMALLOC_TLSF_OK, "still allocated");
    and_fails = 0;
    shmalloc_heap_free_deferred_drain(h, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    cr_assert_eq(shmalloc_tlsf_validate(shmalloc_heap_tlsf(h), p), SHMALLOC_TLSF_ALREADY_FREE,
                 "freed by the later drain");
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
}

/* A realloc that moves synchronises again after the move; when that
   barrier fails, the call says so with the transport's code, and the block
   it returns has moved with its contents (the old one is gone everywhere). */
static int barrier_fails;
static int t_failing_barrier(void *user)
{
    check_user(user);
    return barrier_fails;
}

Test(contract, a_failed_barrier_after_a_moving_realloc_gives_the_transports_code)
{
    shmalloc_transport tp = transport(0, 1);
    shmalloc_heap *h;
    long err;
    char *a, *b, *q;
    memset(&seen, 0, sizeof seen);
    tp.barrier = t_failing_barrier;
    h = shmalloc_heap_create(region, sizeof region, &tp, &err);
    cr_assert_not_null(h);
    a = shmalloc_heap_malloc(h, 100, &err);
    b = shmalloc_heap_malloc(h, 100, &err); /* a cannot grow in place */
    memset(a, 7, 100);
    barrier_fails = -9;
    capture_start();
    q = shmalloc_heap_realloc(h, a, 5000, &err);
    capture_stop();
    barrier_fails = 0;
    cr_assert_eq(err, SHMEMX_MALLOC_BAD_TRANSPORT);
    assert_said(HEAP_TRANSPORT_FAILED, 0, "realloc", "barrier", -9);
    cr_assert(q != NULL && q != a, "the block moved");
    cr_assert(q[0] == 7 && q[99] == 7, "with its contents");
    shmalloc_heap_free(h, q, &err);
    shmalloc_heap_free(h, b, &err);
    cr_assert_eq(err, SHMEM_MALLOC_OK);
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h);
}
