/*
 * test_posix_net.c - listening sockets and address text
 * (src/platform/posix/net.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include "platform/posix/net.h"

TEST(net_listen_on_port_zero_reports_the_real_port)
{
    tern_listen_addr a = {TERN_ADDR_IPV4, {127, 0, 0, 1}, 0};
    char err[160], name[TERN_NET_ADDR_TEXT];
    int fd = tern_net_listen(&a, 16, err, sizeof err);
    int rc;

    CHECK(fd >= 0);
    rc = tern_net_local_name(fd, name, sizeof name);
    close(fd);
    CHECK_EQ(rc, 0);
    CHECK(strncmp(name, "127.0.0.1:", 10) == 0);
    CHECK(strcmp(name, "127.0.0.1:0") != 0);
}

TEST(net_listen_on_a_taken_port_says_address_and_reason)
{
    tern_listen_addr a = {TERN_ADDR_IPV4, {127, 0, 0, 1}, 0};
    char err[160], name[TERN_NET_ADDR_TEXT], want[200];
    struct sockaddr_in in;
    socklen_t len = sizeof in;
    int fd = tern_net_listen(&a, 16, err, sizeof err), fd2;

    CHECK(fd >= 0);
    CHECK(getsockname(fd, (struct sockaddr *)&in, &len) == 0);
    a.port = ntohs(in.sin_port);
    fd2 = tern_net_listen(&a, 16, err, sizeof err);
    close(fd);
    CHECK(fd2 < 0);
    tern_net_format((struct sockaddr *)&in, name, sizeof name);
    snprintf(want, sizeof want, "cannot listen on %s: Address already in use", name);
    CHECK(strcmp(err, want) == 0);
}

TEST(net_format_brackets_ipv6_and_shows_the_port)
{
    struct sockaddr_in6 in6;
    struct sockaddr_in in4;
    char buf[TERN_NET_ADDR_TEXT];

    memset(&in6, 0, sizeof in6);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(1883);
    in6.sin6_addr.s6_addr[15] = 1;
    tern_net_format((struct sockaddr *)&in6, buf, sizeof buf);
    CHECK(strcmp(buf, "[::1]:1883") == 0);
    memset(&in4, 0, sizeof in4);
    in4.sin_family = AF_INET;
    in4.sin_port = htons(65535);
    in4.sin_addr.s_addr = htonl(0x0a000001);
    tern_net_format((struct sockaddr *)&in4, buf, sizeof buf);
    CHECK(strcmp(buf, "10.0.0.1:65535") == 0);
}
