/* Heap sizes from text and from the environment: the suffixes accepted,
   the values refused, which variable wins, and the message naming a bad
   one. */
#include "test_support.h"

/* ---- heap size parsing ----------------------------------------------------- */

Test(parse_size, accepts_suffixes_in_either_case_and_decimals)
{
    static const struct {
        const char *text;
        size_t value;
    } good[] = {
        {"512M", (size_t)512 << 20},
        {"1.5G", (size_t)3 << 29},
        {"1.5g", (size_t)3 << 29},
        {"1k", 1024},
        {"1K", 1024},
        {"2T", (size_t)2 << 40},
        {"2t", (size_t)2 << 40},
        {"4096", 4096},
        {"512m", (size_t)512 << 20},
        {"0.5k", 512},
        {"64T", (size_t)64 << 40},
        {"1", 1},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t v = 0;
        int r = shmalloc_parse_size(good[i].text, &v);
        if (good[i].value > ((size_t)1 << SHMALLOC_MAX_LOG2)) { /* a smaller configured cap */
            cr_assert_eq(r, -1, "\"%s\" above 2^SHMALLOC_MAX_LOG2 accepted", good[i].text);
            continue;
        }
        cr_assert_eq(r, 0, "\"%s\" refused", good[i].text);
        cr_assert_eq(v, good[i].value, "\"%s\" = %zu, expected %zu", good[i].text, v,
                     good[i].value);
    }
}

Test(parse_size, refuses_empty_signed_unknown_suffix_zero_and_oversized_values)
{
    static const char *bad[] = {"abc", "-1", "1Q", "99999T", "", "0", "1.5.5G", " ",
                                "65T", "0K", "M", "1MM", "1e3", "0x10", "18446744073709551616",
                                "99999999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 777;
        int r = shmalloc_parse_size(bad[i], &v);
        cr_assert_eq(r, -1, "\"%s\" accepted as %zu", bad[i], v);
    }
}

Test(env_size, default_is_512MiB_when_no_variable_is_set)
{
    clear_size_env();
    size_t v = 0;
    cr_assert_eq(size_from_table(&v), 0);
    cr_assert_eq(v, (size_t)512 << 20);
    cr_assert_eq(v, SHMALLOC_DEFAULT_HEAP_SIZE);
}

Test(env_size, each_variable_alone_is_read)
{
    static const char *vars[] = {"SHMEM_SYMMETRIC_HEAP_SIZE", "SHMEM_SYMMETRIC_SIZE",
                                 "SMA_SYMMETRIC_SIZE"};
    for (size_t i = 0; i < 3; i++) {
        clear_size_env();
        setenv(vars[i], "3M", 1);
        size_t v = 0;
        cr_assert_eq(size_from_table(&v), 0, "%s=3M refused", vars[i]);
        cr_assert_eq(v, 3 * MIB, "%s=3M gave %zu", vars[i], v);
    }
}

Test(env_size, heap_size_beats_symmetric_size_beats_sma)
{
    size_t v = 0;
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "1M", 1);
    setenv("SHMEM_SYMMETRIC_SIZE", "2M", 1);
    setenv("SMA_SYMMETRIC_SIZE", "3M", 1);
    cr_assert_eq(size_from_table(&v), 0);
    cr_assert_eq(v, 1 * MIB);
    unsetenv("SHMEM_SYMMETRIC_HEAP_SIZE");
    cr_assert_eq(size_from_table(&v), 0);
    cr_assert_eq(v, 2 * MIB);
    unsetenv("SHMEM_SYMMETRIC_SIZE");
    cr_assert_eq(size_from_table(&v), 0);
    cr_assert_eq(v, 3 * MIB);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "4M", 1);
    cr_assert_eq(size_from_table(&v), 0);
    cr_assert_eq(v, 4 * MIB);
}

static void bad_env_case(const char *var, const char *value)
{
    clear_size_env();
    setenv(var, value, 1);
    size_t v = 0;
    capture_start();
    int r = size_from_table(&v);
    capture_stop();
    cr_assert_eq(r, -1, "%s=\"%s\" accepted as %zu", var, value, v);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 1, "no message on stream 2 for %s=\"%s\"", var, value);
    cr_assert(strstr(out_text[2], var), "message does not name %s: %s", var, out_text[2]);
    if (value[0] && value[0] != ' ')
        cr_assert(strstr(out_text[2], value), "message does not quote \"%s\": %s", value,
                  out_text[2]);
}

