"""MQTT 3.1.1 normative statements that no other test proved: each test here
closes a row of docs/CONFORMANCE.md and cites its statement as
[MQTT-x.x.x-y]. Raw sockets (rawmqtt.py) throughout, because every one of
them needs exact control of a flag, a packet id, or what is sent behind
what; negative checks end with a marker message (a barrier) sent after the
one that must not arrive, never with a sleep."""

import time

import pytest

import rawmqtt as R
from conftest import IS_MOSQUITTO

# --------------------------------------------------------------------------
# Helpers


def connected(b, client_id, clean=True, **kwargs):
    """A RawClient past a successful CONNECT/CONNACK."""
    c = R.RawClient(b.host, b.port)
    ack = c.connect(client_id=client_id, clean=clean, **kwargs)
    assert ack.return_code == 0, ack
    return c


def publish_acked(c, topic, payload, qos=0, retain=False, pid=None, dup=False):
    """Publish from a raw client and finish the QoS flow of the sender's side
    (PUBACK, or PUBREC/PUBREL/PUBCOMP), so the broker owns the message."""
    c.send(R.publish(topic, payload, qos=qos, retain=retain, pid=pid, dup=dup))
    if qos == 1:
        assert c.expect(R.PUBACK).pid == pid
    elif qos == 2:
        assert c.expect(R.PUBREC).pid == pid
        c.send(R.pubrel(pid))
        assert c.expect(R.PUBCOMP).pid == pid


def publishes_until(c, marker_topic, timeout=5.0):
    """The PUBLISH packets a raw subscriber receives up to and including the
    one on marker_topic; QoS 1 ones are acknowledged, QoS 2 ones taken
    through PUBREC/PUBREL/PUBCOMP, so the flow never stalls. Fails on any
    packet that is not part of a delivery."""
    got = []
    deadline = time.monotonic() + timeout
    while True:
        p = c.recv_packet(max(deadline - time.monotonic(), 0.0))
        if p.type == R.PUBREL:
            c.send(R.pubcomp(p.pid))
            continue
        assert p.type == R.PUBLISH, p
        got.append(p)
        if p.qos == 1:
            c.send(R.puback(p.pid))
        elif p.qos == 2:
            c.send(R.pubrec(p.pid))
        if p.topic == marker_topic:
            return got


def retained_for(b, topic_filter, marker_topic, client_id):
    """(topic, payload, qos) of every retained message a fresh subscriber to
    topic_filter receives; marker_topic must hold a retained message that
    topic_filter does not match (the barrier: the broker sends the retained
    messages of a SUBSCRIBE in the order of its filters)."""
    with connected(b, client_id) as c:
        c.send(R.subscribe(1, [(topic_filter, 2), (marker_topic, 0)]))
        assert c.expect(R.SUBACK).pid == 1
        got = publishes_until(c, marker_topic)
    return [(p.topic, p.payload, p.qos) for p in got if p.topic != marker_topic]


# --------------------------------------------------------------------------
# 1.5 Data representation


def test_bom_in_topic_is_forwarded_byte_for_byte_and_not_stripped(broker):
    """[MQTT-1.5.3-3]: EF BB BF is U+FEFF, to be neither skipped nor stripped.
    Topics with the character leading and inside must reach the subscriber
    unchanged, and must not match a filter written without it."""
    b = broker()
    lead, inner = "\ufeffbom/lead", "bom/\ufeff/inner"
    with connected(b, "bom-sub") as sub, connected(b, "bom-pub") as pub:
        sub.send(R.subscribe(1, [(lead, 1), (inner, 1), ("bom/lead", 1), ("bom//inner", 1),
                                 ("bom/marker", 1)]))
        assert sub.expect(R.SUBACK).granted == [1, 1, 1, 1, 1]
        publish_acked(pub, lead, "\ufeffpayload", qos=1, pid=1)
        publish_acked(pub, inner, b"x", qos=1, pid=2)
        publish_acked(pub, "bom/marker", b"end", qos=1, pid=3)
        got = publishes_until(sub, "bom/marker")
    # Exactly one delivery each (a stripped BOM would also match the filters
    # written without it), topic and payload bytes unchanged.
    assert [(p.body[:2 + len(t.encode())], p.payload) for p, t in zip(got, [lead, inner])] == [
        (R.mqtt_string(lead), "\ufeffpayload".encode()), (R.mqtt_string(inner), b"x")]
    assert [p.topic for p in got] == [lead, inner, "bom/marker"]


