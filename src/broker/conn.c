/*
 * conn.c - one client connection: framing of the input stream, the MQTT
 * 3.1/3.1.1/5.0 packet handlers, and the end of a connection (will, session
 * detach, a server DISCONNECT with its reason). CONNECT and its CONNACK are
 * connect.c's; PUBLISH and the acknowledgements of the QoS flows are
 * publish.c's; the outbound half of the flows is in deliver.c.
 */
#include "broker/access.h"
#include "broker/alias.h"
#include "broker/auth.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn.h"
#include "broker/conn_internal.h"
#include "broker/console_core.h"
#include "broker/deliver.h"
#include "broker/flow.h"
#include "broker/ident.h"
#include "broker/login.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/publish.h"
#include "broker/session.h"
#include "broker/subscribe.h"
#include "broker/tree.h"
#include "broker/wheel.h"
#include "mqtt/mqtt.h"

#include <stdio.h>
#include <string.h>

bool bk_send_simple(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id)
{
    if (type == MQTT_CONNACK) /* held: session present << 8 | return code */
        return bk_send_connack(b, c, packet_id >> 8, (uint8_t)packet_id, NULL);
    size_t n = packet_id || type != MQTT_PINGRESP ? 4 : 2;
    uint8_t *p = bk_out_reserve(b, c, n);
    if (!p)
        return false;
    size_t w = n == 4 ? mqtt_encode_ack(p, n, c->level, type, packet_id)
                      : mqtt_encode_empty(p, n, type);
    ALWAYS(w == n);
    bk_out_commit(b, c, n);
    return true;
}

void bk_conn_end(broker *b, broker_conn *c, bool fire_will, const char *why, uint64_t now_ms)
{
    if (c->state == CONN_CLOSING)
        return;
    conn_state prev = (conn_state)c->state;
    c->state = CONN_CLOSING;
    bk_wheel_remove(&b->wheel, c);
    if (prev == CONN_ACTIVE) {
        ALWAYS(b->stats.clients_connected > 0);
        b->stats.clients_connected--;
        bk_log(b, BROKER_LOG_INFO, "client %s disconnected: %s", conn_name(c), why);
        session *s = c->sess;
        c->sess = NULL;
        if (s) {
            s->conn = NULL;
            /* A Session Expiry Interval of 0 (a 3.1.1 clean session, or
             * set so by a 5.0 CONNECT or DISCONNECT) ends the session
             * with its connection [MQTT-3.1.2-23]. */
            if (s->clean || s->expiry_interval_s == 0) {
                bk_session_destroy(b, s);
                s = NULL;
            } else {
                bk_session_set_offline(b, s, now_ms);
            }
        }
        /* The will goes out after the session is detached, so a persistent
         * session subscribed to its own will queues it like any message.
         * With a Will Delay Interval the session keeps it until the delay
         * passes or the session ends [MQTT-3.1.2-8]. */
        if (fire_will && c->will) {
            if (s && c->will_delay_s) {
                bk_session_keep_will(b, s, c->will, c->will_delay_s, now_ms);
                c->will = NULL;
            } else {
                bk_will_publish(b, c->will, now_ms);
            }
        }
    } else {
        /* Never a client: refusals of a CONNECT, timeouts, garbage. */
        bk_log_limited(b, BK_LOGK_CONNECT_FAILED, BROKER_LOG_DEBUG, "connection %s closed: %s",
                       conn_name(c), why);
    }
    bk_msg_unref(b, c->will);
    c->will = NULL;
    bk_flow_conn_gone(b, c);
    bk_acks_drop(b, c); /* a held acknowledgement dies with its connection */
    bk_list_drop(b, c);
    bk_alias_free(b, c); /* aliases live as long as their connection [MQTT-3.3.2-7] */
    bk_mem_free(b, c->in);
    c->in = NULL;
    c->in_len = c->in_cap = 0;
    bk_conn_mark_dirty(b, c);
}

/* DISCONNECT with a reason, to a level-5 client whose CONNACK went out
 * ([MQTT-3.14.0-1]: none before it; a held CONNACK has not). No Reason
 * String: the log has the text, and the packet stays within any Maximum
 * Packet Size the client set [MQTT-3.14.2-3]. Nothing follows it on the
 * wire: the connection is CLOSING from here [MQTT-3.14.4-1]. */
