"""MQTT 5.0 SUBSCRIBE (SPEC C2, issue 15) with unmodified clients:
subscription identifiers, no local, retain as published, retain handling
0/1/2, shared subscriptions (distribution, a member leaving, a 3.1.1
member, ACL on the filter inside $share).
"""


import pytest

import raw5 as R5
import rawmqtt as rm
from mqttclients import PahoClient
from mqtt5clients import Mosq5Sub, Paho5, mosq5_pub


def paho5(b, cid, **connect_props):
    c = Paho5(b.port, client_id=cid)
    c.connect(**connect_props)
    return c


# ---- subscription identifiers -----------------------------------------------

def test_subscription_identifiers_of_every_matching_subscription_are_sent(broker):
    # [MQTT-3.3.4-3]: the identifiers of the matching subscriptions go with
    # the message; one copy carries all [MQTT-3.3.4-4] or each copy its own
    # [MQTT-3.3.4-5]: either way the identifiers seen are {7, 300000}.
    b = broker()
    s = paho5(b, "sid-sub")
    assert s.subscribe("sid/#", 1, sub_id=7) == [1]
    assert s.subscribe("sid/+", 1, sub_id=300000) == [1]
    assert s.subscribe("sid/a/b", 1) == [1]
    p = paho5(b, "sid-pub")
    p.publish("sid/a", b"x", qos=1)
    p.publish("sid/a/b", b"y", qos=1)
    got = s.barrier(p, "sid")
    ids = [i for m in got if m.payload == b"x" for i in m.props.get("SubscriptionIdentifier", [])]
    assert sorted(ids) == [7, 300000]
    # sid/a/b matches sid/# (7) and sid/a/b (no identifier: adds none).
    ids_y = [i for m in got if m.payload == b"y" for i in m.props.get("SubscriptionIdentifier", [])]
    assert sorted(ids_y) == [7]
    s.disconnect()
    p.disconnect()


def test_subscription_identifier_goes_with_retained_messages_and_mosquitto_sub_prints_it(broker):
    b = broker()
    mosq5_pub(b.port, "sidr/t", "kept", qos=1, retain=True)
    s = Mosq5Sub(b.port, ["sidr/#"], qos=1, count=1,
                 extra=["-D", "subscribe", "subscription-identifier", "42"])
    (m,) = s.wait()
    assert (m.payload, m.retain, m.sub_id) == (b"kept", True, "42")


@pytest.mark.tern_only
def test_subscription_identifier_zero_is_a_protocol_error(broker):
    # 3.8.2.1.2: a Subscription Identifier of 0 is a Protocol Error (0x82).
    # (Mosquitto 2.0.11 answers 0x81.)
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    assert c.connect5(client_id="sid0")[1] == 0
    c.send(R5.subscribe5(1, [("sid0/t", 1)], props=[(R5.SUBSCRIPTION_ID, 0)]))
    assert c.expect_disconnect()[0] == R5.RC_PROTOCOL_ERROR


# ---- no local, retain as published ------------------------------------------

def test_no_local_subscription_does_not_get_its_own_messages(broker):
    # [MQTT-3.8.3-3]: not forwarded to a connection with the publisher's
    # ClientID; other publishers' messages still arrive.
    b = broker()
    c = paho5(b, "nl-self")
    assert c.subscribe("nl/t", 1, no_local=True) == [1]
    other = paho5(b, "nl-other")
    c.publish("nl/t", b"mine", qos=1)
    other.publish("nl/t", b"theirs", qos=1)
    got = c.barrier(other, "nl")
    assert [m.payload for m in got] == [b"theirs"]
    c.disconnect()
    other.disconnect()


def test_without_no_local_a_client_gets_its_own_messages(broker):
    b = broker()
    c = paho5(b, "nl-off")
    c.subscribe("nl/off", 1)
    c.publish("nl/off", b"mine", qos=1)
    assert [m.payload for m in c.wait_messages(1)] == [b"mine"]
    c.disconnect()


