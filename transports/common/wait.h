/* wait.h - waiting with a deadline, for the transports.
   MIT licence: see the end of ../../shmalloc.h.

   Internal to the transports: linked into their libraries, not installed,
   not an API a program calls.  A waiter polls its own condition and, each
   time it does not hold, takes one step:

       shm__wait w;
       shm__wait_begin(&w, timeout, pauses, yields);
       while (!condition) {
           int s = shm__wait_step(&w);
           if (s == SHM__WAIT_EXPIRED) ... give up, naming who is late
           if (s == SHM__WAIT_SLEEP) ... block on a condition variable
               until shm__wait_deadline(&w, &ts), or shm__wait_sleep(&w)
       }

   A step escalates: `pauses` polls with a cpu pause (PEs on idle cores
   arrive within a microsecond), then `yields` polls with sched_yield, then
   sleeps, since with more PEs than cores the one still to come needs the
   cpu a poller would burn.  The clock is read only from the first yield
   on, so a wait that ends while pausing costs no clock reads. */
#ifndef SHM__WAIT_H_INCLUDED
#define SHM__WAIT_H_INCLUDED

#include "internal.h" /* SHM__INTERNAL */

#define SHM__WAIT_POLL 0        /* poll the condition again */
#define SHM__WAIT_SLEEP 1       /* the polls are spent: sleep, then poll again */
#define SHM__WAIT_EXPIRED (-1)  /* the deadline has passed */
#define SHM__WAIT_ALL_YIELDS 0x3fffffff /* `yields` of a wait that never sleeps */

struct timespec;

typedef struct shm__wait {
    double timeout;   /* seconds from the first yield to the deadline */
    double deadline;  /* on shm__wait_now's clock; 0 before the first yield */
    int pauses;       /* polls with a cpu pause */
    int yields;       /* then polls with sched_yield */
    int polls;        /* steps taken */
} shm__wait;

#if defined(__cplusplus)
extern "C" {
#endif

/* Seconds on a monotonic clock (CLOCK_MONOTONIC). */
SHM__INTERNAL double shm__wait_now(void);

/* Starts a wait that expires timeout seconds after its first yield. */
SHM__INTERNAL void shm__wait_begin(shm__wait *w, int timeout, int pauses, int yields);

/* One step: a cpu pause or a sched_yield (SHM__WAIT_POLL), or, once
   the pauses and yields are spent, SHM__WAIT_SLEEP without waiting;
   SHM__WAIT_EXPIRED once the deadline has passed. */
SHM__INTERNAL int shm__wait_step(shm__wait *w);

/* The deadline as an absolute CLOCK_MONOTONIC time, for
   pthread_cond_timedwait on a condition variable with that clock. */
SHM__INTERNAL void shm__wait_deadline(const shm__wait *w, struct timespec *abs);

/* Sleeps a short while (100 us, never past the deadline): a SLEEP step
   for a waiter with nothing to block on. */
SHM__INTERNAL void shm__wait_sleep(const shm__wait *w);

#if defined(__cplusplus)
}
#endif
#endif /* SHM__WAIT_H_INCLUDED */
