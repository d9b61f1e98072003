/* The table of run-time options: every variable read from one place,
   checked by its kind, refused with a message naming it; misspelt
   SHMALLOC_* variables reported once; the README's environment tables
   list exactly the table's variables. */
#include "test_support.h"


static int read_quietly(void)
{
    int rc;
    capture_start();
    rc = shmalloc_options_read(NULL);
    capture_stop();
    return rc;
}

static const shmalloc_option *opt(int id) { return &shmalloc_options()[id]; }

Test(options, unset_variables_take_their_fallbacks)
{
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_SIZE)->value, (uint64_t)512 << 20);
    cr_assert_null(opt(SHMALLOC_OPT_HEAP_SIZE)->source);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_MAX)->value, 0);
    cr_assert_eq(opt(SHMALLOC_OPT_DEBUG)->value, 0);
    cr_assert_eq(opt(SHMALLOC_OPT_BARRIER_TIMEOUT)->value, 60);
    cr_assert_eq(opt(SHMALLOC_OPT_PMIX_OFI_DIRECT)->value, 1);
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
    int id;
    const char *name, *text, *message;
} bad_values[] = {
    {SHMALLOC_OPT_HEAP_SIZE, "SHMEM_SYMMETRIC_HEAP_SIZE", "12Q", "is not a heap size: expected a positive number"},
    {SHMALLOC_OPT_HEAP_MAX, "SHMALLOC_HEAP_MAX", "lots", "is not a heap size: expected 0 (no growth)"},
    {SHMALLOC_OPT_BARRIER_TIMEOUT, "SHMALLOC_BARRIER_TIMEOUT", "0", "is not a timeout"},
    {SHMALLOC_OPT_BARRIER_TIMEOUT, "SHMALLOC_BARRIER_TIMEOUT", "1.5", "is not a timeout"},
    {SHMALLOC_OPT_DEBUG, "SHMALLOC_DEBUG", "yes", "is not a switch: expected 0 (off) or 1 to 9 (on)"},
    {SHMALLOC_OPT_VERBOSE, "SHMALLOC_VERBOSE", "10", "is not a switch"},
    {SHMALLOC_OPT_PMIX_OFI_DIRECT, "SHMALLOC_PMIX_OFI_DIRECT", "2", "is not 0 or 1"},
    {SHMALLOC_OPT_SOS_HUGE_PAGES, "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "maybe", "is not a boolean"},
};

Test(options, a_bad_value_of_each_kind_is_refused_with_a_message_naming_it)
{
    size_t i;
    for (i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        const struct bad_value *b = &bad_values[i];
        char want[256];
        setenv("SHMALLOC_HEAP_MAX", "64G", 1); /* a good one, read all the same */
        setenv(b->name, b->text, 1);
        cr_assert(read_quietly() == -1, "%s=%s accepted", b->name, b->text);
        snprintf(want, sizeof want, "shmalloc: %s=\"%s\" %s", b->name, b->text, b->message);
        cr_assert(strstr(out_text[2], want), "expected \"%s\" in \"%s\"", want, out_text[2]);
        cr_assert(!strcmp(opt(b->id)->text, opt(b->id)->fallback), "%s: the fallback stands", b->name);
        if (b->id != SHMALLOC_OPT_HEAP_MAX) cr_assert_eq(opt(SHMALLOC_OPT_HEAP_MAX)->value, (uint64_t)64 << 30);
        unsetenv(b->name);
        unsetenv("SHMALLOC_HEAP_MAX");
    }
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
}

Test(options, switches_and_booleans_read_as_documented)
{
    setenv("SHMALLOC_DEBUG", "3", 1);
    setenv("SHMALLOC_PMIX_OFI_DIRECT", "0", 1);
    setenv("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "Yes", 1);
    setenv("SHMALLOC_HEAP_MAX", "0", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_DEBUG)->value, 1);
    cr_assert_eq(opt(SHMALLOC_OPT_PMIX_OFI_DIRECT)->value, 0);
    cr_assert_eq(opt(SHMALLOC_OPT_SOS_HUGE_PAGES)->value, 1);
    cr_assert_eq(opt(SHMALLOC_OPT_HEAP_MAX)->value, 0);
    setenv("SHMALLOC_DEBUG", "", 1);
    setenv("SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "off", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    cr_assert_eq(opt(SHMALLOC_OPT_DEBUG)->value, 0);
    cr_assert_eq(opt(SHMALLOC_OPT_SOS_HUGE_PAGES)->value, 0);
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
    cr_assert(shmalloc_option_set(SHMALLOC_OPT_COUNT, "1") == -1, "no such entry");
}

Test(options, a_misspelt_variable_is_reported_once_with_the_nearest_name)
{
    char *env[] = {"PATH=/bin", "SHMALLOC_HEAP_MAXX=1G", "SHMALLOC_TEST_ANYTHING=1", "SHMALLOC_DEBUG=1",
                   "SHMALLOC_NONSENSE_VARIABLE=2", NULL};
    capture_start();
    cr_assert(shmalloc_options_read(env) == 0);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_UNKNOWN), 2, "%s", out_text[2]);
    assert_said(OPTION_UNKNOWN, "SHMALLOC_HEAP_MAXX", " (did you mean ", "SHMALLOC_HEAP_MAX", "?)");
    assert_said(OPTION_UNKNOWN, "SHMALLOC_NONSENSE_VARIABLE", "", "", "");
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
    {"FI_PROVIDR", "FI_PROVIDER"},
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
    {"FI_PROVIDER", NULL},
};

