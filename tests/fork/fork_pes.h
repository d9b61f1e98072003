/* fork_pes.h - checks inside the fork transport's PEs, for its tests.
   PEs are processes, so a check that fails ends its PE with a message
   naming the PE and the line, and the test asserts that shmalloc_fork_run
   saw every PE end with status 0. */
#ifndef SHMALLOC_FORK_PES_H
#define SHMALLOC_FORK_PES_H

#include "test_support.h"
#include "transport_fork/shmalloc_fork.h"

#include <stdarg.h>

#define TEST_TIMEOUT 60
#define SMALL_HEAP ((size_t)1 << 20)

TS_UNUSED static void pe_fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "PE %d: %s:%d: ", shmem_my_pe(), file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    shmem_global_exit(1);
}
#define pe_fail(line, ...) pe_fail_at(__FILE__, line, __VA_ARGS__)

#define FORK_CHECK(cond) \
    do { if (!(cond)) pe_fail(__LINE__, "%s is false (malloc_error %ld)", #cond, malloc_error); } while (0)
#define FORK_CHECK_EQ(a, b) \
    do { long a_ = (long)(a), b_ = (long)(b); \
         if (a_ != b_) pe_fail(__LINE__, "%s is %ld, not %ld", #a, a_, b_); } while (0)

#endif
