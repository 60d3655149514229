/*
 * net.c - listening sockets and address text for the Linux daemon.
 */
#define _GNU_SOURCE

#include "platform/posix/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

socklen_t tern_net_sockaddr(const tern_listen_addr *a, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (a->family == TERN_ADDR_IPV4) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;

        in->sin_family = AF_INET;
        in->sin_port = htons(a->port);
        memcpy(&in->sin_addr, a->addr, 4);
        return sizeof *in;
    }
    if (a->family == TERN_ADDR_IPV6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(a->port);
        memcpy(&in6->sin6_addr, a->addr, 16);
        return sizeof *in6;
    }
    return 0;
}

/* Text of a configured address, for the error message. */
static void format_listen_addr(const tern_listen_addr *a, char *buf, size_t size)
{
    struct sockaddr_storage ss;

    (void)tern_net_sockaddr(a, &ss);
    tern_net_format((const struct sockaddr *)&ss, buf, size);
}

static void set_err(char *err, size_t err_size, const tern_listen_addr *a, const char *why)
{
    char text[TERN_NET_ADDR_TEXT];

    format_listen_addr(a, text, sizeof text);
    if (err_size > 0 && snprintf(err, err_size, "cannot listen on %s: %s", text, why) < 0)
        err[0] = '\0';
}

int tern_net_listen(const tern_listen_addr *a, int backlog, char *err, size_t err_size)
{
    struct sockaddr_storage ss;
    const struct sockaddr *sa = (const struct sockaddr *)&ss;
    socklen_t sa_len = tern_net_sockaddr(a, &ss);
    int fd = -1, domain = ss.ss_family, one = 1;

    if (sa_len == 0) {
        set_err(err, err_size, a, "no address");
        return -1;
    }

    fd = socket(domain, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    /* Restarting must not wait for the old sockets' TIME_WAIT to expire. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        goto fail;
    if (domain == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0)
        goto fail;
    if (bind(fd, sa, sa_len) != 0 || listen(fd, backlog) != 0)
        goto fail;
    return fd;

fail:
    set_err(err, err_size, a, strerror(errno));
    if (fd >= 0)
        (void)close(fd); /* never used: nothing to flush */
    return -1;
}

/* Bytes an accepted socket may hold that TCP has not sent yet (the
 * peer's window is closed: a slow reader). Without a bound, Linux grows a
 * socket's send buffer to net.ipv4.tcp_wmem's maximum (4 MiB), ~50,000
 * small messages that wait in the kernel, out of the broker's reach: its
 * back-pressure (max_out_bytes, QoS 0 dropped first, publishers held for
 * QoS 1) sees only what the socket refused. Bytes in flight to a reader
 * that keeps up are not "not sent", so throughput is unchanged. */
#ifndef TERN_NOTSENT_LOWAT
#define TERN_NOTSENT_LOWAT (64 * 1024)
#endif

int tern_net_tune_accepted(int fd)
{
    int one = 1, lowat = TERN_NOTSENT_LOWAT;

    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        return -1;
    return lowat > 0 ? setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat) : 0;
}

tern_accept_error tern_net_accept_error(int err)
{
    switch (err) {
    case EINTR:
    case ECONNABORTED: /* the peer gave up while queued */
    case EPROTO:
    case EPERM: /* firewall rules */
        return TERN_ACCEPT_NEXT;
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
        return TERN_ACCEPT_DRAINED;
    default: /* EMFILE, ENFILE, ENOBUFS, ENOMEM and anything unexpected */
        return TERN_ACCEPT_PAUSE;
    }
}

void tern_net_format(const struct sockaddr *sa, char *buf, size_t size)
{
    char host[INET6_ADDRSTRLEN];
    int n = -1;

    if (size == 0)
        return;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        if (inet_ntop(AF_INET, &in->sin_addr, host, sizeof host) != NULL)
            n = snprintf(buf, size, "%s:%u", host, (unsigned)ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host) != NULL)
            n = snprintf(buf, size, "[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
    }
    if (n < 0) {
        buf[0] = size > 1 ? '?' : '\0';
        if (size > 1)
            buf[1] = '\0';
    }
}

int tern_net_local_name(int fd, char *buf, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;

    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    tern_net_format((const struct sockaddr *)&ss, buf, size);
    return 0;
}
