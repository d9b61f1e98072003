/* start.c - the one start-up of every transport: see start.h. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* environ */
#endif
#define SHMALLOC_MESSAGE_FORMATS /* SHM__MSG: each message checked against its text */
#include "messages.h"
#include "start.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int shm__start_messages = -1;

/* >> options and sizes ------------------------------------------------------ */
static int shm__timeout_id = -1; /* SHMALLOC_TIMEOUT's row, as shmalloc_options_add gave it */

int shmalloc_start_options(void)
{
    static const shmalloc_message rows[] = {SHMALLOC_START_MESSAGES(SHMALLOC_MESSAGE_ROW)};
    static const shmalloc_option timeout = {"SHMALLOC_TIMEOUT", {"SHMALLOC_BARRIER_TIMEOUT", NULL},
        SHMALLOC_KIND_SECONDS, "60", "seconds a barrier, fence, get or put waits for a peer before the program ends "
        "naming it (formerly SHMALLOC_BARRIER_TIMEOUT)", NULL, NULL, 0};
    int first = shmalloc_messages_add(rows, SHMALLOC_START_MESSAGE_ROWS);
    if (first < 0) return -1;
    if (first != shm__start_messages) shm__start_messages = first; /* written once: PE threads read it */
    if (shmalloc_map_options_add() < 0) return -1;
    shm__timeout_id = shmalloc_options_add(&timeout, 1);
    return shm__timeout_id < 0 ? -1 : 0;
}

int shmalloc_start_size(const char *who, size_t nominal)
{
    static char text[32]; /* the table keeps the pointer */
    if (shmalloc_start_options() != 0) return -1;
    if (nominal > ((size_t)1 << SHMALLOC_MAX_LOG2)) {
        shmalloc_print(2, SHM__START_MSG(START_BAD_SIZE), who, nominal, SHMALLOC_MAX_LOG2);
        return -1;
    }
    snprintf(text, sizeof text, "%zu", nominal);
    return shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, nominal ? text : NULL);
}

/* What the heap may grow to (SHMALLOC_HEAP_MAX): nominal when it is 0, no
   growth; -1 after a message when it is below nominal. */
static int shm__start_max(shmalloc_start *s)
{
    const shmalloc_option *o = s->max_row;
    char value[96];
    s->max = o->value ? (size_t)o->value : s->nominal;
    if (s->max >= s->nominal) return 0;
    shmalloc_print(2, SHM__MSG(OPTION_HEAP_MAX_BELOW), shmalloc_option_quote(value, sizeof value, o->text, "\""),
                   (unsigned long long)o->value, s->nominal);
    return -1;
}

int shmalloc_start_read(shmalloc_start *s, const char *who)
{
    const shmalloc_option *t = shmalloc_options();
    memset(s, 0, sizeof *s);
    s->who = who;
    if (shmalloc_start_options() != 0 || shmalloc_options_read(NULL) != 0) return -1;
    s->size_row = &t[SHMALLOC_OPT_HEAP_SIZE];
    s->max_row = &t[SHMALLOC_OPT_HEAP_MAX];
    s->timeout_row = &t[shm__timeout_id];
    s->nominal = (size_t)s->size_row->value;
    s->timeout = (int)s->timeout_row->value;
    if (shm__start_max(s) != 0) return -1;
    s->bytes = shmalloc_heap_bytes(s->max);
    if (s->bytes < s->max) {
        shmalloc_print(2, SHM__START_MSG(START_SIZE_TOO_LARGE), who, s->nominal);
        return -1;
    }
    shmalloc_options_heap_config(&s->config, s->max > s->nominal ? s->nominal : SIZE_MAX, s->max > s->nominal);
    return shmalloc_map_huge_from_table(&s->huge);
}

/* The timeout's former name, still read: said once per process. */
static void shm__say_renamed(const shmalloc_start *s)
{
    static int said;
    const shmalloc_option *o = s->timeout_row;
    char value[96];
    if (said || !o || o->source != o->alias[0]) return;
    said = 1;
    shmalloc_print(2, SHM__MSG(OPTION_RENAMED), o->alias[0], o->name,
                   shmalloc_option_quote(value, sizeof value, o->text, "\""), o->name);
}

void shmalloc_start_unknown(const shmalloc_start *s, int pe, int npes)
{
    if (pe != 0 || shmalloc_start_options() != 0) return;
    shmalloc_options_report_unknown(environ, npes); /* start-up's rows known */
    shm__say_renamed(s);
}

/* >> the heap's memory ------------------------------------------------------
   Advice that follows the error: too many open files (a shared heap is a
   memfd) is a limit to raise, not a size. */
static int shm__fd_limit_advice(char *out, size_t cap, int e)
{
    struct rlimit rl;
    if (e == ENFILE) {
        snprintf(out, cap, "the system's open files are at its limit: raise fs.file-max (sysctl), or close files");
        return 1;
    }
    if (e != EMFILE) return 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(out, cap, "raise this process's limit on open files (ulimit -n, now %llu)",
                 (unsigned long long)rl.rlim_cur);
    else
        snprintf(out, cap, "raise this process's limit on open files (ulimit -n)");
    return 1;
}

