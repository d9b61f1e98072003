/* faults.c - how a PE says what went wrong, and how it ends.  The bottom
   of the transport: it calls files.c only, and what must run when
   start-up fails is registered with it (shm__faults_open). */
#include "pmix_ofi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    int verbose;              /* SHMALLOC_VERBOSE: notes are printed */
    void (*on_init_fail)(void); /* closes what start-up opened */
} shm__faults;

void shm__faults_open(int verbose, void (*on_init_fail)(void))
{
    shm__faults.verbose = verbose;
    shm__faults.on_init_fail = on_init_fail;
}

/* Message id, whose text is fmt (SHM__PMIX_MSG); fatal ones end the PE. */
static void shm__vsay(int id, const char *fmt, va_list ap)
{
    char line[512]; /* shmalloc_print's line */
    if (vsnprintf(line, sizeof line, fmt, ap) >= (int)sizeof line)
        memcpy(line + sizeof line - 5, "...\n", 5); /* cut: still one whole line */
    shmalloc_print(2, id, "%s", line);
}

void shm__note(int id, const char *fmt, ...)
{
    va_list ap;
    if (!shm__faults.verbose) return;
    va_start(ap, fmt);
    shm__vsay(id, fmt, ap);
    va_end(ap);
}

/* A failure after start-up: peers may be waiting for us, so no collective
   clean-up.  The files of start-up go; the launcher ends the others. */
void shm__fatal(int id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shm__vsay(id, fmt, ap);
    va_end(ap);
    shm__remove_files();
    fflush(NULL);
    _exit(1);
}

/* A failure during start-up (a bad variable, no provider, a limit): close
   what is open and end cleanly. */
void shm__init_fail(int id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shm__vsay(id, fmt, ap);
    va_end(ap);
    shm__init_end();
}

void shm__init_end(void)
{
    if (shm__faults.on_init_fail) shm__faults.on_init_fail();
    fflush(NULL);
    exit(1);
}
