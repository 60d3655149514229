/*
 * console.c - the operator console's requests and answers (SPEC C6,
 * docs/CONSOLE.md): an operator's PUBLISH to $SYS/console/request is parsed
 * as one JSON object, dispatched to its command, and answered with one JSON
 * object published to the request's Response Topic (with its Correlation
 * Data) or to $SYS/console/response/<identity>. Every request is logged
 * with who asked and how it went, and counted for $SYS.
 *
 * The request never reaches a subscriber and is never retained: publish.c
 * hands it here instead of routing it. What the commands do is in
 * console_cmd.c (the broker's own state) and console_list.c (the bounded
 * lists); what only the platform knows goes through broker_console_ops.
 */
#include "broker/access.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/console_cmd.h"
#include "broker/console_core.h"
#include "broker/deliver.h"
#include "broker/mem.h"
#include "broker/session.h"
#include "broker/subscribe.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bytes of an answer's PUBLISH besides topic, payload and correlation data:
 * fixed header, topic length, packet id, property length, the Payload
 * Format Indicator and the Content Type. */
#define ANSWER_OVERHEAD 64u
#define CONTENT_TYPE "application/json"
/* Bytes an answer keeps free for the error that replaces one too large. */
#define ERROR_ANSWER_MIN 256u

void broker_set_console_ops(broker *b, const broker_console_ops *ops)
{
    if (ops)
        b->console.ops = *ops;
    else
        memset(&b->console.ops, 0, sizeof b->console.ops);
}

void bk_console_refused(broker *b)
{
    b->console.refused++;
}

