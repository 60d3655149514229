"""Limits that protect the kernel's broker from one client, over mutual
TLS (issue 16): subscriptions per session and topic levels answered with
SUBACK 0x80; the broker-wide budget for buffered input
(limits.max_input_bytes) stops reading clients sending giant unfinished
PUBLISHes while another client is still answered, and closes them when the
budget stays spent; a handshake flood from one address is bounded by
limits.max_handshakes_per_address.
"""
import socket
import threading
import time

from clients import (PINGREQ, PINGRESP, expect_closed, mtls_broker_check, recv_exact,
                     remaining_length, tls_client)
from harness import MTLS_CONF, Failure

LIMITS_CONF = MTLS_CONF + """limits.max_packet_size = 1048576
limits.max_input_bytes = 1048576
limits.max_handshakes_per_address = 8
limits.max_subscriptions = 50
limits.max_topic_levels = 8
"""

HALF_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"


def partial_publish(sock, declared, sent):
    """A QoS 0 PUBLISH to test/big declaring `declared` bytes after its
    fixed header; only `sent` of them are sent."""
    sock.sendall(b"\x30" + remaining_length(declared) + b"\x00\x08test/big")
    left = sent - 10
    while left > 0:
        n = min(left, 16384)
        sock.sendall(bytes(n))
        left -= n


def subscribe(sock, packet_id, filters):
    """SUBSCRIBE (QoS 0 each) and the SUBACK's return codes."""
    body = packet_id.to_bytes(2, "big")
    for f in filters:
        body += len(f).to_bytes(2, "big") + f + b"\x00"
    sock.sendall(b"\x82" + remaining_length(len(body)) + body)
    head = recv_exact(sock, 2)
    if head[0] != 0x90:
        raise Failure(f"expected a SUBACK, got {head.hex()}")
    n, shift, length = head[1], 0, 0
    while True:  # the remaining length, already started in head[1]
        length |= (n & 0x7F) << shift
        if not n & 0x80:
            break
        shift += 7
        n = recv_exact(sock, 1)[0]
    rest = recv_exact(sock, length)
    return rest[2:]


def ping(sock, what):
    """PINGREQ answered, or a Failure saying `what`."""
    sock.sendall(PINGREQ)
    if recv_exact(sock, 2) != PINGRESP:
        raise Failure(what)


def send_quietly(sock):
    """partial_publish of 800 KB of a declared 1 MB, ending quietly when
    the broker stops reading or closes."""
    sock.settimeout(30)
    try:
        partial_publish(sock, 1000000, 800000)
    except OSError:
        pass


def limits(vm, tmp, pki, cl, notes):
    """An 11-level filter and 10 beyond 50 subscriptions answered 0x80 in
    one SUBACK; four clients each sending 800 KB of a declared 1 MB PUBLISH
    against a 1 MiB input budget: the broker stops reading them, a fifth
    client's PINGREQ is answered, and the holders are closed once the
    budget has stayed spent for 10 s; eight stalled handshakes from one
    address are the most it takes from it."""
    port = cl.port
    vm.wait_ready(60)
    ctx = pki.context("dev-client")
    # Subscriptions per session and topic levels: 0x80 in their places of
    # one SUBACK, the rest granted.
    sub = tls_client(ctx, port, "many-subs")
    filters = [b"test/" + b"/".join(b"l" for _ in range(10))]  # 11 levels
    filters += [b"test/many/%d" % i for i in range(60)]
    codes = subscribe(sub, 7, filters)
    if codes != b"\x80" + b"\x00" * 50 + b"\x80" * 10:
        raise Failure(f"SUBACK codes at the limits: {codes.hex()}")
    ping(sub, "the subscriber was closed after its refused filters")
    sub.close()
    notes.append("an 11-level filter and 10 beyond 50 subscriptions refused (0x80)")
    big = [tls_client(ctx, port, f"big-{i}") for i in range(4)]
    # Each sends from its own thread: the broker stops reading some of
    # them, and their sends then block.
    for s in big:
        threading.Thread(target=send_quietly, args=(s,), daemon=True).start()
    vm.wait_for(lambda o: b"input budget spent" in o, 60)
    notes.append("input budget spent, holders not read")
    small = tls_client(ctx, port, "small")
    small.settimeout(20)
    t0 = time.monotonic()
    ping(small, "PINGREQ beside the holders not answered")
    notes.append(f"PINGREQ answered in {time.monotonic() - t0:.2f} s")
    vm.wait_for(lambda o: b"stayed spent" in o, 60)
    if b"stayed spent" not in vm.text():
        raise Failure("no holder was closed while the budget stayed spent")
    notes.append("holders closed after the wait")
    ping(small, "the small client lost its connection")
    # Handshakes from one address: the ninth stalled one is closed at once.
    stalled = []
    for _ in range(9):
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(HALF_HELLO)
        stalled.append(s)
    expect_closed(stalled[-1], "ninth handshake from one address", 10)
    vm.wait_for(lambda o: b"limits.max_handshakes_per_address" in o, 20)
    notes.append("ninth stalled handshake from one address refused")
    for s in stalled + [small]:
        s.close()
    vm.expect_no_fatal()


def cases(b):
    return {"mqtt-mtls-limits": mtls_broker_check(b.elf, b.dir, LIMITS_CONF, limits)}
