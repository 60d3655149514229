/*
 * sntp.c - the SNTP client of sntp.h on lwIP's raw UDP API. One round asks
 * every configured server (RFC 4330 client mode, a random 64-bit transmit
 * timestamp as the nonce the reply must echo), re-asks the silent ones once
 * a second with a fresh nonce (UDP may drop the first datagram while ARP
 * resolves; a late reply to the old one is refused rather than measured
 * against the wrong T1), and after
 * SNTP_ROUND_MS votes (time/agree.h): agreement steps the clock, anything
 * else leaves it alone and says why. Everything runs from lwIP timers and
 * callbacks in the main loop: one timer at a time, no locking.
 */
#include "net/sntp.h"

#include "console.h"
#include "net/net.h"
#include "rng/entropy.h"
#include "serve/serve.h"
#include "time/agree.h"
#include "time/sntp_msg.h"
#include "wallclock.h"

#include "lwip/ip_addr.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"

#include <stdio.h>
#include <string.h>

enum {
    SNTP_FIRST_MS = 500,     /* from start (or address) to the first round */
    SNTP_RESEND_MS = 1000,   /* re-ask silent servers this often in a round */
    SNTP_ROUND_MS = 3000,    /* answers after this are late: the vote is held */
    SNTP_RETRY_S = 64,       /* after a round without agreement, unless resync is sooner */
};

struct sntp_source {
    tern_sntp_server srv;
    uint64_t nonce;         /* the transmit timestamp of the last request sent */
    int64_t t1_ns;          /* wallclock_raw_ns() when it was sent */
    int answered;
    const char *bad;        /* the last invalid reply's reason this round */
    time_sample sample;
};

struct sntp {
    struct udp_pcb *pcb;
    struct sntp_source src[TERN_TIME_SERVERS_MAX];
    unsigned n;
    int64_t max_step_ms;
    uint32_t resync_s;
    uint32_t round_ms;      /* ms into the current round; 0 between rounds */
    unsigned refusals;
    unsigned last_answered, last_agreeing;
    int64_t last_offset_ms;
    time_t last_sync;       /* wall time of the last agreed step; 0 never */
    int last_agreed;        /* the last round stepped the clock */
};

_Static_assert(TERN_TIME_SERVERS_MAX <= TIME_MAX_SOURCES,
               "the vote must have room for every configured server");

/* The one client, driven from lwIP's timer and receive callback. */
static struct sntp ks;

static void send_one(struct sntp_source *s)
{
    uint8_t msg[SNTP_MSG_LEN];
    ip_addr_t to;
    uint64_t nonce = 0;
    struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, SNTP_MSG_LEN, PBUF_RAM);
    if (!p)
        return; /* retried next second */
    /* Unpredictable once the DRBG is seeded; before that a hash of the
     * pool and the clock, which still defeats a blind spoofer that cannot
     * see our requests. */
    if (rng_bytes(&nonce, sizeof nonce) != 0)
        nonce = ((uint64_t)rng_u32_nonkey() << 32) | rng_u32_nonkey();
    s->nonce = nonce | 1; /* never the zero an unset originate reads as */
    sntp_request(msg, s->nonce);
    memcpy(p->payload, msg, SNTP_MSG_LEN);
    IP_ADDR4(&to, s->srv.addr[0], s->srv.addr[1], s->srv.addr[2], s->srv.addr[3]);
    s->t1_ns = wallclock_raw_ns();
    udp_sendto(ks.pcb, p, &to, s->srv.port);
    pbuf_free(p);
}

static void round_begin(void)
{
    for (unsigned i = 0; i < ks.n; i++) {
        ks.src[i].answered = 0;
        ks.src[i].bad = NULL;
        send_one(&ks.src[i]);
    }
}

static void on_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr,
                    u16_t port)
{
    (void)arg;
    (void)pcb;
    int64_t t4 = wallclock_raw_ns();
    uint8_t msg[SNTP_MSG_LEN + 16];
    u16_t len = pbuf_copy_partial(p, msg, (u16_t)sizeof msg, 0);
    pbuf_free(p);
    if (ks.round_ms == 0 || !IP_IS_V4(addr))
        return; /* between rounds nothing is expected */
    uint32_t a = ip4_addr_get_u32(ip_2_ip4(addr));
    for (unsigned i = 0; i < ks.n; i++) {
        struct sntp_source *s = &ks.src[i];
        uint32_t want;
        memcpy(&want, s->srv.addr, 4); /* both network byte order */
        if (want != a || s->srv.port != port || s->answered)
            continue;
        sntp_reply r;
        const char *why = sntp_reply_parse(msg, len, s->nonce, &r);
        if (why) {
            s->bad = why; /* said once at the vote: a flood makes one line */
            continue;
        }
        sntp_offset(s->t1_ns, &r, t4, &s->sample.offset_ms, &s->sample.delay_ms);
        s->answered = 1;
    }
}

static void put_u(const char *topic, unsigned long long v)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", v);
    kserve_sys_put(topic, text);
}

void sntp_publish(void)
{
    char text[64];
    kserve_sys_put("$SYS/broker/time/status", wallclock_from_sntp() ? "sntp" : "rtc");
    snprintf(text, sizeof text, "%u configured, %u answered, %u agreeing", ks.n,
             ks.last_answered, ks.last_agreeing);
    kserve_sys_put("$SYS/broker/time/sources", text);
    if (ks.last_sync) {
        struct tm tm;
        gmtime_r(&ks.last_sync, &tm);
        snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    } else {
        snprintf(text, sizeof text, "never");
    }
    kserve_sys_put("$SYS/broker/time/last_sync", text);
    snprintf(text, sizeof text, "%lld", (long long)ks.last_offset_ms);
    kserve_sys_put("$SYS/broker/time/offset_ms", text);
    put_u("$SYS/broker/time/refusals", ks.refusals);
}

