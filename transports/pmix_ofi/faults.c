/* faults.c - how a PE says what went wrong and ends: messages, signals from
   the launcher, peers that died, failed completions, barriers that time
   out, and the shm provider's files that a killed job left in /dev/shm. */
#include "pmix_ofi.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
   clean-up.  The shm provider's file goes; the launcher ends the others. */
void shm__fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
    if (shm__w.faults.shm_file[0]) unlink(shm__w.faults.shm_file);
    fflush(NULL);
    _exit(1);
}

/* A failure during start-up, the same on every PE (a bad variable, no
   provider): close what is open and end cleanly. */
void shm__init_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shm__vsay(fmt, ap);
    va_end(ap);
    shm__teardown();
    fflush(NULL);
    exit(1);
}

void shm__barrier_timeout(int pe)
{
    shm__fatal("barrier timed out after %d s waiting for PE %d (PE %d of %d, barrier %u)", shm__w.opt.timeout, pe,
               shm__w.boot.me, shm__w.boot.npes, shm__w.coll.epoch);
}

/* >> signals --------------------------------------------------------------------
   Open MPI's mpirun ends every PE with SIGTERM when one dies, and PMIx
   events do not reach its clients: say which PE we were waiting for, and
   remove the shm provider's file, which only fi_close would remove (when
   start-up has not unlinked it yet).  Only async-signal-safe calls. */
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

static void shm__on_signal(int sig)
{
    char line[256];
    size_t n = 0;
    long waiting = (long)shm__w.faults.waiting_for;
    if (!shm__w.running) { /* after shmem_finalize: only pass it on */
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
        shm__append(line, &n, sizeof line, " while waiting for PE ");
        shm__append_int(line, &n, sizeof line, waiting);
    }
    shm__append(line, &n, sizeof line, " (a launcher ends every PE when one fails)\n");
    if (write(2, line, n) < 0) { /* nothing more to do */ }
    if (shm__w.faults.shm_file[0]) unlink(shm__w.faults.shm_file);
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

/* >> stale files ------------------------------------------------------------------ */
/* 1 when process pid has ended (or is a zombie): nobody will remove its
   files but us. */
static int shm__pid_gone(long pid)
{
    char path[48], text[256];
    size_t n;
    FILE *f;
    if (kill((pid_t)pid, 0) == -1) return errno == ESRCH; /* EPERM: alive, another user's */
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL) return 0;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    while (n > 0 && text[n - 1] != ')') n--; /* the state follows the name's closing parenthesis */
    return n > 0 && text[n] == ' ' && text[n + 1] == 'Z';
}

/* At start-up: the shm provider's files (named PID:N:N) of this user whose
   process has ended, left by an earlier job that was killed outright.
   Never another user's, never a live process's. */
void shm__sweep_stale_shm_files(void)
{
    DIR *dir = opendir("/dev/shm");
    struct dirent *e;
    int removed = 0;
    while (dir && (e = readdir(dir)) != NULL) {
        char path[300], *end;
        struct stat st;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != ':' || pid <= 0 || strspn(end, "0123456789:") != strlen(end)) continue;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || !shm__pid_gone(pid)) continue;
        removed += unlink(path) == 0;
    }
    if (dir) closedir(dir);
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

/* A death the launcher reported, once a message in flight had its chance. */
void shm__check_deaths(void)
{
    shm__faults *f = &shm__w.faults;
    int dead = __atomic_load_n(&f->dead_pe, __ATOMIC_ACQUIRE);
    double now;
    if (dead == -1 || f->finalizing) return;
    now = shmalloc_wait_now();
    if (f->dead_seen == 0.0) {
        f->dead_seen = now;
        return;
    }
    if (now - f->dead_seen < SHM__DEATH_GRACE) return;
    if (dead == -2) shm__fatal("lost the connection to the PMIx server (PE %d of %d)", shm__w.boot.me, shm__w.boot.npes);
    shm__fatal("PE %d ended without shmem_finalize (PMIx event %s); PE %d of %d stops", dead,
               PMIx_Error_string((pmix_status_t)__atomic_load_n(&f->dead_status, __ATOMIC_RELAXED)),
               shm__w.boot.me, shm__w.boot.npes);
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
