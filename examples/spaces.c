/* spaces.c - two teams, each with a symmetric heap of its own (a space),
   busy at the same time: a team's allocations wait for its own PEs only.

   Build:  cc -std=c99 -I. examples/spaces.c shmalloc.c transports/pthreads/[a-z]*.c transports/common/[a-z]*.c -pthread
   Run:    ./a.out [npes]        (PEs as threads, 4 by default, at least 2)
   With PEs as processes, add -DSPACES_PMIX_OFI and build with the PMIx
   transport instead (see README.md), then: mpirun -n 4 ./a.out

   The job splits into the even and the odd PEs.  Each team makes a space
   that starts at 64 KiB and grows to 16 MiB.  The odd team waits until the
   even team has allocated, grown, used and freed its space: were the even
   team's calls to wait for the odd PEs, the program would hang.  Then the
   odd team does the same.  Inside a team, each PE puts into the next
   member's blocks and reads the previous member's.  The exit status is
   nonzero when a value is wrong or a call fails. */
#if defined(SPACES_PMIX_OFI)
#  include "transports/shmalloc_pmix_ofi.h"
#else
#  include "transports/shmalloc_pthreads.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 48

static int failed(int me, const char *what)
{
    fprintf(stderr, "PE %d: %s failed (malloc_error %ld: %s)\n", me, what, malloc_error,
            shmalloc_strerror(malloc_error));
    return 1;
}

/* Allocates BLOCKS blocks of 1 to 32 KiB in the space (it grows), fills
   each, puts it into the next member's copy, checks what the previous
   member put, frees them all.  Returns the wrong values it found. */
static int use_space(shmem_team_t team, shmemx_space_t space)
{
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team), i, wrong = 0;
    int next = shmem_team_translate_pe(team, (me + 1) % n, SHMEM_TEAM_WORLD);
    int prev = (me + n - 1) % n;
    long *block[BLOCKS], mine[4096];
    size_t words[BLOCKS], w;
    for (i = 0; i < BLOCKS; i++) {
        words[i] = (size_t)128 << (i % 6); /* 1 KiB to 32 KiB: 4096 words at most */
        block[i] = (long *)shmemx_space_malloc(space, words[i] * sizeof(long));
        if (block[i] == NULL) return failed(shmem_my_pe(), "shmemx_space_malloc");
    }
    for (i = 0; i < BLOCKS; i++) {
        for (w = 0; w < words[i]; w++) mine[w] = 1000000L * me + 1000L * i + (long)w;
        shmem_putmem(block[i], mine, words[i] * sizeof(long), next);
    }
    shmem_team_sync(team); /* every put of the team has landed */
    for (i = 0; i < BLOCKS; i++)
        if (block[i][words[i] - 1] != 1000000L * prev + 1000L * i + (long)(words[i] - 1)) wrong++;
    shmem_team_sync(team); /* nobody reads the blocks any more */
    for (i = 0; i < BLOCKS; i++) shmem_free(block[i]);
    return wrong;
}

/* The odd PEs wait here for the even team's first PE to say it is done. */
static void wait_for_even_team(long *even_done)
{
    long done = 0;
    while (!done) shmem_getmem(&done, even_done, sizeof done, 0);
}

static int spaces(void)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), wrong = 0;
    shmemx_space_config_t config = {(size_t)64 << 10, (size_t)16 << 20, SHMALLOC_METADATA_INLINE, NULL, 0, NULL};
    shmem_team_t even = SHMEM_TEAM_INVALID, odd = SHMEM_TEAM_INVALID, team;
    shmemx_space_t space;
    long *even_done = (long *)shmem_calloc(1, sizeof *even_done), one = 1;
    if (npes < 2) return failed(me, "a run of fewer than 2 PEs");
    if (even_done == NULL) return failed(me, "shmem_calloc");
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even) != 0 ||
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd) != 0)
        return failed(me, "shmem_team_split_strided");
    team = me % 2 ? odd : even;
    if (shmemx_space_create(team, &config, &space) != 0) return failed(me, "shmemx_space_create");
    if (me % 2) wait_for_even_team(even_done);
    wrong = use_space(team, space);
    if (shmem_team_my_pe(team) == 0)
        printf("PE %d: the %s team of %d PE%s used its space%s\n", me, me % 2 ? "odd" : "even", shmem_team_n_pes(team),
               shmem_team_n_pes(team) == 1 ? "" : "s",
               me % 2 ? "" : " while the odd team waited");
    shmem_team_sync(team);
    if (me == 0) shmem_putmem(even_done, &one, sizeof one, 0);
    if (shmalloc_check(0) != 0) wrong++;
    if (shmemx_space_destroy(space, 0) != 0) wrong += failed(me, "shmemx_space_destroy");
    shmem_team_destroy(team);
    shmem_barrier_all();
    shmem_free(even_done);
    return wrong;
}

#if defined(SPACES_PMIX_OFI)
int main(void)
{
    int wrong;
    shmem_init();
    wrong = spaces();
    shmem_finalize();
    return wrong == 0 ? 0 : 1;
}
#else
static int wrong_values; /* PE threads add to it; read after they finish */

static void pe_main(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&wrong_values, spaces(), __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
    int npes = argc > 1 ? atoi(argv[1]) : 4;
    if (shmalloc_pthreads_run(npes, (size_t)1 << 20, pe_main, NULL) != 0) return 1;
    return wrong_values == 0 ? 0 : 1;
}
#endif
