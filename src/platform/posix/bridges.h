/*
 * bridges.h - the Linux daemon's side of bridges (broker/bridge.h has the
 * design, ADR-060): per configured bridge a non-blocking TCP connection to
 * the remote (TLS through the adapter in src/tls when bridge.NAME.tls_ca
 * is set), and the local link, a socketpair whose one end is an ordinary
 * connection of the loop (so the broker serves the bridge like any client,
 * with the identity bridge.NAME.identity) and whose other end the bridge
 * speaks MQTT on.
 */
#ifndef TERN_BRIDGES_H
#define TERN_BRIDGES_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "config/config.h"
#include "tls/tls.h"

typedef struct tern_loop tern_loop;
typedef struct tern_bridges tern_bridges;

/* Every bridge of l->cfg, its TLS context loaded (certificate files are
 * read relative to the configuration). NULL with a logged reason naming
 * the key when a file does not load or memory is short; a loop without
 * bridges gets an empty set. */
tern_bridges *tern_bridges_create(tern_loop *l);
void tern_bridges_destroy(tern_bridges *bs);

/* A bridge's TLS client context from its tls_* files (*out NULL without
 * tls_ca). False with "CONFIG:LINE: bridge.NAME.KEY: reason" in err. */
bool tern_bridge_tls_load(const tern_config *cfg, const tern_config_bridge *cb,
                          const char *config_path, tern_tls_client **out, char *err,
                          size_t err_size);
/* Every bridge's files load (ternd --check and start-up before the loop). */
bool tern_bridges_check(const tern_config *cfg, const char *config_path, char *err,
                        size_t err_size);

/* An epoll event of a bridge handle (TERN_HANDLE_BRIDGE). */
void tern_bridges_event(tern_loop *l, void *handle, uint32_t events, uint64_t now);
/* Each turn: timers (back-off, keep alive), dialling, output. */
void tern_bridges_turn(tern_loop *l, uint64_t now);
/* When tern_bridges_turn next has work; UINT64_MAX for none. */
uint64_t tern_bridges_deadline(const tern_loop *l);
/* The identity of the local-link connection whose broker end is fd, NULL
 * when fd is no bridge's. */
const char *tern_bridges_identity(const tern_loop *l, int fd);

#endif