# --------------------------------------------------------------------------
# 2.3 Packet identifiers


def test_messages_in_flight_to_one_client_never_share_a_packet_id(broker):
    """[MQTT-2.3.1-4]: the server's QoS 1 and 2 PUBLISH packets follow the
    client's identifier rules: each one in flight has its own non-zero id,
    and an id stays taken until its flow completes (PUBACK; PUBCOMP for QoS
    2, PUBREL being part of the flow)."""
    b = broker()
    with connected(b, "ids-sub") as sub, connected(b, "ids-pub") as pub:
        assert sub.subscribe([("ids/#", 2)]) == [2]
        for i in range(12):
            publish_acked(pub, "ids/%d" % i, b"%d" % i, qos=1 + i % 2, pid=100 + i)
        first = [sub.expect(R.PUBLISH) for _ in range(12)]
        pids = [p.pid for p in first]
        assert 0 not in pids and len(set(pids)) == 12, pids
        # Complete the QoS 1 flows, move the QoS 2 ones to PUBREL: the QoS 2
        # ids are still taken, the QoS 1 ones free to reuse.
        q2 = [p.pid for p in first if p.qos == 2]
        for p in first:
            sub.send(R.puback(p.pid) if p.qos == 1 else R.pubrec(p.pid))
        assert sorted(sub.expect(R.PUBREL).pid for _ in q2) == sorted(q2)
        for i in range(12):
            publish_acked(pub, "ids/more/%d" % i, b"m", qos=1 + i % 2, pid=200 + i)
        second = [sub.expect(R.PUBLISH) for _ in range(12)]
        more = [p.pid for p in second]
        assert 0 not in more and len(set(more)) == 12, more
        assert not set(more) & set(q2), "an id reused while its QoS 2 flow awaits PUBCOMP"
        assert all(not p.dup for p in first + second)


# Mosquitto 2.0.11 fails this: its ids wrap without a look at the ones in
# flight, so ids 1 and 2 are given out again while held, and the second
# PUBACK for an id closes the subscriber as a protocol error
# (eclipse-mosquitto/mosquitto#3598).
@pytest.mark.tern_only
def test_packet_ids_wrapping_around_skip_the_ids_still_in_flight(broker):
    """[MQTT-2.3.1-4]: over more than 65535 deliveries the server's ids wrap
    around; the ids a QoS 1 PUBLISH (no PUBACK) and a QoS 2 one (PUBREC
    sent, no PUBCOMP) hold all the while are never given to another
    message. The subscriber acknowledges everything else as it arrives."""
    b = broker(limits_max_inflight=250)  # a whole chunk in flight at once
    total = 66000
    with connected(b, "wrap-sub") as sub, connected(b, "wrap-pub") as pub:
        assert sub.subscribe([("wrap/#", 2)]) == [2]
        publish_acked(pub, "wrap/held1", b"q1", qos=1, pid=1)
        publish_acked(pub, "wrap/held2", b"q2", qos=2, pid=2)
        held = {p.topic: p.pid for p in (sub.expect(R.PUBLISH), sub.expect(R.PUBLISH))}
        sub.send(R.pubrec(held["wrap/held2"]))
        assert sub.expect(R.PUBREL).pid == held["wrap/held2"]
        # QoS 1 traffic in chunks, each wholly in flight before the
        # subscriber acknowledges it and the publisher's PUBACKs are read.
        chunk, seen, clash = 240, 0, []
        for start in range(0, total, chunk):
            n = min(chunk, total - start)
            pub.send(b"".join(R.publish("wrap/t", b"", qos=1, pid=1 + (start + i) % 65535)
                              for i in range(n)))
            pids = [sub.expect(R.PUBLISH).pid for _ in range(n)]
            assert len(set(pids)) == n
            clash += [x for x in pids if x in held.values()]
            sub.send(b"".join(R.puback(x) for x in pids))
            seen += n
            for _ in range(n):
                pub.expect(R.PUBACK)
        assert seen == total and clash == []
        # The held flows still complete under their ids.
        sub.send(R.puback(held["wrap/held1"]) + R.pubcomp(held["wrap/held2"]))
        assert sub.is_open_after_ping() and sub.pending == []