static void send_disconnect(broker *b, broker_conn *c, uint8_t reason)
{
    if (c->level != MQTT_LEVEL_5 || c->state != CONN_ACTIVE || c->connack_held)
        return;
    uint8_t buf[8];
    size_t n = mqtt_encode_reason5(buf, sizeof buf, MQTT_DISCONNECT, reason, NULL, 0);
    ALWAYS(n != 0);
    uint8_t *p = bk_out_reserve(b, c, n);
    if (!p)
        return; /* closed without it: the connection ends either way [MQTT-4.13.2-1] */
    memcpy(p, buf, n);
    bk_out_commit(b, c, n);
}

void bk_conn_end_reason(broker *b, broker_conn *c, uint8_t reason, bool fire_will,
                        const char *why, uint64_t now_ms)
{
    if (c->state == CONN_CLOSING)
        return;
    send_disconnect(b, c, reason);
    bk_conn_end(b, c, fire_will, why, now_ms);
}

void bk_conn_fail(broker *b, broker_conn *c, uint8_t reason, const char *why)
{
    if (c->state == CONN_CLOSING)
        return;
    b->stats.protocol_errors++;
    bk_log_limited(b, BK_LOGK_PROTOCOL, BROKER_LOG_INFO,
                   "client %s: protocol error: %s (reason 0x%02x)", conn_name(c), why, reason);
    bk_conn_end_reason(b, c, reason, true, "protocol error", b->now_ms);
}

static void protocol_error(broker *b, broker_conn *c, const char *what)
{
    bk_conn_fail(b, c, MQTT_RC_PROTOCOL_ERROR, what);
}


/* DISCONNECT from the client. At level 5 it may change the Session
 * Expiry Interval, but not from 0 (section 3.14.2.2.2: a protocol error);
 * only reason 0x00 discards the will [MQTT-3.14.4-3]: 0x04 asks for it,
 * and any other reason is an abnormal end in which it is published too
 * [MQTT-3.1.2-8]. */
static void handle_disconnect(broker *b, broker_conn *c, const mqtt_reason_packet *d)
{
    session *s = c->sess;
    if (c->level != MQTT_LEVEL_5) {
        /* A clean end: the will is discarded [MQTT-3.14.4-3]. */
        bk_conn_end(b, c, false, "client sent DISCONNECT", b->now_ms);
        return;
    }
    if (d->props.present & MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY)) {
        uint32_t v = d->props.session_expiry;
        if (s->expiry_interval_s == 0 && v != 0) {
            protocol_error(b, c, "DISCONNECT sets a session expiry after CONNECT's 0");
            return;
        }
        uint32_t cap = b->lim.session_expiry_s ? b->lim.session_expiry_s : UINT32_MAX;
        if (v > cap)
            v = cap;
        if (v != s->expiry_interval_s) {
            s->expiry_interval_s = v; /* 0: the session ends with this connection */
            if (v)
                bk_journal_session_put(b, s);
        }
    }
    const mqtt_bytes *rs = &d->props.reason_string;
    if (d->reason != MQTT_RC_SUCCESS || rs->len)
        bk_log(b, BROKER_LOG_INFO, "client %s sent DISCONNECT, reason 0x%02x%s%.*s", s->id,
               d->reason, rs->len ? ": " : "", (int)(rs->len > 200 ? 200 : rs->len),
               rs->len ? (const char *)rs->p : "");
    bool will = d->reason != MQTT_RC_SUCCESS;
    bk_conn_end(b, c, will, will ? "client sent DISCONNECT (will published)" : "client sent DISCONNECT",
                b->now_ms);
}

bool bk_send_suback(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                    const uint8_t *codes, uint32_t ncodes)
{
    /* One code per filter of a SUBSCRIBE, itself at most the protocol's
     * largest packet: always encodable. A level-5 UNSUBACK has the
     * SUBACK's layout (packet id, empty properties, a code per filter). */
    ALWAYS(type == MQTT_SUBACK || c->level == MQTT_LEVEL_5);
    size_t n = mqtt_suback_size(c->level, ncodes);
    ALWAYS(n != 0);
    uint8_t *p = bk_out_reserve(b, c, n);
    if (!p)
        return false;
    size_t w = c->level == MQTT_LEVEL_5
                   ? mqtt_encode_suback5(p, n, type, packet_id, codes, ncodes, NULL, 0)
                   : mqtt_encode_suback(p, n, c->level, packet_id, codes, ncodes);
    ALWAYS(w == n);
    bk_out_commit(b, c, n);
    return true;
}

/* Handle one decoded packet. A SUBSCRIBE or UNSUBSCRIBE spends
 * b->in_budget itself and leaves its bk_list_result in b->in_list. The
 * connection may be CLOSING afterwards. */
