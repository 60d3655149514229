/*
 * conn.c - connection records, their work lists and their pending input.
 * Intrusive doubly linked lists, so moving a connection on or off a list
 * never allocates and removal is O(1) whatever list it is on.
 */
#include "platform/posix/conn.h"

#include <stdlib.h>
#include <string.h>

tern_conn *tern_conn_new(int fd)
{
    tern_conn *c = calloc(1, sizeof *c);

    if (c != NULL) {
        c->kind = TERN_HANDLE_CONN;
        c->fd = fd;
    }
    return c;
}

void tern_conn_free(tern_conn *c)
{
    if (c != NULL) {
        tern_tls_conn_free(c->tls);
        free(c->peer);
        free(c->pending);
        free(c);
    }
}

void tern_conn_list_init(tern_conn_list *list, tern_conn_list_id id)
{
    list->head = list->tail = NULL;
    list->count = 0;
    list->id = (uint8_t)id;
}

void tern_conn_list_push(tern_conn_list *list, tern_conn *c)
{
    c->prev = list->tail;
    c->next = NULL;
    if (list->tail != NULL)
        list->tail->next = c;
    else
        list->head = c;
    list->tail = c;
    list->count++;
    c->list = list->id;
}

void tern_conn_list_remove(tern_conn_list *list, tern_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        list->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        list->tail = c->prev;
    c->prev = c->next = NULL;
    c->list = TERN_LIST_NONE;
    list->count--;
}

tern_conn *tern_conn_list_pop(tern_conn_list *list)
{
    tern_conn *c = list->head;

    if (c != NULL)
        tern_conn_list_remove(list, c);
    return c;
}

bool tern_conn_keep_input(tern_conn *c, const uint8_t *data, size_t len)
{
    uint8_t *copy;

    if (len == 0)
        return true;
    if (len > UINT32_MAX)
        return false;
    copy = malloc(len);
    if (copy == NULL)
        return false;
    memcpy(copy, data, len);
    free(c->pending);
    c->pending = copy;
    c->pending_off = 0;
    c->pending_len = (uint32_t)len;
    return true;
}

void tern_conn_adopt_input(tern_conn *c, uint8_t *buf, size_t off, size_t len)
{
    free(c->pending);
    c->pending = buf;
    c->pending_off = (uint32_t)off;
    c->pending_len = (uint32_t)len;
}

void tern_conn_input_taken(tern_conn *c, size_t n)
{
    if (n >= c->pending_len) {
        tern_conn_drop_input(c);
        return;
    }
    c->pending_off += (uint32_t)n;
    c->pending_len -= (uint32_t)n;
}

void tern_conn_drop_input(tern_conn *c)
{
    free(c->pending);
    c->pending = NULL;
    c->pending_off = c->pending_len = 0;
}
