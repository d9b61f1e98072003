/* files.c - the files start-up makes in /dev/shm, and the processes that
   made them.  They carry their creator's PID: the shm provider's endpoint
   files (PID:N:N) and the node segment (shmalloc-PID-...).  Each is
   unlinked once every peer has it open; a PE killed before that leaves
   it.  So every PE removes this user's such files whose creator has
   ended, at start-up and when it ends abnormally (a signal, a fatal
   error), and its sweeper does when it has died: once a PE killed at
   any moment of start-up has ended, nothing of it is left.  Never
   another user's file, never a live process's.  Only async-signal-safe
   calls where the signal handler reaches, and in the sweeper (forked from
   a PE with threads).  Calls no other file of the transport. */
#include "pmix_ofi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHM__FILE_PATH 176

/* The paths of this PE's own files of start-up, until every peer has
   them open: SHM__FILE_ENDPOINT, SHM__FILE_NODE. */
void shm__append(char *line, size_t *n, size_t cap, const char *s)
{
    while (*s && *n + 1 < cap) line[(*n)++] = *s++;
}

void shm__append_int(char *line, size_t *n, size_t cap, long v)
{
    char digits[24];
    int i = 0;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    if (v < 0) shm__append(line, n, cap, "-");
    do digits[i++] = (char)('0' + u % 10); while ((u /= 10) != 0 && i < (int)sizeof digits);
    while (i > 0 && *n + 1 < cap) line[(*n)++] = digits[--i];
}

static char shm__own_files[SHM__FILES][SHM__FILE_PATH];

void shm__files_set(int which, const char *path)
{
    char *f = shm__own_files[which];
    size_t n = path ? strlen(path) : 0;
    if (n >= SHM__FILE_PATH) n = 0;
    memcpy(f, n ? path : "", n + 1);
}

void shm__files_unlink(int which)
{
    if (shm__own_files[which][0]) unlink(shm__own_files[which]);
    shm__own_files[which][0] = '\0';
}

/* The creator's PID in a file name of ours, or 0. */
static long shm__creator(const char *name)
{
    size_t plen = strlen(SHM__NODE_PREFIX);
    int segment = strncmp(name, SHM__NODE_PREFIX, plen) == 0;
    const char *p = segment ? name + plen : name;
    long pid = 0;
    while (*p >= '0' && *p <= '9' && pid < (1L << 40)) pid = pid * 10 + (*p++ - '0');
    if (pid <= 0) return 0;
    if (segment) return *p == '-' ? pid : 0;
    if (*p != ':') return 0;
    return strspn(p, "0123456789:") == strlen(p) ? pid : 0;
}

/* Process pid's /proc/PID/stat read into text, and where its state
   letter is there (after the name), or NULL. */
const char *shm__proc_state(long pid, char *text, size_t cap)
{
    char path[48];
    const char *p;
    size_t n = 0;
    ssize_t got;
    int fd;
    shm__append(path, &n, sizeof path, "/proc/");
    shm__append_int(path, &n, sizeof path, pid);
    shm__append(path, &n, sizeof path, "/stat");
    path[n] = '\0';
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return NULL;
    got = read(fd, text, cap - 1);
    close(fd);
    text[got > 0 ? got : 0] = '\0';
    p = strrchr(text, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

/* 1 when process pid has ended, is ending (the kernel's PF_EXITING, in
   the 9th field of /proc/PID/stat: a killed PE's peers may learn of its
   death before it is a zombie) or is a zombie: nobody will remove its
   files but us. */
int shm__pid_gone(long pid)
{
    char text[512];
    const char *p;
    unsigned long flags = 0;
    int field;
    if (kill((pid_t)pid, 0) == -1) return errno == ESRCH; /* EPERM: alive, another user's */
    if ((p = shm__proc_state(pid, text, sizeof text)) == NULL) return 0;
    if (*p == 'Z' || *p == 'X') return 1;
    for (field = 3; *p && field < 9; p++) field += *p == ' ';
    while (*p >= '0' && *p <= '9') flags = flags * 10 + (unsigned long)(*p++ - '0');
    return field == 9 && (flags & 0x4) != 0; /* PF_EXITING */
}

/* Removes the stale files, and with mine this process's own (whatever
   their names: the shm provider names its file before fi_getname tells
   us); returns how many. */
int shm__sweep(int mine)
{
    long self = (long)getpid();
    uint64_t buf[512]; /* aligned for the records */
    int dir = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC), removed = 0;
    ssize_t n, at;
    if (dir < 0) return 0;
    while ((n = getdents64(dir, buf, sizeof buf)) > 0)
        for (at = 0; at < n; at += ((const struct dirent64 *)((const char *)buf + at))->d_reclen) {
            const char *name = ((const struct dirent64 *)((const char *)buf + at))->d_name;
            struct stat st;
            long pid = shm__creator(name);
            if (!pid || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
                st.st_uid != geteuid() || !((mine && pid == self) || shm__pid_gone(pid)))
                continue;
            removed += unlinkat(dir, name, 0) == 0;
        }
    close(dir);
    return removed;
}

/* A PE that ends abnormally: its own files of start-up, then those its
   PID names and the stale ones. */
void shm__remove_files(void)
{
    int i;
    for (i = 0; i < SHM__FILES; i++)
        if (shm__own_files[i][0]) unlink(shm__own_files[i]);
    shm__sweep(1);
}

/* A PE killed outright (mpirun's SIGKILL a moment after its SIGTERM, on a
   machine that did not schedule the PE in between) runs no handler, and
   its peers may be gone too: nobody would remove its files.  So start-up,
   before the first file, leaves a sweeper: a process of its own session
   (the launcher signals the PE's process group), holding only the
   reading end of a pipe the PE keeps open.  The PE's death closes it; the
   sweeper then removes the files of ended processes, the PE's among them,
   and ends.  After a clean end it finds none.  Once per process. */
void shm__start_sweeper(void)
{
    static int started;
    struct pollfd hang_up = {0, POLLIN, 0};
    long pe = (long)getpid();
    int ends[2], i;
    pid_t child;
    if (started || pipe2(ends, O_CLOEXEC) != 0) return;
    if ((child = fork()) < 0) close(ends[1]);
    if (child != 0) {
        close(ends[0]); /* the writing end stays open until the PE ends */
        while (child > 0 && waitpid(child, NULL, 0) < 0 && errno == EINTR) { /* the sweeper is out of our group */ }
        started = child > 0;
        return;
    }
    if (setsid() < 0 || fork() != 0) _exit(0);
    dup2(ends[0], 0);
    if (close_range(1, ~0u, 0) != 0)
        for (i = 1; i < 1024; i++) close(i);
    while (!shm__pid_gone(pe)) /* a forked child may hold the pipe, an exec close it: look each second too */
        if (poll(&hang_up, 1, 1000) > 0) hang_up.fd = -1;
    shm__sweep(0);
    _exit(0);
}

/* "N KiB free of M KiB" for /dev/shm, the place of our files (the node
   segment, the shm provider's), or "its free space unknown". */
void shm__dev_shm_space(char *out, size_t cap, unsigned long long *free_bytes)
{
    struct statvfs v;
    *free_bytes = ~0ull;
    if (statvfs("/dev/shm", &v) != 0) {
        snprintf(out, cap, "its free space unknown");
        return;
    }
    *free_bytes = (unsigned long long)v.f_bavail * v.f_frsize;
    snprintf(out, cap, "%llu KiB free of %llu KiB", *free_bytes >> 10,
             ((unsigned long long)v.f_blocks * v.f_frsize) >> 10);
}
