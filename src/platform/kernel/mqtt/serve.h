/*
 * serve.h - the broker core (src/broker) served over lwIP's raw TCP API:
 * one plaintext listener, connections fed to the core and its output
 * written back, driven from the kernel's main loop.
 */
#ifndef TERN_MQTT_SERVE_H
#define TERN_MQTT_SERVE_H

#include <stddef.h>
#include <stdint.h>

struct tern_config;

/* Create the broker core with cfg's limits and start listening on its
 * plaintext port (the network must be up). Returns 0, or -1 after saying
 * why on the console. */
int mqtt_serve_start(const struct tern_config *cfg, uint64_t now_ms);
/* One main-loop turn after net_poll(): connections' input to the core,
 * the core's timers, the core's output to TCP, closes. Returns nonzero
 * when there was work. A no-op before mqtt_serve_start. */
int mqtt_serve_poll(uint64_t now_ms);
/* One line for the console: port, connections, core memory. */
void mqtt_serve_describe(char *buf, size_t n);

#endif