static void handle_packet(broker *b, broker_conn *c, const mqtt_packet *pkt)
{
    if (c->state == CONN_NEW) {
        if (pkt->type != MQTT_CONNECT) {
            protocol_error(b, c, "first packet is not CONNECT");
            return;
        }
        bk_handle_connect(b, c, &pkt->u.connect);
        return;
    }
    switch (pkt->type) {
    case MQTT_CONNECT:
        protocol_error(b, c, "second CONNECT");
        break;
    case MQTT_PUBLISH:
        b->publisher = c; /* a subscriber that is behind may hold c (flow.c) */
        bk_handle_publish(b, c, &pkt->u.publish);
        b->publisher = NULL;
        break;
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBCOMP:
        bk_handle_ack(b, c, pkt->type, &pkt->u.ack);
        break;
    case MQTT_PUBREL:
        bk_handle_pubrel(b, c, &pkt->u.ack);
        break;
    case MQTT_SUBSCRIBE:
    case MQTT_UNSUBSCRIBE:
        b->in_list = (uint8_t)bk_list_start(b, c, pkt);
        b->in_list_seen = true;
        break;
    case MQTT_PINGREQ:
        if (!bk_send_simple(b, c, MQTT_PINGRESP, 0))
            bk_conn_end(b, c, true, "out of memory", b->now_ms);
        break;
    case MQTT_DISCONNECT:
        handle_disconnect(b, c, &pkt->u.disconnect);
        break;
    case MQTT_AUTH:
        /* No method was agreed in CONNECT (tern supports none: auth.h),
         * so the client may send no AUTH [MQTT-4.12.0-7]. */
        protocol_error(b, c, "AUTH without an authentication method");
        break;
    default:
        protocol_error(b, c, "unexpected packet type");
        break;
    }
}

/* A packet above limits.max_packet_size, refused as soon as its fixed
 * header shows its size, before the rest is read or buffered. MQTT 3.1.1
 * has no negative acknowledgement: a server that does not accept a PUBLISH
 * must either acknowledge it positively or close the network connection
 * [MQTT-3.3.5-2]. Acknowledging would tell the client its message was taken
 * care of when it is dropped, so the connection is closed (the client
 * keeps the message; it sees the refusal as a lost connection), said with
 * the client and the sizes, and counted. MQTT 5.0 names the fault: 0x95 in
 * DISCONNECT, or in CONNACK for a CONNECT whose level shows. */
/* The protocol level a CONNECT at buf declares, read before it is decoded,
 * so that the refusal of a malformed or oversized CONNECT is in the
 * client's version; 0 when not (yet) visible. */
static uint8_t connect_level_peek(const uint8_t *buf, size_t len)
{
    if (len < 2 || buf[0] >> 4 != MQTT_CONNECT)
        return 0;
    size_t i = 1;
    while (i < len && i < 4 && (buf[i] & 0x80))
        i++;
    i++; /* past the last Remaining Length byte */
    if (len < i + 7 || buf[i] != 0 || buf[i + 1] != 4 || memcmp(buf + i + 2, "MQTT", 4) != 0)
        return 0;
    return buf[i + 6];
}

static void refuse_too_large(broker *b, broker_conn *c, const uint8_t *buf, size_t len)
{
    uint32_t size = 0;
    (void)mqtt_frame_size(buf, len, 0, &size); /* the header was read: the size is known */
    unsigned type = len > 0 ? buf[0] >> 4 : 0;
    b->stats.packets_too_large++;
    bk_log_limited(b, BK_LOGK_TOO_LARGE, BROKER_LOG_WARN,
                   "client %s: %s of %u bytes refused: above limits.max_packet_size (%u); "
                   "connection closed",
                   conn_name(c), type == MQTT_PUBLISH ? "PUBLISH" : "packet", size,
                   b->lim.max_packet_size);
    if (c->state == CONN_NEW && connect_level_peek(buf, len) == MQTT_LEVEL_5) {
        c->level = MQTT_LEVEL_5;
        bk_send_connack(b, c, false, MQTT_RC_PACKET_TOO_LARGE,
                        "CONNECT above the maximum packet size");
    }
    bk_conn_end_reason(b, c, MQTT_RC_PACKET_TOO_LARGE, true, "packet too large", b->now_ms);
}

/* Input the codec refused: the reason code it names (mqtt_err_reason), in
 * DISCONNECT, or for a CONNECT in its CONNACK: [MQTT-3.1.4-1], and an
 * unsupported level gets 0x01 in 3.1.1's form, which a client of any
 * version reads [MQTT-3.1.2-2] (3.1.1). */
