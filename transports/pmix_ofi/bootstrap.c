/* bootstrap.c - what PMIx gives: this PE's rank and the job's size, the
   exchange of keys (put, then a fence that collects, then get), and the
   map of which PEs share a node. */
#include "pmix_ofi.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

shm__boot shm__job;

static void shm__pmix_proc(pmix_proc_t *p, pmix_rank_t rank)
{
    PMIX_PROC_CONSTRUCT(p);
    PMIX_LOAD_PROCID(p, shm__job.proc.nspace, rank);
}

int shm__pmix_get_u32(pmix_rank_t rank, const char *key, uint32_t *out)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    int ok;
    shm__pmix_proc(&p, rank);
    if (PMIx_Get(&p, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL) return -1;
    ok = v->type == PMIX_UINT32;
    if (ok) *out = v->data.uint32;
    PMIX_VALUE_RELEASE(v);
    return ok ? 0 : -1;
}

static void shm__pmix_register_events(void)
{
    shm__procs_open(&shm__job.proc, shm__job.npes);
    pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_ABORTING, PMIX_PROC_TERMINATED,
                             PMIX_ERR_PROC_TERM_WO_SYNC, PMIX_ERR_LOST_CONNECTION, PMIX_ERR_JOB_TERMINATED};
    pmix_status_t rc = PMIx_Register_event_handler(codes, sizeof codes / sizeof codes[0], NULL, 0,
                                                   shm__pmix_event, NULL, NULL);
    /* Blocking registration returns the handler's reference. */
    if (rc >= 0) {
        shm__job.event_ref = (size_t)rc;
        shm__job.event_registered = 1;
    } else {
        shm__note(SHM__PMIX_MSG(PMIX_NOTE_NO_EVENTS), shm__job.me, PMIx_Error_string(rc));
    }
}

/* 0 with rank and size, or -1 when no PMIx server is reachable.  o: the
   settings; timeout: seconds a fence or a get may take (SHMALLOC_TIMEOUT). */
int shm__pmix_init(const shm__options *o, int timeout)
{
    shm__boot *b = &shm__job;
    pmix_status_t rc = PMIx_Init(&b->proc, NULL, 0);
    uint32_t size = 0;
    b->timeout = timeout;
#if defined(SHMALLOC_TESTING)
    b->kill_at = o->kill_at;
    b->stall_at = o->stall_at;
    b->test_node_size = o->test_node_size;
#endif
    if (rc != PMIX_SUCCESS) {
        if (o->launched)
            shm__init_fail(SHM__PMIX_MSG(PMIX_INIT_FAILED), PMIx_Error_string(rc));
        shm__note(SHM__PMIX_MSG(PMIX_NOTE_SINGLETON), PMIx_Error_string(rc));
        return -1;
    }
    b->have_pmix = 1;
    if (shm__pmix_get_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &size) != 0 || size == 0 || size > INT32_MAX)
        shm__init_fail(SHM__PMIX_MSG(PMIX_JOB_SIZE_FAILED));
    if (b->proc.rank >= size) shm__init_fail(SHM__PMIX_MSG(PMIX_BAD_RANK), b->proc.rank, size);
    b->me = (int)b->proc.rank;
    b->npes = (int)size;
    shm__pmix_register_events();
    return 0;
}

void shm__pmix_close(void)
{
    shm__boot *b = &shm__job;
    shmalloc_mem_free(b->nodes.leaders);
    shmalloc_mem_free(b->nodes.ranks);
    shmalloc_mem_free(b->nodes.leader_of);
    b->nodes.leaders = b->nodes.ranks = b->nodes.leader_of = NULL;
    if (b->event_registered) PMIx_Deregister_event_handler(b->event_ref, NULL, NULL);
    b->event_registered = 0;
    if (b->have_pmix) PMIx_Finalize(NULL, 0);
    b->have_pmix = 0;
}

/* Ends the job: this PE's files first, as the launcher may kill it before
   PMIx_Abort returns. */
void shm__pmix_abort(int status)
{
    fflush(NULL);
    shm__remove_files();
    if (shm__job.have_pmix) PMIx_Abort(status, "shmem_global_exit", NULL, 0);
    _exit(status);
}

/* >> key exchange ------------------------------------------------------------------ */
void shm__pmix_put(const char *key, void *bytes, size_t n)
{
    pmix_value_t v;
    pmix_status_t rc;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)bytes; /* PMIx_Put copies */
    v.data.bo.size = n;
    rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) shm__init_fail(SHM__PMIX_MSG(PMIX_PUT_FAILED), key, PMIx_Error_string(rc));
}

/* A get in flight: the callback copies the value here, in PMIx's thread,
   and releases PMIx's copy.  Allocated, and left behind by a get that
   timed out. */
