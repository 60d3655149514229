"""MQTT 5.0 statements of docs/CONFORMANCE.md that no feature test proved:
the rules 5.0 restates from 3.1.1 (acknowledgement flows, packet ids, DUP,
retained messages, SUBACK/UNSUBACK, PINGRESP, reserved flags, ordering,
$ topics), checked on a level-5 connection with hand-built packets
(raw5.py), so each assertion sees the exact bytes the broker sends.

Each test cites the statements it proves as [MQTT-x.x.x-y], as the matrix
rows cite the test.
"""

import struct

import pytest

import raw5 as R5
import rawmqtt as rm
from rawmqtt import packet


def connected(b, cid, clean_start=True, props=()):
    c = R5.RawClient5(b.host, b.port)
    present, rc, _ = c.connect5(client_id=cid, clean_start=clean_start, props=props)
    assert rc == 0
    return c, present


def next_publish(c, timeout=5.0):
    p = c.expect(rm.PUBLISH, timeout)
    topic, pid, props, payload = R5.publish_fields(p)
    return p, topic, pid, props, payload


def no_packet(c, timeout=0.5):
    """True when nothing arrives within timeout (the connection stays open)."""
    try:
        got = c.recv_packet(timeout)
    except TimeoutError:
        return True
    raise AssertionError("unexpected packet %r" % got)


def unsuback_codes(pkt):
    assert pkt.type == rm.UNSUBACK, pkt
    _, pos = R5.decode_props(pkt.body, 2)
    return list(pkt.body[pos:])


# ---- CONNACK, PINGREQ -----------------------------------------------------

def test_connack_is_the_first_packet_with_reserved_flags_zero_and_reason_0(broker):
    # [MQTT-3.2.0-1] CONNACK before anything else, [MQTT-3.2.2-1] flag bits
    # 7-1 are 0, [MQTT-3.1.4-5] a valid CONNECT gets reason code 0x00,
    # [MQTT-3.1.2-28] Request Response Information 0 gets no Response
    # Information, [MQTT-4.12.0-6] no Authentication Method in CONNACK
    # without one in CONNECT.
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    c.send(R5.connect5(client_id="ca-first", props=[(R5.REQUEST_RESPONSE_INFO, 0)]))
    first = c.recv_packet()
    assert first.type == rm.CONNACK
    assert first.body[0] & 0xFE == 0
    present, rc, props = R5.connack_fields(first)
    assert rc == 0 and not present
    assert R5.RESPONSE_INFO not in props
    assert R5.AUTH_METHOD not in props
    assert R5.USER_PROPERTY not in props  # [MQTT-3.2.2-20]: tern sends none
    # [MQTT-3.2.0-2] only one CONNACK: a PINGREQ now gets PINGRESP and
    # nothing else [MQTT-3.12.4-1].
    c.send(rm.pingreq())
    assert c.recv_packet().type == rm.PINGRESP
    assert no_packet(c)


def test_refused_connect_gets_session_present_0_and_the_connection_closes(broker):
    # [MQTT-3.2.2-6] a non-zero reason code has Session Present 0;
    # [MQTT-3.2.2-7] [MQTT-4.13.2-1] after a CONNACK of 0x80 or above the
    # server closes; [MQTT-3.1.4-6] nothing after it is processed (a
    # PUBLISH sent behind the CONNECT reaches no subscriber).
    b = broker()
    s, _ = connected(b, "rf-sub")
    s.subscribe5([("rf/t", 0)])
    c, _ = connected(b, "rf-old", clean_start=False, props=[(R5.SESSION_EXPIRY, 60)])
    c.send(R5.disconnect5(0))
    c.close()
    c = R5.RawClient5(b.host, b.port)
    c.send(R5.connect5(client_id="rf-old", clean_start=False,
                       props=[(R5.AUTH_METHOD, "SCRAM-SHA-1")])
           + R5.publish5("rf/t", b"after-refusal"))
    present, rc, _ = R5.connack_fields(c.expect(rm.CONNACK))
    assert rc >= 0x80 and not present
    assert c.wait_closed() == []
    assert no_packet(s, 1.0)


# ---- PUBLISH flows at level 5 ---------------------------------------------

def test_inbound_qos1_gets_puback_with_its_id_and_the_id_is_then_free(broker):
    # [MQTT-2.2.1-5] [MQTT-4.3.2-4] PUBACK carries the PUBLISH's id;
    # [MQTT-4.3.2-5] after the PUBACK the same id is a new message, even
    # with DUP set: both are delivered. [MQTT-3.3.4-1] the server answers
    # as the QoS requires.
    b = broker()
    s, _ = connected(b, "q1-sub")
    s.subscribe5([("q1/t", 1)])
    c, _ = connected(b, "q1-pub")
    c.send(R5.publish5("q1/t", b"one", qos=1, pid=7))
    ack = c.expect(rm.PUBACK)
    assert ack.pid == 7
    c.send(R5.publish5("q1/t", b"two", qos=1, pid=7, dup=True))
    assert c.expect(rm.PUBACK).pid == 7
    got = []
    for _ in range(2):
        p, _, pid, _, payload = next_publish(s)
        # [MQTT-3.3.1-3] DUP on the way out says only whether the server
        # retransmits: a copy of a PUBLISH received with DUP 1 has DUP 0.
        assert p.dup is False
        s.send(R5.ack5(rm.PUBACK, pid))
        got.append(payload)
    assert got == [b"one", b"two"]