int bk_con_fail(bk_con_req *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- platform ops -------------------------------------------------------- */

typedef int (*plain_op)(void *ctx, jw *w, char *err, size_t errlen);

static int run_op(bk_con_req *r, plain_op op)
{
    if (!op)
        return bk_con_fail(r, "not available on this platform");
    r->err[0] = '\0';
    if (op(r->b->console.ops.ctx, r->w, r->err, r->errlen) == 0)
        return 0;
    if (!r->err[0])
        snprintf(r->err, r->errlen, "failed");
    return -1;
}

static int con_config_show(bk_con_req *r)
{
    static const char *const none[] = {NULL};
    if (bk_con_args_only(r, none) != 0)
        return -1;
    return run_op(r, r->b->console.ops.config_show);
}

static int con_backup_now(bk_con_req *r)
{
    static const char *const none[] = {NULL};
    if (bk_con_args_only(r, none) != 0)
        return -1;
    return run_op(r, r->b->console.ops.backup_now);
}

static int con_scrub_now(bk_con_req *r)
{
    static const char *const none[] = {NULL};
    if (bk_con_args_only(r, none) != 0)
        return -1;
    return run_op(r, r->b->console.ops.scrub_now);
}

static int con_diag(bk_con_req *r)
{
    static const char *const none[] = {NULL};
    if (bk_con_args_only(r, none) != 0)
        return -1;
    return run_op(r, r->b->console.ops.diag);
}

/* ---- dispatch ------------------------------------------------------------ */

typedef struct con_command {
    const char *name;
    int (*fn)(bk_con_req *r);
} con_command;

/* Indexed by bk_console_cmd. */
static const con_command commands[BK_CON_COUNT] = {
    [BK_CON_STATUS] = {"status", bk_con_status},
    [BK_CON_CLIENTS] = {"clients", bk_con_clients},
    [BK_CON_KICK] = {"kick", bk_con_kick},
    [BK_CON_SESSION_DELETE] = {"session-delete", bk_con_session_delete},
    [BK_CON_RETAINED_LIST] = {"retained-list", bk_con_retained_list},
    [BK_CON_RETAINED_CLEAR] = {"retained-clear", bk_con_retained_clear},
    [BK_CON_CONFIG_SHOW] = {"config-show", con_config_show},
    [BK_CON_BACKUP_NOW] = {"backup-now", con_backup_now},
    [BK_CON_SCRUB_NOW] = {"scrub-now", con_scrub_now},
    [BK_CON_DIAG] = {"diag", con_diag},
    [BK_CON_LOG_LEVEL] = {"log-level", bk_con_log_level},
};

/* The answer's start: {"command": NAME, "ok": ok (, "error": err)}. */
static void answer_begin(jw *w, char *buf, size_t cap, const char *name, bool ok,
                         const char *err)
{
    jw_init(w, buf, cap);
    jw_obj(w, NULL);
    jw_str(w, "command", name);
    jw_bool(w, "ok", ok);
    if (!ok)
        jw_str(w, "error", err);
}

/*
 * Parse the request and run it into buf[0..cap): the answer's length, with
 * *ok and err saying how it went and *name the command's (NULL when the
 * request names none we know).
 */
static size_t run_request(broker *b, broker_conn *c, const mqtt_publish *p, char *buf,
                          size_t cap, const char **name, bool *ok, char *err, size_t errlen)
{
    jw w;
    jr_val req, cmd;
    char why[96];
    *name = NULL;
    *ok = false;
    if (p->payload.len > BROKER_CONSOLE_REQUEST_MAX) {
        snprintf(err, errlen, "request larger than %u bytes", BROKER_CONSOLE_REQUEST_MAX);
    } else if (jr_parse((const char *)p->payload.p, p->payload.len, &req, why, sizeof why) != 0) {
        snprintf(err, errlen, "request is not JSON: %s", why);
    } else if (req.type != JR_OBJECT) {
        snprintf(err, errlen, "request is not a JSON object");
    } else if (jr_get(&req, "command", &cmd) != 0 || cmd.type != JR_STRING) {
        snprintf(err, errlen, "request has no \"command\" string");
    } else {
        int i = 0;
        while (i < BK_CON_COUNT && !jr_string_is(&cmd, commands[i].name))
            i++;
        if (i == BK_CON_COUNT) {
            snprintf(err, errlen, "unknown command");
        } else {
            *name = commands[i].name;
            b->console.per_command[i]++;
            answer_begin(&w, buf, cap, *name, true, NULL);
            bk_con_req r = {b, c, &req, &w, 2, err, errlen};
            err[0] = '\0';
            if (commands[i].fn(&r) == 0) {
                jw_end(&w);
                size_t n = jw_finish(&w);
                if (n > 0) {
                    *ok = true;
                    return n;
                }
                snprintf(err, errlen, "answer larger than %zu bytes (the limit for this client)",
                         cap - 1);
            }
        }
    }
    answer_begin(&w, buf, cap, *name, false, err);
    jw_end(&w);
    return jw_finish(&w);
}

/* ---- the answer ---------------------------------------------------------- */

/* BROKER_CONSOLE_RESPONSE_PREFIX + identity with '%', '/', '+' and '#'
 * written %25, %2F, %2B, %23 (one topic level, no wildcard), into a new
 * allocation; NULL when out of memory. */
static char *identity_topic(broker *b, const char *identity, size_t *len)
{
    size_t pre = sizeof BROKER_CONSOLE_RESPONSE_PREFIX - 1, n = strlen(identity);
    char *t = bk_mem_alloc(b, pre + 3 * n + 1);
    if (!t)
        return NULL;
    memcpy(t, BROKER_CONSOLE_RESPONSE_PREFIX, pre);
    size_t k = pre;
    for (size_t i = 0; i < n; i++) {
        char ch = identity[i];
        if (ch == '%' || ch == '/' || ch == '+' || ch == '#') {
            static const char hex[] = "0123456789ABCDEF";
            t[k++] = '%';
            t[k++] = hex[(unsigned char)ch >> 4];
            t[k++] = hex[(unsigned char)ch & 15];
        } else {
            t[k++] = ch;
        }
    }
    t[k] = '\0';
    *len = k;
    return t;
}

/* Why the request's Response Topic cannot carry the answer, or NULL. */
static const char *response_topic_refusal(broker *b, broker_conn *c, mqtt_bytes t)
{
    if (t.len == 0 || !mqtt_topic_name_valid(t.p, t.len))
        return "Response Topic is not a valid topic name";
    if (bk_topic_over_limits(b, t.p, t.len))
        return "Response Topic beyond the broker's topic limits";
    if (!bk_session_may(b, c->sess, t.p, t.len, BROKER_ACL_WRITE))
        return "Response Topic not writable by this operator";
    return NULL;
}

/* Publish answer json[0..n) on topic with the request's correlation data. */
static void publish_answer(broker *b, const uint8_t *topic, size_t tlen, mqtt_bytes corr,
                           const char *json, size_t n, uint8_t qos)
{
    size_t cap = corr.len + ANSWER_OVERHEAD, np = 0;
    uint8_t *props = bk_mem_alloc(b, cap);
    if (!props) {
        bk_log(b, BROKER_LOG_WARN, "console: answer not sent: out of memory");
        return;
    }
    np += mqtt_prop_u8(props + np, cap - np, MQTT_PROP_PAYLOAD_FORMAT, 1);
    np += mqtt_prop_bytes(props + np, cap - np, MQTT_PROP_CONTENT_TYPE,
                          (const uint8_t *)CONTENT_TYPE, sizeof CONTENT_TYPE - 1);
    if (corr.len)
        np += mqtt_prop_bytes(props + np, cap - np, MQTT_PROP_CORRELATION_DATA, corr.p, corr.len);
    bk_pubview v = {topic, (const uint8_t *)json, props, tlen, n, np, 0};
    /* The broker publishes the answer, not the operator: No Local, which
     * concerns the publisher's own session, must not hide it. */
    broker_conn *publisher = b->publisher;
    b->publisher = NULL;
    (void)bk_route_view(b, v, qos, false, NULL);
    b->publisher = publisher;
    bk_mem_free(b, props);
}

void bk_console_request(broker *b, broker_conn *c, const mqtt_publish *p)
{
    const mqtt_props *pr = &p->props;
    bool v5 = c->level == MQTT_LEVEL_5;
    mqtt_bytes rt = {NULL, 0}, corr = {NULL, 0};
    const char *rt_refused = NULL;
    if (v5 && (pr->present & MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC))) {
        rt = pr->response_topic;
        rt_refused = response_topic_refusal(b, c, rt);
    }
    if (v5 && (pr->present & MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA)))
        corr = pr->correlation_data;

    char *itopic = NULL;
    const uint8_t *topic = rt.p;
    size_t tlen = rt.len;
    if (!rt.p || rt_refused) {
        itopic = c->identity ? identity_topic(b, c->identity, &tlen) : NULL;
        topic = (const uint8_t *)itopic;
    }

    /* The answer must fit the requester's Maximum Packet Size; 3.1.1
     * clients (UINT32_MAX) get BROKER_CONSOLE_ANSWER_MAX. */
    size_t cap = BROKER_CONSOLE_ANSWER_MAX;
    uint64_t room = (uint64_t)c->client_max_packet;
    uint64_t over = (uint64_t)tlen + corr.len + ANSWER_OVERHEAD;
    if (room < over + cap)
        cap = room > over + ERROR_ANSWER_MIN ? (size_t)(room - over) : ERROR_ANSWER_MIN;
    char *buf = bk_mem_alloc(b, cap + 1);
    char err[160];
    const char *name = NULL;
    bool ok = false;
    size_t n = 0;
    if (buf) {
        if (rt_refused) {
            snprintf(err, sizeof err, "%s", rt_refused);
            jw w;
            answer_begin(&w, buf, cap + 1, NULL, false, err);
            jw_end(&w);
            n = jw_finish(&w);
        } else {
            n = run_request(b, c, p, buf, cap + 1, &name, &ok, err, sizeof err);
        }
    } else {
        snprintf(err, sizeof err, "out of memory");
    }
    b->console.requests++;
    if (!ok)
        b->console.errors++;
    const char *sess_id = c->sess ? c->sess->id : "?";
    bk_log(b, BROKER_LOG_INFO, "console: operator %s (client %s): %s: %s%s",
           c->identity ? c->identity : "-", sess_id, name ? name : "(no command)",
           ok ? "ok" : "error: ", ok ? "" : err);
    if (topic && n > 0)
        publish_answer(b, topic, tlen, corr, buf, n, p->qos);
    else
        bk_log(b, BROKER_LOG_WARN, "console: answer to operator %s not sent: %s",
               c->identity ? c->identity : "-", !topic ? "no topic to answer on" : err);
    bk_mem_free(b, buf);
    bk_mem_free(b, itopic);
}

/* ---- $SYS ---------------------------------------------------------------- */

static void put_u64(broker *b, const char *topic, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    (void)broker_sys_put(b, topic, buf);
}

void bk_console_sys_publish(broker *b)
{
    const bk_console *k = &b->console;
    put_u64(b, "$SYS/broker/console/requests", k->requests);
    put_u64(b, "$SYS/broker/console/refused", k->refused);
    put_u64(b, "$SYS/broker/console/errors", k->errors);
    for (int i = 0; i < BK_CON_COUNT; i++) {
        char topic[80];
        snprintf(topic, sizeof topic, "$SYS/broker/console/commands/%s", commands[i].name);
        put_u64(b, topic, k->per_command[i]);
    }
}
