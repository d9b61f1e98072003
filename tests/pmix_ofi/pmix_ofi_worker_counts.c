/* pmix_ofi_worker_counts.c - the counts scenario: what one collective call
   costs each PE, counted by the test build, against the cost model. */
#include "pmix_ofi_worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNTED_CALLS 50

typedef struct cost {
    unsigned long long calls, slot_reads, lines, messages, bytes;
} cost;

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

/* What one collective call of count values costs this PE, from the layout
   alone (bench/README.md, "The cost of one collective call"): nodes of
   SHMALLOC_TEST_EXPECT_NODE_SIZE (or SHMALLOC_TEST_NODE_SIZE) consecutive
   ranks, one node when neither is set. */
static cost model(int count)
{
    const char *nb = getenv("SHMALLOC_PMIX_OFI_NODE_BARRIER"), *ns = getenv("SHMALLOC_TEST_EXPECT_NODE_SIZE");
    int size, nodes, first, here;
    unsigned long long message = 16 + 8 * (unsigned long long)count;
    cost c = {1, 0, 0, 0, 0};
    if (!ns) ns = getenv("SHMALLOC_TEST_NODE_SIZE");
    size = ns ? atoi(ns) : npes;
    if (size < 1 || size > npes) size = npes;
    nodes = (npes + size - 1) / size;
    first = me - me % size;
    here = npes - first < size ? npes - first : size;
    if ((nb && strcmp(nb, "0") == 0) || size == 1) { /* messages among all PEs */
        c.messages = (unsigned long long)ceil_log2(npes);
    } else {
        c.slot_reads = (unsigned long long)ceil_log2(here) + (nodes > 1 && me != first); /* + the release */
        c.lines = c.slot_reads * ((8 + 8 * (unsigned long long)count + 63) / 64);
        c.messages = me == first ? (unsigned long long)ceil_log2(nodes) : 0;
    }
    c.bytes = c.messages * message;
    return c;
}

static cost counted_since(const shmalloc_pmix_ofi_counts *a)
{
    shmalloc_pmix_ofi_counts b;
    cost c;
    shmalloc_pmix_ofi_counts_get(&b);
    c.calls = b.calls - a->calls;
    c.slot_reads = b.slot_reads - a->slot_reads;
    c.lines = b.lines_read - a->lines_read;
    c.messages = b.messages - a->messages;
    c.bytes = b.bytes - a->bytes;
    return c;
}

/* Checks n calls' counts against n times the model of one, and prints one's. */
static void check_cost(const char *what, const cost *got, int n, int count)
{
    cost one = model(count);
    unsigned long long k = (unsigned long long)n;
    if (got->calls != k * one.calls || got->slot_reads != k * one.slot_reads || got->lines != k * one.lines ||
        got->messages != k * one.messages || got->bytes != k * one.bytes)
        fail(__LINE__, "%d %s: counted %llu calls, %llu slot reads, %llu lines, %llu messages, %llu bytes; "
             "the model says %llu, %llu, %llu, %llu, %llu", n, what, got->calls, got->slot_reads, got->lines,
             got->messages, got->bytes, k * one.calls, k * one.slot_reads, k * one.lines, k * one.messages,
             k * one.bytes);
    printf("PE %d of %d: per %s: %llu slot reads, %llu lines, %llu messages, %llu bytes\n", me, npes, what,
           got->slot_reads / k, got->lines / k, got->messages / k, got->bytes / k);
}

/* Barriers, then allocations and frees (one all-reduce of the allocator's
   values each), counted. */
void scenario_counts(void)
{
    const char *debug = getenv("SHMALLOC_DEBUG");
    int values = debug && strcmp(debug, "0") != 0 ? 16 : 12, i;
    shmalloc_pmix_ofi_counts at;
    cost got;
    shmalloc_pmix_ofi_counts_get(&at);
    for (i = 0; i < COUNTED_CALLS; i++) shmem_barrier_all();
    got = counted_since(&at);
    check_cost("barrier", &got, COUNTED_CALLS, 0);
    shmalloc_pmix_ofi_counts_get(&at);
    for (i = 0; i < COUNTED_CALLS / 2; i++) {
        void *p = shmem_malloc(64);
        CHECK(p != NULL);
        shmem_free(p);
    }
    got = counted_since(&at);
    check_cost("shmem_malloc or shmem_free", &got, COUNTED_CALLS, values);
}

