/* options.c - the transport's settings: its own rows of the options table,
   added here and read by start-up (common/start.c) with every other row,
   and the few variables that are not shmalloc's own. */
#include "pmix_ofi.h"

#include <stdlib.h>
#include <string.h>

/* The transport's rows of the options table, each kept by the id
   shmalloc_options_add gave it. */
enum { SHM__OPT_VERBOSE, SHM__OPT_ANY_ADDRESS, SHM__OPT_DIRECT, SHM__OPT_NODE_BARRIER, SHM__OPT_FI_PROVIDER,
       SHM__OPT_COUNT };
static int shm__opt_id[SHM__OPT_COUNT];

int shmalloc_pmix_ofi_options(void)
{
    static const shmalloc_option rows[SHM__OPT_COUNT] = {
        {"SHMALLOC_VERBOSE", {NULL, NULL}, SHMALLOC_KIND_SWITCH, "0",
         "1: each PE prints its provider, registration mode and heap address", NULL, NULL, 0},
        {"SHMALLOC_PMIX_OFI_ANY_ADDRESS", {NULL, NULL}, SHMALLOC_KIND_BIT, "0",
         "1: heaps at any address, translated by offset", NULL, NULL, 0},
        {"SHMALLOC_PMIX_OFI_DIRECT", {NULL, NULL}, SHMALLOC_KIND_BIT, "1",
         "0: private heaps, every put and get through libfabric", NULL, NULL, 0},
        {"SHMALLOC_PMIX_OFI_NODE_BARRIER", {NULL, NULL}, SHMALLOC_KIND_BIT, "1",
         "0: barriers by libfabric messages among all PEs, not through node memory", NULL, NULL, 0},
        {"FI_PROVIDER", {NULL, NULL}, SHMALLOC_KIND_WORD, "",
         "libfabric's provider; unset: shm on one node, else tcp;ofi_rxm", NULL, NULL, 0},
    };
    int k;
    if (shmalloc_start_options() != 0) return -1;
    for (k = 0; k < SHM__OPT_COUNT; k++)
        if ((shm__opt_id[k] = shmalloc_options_add(&rows[k], 1)) < 0) return -1;
    return 0;
}

static const shmalloc_option *shm__opt(int k) { return &shmalloc_options()[shm__opt_id[k]]; }

/* The one place the transport reads its environment, once start-up has
   read the table (shmalloc_start_read); what start-up keeps itself (sizes,
   pages, the timeout) it passes down. */
void shm__read_init_options(shm__options *o)
{
    memset(o, 0, sizeof *o);
    o->verbose = shm__opt(SHM__OPT_VERBOSE)->value != 0;
    o->any_address = shm__opt(SHM__OPT_ANY_ADDRESS)->value != 0;
    o->direct = shm__opt(SHM__OPT_DIRECT)->value != 0;
    o->node_barrier = shm__opt(SHM__OPT_NODE_BARRIER)->value != 0;
    o->provider = shm__opt(SHM__OPT_FI_PROVIDER)->source ? shm__opt(SHM__OPT_FI_PROVIDER)->text : NULL;
    o->launched = getenv("PMIX_NAMESPACE") || getenv("PMIX_RANK");
#if defined(SHMALLOC_TESTING)
    o->fail_register = getenv("SHMALLOC_TEST_FAIL_REGISTER");
    o->test_node_size = getenv("SHMALLOC_TEST_NODE_SIZE");
    o->kill_at = getenv("SHMALLOC_TEST_KILL_AT");
    o->stall_at = getenv("SHMALLOC_TEST_STALL_AT");
#endif
}
