"""Clean and persistent sessions, session takeover (SPEC C1)."""

import time

import pytest

import rawmqtt as R
from mqttclients import PahoClient


def _offline_session(b, client_id, filters):
    """Create a persistent session with subscriptions, then go offline."""
    a = PahoClient(b.port, client_id=client_id, clean_session=False)
    assert a.connect() == (False, 0)
    a.subscribe(filters)
    a.disconnect()


def _publish_while_offline(b, n):
    pub = PahoClient(b.port, client_id="persist-pub")
    pub.connect()
    expected = []
    for i in range(n):
        topic, qos = ("sess/q1", 1) if i % 2 == 0 else ("sess/q2", 2)
        payload = b"m%03d" % i
        pub.publish(topic, payload, qos=qos)
        expected.append((topic, payload, qos))
    return pub, expected


def test_persistent_session_gets_qos1_and_qos2_messages_queued_while_offline_exactly_once(broker):
    b = broker()
    _offline_session(b, "persist-a", [("sess/q1", 1), ("sess/q2", 2)])
    pub, expected = _publish_while_offline(b, 60)

    a = PahoClient(b.port, client_id="persist-a", clean_session=False)
    assert a.connect() == (True, 0), "CONNACK must report session present"
    a.wait_messages(len(expected), timeout=10)
    # Markers published after reconnecting close the window for duplicates
    # of queued messages (they are queued behind them on both topics).
    pub.publish("sess/q1", b"end1", qos=1)
    pub.publish("sess/q2", b"end2", qos=2)
    a.wait_for(lambda ms: {b"end1", b"end2"} <= {m.payload for m in ms}, timeout=10, what="end markers")
    got = [(m.topic, m.payload, m.qos) for m in a.messages if not m.payload.startswith(b"end")]
    # Paho hands a QoS 2 message to the application at PUBREL time, so only
    # per-topic order is visible here; wire order is checked in the raw test.
    for topic in ("sess/q1", "sess/q2"):
        assert [g for g in got if g[0] == topic] == [e for e in expected if e[0] == topic], \
            "per-topic order / exactly-once broken on " + topic
    assert sorted(got) == sorted(expected)
    a.disconnect()
    pub.disconnect()


def test_persistent_session_resume_sends_queued_messages_on_the_wire_in_publication_order(broker):
    b = broker()
    _offline_session(b, "persist-raw", [("sess/q1", 1), ("sess/q2", 2)])
    pub, expected = _publish_while_offline(b, 60)
    with R.RawClient(b.host, b.port) as a:
        ack = a.connect(client_id="persist-raw", clean=False)
        assert (ack.return_code, ack.session_present) == (0, True)
        got, open_q2 = [], set()
        while len(got) < len(expected) or open_q2:
            p = a.recv_packet(timeout=5)
            if p.type == R.PUBLISH:
                assert not p.dup, "first transmission must have DUP=0: %r" % p
                got.append((p.topic, p.payload, p.qos))
                if p.qos == 1:
                    a.send(R.puback(p.pid))
                else:
                    assert p.qos == 2
                    open_q2.add(p.pid)
                    a.send(R.pubrec(p.pid))
            else:
                assert p.type == R.PUBREL and p.pid in open_q2, p
                open_q2.discard(p.pid)
                a.send(R.pubcomp(p.pid))
        # Nothing more is pending (no duplicates).
        assert a.is_open_after_ping()
        assert a.pending == []
        # One session queue, filled in publication order. (MQTT itself only
        # requires per-topic order, which this implies.)
        assert got == expected
        a.send(R.disconnect())
    pub.disconnect()


def test_clean_session_connect_discards_stored_session(broker):
    b = broker()
    _offline_session(b, "clean-a", [("sess/clean", 1)])

    a = PahoClient(b.port, client_id="clean-a", clean_session=True)
    assert a.connect() == (False, 0), "clean session must report no session present [MQTT-3.2.2-1]"
    a.disconnect()

    pub = PahoClient(b.port, client_id="clean-pub")
    pub.connect()
    pub.publish("sess/clean", b"nobody-should-get-this", qos=1)

    a = PahoClient(b.port, client_id="clean-a", clean_session=False)
    assert a.connect() == (False, 0), "the old session must be gone"
    a.sync()  # queued messages would be sent before the PUBACK of this
    assert a.messages == []
    # No subscription survived either: a live publish does not arrive.
    pub.publish("sess/clean", b"live", qos=1)
    a.sync()
    pub.sync()
    assert a.messages == []
    a.disconnect()
    pub.disconnect()


