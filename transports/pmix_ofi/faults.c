/* faults.c - how a PE says what went wrong and ends: messages, signals from
   the launcher, peers that died, failed completions, barriers that time
   out, and the /dev/shm files of start-up that a killed PE left. */
#include "pmix_ofi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define SHM__DEATH_GRACE 1.0 /* s: a message already in flight may still land */

/* >> messages ------------------------------------------------------------------
   Every line starts with "shmalloc: "; fatal ones end the PE. */
static void shm__vsay(const char *fmt, va_list ap)
{
    char line[512 - sizeof "shmalloc: "]; /* shmalloc_print's line, newline included */
    vsnprintf(line, sizeof line, fmt, ap);
    shmalloc_print(2, "shmalloc: %s\n", line);
}

void shm__note(const char *fmt, ...)
{
    va_list ap;
    if (!shm__w.opt.verbose) return;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
}

/* A failure after start-up: peers may be waiting for us, so no collective
   clean-up.  The files of start-up go; the launcher ends the others. */
void shm__fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
    shm__remove_files();
    fflush(NULL);
    _exit(1);
}

/* A failure during start-up (a bad variable, no provider, a limit): close
   what is open and end cleanly.  Peers may have died meanwhile, or will
   be ended by the launcher: the files of start-up go as with a fatal
   error. */
void shm__init_fail(const char *fmt, ...)
{
    va_list ap;
    int launched = shm__w.boot.have_pmix;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
    shm__teardown();
    if (launched) shm__remove_files();
    fflush(NULL);
    exit(1);
}

/* >> signals --------------------------------------------------------------------
   Open MPI's mpirun ends every PE with SIGTERM when one dies, and PMIx
   events do not reach its clients: say which PE we were waiting for, and
   remove the files of start-up, ours and those a killed peer left.  Only
   async-signal-safe calls. */
static void shm__append(char *line, size_t *n, size_t cap, const char *s)
{
    while (*s && *n + 1 < cap) line[(*n)++] = *s++;
}

static void shm__append_int(char *line, size_t *n, size_t cap, long v)
{
    char digits[24];
    int i = 0;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    if (v < 0) shm__append(line, n, cap, "-");
    do digits[i++] = (char)('0' + u % 10); while ((u /= 10) != 0 && i < (int)sizeof digits);
    while (i > 0 && *n + 1 < cap) line[(*n)++] = digits[--i];
}

static int shm__stopped_peers(int *pes, int max);

/* The PEs that have not arrived at the barrier this PE waits in, as far
   as it can tell: first the one a PE of this node gave up waiting for
   (the first cause; it may have come since, and the PEs that gave up are
   now missing: "PE 2, which PE 3 gave up waiting for"), then through
   node memory those of this node that have not entered it ("PE 2, which
   has not arrived", "PEs 1, 2, which have not arrived"); by messages
   only peers of this node that are stopped ("PE 2, which is stopped").
   Nothing, and 0, when none is known.  Async-signal-safe. */
static int shm__append_absent(char *line, size_t *n, size_t cap)
{
    int pes[8], i, count, stopped = 0, by;
    if ((pes[0] = shm__node_gave_up(&by)) >= 0) {
        shm__append(line, n, cap, "PE ");
        shm__append_int(line, n, cap, pes[0]);
        shm__append(line, n, cap, ", which PE ");
        shm__append_int(line, n, cap, by);
        shm__append(line, n, cap, " gave up waiting for");
        return 1;
    }
    count = shm__node_absent(pes, 8);
    if (count < 0 && __atomic_load_n(&shm__w.faults.waiting_for, __ATOMIC_RELAXED) >= 0)
        stopped = count = shm__stopped_peers(pes, 8);
    if (count <= 0) return 0;
    shm__append(line, n, cap, count > 1 ? "PEs " : "PE ");
    for (i = 0; i < count; i++) {
        if (i) shm__append(line, n, cap, ", ");
        shm__append_int(line, n, cap, pes[i]);
    }
    if (stopped) shm__append(line, n, cap, count > 1 ? ", which are stopped" : ", which is stopped");
    else shm__append(line, n, cap, count > 1 ? ", which have not arrived" : ", which has not arrived");
    return count;
}

/* A barrier that waited too long for PE pe names those that have not
   arrived, when node memory shows them (pe may only wait for them), and
   leaves a word for the node's peers: it gave up. */
