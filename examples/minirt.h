/* minirt.h - the toy runtime under vendor_runtime.c and device_runtime.c:
   PEs are forked processes that share one mapping with a barrier and the
   slots of an all-reduce, which a shmalloc_transport binds.  An example
   includes it after shmalloc.h, defines pe_main(), and calls minirt_run()
   from main with a setup that maps its heaps once the PE count is known. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MINIRT_MAX_PES 16

/* What every process shares: a barrier and all-reduce slots. */
struct minirt_shared {
    pthread_barrier_t barrier;
    uint64_t slots[2][MINIRT_MAX_PES][16]; /* double-buffered by call parity */
};

static struct minirt_shared *rt_shared;
static int rt_me, rt_npes;
static unsigned rt_reductions;

static int pe_main(void);

static int minirt_barrier(void *user)
{
    int rc = pthread_barrier_wait(&((struct minirt_shared *)user)->barrier);
    return rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : -1;
}

/* Write my values, wait for everyone, take the maximum.  The slots of one
   parity are reused two calls later, after everyone has passed the barrier
   of the call in between, so one barrier per call suffices. */
static int minirt_allreduce_max(void *user, uint64_t *values, int count)
{
    struct minirt_shared *s = (struct minirt_shared *)user;
    unsigned parity = rt_reductions++ & 1;
    int pe, i;
    memcpy(s->slots[parity][rt_me], values, (size_t)count * sizeof *values);
    if (minirt_barrier(user)) return -1;
    for (pe = 0; pe < rt_npes; pe++)
        for (i = 0; i < count; i++)
            if (s->slots[parity][pe][i] > values[i]) values[i] = s->slots[parity][pe][i];
    return 0;
}

/* This PE's transport: the barrier and all-reduce above, nothing else. */
static shmalloc_transport minirt_transport(void)
{
    shmalloc_transport tp;
    memset(&tp, 0, sizeof tp);
    tp.user = rt_shared;
    tp.barrier = minirt_barrier;
    tp.allreduce_max = minirt_allreduce_max;
    tp.pe = rt_me;
    tp.npes = rt_npes;
    return tp;
}

/* Runs pe_main on argv[1] PEs (2 by default) after setup(), which maps the
   heaps; prints "name: ok" or "name: FAILED", and returns non-zero on a
   failure. */
static int minirt_run(int argc, char **argv, const char *name, int (*setup)(void))
{
    pthread_barrierattr_t attr;
    int pe, status, failed = 0;
    rt_npes = argc > 1 ? atoi(argv[1]) : 2;
    if (rt_npes < 1 || rt_npes > MINIRT_MAX_PES) {
        fprintf(stderr, "usage: %s [npes 1..%d]\n", argv[0], MINIRT_MAX_PES);
        return 2;
    }
    if (shmalloc_options_read(NULL) != 0) return 1; /* SHMALLOC_DEBUG and the rest, once, before the PEs */
    rt_shared = (struct minirt_shared *)mmap(NULL, sizeof *rt_shared, PROT_READ | PROT_WRITE,
                                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rt_shared == MAP_FAILED || setup() != 0) {
        perror(name);
        return 1;
    }
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&rt_shared->barrier, &attr, (unsigned)rt_npes);
    fflush(stdout);
    for (pe = 0; pe < rt_npes; pe++) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc;
            rt_me = pe;
            rc = pe_main();
            fflush(stdout);
            _exit(rc);
        }
        if (pid < 0) {
            perror("fork");
            return 1;
        }
    }
    while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    pthread_barrier_destroy(&rt_shared->barrier);
    printf("%s: %s\n", name, failed ? "FAILED" : "ok");
    return failed;
}
