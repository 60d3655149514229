/*
 * net.h - the socket set-up the daemon needs: a listening socket from a
 * configured address, options for accepted sockets, and addresses as text
 * for logs and for the core's connection info.
 */
#ifndef TERN_NET_H
#define TERN_NET_H

#include <stddef.h>
#include <sys/socket.h>

#include "config/config.h"

/* Longest text tern_net_format() writes: "[v6 address]:65535" + NUL. */
#define TERN_NET_ADDR_TEXT 56u

/*
 * A non-blocking, close-on-exec listening TCP socket bound to a (IPv6
 * sockets are IPv6-only, so [::] does not silently take IPv4 too). Returns
 * the descriptor, or -1 with "cannot listen on ADDR: reason" in err.
 */
int tern_net_listen(const tern_listen_addr *a, int backlog, char *err, size_t err_size);

/* The socket address of a configured address (a listener's, a bridge's
 * remote): its length, or 0 (ss zeroed) when a has no address. */
socklen_t tern_net_sockaddr(const tern_listen_addr *a, struct sockaddr_storage *ss);

/* Options for an accepted socket (TCP_NODELAY: MQTT packets are small and
 * the loop already batches writes per turn; TCP_NOTSENT_LOWAT: what a slow
 * reader cannot take stays in the broker, see net.c). 0, or -1 with errno. */
int tern_net_tune_accepted(int fd);

/* What accept4's errno means for its listener: take the next connection
 * (interrupted, or the peer gave up while queued), the backlog is empty
 * (or another thread took it), or stop taking new connections for a
 * moment (out of descriptors or memory, or anything unexpected). */
typedef enum { TERN_ACCEPT_NEXT, TERN_ACCEPT_DRAINED, TERN_ACCEPT_PAUSE } tern_accept_error;
tern_accept_error tern_net_accept_error(int err);

/* "1.2.3.4:1883" or "[::1]:1883"; "?" for other families. */
void tern_net_format(const struct sockaddr *sa, char *buf, size_t size);

/* The address a socket is bound to, as text (shows the real port when the
 * configuration asked for port 0). 0, or -1 with errno. */
int tern_net_local_name(int fd, char *buf, size_t size);

#endif