void shm__barrier_timeout(int pe)
{
    char absent[128];
    size_t n = 0;
    int pes[1], by;
    if ((pes[0] = shm__node_gave_up(&by)) >= 0 || shm__node_absent(pes, 1) > 0 ||
        (!shm__w.coll.node && shm__stopped_peers(pes, 1) > 0))
        pe = pes[0];
    shm__node_note_end((uint64_t)pe << 2 | SHM__END_GAVE_UP);
    if (shm__append_absent(absent, &n, sizeof absent)) {
        absent[n] = '\0';
        shm__fatal("barrier timed out after %d s waiting for %s (PE %d of %d, barrier %u)", shm__w.opt.timeout,
                   absent, shm__w.boot.me, shm__w.boot.npes, shm__w.coll.epoch);
    }
    if (!shm__w.coll.node)
        shm__fatal("barrier timed out after %d s waiting for PE %d's message (PE %d, or a PE it waits for, has not "
                   "arrived; PE %d of %d, barrier %u)", shm__w.opt.timeout, pe, pe, shm__w.boot.me,
                   shm__w.boot.npes, shm__w.coll.epoch);
    shm__fatal("barrier timed out after %d s waiting for PE %d (PE %d of %d, barrier %u)", shm__w.opt.timeout, pe,
               shm__w.boot.me, shm__w.boot.npes, shm__w.coll.epoch);
}

static void shm__on_signal(int sig)
{
    char line[256];
    size_t n = 0;
    long waiting = (long)__atomic_load_n(&shm__w.faults.waiting_for, __ATOMIC_RELAXED);
    if (!shm__w.boot.have_pmix) { /* before start-up or after shmem_finalize: only pass it on */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    shm__append(line, &n, sizeof line, "shmalloc: PE ");
    shm__append_int(line, &n, sizeof line, shm__w.boot.me);
    shm__append(line, &n, sizeof line, " of ");
    shm__append_int(line, &n, sizeof line, shm__w.boot.npes);
    shm__append(line, &n, sizeof line, " ended by signal ");
    shm__append_int(line, &n, sizeof line, sig);
    if (waiting >= 0) {
        shm__append(line, &n, sizeof line, " while waiting for ");
        if (!shm__append_absent(line, &n, sizeof line)) {
            shm__append(line, &n, sizeof line, "PE ");
            shm__append_int(line, &n, sizeof line, waiting);
        }
    }
    shm__append(line, &n, sizeof line, " (a launcher ends every PE when one fails)\n");
    if (write(2, line, n) < 0) { /* nothing more to do */ }
    if (!shm__node_end_of(shm__w.boot.me)) shm__node_note_end((uint64_t)sig << 2 | SHM__END_SIGNALLED);
    shm__remove_files();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Only where the program left the default action.  Installed before the
   endpoint exists, because the shm provider puts its own handler on top
   (it removes its files, then calls the one it found: ours). */
void shm__install_signals(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = shm__on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(SIGTERM, &sa, &shm__w.faults.old_term);
        shm__w.faults.signals_installed |= 1;
    }
    if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(SIGINT, &sa, &shm__w.faults.old_int);
        shm__w.faults.signals_installed |= 2;
    }
}

void shm__restore_signals(void)
{
    if (shm__w.faults.signals_installed & 1) sigaction(SIGTERM, &shm__w.faults.old_term, NULL);
    if (shm__w.faults.signals_installed & 2) sigaction(SIGINT, &shm__w.faults.old_int, NULL);
    shm__w.faults.signals_installed = 0;
}

/* >> stale files -------------------------------------------------------------------
   The files start-up makes in /dev/shm carry their creator's PID: the shm
   provider's endpoint files (PID:N:N) and the node segment
   (shmalloc-PID-...).  Each is unlinked once every peer has it open; a PE
   killed before that leaves it.  So every PE removes this user's such
   files whose creator has ended, at start-up and when it ends abnormally
   (a signal, a fatal error): once the launcher has ended a job whose PE
   was killed at any moment of start-up, nothing of it is left.  Never
   another user's file, never a live process's.  Only async-signal-safe
   calls: the signal handler sweeps too. */

