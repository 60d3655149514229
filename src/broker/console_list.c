/*
 * console_list.c - the operator console's commands over many things
 * (docs/CONSOLE.md): clients, retained-list and retained-clear. Lists are
 * bounded: "limit" entries from "offset" (defaults in console.h), and an
 * answer that would outgrow its room (console.c sizes it to the
 * requester's Maximum Packet Size) stops at the last entry that fits and
 * says "more": true.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/console_cmd.h"
#include "broker/persist.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/tree.h"
#include "mqtt/mqtt.h"

#include <string.h>

/* Bytes kept free after each entry to close a list answer:
 * `],"matched":N,"more":false}` with N up to 20 digits, and the NUL. */
#define LIST_TAIL 64u

/* Start writing an entry: a copy of the writer to undo it with. */
static jw entry_begin(jw *w)
{
    jw saved = *w;
    w->cap = w->cap > LIST_TAIL ? w->cap - LIST_TAIL : 0;
    return saved;
}

/* Finish an entry: true when it fit; otherwise it is undone. */
static bool entry_end(jw *w, const jw *saved)
{
    bool fit = !w->failed;
    if (fit)
        w->cap = saved->cap;
    else
        *w = *saved;
    return fit;
}

typedef struct list_pos {
    uint32_t offset, limit;
    uint64_t seen;       /* entries matched so far */
    uint32_t written;
    bool more;           /* matched entries left out (limit or room) */
} list_pos;

static int list_args(bk_con_req *r, list_pos *lp)
{
    memset(lp, 0, sizeof *lp);
    if (bk_con_arg_u32(r, "offset", 0, UINT32_MAX, &lp->offset) != 0 ||
        bk_con_arg_u32(r, "limit", BROKER_CONSOLE_LIST_DEFAULT, BROKER_CONSOLE_LIST_MAX,
                       &lp->limit) != 0)
        return -1;
    return 0;
}

/* Is the next matched entry to be written? Counts it either way. */
static bool list_take(list_pos *lp)
{
    uint64_t i = lp->seen++;
    if (i < lp->offset)
        return false;
    if (lp->more || lp->written >= lp->limit) {
        lp->more = true;
        return false;
    }
    return true;
}

static void list_end(jw *w, const list_pos *lp)
{
    jw_end(w); /* the array */
    jw_u64(w, "matched", lp->seen);
    jw_bool(w, "more", lp->more);
}

/* ---- clients ------------------------------------------------------------- */

static const char *protocol_name(uint8_t level)
{
    return level == MQTT_LEVEL_5 ? "5.0" : level == MQTT_LEVEL_311 ? "3.1.1" : "3.1";
}

static bool same(const char *a, const char *want)
{
    return !want || (a && strcmp(a, want) == 0);
}

static bool client_entry(bk_con_req *r, const broker_conn *c)
{
    broker *b = r->b;
    const session *s = c->sess;
    jw *w = r->w;
    jw saved = entry_begin(w);
    jw_obj(w, NULL);
    jw_strn(w, "client", s->id, s->id_len);
    jw_str(w, "identity", c->identity);
    jw_bool(w, "operator", c->is_operator);
    jw_str(w, "address", c->peer);
    jw_str(w, "protocol", protocol_name(c->level));
    if (b->wall_base_ms)
        jw_u64(w, "connected_since_ms", b->wall_base_ms + c->opened_ms - b->wall_at_now);
    else
        jw_u64(w, "connected_since_uptime_ms", c->opened_ms - b->start_ms);
    jw_u64(w, "queued", s->q_count - s->q_sent);
    jw_u64(w, "inflight", s->inflight);
    jw_u64(w, "subscriptions", s->sub_count);
    jw_bool(w, "persistent", !(s->clean || s->expiry_interval_s == 0));
    jw_end(w);
    return entry_end(w, &saved);
}

int bk_con_clients(bk_con_req *r)
{
    static const char *const names[] = {"client", "identity", "offset", "limit", NULL};
    list_pos lp;
    if (bk_con_args_only(r, names) != 0 || list_args(r, &lp) != 0)
        return -1;
    bool has_id, has_ident;
    size_t n;
    char *id = bk_con_arg_str(r, "client", &has_id, &n);
    char *ident = has_id && !id ? NULL : bk_con_arg_str(r, "identity", &has_ident, &n);
    int rc = 0;
    if ((has_id && !id) || (!(has_id && !id) && has_ident && !ident)) {
        rc = -1;
    } else {
        jw_arr(r->w, "clients");
        for (const broker_conn *c = r->b->conns; c; c = c->next) {
            if (c->state != CONN_ACTIVE || !c->sess || !same(c->sess->id, id) ||
                !same(c->identity, ident) || !list_take(&lp))
                continue;
            if (client_entry(r, c))
                lp.written++;
            else
                lp.more = true;
        }
        list_end(r->w, &lp);
    }
    bk_mem_free(r->b, id);
    bk_mem_free(r->b, ident);
    return rc;
}

/* ---- retained-list ------------------------------------------------------- */

typedef struct retained_walk {
    bk_con_req *r;
    list_pos *lp;
} retained_walk;

static void retained_entry(broker *b, void *ctx, msg *m)
{
    retained_walk *rw = ctx;
    if (bk_msg_expired(m, b->now_ms) || !list_take(rw->lp))
        return;
    jw *w = rw->r->w;
    jw saved = entry_begin(w);
    jw_obj(w, NULL);
    jw_strn(w, "topic", (const char *)bk_msg_topic(m), m->topic_len);
    jw_u64(w, "bytes", m->payload_len);
    jw_u64(w, "qos", m->qos);
    jw_bool(w, "expires", m->expiry_ms != 0);
    jw_end(w);
    if (entry_end(w, &saved))
        rw->lp->written++;
    else
        rw->lp->more = true;
}

