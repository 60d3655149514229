/*
 * restore.c - rebuilding the core from committed store records at start
 * (journal.h). Nothing here produces records: the state already is on disk.
 */
#include "broker/access.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/ident.h"
#include "broker/journal.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/session.h"
#include "broker/tree.h"
#include "mqtt/mqtt.h"

#include <string.h>

typedef struct restore_state {
    msg **tab;          /* open addressing by store id; owns one ref each */
    size_t cap, count;
    size_t sessions, queued, retained, dropped;
} restore_state;

static restore_state *rs_get(broker *b)
{
    if (!b->restore) {
        b->restore = bk_mem_calloc(b, sizeof *b->restore);
        if (b->restore)
            b->restoring = true;
    }
    return b->restore;
}

static size_t slot_of(const restore_state *r, uint64_t id)
{
    return (size_t)(id * 0x9e3779b97f4a7c15ull) & (r->cap - 1);
}

static msg *rs_find(const restore_state *r, uint64_t id)
{
    if (!r->cap)
        return NULL;
    for (size_t i = slot_of(r, id);; i = (i + 1) & (r->cap - 1)) {
        if (!r->tab[i])
            return NULL;
        if (r->tab[i]->store_id == id)
            return r->tab[i];
    }
}

static int rs_add(broker *b, restore_state *r, msg *m)
{
    if ((r->count + 1) * 2 > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        msg **tab = bk_mem_calloc(b, cap * sizeof *tab);
        if (!tab)
            return -1;
        msg **old = r->tab;
        size_t oldcap = r->cap;
        r->tab = tab;
        r->cap = cap;
        for (size_t i = 0; i < oldcap; i++) {
            if (!old[i])
                continue;
            size_t j = slot_of(r, old[i]->store_id);
            while (tab[j])
                j = (j + 1) & (cap - 1);
            tab[j] = old[i];
        }
        bk_mem_free(b, old);
    }
    size_t j = slot_of(r, m->store_id);
    while (r->tab[j])
        j = (j + 1) & (r->cap - 1);
    r->tab[j] = m;
    r->count++;
    return 0;
}

int broker_restore_retained(broker *b, const uint8_t *topic, size_t tlen,
                            const uint8_t *payload, size_t plen, uint8_t qos)
{
    restore_state *r = rs_get(b);
    if (!r || tlen == 0 || tlen > UINT16_MAX || qos > 2 ||
        !mqtt_topic_name_valid(topic, tlen))
        return -1;
    msg *m = bk_msg_new(b, topic, tlen, payload, plen, qos, true);
    if (!m)
        return -1;
    int rc = bk_tree_set_retained(b, &b->tree, topic, tlen, m);
    bk_msg_unref(b, m);
    if (rc == 0)
        r->retained++;
    return rc;
}

int broker_restore_session(broker *b, const uint8_t *id, size_t idlen, const uint8_t *identity,
                           size_t identity_len, bool is_operator)
{
    restore_state *r = rs_get(b);
    if (!r || idlen > UINT16_MAX || bk_session_find(&b->sessions, id, idlen))
        return -1;
    session *s = bk_session_create(b, &b->sessions, id, idlen, false);
    if (!s)
        return -1;
    /* Counted toward limits.max_sessions_per_identity, never refused by
     * it: the limit only stops new sessions from being created. */
    if (identity_len &&
        (identity_len > UINT16_MAX ||
         bk_ident_attach(b, s, (const char *)identity, identity_len) != 0)) {
        bk_session_destroy(b, s);
        return -1;
    }
    s->is_operator = is_operator;
    bk_session_set_offline(b, s, b->now_ms);
    r->sessions++;
    return 0;
}