def test_inbound_qos2_repeat_before_pubrel_is_not_delivered_twice(broker):
    # [MQTT-4.3.3-8] PUBREC with the PUBLISH's id; [MQTT-4.3.3-10] a repeat
    # before PUBREL gets PUBREC again and no second delivery;
    # [MQTT-4.3.3-11] PUBREL gets PUBCOMP with the same id; [MQTT-4.3.3-12]
    # after PUBCOMP the id is a new message; [MQTT-2.2.1-5].
    b = broker()
    s, _ = connected(b, "q2-sub")
    s.subscribe5([("q2/t", 0)])
    c, _ = connected(b, "q2-pub")
    c.send(R5.publish5("q2/t", b"first", qos=2, pid=9))
    assert c.expect(rm.PUBREC).pid == 9
    c.send(R5.publish5("q2/t", b"first", qos=2, pid=9, dup=True))
    assert c.expect(rm.PUBREC).pid == 9
    c.send(R5.ack5(rm.PUBREL, 9))
    assert c.expect(rm.PUBCOMP).pid == 9
    c.send(R5.publish5("q2/t", b"second", qos=2, pid=9))
    assert c.expect(rm.PUBREC).pid == 9
    c.send(R5.ack5(rm.PUBREL, 9))
    assert c.expect(rm.PUBCOMP).pid == 9
    got = [next_publish(s)[4] for _ in range(2)]
    assert got == [b"first", b"second"]
    assert no_packet(s)


def test_outbound_flows_use_fresh_nonzero_ids_dup_0_and_the_granted_qos(broker):
    # [MQTT-2.2.1-4] [MQTT-4.3.2-1] [MQTT-4.3.3-1] each new QoS 1/2 PUBLISH
    # from the server has a non-zero id not in use; [MQTT-4.3.2-2]
    # [MQTT-4.3.3-2] [MQTT-3.3.1-2] DUP 0 on a first send and on QoS 0;
    # [MQTT-3.8.4-8] the QoS is the minimum of published and granted;
    # [MQTT-4.3.3-4] after PUBREC the server sends PUBREL with that id, and
    # [MQTT-4.3.3-5] completes on PUBCOMP.
    b = broker()
    s, _ = connected(b, "ob-sub")
    assert s.subscribe5([("ob/q2", 2), ("ob/q1", 1), ("ob/q0", 0)]) == [2, 1, 0]
    c, _ = connected(b, "ob-pub")
    for i in range(3):
        c.send(R5.publish5("ob/q2", b"%d" % i, qos=2, pid=10 + i))
        c.expect(rm.PUBREC)
        c.send(R5.ack5(rm.PUBREL, 10 + i))
        c.expect(rm.PUBCOMP)
    c.send(R5.publish5("ob/q1", b"x", qos=2, pid=20))
    c.expect(rm.PUBREC)
    c.send(R5.ack5(rm.PUBREL, 20))
    c.expect(rm.PUBCOMP)
    c.send(R5.publish5("ob/q0", b"y", qos=1, pid=21))
    c.expect(rm.PUBACK)
    pubs = [next_publish(s) for _ in range(5)]
    ids = [p[2] for p in pubs if p[0].qos > 0]
    assert [p[0].qos for p in pubs] == [2, 2, 2, 1, 0]
    assert all(p[0].dup is False for p in pubs)
    assert len(ids) == 4 and 0 not in ids and len(set(ids)) == 4
    for p in pubs[:3]:
        s.send(R5.ack5(rm.PUBREC, p[2]))
        rel = s.expect(rm.PUBREL)
        assert rel.pid == p[2] and rel.flags == 0x02
        # The PUBREL tern sends has no Reason String nor User Property, so
        # none can exceed the client's Maximum Packet Size [MQTT-3.6.2-2]
        # [MQTT-3.6.2-3].
        assert R5.ack_reason(rel) == 0
        assert len(rel.body) <= 3 or R5.decode_props(rel.body, 3)[0] == {}
        s.send(R5.ack5(rm.PUBCOMP, p[2]))
    s.send(R5.ack5(rm.PUBACK, pubs[3][2]))
    assert no_packet(s)