Test(options, near_misses_of_every_name_are_reported_and_other_libraries_variables_are_not)
{
    char *env[64], line[64][96], want[200];
    size_t n = sizeof near_misses / sizeof near_misses[0], i;
    cr_assert(n < 64);
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
            assert_said(OPTION_UNKNOWN, near_misses[i].set, " (did you mean ", near_misses[i].meant, "?)");
        snprintf(want, sizeof want, "shmalloc: %s is set", near_misses[i].set);
        if (!near_misses[i].meant) cr_assert_null(strstr(out_text[2], want), "%s was reported:\n%s", want, out_text[2]);
    }
}

/* SHMEM_INFO lists what the running transport reads: FI_PROVIDER and the
   PMIx transport's own variables under PMIx, none of them under pthreads. */
Test(options, shmem_info_lists_the_variables_of_the_running_transport)
{
    static const char *const pmix_only[] = {"FI_PROVIDER", "SHMALLOC_PMIX_OFI_ANY_ADDRESS", "SHMALLOC_PMIX_OFI_DIRECT",
                                            "SHMALLOC_PMIX_OFI_NODE_BARRIER", "SHMALLOC_VERBOSE"};
    char want[64];
    size_t i;
    setenv("SHMEM_INFO", "1", 1);
    setenv("FI_PROVIDER", "shm", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    capture_start();
    shmalloc_options_announce(0, SHMALLOC_TRANSPORT_PMIX_OFI);
    capture_stop();
    for (i = 0; i < sizeof pmix_only / sizeof pmix_only[0]; i++) {
        snprintf(want, sizeof want, "  %s=", pmix_only[i]);
        cr_assert(strstr(out_text[1], want), "PMIx leaves out %s:\n%s", pmix_only[i], out_text[1]);
    }
    cr_assert(strstr(out_text[1], "  FI_PROVIDER=shm (from FI_PROVIDER)\n"), "%s", out_text[1]);
    capture_start();
    shmalloc_options_announce(0, SHMALLOC_TRANSPORT_PTHREADS);
    capture_stop();
    for (i = 0; i < sizeof pmix_only / sizeof pmix_only[0]; i++) {
        snprintf(want, sizeof want, "  %s=", pmix_only[i]);
        cr_assert_null(strstr(out_text[1], want), "pthreads lists %s:\n%s", pmix_only[i], out_text[1]);
    }
    cr_assert(strstr(out_text[1], "  SHMALLOC_BARRIER_TIMEOUT=60 (the default)\n"), "%s", out_text[1]);
    cr_assert(strstr(out_text[1], "  SHMEM_SYMMETRIC_HEAP_SIZE=512M (the default)\n"), "%s", out_text[1]);
    unsetenv("SHMEM_INFO");
    unsetenv("FI_PROVIDER");
}

/* The variables named in the first cell of the README's tables. */
static size_t readme_variables(char names[][64], size_t cap)
{
    FILE *f = fopen("README.md", "r");
    char line[2048];
    size_t n = 0;
    cr_assert(f, "README.md (the tests run from the repository's top)");
    while (fgets(line, sizeof line, f)) {
        char *p = line + 1, *end = strchr(line + 1, '|');
        if (line[0] != '|' || !end) continue;
        *end = 0;
        while ((p = strchr(p, '`')) && n < cap) {
            size_t len = strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
            if (p[1 + len] == '`' && len < 64 &&
                (!strncmp(p + 1, "SHMALLOC_", 9) || !strncmp(p + 1, "SHMEM_", 6) || !strncmp(p + 1, "SMA_", 4) ||
                 !strncmp(p + 1, "FI_", 3))) {
                memcpy(names[n], p + 1, len);
                names[n++][len] = 0;
            }
            p = strchr(p + 1, '`');
            if (!p) break;
            p++;
        }
    }
    fclose(f);
    return n;
}

static int in_table(const char *name)
{
    int id;
    for (id = 0; id < SHMALLOC_OPT_COUNT; id++) {
        const shmalloc_option *o = opt(id);
        if (!strcmp(o->name, name) || (o->alias[0] && !strcmp(o->alias[0], name)) ||
            (o->alias[1] && !strcmp(o->alias[1], name)))
            return 1;
    }
    return 0;
}

Test(options, the_readme_tables_list_exactly_the_table)
{
    static char names[128][64];
    size_t n = readme_variables(names, 128), i;
    int id, k;
    cr_assert(n >= SHMALLOC_OPT_COUNT, "only %zu variables in the README's tables", n);
    for (i = 0; i < n; i++)
        cr_assert(in_table(names[i]), "the README lists %s, which the options table does not have", names[i]);
    for (id = 0; id < SHMALLOC_OPT_COUNT; id++)
        for (k = -1; k < 2; k++) {
            const char *name = k < 0 ? opt(id)->name : opt(id)->alias[k];
            int listed = 0;
            if (!name) continue;
            for (i = 0; i < n; i++) listed |= !strcmp(names[i], name);
            cr_assert(listed, "%s is in the options table but in no README table", name);
        }
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
    shmalloc_options_announce(1, SHMALLOC_TRANSPORT_ALL);
    capture_stop();
    cr_assert_eq(out_len[1] + out_len[2], 0, "PE 1 printed: %s", out_text[1]);
    capture_start();
    shmalloc_options_announce(0, SHMALLOC_TRANSPORT_ALL);
    capture_stop();
    cr_assert(!strcmp(out_text[1], want), "%s", out_text[1]);
    setenv("SHMEM_INFO", "1", 1);
    cr_assert(read_quietly() == 0, "%s", out_text[2]);
    capture_start();
    shmalloc_options_announce(0, SHMALLOC_TRANSPORT_ALL);
    capture_stop();
    cr_assert(strstr(out_text[1], want) == out_text[1], "%s", out_text[1]);
    for (id = 0; id < SHMALLOC_OPT_COUNT; id++) {
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
    shmalloc_options_announce(0, SHMALLOC_TRANSPORT_ALL);
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
