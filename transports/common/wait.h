/* wait.h - waiting with a deadline, for the transports.
   MIT licence: see the end of ../../shmalloc.h.

   Part of the API a transport builds on (start.h lists the others),
   compiled into libshmalloc: for a transport's barriers and waits for its
   network, not for a program.  A waiter polls its own condition and, each
   time it does not hold, takes one step:

       shmalloc_wait w;
       shmalloc_wait_begin(&w, timeout, pauses, yields);
       while (!condition) {
           int s = shmalloc_wait_step(&w);
           if (s == SHMALLOC_WAIT_EXPIRED) ... give up, naming who is late
           if (s == SHMALLOC_WAIT_SLEEP) ... block on a condition variable
               until shmalloc_wait_deadline(&w, &ts), or shmalloc_wait_sleep(&w)
       }

   A step escalates: `pauses` polls with a cpu pause (PEs on idle cores
   arrive within a microsecond), then `yields` polls with sched_yield, then
   sleeps, since with more PEs than cores the one still to come needs the
   cpu a poller would burn.  The clock is read only from the first yield
   on, so a wait that ends while pausing costs no clock reads. */
#ifndef SHMALLOC_WAIT_H_INCLUDED
#define SHMALLOC_WAIT_H_INCLUDED

#define SHMALLOC_WAIT_POLL 0        /* poll the condition again */
#define SHMALLOC_WAIT_SLEEP 1       /* the polls are spent: sleep, then poll again */
#define SHMALLOC_WAIT_EXPIRED (-1)  /* the deadline has passed */
#define SHMALLOC_WAIT_ALL_YIELDS 0x3fffffff /* `yields` of a wait that never sleeps */

struct timespec;

typedef struct shmalloc_wait {
    double timeout;   /* seconds from the first yield to the deadline */
    double deadline;  /* on shmalloc_wait_now's clock; 0 before the first yield */
    int pauses;       /* polls with a cpu pause */
    int yields;       /* then polls with sched_yield */
    int polls;        /* steps taken */
} shmalloc_wait;

#if defined(__cplusplus)
extern "C" {
#endif

/* Seconds on a monotonic clock (CLOCK_MONOTONIC); no errors. */
double shmalloc_wait_now(void);

/* Starts a wait that expires timeout seconds after its first yield (the
   start-up's timeout, shmalloc_start.timeout), before the first poll. */
void shmalloc_wait_begin(shmalloc_wait *w, int timeout, int pauses, int yields);

/* One step: a cpu pause or a sched_yield (SHMALLOC_WAIT_POLL), or, once
   the pauses and yields are spent, SHMALLOC_WAIT_SLEEP without waiting;
   SHMALLOC_WAIT_EXPIRED once the deadline has passed. */
int shmalloc_wait_step(shmalloc_wait *w);

/* The deadline as an absolute CLOCK_MONOTONIC time, for
   pthread_cond_timedwait on a condition variable with that clock, after
   a SLEEP step.  No errors. */
void shmalloc_wait_deadline(const shmalloc_wait *w, struct timespec *abs);

/* Sleeps a short while (100 us, never past the deadline): a SLEEP step
   for a waiter with nothing to block on.  No errors. */
void shmalloc_wait_sleep(const shmalloc_wait *w);

#if defined(__cplusplus)
}
#endif
#endif /* SHMALLOC_WAIT_H_INCLUDED */
