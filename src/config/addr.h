/*
 * addr.h - listening-address syntax (HOST:PORT), internal to src/config/.
 *
 * Separate from the key/line parser because address syntax is its own small
 * grammar (IPv4 dotted quad, bracketed IPv6 with "::" and an embedded IPv4
 * tail) that deserves its own tests and no platform resolver.
 */
#ifndef TERN_CONFIG_ADDR_H
#define TERN_CONFIG_ADDR_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* Parse "a.b.c.d:PORT" or "[v6]:PORT" (exactly n bytes, no whitespace).
 * Returns false, leaving *out untouched, on any syntax error. */
bool tern_addr_parse(const char *s, size_t n, tern_listen_addr *out);

#endif