/* Names the variable that asked for too much, or the limit to raise. */
static void shm__unmappable(const shmalloc_start *s, int pe, int e)
{
    const shmalloc_option *size = s->size_row;
    char advice[160], value[96];
    if (shm__fd_limit_advice(advice, sizeof advice, e))
        shmalloc_print(2, SHM__START_MSG(START_MAP_FD_LIMIT), s->bytes, strerror(e), advice);
    else if (s->max != s->nominal)
        shmalloc_print(2, SHM__START_MSG(START_RESERVE_FAILED), s->bytes,
                       shmalloc_option_quote(value, sizeof value, s->max_row->text, ""),
                       strerror(e));
    else if (size->source && !strcmp(size->source, "program"))
        shmalloc_print(2, SHM__START_MSG(START_MAP_FAILED), s->who, s->bytes, pe, strerror(e));
    else if (size->source)
        shmalloc_print(2, SHM__START_MSG(START_MAP_FAILED_VARIABLE), s->bytes, size->source,
                       shmalloc_option_quote(value, sizeof value, size->text, ""), s->nominal, strerror(e),
                       size->source);
    else
        shmalloc_print(2, SHM__START_MSG(START_MAP_FAILED_DEFAULT), s->bytes, s->nominal, strerror(e));
}

int shmalloc_start_map(const shmalloc_start *s, shmalloc_map_mem *m, int shared, const shmalloc_map_place *pl, int pe)
{
    if (shmalloc_map_heap(m, s->bytes, &s->huge, shared, pl) == 0) return 0;
    shm__unmappable(s, pe, errno);
    return -1;
}

/* >> the heap ---------------------------------------------------------------
   Created from the config shmalloc_start_read filled: debug mode, where its
   metadata goes and the variable its out-of-memory reports name. */
/* The memory is mapped here, in this process: fill and copy, which a heap
   with separate metadata writes it through, are memset and memcpy (the
   single-PE transport's) unless the transport binds its own. */
/* A size below the smallest heap, whose memory is the least the mapping
   gives, was raised to it: said once per job, by PE 0, naming who asked. */
static void shm__say_raised(const shmalloc_start *s, const shmalloc_map_mem *m, shmalloc_heap *h)
{
    const shmalloc_option *size = s->size_row;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), least = shmalloc_heap_bytes(16);
    shmalloc_info i;
    char who[128], value[96];
    if (s->max != s->nominal || m->bytes > ((least + page - 1) & ~(page - 1)) || shmalloc_heap_info(h, &i) != 0 ||
        i.heap_size <= s->nominal)
        return;
    if (size->source && strcmp(size->source, "program"))
        snprintf(who, sizeof who, "%s=%s", size->source, shmalloc_option_quote(value, sizeof value, size->text, ""));
    else
        snprintf(who, sizeof who, "%s", s->who);
    shmalloc_print(2, SHM__START_MSG(START_SIZE_RAISED), who, s->nominal, i.heap_size, m->bytes);
}

shmalloc_heap *shmalloc_start_heap(const shmalloc_start *s, const shmalloc_map_mem *m, const shmalloc_transport *tp,
                                   long *err)
{
    long e = SHMEM_MALLOC_OK;
    shmalloc_transport with = *tp;
    shmalloc_heap *h;
    if (!with.fill) with.fill = shmalloc_transport_single()->fill;
    if (!with.copy) with.copy = shmalloc_transport_single()->copy;
    h = shmalloc_heap_create_with(m->base, m->bytes, &s->config, &with, &e);
    if (!h)
        shmalloc_print(2, SHM__START_MSG(START_HEAP_CREATE_FAILED),
                       s->nominal, tp->pe, e);
    else if (tp->pe == 0)
        shm__say_raised(s, m, h);
    if (err) *err = e;
    return h;
}

/* >> puts and gets ---------------------------------------------------------- */
void shmalloc_start_bad_range(const char *what, const void *addr, size_t n, int pe, int me, int npes)
{
    shmalloc_print(2, SHM__START_MSG(NOT_SYMMETRIC), what, n,
                   addr, pe, me, npes);
}

size_t shmalloc_start_space(const shmalloc_start *s, const shmemx_space_config_t *config, shmalloc_heap_config *hc)
{
    static const shmemx_space_config_t defaults = {0, 0, SHMALLOC_METADATA_INLINE, NULL, 0, NULL};
    size_t nominal, max;
    if (config == NULL) config = &defaults;
    nominal = config->size ? config->size : s->nominal;
    max = config->max > nominal ? config->max : nominal;
    memset(hc, 0, sizeof *hc);
    hc->nominal = max > nominal ? nominal : SIZE_MAX;
    hc->debug = s->config.debug;
    hc->size_var = NULL; /* the program sets a space's size */
    hc->metadata = config->metadata;
    hc->memops = config->memops;
    return config->mem != NULL ? config->bytes : shmalloc_heap_bytes(max);
}
