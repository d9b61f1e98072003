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
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
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
        cr_assert_eq(shmalloc_heap_size_from_env(&v), 0, "%s=3M refused", vars[i]);
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
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 1 * MIB);
    unsetenv("SHMEM_SYMMETRIC_HEAP_SIZE");
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 2 * MIB);
    unsetenv("SHMEM_SYMMETRIC_SIZE");
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 3 * MIB);
    setenv("SHMEM_SYMMETRIC_HEAP_SIZE", "4M", 1);
    cr_assert_eq(shmalloc_heap_size_from_env(&v), 0);
    cr_assert_eq(v, 4 * MIB);
}

static void bad_env_case(const char *var, const char *value)
{
    clear_size_env();
    setenv(var, value, 1);
    size_t v = 0;
    capture_start();
    int r = shmalloc_heap_size_from_env(&v);
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
    int r = shmalloc_heap_size_from_env(&v);
    capture_stop();
    cr_assert_eq(r, -1);
    cr_assert_eq(out_said(SHMALLOC_MSG_OPTION_BAD), 1, "%s", out_text[2]);
    cr_assert(strstr(out_text[2], "SHMEM_SYMMETRIC_HEAP_SIZE") && strstr(out_text[2], "lots"),
              "%s", out_text[2]);
}