int broker_restore_sub(broker *b, const uint8_t *id, size_t idlen, const uint8_t *filter,
                       size_t flen, uint8_t qos)
{
    session *s = bk_session_find(&b->sessions, id, idlen);
    bool is_new;
    /* No filter longer than SUBSCRIBE can carry enters the tree
     * (TREE_FILTER_MAX): only a damaged store holds one. */
    if (!rs_get(b) || !s || qos > 2 || flen > TREE_FILTER_MAX ||
        !mqtt_topic_filter_valid(filter, flen))
        return -1;
    sub *x = bk_tree_subscribe(b, &b->tree, s, filter, flen, qos, &is_new);
    if (!x)
        return -1;
    /* The ACL governs the FILTER of `$share/GROUP/FILTER` (subscribe.c). */
    mqtt_bytes group, inner = {filter, flen};
    (void)mqtt_share_split(filter, flen, &group, &inner); /* bk_tree_subscribe took it */
    x->acl_check = bk_acl_filter_partly_denied(b->acl, s->identity, s->id, (const char *)inner.p,
                                               inner.len);
    return 0;
}

int broker_restore_msg(broker *b, uint64_t msg_id, const uint8_t *topic, size_t tlen,
                       const uint8_t *payload, size_t plen, uint8_t qos, bool retain)
{
    restore_state *r = rs_get(b);
    /* The topic goes out in PUBLISH packets as it is: a damaged store must
     * not make the broker send clients a malformed one. */
    if (!r || msg_id == 0 || tlen == 0 || tlen > UINT16_MAX || qos > 2 ||
        !mqtt_topic_name_valid(topic, tlen) || rs_find(r, msg_id))
        return -1;
    msg *m = bk_msg_new(b, topic, tlen, payload, plen, qos, retain);
    if (!m)
        return -1;
    m->store_id = msg_id;
    if (rs_add(b, r, m) != 0) {
        bk_msg_unref(b, m);
        return -1;
    }
    if (msg_id >= b->jr.next_msg_id)
        b->jr.next_msg_id = msg_id + 1;
    return 0;
}

int broker_restore_queued(broker *b, const uint8_t *id, size_t idlen, uint64_t seq,
                          uint64_t msg_id, uint8_t qos, bool retain, uint8_t state,
                          uint16_t packet_id)
{
    restore_state *r = rs_get(b);
    session *s = bk_session_find(&b->sessions, id, idlen);
    if (!r || !s || qos == 0 || qos > 2 || state > JOURNAL_Q_WAIT_PUBCOMP)
        return -1;
    msg *m = NULL;
    if (state != JOURNAL_Q_WAIT_PUBCOMP) {
        m = rs_find(r, msg_id);
        if (!m) {
            r->dropped++; /* its message row is missing: nothing to send */
            return 0;
        }
    }
    /* Sent entries form the front of the ring; a sent entry behind an
     * unsent one can only come from a damaged store: send it afresh. */
    if (state != JOURNAL_Q_QUEUED && s->q_sent < s->q_count) {
        if (!m) {
            r->dropped++;
            return 0;
        }
        state = JOURNAL_Q_QUEUED;
    }
    if (!bk_session_restore_entry(b, s, m, seq, qos, retain, state, packet_id))
        return -1;
    if (m)
        m->store_refs++;
    if (seq >= s->next_seq)
        s->next_seq = seq + 1;
    r->queued++;
    return 0;
}

int broker_restore_inqos2(broker *b, const uint8_t *id, size_t idlen, uint16_t packet_id)
{
    session *s = bk_session_find(&b->sessions, id, idlen);
    if (!rs_get(b) || !s || packet_id == 0)
        return -1;
    if (bk_session_in_qos2_has(s, packet_id))
        return 0;
    return bk_session_in_qos2_add(b, s, packet_id);
}

void broker_restore_done(broker *b)
{
    restore_state *r = b->restore;
    b->restoring = false;
    if (!r)
        return;
    for (size_t i = 0; i < r->cap; i++)
        if (r->tab[i])
            bk_msg_unref(b, r->tab[i]); /* queue entries hold their own refs */
    bk_log(b, BROKER_LOG_INFO,
           "restored %zu persistent sessions, %zu queued messages, %zu retained messages%s",
           r->sessions, r->queued, r->retained, r->dropped ? " (some entries lacked data)" : "");
    if (r->dropped)
        bk_log(b, BROKER_LOG_WARN, "store: %zu queued entries could not be restored",
               r->dropped);
    bk_mem_free(b, r->tab);
    bk_mem_free(b, r);
    b->restore = NULL;
}