def test_retain_as_published_keeps_the_retain_flag_on_live_messages(broker):
    # [MQTT-3.3.1-12]: RAP 0 -> RETAIN 0 on a live forward; [MQTT-3.3.1-13]:
    # RAP 1 -> the flag as published.
    b = broker()
    rap = paho5(b, "rap-1")
    rap.subscribe("rap/t", 1, rap=True)
    norap = paho5(b, "rap-0")
    norap.subscribe("rap/t", 1, rap=False)
    p = paho5(b, "rap-pub")
    p.publish("rap/t", b"r", qos=1, retain=True)
    p.publish("rap/t", b"n", qos=1, retain=False)
    assert [(m.payload, m.retain) for m in rap.wait_messages(2)] == [(b"r", True), (b"n", False)]
    assert [(m.payload, m.retain) for m in norap.wait_messages(2)] == [(b"r", False), (b"n", False)]
    for c in (rap, norap, p):
        c.disconnect()


def test_mosquitto_sub_retain_as_published(broker):
    b = broker()
    s = Mosq5Sub(b.port, ["rapm/t"], qos=1, count=1, extra=["--retain-as-published"])
    s.wait_subscribed()
    mosq5_pub(b.port, "rapm/t", "live-retained", qos=1, retain=True)
    (m,) = s.wait()
    assert (m.payload, m.retain) == (b"live-retained", True)


# ---- retain handling --------------------------------------------------------

def test_retain_handling_0_sends_retained_messages_on_every_subscribe(broker):
    # [MQTT-3.3.1-9]; and again when the subscription is replaced
    # [MQTT-3.8.4-4].
    b = broker()
    mosq5_pub(b.port, "rh/0", "kept", qos=1, retain=True)
    c = paho5(b, "rh0")
    c.subscribe("rh/0", 1, rh=0)
    c.wait_messages(1)
    c.subscribe("rh/0", 1, rh=0)
    got = c.wait_messages(2)
    assert [(m.payload, m.retain) for m in got] == [(b"kept", True)] * 2
    c.disconnect()


def test_retain_handling_1_sends_retained_messages_only_for_a_new_subscription(broker):
    # [MQTT-3.3.1-10].
    b = broker()
    mosq5_pub(b.port, "rh/1", "kept", qos=1, retain=True)
    c = paho5(b, "rh1")
    c.subscribe("rh/1", 1, rh=1)
    assert [m.payload for m in c.wait_messages(1)] == [b"kept"]
    c.subscribe("rh/1", 1, rh=1)
    got = c.barrier(c, "rh1")
    assert [m.payload for m in got] == [b"kept"]
    c.disconnect()


def test_retain_handling_2_never_sends_retained_messages(broker):
    # [MQTT-3.3.1-11]; live messages still come.
    b = broker()
    mosq5_pub(b.port, "rh/2", "kept", qos=1, retain=True)
    c = paho5(b, "rh2")
    c.subscribe("rh/2", 1, rh=2)
    mosq5_pub(b.port, "rh/2", "live", qos=1)
    got = c.barrier(c, "rh2")
    assert [m.payload for m in got] == [b"live"]
    c.disconnect()


@pytest.mark.tern_only
def test_retain_handling_3_is_a_protocol_error(broker):
    # 3.8.3.1: Retain Handling 3 is a Protocol Error (0x82).
    # (Mosquitto 2.0.11 answers 0x81.)
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    assert c.connect5(client_id="rh3")[1] == 0
    c.send(R5.subscribe5(1, [("rh/3", 0x30 | 1)]))
    assert c.expect_disconnect()[0] == R5.RC_PROTOCOL_ERROR


def test_reserved_subscription_option_bits_are_malformed(broker):
    # [MQTT-3.8.3-5]: reserved bits 6-7 set: Malformed Packet (0x81).
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    assert c.connect5(client_id="rsv")[1] == 0
    c.send(R5.subscribe5(1, [("rsv/t", 0x40 | 1)]))
    assert c.expect_disconnect()[0] == R5.RC_MALFORMED


# ---- shared subscriptions ---------------------------------------------------

