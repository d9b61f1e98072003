/* Several threads of one PE allocating and freeing at once, the way
   SHMEM_THREAD_MULTIPLE programs do: one heap, a transport whose lock and
   unlock are a mutex, and four threads each running a seeded random
   sequence of every allocation call against a model of its own blocks
   (contents tagged and verified on free and after realloc).  Blocks of
   different threads must never overlap, which the tags would show.  Run
   under ThreadSanitizer by make test-tsan. */
#include "test_support.h"

#define THREADS 4
#define SLOTS 64
#define STEPS 20000

static pthread_mutex_t heap_mutex = PTHREAD_MUTEX_INITIALIZER;
static int do_lock(void *user) { return pthread_mutex_lock((pthread_mutex_t *)user); }
static int do_unlock(void *user) { return pthread_mutex_unlock((pthread_mutex_t *)user); }
static int no_barrier(void *user) { (void)user; return 0; }

typedef struct worker {
    shmalloc_heap *heap;
    uint64_t rng;
    int id;
    char failure[160];
    size_t ops;
} worker;

/* Each thread's blocks carry a fill of their own: thread id and slot. */
static unsigned tag_of(int id, int slot) { return (unsigned)(id * 64 + slot); }

static void *work(void *arg)
{
    worker *w = (worker *)arg;
    unsigned char *p[SLOTS] = {0};
    size_t n[SLOTS] = {0};
    long err;
    int step, k;
    for (step = 0; step < STEPS && !w->failure[0]; step++) {
        int s = (int)(rng_next(&w->rng) % SLOTS);
        size_t size = 1 + rng_next(&w->rng) % (1u << (rng_next(&w->rng) % 13));
        if (p[s] && !check_pattern(p[s], n[s], tag_of(w->id, s))) {
            snprintf(w->failure, sizeof w->failure, "thread %d step %d: slot %d overwritten", w->id, step, s);
            break;
        }
        switch (p[s] ? rng_next(&w->rng) % 2 : 2 + rng_next(&w->rng) % 3) {
        case 0:
            shmalloc_heap_free(w->heap, p[s], &err);
            if (err) snprintf(w->failure, sizeof w->failure, "thread %d: free failed (%ld)", w->id, err);
            p[s] = NULL;
            break;
        case 1: {
            unsigned char *q = shmalloc_heap_realloc(w->heap, p[s], size, &err);
            if (!q) break; /* heap full: p[s] intact, checked next time */
            if (!check_pattern(q, n[s] < size ? n[s] : size, tag_of(w->id, s)))
                snprintf(w->failure, sizeof w->failure, "thread %d: realloc lost contents", w->id);
            p[s] = q;
            n[s] = size;
            fill_pattern(q, size, tag_of(w->id, s));
            break;
        }
        default:
            p[s] = rng_next(&w->rng) & 1 ? shmalloc_heap_malloc(w->heap, size, &err)
                                     : shmalloc_heap_align(w->heap, (size_t)16 << (rng_next(&w->rng) % 6), size, &err);
            if (p[s]) {
                n[s] = size;
                fill_pattern(p[s], size, tag_of(w->id, s));
            }
        }
        w->ops++;
    }
    for (k = 0; k < SLOTS; k++)
        if (p[k]) {
            if (!check_pattern(p[k], n[k], tag_of(w->id, k)) && !w->failure[0])
                snprintf(w->failure, sizeof w->failure, "thread %d: slot %d overwritten at the end", w->id, k);
            shmalloc_heap_free(w->heap, p[k], NULL);
        }
    return NULL;
}

Test(threads, four_threads_of_one_pe_share_its_heap_without_losing_a_byte)
{
    static char region[8 << 20] __attribute__((aligned(4096)));
    shmalloc_transport tp;
    worker w[THREADS];
    pthread_t th[THREADS];
    shmalloc_counters c;
    size_t ops = 0;
    int i;
    tp = transport_for(0, 1);
    tp.user = &heap_mutex;
    tp.barrier = no_barrier;
    tp.lock = do_lock;
    tp.unlock = do_unlock;
    memset(w, 0, sizeof w);
    w[0].heap = shmalloc_heap_create(region, sizeof region, &tp, NULL);
    cr_assert(w[0].heap != NULL);
    for (i = 0; i < THREADS; i++) {
        w[i].heap = w[0].heap;
        w[i].id = i;
        w[i].rng = (uint64_t)0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        cr_assert(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        cr_assert(w[i].failure[0] == 0, "%s", w[i].failure);
        ops += w[i].ops;
    }
    cr_assert(ops == (size_t)THREADS * STEPS, "%zu operations by %d threads", ops, THREADS);
    shmalloc_tlsf_counters(shmalloc_heap_tlsf(w[0].heap), &c);
    cr_assert(c.used_blocks == 0 && c.in_use == 0, "%zu blocks left", c.used_blocks);
    cr_assert(shmalloc_heap_check(w[0].heap, -1) == 0);
}