typedef struct shm__get_state {
    int done; /* atomic */
    pmix_status_t status;
    size_t n, cap;
    unsigned char bytes[];
} shm__get_state;

static void shm__get_done(pmix_status_t status, pmix_value_t *v, void *cbdata)
{
    shm__get_state *g = (shm__get_state *)cbdata;
    if (status == PMIX_SUCCESS && (!v || v->type != PMIX_BYTE_OBJECT || v->data.bo.size > g->cap))
        status = PMIX_ERR_BAD_PARAM; /* not the data we put */
    else if (status == PMIX_SUCCESS)
        memcpy(g->bytes, v->data.bo.bytes, g->n = v->data.bo.size);
    if (v) PMIX_VALUE_RELEASE(v); /* the callback's to release */
    g->status = status;
    __atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
}

/* Copies peer pe's value of key into out; returns its length.  Waits the
   timeout at most: a PE that died before it published never
   answers, even where the launcher lets its fence complete. */
size_t shm__pmix_get_bytes(int pe, const char *key, void *out, size_t cap)
{
    shm__get_state *g = (shm__get_state *)shmalloc_mem_alloc(1, sizeof *g + cap);
    pmix_proc_t p;
    pmix_status_t rc;
    shmalloc_wait w;
    size_t n;
    if (!g) shm__fatal(SHM__PMIX_MSG(PMIX_GET_NO_MEMORY), key);
    g->cap = cap;
    shm__pmix_proc(&p, (pmix_rank_t)pe);
    rc = PMIx_Get_nb(&p, key, NULL, 0, shm__get_done, g);
    shmalloc_wait_begin(&w, shm__job.timeout, 0, SHMALLOC_WAIT_ALL_YIELDS);
    while (rc == PMIX_SUCCESS && !__atomic_load_n(&g->done, __ATOMIC_ACQUIRE))
        if (shmalloc_wait_step(&w) == SHMALLOC_WAIT_EXPIRED) {
            char gone[128];
            shm__gone_pes(gone, sizeof gone);
            shm__fatal(SHM__PMIX_MSG(PMIX_GET_TIMEOUT), key, pe, shm__job.timeout, gone, shm__job.me, shm__job.npes);
        }
    if (rc == PMIX_SUCCESS) rc = g->status;
    if (rc != PMIX_SUCCESS) shm__fatal(SHM__PMIX_MSG(PMIX_GET_FAILED), key, pe, PMIx_Error_string(rc));
    memcpy(out, g->bytes, n = g->n);
    shmalloc_mem_free(g);
    return n;
}

typedef struct shm__fence_state {
    int done; /* atomic */
    pmix_status_t status;
} shm__fence_state;

static void shm__fence_done(pmix_status_t status, void *cbdata)
{
    shm__fence_state *f = (shm__fence_state *)cbdata;
    f->status = status;
    __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
}

#if defined(SHMALLOC_TESTING)
/* 1 when setting (STEP:K) names step what and this PE. */
static int shm__test_step_is(const char *setting, const char *what)
{
    const char *colon = setting ? strrchr(setting, ':') : NULL;
    return colon && (size_t)(colon - setting) == strlen(what) && strncmp(setting, what, strlen(what)) == 0 &&
           atoi(colon + 1) == shm__job.me;
}

/* SHMALLOC_TEST_KILL_AT=STEP:K: PE K kills itself (SIGKILL) at the step
   of start-up named STEP; SHMALLOC_TEST_STALL_AT=STEP:K: PE K waits there
   2 s (a signal may end it meanwhile).  To test what an end at each step
   of start-up leaves behind. */
void shm__test_step(const char *what)
{
    unsigned left = 2;
    if (shm__test_step_is(shm__job.kill_at, what)) raise(SIGKILL);
    if (shm__test_step_is(shm__job.stall_at, what))
        while (left) left = sleep(left);
}
#endif

/* A collecting fence that keeps libfabric progressing while it waits: with
   manual progress a peer's RMA or message needs us to poll (poll, when
   not NULL). */
void shm__fence(const char *what, void (*poll)(void))
{
    shm__fence_state f = {0, PMIX_SUCCESS};
    pmix_info_t info;
    bool collect = true;
    pmix_status_t rc;
    shmalloc_wait w;
#if defined(SHMALLOC_TESTING)
    shm__test_step(what);
#endif
    shmalloc_wait_begin(&w, shm__job.timeout, 0, SHMALLOC_WAIT_ALL_YIELDS);
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = PMIx_Fence_nb(NULL, 0, &info, 1, shm__fence_done, &f);
    if (rc == PMIX_OPERATION_SUCCEEDED) f.done = 1;
    else if (rc != PMIX_SUCCESS) shm__fatal(SHM__PMIX_MSG(PMIX_FENCE_START_FAILED), what, PMIx_Error_string(rc));
    while (!__atomic_load_n(&f.done, __ATOMIC_ACQUIRE)) {
        if (poll) poll();
        if (shmalloc_wait_step(&w) == SHMALLOC_WAIT_EXPIRED) {
            char gone[128];
            shm__gone_pes(gone, sizeof gone);
            shm__fatal(SHM__PMIX_MSG(PMIX_FENCE_TIMEOUT), what, shm__job.timeout, gone, shm__job.me, shm__job.npes);
        }
    }
    PMIX_INFO_DESTRUCT(&info);
    if (f.status != PMIX_SUCCESS) {
        char gone[128];
        shm__gone_pes(gone, sizeof gone);
        shm__fatal(SHM__PMIX_MSG(PMIX_FENCE_FAILED), what, PMIx_Error_string(f.status), gone, shm__job.me,
                   shm__job.npes);
    }
}

