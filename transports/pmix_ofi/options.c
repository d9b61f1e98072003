/* options.c - the transport's settings, read here once by shmem_init: the
   allocator's options table (shmalloc_options_read: the transport's own
   variables are entries of it, and the heap takes debug mode from it), and
   the few variables that are not shmalloc's own. */
#include "pmix_ofi.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The one place the transport reads its environment.  A bad value ends
   the PE, after the table's message naming the variable. */
void shm__read_init_options(shm__options *o)
{
    const shmalloc_option *t = shmalloc_options();
    memset(o, 0, sizeof *o);
    if (shmalloc_options_read(environ) != 0) exit(1); /* and a misspelt SHMALLOC_* variable is reported */
    o->timeout = (int)t[SHMALLOC_OPT_BARRIER_TIMEOUT].value;
    o->any_address = t[SHMALLOC_OPT_PMIX_OFI_ANY_ADDRESS].value != 0;
    o->verbose = t[SHMALLOC_OPT_VERBOSE].value != 0;
    o->direct = t[SHMALLOC_OPT_PMIX_OFI_DIRECT].value != 0;
    o->node_barrier = t[SHMALLOC_OPT_PMIX_OFI_NODE_BARRIER].value != 0;
    o->heap_max = t[SHMALLOC_OPT_HEAP_MAX].text;
    o->size_var = t[SHMALLOC_OPT_HEAP_SIZE].source;
    o->size_value = t[SHMALLOC_OPT_HEAP_SIZE].text;
    o->provider = getenv("FI_PROVIDER");
    o->launched = getenv("PMIX_NAMESPACE") || getenv("PMIX_RANK");
#if defined(SHMALLOC_TESTING)
    o->fail_register = getenv("SHMALLOC_TEST_FAIL_REGISTER");
    o->test_node_size = getenv("SHMALLOC_TEST_NODE_SIZE");
    o->kill_at = getenv("SHMALLOC_TEST_KILL_AT");
    o->stall_at = getenv("SHMALLOC_TEST_STALL_AT");
#endif
}
