/* Huge pages on the pthreads transport (transports/common/map.h): what
   each setting obtains, read back independently from /proc/self/smaps,
   and the report a heap gives through the output hook when it falls short
   of what was asked.  Every outcome is checked against the kernel's own
   account, so the tests hold on a machine with or without hugetlbfs pages;
   as root one test also fills the pool to see hugetlbfs pages obtained. */
#include "test_support.h"

#include "transports/shmalloc_pthreads.h"

#include <unistd.h>

#define HEAP ((size_t)8 << 20)
#define HUGE_2M ((size_t)2 << 20)
#define POOL_2M "/sys/kernel/mm/hugepages/hugepages-2048kB/"

/* What the kernel says of the mapping that holds a block of each PE. */
typedef struct seen {
    size_t kernel_page[4], thp[4];
    int check[4];
} seen;

static void smaps_of(const void *addr, size_t *kernel_page, size_t *thp)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0;
    *kernel_page = *thp = 0;
    cr_assert(f != NULL);
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        else if (inside && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1) *kernel_page = (size_t)kb << 10;
        else if (inside && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) *thp = (size_t)kb << 10;
    }
    fclose(f);
}

/* Each PE touches a block of half its heap, records what smaps shows for
   it, frees it, and checks its heap. */
static void pe_look(void *arg)
{
    seen *s = (seen *)arg;
    int me = shmem_my_pe();
    char *p = (char *)shmem_malloc(HEAP / 2);
    cr_assert(p != NULL);
    memset(p, me, HEAP / 2);
    smaps_of(p, &s->kernel_page[me], &s->thp[me]);
    shmem_free(p);
    s->check[me] = shmalloc_check(-1);
}

/* Runs 2 PEs with SHMALLOC_HUGE_PAGES=setting (NULL: the environment as
   it is) and heaps of heap bytes. */
static int run_with(const char *setting, size_t heap, seen *s)
{
    int rc;
    if (setting) setenv("SHMALLOC_HUGE_PAGES", setting, 1);
    memset(s, 0, sizeof *s);
    capture_start();
    rc = shmalloc_pthreads_run(2, heap, pe_look, s);
    capture_stop();
    if (rc == 0) cr_assert(s->check[0] == 0 && s->check[1] == 0, "the heap checker failed");
    return rc;
}

static long pool_2m(const char *file)
{
    char path[128];
    long v = -1;
    FILE *f;
    snprintf(path, sizeof path, POOL_2M "%s", file);
    f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

/* The report must match what smaps shows: no report for hugetlbfs pages,
   else one naming what the heap got. */
static void check_report_matches(const seen *s, const char *setting)
{
    if (s->kernel_page[0] == HUGE_2M) {
        cr_assert(!out_said_id(HUGE_PAGES_FELL_BACK), "hugetlbfs pages obtained, yet a report:\n%s",
                  out_text[2]);
        return;
    }
    cr_assert(out_said_id(HUGE_PAGES_FELL_BACK) && strstr(out_text[2], setting), "no report:\n%s",
              out_text[2]);
    cr_assert(strstr(out_text[2], s->thp[0] ? "has 2 MiB transparent huge pages" : "has 4 KiB pages"),
              "the report does not say what smaps shows (thp %zu bytes):\n%s", s->thp[0], out_text[2]);
    cr_assert(strstr(out_text[2], "hugetlbfs pages could not be reserved"), "the report says no why:\n%s", out_text[2]);
}

Test(hugepages, off_gives_base_pages_and_no_report)
{
    seen s;
    cr_assert(run_with("off", HEAP, &s) == 0);
    cr_assert(s.kernel_page[0] == (size_t)sysconf(_SC_PAGESIZE) && s.kernel_page[1] == s.kernel_page[0]);
    cr_assert(out_len[0] + out_len[1] + out_len[2] == 0, "off printed:\n%s", out_text[2]);
    unsetenv("SHMALLOC_HUGE_PAGES");
    cr_assert(run_with(NULL, HEAP, &s) == 0);
    cr_assert(out_len[0] + out_len[1] + out_len[2] == 0 && s.kernel_page[0] == (size_t)sysconf(_SC_PAGESIZE), "unset is not off:\n%s", out_text[2]);
}

/* Whatever this machine offers, 2M yields hugetlbfs pages or a report that
   says exactly what smaps shows instead. */
Test(hugepages, explicit_2m_is_obtained_or_the_fallback_is_reported_as_smaps_shows)
{
    seen s;
    cr_assert(run_with("2M", HEAP, &s) == 0);
    check_report_matches(&s, "SHMALLOC_HUGE_PAGES=2M");
}

/* A heap larger than the free hugetlbfs pool cannot be reserved: the
   fallback is real, on any machine, and out_text[2]. */
Test(hugepages, heap_larger_than_the_free_pool_falls_back_loudly)
{
    seen s;
    long free_pages = pool_2m("free_hugepages");
    size_t heap = ((size_t)(free_pages > 0 ? free_pages : 0) + 64) * HUGE_2M; /* beyond what the root test adds */
    if (free_pages < 0) cr_skip_test("this kernel has no 2 MiB hugetlbfs pages");
    cr_assert(run_with("2M", heap, &s) == 0);
    cr_assert(s.kernel_page[0] != HUGE_2M, "got hugetlbfs pages beyond the free pool");
    check_report_matches(&s, "SHMALLOC_HUGE_PAGES=2M");
    cr_assert(strstr(out_text[2], "the heap of PE 0"), "%s", out_text[2]);
}

/* auto on private memory: hugetlbfs, else transparent huge pages where the
   kernel allows them (madvise or always), reported only on base pages. */
Test(hugepages, auto_uses_transparent_huge_pages_when_the_pool_is_empty)
{
    seen s;
    char mode[64] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(mode, sizeof mode, f)) mode[0] = '\0';
        fclose(f);
    }
    cr_assert(run_with("auto", HEAP, &s) == 0);
    if (s.kernel_page[0] == HUGE_2M) {
        cr_assert(out_len[0] + out_len[1] + out_len[2] == 0, "%s", out_text[2]);
    } else if (!strstr(mode, "[never]")) {
        cr_assert(s.thp[0] > 0, "THP is \"%s\" yet the heap has none", mode);
        cr_assert(out_len[0] + out_len[1] + out_len[2] == 0, "auto with transparent huge pages reported:\n%s", out_text[2]);
    } else {
        cr_assert(out_said_id(HUGE_PAGES_FELL_BACK) == 1, "%s", out_text[2]);
        cr_assert(strstr(out_text[2], "has 4 KiB pages") && strstr(out_text[2], "SHMALLOC_HUGE_PAGES=auto"), "%s",
                  out_text[2]);
    }
}

