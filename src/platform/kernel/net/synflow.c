/*
 * synflow.c - recognising a new connection's SYN and remembering refused
 * flows (synflow.h).
 */
#include "net/synflow.h"

#include "broker/hash.h"

#include <string.h>

enum {
    ETH_HDR = 14,
    ETH_TYPE_IPV4 = 0x0800,
    IP_PROTO_TCP = 6,
    TCP_MIN_HDR = 20,
    TCP_FIN = 0x01,
    TCP_SYN = 0x02,
    TCP_RST = 0x04,
    TCP_ACK = 0x10,
};

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

bool syn_parse(const uint8_t *frame, size_t len, syn_flow *out)
{
    if (len < ETH_HDR + 20 || be16(frame + 12) != ETH_TYPE_IPV4)
        return false;
    const uint8_t *ip = frame + ETH_HDR;
    size_t ip_room = len - ETH_HDR;
    size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
    size_t total = be16(ip + 2);
    /* Version 4, a sane header, a total length inside the frame (Ethernet
     * may pad short frames: the total may be less than the room). */
    if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl + TCP_MIN_HDR || total > ip_room)
        return false;
    /* Fragments are lwIP's business (a SYN is never one in practice). */
    if ((be16(ip + 6) & 0x3fff) != 0 || ip[9] != IP_PROTO_TCP)
        return false;
    const uint8_t *tcp = ip + ihl;
    size_t doff = (size_t)(tcp[12] >> 4) * 4;
    if (doff < TCP_MIN_HDR || ihl + doff > total)
        return false;
    uint8_t flags = tcp[13];
    if ((flags & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN)) != TCP_SYN)
        return false;
    memcpy(out->src, ip + 12, 4);
    out->sport = be16(tcp);
    out->dport = be16(tcp + 2);
    return true;
}

void syn_table_init(syn_table *t, const uint64_t key[2])
{
    memset(t, 0, sizeof *t);
    t->key[0] = key[0];
    t->key[1] = key[1];
}

static uint32_t flow_hash(const syn_table *t, const syn_flow *f)
{
    uint8_t b[8];
    memcpy(b, f->src, 4);
    b[4] = (uint8_t)(f->sport >> 8);
    b[5] = (uint8_t)f->sport;
    b[6] = (uint8_t)(f->dport >> 8);
    b[7] = (uint8_t)f->dport;
    uint32_t h = (uint32_t)siphash(t->key, b, sizeof b, 1, 3);
    return h != 0 ? h : 1;
}

/* The set holds hashes that agree in their low bits; the tag is the whole
 * hash, so two flows of one set are told apart unless all 32 bits agree
 * (then one's retransmissions are dropped a little longer: harmless). */
bool syn_table_has(const syn_table *t, const syn_flow *f, uint64_t now_ms)
{
    uint32_t h = flow_hash(t, f);
    const struct syn_entry *set = t->e[h % SYN_TABLE_SETS];
    for (int i = 0; i < SYN_TABLE_WAYS; i++)
        if (set[i].tag == h && now_ms < set[i].until)
            return true;
    return false;
}

void syn_table_add(syn_table *t, const syn_flow *f, uint64_t now_ms)
{
    uint32_t h = flow_hash(t, f);
    struct syn_entry *set = t->e[h % SYN_TABLE_SETS];
    struct syn_entry *victim = &set[0];
    for (int i = 0; i < SYN_TABLE_WAYS; i++) {
        if (set[i].tag == h) { /* already there: start over */
            victim = &set[i];
            break;
        }
        if (set[i].until < victim->until)
            victim = &set[i]; /* the oldest, or an empty/expired one */
    }
    victim->tag = h;
    victim->until = now_ms + SYN_REMEMBER_MS;
}