def test_unacknowledged_qos1_message_is_resent_with_dup_on_session_resume(broker):
    """[MQTT-4.4.0-1]: on reconnect with clean_session=0 the server re-sends
    unacknowledged PUBLISH packets with DUP=1 and the same packet id."""
    b = broker()
    with R.RawClient(b.host, b.port) as s:
        assert s.connect(client_id="dup-resend", clean=False).return_code == 0
        assert s.subscribe([("sess/dup", 1)]) == [1]
        pub = PahoClient(b.port, client_id="dup-pub")
        pub.connect()
        pub.publish("sess/dup", b"unacked", qos=1)
        first = s.expect(R.PUBLISH)
        assert (first.payload, first.qos, first.dup) == (b"unacked", 1, False)
        # Drop the connection without PUBACK.
    with R.RawClient(b.host, b.port) as s:
        ack = s.connect(client_id="dup-resend", clean=False)
        assert (ack.return_code, ack.session_present) == (0, True)
        again = s.expect(R.PUBLISH)
        assert (again.topic, again.payload, again.qos, again.dup, again.pid) == \
            ("sess/dup", b"unacked", 1, True, first.pid)
        s.send(R.puback(again.pid))
        assert s.is_open_after_ping()
        assert s.pending == []
        s.send(R.disconnect())
    pub.disconnect()


def test_second_connection_with_same_client_id_closes_the_first(broker):
    b = broker()
    first = PahoClient(b.port, client_id="takeover")
    first.connect()
    second = PahoClient(b.port, client_id="takeover")
    second.connect()
    rc = first.wait_disconnected(timeout=5)
    assert rc != 0, "first client saw a clean disconnect, not a takeover"
    # The second connection is fully working.
    second.subscribe("take/t", 1)
    second.publish("take/t", b"ok", qos=1)
    assert [m.payload for m in second.wait_messages(1)] == [b"ok"]
    assert not second.disconnected.is_set()
    second.disconnect()
    first.stop()


def test_takeover_closes_raw_socket_of_first_connection(broker):
    b = broker()
    with R.RawClient(b.host, b.port) as first:
        assert first.connect(client_id="takeover-raw").return_code == 0
        with R.RawClient(b.host, b.port) as second:
            assert second.connect(client_id="takeover-raw").return_code == 0
            assert first.wait_closed(timeout=5) == []
            assert second.is_open_after_ping()


def test_takeover_of_persistent_session_keeps_subscriptions(broker):
    b = broker()
    first = PahoClient(b.port, client_id="takeover-p", clean_session=False)
    first.connect()
    first.subscribe("take/p", 1)
    second = PahoClient(b.port, client_id="takeover-p", clean_session=False)
    assert second.connect() == (True, 0)
    first.wait_disconnected(timeout=5)
    pub = PahoClient(b.port, client_id="takeover-p-pub")
    pub.connect()
    pub.publish("take/p", b"to-second", qos=1)
    assert [m.payload for m in second.wait_messages(1)] == [b"to-second"]
    assert first.messages == []
    for c in (pub, second):
        c.disconnect()
    first.stop()


@pytest.mark.tern_only  # mosquitto's smallest persistent_client_expiration is 1 h
def test_persistent_session_expires_after_session_expiry(broker):
    b = broker(session_expiry=1)
    _offline_session(b, "expiring", [("sess/exp", 1)])
    time.sleep(2.5)  # expiry 1 s; the broker checks expiry on its timer
    a = PahoClient(b.port, client_id="expiring", clean_session=False)
    assert a.connect() == (False, 0), "session should have expired after session.expiry = 1 s"
    a.disconnect()
