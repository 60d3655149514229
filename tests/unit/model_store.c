/*
 * model_store.c - the in-memory store model used by the persistence tests.
 */
#include "model_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ms_init(mstore *m)
{
    memset(m, 0, sizeof *m);
}

static void copy_str(char *dst, size_t cap, journal_bytes b)
{
    size_t n = b.len < cap - 1 ? b.len : cap - 1;
    if (n)
        memcpy(dst, b.p, n);
    dst[n] = '\0';
}

static void copy_bytes(uint8_t *dst, uint32_t *len, size_t cap, journal_bytes b)
{
    if (b.len > cap)
        abort(); /* model row too small: enlarge it */
    if (b.len)
        memcpy(dst, b.p, b.len);
    *len = b.len;
}

static mrow *find(mstore *m, char table, const char *cid, const char *key)
{
    for (size_t i = 0; i < sizeof m->rows / sizeof m->rows[0]; i++) {
        mrow *r = &m->rows[i];
        if (r->used && r->table == table && strcmp(r->cid, cid) == 0 && strcmp(r->key, key) == 0)
            return r;
    }
    return NULL;
}

static mrow *upsert(mstore *m, char table, const char *cid, const char *key)
{
    mrow *r = find(m, table, cid, key);
    if (r)
        return r;
    for (size_t i = 0; i < sizeof m->rows / sizeof m->rows[0]; i++) {
        if (!m->rows[i].used) {
            r = &m->rows[i];
            memset(r, 0, sizeof *r);
            r->used = true;
            r->table = table;
            snprintf(r->cid, sizeof r->cid, "%s", cid);
            snprintf(r->key, sizeof r->key, "%s", key);
            return r;
        }
    }
    abort(); /* model full: enlarge it */
}

static void del(mstore *m, char table, const char *cid, const char *key)
{
    mrow *r = find(m, table, cid, key);
    if (r)
        r->used = false;
}

bool ms_apply(mstore *m, const uint8_t *data, size_t len)
{
    size_t pos = 0;
    journal_rec rec;
    int rc;
    while ((rc = journal_next(data, len, &pos, &rec)) == 1) {
        char cid[128], key[256];
        copy_str(cid, sizeof cid, rec.client_id);
        if (getenv("TERN_TEST_LOG"))
            fprintf(stderr, "  [store] rec %d cid=%s seq=%llu msg=%llu\n", (int)rec.type, cid,
                    (unsigned long long)rec.seq, (unsigned long long)rec.msg_id);
        mrow *r;
        switch (rec.type) {
        case J_RESET:
            for (size_t i = 0; i < sizeof m->rows / sizeof m->rows[0]; i++)
                m->rows[i].used = false;
            m->resets++;
            break;
        case J_RETAIN_SET:
            copy_str(key, sizeof key, rec.topic);
            r = upsert(m, 'R', "", key);
            if (rec.payload.len)
                memcpy(r->data, rec.payload.p, rec.payload.len);
            r->data_len = rec.payload.len;
            r->qos = rec.qos;
            copy_bytes(r->props, &r->props_len, sizeof r->props, rec.props);
            r->expiry_at = rec.expiry_at;
            break;
        case J_RETAIN_DEL:
            copy_str(key, sizeof key, rec.topic);
            del(m, 'R', "", key);
            break;
        case J_SESSION_PUT:
            r = upsert(m, 'S', cid, "");
            if (rec.identity.len)
                memcpy(r->data, rec.identity.p, rec.identity.len);
            r->data_len = rec.identity.len;
            r->flags = rec.flags;
            r->expiry_interval = rec.expiry_interval;
            r->expiry_at = rec.expiry_at;
            break;
        case J_SESSION_DEL:
            for (size_t i = 0; i < sizeof m->rows / sizeof m->rows[0]; i++)
                if (m->rows[i].used && strchr("SBQIW", m->rows[i].table) &&
                    strcmp(m->rows[i].cid, cid) == 0)
                    m->rows[i].used = false;
            break;
        case J_SUB_PUT:
            copy_str(key, sizeof key, rec.topic);
            r = upsert(m, 'B', cid, key);
            r->qos = rec.qos;
            r->options = rec.options;
            r->sub_id = rec.sub_id;
            break;
        case J_SUB_DEL:
            copy_str(key, sizeof key, rec.topic);
            del(m, 'B', cid, key);
            break;
        case J_MSG_PUT:
            snprintf(key, sizeof key, "%" PRIu64, rec.msg_id);
            r = upsert(m, 'M', "", key);
            r->msg_id = rec.msg_id;
            copy_str(r->topic, sizeof r->topic, rec.topic);
            if (rec.payload.len)
                memcpy(r->data, rec.payload.p, rec.payload.len);
            r->data_len = rec.payload.len;
            r->qos = rec.qos;
            r->flags = rec.flags;
            copy_bytes(r->props, &r->props_len, sizeof r->props, rec.props);
            r->expiry_at = rec.expiry_at;
            break;
        case J_MSG_DEL:
            snprintf(key, sizeof key, "%" PRIu64, rec.msg_id);
            del(m, 'M', "", key);
            break;
        case J_QUEUE_PUT:
            snprintf(key, sizeof key, "%020" PRIu64, rec.seq);
            r = upsert(m, 'Q', cid, key);
            r->seq = rec.seq;
            r->msg_id = rec.msg_id;
            r->qos = rec.qos;
            r->flags = rec.flags;
            r->sub_id = rec.sub_id;
            copy_bytes(r->props, &r->props_len, sizeof r->props, rec.sub_ids);
            break;
        case J_QUEUE_STATE:
            snprintf(key, sizeof key, "%020" PRIu64, rec.seq);
            r = find(m, 'Q', cid, key);
            if (r) {
                r->state = rec.state;
                r->packet_id = rec.packet_id;
            }
            break;
        case J_QUEUE_DEL:
            snprintf(key, sizeof key, "%020" PRIu64, rec.seq);
            del(m, 'Q', cid, key);
            break;
        case J_INQOS2_PUT:
            snprintf(key, sizeof key, "%u", rec.packet_id);
            upsert(m, 'I', cid, key)->packet_id = rec.packet_id;
            break;
        case J_INQOS2_DEL:
            snprintf(key, sizeof key, "%u", rec.packet_id);
            del(m, 'I', cid, key);
            break;
        case J_WILL_PUT:
            r = upsert(m, 'W', cid, "");
            copy_str(r->topic, sizeof r->topic, rec.topic);
            if (rec.payload.len)
                memcpy(r->data, rec.payload.p, rec.payload.len);
            r->data_len = rec.payload.len;
            r->qos = rec.qos;
            r->flags = rec.flags;
            copy_bytes(r->props, &r->props_len, sizeof r->props, rec.props);
            r->expiry_at = rec.expiry_at;
            r->fire_at = rec.fire_at;
            break;
        case J_WILL_DEL:
            del(m, 'W', cid, "");
            break;
        }
    }
    return rc == 0;
}

