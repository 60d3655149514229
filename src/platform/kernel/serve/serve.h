/*
 * serve.h - the broker core (src/broker) served over lwIP's raw TCP API
 * through the connection layer (src/conn): any of a mutual-TLS, a
 * plaintext, a WebSocket and a WebSocket-over-TLS listener, driven from
 * the kernel's main loop.
 */
#ifndef TERN_KSERVE_SERVE_H
#define TERN_KSERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

struct tern_config;
struct bootconf_assets;
struct squeue_store;

/* Create the broker core with cfg's limits and ACL, restore it from the
 * durable store and start the store thread when there is one (NULL: RAM only, nothing
 * survives a reboot), then start listening on its ports (the network must
 * be up). Takes the assets' TLS context and ACL (their pointers are
 * cleared). Returns 0, or -1 after saying why on the console. */
int kserve_start(const struct tern_config *cfg, struct bootconf_assets *assets,
                 const struct squeue_store *durable, uint64_t now_ms);
/* One main-loop turn after net_poll(): the store's finished commits to the
 * core, connections' input to the core, the core's timers, the core's
 * output to TCP, closes, then the turn's records to the store thread and
 * its share of the CPU. Returns nonzero when there was work. A no-op
 * before kserve_start. */
int kserve_poll(uint64_t now_ms);
/* Finished commits wait for the next kserve_poll (the main loop's sleep
 * check, interrupts off: with a storage core they come from CPU 1). */
int kserve_store_waiting(void);
/* Publish a retained $SYS topic of the kernel's own (broker_sys_put: to
 * whoever the ACL lets read $SYS); -1 before kserve_start or for a topic
 * outside $SYS. */
int kserve_sys_put(const char *topic, const char *value);
/* The wall clock was stepped (net/sntp.c): tell the core the new date
 * (message expiry runs on it). A no-op before kserve_start. */
void kserve_wall_clock_changed(void);
/* One line for the console: ports, connections, handshakes, heap. */
void kserve_describe(char *buf, size_t n);
/* One line for the console about the store: its state and counters, or
 * that there is none (RAM only). */
void kserve_describe_store(char *buf, size_t n);

#endif
