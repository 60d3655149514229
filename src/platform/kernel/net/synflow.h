/*
 * synflow.h - the kernel's SYN admission pieces that need no network
 * stack (SPEC B7): recognising a new connection's SYN in a received
 * Ethernet frame, and a small fixed table of flows whose SYN was refused,
 * so their retransmitted SYNs are dropped again without a second thought.
 *
 * Why before lwIP: lwIP answers a SYN it cannot take with nothing only
 * when its pcb pool is empty; a connection our accept callback refuses is
 * aborted (RST) after the three-way handshake, which tells a client to
 * retry at once and costs a pcb and two segments each. Dropping the SYN
 * before lwIP sees it costs a few comparisons and leaves the client to
 * retransmit on its own back-off (1 s, 2 s, ...), like Linux's full
 * listen backlog.
 *
 * Pure functions over bytes and a caller-owned table: unit-tested on the
 * host (tests/unit/test_ksynflow.c).
 */
#ifndef TERN_KNET_SYNFLOW_H
#define TERN_KNET_SYNFLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A TCP flow as seen from the broker: the client's address and port, our
 * port (one interface, one address: ours is implied). Addresses in
 * network byte order as on the wire. */
typedef struct syn_flow {
    uint8_t src[4];
    uint16_t sport, dport;
} syn_flow;

/* True when frame[0..len) is an Ethernet II IPv4 TCP segment with SYN set
 * and ACK, RST and FIN clear, not a fragment, with consistent lengths:
 * the start of a new connection; *out then names its flow. Anything else
 * (truncated, another protocol, VLAN-tagged, options cut short) is false
 * and left to lwIP. */
bool syn_parse(const uint8_t *frame, size_t len, syn_flow *out);

enum {
    SYN_TABLE_WAYS = 4,    /* entries per set: a new refusal replaces the
                              set's oldest; lookups are 4 compares */
    SYN_TABLE_SETS = 256,  /* 1024 flows: ~16 KiB */
    SYN_REMEMBER_MS = 3000 /* covers a client's first SYN retransmissions
                              (1 s, then 2 s later) */
};

/* Flows refused lately: a keyed hash of the flow (the key drawn at boot,
 * so a peer cannot aim its flows at one set to evict others) and when the
 * memory of it ends. Zeroed = empty. */
typedef struct syn_table {
    uint64_t key[2];
    struct syn_entry {
        uint32_t tag;   /* hash of the flow, never 0 in a used entry */
        uint64_t until; /* ms: forgotten from then on */
    } e[SYN_TABLE_SETS][SYN_TABLE_WAYS];
} syn_table;

void syn_table_init(syn_table *t, const uint64_t key[2]);
/* Was f refused less than SYN_REMEMBER_MS before now? O(1). */
bool syn_table_has(const syn_table *t, const syn_flow *f, uint64_t now_ms);
/* Remember f as refused at now_ms (again: the memory starts over). O(1). */
void syn_table_add(syn_table *t, const syn_flow *f, uint64_t now_ms);

#endif
