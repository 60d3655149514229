"""A client that leaves Nagle's algorithm on (no TCP_NODELAY, the default of
many client libraries) gets its CONNACK over TLS at once (issue 16 item 9):
its CONNECT waits in its own kernel until the last handshake flight is
acknowledged, and the broker, having nothing to send after the client's
Finished, would otherwise let the delayed-ACK timer (40 ms on Linux) run."""

import socket
import time

import pytest

import rawmqtt

pytestmark = pytest.mark.tern_only


def connack_delay(tls, b):
    """Seconds from sending CONNECT to reading the CONNACK, over TLS 1.3
    with Nagle on."""
    raw = socket.create_connection(("127.0.0.1", b.tls_port), timeout=5)
    assert raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    s = tls.context("dev-client").wrap_socket(raw, server_hostname="localhost")
    try:
        start = time.monotonic()
        s.sendall(rawmqtt.connect(client_id="nagle"))
        got = b""
        while len(got) < 4:
            chunk = s.recv(4 - len(got))
            assert chunk, "closed before the CONNACK"
            got += chunk
        took = time.monotonic() - start
        assert got == b"\x20\x02\x00\x00"
        return took
    finally:
        s.close()


def test_connack_over_tls_without_tcp_nodelay_is_not_delayed(tls):
    b = tls.start()
    delays = sorted(connack_delay(tls, b) for _ in range(7))
    # The median: one scheduling hiccup on a shared machine is not the
    # 40 ms the delayed ACK costs every time.
    assert delays[3] < 0.005, ["%.1f ms" % (d * 1000) for d in delays]
