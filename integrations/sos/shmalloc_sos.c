/* shmalloc_sos.c - dlmalloc's five entry points over the TLSF core of
   shmalloc.h, for a runtime whose symmetric heap layer calls them (Sandia
   OpenSHMEM's does).  MIT licence, see shmalloc.h; the contract is in
   shmalloc_sos.h and README.md beside this file.

   The runtime keeps its entry points, its barriers and its locking; this
   file only places blocks.  The core places them by offset from the
   region's base and by the sequence of calls alone, so the same calls on
   every PE give the same offsets, whether or not the heaps share one
   address.  The header is expanded here, private to this file. */
#define SHMALLOC_STATIC         /* nothing of shmalloc is exported */
#define SHMALLOC_NO_SHMEM_NAMES /* the runtime has its own shmem_malloc, ... */
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"

#include "shmalloc_sos.h"

#include <stdio.h>
#include <string.h>

static shmalloc_tlsf *shm__sos_heap;
static shmalloc_sos_message_fn shm__sos_message;

static void shm__sos_say(const char *line)
{
    if (shm__sos_message)
        shm__sos_message(line);
    else
        fprintf(stderr, "%s\n", line);
}

/* The checker's findings come through the output hook: to the same place. */
static void shm__sos_output(void *user, int stream, int id, const char *text)
{
    char line[512];
    size_t n = strlen(text);
    (void)user, (void)stream, (void)id;
    while (n > 0 && text[n - 1] == '\n') n--;
    snprintf(line, sizeof line, "%.*s", (int)n, text);
    shm__sos_say(line);
}

void shmalloc_sos_set_message(shmalloc_sos_message_fn fn)
{
    shm__sos_message = fn;
    shmalloc_set_output(shm__sos_output, NULL);
}

size_t shmalloc_sos_overhead(size_t length) { return shmalloc_tlsf_overhead(length); }

int shmalloc_sos_init(void *base, size_t length)
{
    shmalloc_set_output(shm__sos_output, NULL);
    shm__sos_heap = shmalloc_tlsf_create(base, length);
    if (shm__sos_heap) return 0;
    char line[160];
    snprintf(line, sizeof line, "shmalloc cannot lay out a symmetric heap of %zu bytes at %p", length, base);
    shm__sos_say(line);
    return -1;
}

int shmalloc_sos_fini(void)
{
    int damaged = shm__sos_heap && shmalloc_tlsf_check(shm__sos_heap, 0) != 0;
    if (damaged) shm__sos_say("symmetric heap found inconsistent at shmem_finalize (see above)");
    shm__sos_heap = NULL;
    return damaged ? -1 : 0;
}

/* A pointer that is not a live block changes nothing and is reported:
   the core knows the start of every block exactly. */
static void shm__sos_refuse(const char *call, const void *ptr, int status)
{
    char line[200];
    snprintf(line, sizeof line, "%s(%p) ignored, symmetric heap unchanged: %s", call, ptr,
             shmalloc_tlsf_strerror(status));
    shm__sos_say(line);
}

void *dlmalloc(size_t size) { return shmalloc_tlsf_malloc(shm__sos_heap, size); }

void *dlcalloc(size_t count, size_t size) { return shmalloc_tlsf_calloc(shm__sos_heap, count, size); }

void dlfree(void *ptr)
{
    int status = shmalloc_tlsf_free(shm__sos_heap, ptr);
    if (status != SHMALLOC_TLSF_OK) shm__sos_refuse("free", ptr, status);
}

void *dlrealloc(void *ptr, size_t size)
{
    int status = ptr ? shmalloc_tlsf_validate(shm__sos_heap, ptr) : SHMALLOC_TLSF_OK;
    if (status != SHMALLOC_TLSF_OK) {
        shm__sos_refuse("realloc", ptr, status);
        return NULL;
    }
    return shmalloc_tlsf_realloc(shm__sos_heap, ptr, size);
}

/* OpenSHMEM asks for a power of two; others are refused, not rounded. */
void *dlmemalign(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        char line[96];
        snprintf(line, sizeof line, "alignment %zu is not a power of two", alignment);
        shm__sos_say(line);
        return NULL;
    }
    return shmalloc_tlsf_align(shm__sos_heap, alignment, size);
}
