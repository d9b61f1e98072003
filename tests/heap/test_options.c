/* The table of run-time options: every variable read from one place,
   checked by its kind, refused with a message naming it; misspelt
   SHMALLOC_* variables reported once; a layer's rows join the table (here
   the pthreads transport's, and the test's own).  That the documents list
   exactly the table's variables is tests/checks/docs_check.sh's. */
#include "test_support.h"
#include "transports/shmalloc_pthreads.h"

static int read_quietly(void)
{
    int rc;
    cr_assert(shmalloc_pthreads_options() == 0);
    capture_start();
    rc = shmalloc_options_read(NULL);
    capture_stop();
    return rc;
}

static const shmalloc_option *opt(int id) { return &shmalloc_options()[id]; }

/* A transport's row, by its name. */
static const shmalloc_option *row(const char *name)
{
    int id = shmalloc_option_find(name);
    cr_assert(id >= 0, "%s is not in the table", name);
    return opt(id);
}

/* A layer of the test's own, and its rows' places once added. */
static const shmalloc_option test_rows[] = {
    {"TESTLAYER_SWITCH", {NULL, NULL}, SHMALLOC_KIND_SWITCH, "0", "a test layer's switch", NULL, NULL, 0},
    {"TESTLAYER_BIT", {"TESTLAYER_OLD_BIT", NULL}, SHMALLOC_KIND_BIT, "1", "a test layer's bit", NULL, NULL, 0},
};
enum { TEST_SWITCH, TEST_BIT };

static int add_test_rows(void) { return shmalloc_options_add(test_rows, 2); }

Test(options, unset_variables_take_their_fallbacks)
{
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_SIZE)->value, (uint64_t)512 << 20);
    cr_assert_null(opt(SHMALLOC_OPT_HEAP_SIZE)->source);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_MAX)->value, 0);
    cr_assert_eq(opt(SHMALLOC_OPT_DEBUG)->value, 0);
    cr_assert_eq(row("SHMALLOC_TIMEOUT")->value, 60);
    cr_assert_eq(out_text[2][0], 0, "%s", out_text[2]);
}

Test(options, older_names_are_read_in_turn_when_the_first_is_unset)
{
    setenv("SMA_SYMMETRIC_SIZE", "3M", 1);
    cr_assert(read_quietly() == 0);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_SIZE)->value, (uint64_t)3 << 20);
    cr_assert(!strcmp(opt(SHMALLOC_OPT_HEAP_SIZE)->source, "SMA_SYMMETRIC_SIZE"));
    setenv("SHMEM_SYMMETRIC_SIZE", "2M", 1);
    cr_assert(read_quietly() == 0);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_SIZE)->value, (uint64_t)2 << 20);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "1.5M", 1);
    cr_assert(read_quietly() == 0);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_SIZE)->value, (uint64_t)3 << 19);
    cr_assert(!strcmp(opt(SHMALLOC_OPT_HEAP_SIZE)->source, "SHMEM_SYMMETRIC_HEAP_SIZE"));
}

/* One bad value of each kind: refused, named with its value, the fallback
   standing, and every other entry still read. */