/* As root: fill the pool, get hugetlbfs pages with no report; restore. */
Test(hugepages, reserved_pool_gives_hugetlbfs_pages_as_root)
{
    seen s;
    long total = pool_2m("nr_hugepages"), need = (long)(2 * HEAP / HUGE_2M) + 16;
    FILE *f;
    int rc;
    if (total < 0 || getuid() != 0 || access(POOL_2M "nr_hugepages", W_OK) != 0)
        cr_skip_test("needs root and 2 MiB hugetlbfs pages");
    f = fopen(POOL_2M "nr_hugepages", "w");
    cr_assert(f != NULL);
    fprintf(f, "%ld\n", total + need);
    fclose(f);
    if (pool_2m("free_hugepages") < need - 16) {
        f = fopen(POOL_2M "nr_hugepages", "w");
        if (f) {
            fprintf(f, "%ld\n", total);
            fclose(f);
        }
        cr_skip_test("the kernel could not make %ld pages", need);
    }
    rc = run_with("2M", HEAP, &s);
    f = fopen(POOL_2M "nr_hugepages", "w");
    if (f) {
        fprintf(f, "%ld\n", total);
        fclose(f);
    }
    cr_assert(rc == 0);
    cr_assert(s.kernel_page[0] == HUGE_2M && s.kernel_page[1] == HUGE_2M, "kernel pages %zu, %zu:\n%s",
              s.kernel_page[0], s.kernel_page[1], out_text[2]);
    cr_assert(out_len[0] + out_len[1] + out_len[2] == 0, "%s", out_text[2]);
}

/* SOS's variables: USE_HUGE_PAGES=0 is off; =1 with PAGE_SIZE=2M is 2M. */
Test(hugepages, sos_variables_are_honoured)
{
    seen s;
    setenv("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "0", 1);
    cr_assert(run_with(NULL, HEAP, &s) == 0);
    cr_assert(out_len[0] + out_len[1] + out_len[2] == 0 && s.kernel_page[0] == (size_t)sysconf(_SC_PAGESIZE), "%s", out_text[2]);
    setenv("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "yes", 1);
    setenv("SHMEM_SYMMETRIC_HEAP_PAGE_SIZE", "2M", 1);
    cr_assert(run_with(NULL, HEAP, &s) == 0);
    if (s.kernel_page[0] != HUGE_2M)
        cr_assert(strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES=yes SHMEM_SYMMETRIC_HEAP_PAGE_SIZE=2M"), "%s", out_text[2]);
    unsetenv("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES");
    unsetenv("SHMEM_SYMMETRIC_HEAP_PAGE_SIZE");
}

static void bad_value(const char *var, const char *value, const char *message)
{
    seen s;
    setenv(var, value, 1);
    cr_assert(run_with(NULL, HEAP, &s) == 1, "%s=%s was accepted", var, value);
    unsetenv(var);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_HUGE_PAGES_BAD) + out_said(SHMALLOC_MSG_OPTION_BAD), 1, "%s",
                 out_text[2]);
    cr_assert(strstr(out_text[2], message), "no \"%s\" in:\n%s", message, out_text[2]);
}

Test(hugepages, bad_values_name_the_variable_and_the_value)
{
    bad_value("SHMALLOC_HUGE_PAGES", "3M", "shmalloc: SHMALLOC_HUGE_PAGES=\"3M\" is not auto, off or a huge page size");
    bad_value("SHMALLOC_HUGE_PAGES", "yes", "shmalloc: SHMALLOC_HUGE_PAGES=\"yes\" is not auto, off");
    bad_value("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "maybe",
              "shmalloc: SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES=\"maybe\" is not a boolean");
    bad_value("SHMEM_SYMMETRIC_HEAP_PAGE_SIZE", "4K", "shmalloc: SHMEM_SYMMETRIC_HEAP_PAGE_SIZE=\"4K\" is not a huge page size");
}