/* The creator's PID in a file name of ours, or 0. */
static long shm__creator(const char *name)
{
    size_t plen = strlen(SHM__NODE_PREFIX);
    int segment = strncmp(name, SHM__NODE_PREFIX, plen) == 0;
    const char *p = segment ? name + plen : name;
    long pid = 0;
    while (*p >= '0' && *p <= '9' && pid < (1L << 40)) pid = pid * 10 + (*p++ - '0');
    if (pid <= 0) return 0;
    if (segment) return *p == '-' ? pid : 0;
    if (*p != ':') return 0;
    return strspn(p, "0123456789:") == strlen(p) ? pid : 0;
}

/* Process pid's /proc/PID/stat read into text, and where its state
   letter is there (after the name), or NULL. */
static const char *shm__proc_state(long pid, char *text, size_t cap)
{
    char path[48];
    const char *p;
    size_t n = 0;
    ssize_t got;
    int fd;
    shm__append(path, &n, sizeof path, "/proc/");
    shm__append_int(path, &n, sizeof path, pid);
    shm__append(path, &n, sizeof path, "/stat");
    path[n] = '\0';
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return NULL;
    got = read(fd, text, cap - 1);
    close(fd);
    text[got > 0 ? got : 0] = '\0';
    p = strrchr(text, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

/* 1 when process pid has ended, is ending (the kernel's PF_EXITING, in
   the 9th field of /proc/PID/stat: a killed PE's peers may learn of its
   death before it is a zombie) or is a zombie: nobody will remove its
   files but us. */
static int shm__pid_gone(long pid)
{
    char text[512];
    const char *p;
    unsigned long flags = 0;
    int field;
    if (kill((pid_t)pid, 0) == -1) return errno == ESRCH; /* EPERM: alive, another user's */
    if ((p = shm__proc_state(pid, text, sizeof text)) == NULL) return 0;
    if (*p == 'Z' || *p == 'X') return 1;
    for (field = 3; *p && field < 9; p++) field += *p == ' ';
    while (*p >= '0' && *p <= '9') flags = flags * 10 + (unsigned long)(*p++ - '0');
    return field == 9 && (flags & 0x4) != 0; /* PF_EXITING */
}

/* The same-node peers whose process is stopped (SIGSTOP, a debugger), up
   to max of them into pes: what a barrier by messages can tell of a PE
   that has not arrived. */
static int shm__stopped_peers(int *pes, int max)
{
    char text[512];
    const char *p;
    int q, n = 0;
    for (q = 0; shm__w.fab.peers && q < shm__w.boot.npes && n < max; q++)
        if (shm__w.fab.peers[q].pid > 0 && (p = shm__proc_state(shm__w.fab.peers[q].pid, text, sizeof text)) &&
            (*p == 'T' || *p == 't'))
            pes[n++] = q;
    return n;
}

/* Removes the stale files, and with mine this process's own (whatever
   their names: the shm provider names its file before fi_getname tells
   us); returns how many. */
static int shm__sweep(int mine)
{
    long self = (long)getpid();
    uint64_t buf[512]; /* aligned for the records */
    int dir = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC), removed = 0;
    ssize_t n, at;
    if (dir < 0) return 0;
    while ((n = getdents64(dir, buf, sizeof buf)) > 0)
        for (at = 0; at < n; at += ((const struct dirent64 *)((const char *)buf + at))->d_reclen) {
            const char *name = ((const struct dirent64 *)((const char *)buf + at))->d_name;
            struct stat st;
            long pid = shm__creator(name);
            if (!pid || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
                st.st_uid != geteuid() || !((mine && pid == self) || shm__pid_gone(pid)))
                continue;
            removed += unlinkat(dir, name, 0) == 0;
        }
    close(dir);
    return removed;
}

/* A PE that ends abnormally: its own files of start-up (the node
   segment's name is known to every PE of the node), then those its PID
   names and the stale ones. */
void shm__remove_files(void)
{
    const char *segment = shm__w.coll.node_file;
    char path[sizeof shm__w.coll.node_file + 16];
    size_t n = 0;
    if (shm__w.faults.shm_file[0]) unlink(shm__w.faults.shm_file);
    if (segment[0]) {
        shm__append(path, &n, sizeof path, "/dev/shm");
        shm__append(path, &n, sizeof path, segment);
        path[n] = '\0';
        unlink(path);
    }
    shm__sweep(1);
}

/* "N KiB free of M KiB" for /dev/shm, the place of our files (the node
   segment, the shm provider's), or "its free space unknown". */
void shm__dev_shm_space(char *out, size_t cap, unsigned long long *free_bytes)
{
    struct statvfs v;
    *free_bytes = ~0ull;
    if (statvfs("/dev/shm", &v) != 0) {
        snprintf(out, cap, "its free space unknown");
        return;
    }
    *free_bytes = (unsigned long long)v.f_bavail * v.f_frsize;
    snprintf(out, cap, "%llu KiB free of %llu KiB", *free_bytes >> 10,
             ((unsigned long long)v.f_blocks * v.f_frsize) >> 10);
}

/* At start-up: what an earlier job that was killed outright left. */
void shm__sweep_stale_files(void)
{
    int removed = shm__sweep(0);
    if (removed)
        shm__note("PE %d removed %d /dev/shm file%s of ended processes", shm__w.boot.me, removed, removed > 1 ? "s" : "");
}

/* >> dead peers -------------------------------------------------------------------- */
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
    if (!(status == PMIX_PROC_TERMINATED && have_code && exit_code == 0) && rank != shm__w.boot.me &&
        (rank == -2 || (rank >= 0 && rank < shm__w.boot.npes))) {
        int none = -1;
        __atomic_store_n(&shm__w.faults.dead_status, (int)status, __ATOMIC_RELAXED);
        __atomic_compare_exchange_n(&shm__w.faults.dead_pe, &none, (int)rank, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
    if (cbfunc) cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

/* PE pe has ended (evidence says how this PE knows) while this PE waits
   for it: what it left in node memory says whether it finalized (the PEs'
   collective calls then differ) or gave up waiting for another PE, which
   is the one to name.  Without node memory nothing says whether it
   finalized. */
static void shm__peer_ended(int pe, const char *evidence)
{
    uint64_t how = shm__node_end_of(pe);
    int me = shm__w.boot.me, npes = shm__w.boot.npes;
    unsigned long calls = shm__w.coll.calls;
    if ((how & 3u) == SHM__END_FINALIZED)
        shm__fatal("PE %d called shmem_finalize after %lu collective calls and ended (%s) while PE %d waits in its "
                   "collective call %lu: the PEs' collective calls differ; PE %d of %d stops", pe,
                   (unsigned long)(how >> 2), evidence, me, calls, me, npes);
    if ((how & 3u) == SHM__END_GAVE_UP && (int)(how >> 2) == me)
        shm__fatal("PE %d gave up waiting for this PE (its barrier timed out after %d s; %s): PE %d was stopped or "
                   "busy outside shmem for longer than SHMALLOC_BARRIER_TIMEOUT; PE %d of %d stops", pe,
                   shm__w.opt.timeout, evidence, me, me, npes);
    if ((how & 3u) == SHM__END_SIGNALLED)
        shm__fatal("PE %d was ended by signal %d (%s; a launcher ends every PE when one fails) while PE %d waits in "
                   "its collective call %lu; PE %d of %d stops", pe, (int)(how >> 2), evidence, me, calls, me, npes);
    if ((how & 3u) == SHM__END_GAVE_UP) {
        shm__node_note_end(how); /* the same cause ends this PE */
        shm__fatal("PE %d gave up waiting for PE %d, which has not arrived (its barrier timed out; %s); PE %d of %d "
                   "stops", pe, (int)(how >> 2), evidence, me, npes);
    }
    if (shm__w.coll.node)
        shm__fatal("PE %d ended without shmem_finalize (%s); PE %d of %d stops", pe, evidence, me, npes);
    shm__fatal("PE %d ended (%s) while PE %d waits in its collective call %lu; PE %d of %d stops", pe, evidence, me,
               calls, me, npes);
}

/* The peer a barrier waits for, when it shares this node: its process
   looked at every 0.1 s, for launchers that send no event when a PE dies
   (Open MPI under --enable-recovery fails to). */
static void shm__check_awaited(shm__faults *f)
{
    int pe = __atomic_load_n(&f->waiting_for, __ATOMIC_RELAXED);
    long pid = pe >= 0 && shm__w.fab.peers ? shm__w.fab.peers[pe].pid : 0;
    double now;
    if (pid <= 0 || f->finalizing) return;
    now = shmalloc_wait_now();
    if (now - f->awaited_checked < 0.1) return;
    f->awaited_checked = now;
    if (shm__pid_gone(pid)) {
        char evidence[64];
        snprintf(evidence, sizeof evidence, "its process %ld is gone", pid);
        shm__peer_ended(pe, evidence);
    }
}

/* A death the launcher reported, once a message in flight had its chance,
   or one seen on this node. */
void shm__check_deaths(void)
{
    shm__faults *f = &shm__w.faults;
    int dead = __atomic_load_n(&f->dead_pe, __ATOMIC_ACQUIRE);
    double now;
    char evidence[96];
    shm__check_awaited(f);
    if (dead == -1 || f->finalizing) return;
    now = shmalloc_wait_now();
    if (f->dead_seen == 0.0) {
        f->dead_seen = now;
        return;
    }
    if (now - f->dead_seen < SHM__DEATH_GRACE) return;
    if (dead == -2) shm__fatal("lost the connection to the PMIx server (PE %d of %d)", shm__w.boot.me, shm__w.boot.npes);
    snprintf(evidence, sizeof evidence, "PMIx event %s",
             PMIx_Error_string((pmix_status_t)__atomic_load_n(&f->dead_status, __ATOMIC_RELAXED)));
    shm__peer_ended(dead, evidence);
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
        if (in[i].value.type == PMIX_PROC_INFO && (int)in[i].value.data.pinfo->proc.rank == shm__w.boot.me)
            mine = in[i].value.data.pinfo->hostname;
    for (i = 0; i < a->size; i++) {
        const pmix_proc_info_t *p = in[i].value.type == PMIX_PROC_INFO ? in[i].value.data.pinfo : NULL;
        shm__proc_row *r;
        if (!p || (int)p->proc.rank < 0 || (int)p->proc.rank >= shm__w.boot.npes) continue;
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
    shm__table.rows = (shm__proc_row *)shmalloc_mem_alloc((size_t)shm__w.boot.npes, sizeof *shm__table.rows);
    if (!shm__table.rows) return -1;
    PMIX_QUERY_CONSTRUCT(q);
    PMIX_ARGV_APPEND(rc, q->keys, PMIX_QUERY_PROC_TABLE);
    if (rc != PMIX_SUCCESS) return -1;
    PMIX_INFO_CREATE(q->qualifiers, 1);
    q->nqual = 1;
    PMIX_INFO_LOAD(&q->qualifiers[0], PMIX_NSPACE, shm__w.boot.proc.nspace, PMIX_STRING);
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
    int dead = __atomic_load_n(&shm__w.faults.dead_pe, __ATOMIC_ACQUIRE), q, found = 0;
    int table = shm__table_read() == 0;
    size_t n = 0;
    char list[96] = "";
    out[0] = '\0';
    for (q = 0; q < shm__w.boot.npes && n + 16 < sizeof list; q++) {
        const shm__proc_row *r = table ? &shm__table.rows[q] : NULL;
        int ended = q == dead || (r && r->known &&
                                  (r->state >= PMIX_PROC_STATE_TERMINATED ||
                                   (r->here && r->pid > 0 && shm__pid_gone(r->pid))));
        if (q == shm__w.boot.me || !ended) continue;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", found++ ? ", " : "", q);
    }
    if (found) snprintf(out, cap, ": PE%s %s %s ended", found > 1 ? "s" : "", list, found > 1 ? "have" : "has");
}

/* A completion with an error: a canceled receive is the endpoint closing,
   anything else ends the PE naming the operation and its peer. */
void shm__cq_failure(void)
{
    struct fi_cq_err_entry err;
    shm__op *op;
    char detail[256] = "";
    int me = shm__w.boot.me;
    memset(&err, 0, sizeof err);
    if (fi_cq_readerr(shm__w.fab.cq, &err, 0) < 0) shm__fatal("fi_cq_readerr failed on PE %d", me);
    op = (shm__op *)err.op_context;
    if (op && op->kind == SHM__OP_RECV && err.err == FI_ECANCELED) return;
    fi_cq_strerror(shm__w.fab.cq, err.prov_errno, err.err_data, detail, sizeof detail);
    if (op && op->kind != SHM__OP_RECV)
        shm__fatal("%s %s PE %d failed on PE %d: %s%s%s%s", shm__op_name(op->kind),
                   op->kind == SHM__OP_READ ? "from" : "to", op->index, me, fi_strerror(err.err),
                   detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
    shm__fatal("%s failed on PE %d: %s (%s)", op ? shm__op_name(op->kind) : "an operation", me,
               fi_strerror(err.err), detail);
}
