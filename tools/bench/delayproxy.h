/*
 * delayproxy.h - a TCP proxy that adds a fixed one-way delay to each
 * direction, so tern-bench can put clients "far away" (a round trip of
 * --rtt-ms) on a machine whose kernel has no netem. Bytes keep their order;
 * bandwidth is not limited (whatever one read() returns travels as one
 * chunk, due at its arrival time plus the delay).
 */
#ifndef TERN_BENCH_DELAYPROXY_H
#define TERN_BENCH_DELAYPROXY_H

#include <stdint.h>
#include <sys/socket.h>

typedef struct delay_proxy delay_proxy;

/* Start a proxy thread listening on the loopback address of `to`'s family
 * (a port of the kernel's choice, written to *listen and *listen_len) that
 * forwards every accepted connection to `to`, each direction delayed by
 * one_way_ns. NULL on error, with a message on stderr. */
delay_proxy *delay_proxy_start(const struct sockaddr_storage *to, socklen_t to_len,
                               uint64_t one_way_ns, struct sockaddr_storage *listen,
                               socklen_t *listen_len);
/* Stop the thread, close every connection, free. NULL is accepted. */
void delay_proxy_stop(delay_proxy *p);

#endif