static void decode_error(broker *b, broker_conn *c, mqtt_err err, const uint8_t *buf, size_t len)
{
    if (c->state == CONN_NEW) {
        if (err == MQTT_ERR_BAD_PROTOCOL_LEVEL) {
            bk_send_connack(b, c, false, MQTT_CONNACK_BAD_PROTOCOL, NULL);
        } else if (connect_level_peek(buf, len) == MQTT_LEVEL_5) {
            c->level = MQTT_LEVEL_5;
            bk_send_connack(b, c, false, mqtt_err_reason(err), mqtt_err_str(err));
        }
    }
    /* A CONNECT after the first is a Protocol Error [MQTT-3.1.0-2], its
     * protocol name or level as bad as they may be: 0x84 is CONNACK's
     * alone, never DISCONNECT's. */
    uint8_t reason = MQTT_RC_PROTOCOL_ERROR;
    if (c->level == MQTT_LEVEL_5 && mqtt_err_reason(err) != MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION)
        reason = mqtt_err_reason(err);
    bk_conn_fail(b, c, reason, mqtt_err_str(err));
}

/* Append to the input tail, growing it by doubling but never beyond
 * `limit` (the packet's whole size once its header is known): a packet
 * still arriving costs at most its own size, which the platform's input
 * budget counts (broker_input_held). */
static int tail_append(broker *b, broker_conn *c, const uint8_t *p, size_t n, size_t limit)
{
    if (n > UINT32_MAX - c->in_len)
        return -1;
    size_t need = c->in_len + n;
    if (need > c->in_cap) {
        size_t cap = c->in_cap ? c->in_cap : 256;
        while (cap < need)
            cap *= 2;
        if (cap > limit && limit >= need)
            cap = limit;
        if (cap > UINT32_MAX)
            return -1;
        uint8_t *in = bk_mem_realloc(b, c->in, cap);
        if (!in)
            return -1;
        c->in = in;
        c->in_cap = (uint32_t)cap;
    }
    memcpy(c->in + c->in_len, p, n);
    c->in_len = (uint32_t)need;
    return 0;
}

typedef enum pk_result {
    PK_DONE,       /* handled: *used bytes */
    PK_NEED_MORE,  /* buf holds only part of a packet */
    PK_LIST,       /* a SUBSCRIBE or UNSUBSCRIBE: b->in_budget and b->in_list
                      say what it spent and what became of it */
    PK_ENDED,      /* the connection ended */
} pk_result;

/* Decode and handle one packet from buf. */
static pk_result one_packet(broker *b, broker_conn *c, const uint8_t *buf, size_t len,
                            size_t *used)
{
    mqtt_packet pkt;
    mqtt_err err = mqtt_decode(buf, len, MQTT_FROM_CLIENT, c->level, b->lim.max_packet_size,
                               &pkt, used);
    if (err != MQTT_OK) {
        if (err == MQTT_NEED_MORE)
            return PK_NEED_MORE;
        if (err == MQTT_ERR_TOO_LARGE)
            refuse_too_large(b, c, buf, len);
        else
            decode_error(b, c, err, buf, len);
        return PK_ENDED;
    }
    handle_packet(b, c, &pkt);
    if (b->in_list_seen) {
        b->in_list_seen = false; /* before any return: the next call starts clean */
        return c->state == CONN_CLOSING ? PK_ENDED : PK_LIST;
    }
    return c->state == CONN_CLOSING ? PK_ENDED : PK_DONE;
}

/* Move bytes from data into the input tail until it holds a whole packet.
 * Returns bytes taken; *whole tells whether the packet is complete; -1 on a
 * framing error or allocation failure (the connection has ended). */
static long complete_tail(broker *b, broker_conn *c, const uint8_t *data, size_t len,
                          bool *whole)
{
    size_t taken = 0;
    *whole = false;
    for (;;) {
        uint32_t size;
        size_t want;
        mqtt_err err = mqtt_frame_size(c->in, c->in_len, b->lim.max_packet_size, &size);
        size_t limit = SIZE_MAX;
        if (err == MQTT_NEED_MORE) {
            want = 1; /* the header is at most 5 bytes: go byte by byte */
        } else if (err == MQTT_ERR_TOO_LARGE) {
            refuse_too_large(b, c, c->in, c->in_len);
            return -1;
        } else if (err != MQTT_OK) {
            decode_error(b, c, err, c->in, c->in_len);
            return -1;
        } else {
            want = size - c->in_len;
            limit = size;
        }
        if (want == 0) {
            *whole = true;
            return (long)taken;
        }
        if (taken == len)
            return (long)taken;
        size_t n = want < len - taken ? want : len - taken;
        if (tail_append(b, c, data + taken, n, limit) != 0) {
            bk_conn_end(b, c, true, "out of memory for input", b->now_ms);
            return -1;
        }
        taken += n;
    }
}

