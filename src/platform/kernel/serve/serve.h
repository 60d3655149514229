/*
 * serve.h - the broker core (src/broker) served over lwIP's raw TCP API
 * through the connection layer (src/conn): a mutual-TLS listener and/or a
 * plaintext one, driven from the kernel's main loop.
 */
#ifndef TERN_KSERVE_SERVE_H
#define TERN_KSERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

struct tern_config;
struct bootconf_assets;

/* Create the broker core with cfg's limits and ACL and start listening on
 * its ports (the network must be up). Takes the assets' TLS context and ACL
 * (their pointers are cleared). Returns 0, or -1 after saying why on the
 * console. */
int kserve_start(const struct tern_config *cfg, struct bootconf_assets *assets,
                     uint64_t now_ms);
/* One main-loop turn after net_poll(): connections' input to the core,
 * the core's timers, the core's output to TCP, closes. Returns nonzero
 * when there was work. A no-op before kserve_start. */
int kserve_poll(uint64_t now_ms);
/* One line for the console: ports, connections, handshakes, heap. */
void kserve_describe(char *buf, size_t n);

#endif