def test_resumed_session_resends_publish_with_dup_and_pubrel_not_publish(broker):
    # [MQTT-4.4.0-1] on resuming, unacknowledged PUBLISH and PUBREL are
    # re-sent with their ids; [MQTT-3.3.1-1] [MQTT-3.3.1-3] the resent
    # PUBLISH has DUP 1 because it is a retransmission; [MQTT-4.3.3-6] no
    # PUBLISH is re-sent once its PUBREL went out; [MQTT-4.3.2-3]
    # [MQTT-4.3.3-3] unacknowledged until PUBACK / PUBREC.
    b = broker()
    s, _ = connected(b, "rs-sub", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    s.subscribe5([("rs/#", 2)])
    c, _ = connected(b, "rs-pub")
    c.send(R5.publish5("rs/1", b"q1", qos=1, pid=1))
    c.expect(rm.PUBACK)
    c.send(R5.publish5("rs/2", b"q2", qos=2, pid=2))
    c.expect(rm.PUBREC)
    c.send(R5.ack5(rm.PUBREL, 2))
    c.expect(rm.PUBCOMP)
    p1 = next_publish(s)
    p2 = next_publish(s)
    assert p1[0].dup is False and p2[0].dup is False
    q1_pid = p1[2] if p1[4] == b"q1" else p2[2]
    q2_pid = p2[2] if p2[4] == b"q2" else p1[2]
    s.send(R5.ack5(rm.PUBREC, q2_pid))
    assert s.expect(rm.PUBREL).pid == q2_pid
    s.abort()
    s, present = connected(b, "rs-sub", clean_start=False,
                           props=[(R5.SESSION_EXPIRY, 300)])
    assert present
    got = [s.recv_packet() for _ in range(2)]
    assert no_packet(s)
    pubs = [p for p in got if p.type == rm.PUBLISH]
    rels = [p for p in got if p.type == rm.PUBREL]
    assert len(pubs) == 1 and len(rels) == 1
    assert pubs[0].dup and pubs[0].pid == q1_pid and R5.publish_fields(pubs[0])[3] == b"q1"
    assert rels[0].pid == q2_pid


# ---- retained messages ----------------------------------------------------

def test_retained_message_is_replaced_cleared_by_empty_payload_and_kept_by_retain_0(broker):
    # [MQTT-3.3.1-5] RETAIN 1 replaces the topic's retained message;
    # [MQTT-3.3.1-8] RETAIN 0 leaves it alone; [MQTT-3.3.1-6] an empty
    # retained payload is forwarded as usual and removes it;
    # [MQTT-3.3.1-7] and is not stored itself.
    b = broker()
    c, _ = connected(b, "rt-pub")
    live, _ = connected(b, "rt-live")
    live.subscribe5([("rt/t", 0)])
    c.send(R5.publish5("rt/t", b"old", retain=True))
    c.send(R5.publish5("rt/t", b"new", qos=1, pid=1, retain=True))
    c.expect(rm.PUBACK)
    c.send(R5.publish5("rt/t", b"plain", qos=1, pid=2))
    c.expect(rm.PUBACK)
    assert [next_publish(live)[4] for _ in range(3)] == [b"old", b"new", b"plain"]
    s, _ = connected(b, "rt-s1")
    s.subscribe5([("rt/t", 1)])
    p = next_publish(s)
    assert p[4] == b"new" and p[0].retain and p[0].qos == 1
    c.send(R5.publish5("rt/t", b"", qos=1, pid=3, retain=True))
    c.expect(rm.PUBACK)
    assert next_publish(live)[4] == b""
    s2, _ = connected(b, "rt-s2")
    s2.subscribe5([("rt/t", 1)])
    assert no_packet(s2, 1.0)


# ---- SUBSCRIBE / UNSUBSCRIBE ----------------------------------------------

def test_suback_and_unsuback_answer_each_filter_in_order_with_the_packet_id(broker):
    # [MQTT-3.8.4-1] [MQTT-3.8.4-2] SUBACK with the SUBSCRIBE's id;
    # [MQTT-3.8.4-5] [MQTT-3.8.4-6] [MQTT-3.9.3-1] one combined SUBACK with
    # a code per filter in order; [MQTT-3.8.4-7] the granted QoS.
    # [MQTT-3.10.4-4] [MQTT-3.10.4-5] UNSUBACK with the id even when
    # nothing was deleted; [MQTT-3.10.4-6] [MQTT-3.11.3-1] [MQTT-3.11.3-2]
    # one code per filter in order: 0x00 or 0x11 (no subscription existed).
    b = broker()
    c, _ = connected(b, "sa")
    c.send(R5.subscribe5(0x1234, [("sa/a", 2), ("sa/b", 0), ("sa/c", 1)]))
    ack = c.expect(rm.SUBACK)
    assert ack.pid == 0x1234 and R5.suback_codes(ack) == [2, 0, 1]
    # No Reason String nor User Property on SUBACK and UNSUBACK: none can
    # exceed the client's Maximum Packet Size [MQTT-3.9.2-1] [MQTT-3.9.2-2]
    # [MQTT-3.11.2-1] [MQTT-3.11.2-2].
    assert R5.decode_props(ack.body, 2)[0] == {}
    c.send(rm.unsubscribe5(0x4321, ["sa/b", "sa/none", "sa/a"]))
    ack = c.expect(rm.UNSUBACK)
    assert ack.pid == 0x4321 and R5.decode_props(ack.body, 2)[0] == {}
    assert unsuback_codes(ack) == [0x00, 0x11, 0x00]
    c.send(rm.unsubscribe5(7, ["sa/none"]))
    ack = c.expect(rm.UNSUBACK)
    assert ack.pid == 7 and unsuback_codes(ack) == [0x11]


def test_unsubscribed_filter_gets_no_new_messages_and_others_still_do(broker):
    # [MQTT-3.10.4-1] the filter is compared character by character: "u/+"
    # does not remove "u/#"; [MQTT-3.10.4-2] after UNSUBSCRIBE no new
    # messages for the removed filter.
    b = broker()
    c, _ = connected(b, "us")
    c.subscribe5([("u/a", 0), ("u/#", 0)])
    c.send(rm.unsubscribe5(2, ["u/+", "u/a"]))
    assert unsuback_codes(c.expect(rm.UNSUBACK)) == [0x11, 0x00]
    p, _ = connected(b, "us-pub")
    p.send(R5.publish5("u/a", b"one"))
    p.send(R5.publish5("x/b", b"none"))
    p.send(R5.publish5("u/b", b"two"))
    got = [next_publish(c)[1:5:3] for _ in range(2)]
    assert got == [("u/a", b"one"), ("u/b", b"two")]
    c.send(rm.unsubscribe5(3, ["u/#"]))
    assert unsuback_codes(c.expect(rm.UNSUBACK)) == [0x00]
    p.send(R5.publish5("u/a", b"three"))
    assert no_packet(c, 1.0)


def test_overlapping_subscriptions_deliver_the_message_at_the_highest_qos(broker):
    # [MQTT-3.3.4-2] overlapping subscriptions of one session: the message
    # goes out at the highest granted QoS among them (a server may send
    # further copies, one per subscription: Mosquitto does, tern sends one,
    # [MQTT-3.3.4-4]).
    b = broker()
    s, _ = connected(b, "ov")
    s.subscribe5([("ov/+", 0), ("ov/#", 1), ("ov/t", 0)])
    c, _ = connected(b, "ov-pub")
    c.send(R5.publish5("ov/t", b"m", qos=2, pid=1))
    c.expect(rm.PUBREC)
    c.send(R5.ack5(rm.PUBREL, 1))
    c.expect(rm.PUBCOMP)
    copies = []
    while True:
        try:
            p = next_publish(s, 1.0)
        except TimeoutError:
            break
        assert p[4] == b"m"
        copies.append(p[0].qos)
        if p[0].qos:
            s.send(R5.ack5(rm.PUBACK, p[2]))
    assert copies and max(copies) == 1, copies


# ---- topics ---------------------------------------------------------------

def test_wildcard_filters_do_not_match_dollar_topics_and_matching_is_exact(broker):
    # [MQTT-4.7.2-1] "#" and "+/x" do not match a topic starting with $;
    # [MQTT-4.7.3-4] matching does no normalisation: "caf\u00e9" (NFC) and
    # "cafe\u0301" (NFD) are different topics; [MQTT-1.5.4-3] a BOM
    # EF BB BF is forwarded, not stripped; [MQTT-3.3.2-3] the topic sent
    # matches the filter.
    b = broker()
    s, _ = connected(b, "dl")
    s.subscribe5([("#", 0)])
    s3, _ = connected(b, "dl-plus")
    s3.subscribe5([("+/x", 0)])
    s2, _ = connected(b, "nf")
    s2.subscribe5([("caf\u00e9/t", 0)])
    c, _ = connected(b, "dl-pub")
    c.send(R5.publish5("$app/x", b"dollar"))
    c.send(R5.publish5("cafe\u0301/t", b"nfd"))
    c.send(R5.publish5("\ufeffbom/x", b"bom"))
    c.send(R5.publish5("caf\u00e9/t", b"nfc"))
    got = [next_publish(s)[1:5:3] for _ in range(3)]
    assert got == [("cafe\u0301/t", b"nfd"), ("\ufeffbom/x", b"bom"), ("caf\u00e9/t", b"nfc")]
    assert no_packet(s)
    assert next_publish(s3)[1:5:3] == ("\ufeffbom/x", b"bom")
    assert no_packet(s3)
    assert next_publish(s2)[1:5:3] == ("caf\u00e9/t", b"nfc")
    assert no_packet(s2)


def test_messages_of_one_topic_and_qos_arrive_in_publish_order(broker):
    # [MQTT-4.6.0-5] [MQTT-4.6.0-6] every topic is ordered: 50 QoS 1
    # messages arrive in the order published.
    b = broker()
    s, _ = connected(b, "or")
    s.subscribe5([("or/t", 1)])
    c, _ = connected(b, "or-pub")
    for i in range(50):
        c.send(R5.publish5("or/t", b"%d" % i, qos=1, pid=i + 1))
    got = []
    for _ in range(50):
        p = next_publish(s)
        s.send(R5.ack5(rm.PUBACK, p[2]))
        got.append(int(p[4]))
    assert got == list(range(50))


# ---- malformed input ------------------------------------------------------

# (id, packet sent after a good CONNECT, reason codes accepted). Each is
# answered with DISCONNECT and a close [MQTT-4.13.1-1]; the DISCONNECT
# never carries a Session Expiry Interval [MQTT-3.14.2-2], and nothing
# follows it before the close [MQTT-3.14.4-1] [MQTT-3.14.4-2].
BAD = [
    # [MQTT-2.1.3-1] [MQTT-3.6.1-1] PUBREL flags other than 0010.
    ("pubrel-flags-0000", packet(rm.PUBREL, 0x0, struct.pack("!H", 1) + b"\x00\x00"),
     (R5.RC_MALFORMED,)),
    # [MQTT-3.8.1-1] SUBSCRIBE flags other than 0010.
    ("subscribe-flags-0000", packet(rm.SUBSCRIBE, 0x0, struct.pack("!H", 1) + b"\x00"
                                    + rm.mqtt_string("a") + b"\x00"), (R5.RC_MALFORMED,)),
    # [MQTT-3.10.1-1] UNSUBSCRIBE flags other than 0010.
    ("unsubscribe-flags-0000", rm.unsubscribe5(1, ["a"], flags=0x0), (R5.RC_MALFORMED,)),
    # [MQTT-3.15.1-1] AUTH flags other than 0000.
    ("auth-flags-0001", packet(R5.AUTH, 0x1, b"\x18\x00"), (R5.RC_MALFORMED,)),
    # [MQTT-3.3.1-4] PUBLISH with both QoS bits set.
    ("publish-qos-3", packet(rm.PUBLISH, 0x6, rm.mqtt_string("a") + b"\x00\x01\x00x"),
     (R5.RC_MALFORMED,)),
    # [MQTT-3.3.2-2] [MQTT-4.7.0-1] a wildcard in a topic name.
    ("publish-topic-with-plus", R5.publish5("a/+/b", b"x"), (R5.RC_MALFORMED,
                                                              R5.RC_PROTOCOL_ERROR, 0x90)),
    ("publish-topic-with-hash", R5.publish5("a/#", b"x"), (R5.RC_MALFORMED,
                                                           R5.RC_PROTOCOL_ERROR, 0x90)),
    # [MQTT-1.5.4-2] [MQTT-4.7.3-2] U+0000 in a topic name.
    ("publish-topic-with-nul", R5.publish5("a\x00b", b"x"), (R5.RC_MALFORMED,)),
    # [MQTT-3.3.2-1] [MQTT-1.5.4-1] a topic name that is not UTF-8.
    ("publish-topic-bad-utf8", packet(rm.PUBLISH, 0, b"\x00\x02\xc3\x28\x00"),
     (R5.RC_MALFORMED,)),
    # [MQTT-3.10.3-2] an UNSUBSCRIBE without filters.
    ("unsubscribe-without-filters", rm.unsubscribe5(1, []), (R5.RC_MALFORMED,
                                                             R5.RC_PROTOCOL_ERROR)),
    # [MQTT-3.10.3-1] an UNSUBSCRIBE filter that is not UTF-8.
    ("unsubscribe-filter-bad-utf8", packet(rm.UNSUBSCRIBE, 0x2, b"\x00\x01\x00\x00\x02\xc3\x28"),
     (R5.RC_MALFORMED,)),
    # [MQTT-3.8.3-1] a SUBSCRIBE filter that is not UTF-8.
    ("subscribe-filter-bad-utf8", packet(rm.SUBSCRIBE, 0x2, b"\x00\x01\x00\x00\x02\xc3\x28\x00"),
     (R5.RC_MALFORMED,)),
    # [MQTT-3.3.2-13] a Response Topic that is not UTF-8.
    ("response-topic-bad-utf8",
     R5.publish5("a", b"x", raw_props=bytes([5, R5.RESPONSE_TOPIC, 0, 2, 0xC3, 0x28])),
     (R5.RC_MALFORMED,)),
    # [MQTT-3.3.2-19] a Content Type that is not UTF-8.
    ("content-type-bad-utf8",
     R5.publish5("a", b"x", raw_props=bytes([5, R5.CONTENT_TYPE, 0, 2, 0xC3, 0x28])),
     (R5.RC_MALFORMED,)),
    # [MQTT-1.5.7-1] the value half of a User Property that is not UTF-8.
    ("user-property-value-bad-utf8",
     R5.publish5("a", b"x", raw_props=bytes([8, R5.USER_PROPERTY, 0, 1, 0x6B, 0, 2, 0xC3, 0x28])),
     (R5.RC_MALFORMED,)),
    # [MQTT-1.5.5-1] a Variable Byte Integer in more bytes than needed (the
    # Property Length 0 written as 0x80 0x00).
    ("property-length-not-minimal",
     R5.publish5("a", b"x", raw_props=b"\x80\x00"), (R5.RC_MALFORMED,)),
    # [MQTT-3.3.2-8] Topic Alias 0 from the client.
    ("topic-alias-zero", R5.publish5("a", b"x", props=[(R5.TOPIC_ALIAS, 0)]),
     (R5.RC_TOPIC_ALIAS_INVALID,)),
    # [MQTT-4.7.1-1] "#" not last, [MQTT-4.7.1-2] "+" not a whole level,
    # [MQTT-4.7.3-1] an empty filter: a filter invalid in a SUBSCRIBE.
    ("subscribe-hash-not-last", R5.subscribe5(1, [("a/#/b", 0)]),
     (R5.RC_MALFORMED, R5.RC_PROTOCOL_ERROR, R5.RC_TOPIC_FILTER_INVALID)),
    ("subscribe-plus-inside-a-level", R5.subscribe5(1, [("a/b+/c", 0)]),
     (R5.RC_MALFORMED, R5.RC_PROTOCOL_ERROR, R5.RC_TOPIC_FILTER_INVALID)),
    ("subscribe-empty-filter", R5.subscribe5(1, [("", 0)]),
     (R5.RC_MALFORMED, R5.RC_PROTOCOL_ERROR, R5.RC_TOPIC_FILTER_INVALID)),
    # [MQTT-2.2.1-3] a QoS 1 PUBLISH with packet identifier 0.
    ("publish-qos1-packet-id-0", R5.publish5("a", b"x", qos=1, pid=0), (R5.RC_MALFORMED,
                                                                          R5.RC_PROTOCOL_ERROR)),
]


@pytest.mark.tern_only
@pytest.mark.parametrize("name,data,codes", BAD, ids=[c[0] for c in BAD])
def test_malformed_level_5_packet_gets_disconnect_without_session_expiry_and_a_close(
        broker, name, data, codes):
    b = broker()
    c, _ = connected(b, "bad")
    c.send(data)
    pkt = None
    while True:
        pkt = c.recv_packet()
        if pkt.type == rm.DISCONNECT:
            break
    reason, props = R5.disconnect_fields(pkt)
    assert reason in codes, "%s: DISCONNECT %#x" % (name, reason)
    assert R5.SESSION_EXPIRY not in props
    # tern's DISCONNECT carries no Reason String nor User Property: it fits
    # any Maximum Packet Size [MQTT-3.14.2-3] [MQTT-3.14.2-4].
    assert R5.REASON_STRING not in props and R5.USER_PROPERTY not in props
    assert c.wait_closed() == []
    ok, _ = connected(b, "bystander")
    ok.send(rm.pingreq())
    assert ok.recv_packet().type == rm.PINGRESP


# (id, CONNECT, reason codes accepted in the refusing CONNACK): a bad
# CONNECT at level 5 is refused in the CONNACK, then closed [MQTT-3.1.4-1].
BAD_CONNECT = [
    # [MQTT-3.1.2-11] Will QoS non-zero without the Will Flag.
    ("will-qos-without-will",
     packet(rm.CONNECT, 0, rm.mqtt_string("MQTT") + bytes([5, 0x02 | 0x08]) + b"\x00\x3c\x00"
               + rm.mqtt_string("w")), (R5.RC_MALFORMED,)),
    # [MQTT-3.1.2-13] Will Retain without the Will Flag.
    ("will-retain-without-will",
     packet(rm.CONNECT, 0, rm.mqtt_string("MQTT") + bytes([5, 0x02 | 0x20]) + b"\x00\x3c\x00"
            + rm.mqtt_string("w")), (R5.RC_MALFORMED,)),
    # [MQTT-3.1.2-12] Will QoS 3.
    ("will-qos-3", R5.connect5(client_id="w", will=("w/t", b"x", 3, False)), (R5.RC_MALFORMED,)),
    # [MQTT-3.1.3-4] a client identifier that is not UTF-8.
    ("client-id-bad-utf8",
     packet(rm.CONNECT, 0, rm.mqtt_string("MQTT") + bytes([5, 0x02]) + b"\x00\x3c\x00"
            + b"\x00\x02\xc3\x28"), (R5.RC_MALFORMED,)),
    # [MQTT-3.1.3-11] a Will Topic that is not UTF-8.
    ("will-topic-bad-utf8",
     packet(rm.CONNECT, 0, rm.mqtt_string("MQTT") + bytes([5, 0x02 | 0x04]) + b"\x00\x3c\x00"
            + rm.mqtt_string("w") + b"\x00" + b"\x00\x02\xc3\x28" + rm.mqtt_string("p")),
     (R5.RC_MALFORMED,)),
    # [MQTT-3.1.3-12] a User Name that is not UTF-8.
    ("user-name-bad-utf8",
     packet(rm.CONNECT, 0, rm.mqtt_string("MQTT") + bytes([5, 0x02 | 0x80]) + b"\x00\x3c\x00"
            + rm.mqtt_string("w") + b"\x00\x02\xc3\x28"), (R5.RC_MALFORMED,)),
]


@pytest.mark.tern_only
@pytest.mark.parametrize("name,data,codes", BAD_CONNECT, ids=[c[0] for c in BAD_CONNECT])
def test_malformed_level_5_connect_is_refused_in_the_connack_and_closed(broker, name, data, codes):
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    c.send(data)
    present, rc, _ = R5.connack_fields(c.expect(rm.CONNACK))
    assert rc in codes and not present, "%s: CONNACK %#x" % (name, rc)
    assert c.wait_closed() == []


def test_client_identifiers_of_1_to_23_letters_and_digits_are_accepted(broker):
    # [MQTT-3.1.3-5] the server accepts client ids of 1 to 23 bytes of
    # 0-9a-zA-Z.
    b = broker()
    for cid in ("a", "Z9", "abcdefghijklmnopqrstuvw", "0123456789ABCDEFGHIJKLM"):
        c = R5.RawClient5(b.host, b.port)
        present, rc, props = c.connect5(client_id=cid)
        assert rc == 0 and R5.ASSIGNED_CLIENT_ID not in props, cid
        c.send(R5.disconnect5(0))
        c.close()


@pytest.mark.tern_only
def test_level_5_connect_with_a_protocol_name_other_than_mqtt_is_closed(broker):
    # [MQTT-3.1.2-1] a wrong protocol name: the server closes the
    # connection, with at most a refusing CONNACK (0x84) before, and the
    # CONNECT is not processed (no session: a later CONNECT of the same id
    # with Clean Start 0 finds none).
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    c.send(packet(rm.CONNECT, 0, rm.mqtt_string("MQTZ") + bytes([5, 0x00]) + b"\x00\x3c"
                  + R5.encode_props([(R5.SESSION_EXPIRY, 300)]) + rm.mqtt_string("pn")))
    got = c.wait_closed()
    assert got == [] or (len(got) == 1 and R5.connack_fields(got[0])[1] == 0x84), got
    ok = R5.RawClient5(b.host, b.port)
    present, rc, _ = ok.connect5(client_id="pn", clean_start=False)
    assert rc == 0 and not present


# ---- Reason Strings within the client's Maximum Packet Size ---------------

@pytest.mark.tern_only
@pytest.mark.parametrize("qos,max_packet,has_reason",
                         [(1, 1024, True), (1, 12, False), (2, 1024, True), (2, 12, False)],
                         ids=["puback-reason-fits", "puback-reason-too-large",
                              "pubrec-reason-fits", "pubrec-reason-too-large"])
def test_puback_and_pubrec_reason_string_is_left_out_beyond_the_clients_maximum_packet_size(
        broker, qos, max_packet, has_reason):
    # [MQTT-3.4.2-2] a PUBACK Reason String that would take the packet
    # beyond the client's Maximum Packet Size is left out (the same code
    # writes PUBREC's [MQTT-3.5.2-2] and PUBCOMP's [MQTT-3.7.2-2]); tern
    # sends no User Properties on acknowledgements [MQTT-3.4.2-3]. A
    # payload that is not UTF-8 with Payload Format Indicator 1 gets 0x99
    # (PUBACK at QoS 1, PUBREC at QoS 2).
    b = broker()
    c, _ = connected(b, "rs-%d" % max_packet, props=[(R5.MAXIMUM_PACKET_SIZE, max_packet)])
    c.send(R5.publish5("rs/t", b"\xff", qos=qos, pid=3, props=[(R5.PAYLOAD_FORMAT, 1)]))
    ack = c.expect(rm.PUBACK if qos == 1 else rm.PUBREC)
    assert ack.pid == 3 and R5.ack_reason(ack) == 0x99
    props = R5.decode_props(ack.body, 3)[0] if len(ack.body) > 3 else {}
    assert (R5.REASON_STRING in props) == has_reason, props
    assert R5.USER_PROPERTY not in props
    assert 4 + len(ack.body) <= max_packet


@pytest.mark.tern_only
@pytest.mark.parametrize("max_packet,has_reason", [(1024, True), (12, False)],
                         ids=["reason-fits", "reason-too-large"])
def test_connack_reason_string_is_left_out_beyond_the_clients_maximum_packet_size(
        broker, max_packet, has_reason):
    # [MQTT-3.2.2-19] a CONNACK Reason String that would exceed the client's
    # Maximum Packet Size is left out; [MQTT-3.2.2-20] tern sends no User
    # Properties in CONNACK. An unsupported Authentication Method is refused
    # with 0x8C.
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    c.send(R5.connect5(client_id="cr", props=[(R5.MAXIMUM_PACKET_SIZE, max_packet),
                                                (R5.AUTH_METHOD, "SCRAM-SHA-1")]))
    pkt = c.expect(rm.CONNACK)
    _, rc, props = R5.connack_fields(pkt)
    assert rc == R5.RC_BAD_AUTH_METHOD
    assert (R5.REASON_STRING in props) == has_reason, props
    assert R5.USER_PROPERTY not in props
    assert 2 + len(pkt.body) <= max_packet


@pytest.mark.tern_only
@pytest.mark.parametrize("max_packet,has_reason", [(1024, True), (12, False)],
                         ids=["reason-fits", "reason-too-large"])
def test_pubcomp_reason_string_is_left_out_beyond_the_clients_maximum_packet_size(
        broker, max_packet, has_reason):
    # [MQTT-3.7.2-2] [MQTT-3.7.2-3]: a PUBREL for an id the server does not
    # know gets PUBCOMP 0x92, its Reason String only within the client's
    # Maximum Packet Size, never a User Property.
    b = broker()
    c, _ = connected(b, "pc-%d" % max_packet, props=[(R5.MAXIMUM_PACKET_SIZE, max_packet)])
    c.send(R5.ack5(rm.PUBREL, 44))
    ack = c.expect(rm.PUBCOMP)
    assert ack.pid == 44 and R5.ack_reason(ack) == 0x92
    props = R5.decode_props(ack.body, 3)[0] if len(ack.body) > 3 else {}
    assert (R5.REASON_STRING in props) == has_reason, props
    assert R5.USER_PROPERTY not in props


# ---- expiry and in-flight messages -----------------------------------------

@pytest.mark.tern_only
def test_qos2_flows_go_on_after_the_message_expired(broker):
    # [MQTT-4.3.3-7] once the server sent a QoS 2 PUBLISH it no longer
    # expires it: resent after a reconnect past its expiry, then PUBREL on
    # PUBREC; [MQTT-3.3.2-5] only a message not yet sent is deleted at its
    # expiry. [MQTT-4.3.3-13] as receiver the server completes a QoS 2 flow
    # whose message expired (PUBREL after the expiry gets PUBCOMP).
    # Mosquitto 2.0.11 drops the sent message at its expiry: no resend.
    b = broker()
    s, _ = connected(b, "ex-sub", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    s.subscribe5([("ex/t", 2)])
    c, _ = connected(b, "ex-pub")
    c.send(R5.publish5("ex/t", b"short", qos=2, pid=5, props=[(R5.MESSAGE_EXPIRY, 1)]))
    assert c.expect(rm.PUBREC).pid == 5
    p = next_publish(s)
    assert p[4] == b"short"
    s.abort()
    import time
    time.sleep(2.2)
    c.send(R5.ack5(rm.PUBREL, 5))
    pc = c.expect(rm.PUBCOMP)
    assert pc.pid == 5 and R5.ack_reason(pc) == 0x00
    s, present = connected(b, "ex-sub", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    assert present
    again = next_publish(s)
    assert again[0].dup and again[2] == p[2] and again[4] == b"short"
    s.send(R5.ack5(rm.PUBREC, again[2]))
    assert s.expect(rm.PUBREL).pid == again[2]
    s.send(R5.ack5(rm.PUBCOMP, again[2]))
    assert no_packet(s)


def test_qos2_delivery_already_started_is_completed_after_unsubscribe(broker):
    # [MQTT-3.10.4-3] after UNSUBSCRIBE the server completes the QoS 1 and 2
    # deliveries it started: the PUBREC of a PUBLISH sent before it gets
    # the PUBREL, and the QoS 1 one is resent on resume.
    b = broker()
    s, _ = connected(b, "uc", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    s.subscribe5([("uc/2", 2), ("uc/1", 1)])
    c, _ = connected(b, "uc-pub")
    c.send(R5.publish5("uc/2", b"two", qos=2, pid=1))
    c.expect(rm.PUBREC)
    c.send(R5.ack5(rm.PUBREL, 1) + R5.publish5("uc/1", b"one", qos=1, pid=2))
    c.expect(rm.PUBCOMP)
    c.expect(rm.PUBACK)
    p2 = next_publish(s)
    p1 = next_publish(s)
    s.send(rm.unsubscribe5(9, ["uc/2", "uc/1"]))
    assert unsuback_codes(s.expect(rm.UNSUBACK)) == [0, 0]
    s.send(R5.ack5(rm.PUBREC, p2[2]))
    assert s.expect(rm.PUBREL).pid == p2[2]
    s.abort()
    s, present = connected(b, "uc", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    got = [s.recv_packet() for _ in range(2)]
    kinds = sorted((p.type, p.pid) for p in got)
    assert kinds == sorted([(rm.PUBLISH, p1[2]), (rm.PUBREL, p2[2])])
    c.send(R5.publish5("uc/1", b"later", qos=1, pid=3))
    c.expect(rm.PUBACK)
    assert no_packet(s)


# ---- wills ----------------------------------------------------------------

@pytest.mark.parametrize("retain", [False, True], ids=["will-retain-0", "will-retain-1"])
def test_will_is_published_with_its_retain_flag(broker, retain):
    # [MQTT-3.1.2-14] Will Retain 0: published non-retained (a later
    # subscriber gets nothing); [MQTT-3.1.2-15] Will Retain 1: published
    # retained. [MQTT-3.1.2-7] the will is kept with the session until the
    # connection closes without DISCONNECT 0x00.
    b = broker()
    live, _ = connected(b, "wr-live")
    live.subscribe5([("wr/t", 0)])
    w = R5.RawClient5(b.host, b.port)
    assert w.connect5(client_id="wr", will=("wr/t", b"gone", 0, retain))[1] == 0
    w.abort()
    p = next_publish(live)
    assert p[4] == b"gone" and p[0].retain is False
    later, _ = connected(b, "wr-later")
    later.subscribe5([("wr/t", 0)])
    if retain:
        p = next_publish(later)
        assert p[4] == b"gone" and p[0].retain
    else:
        assert no_packet(later, 1.0)


# ---- shared subscriptions -------------------------------------------------

def test_shared_qos2_delivery_is_completed_with_the_member_that_reconnects(broker):
    # [MQTT-4.8.2-4] a QoS 2 message whose delivery to a member broke off
    # is completed when that member reconnects: resent to it (DUP 1, same
    # id), and to no other member.
    b = broker()
    m1, _ = connected(b, "sq-1", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    m1.subscribe5([("$share/g/sq/t", 2)])
    c, _ = connected(b, "sq-pub")
    c.send(R5.publish5("sq/t", b"m", qos=2, pid=1))
    c.expect(rm.PUBREC)
    c.send(R5.ack5(rm.PUBREL, 1))
    c.expect(rm.PUBCOMP)
    p = next_publish(m1)
    m1.abort()
    m2, _ = connected(b, "sq-2")
    m2.subscribe5([("$share/g/sq/t", 2)])
    m1, present = connected(b, "sq-1", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    assert present
    again = next_publish(m1)
    assert again[0].dup and again[2] == p[2] and again[4] == b"m"
    m1.send(R5.ack5(rm.PUBREC, again[2]))
    assert m1.expect(rm.PUBREL).pid == again[2]
    m1.send(R5.ack5(rm.PUBCOMP, again[2]))
    assert no_packet(m2)


@pytest.mark.tern_only
@pytest.mark.parametrize("qos", [1, 2], ids=["puback-0x80", "pubrec-0x80"])
def test_shared_message_refused_by_its_member_is_not_sent_to_another(broker, qos):
    # [MQTT-4.8.2-6] a PUBACK or PUBREC of 0x80 or above from the member
    # discards the message: no other member gets it. (Mosquitto 2.0.11
    # closes the member's connection on PUBREC 0x80.)
    b = broker()
    m1, _ = connected(b, "sr-1")
    m1.subscribe5([("$share/g/sr/t", qos)])
    m2, _ = connected(b, "sr-2")
    m2.subscribe5([("$share/g/sr/t", qos)])
    c, _ = connected(b, "sr-pub")
    c.send(R5.publish5("sr/t", b"m", qos=1, pid=1))
    c.expect(rm.PUBACK)
    got = None
    for m, other in ((m1, m2), (m2, m1)):
        try:
            got = (m.expect(rm.PUBLISH, 1.0), m, other)
            break
        except TimeoutError:
            continue
    assert got, "no member got the message"
    pkt, member, other = got
    member.send(R5.ack5(rm.PUBACK if qos == 1 else rm.PUBREC, pkt.pid, reason=0x80))
    assert no_packet(member, 1.0)
    assert no_packet(other, 1.0)


def test_published_will_leaves_the_session(broker):
    # [MQTT-3.1.2-10] once published, the will is removed from the session:
    # the session resumed by a CONNECT without a will and closed again
    # publishes nothing more.
    b = broker()
    live, _ = connected(b, "wl-live")
    live.subscribe5([("wl/t", 0)])
    w = R5.RawClient5(b.host, b.port)
    assert w.connect5(client_id="wl", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)],
                      will=("wl/t", b"gone", 0, False))[1] == 0
    w.abort()
    assert next_publish(live)[4] == b"gone"
    w, present = connected(b, "wl", clean_start=False, props=[(R5.SESSION_EXPIRY, 300)])
    assert present
    w.abort()
    assert no_packet(live, 1.5)
