/*
 * ident.c - per-identity records (ident.h): a small chained hash table of
 * the identities that have sessions, keyed like the session table (hash.h)
 * so a client cannot aim identities at one bucket. It grows as identities
 * come and shrinks as they go, and is freed when the last one goes.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/hash.h"
#include "broker/ident.h"
#include "broker/mem.h"

#include <string.h>

#define IDENT_TABLE_MIN 16u
/* Mixed into the key: identities hash apart from client ids. */
#define IDENT_HASH_EXTRA 0x6964656e74ull /* "ident" */

static uint32_t ident_hash(const broker *b, const char *name, size_t len)
{
    return table_hash(b->hash_key, IDENT_HASH_EXTRA, (const uint8_t *)name, len);
}

static bk_ident *ident_find(const broker *b, const char *name, size_t len, uint32_t h)
{
    const ident_table *t = &b->idents;
    if (!t->table)
        return NULL;
    for (bk_ident *i = t->table[h & (t->size - 1)]; i; i = i->hnext)
        if (i->hashv == h && i->len == len && memcmp(i->name, name, len) == 0)
            return i;
    return NULL;
}

/* Rehash into size slots (a power of two); on allocation failure the
 * chains only get longer. */
static void ident_resize(broker *b, size_t size)
{
    ident_table *t = &b->idents;
    bk_ident **table = bk_mem_calloc(b, size * sizeof *table);
    if (!table)
        return;
    for (size_t k = 0; k < t->size; k++) {
        bk_ident *i = t->table[k];
        while (i) {
            bk_ident *next = i->hnext;
            size_t slot = i->hashv & (size - 1);
            i->hnext = table[slot];
            table[slot] = i;
            i = next;
        }
    }
    bk_mem_free(b, t->table);
    t->table = table;
    t->size = size;
}

int bk_ident_attach(broker *b, session *s, const char *name, size_t len)
{
    ALWAYS(!s->ident && len <= UINT16_MAX);
    ident_table *t = &b->idents;
    uint32_t h = ident_hash(b, name, len);
    bk_ident *i = ident_find(b, name, len, h);
    if (!i) {
        if (!t->table) {
            t->table = bk_mem_calloc(b, IDENT_TABLE_MIN * sizeof *t->table);
            if (!t->table)
                return -1;
            t->size = IDENT_TABLE_MIN;
        }
        i = bk_mem_calloc(b, sizeof *i + len + 1);
        if (!i) {
            if (t->count == 0) {
                bk_mem_free(b, t->table);
                t->table = NULL;
                t->size = 0;
            }
            return -1;
        }
        i->hashv = h;
        i->len = (uint16_t)len;
        memcpy(i->name, name, len);
        i->name[len] = '\0';
        size_t slot = h & (t->size - 1);
        i->hnext = t->table[slot];
        t->table[slot] = i;
        t->count++;
        if (t->count > t->size)
            ident_resize(b, t->size * 2);
    }
    i->refs++;
    if (!s->clean)
        i->persistent++;
    i->q_bytes += s->q_bytes;
    s->ident = i;
    s->identity = i->name;
    return 0;
}

void bk_ident_detach(broker *b, session *s)
{
    bk_ident *i = s->ident;
    if (!i)
        return;
    ident_table *t = &b->idents;
    ALWAYS(i->refs > 0 && i->q_bytes >= s->q_bytes);
    i->q_bytes -= s->q_bytes;
    if (!s->clean) {
        ALWAYS(i->persistent > 0);
        i->persistent--;
    }
    s->ident = NULL;
    s->identity = NULL;
    if (--i->refs > 0)
        return;
    ALWAYS(i->persistent == 0 && i->q_bytes == 0);
    bk_ident **pp = &t->table[i->hashv & (t->size - 1)];
    while (*pp != i)
        pp = &(*pp)->hnext;
    *pp = i->hnext;
    bk_mem_free(b, i);
    t->count--;
    if (t->count == 0) {
        bk_mem_free(b, t->table);
        t->table = NULL;
        t->size = 0;
        return;
    }
    size_t size = t->size;
    while (size > IDENT_TABLE_MIN && t->count < size / 4)
        size /= 2;
    if (size != t->size)
        ident_resize(b, size);
}

uint32_t bk_ident_persistent(broker *b, const char *name)
{
    size_t len = strlen(name);
    const bk_ident *i = ident_find(b, name, len, ident_hash(b, name, len));
    return i ? i->persistent : 0;
}

void bk_idents_free(broker *b)
{
    /* The sessions detached themselves; nothing is left but an empty table. */
    ALWAYS(b->idents.count == 0);
    bk_mem_free(b, b->idents.table);
    memset(&b->idents, 0, sizeof b->idents);
}
