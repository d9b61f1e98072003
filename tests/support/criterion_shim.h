/* criterion_shim.h - Criterion, or a small stand-in for the part of it our
   tests use where Criterion cannot run.

   Criterion aborts at start-up under ThreadSanitizer ("Could not initialize
   inheritable arena": its sandbox maps an arena at random fixed addresses,
   which TSan's memory layout refuses; Criterion issue #274, open since
   2018).  The thread tests matter most under TSan, so a test file includes
   this header instead of <criterion/criterion.h>: it gets Criterion in
   ordinary and ASan builds, and in TSan builds (or with
   -DSHMALLOC_TEST_SHIM) a runner of its own that supports Test,
   ParameterizedTest(Parameters), cr_make_param_array, cr_assert,
   cr_assert_eq/neq/null/not_null, cr_skip_test, the options .exit_code, .timeout and
   .init, and cr_redirect_stderr / cr_get_redirected_stderr.  Each test runs
   in a forked child, as with Criterion; a failed assert ends the child.
   The runner takes an optional substring to select tests and ignores
   options such as --jobs 2, so a Makefile can run both builds alike. */
#ifndef SHMALLOC_CRITERION_SHIM_H
#define SHMALLOC_CRITERION_SHIM_H

#if !defined(SHMALLOC_TEST_SHIM)
#  if defined(__SANITIZE_THREAD__)
#    define SHMALLOC_TEST_SHIM 1
#  elif defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#      define SHMALLOC_TEST_SHIM 1
#    endif
#  endif
#endif

#if !defined(SHMALLOC_TEST_SHIM)
#  include <criterion/criterion.h>
#  include <criterion/parameterized.h>
#  include <criterion/redirect.h>
#else

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHIM_UNUSED __attribute__((unused)) /* a test file may not use every helper */

struct shim_options {
    int exit_code;
    double timeout;      /* seconds; 0 for none */
    void (*init)(void);
    int sentinel_;       /* lets every option list end in a comma */
};

struct shim_params {
    size_t size, length;
    void *params;
};

struct shim_test {
    const char *suite, *name;
    void (*run)(void);                 /* a plain test */
    void (*run_param)(void *param);    /* a parameterized test */
    struct shim_params (*params)(void);
    struct shim_options options;
    struct shim_test *next;
};

static struct shim_test *shim_tests;

SHIM_UNUSED static void shim_register(struct shim_test *t)
{
    struct shim_test **end = &shim_tests;
    while (*end != NULL) end = &(*end)->next;
    *end = t;
}

#define Test(...) SHIM_TEST_(__VA_ARGS__, .sentinel_ = 0)
#define SHIM_TEST_(suite, name, ...)                                                       \
    static void suite##_##name##_run(void);                                               \
    static struct shim_test suite##_##name##_test = {#suite, #name, suite##_##name##_run,  \
                                                     NULL, NULL, {__VA_ARGS__}, NULL};     \
    __attribute__((constructor)) static void suite##_##name##_register(void)               \
    {                                                                                      \
        shim_register(&suite##_##name##_test);                                             \
    }                                                                                      \
    static void suite##_##name##_run(void)

#define ParameterizedTestParameters(suite, name) static struct shim_params suite##_##name##_params(void)
#define cr_make_param_array(...) SHIM_PARAMS_(__VA_ARGS__, 0)
#define SHIM_PARAMS_(type, array, length, ...) \
    ((struct shim_params){sizeof(type), (size_t)(length), (void *)(array)})

#define ParameterizedTest(...) SHIM_PTEST_(__VA_ARGS__, .sentinel_ = 0)
#define SHIM_PTEST_(param, suite, name, ...)                                               \
    static void suite##_##name##_body(param);                                             \
    static void suite##_##name##_run_param(void *p) { suite##_##name##_body(p); }          \
    static struct shim_test suite##_##name##_test = {#suite, #name, NULL,                 \
                                                     suite##_##name##_run_param,           \
                                                     suite##_##name##_params,              \
                                                     {__VA_ARGS__}, NULL};                 \
    __attribute__((constructor)) static void suite##_##name##_register(void)               \
    {                                                                                      \
        shim_register(&suite##_##name##_test);                                             \
    }                                                                                      \
    static void suite##_##name##_body(param)

/* Not printf-checked: the macros below append an unused "" argument. */
SHIM_UNUSED static void shim_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    fprintf(stdout, "%s:%d: Assertion failed: %s", file, line, expr);
    if (fmt[0] != '\0') {
        fputs(": ", stdout);
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stdout);
    fflush(NULL);
    _exit(254);
}