static void tail_clear(broker *b, broker_conn *c)
{
    bk_mem_free(b, c->in);
    c->in = NULL;
    c->in_len = c->in_cap = 0;
}

bool broker_input_paused(const broker_conn *c)
{
    /* Output beyond twice the bound comes only from acknowledgements and
     * resends the client is not reading; stop reading its packets too. A
     * subscriber it publishes to may also hold it (flow.c). */
    return c->state != CONN_CLOSING &&
           (c->out_len - c->out_head >= c->in_pause_at || c->acks_count >= MAX_HELD_ACKS ||
            c->connack_held || c->hold_idx != 0);
}

size_t broker_input_held(const broker_conn *c)
{
    return c->in_cap;
}

size_t broker_input(broker *b, broker_conn *c, const uint8_t *data, size_t len, uint64_t now_ms)
{
    size_t used = 0;
    uint32_t budget = b->lim.work_budget;
    bk_list_result lr;
    pk_result r;

    b->now_ms = now_ms;
    if (c->state == CONN_CLOSING || c->state == CONN_REFUSING)
        return len; /* ending, or its refusal is waiting: input is discarded */
    if (broker_input_paused(c))
        return 0;
    c->last_rx_ms = now_ms;

    if (c->in_len > 0) {
        bool whole;
        long taken = complete_tail(b, c, data, len, &whole);
        if (taken < 0)
            goto ended;
        used = (size_t)taken;
        if (!whole)
            goto out;
        b->in_budget = budget;
        if (c->job) {
            /* The rest of a packet begun in an earlier call, decoded (and
             * so checked) then and kept whole in the tail since. */
            ALWAYS(c->in_len == bk_list_size(c->job));
            lr = bk_list_resume(b, c, c->in);
            r = c->state == CONN_CLOSING ? PK_ENDED : PK_LIST;
        } else {
            size_t n;
            r = one_packet(b, c, c->in, c->in_len, &n);
            ALWAYS(r == PK_ENDED || (r != PK_NEED_MORE && n == c->in_len));
            lr = (bk_list_result)b->in_list;
        }
        if (r == PK_ENDED)
            goto ended;
        if (r == PK_LIST) {
            budget = b->in_budget;
            /* First, with a whole budget: never left for later. */
            ALWAYS(lr != BK_LIST_DEFERRED);
            if (lr == BK_LIST_PENDING) {
                /* Not finished: keep the packet, and give its last byte
                 * back so the platform calls again (broker.h). This call
                 * took it. */
                ALWAYS(used > 0);
                c->in_len--;
                used--;
                goto out;
            }
        } else {
            budget--;
        }
        tail_clear(b, c);
    }
    while (used < len && budget > 0 && !broker_input_paused(c)) {
        size_t n;
        b->in_budget = budget; /* for a SUBSCRIBE or UNSUBSCRIBE */
        r = one_packet(b, c, data + used, len - used, &n);
        if (r != PK_DONE) {
            if (r == PK_ENDED)
                goto ended;
            if (r == PK_NEED_MORE) {
                uint32_t size;
                size_t limit = mqtt_frame_size(data + used, len - used,
                                               b->lim.max_packet_size, &size) == MQTT_OK
                                   ? size
                                   : SIZE_MAX;
                if (tail_append(b, c, data + used, len - used, limit) != 0) {
                    bk_conn_end(b, c, true, "out of memory for input", now_ms);
                    goto ended;
                }
                used = len;
                break;
            }
            budget = b->in_budget;
            lr = (bk_list_result)b->in_list;
            if (lr == BK_LIST_DEFERRED)
                break; /* whole, with the next call's budget */
            if (lr == BK_LIST_PENDING) {
                /* Begun: keep the packet but its last byte, as above. */
                if (tail_append(b, c, data + used, n - 1, n) != 0) {
                    bk_conn_end(b, c, true, "out of memory for input", now_ms);
                    goto ended;
                }
                used += n - 1;
                break;
            }
            used += n;
            continue;
        }
        used += n;
        budget--;
    }
out:
    b->stats.bytes_received += used;
    return used;
ended:
    b->stats.bytes_received += len;
    return len;
}
