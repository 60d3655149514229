/*
 * gen_journal_seeds.c - fuzz_journal's seeds: the core's persistence
 * records (src/broker/journal.h) as a store hands them back to restore,
 * at MQTT 3.1.1 and 5.0. Part of gen_seeds (gen_seeds.h).
 */
#include "fuzz/gen_seeds.h"

#include <string.h>

/* ---- fuzz_journal ------------------------------------------------------ */

/* Record fields as src/broker/journal.h describes them: big-endian
 * integers, byte strings as u32 length + bytes; the MQTT 5.0 fields after
 * the 3.1.1 ones of each record. */
static void put_be(seed *s, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        put_u8(s, (uint8_t)(v >> (8 * i)));
}

static void put_str(seed *s, const char *str)
{
    size_t n = strlen(str);
    put_be(s, n, 4);
    if (n)
        put(s, str, n);
}

enum { J_RETAIN_SET = 1, J_SESSION_PUT = 3, J_SUB_PUT = 5, J_MSG_PUT = 7, J_QUEUE_PUT = 9,
       J_QUEUE_STATE = 10, J_INQOS2_PUT = 12, J_RESET = 14, J_WILL_PUT = 15 };

/* A wall-clock time near the one fuzz_journal sets on odd-sized inputs
 * (2026-01-01), and one marked "time left" (bit 63). */
#define SEED_WALL 1767225600000ull
#define SEED_LEFT (1ull << 63)

/* Properties as forwarded: Content Type "t", a User Property k=v. */
static void put_props(seed *s)
{
    static const uint8_t p[] = {0x03, 0x00, 0x01, 't', 0x26, 0x00, 0x01, 'k', 0x00, 0x01, 'v'};
    put_be(s, sizeof p, 4);
    put(s, p, sizeof p);
}

static void session_put(seed *s, const char *id, const char *identity, uint8_t flags,
                        uint32_t interval, uint64_t expiry_at)
{
    put_u8(s, J_SESSION_PUT);
    put_str(s, id);
    put_str(s, identity);
    put_u8(s, flags);
    put_be(s, interval, 4);
    put_be(s, expiry_at, 8);
}

static void queue_put(seed *s, const char *id, uint64_t seq, uint64_t msg_id, uint8_t qos,
                      uint32_t sub_id, int more)
{
    put_u8(s, J_QUEUE_PUT);
    put_str(s, id);
    put_be(s, seq, 8);
    put_be(s, msg_id, 8);
    put_u8(s, qos);
    put_u8(s, 0);
    put_be(s, sub_id, 4);
    put_be(s, (uint64_t)more * 4, 4);
    for (int i = 0; i < more; i++)
        put_be(s, (uint64_t)sub_id + 1 + (uint64_t)i, 4);
}

static void msg_put(seed *s, uint64_t id, const char *topic, const char *payload, uint8_t qos,
                    uint64_t expiry_at)
{
    put_u8(s, J_MSG_PUT);
    put_be(s, id, 8);
    put_str(s, topic);
    put_str(s, payload);
    put_u8(s, qos);
    put_u8(s, 0);
    put_props(s);
    put_be(s, expiry_at, 8);
}

void gen_journal(const char *dir)
{
    seed s = {.len = 0};
    /* A consistent restore: a session with a subscription, a message queued
     * for it (one inflight), an inbound QoS 2 id, a retained message. */
    put_u8(&s, J_RESET);
    session_put(&s, "sub", "", 0, 0, 0);
    put_u8(&s, J_SUB_PUT);
    put_str(&s, "sub");
    put_str(&s, "a/#");
    put_u8(&s, 2);
    put_u8(&s, 0x04 | 0x08 | 0x10); /* no local, retain as published, handling 1 */
    put_be(&s, 3, 4);
    msg_put(&s, 1, "a/b", "hello", 2, 0);
    queue_put(&s, "sub", 1, 1, 2, 3, 2);
    put_u8(&s, J_QUEUE_STATE);
    put_str(&s, "sub");
    put_be(&s, 1, 8);
    put_u8(&s, 2);
    put_be(&s, 7, 2);
    put_u8(&s, J_INQOS2_PUT);
    put_str(&s, "sub");
    put_be(&s, 9, 2);
    put_u8(&s, J_RETAIN_SET);
    put_str(&s, "a/r");
    put_str(&s, "kept");
    put_u8(&s, 1);
    put_props(&s);
    put_be(&s, 0, 8);
    write_seed(dir, "journal", "restore-session", &s);

    /* Inconsistent: a queue entry for an unknown session and message. */
    s.len = 0;
    queue_put(&s, "ghost", 5, 42, 1, 0, 0);
    session_put(&s, "ghost", "CN=x", 1, 0, 0);
    write_seed(dir, "journal", "dangling-queue", &s);

    /* MQTT 5.0 times (odd size: read with the wall clock): a session that
     * expired while the broker was down with its delayed will, one that
     * did not, messages expired, not yet and counted as time left, queue
     * entries sent and not, retained messages expired and not. */
    s.len = 0;
    session_put(&s, "gone", "", 0, 60, SEED_WALL - 1000);
    put_u8(&s, J_WILL_PUT);
    put_str(&s, "gone");
    put_str(&s, "w/gone");
    put_str(&s, "bye");
    put_u8(&s, 1);
    put_u8(&s, 1);
    put_props(&s);
    put_be(&s, SEED_WALL + 60000, 8);
    put_be(&s, SEED_WALL + 5000, 8);
    session_put(&s, "keep", "", 0, 3600, SEED_WALL + 60000);
    put_u8(&s, J_SUB_PUT);
    put_str(&s, "keep");
    put_str(&s, "w/#");
    put_u8(&s, 1);
    put_u8(&s, 0);
    put_be(&s, 0, 4);
    msg_put(&s, 1, "t/1", "old", 1, SEED_WALL - 1);
    msg_put(&s, 2, "t/2", "new", 2, SEED_WALL + 1000);
    msg_put(&s, 3, "t/3", "left", 1, SEED_LEFT | 500);
    queue_put(&s, "keep", 1, 1, 1, 0, 0);
    put_u8(&s, J_QUEUE_STATE);
    put_str(&s, "keep");
    put_be(&s, 1, 8);
    put_u8(&s, 1);
    put_be(&s, 4, 2);
    queue_put(&s, "keep", 2, 1, 1, 0, 0);
    queue_put(&s, "keep", 3, 2, 2, 8, 1);
    queue_put(&s, "keep", 4, 3, 1, 0, 0);
    put_u8(&s, J_RETAIN_SET);
    put_str(&s, "r/old");
    put_str(&s, "x");
    put_u8(&s, 0);
    put_be(&s, 0, 4);
    put_be(&s, SEED_WALL - 1, 8);
    if (s.len % 2 == 0)
        put_u8(&s, 0); /* odd: a record type 0 ends the walk */
    write_seed(dir, "journal", "mqtt5-expiry", &s);
}
