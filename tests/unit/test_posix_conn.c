/*
 * test_posix_conn.c - connection records, work lists and pending input
 * (src/platform/posix/conn.c).
 */
#include "test.h"

#include "platform/posix/conn.h"

#include <stdlib.h>

TEST(conn_lists_keep_order_and_remove_from_anywhere)
{
    tern_conn_list list;
    tern_conn *a = tern_conn_new(3), *b = tern_conn_new(4), *c = tern_conn_new(5);

    CHECK(a && b && c);
    tern_conn_list_init(&list, TERN_LIST_READY);
    tern_conn_list_push(&list, a);
    tern_conn_list_push(&list, b);
    tern_conn_list_push(&list, c);
    CHECK_EQ(list.count, 3);
    CHECK_EQ(b->list, TERN_LIST_READY);
    tern_conn_list_remove(&list, b);
    CHECK_EQ(b->list, TERN_LIST_NONE);
    CHECK_EQ(list.count, 2);
    CHECK(tern_conn_list_pop(&list) == a);
    tern_conn_list_remove(&list, c);
    CHECK(list.head == NULL && list.tail == NULL);
    CHECK(tern_conn_list_pop(&list) == NULL);
    tern_conn_list_push(&list, b);
    CHECK(list.head == b && list.tail == b);
    tern_conn_free(a);
    tern_conn_free(b);
    tern_conn_free(c);
}

TEST(conn_pending_input_is_copied_served_in_order_and_freed_when_taken)
{
    tern_conn *c = tern_conn_new(3);
    uint8_t data[5] = {1, 2, 3, 4, 5};

    CHECK(c != NULL);
    CHECK(c->pending == NULL);
    CHECK(tern_conn_keep_input(c, data, sizeof data));
    data[0] = 9; /* the caller's buffer is reused at once */
    CHECK_EQ(c->pending_len, 5);
    CHECK_EQ(c->pending[c->pending_off], 1);
    tern_conn_input_taken(c, 2);
    CHECK_EQ(c->pending_len, 3);
    CHECK_EQ(c->pending[c->pending_off], 3);
    tern_conn_input_taken(c, 3);
    CHECK(c->pending == NULL);
    CHECK_EQ(c->pending_len, 0);
    CHECK(tern_conn_keep_input(c, data, 0));
    CHECK(c->pending == NULL);
    tern_conn_free(c);
}

TEST(conn_adopted_input_starts_at_its_offset_and_is_freed_when_taken)
{
    tern_conn *c = tern_conn_new(3);
    uint8_t *buf = malloc(8);

    CHECK(c != NULL && buf != NULL);
    for (uint8_t i = 0; i < 8; i++)
        buf[i] = i;
    tern_conn_adopt_input(c, buf, 5, 3); /* the core took 5 of 8 bytes */
    CHECK(c->pending == buf);
    CHECK_EQ(c->pending[c->pending_off], 5);
    CHECK_EQ(c->pending_len, 3);
    tern_conn_input_taken(c, 1);
    CHECK_EQ(c->pending[c->pending_off], 6);
    tern_conn_input_taken(c, 2);
    CHECK(c->pending == NULL); /* freed (ASan would report a leak) */
    tern_conn_free(c);
}
