"""Limits per TLS identity over mutual TLS (issue 16 item 3, docs/CONFIG.md
"Sessions and queues per identity"): one certificate's persistent sessions
beyond limits.max_sessions_per_identity are refused with CONNACK 0x05 while
other identities, clean sessions and resumed sessions connect; the payload
bytes queued across one certificate's sessions stay within
limits.max_queued_bytes_per_identity, the excess dropped and counted, and
the broker's memory with them."""

import time

import pytest

from mqttclients import wait_until

pytestmark = pytest.mark.tern_only

NOT_AUTHORIZED = 0x05


def _operator(tls, b):
    """An operator (operator CA) subscribed to $SYS/#."""
    op = tls.paho(b, "dev-operator", client_id="op")
    op.connect()
    op.subscribe("$SYS/#", 0)
    return op


def _next_value(op, topic, timeout=5):
    """The next value of a $SYS topic published from now (sys.interval 1)."""
    n = len(op.messages)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in list(op.messages)[n:]:
            if m.topic == topic:
                return int(m.payload.decode())
        time.sleep(0.05)
    raise AssertionError("no %s within %s s" % (topic, timeout))


def _persistent(tls, b, name, client_id, expect_rc=0):
    c = tls.paho(b, name, client_id=client_id, clean_session=False)
    present, rc = c.connect(expect_rc=expect_rc)
    return c, present, rc


def test_persistent_sessions_per_identity_refused_beyond_the_limit(tls):
    b = tls.start(sys_interval=1, limits_max_sessions_per_identity=3)
    op = _operator(tls, b)
    for i in range(3):
        c, present, _ = _persistent(tls, b, "dev-client", "dev-%d" % i)
        assert not present
        c.disconnect()
    # The fourth persistent session of dev-client's certificate: refused.
    c, present, rc = _persistent(tls, b, "dev-client", "dev-3", expect_rc=None)
    assert rc == NOT_AUTHORIZED
    c.wait_disconnected()
    c.stop()
    assert "refused: identity 'dev-client' holds limits.max_sessions_per_identity (3)" \
        in b.stderr_text()
    # Another certificate, a clean session of the same one, and a session
    # it already holds all connect.
    a, present, _ = _persistent(tls, b, "alice", "alice-0")
    a.disconnect()
    clean = tls.paho(b, "dev-client", client_id="dev-clean")
    clean.connect()
    clean.disconnect()
    c, present, _ = _persistent(tls, b, "dev-client", "dev-1")
    assert present
    c.disconnect()
    assert _next_value(op, "$SYS/broker/clients/sessions_refused") == 1
    op.disconnect()


PAYLOAD = 60000
PER_TOPIC = 40
SESSIONS = 3


def test_queued_bytes_across_an_identitys_sessions_are_bounded(tls):
    # Each session may queue 4 MiB, dev-client's sessions 1 MiB together:
    # 17 of the 120 messages of 60 kB sent to them (7.2 MB without it).
    budget = 1 << 20
    b = tls.start(sys_interval=1, limits_max_queued_bytes=4 << 20,
                  limits_max_queued_bytes_per_identity=budget,
                  limits_max_packet_size=64 << 10)
    op = _operator(tls, b)
    for i in range(SESSIONS):
        c, _, _ = _persistent(tls, b, "dev-client", "dev-%d" % i)
        assert c.subscribe("load/%d" % i, 1) == [1]
        c.disconnect()
    base = _next_value(op, "$SYS/broker/memory/core")
    dropped_before = _next_value(op, "$SYS/broker/publish/messages/dropped")
    pub = tls.paho(b, "alice", client_id="pub")
    pub.connect()
    for n in range(PER_TOPIC):
        for i in range(SESSIONS):
            pub.publish("load/%d" % i, bytes([n]) * PAYLOAD, qos=1)
    pub.disconnect()
    kept = budget // PAYLOAD
    total = PER_TOPIC * SESSIONS
    wait_until(lambda: op.messages and _next_value(op, "$SYS/broker/publish/messages/dropped")
               == dropped_before + total - kept, 10, what="the drops counted")
    held = _next_value(op, "$SYS/broker/memory/core")
    print("core memory: %d before, %d with the queues (%d kept of %d)" % (
        base, held, kept, total))
    # Under 2 MiB more: the 1 MiB budget and its bookkeeping, not 7.2 MB.
    assert held - base < 2 * budget, "core memory grew by %d bytes" % (held - base)
    # The sessions get what was kept for them, in all the budget.
    # (Messages went round the topics in turn: the first `kept` were kept.)
    for i in range(SESSIONS):
        want = len([k for k in range(kept) if k % SESSIONS == i])
        c, present, _ = _persistent(tls, b, "dev-client", "dev-%d" % i)
        assert present
        c.wait_messages(want)
        c.sync()
        assert len(c.messages) == want
        c.disconnect()
    op.disconnect()