Test(env_size, bad_value_is_an_error_naming_the_variable_and_the_value)
{
    bad_env_case("SHMEM_SYMMETRIC_HEAP_SIZE", "12Q");
    bad_env_case("SHMEM_SYMMETRIC_SIZE", "abc");
    bad_env_case("SMA_SYMMETRIC_SIZE", "1.5.5G");
    bad_env_case("SHMEM_SYMMETRIC_SIZE", "99999T");
    bad_env_case("SHMEM_SYMMETRIC_HEAP_SIZE", "-1");
    bad_env_case("SHMEM_SYMMETRIC_HEAP_SIZE", "0");
    bad_env_case("SHMEM_SYMMETRIC_SIZE", "");
    bad_env_case("SMA_SYMMETRIC_SIZE", " ");
}

Test(env_size, bad_value_of_the_winning_variable_is_an_error_even_if_others_are_good)
{
    clear_size_env();
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "lots", 1);
    setenv("SHMEM_SYMMETRIC_SIZE", "2M", 1);
    size_t v = 0;
    capture_start();
    int r = size_from_table(&v);
    capture_stop();
    cr_assert_eq(r, -1);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE") && strstr(out_text[2], "lots"),
              "%s", out_text[2]);
}

/* ---- the heap reads no variable -------------------------------------------- */
/* A value each kind accepts, other than what the configs below give. */
static const char *other_value(int kind)
{
    static const char *const values[SHMALLOC_KIND_COUNT] = {"3M", "64M", "5", "1", "1", "yes", "x", "separate"};
    return values[kind];
}

/* Every variable of the table and each alias: text no kind but a word
   takes (bad), or a value the heap must not take from it (other). */
static void set_every_variable(int bad)
{
    int id, a;
    for (id = 0; id < shmalloc_option_count(); id++) {
        const shmalloc_option *o = &shmalloc_options()[id];
        const char *v = bad ? "12Q" : other_value(o->kind);
        setenv(o->name, v, 1);
        for (a = 0; a < 2; a++)
            if (o->alias[a]) setenv(o->alias[a], v, 1);
    }
}

#define AS_CONFIG 0 /* shmalloc_heap_create_with(config) */
#define AS_PLAIN 1  /* shmalloc_heap_create: the defaults */
#define AS_GROWABLE 2 /* shmalloc_heap_create_growable(config's nominal): the defaults else */

/* A heap made `how`, over 4 MiB, shows c: where its metadata lives, its
   size, debug mode (a leak listed at destroy) and the variable its
   out-of-memory report names. */
static void expect_heap_has(int how, const shmalloc_heap_config *c)
{
    size_t bytes = shmalloc_heap_bytes(4 * MIB);
    char *mem = (char *)map_aligned(bytes, MIB);
    const shmalloc_transport *tp = shmalloc_transport_single();
    long err = 1;
    shmalloc_info i;
    shmalloc_heap *h = how == AS_CONFIG ? shmalloc_heap_create_with(mem, bytes, c, tp, &err)
                       : how == AS_PLAIN ? shmalloc_heap_create(mem, bytes, tp, &err)
                                         : shmalloc_heap_create_growable(mem, bytes, c->nominal, tp, &err);
    int inside = (char *)h >= mem && (char *)h < mem + bytes;
    cr_assert(h != NULL && err == SHMEM_MALLOC_OK, "made %d: error %ld", how, err);
    cr_assert_eq(inside, c->metadata == SHMALLOC_METADATA_INLINE, "made %d: metadata %s the memory", how,
                 inside ? "in" : "outside");
    cr_assert(shmalloc_heap_info(h, &i) == 0);
    if (c->nominal == SIZE_MAX) cr_assert(i.heap_size >= 4 * MIB, "made %d: %zu bytes", how, i.heap_size);
    else cr_assert(i.heap_size >= c->nominal && i.heap_size < 2 * c->nominal, "made %d: %zu", how, i.heap_size);
    capture_start();
    cr_assert_null(shmalloc_heap_malloc(h, 8 * MIB, &err));
    cr_assert_not_null(shmalloc_heap_malloc(h, 100, &err));
    cr_assert(shmalloc_heap_check(h, 0) == 0);
    shmalloc_heap_destroy(h); /* with the block: debug mode lists it */
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_HEAP_LEAKS_BEGIN), (size_t)c->debug, "made %d:\n%s", how, out_text[2]);
    if (c->size_var)
        cr_assert(strstr(out_text[2], "set MY_RUNTIME_HEAP_SIZE to at least"), "made %d:\n%s", how, out_text[2]);
    else
        cr_assert(strstr(out_text[2], "the program sets the heap's size"), "made %d:\n%s", how, out_text[2]);
    munmap(mem, bytes);
}