def test_shared_subscription_gives_each_message_to_exactly_one_member(broker):
    # 4.8.2: each message to one member of the group; a non-shared
    # subscriber to the same filter gets every message.
    b = broker()
    members = [paho5(b, "sh-m%d" % i) for i in range(3)]
    for m in members:
        assert m.subscribe("$share/grp/sh/t", 1) == [1]
    plain = paho5(b, "sh-plain")
    plain.subscribe("sh/t", 1)
    p = paho5(b, "sh-pub")
    n = 30
    for i in range(n):
        p.publish("sh/t", b"%d" % i, qos=1)
    assert len(plain.wait_messages(n)) == n
    for m in members:
        m.barrier(p, m.client._client_id.decode())
    got = [[x.payload for x in m.messages if x.topic == "sh/t"] for m in members]
    everything = sorted(sum(got, []), key=int)
    assert everything == [b"%d" % i for i in range(n)], got
    assert all(len(g) > 0 for g in got), "a member got nothing: %r" % [len(g) for g in got]
    for c in members + [plain, p]:
        c.disconnect()


def test_shared_subscription_respects_each_members_granted_qos(broker):
    # [MQTT-4.8.2-3]: the member's granted QoS applies.
    b = broker()
    m0 = paho5(b, "shq-0")
    m0.subscribe("$share/q/shq/t", 0)
    m1 = paho5(b, "shq-1")
    m1.subscribe("$share/q/shq/t", 1)
    p = paho5(b, "shq-pub")
    for i in range(10):
        p.publish("shq/t", b"%d" % i, qos=1)
    m0.barrier(p, "shq-0")
    m1.barrier(p, "shq-1")
    assert {m.qos for m in m0.messages if m.topic == "shq/t"} <= {0}
    assert {m.qos for m in m1.messages if m.topic == "shq/t"} <= {1}
    total = [m for c in (m0, m1) for m in c.messages if m.topic == "shq/t"]
    assert len(total) == 10
    for c in (m0, m1, p):
        c.disconnect()


@pytest.mark.tern_only
def test_shared_subscription_gets_no_retained_messages_on_subscribe(broker):
    # 3.3.1.3: retained messages are sent when a new *Non-shared*
    # Subscription is made; a shared one gets none (as EMQX and HiveMQ;
    # Mosquitto 2.0.11 sends them).
    b = broker()
    mosq5_pub(b.port, "shr/t", "kept", qos=1, retain=True)
    m = paho5(b, "shr")
    m.subscribe("$share/r/shr/t", 1)
    assert m.barrier(m, "shr") == []
    m.disconnect()


@pytest.mark.tern_only
def test_departed_members_unacknowledged_messages_go_to_another_member(broker):
    # 4.8.2 (after [MQTT-4.8.2-4]): when a member's session ends with QoS 1
    # messages unacknowledged, the server should send them to another member.
    # tern documents this rule (issue 15); Mosquitto 2.0.11 drops them.
    b = broker()
    slow = R5.RawClient5(b.host, b.port)
    assert slow.connect5(client_id="sh-slow", props=[(R5.RECEIVE_MAXIMUM, 1)])[1] == 0
    assert slow.subscribe5([("$share/dep/shd/t", 1)]) == [1]
    p = paho5(b, "shd-pub")
    for i in range(6):
        p.publish("shd/t", b"%d" % i, qos=1)
    held = slow.expect(rm.PUBLISH)        # received, never acknowledged
    fast = paho5(b, "sh-fast")
    fast.subscribe("$share/dep/shd/t", 1)
    slow.abort()                          # session expiry 0: the session ends
    fast.wait_for(lambda ms: sorted({m.payload for m in ms if m.topic == "shd/t"}, key=int)
                  == [b"%d" % i for i in range(6)], timeout=5,
                  what="all 6 messages at the remaining member")
    assert R5.publish_fields(held)[3] in [m.payload for m in fast.messages]
    fast.disconnect()
    p.disconnect()


def test_3_1_1_client_can_be_a_member_of_a_shared_subscription(broker):
    # Issue 15: $share for 3.1.1 clients too, as other brokers allow.
    b = broker()
    old = PahoClient(b.port, client_id="sh-311")
    old.connect()
    assert old.subscribe("$share/mixed/shm/t", 1) == [1]
    new = paho5(b, "sh-500")
    assert new.subscribe("$share/mixed/shm/t", 1) == [1]
    p = paho5(b, "shm-pub")
    n = 20
    for i in range(n):
        p.publish("shm/t", b"%d" % i, qos=1)
    new.barrier(p, "shm-new")
    old.subscribe("barrier/shm-old", 1)
    p.publish("barrier/shm-old", b"end", qos=1)
    old.wait_messages(1, topic="barrier/shm-old")
    a = [m.payload for m in old.messages if m.topic == "shm/t"]
    c = [m.payload for m in new.messages if m.topic == "shm/t"]
    assert sorted(a + c, key=int) == [b"%d" % i for i in range(n)]
    assert a and c, (a, c)
    old.disconnect()
    new.disconnect()
    p.disconnect()