def test_acknowledged_qos1_packet_id_reused_by_client_is_a_new_message(broker):
    """[MQTT-4.3.2-2]: once the server has sent PUBACK, a PUBLISH with the
    same packet id is a new publication, forwarded again."""
    b = broker()
    with connected(b, "reuse-sub") as sub, connected(b, "reuse-pub") as pub:
        assert sub.subscribe([("reuse/#", 1)]) == [1]
        publish_acked(pub, "reuse/t", b"first", qos=1, pid=7)
        publish_acked(pub, "reuse/t", b"second", qos=1, pid=7)
        publish_acked(pub, "reuse/marker", b"end", qos=1, pid=7)
        got = publishes_until(sub, "reuse/marker")
    assert [(p.topic, p.payload) for p in got] == [
        ("reuse/t", b"first"), ("reuse/t", b"second"), ("reuse/marker", b"end")]


# --------------------------------------------------------------------------
# 3.1 CONNECT


def _connect_password_flag_without_password():
    # User name and Password flags set, the payload ends after the user name.
    return R.connect(client_id="nopass", username="u", connect_flags=0xC2)


def _connect_password_flag_without_user_name_flag():
    # [MQTT-3.1.2-22]: Password flag 1 needs User Name flag 1.
    return R.connect(client_id="passonly", password="p", connect_flags=0x42)


BAD_CONNECTS = [
    ("reserved_flag_bit0", R.connect(client_id="bad", connect_flags=0x03)),
    ("will_qos_3", R.connect(client_id="bad", connect_flags=0x02 | 0x04 | 0x18,
                             will=("w", b"w", 0, False))),
    ("will_qos_without_will_flag", R.connect(client_id="bad", connect_flags=0x02 | 0x08)),
    ("will_retain_without_will_flag", R.connect(client_id="bad", connect_flags=0x02 | 0x20)),
    ("password_flag_without_password", _connect_password_flag_without_password()),
    ("password_without_user_name_flag", _connect_password_flag_without_user_name_flag()),
    ("protocol_name_mqtx", R.connect(client_id="bad", proto_name="MQTX")),
    ("protocol_name_lowercase", R.connect(client_id="bad", proto_name="mqtt")),
    ("client_id_invalid_utf8", R.connect(client_id=b"bad\xc3\x28")),
    ("truncated_after_keepalive", R.packet(R.CONNECT, 0, R.mqtt_string("MQTT") + bytes([4, 2, 0, 60]))),
]


@pytest.mark.parametrize("bad", [pytest.param(c[1], id=c[0]) for c in BAD_CONNECTS])
def test_malformed_connect_is_closed_without_connack(broker, bad):
    """[MQTT-3.1.4-1]: a CONNECT that does not conform to section 3.1 is
    answered by closing the connection, without a CONNACK. Cases: reserved
    bit [MQTT-3.1.2-3], will flags [MQTT-3.1.2-11], [MQTT-3.1.2-13],
    [MQTT-3.1.2-14], [MQTT-3.1.2-15], a Password flag with no password
    [MQTT-3.1.2-21] or no user name [MQTT-3.1.2-22], a wrong protocol name
    [MQTT-3.1.2-1], ill-formed UTF-8 [MQTT-1.5.3-1], a missing client id
    [MQTT-3.1.3-3]. A PUBLISH sent behind it is not processed either."""
    b = broker()
    with connected(b, "mal-sub") as sub:
        assert sub.subscribe([("mal/#", 0)]) == [0]
        with R.RawClient(b.host, b.port) as c:
            c.send(bad + R.publish("mal/leak", b"processed", retain=True))
            assert c.wait_closed(timeout=3) == []
        with connected(b, "mal-marker") as m:
            m.send(R.publish("mal/marker", b"end"))
            got = publishes_until(sub, "mal/marker")
        assert [p.topic for p in got] == ["mal/marker"]