void ms_commit_all(mstore *m, broker *b)
{
    broker_store_batch batch;
    while (broker_store_take(b, &batch)) {
        if (!ms_apply(m, batch.data, batch.len))
            abort();
        broker_store_done(b, batch.seq, true);
    }
}

static int cmp_rows(const void *a, const void *b)
{
    const mrow *x = a, *y = b;
    if (x->table != y->table)
        return x->table - y->table;
    int c = strcmp(x->cid, y->cid);
    return c ? c : strcmp(x->key, y->key);
}

bool ms_load(const mstore *m, broker *b)
{
    /* The store's order: sessions, subscriptions, messages, queue by seq,
     * inbound ids, wills, retained. Sorting by (table, cid, key) gives seq
     * order within a session (keys are zero-padded). */
    static const char order[] = "SBMQIWR";
    mrow *sorted = malloc(sizeof m->rows);
    if (!sorted)
        return false;
    memcpy(sorted, m->rows, sizeof m->rows);
    qsort(sorted, sizeof m->rows / sizeof m->rows[0], sizeof sorted[0], cmp_rows);
    bool ok = true;
    for (const char *t = order; *t && ok; t++) {
        for (size_t i = 0; i < sizeof m->rows / sizeof m->rows[0] && ok; i++) {
            const mrow *r = &sorted[i];
            if (!r->used || r->table != *t)
                continue;
            const uint8_t *cid = (const uint8_t *)r->cid;
            size_t cl = strlen(r->cid);
            int rc = 0;
            switch (*t) {
            case 'S':
                rc = broker_restore_session(b, cid, cl, r->data, r->data_len, r->flags & 1,
                                            r->expiry_interval, r->expiry_at);
                break;
            case 'B':
                rc = broker_restore_sub(b, cid, cl, (const uint8_t *)r->key, strlen(r->key),
                                        r->qos, r->options, r->sub_id);
                break;
            case 'M':
                rc = broker_restore_msg(b, r->msg_id, (const uint8_t *)r->topic,
                                        strlen(r->topic), r->data, r->data_len, r->qos,
                                        r->flags & 1, r->props, r->props_len, r->expiry_at);
                break;
            case 'Q':
                rc = broker_restore_queued(b, cid, cl, r->seq, r->msg_id, r->qos, r->flags & 1,
                                           r->state, r->packet_id, r->sub_id, r->props,
                                           r->props_len);
                break;
            case 'I':
                rc = broker_restore_inqos2(b, cid, cl, r->packet_id);
                break;
            case 'W':
                rc = broker_restore_will(b, cid, cl, (const uint8_t *)r->topic,
                                         strlen(r->topic), r->data, r->data_len, r->qos,
                                         r->flags & 1, r->props, r->props_len, r->expiry_at,
                                         r->fire_at);
                break;
            case 'R':
                rc = broker_restore_retained(b, (const uint8_t *)r->key, strlen(r->key),
                                             r->data, r->data_len, r->qos, r->props,
                                             r->props_len, r->expiry_at);
                break;
            }
            ok = rc == 0;
        }
    }
    broker_restore_done(b);
    free(sorted);
    return ok;
}

int ms_count(const mstore *m, char table)
{
    int n = 0;
    for (size_t i = 0; i < sizeof m->rows / sizeof m->rows[0]; i++)
        n += m->rows[i].used && m->rows[i].table == table;
    return n;
}
