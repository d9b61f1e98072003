/* test_messages.c - a layer's own table of messages
   (shmalloc_messages_add): its IDs print through the output hook, are
   named by shmalloc_message_name, are no other layer's, and a table that
   cannot be added says why and changes nothing. */
#include "test_support.h"

#define RT_MESSAGES(X) \
    X(RT_NO_LINK, "rt: PE %d: no link to PE %d\n") \
    X(RT_SLOW, "rt: %s took %d s\n")
SHMALLOC_MESSAGE_LAYER(RT_MESSAGES, RT_MESSAGE_ROWS)
static const shmalloc_message rt_rows[] = {RT_MESSAGES(SHMALLOC_MESSAGE_ROW)};

#define NET_MESSAGES(X) X(NET_DOWN, "net: %s is down\n")
SHMALLOC_MESSAGE_LAYER(NET_MESSAGES, NET_MESSAGE_ROWS)
static const shmalloc_message net_rows[] = {NET_MESSAGES(SHMALLOC_MESSAGE_ROW)};

Test(messages, a_layers_table_gets_ids_that_print_and_are_named)
{
    int first = shmalloc_messages_add(rt_rows, RT_MESSAGE_ROWS);
    cr_assert(first >= SHMALLOC_MSG_COUNT, "first ID %d is among the core's", first);
    capture_start();
    shmalloc_print(2, SHMALLOC_MSG_IN(first, RT_NO_LINK), 3, 4);
    shmalloc_print(2, SHMALLOC_MSG_IN(first, RT_SLOW), "the fence", 7);
    capture_stop();
    cr_assert_eq(out_said(first + SHMALLOC_MSG_RT_SLOW), 1, "%s", out_text[2]);
    assert_said(RT_NO_LINK, 3, 4);
    assert_said(RT_SLOW, "the fence", 7);
    assert_named(first, "RT_NO_LINK");
    assert_named(first + 1, "RT_SLOW");
    cr_assert_null(shmalloc_message_name(first + 2));
    assert_named(SHMALLOC_MSG_HEAP_OOM, "HEAP_OOM");
    cr_assert_null(shmalloc_message_name(-1));
}

Test(messages, two_layers_get_ranges_that_do_not_collide)
{
    int rt = shmalloc_messages_add(rt_rows, RT_MESSAGE_ROWS), net = shmalloc_messages_add(net_rows, NET_MESSAGE_ROWS);
    cr_assert(rt >= SHMALLOC_MSG_COUNT && net >= SHMALLOC_MSG_COUNT, "rt %d, net %d", rt, net);
    cr_assert(net >= rt + RT_MESSAGE_ROWS || rt >= net + NET_MESSAGE_ROWS, "rt %d..%d, net %d", rt,
              rt + RT_MESSAGE_ROWS - 1, net);
    assert_named(net, "NET_DOWN");
    assert_named(rt, "RT_NO_LINK");
    /* a layer started again keeps its IDs */
    cr_assert_eq(shmalloc_messages_add(rt_rows, RT_MESSAGE_ROWS), rt);
    cr_assert_eq(shmalloc_messages_add(net_rows, NET_MESSAGE_ROWS), net);
}

/* Each bad table: -1, MESSAGES_BAD_TABLE with the cause, and no ID added. */
static void assert_refused(const shmalloc_message *rows, int count, const char *cause)
{
    int next = SHMALLOC_MSG_COUNT;
    while (shmalloc_message_name(next)) next++;
    capture_start();
    cr_assert_eq(shmalloc_messages_add(rows, count), -1, "%s: added", cause);
    capture_stop();
    assert_said(MESSAGES_BAD_TABLE, (const void *)rows, count, cause);
    cr_assert_null(shmalloc_message_name(next), "%s: ID %d is %s", cause, next, shmalloc_message_name(next));
}

Test(messages, a_bad_table_is_refused_with_its_cause)
{
    static const shmalloc_message no_text[] = {{"RT_NO_TEXT", NULL}};
    static const shmalloc_message taken[] = {{"RT_MINE", "rt\n"}, {"HEAP_OOM", "rt: out of memory\n"}};
    assert_refused(NULL, 1, "the rows are NULL");
    assert_refused(rt_rows, 0, "count must be 1..1024 (SHMALLOC_MESSAGE_ROWS_MAX)");
    assert_refused(rt_rows, SHMALLOC_MESSAGE_ROWS_MAX + 1, "count must be 1..1024 (SHMALLOC_MESSAGE_ROWS_MAX)");
    assert_refused(no_text, 1, "a row has no name or no text");
    assert_refused(taken, 2, "a row's name is another message's: each ID has its own name");
    assert_named(SHMALLOC_MSG_HEAP_OOM, "HEAP_OOM");
}

Test(messages, a_table_past_the_most_tables_is_refused)
{
    static shmalloc_message rows[SHMALLOC_MESSAGE_TABLES + 1][1];
    static char names[SHMALLOC_MESSAGE_TABLES + 1][24];
    int k, added = 0;
    for (k = 0; k <= SHMALLOC_MESSAGE_TABLES; k++) {
        snprintf(names[k], sizeof names[k], "RT_TABLE_%d", k);
        rows[k][0].name = names[k], rows[k][0].text = "rt\n";
    }
    for (k = 0; k < SHMALLOC_MESSAGE_TABLES; k++) added += shmalloc_messages_add(rows[k], 1) >= 0;
    cr_assert_eq(added, SHMALLOC_MESSAGE_TABLES);
    assert_refused(rows[SHMALLOC_MESSAGE_TABLES], 1,
                   "the process holds 16 tables already (SHMALLOC_MESSAGE_TABLES)");
}