def test_will_published_once_is_not_published_again(broker):
    """[MQTT-3.1.2-10]: a will leaves the session once it is published. The
    session (clean session 0) outlives the dropped connection; when it is
    resumed without a will and dropped again, and when it ends by expiry,
    the old will is not published a second time."""
    b = broker(session_expiry=1) if not IS_MOSQUITTO else broker()
    with connected(b, "once-sub") as sub:
        assert sub.subscribe([("once/#", 0)]) == [0]
        victim = connected(b, "once-victim", clean=False, will=("once/will", b"gone", 0, False))
        victim.abort()
        assert [p.payload for p in publishes_until(sub, "once/will")] == [b"gone"]
        # Resume the session without a will and drop it again.
        again = connected(b, "once-victim", clean=False)
        again.abort()
        if not IS_MOSQUITTO:
            time.sleep(2.5)  # past session.expiry = 1 s: the session ends
        with connected(b, "once-marker") as m:
            m.send(R.publish("once/marker", b"end"))
        got = publishes_until(sub, "once/marker")
        assert [p.topic for p in got] == ["once/marker"]


def test_connection_without_will_flag_publishes_nothing_when_dropped(broker):
    """[MQTT-3.1.2-12]: Will Flag 0, no will. The session had a will on an
    earlier connection (ended by DISCONNECT, which discards it
    [MQTT-3.1.2-10]); the connection that resumes it without the flag is
    dropped, and nothing is published, not even the earlier will."""
    b = broker()
    with connected(b, "nowill-sub") as sub:
        assert sub.subscribe([("#", 0)]) == [0]
        first = connected(b, "nowill", clean=False, will=("nowill/old", b"old will", 0, False))
        first.send(R.disconnect())
        assert first.wait_closed(timeout=3) == []
        first.close()
        c = connected(b, "nowill", clean=False)
        c.abort()
        plain = connected(b, "nowill-plain")
        plain.abort()
        with connected(b, "nowill-marker") as m:
            m.send(R.publish("nowill/marker", b"end"))
        got = publishes_until(sub, "nowill/marker")
        assert [p.topic for p in got if not p.topic.startswith("$")] == ["nowill/marker"]


@pytest.mark.parametrize("refused,code", [
    pytest.param(R.connect(client_id="lvl", proto_level=6), 0x01, id="protocol_level_6"),
    pytest.param(R.connect(client_id="", clean=False), 0x02, id="empty_client_id_clean_0"),
])
def test_nothing_behind_a_refused_connect_is_processed(broker, refused, code):
    """[MQTT-3.1.4-5]: after refusing a CONNECT (a CONNACK with a non-zero
    return code, [MQTT-3.2.2-5]) the server processes nothing more from that
    client: a SUBSCRIBE and a retained PUBLISH in the same write as the
    CONNECT get no answer, reach no subscriber and store nothing."""
    b = broker()
    with connected(b, "refused-sub") as sub:
        assert sub.subscribe([("refused/#", 0)]) == [0]
        with R.RawClient(b.host, b.port) as c:
            c.send(refused + R.subscribe(1, [("refused/#", 0)])
                   + R.publish("refused/t", b"leak", retain=True) + R.pingreq())
            ack = c.expect(R.CONNACK)
            assert (ack.return_code, ack.session_present) == (code, False)
            assert c.wait_closed(timeout=3) == []
        with connected(b, "refused-marker") as m:
            publish_acked(m, "refused/marker", b"end", retain=True, qos=1, pid=1)
        assert [p.topic for p in publishes_until(sub, "refused/marker")] == ["refused/marker"]
    assert retained_for(b, "refused/t", "refused/marker", "refused-late") == []


# --------------------------------------------------------------------------
# 3.3 PUBLISH