static const shmalloc_heap_config configs[] = {
    {MIB, 0, "MY_RUNTIME_HEAP_SIZE", SHMALLOC_METADATA_INLINE, NULL},
    {SIZE_MAX, 1, NULL, SHMALLOC_METADATA_SEPARATE, NULL},
};

/* Bad text in every variable, then good values unlike the config's, read
   into the table, then bad ones read: the heap has its config each time. */
Test(heap_config, the_heap_has_exactly_its_config_whatever_the_variables_say)
{
    size_t k;
    set_every_variable(1);
    for (k = 0; k < 2; k++) expect_heap_has(AS_CONFIG, &configs[k]);
    set_every_variable(0);
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    cr_assert(shmalloc_options()[SHMALLOC_OPT_DEBUG].value == 1 &&
              shmalloc_options()[SHMALLOC_OPT_METADATA].value == SHMALLOC_METADATA_SEPARATE &&
              shmalloc_options()[SHMALLOC_OPT_HEAP_SIZE].value == 3 * MIB, "the table holds the other values");
    for (k = 0; k < 2; k++) expect_heap_has(AS_CONFIG, &configs[k]);
    set_every_variable(1);
    capture_start();
    cr_assert_eq(shmalloc_options_read(NULL), -1);
    capture_stop();
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), (size_t)shmalloc_option_count(), "%s", out_text[2]);
    for (k = 0; k < 2; k++) expect_heap_has(AS_CONFIG, &configs[k]);
}

/* Without a config: debug off, inline metadata, no size variable, though
   the table says debug, separate and a size variable. */
Test(heap_config, a_heap_made_without_a_config_has_the_defaults_whatever_the_table_says)
{
    const shmalloc_heap_config plain = {SIZE_MAX, 0, NULL, SHMALLOC_METADATA_INLINE, NULL};
    const shmalloc_heap_config growable = {MIB, 0, NULL, SHMALLOC_METADATA_INLINE, NULL};
    set_every_variable(0);
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    expect_heap_has(AS_PLAIN, &plain);
    expect_heap_has(AS_GROWABLE, &growable);
}

/* What a runtime creates its heap with: the table's values, and the
   variable in force for the size. */
Test(heap_config, the_options_fill_a_config_with_the_table_values)
{
    shmalloc_heap_config c;
    clear_size_env();
    set_every_variable(0);
    cr_assert_eq(shmalloc_options_read(NULL), 0);
    shmalloc_options_heap_config(&c, MIB, 0);
    cr_assert(c.nominal == MIB && c.debug == 1 && c.metadata == SHMALLOC_METADATA_SEPARATE && !c.memops);
    cr_assert(c.size_var && !strcmp(c.size_var, "SHMEM_SYMMETRIC_HEAP_SIZE"), "%s", c.size_var);
    shmalloc_options_heap_config(&c, MIB, 1);
    cr_assert(c.size_var && !strcmp(c.size_var, "SHMALLOC_HEAP_MAX"), "a heap that grows: its largest size's variable");
    cr_assert(shmalloc_option_set(SHMALLOC_OPT_HEAP_SIZE, "2M") == 0);
    shmalloc_options_heap_config(&c, MIB, 0);
    cr_assert_null(c.size_var, "the program set the size");
}
