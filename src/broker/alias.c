/*
 * alias.c - MQTT 5.0 Topic Aliases of one connection, both directions.
 *
 * Inbound, the client chooses: each alias it sets holds a copy of its
 * topic (already within limits.max_topic_length), in an array grown to the
 * highest alias it used, at most bk_alias_in_max() entries.
 *
 * Outbound, the broker's policy: the first BK_ALIAS_OUT_MAX distinct topics
 * sent to a client that allows aliases (at most its Topic Alias Maximum of
 * them [MQTT-3.1.2-26], none when it allows none [MQTT-3.1.2-27]) get
 * aliases 1, 2, ... in the order they are first sent, and keep them for the
 * life of the connection; later topics go out in full. A mapping never
 * changes, so no packet depends on which of two mappings the client saw
 * last, and a client's busiest topics are usually among its first. The
 * packet that sets an alias carries the topic too; retransmissions carry
 * no alias (deliver.c), and a new connection starts with no aliases in
 * either direction [MQTT-3.3.2-7].
 */
#include "broker/alias.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/mem.h"

#include <string.h>

/* One alias's topic, owned. */
typedef struct bk_alias {
    uint8_t *topic;                 /* NULL = alias not set */
    uint16_t len;
} bk_alias;

/* A connection's aliases (broker_conn.aliases), allocated at the first one
 * so that connections without aliases pay one pointer. Inbound: the
 * client's, in[alias - 1], grown to the highest alias used. Outbound: the
 * topics the broker gave aliases, alias = index + 1; out has out_max()
 * entries once allocated. */
struct bk_aliases {
    bk_alias *in;
    bk_alias *out;
    uint16_t in_cap;
    uint16_t out_count;
};

/* c's alias tables, allocated if need be; NULL without memory. */
static struct bk_aliases *aliases_of(broker *b, broker_conn *c)
{
    if (!c->aliases)
        c->aliases = bk_mem_calloc(b, sizeof *c->aliases);
    return c->aliases;
}

uint16_t bk_alias_in_max(const broker *b)
{
    uint32_t m = b->lim.max_topic_alias;
    if (m == UINT32_MAX)
        return 0;
    return m > UINT16_MAX ? UINT16_MAX : (uint16_t)m;
}

/* Give entry e a copy of topic. */
static bool alias_store(broker *b, bk_alias *e, const uint8_t *topic, size_t len)
{
    ALWAYS(len > 0 && len <= UINT16_MAX);
    if (e->len != len) {
        uint8_t *p = bk_mem_realloc(b, e->topic, len);
        if (!p)
            return false;
        e->topic = p;
        e->len = (uint16_t)len;
    }
    memcpy(e->topic, topic, len);
    return true;
}

uint8_t bk_alias_in_resolve(broker *b, broker_conn *c, uint16_t alias, mqtt_bytes *topic)
{
    ALWAYS(alias > 0); /* the codec refuses Topic Alias 0 [MQTT-3.3.2-8] */
    /* [MQTT-3.2.2-17]: none above the maximum the CONNACK announced. */
    if (alias > bk_alias_in_max(b))
        return MQTT_RC_TOPIC_ALIAS_INVALID;
    if (topic->len == 0) {
        /* 3.3.2.3.4: an empty topic under an alias never set on this
         * connection is a Protocol Error. */
        const struct bk_aliases *t = c->aliases;
        if (!t || alias > t->in_cap || !t->in[alias - 1].topic)
            return MQTT_RC_PROTOCOL_ERROR;
        topic->p = t->in[alias - 1].topic;
        topic->len = t->in[alias - 1].len;
        return 0;
    }
    struct bk_aliases *t = aliases_of(b, c);
    if (!t)
        return MQTT_RC_UNSPECIFIED_ERROR;
    if (alias > t->in_cap) {
        bk_alias *a = bk_mem_realloc(b, t->in, (size_t)alias * sizeof *a);
        if (!a)
            return MQTT_RC_UNSPECIFIED_ERROR;
        memset(a + t->in_cap, 0, (size_t)(alias - t->in_cap) * sizeof *a);
        t->in = a;
        t->in_cap = alias;
    }
    if (!alias_store(b, &t->in[alias - 1], topic->p, topic->len))
        return MQTT_RC_UNSPECIFIED_ERROR;
    return 0;
}

/* How many aliases the broker may give c's topics. */
static uint16_t out_max(const broker_conn *c)
{
    return c->client_topic_alias_max < BK_ALIAS_OUT_MAX ? c->client_topic_alias_max
                                                        : (uint16_t)BK_ALIAS_OUT_MAX;
}

uint16_t bk_alias_out_pick(const broker_conn *c, const uint8_t *topic, size_t len, bool *known)
{
    *known = false;
    uint16_t count = c->aliases ? c->aliases->out_count : 0;
    for (uint16_t i = 0; i < count; i++) {
        const bk_alias *e = &c->aliases->out[i];
        if (e->len == len && memcmp(e->topic, topic, len) == 0) {
            *known = true;
            return (uint16_t)(i + 1);
        }
    }
    if (count >= out_max(c))
        return 0;
    return (uint16_t)(count + 1);
}

void bk_alias_out_set(broker *b, broker_conn *c, const uint8_t *topic, size_t len)
{
    struct bk_aliases *t = aliases_of(b, c);
    if (!t)
        return;
    ALWAYS(t->out_count < out_max(c));
    if (!t->out) {
        t->out = bk_mem_calloc(b, (size_t)out_max(c) * sizeof *t->out);
        if (!t->out)
            return;
    }
    if (alias_store(b, &t->out[t->out_count], topic, len))
        t->out_count++;
}

static void table_free(broker *b, bk_alias *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        bk_mem_free(b, t[i].topic);
    bk_mem_free(b, t);
}

void bk_alias_free(broker *b, broker_conn *c)
{
    struct bk_aliases *t = c->aliases;
    if (!t)
        return;
    table_free(b, t->in, t->in_cap);
    /* The array has out_max(c) entries, those past the count empty. */
    table_free(b, t->out, t->out ? out_max(c) : 0);
    bk_mem_free(b, t);
    c->aliases = NULL;
}
