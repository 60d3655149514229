"""Hostile or broken input on the TLS listener closes only the connection
that sent it (SPEC C3/C4): random bytes, truncated records, a handshake
that stalls (closed within tls.handshake_timeout), a crowd of half-done
handshakes. Meanwhile an established TLS client keeps publishing and
receiving."""

import os
import socket
import ssl
import time

import pytest

pytestmark = pytest.mark.tern_only


def client_hello(tls):
    """The bytes of a real ClientHello (Python's ssl, through memory BIOs)."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = tls.context("dev-client").wrap_bio(inc, out, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = out.read()
    assert hello[0] == 0x16 and len(hello) > 100
    return hello


def closed_by_broker(sock, timeout):
    """Read until the broker closes sock; the seconds that took. Fails if it
    stays open longer than timeout."""
    sock.settimeout(timeout)
    start = time.monotonic()
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        pytest.fail("the broker kept the connection open for %.1f s" % timeout)
    return time.monotonic() - start


def still_works(tls, b, client, n):
    """The established client gets its own message back, promptly."""
    start = time.monotonic()
    client.publish("alive/%d" % n, b"yes", qos=1)
    client.wait_messages(n, timeout=5, topic=None)
    assert time.monotonic() - start < 3


def established(tls, b):
    c = tls.paho(b, "dev-client", client_id="steady")
    c.connect()
    assert c.subscribe("alive/#", 1) == [1]
    return c


def test_random_bytes_close_only_that_connection(tls):
    b = tls.start()
    good = established(tls, b)
    for i in range(1, 4):
        with socket.create_connection((b.host, b.tls_port), timeout=5) as s:
            s.sendall(os.urandom(2000 * i))
            closed_by_broker(s, 5)
        still_works(tls, b, good, i)
    good.disconnect()
    assert b.alive()


def test_truncated_client_hello_then_hang_up_closes_only_it(tls):
    b = tls.start(tls_handshake_timeout=2)
    good = established(tls, b)
    hello = client_hello(tls)
    with socket.create_connection((b.host, b.tls_port), timeout=5) as s:
        s.sendall(hello[: len(hello) // 2])
        time.sleep(0.2)
    still_works(tls, b, good, 1)
    # A record header promising more than arrives, then silence: the
    # handshake deadline ends it.
    with socket.create_connection((b.host, b.tls_port), timeout=5) as s:
        s.sendall(hello[:5])
        still_works(tls, b, good, 2)
        assert closed_by_broker(s, 5) < 5
    good.disconnect()


def test_stalled_handshake_is_closed_within_the_timeout(tls):
    b = tls.start(tls_handshake_timeout=1)
    good = established(tls, b)
    with socket.create_connection((b.host, b.tls_port), timeout=5) as silent_client:
        took = closed_by_broker(silent_client, 5)
    assert 0.5 <= took <= 3.0, took
    assert "timed out after 1 s" in b.stderr_text()
    still_works(tls, b, good, 1)
    good.disconnect()


def test_crowd_of_unfinished_handshakes_does_not_starve_a_client(tls):
    b = tls.start(tls_handshake_timeout=2)
    good = established(tls, b)
    hello = client_hello(tls)
    crowd = []
    try:
        for i in range(150):
            s = socket.create_connection((b.host, b.tls_port), timeout=5)
            s.sendall(hello)          # the broker answers and waits for more
            crowd.append(s)
        for n in range(1, 4):
            still_works(tls, b, good, n)
        # All of them hit their deadline, none is left over.
        for s in crowd:
            closed_by_broker(s, 10)
    finally:
        for s in crowd:
            s.close()
    still_works(tls, b, good, 4)
    good.disconnect()


def test_corrupted_record_after_the_handshake_closes_only_that_client(tls):
    b = tls.start()
    good = established(tls, b)
    raw = socket.create_connection((b.host, b.tls_port), timeout=5)
    t = tls.context("alice").wrap_socket(raw, server_hostname="127.0.0.1")
    t.sendall(b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00")
    assert t.recv(4) == b"\x20\x02\x00\x00"
    # Bytes that claim to be an application-data record but do not decrypt.
    raw_fd = socket.socket(fileno=os.dup(t.fileno()))
    raw_fd.sendall(b"\x17\x03\x03\x00\x20" + os.urandom(32))
    closed_by_broker(raw_fd, 5)
    raw_fd.close()
    t.close()
    still_works(tls, b, good, 1)
    assert "TLS error, closing" in b.stderr_text()
    good.disconnect()
