/* pmix_ofi_worker_pingpong.c - the pingpong scenario: PEs 2k and 2k+1 of
   one node play PINGPONG_ROUNDS rounds through same-node puts
   (tests/support/pingpong.h). */
#include "pmix_ofi_worker.h"
#include "pingpong.h"

void scenario_pingpong(void)
{
    long *flag = (long *)shmem_calloc(1, sizeof *flag);
    char why[200];
    CHECK(flag != NULL);
    if (!flag) return;
    CHECK((me ^ 1) >= npes || shmem_ptr(flag, me ^ 1) != NULL); /* the copies into a mapped peer heap */
    shmem_barrier_all(); /* every flag is 0 before the first put */
    if (pingpong(flag, PINGPONG_ROUNDS, why, sizeof why) != 0) fail(__LINE__, "%s", why);
    shmem_barrier_all();
    shmem_free(flag);
}