def test_incoming_dup_flag_is_not_copied_to_forwarded_publish(broker):
    """[MQTT-3.3.1-3]: the DUP flag of an outgoing PUBLISH says whether that
    packet is a re-delivery by the server; a first delivery has DUP 0
    whatever the publisher's packet said. At QoS 0 DUP is always 0
    [MQTT-3.3.1-2]."""
    b = broker()
    with connected(b, "dup-sub") as sub, connected(b, "dup-pub") as pub:
        assert sub.subscribe([("dup/1", 1), ("dup/2", 2), ("dup/0", 0)]) == [1, 2, 0]
        publish_acked(pub, "dup/1", b"a", qos=1, pid=1, dup=True)
        publish_acked(pub, "dup/2", b"b", qos=2, pid=2, dup=True)
        publish_acked(pub, "dup/0", b"c", qos=1, pid=3, dup=True)
        got = publishes_until(sub, "dup/0")
    assert [(p.topic, p.qos, p.dup) for p in got] == [
        ("dup/1", 1, False), ("dup/2", 2, False), ("dup/0", 0, False)]


def test_retained_qos0_publish_replaces_the_retained_message(broker):
    """[MQTT-3.3.1-7]: a retained QoS 0 PUBLISH discards the topic's retained
    message (here one stored at QoS 1) and becomes the retained message."""
    b = broker()
    with connected(b, "rq0-pub") as pub:
        publish_acked(pub, "rq0/t", b"qos1 original", qos=1, retain=True, pid=1)
        publish_acked(pub, "rq0/t", b"qos0 replacement", qos=0, retain=True)
        publish_acked(pub, "rq0-marker", b"end", qos=1, retain=True, pid=2)
    assert retained_for(b, "rq0/#", "rq0-marker", "rq0-sub") == [
        ("rq0/t", b"qos0 replacement", 0)]


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_publish_with_retain_0_leaves_the_retained_message_alone(broker, qos):
    """[MQTT-3.3.1-12]: a PUBLISH with RETAIN 0 is not stored and does not
    replace or remove the topic's retained message, with a payload or
    without (an empty RETAIN 1 payload would clear it, [MQTT-3.3.1-10])."""
    b = broker()
    with connected(b, "r0-pub") as pub:
        publish_acked(pub, "r0/t", b"kept", qos=1, retain=True, pid=1)
        publish_acked(pub, "r0/t", b"not retained", qos=qos, pid=2 if qos else None)
        publish_acked(pub, "r0/t", b"", qos=qos, pid=3 if qos else None)
        publish_acked(pub, "r0/other", b"never retained", qos=qos, pid=4 if qos else None)
        publish_acked(pub, "r0-marker", b"end", qos=1, retain=True, pid=5)
    assert retained_for(b, "r0/#", "r0-marker", "r0-sub") == [("r0/t", b"kept", 1)]


# --------------------------------------------------------------------------
# 3.8 SUBSCRIBE, 3.10 UNSUBSCRIBE


def test_repeated_subscribe_resends_the_retained_messages(broker):
    """[MQTT-3.8.4-3]: a SUBSCRIBE whose filter equals an existing one
    replaces the subscription and re-sends the matching retained messages,
    with the RETAIN flag, at the new QoS."""
    b = broker()
    with connected(b, "rs-pub") as pub:
        publish_acked(pub, "rs/a", b"A", qos=1, retain=True, pid=1)
        publish_acked(pub, "rs/b", b"B", qos=1, retain=True, pid=2)
    with connected(b, "rs-sub") as sub:
        rounds = []
        for pid, qos in ((1, 0), (2, 1)):
            sub.send(R.subscribe(pid, [("rs/#", qos)]))
            assert sub.expect(R.SUBACK).granted == [qos]
            got = []
            for _ in range(2):
                p = sub.expect(R.PUBLISH)
                if p.qos:
                    sub.send(R.puback(p.pid))
                got.append((p.topic, p.payload, p.qos, p.retain))
            rounds.append(sorted(got))
        assert sub.is_open_after_ping() and sub.pending == []
    assert rounds == [[("rs/a", b"A", 0, True), ("rs/b", b"B", 0, True)],
                      [("rs/a", b"A", 1, True), ("rs/b", b"B", 1, True)]]