static const struct bad_value {
    const char *name, *text, *message;
} bad_values[] = {
    {"SHMEM_SYMMETRIC_HEAP_SIZE", "12Q", "is not a heap size: expected a positive number"},
    {"SHMALLOC_HEAP_MAX", "lots", "is not a heap size: expected 0 (no growth)"},
    {"SHMALLOC_TIMEOUT", "0", "is not a timeout"},
    {"SHMALLOC_TIMEOUT", "1.5", "is not a timeout"},
    {"SHMALLOC_DEBUG", "yes", "is not a switch: expected 0 (off) or 1 to 9 (on)"},
    {"TESTLAYER_SWITCH", "10", "is not a switch"},
    {"TESTLAYER_BIT", "2", "is not 0 or 1"},
    {"SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "maybe", "is not a boolean"},
};

Test(options, a_bad_value_of_each_kind_is_refused_with_a_message_naming_it)
{
    size_t i;
    cr_assert(add_test_rows() >= 0);
    for (i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        const struct bad_value *b = &bad_values[i];
        char want[256];
        setenv("SHMALLOC_HEAP_MAX", "64G", 1); /* a good one, read all the same */
        setenv(b->name, b->text, 1);
        cr_assert(read_quietly() == -1, "%s=%s accepted", b->name, b->text);
        snprintf(want, sizeof want, "shmalloc: %s=\"%s\" %s", b->name, b->text, b->message);
        cr_assert(strstr(out_text[2], want), "expected \"%s\" in \"%s\"", want, out_text[2]);
        cr_assert(!strcmp(row(b->name)->text, row(b->name)->fallback), "%s: the fallback stands", b->name);
        if (strcmp(b->name, "SHMALLOC_HEAP_MAX")) cr_assert_eq(opt(SHMALLOC_OPT_HEAP_MAX)->value, (uint64_t)64 << 30);
        unsetenv(b->name);
        unsetenv("SHMALLOC_HEAP_MAX");
    }
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
}

Test(options, switches_and_booleans_read_as_documented)
{
    setenv("SHMALLOC_DEBUG", "3", 1);
    setenv("TESTLAYER_OLD_BIT", "0", 1);
    cr_assert(add_test_rows() >= 0);
    setenv("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "Yes", 1);
    setenv("SHMALLOC_HEAP_MAX", "0", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_DEBUG)->value, 1);
    cr_assert_eq(row("TESTLAYER_BIT")->value, 0);
    cr_assert(!strcmp(row("TESTLAYER_BIT")->source, "TESTLAYER_OLD_BIT"));
    cr_assert_eq(row("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES")->value, 1);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_MAX)->value, 0);
    setenv("SHMALLOC_DEBUG", "", 1);
    setenv("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "off", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_DEBUG)->value, 0);
    cr_assert_eq(row("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES")->value, 0);
}

Test(options, a_value_the_program_sets_stands_until_handed_back)
{
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "abc", 1); /* not read while the program's value stands */
    cr_assert(shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, "4M") == 0);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_SIZE)->value, (uint64_t)4 << 20);
    cr_assert(!strcmp(opt(SHMALLOC_OPT_HEAP_SIZE)->source, "program"));
    capture_start();
    cr_assert(shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, NULL) == -1, "back to the environment's bad value");
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE=\"abc\" is not a heap size"), "%s", out_text[2]);
    cr_assert(shmalloc_option_set(shmalloc_option_count(), "1") == -1, "no such entry");
}

Test(options, a_misspelt_variable_is_reported_once_with_the_nearest_name)
{
    char *env[] = {"PATH=/bin", "SHMALLOC_HEAP_MAXX=1G", "SHMALLOC_TEST_ANYTHING=1", "SHMALLOC_DEBUG=1",
                   "SHMALLOC_NONSENSE_VARIABLE=2", NULL};
    capture_start();
    cr_assert(shmalloc_options_read(env) == 0);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_UNKNOWN), 2, "%s", out_text[2]);
    assert_said(OPTION_UNKNOWN, "SHMALLOC_HEAP_MAXX", " (did you mean ", "SHMALLOC_HEAP_MAX", "?)", "");
    assert_said(OPTION_UNKNOWN, "SHMALLOC_NONSENSE_VARIABLE", "", "", "", "");
    cr_assert_null(strstr(out_text[2], "SHMALLOC_TEST_ANYTHING"), "the test suite's own variables are not ours");
    cr_assert_null(strstr(out_text[2], "SHMALLOC_DEBUG"), "a known variable is not reported");
    capture_start();
    cr_assert(shmalloc_options_read(env) == 0);
    capture_stop();
    cr_assert_eq(out_text[2][0], 0, "reported a second time: %s", out_text[2]);
}

/* Near misses of every name in the table are reported with it; other
   libraries' variables, SHMEM_* ones too, are not. */