/* >> the node map -------------------------------------------------------------------- */
/* Host name of PE q, from PMIx (in shmalloc_mem_alloc's memory), or NULL. */
static char *shm__pmix_host(int q)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    char *host = NULL;
    shm__pmix_proc(&p, (pmix_rank_t)q);
    if (PMIx_Get(&p, PMIX_HOSTNAME, NULL, 0, &v) == PMIX_SUCCESS && v && v->type == PMIX_STRING &&
        (host = (char *)shmalloc_mem_alloc(strlen(v->data.string) + 1, 1)) != NULL)
        memcpy(host, v->data.string, strlen(v->data.string)); /* zeroed: the end is there */
    if (v) PMIX_VALUE_RELEASE(v);
    return host;
}

#if defined(SHMALLOC_TESTING)
/* SHMALLOC_TEST_NODE_SIZE=N makes nodes of N consecutive ranks,
   for the hierarchical barrier on one machine.  1 when it is set. */
static int shm__test_leaders(int *leader)
{
    const char *v = shm__job.test_node_size;
    char *end, quoted[96];
    long n;
    int q;
    if (!v) return 0;
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < 1 || n > INT32_MAX)
        shm__init_fail(SHM__PMIX_MSG(PMIX_TEST_NODE_SIZE_BAD), shmalloc_option_quote(quoted, sizeof quoted, v, "\""));
    for (q = 0; q < shm__job.npes; q++) leader[q] = q - (int)(q % n);
    return 1;
}
#endif

/* leader[q]: the lowest rank on PE q's node, as PMIx's host names say.
   -1 when a host name is missing. */
static int shm__leaders(int *leader)
{
    int npes = shm__job.npes, *heads, nheads = 0, q, k, rc = 0;
    char **host;
#if defined(SHMALLOC_TESTING)
    if (shm__test_leaders(leader)) return 0;
#endif
    host = (char **)shmalloc_mem_alloc((size_t)npes, sizeof *host);
    heads = (int *)shmalloc_mem_alloc((size_t)npes, sizeof *heads); /* the leaders so far */
    if (!host || !heads) rc = -1;
    for (q = 0; q < npes && rc == 0; q++) {
        host[q] = shm__pmix_host(q);
        if (!host[q]) rc = -1;
        for (k = 0; k < nheads && rc == 0 && strcmp(host[heads[k]], host[q]) != 0; k++) continue;
        if (k == nheads) heads[nheads++] = q;
        leader[q] = heads[k];
    }
    for (q = 0; host && q < npes; q++) shmalloc_mem_free(host[q]);
    shmalloc_mem_free(host);
    shmalloc_mem_free(heads);
    return rc;
}

/* Which PEs share this PE's node, and which lead the nodes: the node
   barrier's members and the message group.  Unknown (nodes = 0) when PMIx
   lacks host names. */
void shm__map_nodes(void)
{
    shm__boot *b = &shm__job;
    shm__nodes *m = &b->nodes;
    int *leader = (int *)shmalloc_mem_alloc((size_t)b->npes, sizeof *leader), q;
    m->count = 0;
    if (!leader || shm__leaders(leader) != 0) {
        shmalloc_mem_free(leader);
        shm__note(SHM__PMIX_MSG(PMIX_NOTE_NO_HOSTS), b->me);
        return;
    }
    m->leaders = (int *)shmalloc_mem_alloc((size_t)b->npes, sizeof *m->leaders);
    m->ranks = (int *)shmalloc_mem_alloc((size_t)b->npes, sizeof *m->ranks);
    if (!m->leaders || !m->ranks) shm__init_fail(SHM__PMIX_MSG(PMIX_NO_MEMORY_PES), b->npes);
    for (q = 0; q < b->npes; q++) {
        if (leader[q] == q) m->leaders[m->count++] = q;
        if (leader[q] == leader[b->me]) {
            if (q == b->me) m->me = m->size;
            m->ranks[m->size++] = q;
        }
    }
    m->leader_of = leader;
}
