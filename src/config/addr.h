/*
 * addr.h - address syntax, internal to src/config/: listening addresses
 * (HOST:PORT) and the unikernel's interface address (A.B.C.D/PREFIX) and
 * gateway.
 *
 * Separate from the key/line parser because address syntax is its own small
 * grammar (IPv4 dotted quad, bracketed IPv6 with "::" and an embedded IPv4
 * tail, prefixes) that deserves its own tests and no platform resolver.
 */
#ifndef TERN_CONFIG_ADDR_H
#define TERN_CONFIG_ADDR_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* Parse "a.b.c.d:PORT" or "[v6]:PORT" (exactly n bytes, no whitespace).
 * Returns false, leaving *out untouched, on any syntax error. */
bool tern_addr_parse(const char *s, size_t n, tern_listen_addr *out);

/* Parse "a.b.c.d/N" (prefix 1..32, no leading zero) when with_prefix, else
 * "a.b.c.d" alone (prefix 32). False, leaving *out untouched, on a syntax
 * error. Sets out->set. */
bool tern_ipv4_parse(const char *s, size_t n, bool with_prefix, tern_config_ipv4 *out);

/* Why addr cannot be a host's own address (or its gateway) on a network of
 * that prefix: "this network" (0/8), loopback, multicast, reserved or
 * limited broadcast (240/4), or - for prefixes up to /30 - the network's
 * own or broadcast address. NULL when it can. */
const char *tern_ipv4_host_problem(const uint8_t addr[4], unsigned prefix);

/* Parse one time.sntp_servers item, "a.b.c.d" or "a.b.c.d:PORT" (port
 * 1..65535, default 123), exactly n bytes. Returns NULL and fills *out, or
 * why the item is refused: bad syntax, or an address outside the private
 * ranges 10/8, 172.16/12, 192.168/16 (RFC 1918). */
const char *tern_sntp_server_parse(const char *s, size_t n, tern_sntp_server *out);

/* 1 if a and b lie in the same network of that prefix (0..32). */
bool tern_ipv4_same_net(const uint8_t a[4], const uint8_t b[4], unsigned prefix);

#endif