static const struct near_miss {
    const char *set, *meant; /* meant NULL: not to be reported */
} near_misses[] = {
    {"SHMEM_SYMMETRIC_HEAP_SZE", "SHMEM_SYMMETRIC_HEAP_SIZE"},
    {"SHMEN_SYMMETRIC_HEAP_SIZE", "SHMEM_SYMMETRIC_HEAP_SIZE"},
    {"SHMEM_SYMETRIC_SIZE", "SHMEM_SYMMETRIC_SIZE"},
    {"SMA_SYMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"},
    {"SHMEM_DEBU", "SHMEM_DEBUG"},
    {"SHMEM_INFOO", "SHMEM_INFO"},
    {"SHMEM_VERSON", "SHMEM_VERSION"},
    {"SHMEM_SYMMETRIC_HEAP_USE_HUGEPAGES", "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES"},
    {"SHMEM_SYMMETRIC_HEAP_PAGESIZE", "SHMEM_SYMMETRIC_HEAP_PAGE_SIZE"},
    {"SHMEM_BOUNCE_SIZE", NULL},         /* Sandia OpenSHMEM's */
    {"SHMEM_OFI_PROVIDER", NULL},
    {"SHMEM_DEBUG_FILE", NULL},
    {"SHMEM_TRAP_ON_ABORT", NULL},
    {"SMA_VERSION", NULL},               /* Cray's */
    {"SMA_INFO", NULL},
    {"OMPI_MCA_memheap_base_size", NULL}, /* Open MPI's */
    {"OSHMEM_VERSION", NULL},
    {"FI_PROVIDER_PATH", NULL},          /* libfabric's */
    {"FI_TCP_IFACE", NULL},
    {"FI_LOG_LEVEL", NULL},
    {"SLURM_JOB_ID", NULL},
    {"PMIX_RANK", NULL},
    {"SHMEM_SYMMETRIC_HEAP_SIZE", NULL}, /* the table's own */
    {"SMA_SYMMETRIC_SIZE", NULL},
};

Test(options, near_misses_of_every_name_are_reported_and_other_libraries_variables_are_not)
{
    char *env[64], line[64][96], want[200];
    size_t n = sizeof near_misses / sizeof near_misses[0], i;
    cr_assert(n < 64);
    cr_assert(shmalloc_pthreads_options() == 0); /* the huge pages' names are the mapping's */
    for (i = 0; i < n; i++) {
        snprintf(line[i], sizeof line[i], "%s=8M", near_misses[i].set);
        env[i] = line[i];
    }
    env[n] = NULL;
    capture_start();
    shmalloc_options_read(env);
    capture_stop();
    for (i = 0; i < n; i++) {
        if (near_misses[i].meant)
            assert_said(OPTION_UNKNOWN, near_misses[i].set, " (did you mean ", near_misses[i].meant, "?)", "");
        snprintf(want, sizeof want, "shmalloc: %s is set", near_misses[i].set);
        if (!near_misses[i].meant) cr_assert_null(strstr(out_text[2], want), "%s was reported:\n%s", want, out_text[2]);
    }
}

/* A layer's rows join the table after the heap's and the transport's:
   added once, read from the environment, listed by SHMEM_INFO, known to
   the near-miss check; the table refuses rows it has no room for. */
Test(options, a_layers_rows_join_the_table_once)
{
    static shmalloc_option filler[SHMALLOC_OPT_MAX];
    char *env[] = {"TESTLAYER_SWTCH=1", NULL};
    int id, count;
    setenv("SHMEM_INFO", "1", 1);
    setenv("TESTLAYER_SWITCH", "7", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    count = shmalloc_option_count();
    cr_assert(count > SHMALLOC_OPT_CORE_COUNT, "the transport's rows follow the heap's");
    cr_assert_eq(shmalloc_option_find("TESTLAYER_BIT"), -1);
    id = add_test_rows();
    cr_assert_eq(id, count, "a layer's rows follow those already there");
    cr_assert_eq(add_test_rows(), id, "added again: the same id, no new row");
    cr_assert_eq(shmalloc_option_count(), count + 2);
    cr_assert_eq(shmalloc_option_find("TESTLAYER_BIT"), id + TEST_BIT);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(id + TEST_SWITCH)->value, 1);
    capture_start();
    shmalloc_options_announce(0);
    capture_stop();
    cr_assert(strstr(out_text[1], "  TESTLAYER_SWITCH=7 (from TESTLAYER_SWITCH)\n      a test layer's switch\n"),
              "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  SHMALLOC_TIMEOUT=60 (the default)\n"), "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  SHMALLOC_HUGE_PAGES=off (the default)\n"), "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  SHMEM_SYMMETRIC_HEAP_SIZE=512M (the default)\n"), "%s", out_text[1]);
    cr_assert_null(strstr(out_text[1], "SHMALLOC_PMIX_OFI_"), "pthreads lists the PMIx transport's:\n%s", out_text[1]);
    capture_start();
    shmalloc_options_read(env);
    capture_stop();
    cr_assert(strstr(out_text[2], "TESTLAYER_SWTCH is set, but shmalloc has no such variable (did you mean "
                                  "TESTLAYER_SWITCH?)"), "%s", out_text[2]);
    filler[0].name = "TESTLAYER_FILLER";
    cr_assert_eq(shmalloc_options_add(filler, SHMALLOC_OPT_MAX), -1, "more rows than the table holds");
    cr_assert_eq(shmalloc_option_count(), count + 2, "and none of them added");
    unsetenv("SHMEM_INFO");
    unsetenv("TESTLAYER_SWITCH");
}

