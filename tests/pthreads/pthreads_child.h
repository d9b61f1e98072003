/* pthreads_child.h - a run of the pthreads transport that should end the
   program, made in a forked child whose stderr the test reads, each
   message after its ID's name ("[PTHREADS_BARRIER_TIMEOUT] shmalloc: ...");
   the child is killed if it outlives CHILD_BOUND, so a run that does not
   end fails the test instead of hanging it.  Include after test_support.h
   (with TEST_SUPPORT_PES). */
#ifndef SHMALLOC_PTHREADS_CHILD_H
#define SHMALLOC_PTHREADS_CHILD_H

#include "transports/common/internal.h" /* SHM__TSAN */
#include "transports/common/wait.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* A timed-out run ends by _exit while PE threads that returned are not
   joined yet; ThreadSanitizer would call that a thread leak. */
#if defined(SHM__TSAN)
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "report_thread_leaks=0"; }
#endif

#define CHILD_BOUND 20.0  /* seconds a child that should end may take */

typedef struct child_result {
    int status;        /* exit status, or -1 when killed or signalled */
    double seconds;    /* from fork to exit */
    char text[65536];  /* its stderr: 64 PEs' reports of a mismatch fit */
} child_result;

/* Reads fd into r->text until EOF or the deadline; 0 at EOF. */
TS_UNUSED static int read_until(int fd, child_result *r, double deadline)
{
    size_t used = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = (int)((deadline - shmalloc_wait_now()) * 1000.0);
        ssize_t n;
        if (left <= 0) return -1;
        if (poll(&p, 1, left) <= 0) continue;
        n = read(fd, r->text + used, sizeof r->text - 1 - used);
        if (n <= 0) return 0;
        used += (size_t)n;
        r->text[used] = '\0';
        if (used == sizeof r->text - 1) return 0;
    }
}

/* The child's messages, each after its ID's name: "[PTHREADS_BARRIER_TIMEOUT] shmalloc: ...". */
TS_UNUSED static void tag_output(void *user, int stream, int id, const char *text)
{
    (void)user;
    fprintf(stream == 1 ? stdout : stderr, "[%s] %s", shmalloc_message_name(id), text);
}

/* The variable run_child sets: a test of the former name changes it. */
TS_UNUSED static const char *child_timeout_var = "SHMALLOC_TIMEOUT";

/* Runs npes PEs of pe_main in a child with SHMALLOC_TIMEOUT=timeout. */
TS_UNUSED static void run_child(int npes, const char *timeout, void (*pe_main)(void *), void *arg, child_result *r)
{
    int fds[2], wstatus, ended;
    double start = shmalloc_wait_now();
    pid_t pid;
    memset(r, 0, sizeof *r);
    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    cr_assert(pid >= 0, "fork failed");
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        setenv(child_timeout_var, timeout, 1);
        shmalloc_set_output(tag_output, NULL);
        _exit(shmalloc_pthreads_run(npes, (size_t)1 << 20, pe_main, arg) == 0 ? 0 : 2);
    }
    close(fds[1]);
    ended = read_until(fds[0], r, start + CHILD_BOUND) == 0;
    close(fds[0]);
    if (!ended) kill(pid, SIGKILL);
    cr_assert_eq(waitpid(pid, &wstatus, 0), pid);
    r->seconds = shmalloc_wait_now() - start;
    r->status = ended && WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    cr_assert(ended, "the run did not end within %.0f s (killed); stderr: %s", CHILD_BOUND, r->text);
}

#endif /* SHMALLOC_PTHREADS_CHILD_H */