/* A skipped test ends its child with this status; the runner counts it
   apart, never as passing. */
#define SHIM_SKIPPED 77
SHIM_UNUSED static void cr_skip_test(const char *fmt, ...)
{
    va_list ap;
    fputs("skipped: ", stdout);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(NULL);
    _exit(SHIM_SKIPPED);
}

#define SHIM_CHECK_(cond, ...) \
    do { if (!(cond)) shim_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)
#define cr_assert(...) SHIM_ASSERT_(__VA_ARGS__, "")
#define SHIM_ASSERT_(cond, ...) SHIM_CHECK_(cond, __VA_ARGS__)
#define cr_assert_eq(...) SHIM_EQ_(__VA_ARGS__, "")
#define SHIM_EQ_(a, b, ...) SHIM_CHECK_((a) == (b), __VA_ARGS__)
#define cr_assert_neq(...) SHIM_NEQ_(__VA_ARGS__, "")
#define SHIM_NEQ_(a, b, ...) SHIM_CHECK_((a) != (b), __VA_ARGS__)
#define cr_assert_null(...) SHIM_NULL_(__VA_ARGS__, "")
#define SHIM_NULL_(p, ...) SHIM_CHECK_((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(...) SHIM_NOT_NULL_(__VA_ARGS__, "")
#define SHIM_NOT_NULL_(p, ...) SHIM_CHECK_((p) != NULL, __VA_ARGS__)

static FILE *shim_stderr_reader;

/* fd 2 goes to a temporary file that cr_get_redirected_stderr reads back
   through its own descriptor, so writes and reads keep separate offsets. */
SHIM_UNUSED static void cr_redirect_stderr(void)
{
    char path[] = "/tmp/criterion_shim_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || dup2(fd, 2) < 0) {
        perror("cr_redirect_stderr");
        _exit(253);
    }
    close(fd);
    shim_stderr_reader = fopen(path, "r");
    unlink(path);
}

SHIM_UNUSED static FILE *cr_get_redirected_stderr(void)
{
    return shim_stderr_reader;
}

/* Runs one test (param NULL for a plain one) in a child; 1 if it passed,
   SHIM_SKIPPED if it skipped itself. */
static int shim_run_one(const struct shim_test *t, void *param, size_t index)
{
    int status;
    pid_t pid;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        if (t->options.timeout > 0) alarm((unsigned)t->options.timeout + 1u);
        if (t->options.init != NULL) t->options.init();
        if (param != NULL) t->run_param(param);
        else t->run();
        exit(0); /* not _exit: a sanitizer's exit-time report sets the status */
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        perror("fork");
        return 0;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == t->options.exit_code) return 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == SHIM_SKIPPED) {
        printf("[SKIP] %s::%s\n", t->suite, t->name);
        return SHIM_SKIPPED;
    }
    printf("[FAIL] %s::%s", t->suite, t->name);
    if (param != NULL) printf(" (parameter %zu)", index);
    if (WIFSIGNALED(status))
        printf(": %s\n", WTERMSIG(status) == SIGALRM ? "timed out" : strsignal(WTERMSIG(status)));
    else printf(": exit status %d, expected %d\n", WEXITSTATUS(status), t->options.exit_code);
    return 0;
}

int main(int argc, char **argv)
{
    const char *filter = NULL;
    const struct shim_test *t;
    int i, tested = 0, passed = 0, skipped = 0, r;
    for (i = 1; i < argc; i++)
        if (argv[i][0] != '-' && (i == 1 || strcmp(argv[i - 1], "--jobs") != 0)) filter = argv[i];
    for (t = shim_tests; t != NULL; t = t->next) {
        size_t k;
        if (filter != NULL && strstr(t->name, filter) == NULL) continue;
        if (t->run_param == NULL) {
            tested++;
            r = shim_run_one(t, NULL, 0);
            passed += r == 1;
            skipped += r == SHIM_SKIPPED;
            continue;
        }
        for (k = 0; k < t->params().length; k++) {
            struct shim_params p = t->params();
            tested++;
            r = shim_run_one(t, (char *)p.params + k * p.size, k);
            passed += r == 1;
            skipped += r == SHIM_SKIPPED;
        }
    }
    printf("[====] Synthesis: Tested: %d | Passing: %d | Skipped: %d | Failing: %d (criterion_shim)\n", tested,
           passed, skipped, tested - passed - skipped);
    return passed + skipped == tested ? 0 : 1;
}

#endif /* SHMALLOC_TEST_SHIM */
#endif /* SHMALLOC_CRITERION_SHIM_H */