def test_unsubscribe_completes_deliveries_already_started(broker):
    """[MQTT-3.10.4-3]: QoS 1 and 2 deliveries started before an UNSUBSCRIBE
    are completed: the unacknowledged PUBLISHes belong to the session, so
    a resumed session gets them again (DUP 1, same ids, [MQTT-4.4.0-1]) and
    the QoS 2 flow goes on to PUBREL and PUBCOMP; new publications no
    longer arrive."""
    b = broker()
    pub = connected(b, "us-pub")
    with connected(b, "us-sub", clean=False) as sub:
        assert sub.subscribe([("us/#", 2)]) == [2]
        publish_acked(pub, "us/q1", b"one", qos=1, pid=1)
        publish_acked(pub, "us/q2", b"two", qos=2, pid=2)
        started = {p.topic: p for p in (sub.expect(R.PUBLISH), sub.expect(R.PUBLISH))}
        assert {t: (p.qos, p.dup) for t, p in started.items()} == {
            "us/q1": (1, False), "us/q2": (2, False)}
        sub.send(R.unsubscribe(9, ["us/#"]))
        assert sub.expect(R.UNSUBACK).pid == 9
        sub.abort()     # no PUBACK, no PUBREC
    publish_acked(pub, "us/after", b"late", qos=1, pid=3)
    with connected(b, "us-sub", clean=False) as sub:
        again = {p.topic: p for p in (sub.expect(R.PUBLISH), sub.expect(R.PUBLISH))}
        assert {t: (p.payload, p.qos, p.dup, p.pid) for t, p in again.items()} == {
            t: (p.payload, p.qos, True, p.pid) for t, p in started.items()}
        sub.send(R.puback(again["us/q1"].pid))
        sub.send(R.pubrec(again["us/q2"].pid))
        assert sub.expect(R.PUBREL).pid == again["us/q2"].pid
        sub.send(R.pubcomp(again["us/q2"].pid))
        assert sub.subscribe([("us/marker", 0)], pid=4) == [0]
        publish_acked(pub, "us/after", b"later", qos=1, pid=5)
        publish_acked(pub, "us/marker", b"end", qos=1, pid=6)
        assert [p.topic for p in publishes_until(sub, "us/marker")] == ["us/marker"]
        sub.send(R.disconnect())
    pub.close()


# --------------------------------------------------------------------------
# 4.1 Session state


@pytest.mark.tern_only  # mosquitto's smallest persistent_client_expiration is 1 h
def test_session_of_an_open_connection_outlives_session_expiry(broker):
    """[MQTT-4.1.0-2]: a session lasts at least as long as its network
    connection. With session.expiry = 1 s, a connection held open 3 s keeps
    its subscription, and the session is present when it reconnects. The
    session has been offline once before (its expiry clock started), so a
    clock that a reconnection does not stop would end it."""
    b = broker(session_expiry=1)
    with connected(b, "long-sub", clean=False) as sub:
        assert sub.subscribe([("long/t", 1)]) == [1]
        sub.send(R.disconnect())
        assert sub.wait_closed(timeout=3) == []
    with R.RawClient(b.host, b.port) as sub:
        ack = sub.connect(client_id="long-sub", clean=False)
        assert (ack.return_code, ack.session_present) == (0, True)
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # several expiry checks (1 s each)
            assert sub.is_open_after_ping()
            time.sleep(0.5)
        with connected(b, "long-pub") as pub:
            publish_acked(pub, "long/t", b"still subscribed", qos=1, pid=1)
        p = sub.expect(R.PUBLISH)
        assert (p.topic, p.payload) == ("long/t", b"still subscribed")
        sub.send(R.puback(p.pid))
        sub.send(R.disconnect())
    with R.RawClient(b.host, b.port) as again:
        ack = again.connect(client_id="long-sub", clean=False)
        assert (ack.return_code, ack.session_present) == (0, True)