def test_mosquitto_sub_members_of_a_shared_subscription_split_the_messages(broker):
    b = broker()
    subs = [Mosq5Sub(b.port, ["$share/ms/shmq/t"], qos=1, timeout=2) for _ in range(2)]
    for s in subs:
        s.wait_subscribed()
    mosq5_pub(b.port, "shmq/t", None, qos=1, lines=["%d" % i for i in range(10)])
    got = [s.wait(expect_rc=27) for s in subs]   # -W ends them
    payloads = sorted([m.payload for g in got for m in g], key=int)
    assert payloads == [b"%d" % i for i in range(10)]


@pytest.mark.tern_only
def test_no_local_on_a_shared_subscription_is_a_protocol_error(broker):
    # [MQTT-3.8.3-4]: Protocol Error (0x82). (Mosquitto 2.0.11 accepts it.)
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    assert c.connect5(client_id="shnl")[1] == 0
    c.send(R5.subscribe5(1, [("$share/g/shnl/t", 0x04 | 1)]))
    assert c.expect_disconnect()[0] == R5.RC_PROTOCOL_ERROR


@pytest.mark.parametrize("flt", [
    pytest.param("$share/g", marks=pytest.mark.tern_only),    # Mosquitto 2.0.11 grants these two
    pytest.param("$share//t", marks=pytest.mark.tern_only),
    "$share/g+/t", "$share/g#/t"])
def test_invalid_shared_subscription_filter_is_refused(broker, flt):
    # [MQTT-4.8.2-1] [MQTT-4.8.2-2]: ShareName at least one character, no
    # "/", "+", "#", followed by "/" and a filter. Refused in the SUBACK
    # (0x8F Topic Filter invalid) or by DISCONNECT 0x8F / 0x82 / 0x81.
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    assert c.connect5(client_id="shbad")[1] == 0
    c.send(R5.subscribe5(1, [(flt, 1)]))
    pkt = c.recv_packet()
    if pkt.type == rm.SUBACK:
        assert R5.suback_codes(pkt) == [R5.RC_TOPIC_FILTER_INVALID]
    else:
        assert pkt.type == rm.DISCONNECT, pkt
        assert R5.disconnect_fields(pkt)[0] in (R5.RC_TOPIC_FILTER_INVALID,
                                               R5.RC_PROTOCOL_ERROR, R5.RC_MALFORMED)


@pytest.mark.tern_only
def test_acl_applies_to_the_filter_inside_share(broker, tmp_path):
    # Issue 15: access control checks the topic filter of a shared
    # subscription; a refused one gets SUBACK 0x87 (Not authorized) in
    # 5.0 and 0x80 in 3.1.1 (ADR-008), and receives nothing.
    acl = tmp_path / "acl"
    acl.write_text("topic readwrite open/#\ntopic readwrite barrier/#\n"
                   "topic readwrite sync-barrier/#\ntopic write secret/#\n")
    b = broker(config={"acl.file": str(acl)})
    c = paho5(b, "acl-share")
    assert c.subscribe("$share/g/open/t", 1) == [1]
    assert c.subscribe("$share/g/secret/t", 1) == [R5.RC_NOT_AUTHORIZED]
    old = PahoClient(b.port, client_id="acl-share-311")
    old.connect()
    assert old.subscribe("$share/g/secret/#", 1) == [0x80]
    p = paho5(b, "acl-pub")
    p.publish("secret/t", b"hidden", qos=1)
    p.publish("open/t", b"shown", qos=1)
    got = c.barrier(p, "acl-share")
    assert [m.payload for m in got] == [b"shown"]
    c.disconnect()
    old.disconnect()
    p.disconnect()
