/* wait.c - waiting with a deadline, for the transports: see wait.h. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* clock_gettime and nanosleep under -std=c99 */
#endif

#include "../../shmalloc.h"
#include "wait.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#define SHM__SLEEP_SLICE 100e-6 /* seconds a shmalloc_wait_sleep sleeps at most */

static void shm__cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static struct timespec shm__timespec(double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
    if (ts.tv_nsec < 0) ts.tv_nsec = 0;
    return ts;
}

double shmalloc_wait_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void shmalloc_wait_begin(shmalloc_wait *w, int timeout, int pauses, int yields)
{
    w->timeout = (double)timeout;
    w->deadline = 0.0;
    w->pauses = pauses;
    w->yields = yields;
    w->polls = 0;
}

int shmalloc_wait_step(shmalloc_wait *w)
{
    /* Past the yields the count stops, so a long sleep cannot overflow it. */
    if (w->polls <= w->pauses + w->yields) w->polls++;
    if (w->polls <= w->pauses) {
        shm__cpu_pause();
        return SHMALLOC_WAIT_POLL;
    }
    if (w->deadline == 0.0) w->deadline = shmalloc_wait_now() + w->timeout;
    else if (shmalloc_wait_now() > w->deadline) return SHMALLOC_WAIT_EXPIRED;
    if (w->polls <= w->pauses + w->yields) {
        sched_yield();
        return SHMALLOC_WAIT_POLL;
    }
    return SHMALLOC_WAIT_SLEEP;
}

void shmalloc_wait_deadline(const shmalloc_wait *w, struct timespec *abs)
{
    *abs = shm__timespec(w->deadline != 0.0 ? w->deadline : shmalloc_wait_now() + w->timeout);
}

void shmalloc_wait_sleep(const shmalloc_wait *w)
{
    double left = (w->deadline != 0.0 ? w->deadline : shmalloc_wait_now() + w->timeout) - shmalloc_wait_now();
    struct timespec ts;
    if (left <= 0.0) return;
    ts = shm__timespec(left < SHM__SLEEP_SLICE ? left : SHM__SLEEP_SLICE);
    nanosleep(&ts, NULL);
}
