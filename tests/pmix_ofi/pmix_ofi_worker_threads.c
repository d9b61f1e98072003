/* pmix_ofi_worker_threads.c - the threads scenario, started by
   shmem_init_thread(SHMEM_THREAD_MULTIPLE): in the world heap, or with
   SHMALLOC_TEST_THREADS_SPACE=1 in a space of every PE (4 MiB, growing
   to 256 MiB). */
#include "pmix_ofi_worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RMA_THREADS 4
#define THREAD_SLOT 4096     /* bytes each thread owns in every PE's area */
#define THREAD_ITERS 60      /* rounds over every PE, per thread */
#define ALLOC_ROUNDS 24      /* collective allocations meanwhile */
#define ALLOC_KEEP 6         /* blocks alive at once: the heap must grow */

static unsigned char *thread_area; /* [pe][thread] slots, npes * RMA_THREADS of them */
static shmemx_space_t space;       /* where the scenario allocates; NULL: the world heap */

static void *sym_malloc(size_t n) { return space ? shmemx_space_malloc(space, n) : shmem_malloc(n); }
static shmalloc_heap *sym_heap(void) { return space ? space : shmalloc_current(); }

/* The bytes thread t of PE pe leaves in its slot on every PE in round i. */
static uint32_t thread_tag(int t, int i) { return 1000u + (uint32_t)t * 100u + (uint32_t)i; }

static void *rma_thread(void *arg)
{
    int t = (int)(intptr_t)arg, i, q;
    unsigned char src[THREAD_SLOT], back[THREAD_SLOT];
    unsigned char *mine = thread_area + ((size_t)me * RMA_THREADS + (size_t)t) * THREAD_SLOT;
    shmalloc_info info;
    for (i = 0; i < THREAD_ITERS; i++) {
        size_t n = (size_t)8 << (i % 10); /* 8 bytes .. 4 KiB */
        fill(src, me, thread_tag(t, i), 0, THREAD_SLOT);
        for (q = 0; q < npes; q++) {
            int pe = (me + 1 + q) % npes;
            shmem_putmem(mine, src, n, pe);
            if (n < THREAD_SLOT) shmem_putmem(mine + n, src + n, THREAD_SLOT - n, pe);
            shmem_quiet();
            memset(back, 0, sizeof back);
            shmem_getmem(back, mine, THREAD_SLOT, pe);
            CHECK_PATTERN(back, me, thread_tag(t, i), 0, THREAD_SLOT);
        }
        if (i % 8 == t) { /* the heap's own lock against the allocating thread */
            CHECK_EQ(shmalloc_heap_info(sym_heap(), &info), 0);
            CHECK_EQ(shmalloc_check(-1), 0);
            CHECK(shmemx_space_of(mine) == (space ? space : shmalloc_current()));
        }
    }
    return NULL;
}

/* The main thread's collective calls while the others put and get. */
static void collective_rounds(void)
{
    unsigned char *keep[ALLOC_KEEP] = {NULL}, check[64];
    size_t size0 = shmalloc_heap_size(sym_heap());
    int right = (me + 1) % npes, r, k;
    for (r = 0; r < ALLOC_ROUNDS; r++) {
        size_t n = ((size_t)1 << 20) * (size_t)(1 + r % 3) + (size_t)r * 16;
        k = r % ALLOC_KEEP;
        shmem_free(keep[k]);
        keep[k] = (unsigned char *)sym_malloc(n);
        CHECK(keep[k] != NULL);
        if (!keep[k]) break;
        fill(keep[k], me, (uint32_t)r, 0, n);
        shmem_barrier_all();
        shmem_getmem(check, keep[k] + n - sizeof check, sizeof check, right);
        CHECK_PATTERN(check, right, (uint32_t)r, n - sizeof check, sizeof check);
        shmem_barrier_all(); /* the left neighbour has read ours */
    }
    CHECK(shmalloc_heap_size(sym_heap()) > size0); /* it grew while the threads ran */
    for (k = 0; k < ALLOC_KEEP; k++) shmem_free(keep[k]);
}

/* A space of every PE, or NULL without SHMALLOC_TEST_THREADS_SPACE=1. */
static shmemx_space_t threads_space(shmem_team_t *team)
{
    shmemx_space_config_t config = {(size_t)4 << 20, (size_t)256 << 20, SHMALLOC_METADATA_INLINE, NULL, 0, NULL};
    const char *want = getenv("SHMALLOC_TEST_THREADS_SPACE");
    shmemx_space_t s = NULL;
    *team = SHMEM_TEAM_INVALID;
    if (!want || strcmp(want, "1") != 0) return NULL;
    CHECK_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, team), 0);
    CHECK_EQ(shmemx_space_create(*team, &config, &s), 0);
    return s;
}

void scenario_threads(void)
{
    pthread_t th[RMA_THREADS];
    shmem_team_t team;
    int provided = -1, t, q, started = 0;
    shmem_query_thread(&provided);
    CHECK_EQ(provided, SHMEM_THREAD_MULTIPLE);
    space = threads_space(&team);
    thread_area = (unsigned char *)(space ? shmemx_space_calloc(space, (size_t)npes * RMA_THREADS, THREAD_SLOT)
                                          : shmem_calloc((size_t)npes * RMA_THREADS, THREAD_SLOT));
    CHECK(thread_area != NULL);
    if (!thread_area) return;
    shmem_barrier_all();
    for (t = 0; t < RMA_THREADS; t++) {
        if (pthread_create(&th[t], NULL, rma_thread, (void *)(intptr_t)t) != 0) break;
        started++;
    }
    CHECK_EQ(started, RMA_THREADS);
    collective_rounds();
    for (t = 0; t < started; t++) pthread_join(th[t], NULL);
    shmem_barrier_all(); /* every thread of every PE is done */
    for (q = 0; q < npes; q++)
        for (t = 0; t < started; t++)
            CHECK_PATTERN(thread_area + ((size_t)q * RMA_THREADS + (size_t)t) * THREAD_SLOT, q,
                          thread_tag(t, THREAD_ITERS - 1), 0, THREAD_SLOT);
    shmem_barrier_all();
    shmem_free(thread_area);
    if (space) {
        CHECK_EQ(shmemx_space_destroy(space, 0), 0);
        shmem_team_destroy(team);
    }
}