/* OpenSHMEM's own variables: SHMEM_DEBUG is read for SHMALLOC_DEBUG when
   that is unset; SHMEM_VERSION and SHMEM_INFO make PE 0 print the version,
   and with SHMEM_INFO every variable, its value and where it came from. */
Test(options, shmem_debug_version_and_info_are_read_and_announced_by_pe_0)
{
    char want[64];
    int id;
    setenv("SHMEM_DEBUG", "1", 1);
    setenv("SHMEM_VERSION", "yes", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_DEBUG)->value, 1);
    cr_assert(!strcmp(opt(SHMALLOC_OPT_DEBUG)->source, "SHMEM_DEBUG"), "%s", opt(SHMALLOC_OPT_DEBUG)->source);
    snprintf(want, sizeof want, "shmalloc %s: OpenSHMEM 1.5 symmetric heap\n", shmalloc_version());
    capture_start();
    shmalloc_options_announce(1);
    capture_stop();
    cr_assert_eq(out_len[1] + out_len[2], 0, "PE 1 printed: %s", out_text[1]);
    capture_start();
    shmalloc_options_announce(0);
    capture_stop();
    cr_assert(!strcmp(out_text[1], want), "%s", out_text[1]);
    setenv("SHMEM_INFO", "1", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    capture_start();
    shmalloc_options_announce(0);
    capture_stop();
    cr_assert(strstr(out_text[1], want) == out_text[1], "%s", out_text[1]);
    for (id = 0; id < shmalloc_option_count(); id++) {
        snprintf(want, sizeof want, "  %s=", opt(id)->name);
        cr_assert(strstr(out_text[1], want), "SHMEM_INFO leaves out %s:\n%s", opt(id)->name, out_text[1]);
    }
    cr_assert(strstr(out_text[1], "  SHMALLOC_DEBUG=1 (from SHMEM_DEBUG)\n"), "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  SHMALLOC_HEAP_MAX=0 (the default)\n"), "%s", out_text[1]);
    unsetenv("SHMEM_DEBUG");
    unsetenv("SHMEM_VERSION");
    unsetenv("SHMEM_INFO");
    cr_assert(read_quietly() == 0);
}

/* A value of 10 000 characters: the message quotes it cut short, with its
   length, and keeps the reason and the line's end; so does SHMEM_INFO's
   listing, and a line shmalloc_print has to cut still ends. */
Test(options, a_long_value_is_quoted_short_and_the_message_kept)
{
    static char value[10001];
    memset(value, 'x', 10000);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", value, 1);
    cr_assert(read_quietly() == -1);
    cr_assert(strstr(out_text[2], "shmalloc: SHMEM_SYMMETRIC_HEAP_SIZE=\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\" "
                                  "(10000 characters) is not a heap size: expected a positive number"),
              "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "e.g. 512M or 1.5G\n"), "the reason or the newline is cut: %s", out_text[2]);
    cr_assert(strstr(out_text[2], ", at most 64T, "), "the docs' words for the largest heap: %s", out_text[2]);
    unsetenv("SHMEM_SYMMETRIC_HEAP_SIZE");
    setenv("SHMALLOC_HUGE_PAGES", value, 1); /* a word, checked by its reader: listed as it is */
    setenv("SHMEM_INFO", "1", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    capture_start();
    shmalloc_options_announce(0);
    capture_stop();
    cr_assert(strstr(out_text[1], "  SHMALLOC_HUGE_PAGES=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (10000 "
                                  "characters) (from SHMALLOC_HUGE_PAGES)\n      off, auto"), "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  SHMEM_INFO=1 (from SHMEM_INFO)\n"), "the listing is cut: %s", out_text[1]);
    capture_start();
    shmalloc_print(2, SHMALLOC_MSG_CHECK_FINDING, "shmalloc_check: %s\n", value);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_CHECK_FINDING), 1);
    cr_assert_eq(out_len[2], 511, "%zu bytes", (size_t)out_len[2]);
    cr_assert(!strcmp(out_text[2] + 507, "...\n"), "%s", out_text[2] + 480);
    unsetenv("SHMALLOC_HUGE_PAGES");
    unsetenv("SHMEM_INFO");
}