static void vote(void)
{
    time_sample samples[TERN_TIME_SERVERS_MAX];
    size_t m = 0;
    for (unsigned i = 0; i < ks.n; i++) {
        struct sntp_source *s = &ks.src[i];
        const uint8_t *a = s->srv.addr;
        if (s->answered) {
            samples[m++] = s->sample;
            kprintf("tern: time: %u.%u.%u.%u:%u offset %lld ms delay %lld ms\n", a[0], a[1],
                    a[2], a[3], s->srv.port, (long long)s->sample.offset_ms,
                    (long long)s->sample.delay_ms);
        } else {
            kprintf("tern: time: %u.%u.%u.%u:%u %s\n", a[0], a[1], a[2], a[3], s->srv.port,
                    s->bad ? s->bad : "no answer");
        }
    }
    /* Offsets come from NTP timestamps (136 years at most, in ms), so the
     * step in ns below fits in 63 bits.
     * Without an RTC date there is nothing to measure a step against: the
     * first agreement sets the date (still no earlier than the floor). */
    int64_t max_step = wallclock_valid() ? ks.max_step_ms : 0;
    time_agreement ag;
    time_agree(samples, m, ks.n, max_step, &ag);
    ks.last_answered = ag.answered;
    ks.last_agreeing = ag.agreeing;
    const char *fallback = wallclock_from_sntp()
                               ? "the clock keeps its last agreed time"
                               : "certificates stay checked against the RTC (ADR-025 floor)";
    ks.last_agreed = ag.verdict == TIME_AGREED && wallclock_step(ag.offset_ms * 1000000) == 0;
    if (ks.last_agreed) {
        ks.last_offset_ms = ag.offset_ms;
        ks.last_sync = wallclock_now();
        kserve_wall_clock_changed();
        char date[96];
        wallclock_describe(date, sizeof date);
        kprintf("tern: time: sntp agreed, %u of %u sources, offset %lld ms: clock stepped, "
                "now %s\n", ag.agreeing, ag.configured, (long long)ag.offset_ms, date);
    } else {
        ks.refusals++;
        if (ag.verdict == TIME_STEP_REFUSED)
            kprintf("tern: time: sntp refused: %u of %u sources agree on %lld ms, beyond "
                    "time.max_step %lld s; %s\n", ag.agreeing, ag.configured,
                    (long long)ag.offset_ms, (long long)(ks.max_step_ms / 1000), fallback);
        else if (ag.verdict == TIME_AGREED)
            kprintf("tern: time: sntp refused: the agreed time is before the floor "
                    "(2025-01-01); %s\n", fallback);
        else
            kprintf("tern: time: sntp no agreement: %s (%u of %u answered, %u agreeing); "
                    "%s\n", ag.reason, ag.answered, ag.configured, ag.agreeing, fallback);
    }
    sntp_publish();
}

/* The one timer: rounds and the waits between them. */
static void tick(void *arg)
{
    (void)arg;
    if (ks.round_ms == 0) {
        if (!net_has_address()) {
            sys_timeout(SNTP_FIRST_MS, tick, NULL);
            return;
        }
        round_begin();
        ks.round_ms = SNTP_RESEND_MS;
        sys_timeout(SNTP_RESEND_MS, tick, NULL);
        return;
    }
    int all = 1;
    for (unsigned i = 0; i < ks.n; i++)
        all &= ks.src[i].answered;
    if (!all && ks.round_ms < SNTP_ROUND_MS) {
        for (unsigned i = 0; i < ks.n; i++)
            if (!ks.src[i].answered)
                send_one(&ks.src[i]);
        ks.round_ms += SNTP_RESEND_MS;
        sys_timeout(SNTP_RESEND_MS, tick, NULL);
        return;
    }
    ks.round_ms = 0;
    vote();
    uint32_t wait_s = ks.resync_s;
    if (!ks.last_agreed && wait_s > SNTP_RETRY_S)
        wait_s = SNTP_RETRY_S;
    sys_timeout(wait_s * 1000u, tick, NULL);
}

void sntp_start(const tern_config *config)
{
    const tern_config_time *cfg = &config->time;
    tern_sntp_server srv[TERN_TIME_SERVERS_MAX];
    ks.n = (unsigned)tern_config_sntp_servers(config, srv, TERN_TIME_SERVERS_MAX);
    ks.max_step_ms = (int64_t)cfg->max_step_s * 1000;
    ks.resync_s = cfg->resync_interval_s;
    for (unsigned i = 0; i < ks.n; i++)
        ks.src[i] = (struct sntp_source){.srv = srv[i]};
    sntp_publish();
    if (ks.n == 0)
        return;
    ks.pcb = udp_new();
    if (!ks.pcb || udp_bind(ks.pcb, IP_ADDR_ANY, 0) != ERR_OK) {
        kprintf("tern: time: sntp: no UDP socket; certificates stay checked against the "
                "RTC (ADR-025 floor)\n");
        return;
    }
    udp_recv(ks.pcb, on_recv, NULL);
    kprintf("tern: time: sntp: %u servers, max step %u s, resync every %u s; until they "
            "agree certificates are checked against the RTC (ADR-025 floor)\n",
            ks.n, cfg->max_step_s, cfg->resync_interval_s);
    sys_timeout(SNTP_FIRST_MS, tick, NULL);
}