/* The "filter" argument (default "#"), checked: NULL with err set. */
static char *arg_filter(bk_con_req *r, size_t *len, bool *given)
{
    char *f = bk_con_arg_str(r, "filter", given, len);
    if (!*given) {
        f = bk_mem_alloc(r->b, 2);
        if (!f) {
            bk_con_fail(r, "out of memory");
            return NULL;
        }
        memcpy(f, "#", 2);
        *len = 1;
    }
    if (f && !mqtt_topic_filter_valid((const uint8_t *)f, *len)) {
        bk_mem_free(r->b, f);
        bk_con_fail(r, "\"filter\" is not a valid topic filter");
        return NULL;
    }
    return f;
}

int bk_con_retained_list(bk_con_req *r)
{
    static const char *const names[] = {"filter", "offset", "limit", NULL};
    list_pos lp;
    if (bk_con_args_only(r, names) != 0 || list_args(r, &lp) != 0)
        return -1;
    size_t flen = 0;
    bool given;
    char *f = arg_filter(r, &flen, &given);
    if (!f)
        return -1;
    jw_strn(r->w, "filter", f, flen);
    jw_arr(r->w, "retained");
    retained_walk rw = {r, &lp};
    int rc = bk_tree_for_retained(r->b, &r->b->tree, (const uint8_t *)f, flen, retained_entry,
                                  &rw);
    bk_mem_free(r->b, f);
    if (rc != 0)
        return bk_con_fail(r, "out of memory");
    list_end(r->w, &lp);
    return 0;
}

/* ---- retained-clear ------------------------------------------------------ */

/* The retained messages a filter matched, each with a reference held. */
typedef struct clear_set {
    msg **m;
    size_t n, cap;
    bool nomem;
} clear_set;

static void clear_collect(broker *b, void *ctx, msg *m)
{
    clear_set *cs = ctx;
    if (cs->nomem)
        return;
    if (cs->n == cs->cap) {
        size_t cap = cs->cap ? cs->cap * 2 : 16;
        msg **p = bk_mem_realloc(b, cs->m, cap * sizeof *p);
        if (!p) {
            cs->nomem = true;
            return;
        }
        cs->m = p;
        cs->cap = cap;
    }
    cs->m[cs->n++] = bk_msg_ref(m);
}

/* Clear the retained message on topic, journaled as a retained PUBLISH
 * with an empty payload is (deliver.c), but delivered to no one. */
static bool clear_topic(broker *b, const uint8_t *topic, size_t tlen)
{
    uint64_t before = b->stats.retained_count;
    (void)bk_tree_set_retained(b, &b->tree, topic, tlen, NULL);
    if (b->stats.retained_count == before)
        return false;
    bk_journal_retain_del(b, topic, tlen);
    return true;
}

int bk_con_retained_clear(bk_con_req *r)
{
    static const char *const names[] = {"topic", "filter", "confirm", NULL};
    if (bk_con_args_only(r, names) != 0)
        return -1;
    bool has_topic, has_filter;
    size_t tlen = 0, flen = 0;
    char *t = bk_con_arg_str(r, "topic", &has_topic, &tlen);
    if (has_topic && !t)
        return -1;
    if (has_topic) {
        jr_val v;
        int rc = 0;
        if (jr_get(r->args, "filter", &v) == 0)
            rc = bk_con_fail(r, "give \"topic\" or \"filter\", not both");
        else if (!mqtt_topic_name_valid((const uint8_t *)t, tlen))
            rc = bk_con_fail(r, "\"topic\" is not a valid topic name (wildcards: use \"filter\")");
        else {
            jw_strn(r->w, "topic", t, tlen);
            jw_u64(r->w, "cleared", clear_topic(r->b, (const uint8_t *)t, tlen) ? 1 : 0);
        }
        bk_mem_free(r->b, t);
        return rc;
    }
    char *f = bk_con_arg_str(r, "filter", &has_filter, &flen);
    if (!has_filter)
        return bk_con_fail(r, "\"topic\" or \"filter\" is required");
    if (!f)
        return -1;
    int rc = 0;
    jr_val v;
    bool confirm = false;
    if (jr_get(r->args, "confirm", &v) == 0 && jr_bool(&v, &confirm) != 0)
        rc = bk_con_fail(r, "\"confirm\" must be true or false");
    else if (!mqtt_topic_filter_valid((const uint8_t *)f, flen))
        rc = bk_con_fail(r, "\"filter\" is not a valid topic filter");
    else if (!confirm && (memchr(f, '+', flen) || memchr(f, '#', flen)))
        rc = bk_con_fail(r, "a wildcard filter needs \"confirm\": true");
    if (rc != 0) {
        bk_mem_free(r->b, f);
        return rc;
    }
    clear_set cs = {0};
    if (bk_tree_for_retained(r->b, &r->b->tree, (const uint8_t *)f, flen, clear_collect, &cs) !=
            0 ||
        cs.nomem)
        rc = bk_con_fail(r, "out of memory (nothing cleared)");
    uint64_t cleared = 0;
    for (size_t i = 0; i < cs.n; i++) {
        if (rc == 0 && clear_topic(r->b, bk_msg_topic(cs.m[i]), cs.m[i]->topic_len))
            cleared++;
        bk_msg_unref(r->b, cs.m[i]);
    }
    bk_mem_free(r->b, cs.m);
    if (rc == 0) {
        jw_strn(r->w, "filter", f, flen);
        jw_u64(r->w, "cleared", cleared);
    }
    bk_mem_free(r->b, f);
    return rc;
}
