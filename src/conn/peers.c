/*
 * peers.c - TLS handshakes running per peer address, so that one address
 * cannot hold every handshake slot (limits.max_handshakes_per_address).
 *
 * The table is keyed by SipHash of the address bytes under the server's
 * random key (broker/hash.h): an attacker choosing addresses (an IPv6
 * /64 offers plenty) cannot aim them at a victim's slot. Two addresses
 * whose 32-bit hashes collide anyway would share one limit, nothing
 * worse. Open addressing with linear probing and backward-shift deletion
 * (no tombstones); at most max_handshakes entries live in a table of at
 * least twice that, so probes stay short.
 */
#include "conn/internal.h"

#include "broker/hash.h"

#include <string.h>

/* The SipHash rounds of the core's tables (broker/hash.h). */
enum { SIP_C = 1, SIP_D = 3 };

bool conni_peers_init(conn_server *s)
{
    uint32_t cap = 16;

    if (s->max_per_address == 0 || s->io->peer_addr == NULL)
        return true; /* no per-address limit */
    while (cap < 2u * s->max_handshakes && cap < (1u << 20))
        cap <<= 1;
    s->peers = conni_alloc(s, cap * sizeof *s->peers);
    if (s->peers == NULL)
        return false;
    memset(s->peers, 0, cap * sizeof *s->peers);
    s->peers_mask = cap - 1;
    return true;
}

static uint32_t addr_hash(const conn_server *s, const uint8_t *addr, size_t n)
{
    uint32_t h;

    if (n == 0 || n > 16)
        return 0; /* unknown: not limited */
    h = (uint32_t)siphash(s->hash_key, addr, n, SIP_C, SIP_D);
    return h != 0 ? h : 1;
}

static uint32_t peer_hash(conn_server *s, const conn *c)
{
    uint8_t addr[16];
    size_t n = s->io->peer_addr(s->io_ctx, c, addr, sizeof addr);

    return n <= sizeof addr ? addr_hash(s, addr, n) : 0;
}

static struct conn_peer_slot *find(const conn_server *s, uint32_t hash)
{
    for (uint32_t i = hash & s->peers_mask;; i = (i + 1) & s->peers_mask) {
        if (s->peers[i].hash == hash || s->peers[i].hash == 0)
            return &s->peers[i];
    }
}

uint32_t conn_handshake_room_from(const conn_server *s, const uint8_t *addr, size_t n)
{
    uint32_t room = conn_handshake_slots(s), h, used, left;

    if (room == 0 || s->max_per_address == 0 || s->peers == NULL)
        return room;
    h = addr_hash(s, addr, n);
    if (h == 0)
        return room;
    used = find(s, h)->count;
    left = used >= s->max_per_address ? 0 : s->max_per_address - used;
    return left < room ? left : room;
}

uint32_t conni_peer_handshakes(conn_server *s, const conn *c, uint32_t *hash)
{
    *hash = s->peers != NULL ? peer_hash(s, c) : 0;
    if (*hash == 0)
        return 0;
    return find(s, *hash)->count;
}

void conni_peer_enter(conn_server *s, conn *c)
{
    struct conn_peer_slot *slot;

    if (s->peers == NULL || c->peer_hash == 0)
        return;
    slot = find(s, c->peer_hash);
    slot->hash = c->peer_hash;
    slot->count++;
}

void conni_peer_leave(conn_server *s, conn *c)
{
    uint32_t i, j;

    if (s->peers == NULL || c->peer_hash == 0)
        return;
    i = (uint32_t)(find(s, c->peer_hash) - s->peers);
    c->peer_hash = 0;
    if (s->peers[i].hash == 0 || --s->peers[i].count > 0)
        return;
    /* Backward-shift deletion: pull later members of the run into the
     * hole when their home slot allows, so lookups never stop early. */
    for (j = (i + 1) & s->peers_mask; s->peers[j].hash != 0; j = (j + 1) & s->peers_mask) {
        uint32_t home = s->peers[j].hash & s->peers_mask;

        if (((j - home) & s->peers_mask) >= ((j - i) & s->peers_mask)) {
            s->peers[i] = s->peers[j];
            i = j;
        }
    }
    s->peers[i].hash = 0;
    s->peers[i].count = 0;
}
