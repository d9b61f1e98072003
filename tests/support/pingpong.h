/* pingpong.h - the ping-pong both transports' tests play
   (test_pthreads_data.c, pmix_ofi_worker_pingpong.c): PEs 2k and 2k+1 pass
   the round's number back and forth, each by an 8-byte shmem_putmem into
   the other's flag, and clear their own flag once they have seen the round,
   before answering.  A put that stores its word twice (memcpy and memmove
   copy 8 to 15 bytes as two overlapping words) can land the second store
   after that clear: the receiver then finds the round it has already seen.

   Include it after the transport's header (shmem_putmem, shmem_my_pe). */
#ifndef SHMALLOC_TEST_PINGPONG_H
#define SHMALLOC_TEST_PINGPONG_H

#include <sched.h>
#include <stdio.h>
#include <time.h>

#define PINGPONG_ROUNDS 100000
#define PINGPONG_POLLS 200     /* polls between sched_yields: a busy peer's put lands within them */
#define PINGPONG_SECONDS 20.0  /* a wait longer than this fails the game */
#define PINGPONG_GIVE_UP (-1L) /* what a PE puts into its peer's flag when it stops early */

static double pingpong_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The next value put into *flag, which is cleared; 0 after
   PINGPONG_SECONDS without one. */
static long pingpong_take(long *flag)
{
    double deadline = 0.0;
    long polls = 0;
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) {
        if (++polls % PINGPONG_POLLS) continue;
        if (deadline == 0.0) deadline = pingpong_now() + PINGPONG_SECONDS;
        else if (pingpong_now() > deadline) return 0;
        sched_yield(); /* the peer may need this cpu */
    }
    return __atomic_exchange_n(flag, 0, __ATOMIC_ACQ_REL); /* cleared before the answer */
}

/* Plays `rounds` rounds with this PE's pair (2k with 2k+1) through flag,
   symmetric and 0 on both.  0, or the round that went wrong, with why
   saying how. */
static long pingpong(long *flag, long rounds, char *why, size_t cap)
{
    int self = shmem_my_pe(), peer = self ^ 1;
    long round, got, give_up = PINGPONG_GIVE_UP;
    if (peer >= shmem_n_pes()) return 0;
    for (round = 1; round <= rounds; round++) {
        if ((self & 1) == 0) shmem_putmem(flag, &round, sizeof round, peer);
        got = pingpong_take(flag);
        if (got != round) {
            if (got == PINGPONG_GIVE_UP) snprintf(why, cap, "PE %d gave up in round %ld", peer, round);
            else if (got == 0)
                snprintf(why, cap, "round %ld: no put from PE %d in %.0f s", round, peer, PINGPONG_SECONDS);
            else snprintf(why, cap, "round %ld: the flag holds %ld%s", round, got,
                          got == round - 1 ? ", put again after it was cleared: a put stored its word twice" : "");
            if (got != PINGPONG_GIVE_UP) shmem_putmem(flag, &give_up, sizeof give_up, peer);
            return round;
        }
        if (self & 1) shmem_putmem(flag, &round, sizeof round, peer);
    }
    return 0;
}

#endif /* SHMALLOC_TEST_PINGPONG_H */
