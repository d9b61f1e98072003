/* options.c - the transport's settings, read here once by shmem_init: its
   own entries of the allocator's options table (which start-up,
   common/start.c, has read with every other entry), and the few variables
   that are not shmalloc's own. */
#include "pmix_ofi.h"

#include <stdlib.h>
#include <string.h>

/* The one place the transport reads its environment, once start-up has
   read the table (shm__start_read); timeout: the barrier's, from it. */
void shm__read_init_options(shm__options *o, int timeout)
{
    const shmalloc_option *t = shmalloc_options();
    memset(o, 0, sizeof *o);
    o->timeout = timeout;
    o->any_address = t[SHMALLOC_OPT_PMIX_OFI_ANY_ADDRESS].value != 0;
    o->verbose = t[SHMALLOC_OPT_VERBOSE].value != 0;
    o->direct = t[SHMALLOC_OPT_PMIX_OFI_DIRECT].value != 0;
    o->node_barrier = t[SHMALLOC_OPT_PMIX_OFI_NODE_BARRIER].value != 0;
    o->provider = getenv("FI_PROVIDER");
    o->launched = getenv("PMIX_NAMESPACE") || getenv("PMIX_RANK");
#if defined(SHMALLOC_TESTING)
    o->fail_register = getenv("SHMALLOC_TEST_FAIL_REGISTER");
    o->test_node_size = getenv("SHMALLOC_TEST_NODE_SIZE");
    o->kill_at = getenv("SHMALLOC_TEST_KILL_AT");
    o->stall_at = getenv("SHMALLOC_TEST_STALL_AT");
#endif
}
