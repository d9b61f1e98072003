/* procs.c - what PMIx says of the job's other processes: the events that
   report a death (recorded for the PE's waits to decide on), and the
   launcher's process table, read when a fence fails or times out to name
   the PEs that have ended. */
#include "pmix_ofi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This PE, and the death an event reported. */
static struct {
    pmix_proc_t self;
    int npes;
    int dead_pe;            /* atomic: -1 none, -2 the server, else a rank */
    int dead_status;        /* atomic */
} shm__procs = {.dead_pe = -1};

/* Before the handler is registered: self is this PE, of npes. */
void shm__procs_open(const pmix_proc_t *self, int npes)
{
    shm__procs.self = *self;
    shm__procs.npes = npes;
    __atomic_store_n(&shm__procs.dead_status, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&shm__procs.dead_pe, -1, __ATOMIC_RELEASE);
}

/* The PE an event said died (-2: the server), and *status the event; -1
   when none did. */
int shm__dead_pe(int *status)
{
    int dead = __atomic_load_n(&shm__procs.dead_pe, __ATOMIC_ACQUIRE);
    *status = __atomic_load_n(&shm__procs.dead_status, __ATOMIC_RELAXED);
    return dead;
}

/* Runs in PMIx's thread: record, and let the polling thread decide. */
void shm__pmix_event(size_t ref, pmix_status_t status, const pmix_proc_t *source, pmix_info_t info[], size_t ninfo,
                     pmix_info_t results[], size_t nresults, pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    long rank = source ? (long)source->rank : -1;
    int exit_code = -1, have_code = 0;
    size_t i;
    (void)ref, (void)results, (void)nresults;
    for (i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
            rank = (long)info[i].value.data.proc->rank;
        else if (PMIX_CHECK_KEY(&info[i], PMIX_EXIT_CODE) && info[i].value.type == PMIX_INT) {
            exit_code = info[i].value.data.integer;
            have_code = 1;
        }
    }
    if (status == PMIX_ERR_LOST_CONNECTION) rank = -2;
    if (!(status == PMIX_PROC_TERMINATED && have_code && exit_code == 0) && rank != (long)shm__procs.self.rank &&
        (rank == -2 || (rank >= 0 && rank < shm__procs.npes))) {
        int none = -1;
        __atomic_store_n(&shm__procs.dead_status, (int)status, __ATOMIC_RELAXED);
        __atomic_compare_exchange_n(&shm__procs.dead_pe, &none, (int)rank, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
    if (cbfunc) cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

/* The launcher's process table as this PE needs it: for each rank, its
   PID, its state and whether it runs on this PE's host.  Filled in PMIx's
   thread; static, since a query that outlives its wait may still land. */
typedef struct shm__proc_row {
    long pid;
    int state, here, known;
} shm__proc_row;

static struct {
    int done; /* atomic */
    pmix_query_t query;
    shm__proc_row *rows;
} shm__table;

static void shm__table_fill(const pmix_data_array_t *a)
{
    const pmix_info_t *in = (const pmix_info_t *)a->array;
    const char *mine = NULL;
    size_t i;
    for (i = 0; i < a->size; i++)
        if (in[i].value.type == PMIX_PROC_INFO && in[i].value.data.pinfo->proc.rank == shm__procs.self.rank)
            mine = in[i].value.data.pinfo->hostname;
    for (i = 0; i < a->size; i++) {
        const pmix_proc_info_t *p = in[i].value.type == PMIX_PROC_INFO ? in[i].value.data.pinfo : NULL;
        shm__proc_row *r;
        if (!p || (int)p->proc.rank < 0 || (int)p->proc.rank >= shm__procs.npes) continue;
        r = &shm__table.rows[p->proc.rank];
        r->pid = (long)p->pid;
        r->state = (int)p->state;
        r->here = mine && p->hostname && strcmp(mine, p->hostname) == 0;
        r->known = 1;
    }
}

static void shm__table_done(pmix_status_t status, pmix_info_t *info, size_t ninfo, void *cbdata,
                            pmix_release_cbfunc_t release, void *release_data)
{
    (void)cbdata;
    if (status == PMIX_SUCCESS && ninfo == 1 && info[0].value.type == PMIX_DATA_ARRAY &&
        info[0].value.data.darray->type == PMIX_INFO)
        shm__table_fill(info[0].value.data.darray);
    if (release) release(release_data);
    __atomic_store_n(&shm__table.done, 1, __ATOMIC_RELEASE);
}

/* Asks for the table and waits for it, 2 s at most: 0 when it came.  The
   query stays with the table: PMIx reads it in its own thread. */
static int shm__table_read(void)
{
    pmix_query_t *q = &shm__table.query;
    pmix_status_t rc;
    shmalloc_wait w;
    shm__table.rows = (shm__proc_row *)shmalloc_mem_alloc((size_t)shm__procs.npes, sizeof *shm__table.rows);
    if (!shm__table.rows) return -1;
    PMIX_QUERY_CONSTRUCT(q);
    PMIX_ARGV_APPEND(rc, q->keys, PMIX_QUERY_PROC_TABLE);
    if (rc != PMIX_SUCCESS) return -1;
    PMIX_INFO_CREATE(q->qualifiers, 1);
    q->nqual = 1;
    PMIX_INFO_LOAD(&q->qualifiers[0], PMIX_NSPACE, shm__procs.self.nspace, PMIX_STRING);
    if (PMIx_Query_info_nb(q, 1, shm__table_done, NULL) != PMIX_SUCCESS) return -1;
    shmalloc_wait_begin(&w, 2, 0, SHMALLOC_WAIT_ALL_YIELDS);
    while (!__atomic_load_n(&shm__table.done, __ATOMIC_ACQUIRE))
        if (shmalloc_wait_step(&w) == SHMALLOC_WAIT_EXPIRED) return -1;
    return 0;
}

/* After a failed fence, which PEs have ended, as this PE can tell: the
   one an event named, and those the launcher's table says terminated and
   those on this host whose process has ended (Open MPI's table keeps
   every PE "connected" to the end).  An event may name a PE that ended
   because of another, which the table shows too.  Writes ": PE 1 has
   ended", ": PEs 1, 2 have ended" or "". */
void shm__gone_pes(char *out, size_t cap)
{
    int dead = __atomic_load_n(&shm__procs.dead_pe, __ATOMIC_ACQUIRE), q, found = 0;
    int table = shm__table_read() == 0;
    size_t n = 0;
    char list[96] = "";
    out[0] = '\0';
    for (q = 0; q < shm__procs.npes && n + 16 < sizeof list; q++) {
        const shm__proc_row *r = table ? &shm__table.rows[q] : NULL;
        int ended = q == dead || (r && r->known &&
                                  (r->state >= PMIX_PROC_STATE_TERMINATED ||
                                   (r->here && r->pid > 0 && shm__pid_gone(r->pid))));
        if (q == (int)shm__procs.self.rank || !ended) continue;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", found++ ? ", " : "", q);
    }
    if (found) snprintf(out, cap, ": PE%s %s %s ended", found > 1 ? "s" : "", list, found > 1 ? "have" : "has");
}
