"""MQTT 5.0 PUBLISH path (SPEC C2, issue 15) with unmodified clients:
message expiry (across a daemon restart: test_mqtt5_connect.py), topic aliases both ways,
receive maximum both ways, maximum packet size, properties passed through
(payload format, content type, response topic, correlation data, user
properties in order), request/response with mosquitto_rr, and messages
between 3.1.1 and 5.0 clients.
"""

import time

import pytest

import raw5 as R5
import rawmqtt as rm
from mqttclients import MosqSub, PahoClient, mosq_pub
from mqtt5clients import Mosq5Sub, Paho5, mosq5_pub


def raw5(b, **kwargs):
    c = R5.RawClient5(b.host, b.port)
    present, rc, props = c.connect5(**kwargs)
    assert rc == 0, "CONNACK reason %#x %r" % (rc, props)
    return c, present, props


def paho5(b, cid, **connect_props):
    c = Paho5(b.port, client_id=cid)
    c.connect(**connect_props)
    return c


# ---- message expiry ---------------------------------------------------------

def test_offline_session_gets_only_unexpired_messages_with_their_remaining_expiry(broker):
    # [MQTT-3.3.2-5]: a message whose Message Expiry Interval passed before
    # onward delivery started is deleted for that subscriber; [MQTT-3.3.2-6]:
    # the one delivered carries its interval minus the time it waited.
    b = broker()
    s = paho5(b, "me-off", SessionExpiryInterval=60)
    s.subscribe("me/off", 1)
    s.disconnect()
    p = paho5(b, "me-pub")
    p.publish("me/off", b"short-lived", qos=1, MessageExpiryInterval=1)
    p.disconnect()
    mosq5_pub(b.port, "me/off", "lasting", qos=1,
              props=[("publish", "message-expiry-interval", "60")])
    time.sleep(2.1)
    s = Paho5(b.port, client_id="me-off")
    assert s.connect(clean_start=False, SessionExpiryInterval=60)[0]
    got = s.barrier(s, "me-off")
    assert [m.payload for m in got] == [b"lasting"]
    assert 50 <= got[0].props["MessageExpiryInterval"] <= 58, got[0].props
    s.disconnect()


def test_live_message_keeps_its_expiry_interval(broker):
    b = broker()
    s = paho5(b, "me-live")
    s.subscribe("me/live", 1)
    p = paho5(b, "me-live-pub")
    p.publish("me/live", b"x", qos=1, MessageExpiryInterval=120)
    m = s.wait_messages(1)[0]
    assert 119 <= m.props["MessageExpiryInterval"] <= 120
    s.disconnect()
    p.disconnect()


def test_expired_retained_message_is_not_sent_to_new_subscribers(broker):
    b = broker()
    mosq5_pub(b.port, "me/ret", "stale soon", qos=1, retain=True,
              props=[("publish", "message-expiry-interval", "1")])
    mosq5_pub(b.port, "me/ret2", "fresh", qos=1, retain=True)
    time.sleep(2.2)
    s = Mosq5Sub(b.port, ["me/ret", "me/ret2"], qos=1, count=1, timeout=5)
    got = s.wait()
    assert [(m.topic, m.payload) for m in got] == [("me/ret2", b"fresh")]
    # Nothing else was there either: a subscriber to the expired topic alone
    # gets only a live marker.
    s = Paho5(b.port, client_id="me-ret-late")
    s.connect()
    s.subscribe("me/ret", 1)
    assert s.barrier(s, "me-ret") == []
    s.disconnect()


def test_mosquitto_sub_sees_the_remaining_expiry_of_a_retained_message(broker):
    b = broker()
    mosq5_pub(b.port, "me/retrem", "r", qos=1, retain=True,
              props=[("publish", "message-expiry-interval", "100")])
    time.sleep(1.1)
    s = Mosq5Sub(b.port, ["me/retrem"], qos=1, count=1, timeout=5)
    (m,) = s.wait()
    assert 90 <= int(m.expiry) <= 99, m


# ---- topic aliases ----------------------------------------------------------

def test_inbound_topic_alias_is_resolved_for_subscribers(broker):
    # [MQTT-3.3.2-12]: the server accepts aliases 1..its Topic Alias Maximum;
    # a PUBLISH with an empty topic and a known alias is for the aliased
    # topic.
    b = broker(limits_max_topic_alias=4)
    s = paho5(b, "ta-sub")
    s.subscribe("ta/in", 1)
    p = paho5(b, "ta-pub")
    assert p.connack[2].get("TopicAliasMaximum") == 4
    p.publish("ta/in", b"set", qos=1, TopicAlias=4)
    p.publish("", b"use", qos=1, TopicAlias=4)
    got = s.wait_messages(2)
    assert [(m.topic, m.payload) for m in got] == [("ta/in", b"set"), ("ta/in", b"use")]
    # The alias is never forwarded: this subscriber allowed none
    # [MQTT-3.1.2-27].
    assert [m.alias for m in got] == [None, None]
    s.disconnect()
    p.disconnect()


def test_inbound_topic_alias_can_be_remapped(broker):
    b = broker(limits_max_topic_alias=2)
    s = paho5(b, "ta-sub2")
    s.subscribe("ta/re/#", 1)
    p = paho5(b, "ta-pub2")
    p.publish("ta/re/one", b"1", qos=1, TopicAlias=1)
    p.publish("ta/re/two", b"2", qos=1, TopicAlias=1)
    p.publish("", b"3", qos=1, TopicAlias=1)
    got = s.wait_messages(3)
    assert [(m.topic, m.payload) for m in got] == [
        ("ta/re/one", b"1"), ("ta/re/two", b"2"), ("ta/re/two", b"3")]
    s.disconnect()
    p.disconnect()


def test_topic_alias_above_the_servers_maximum_is_answered_with_0x94(broker):
    # [MQTT-3.3.2-12] / 3.3.2.3.4: an alias above the Topic Alias Maximum the
    # server sent is a Topic Alias invalid error: DISCONNECT 0x94.
    b = broker(limits_max_topic_alias=2)
    c, _, props = raw5(b, client_id="ta-big")
    assert props.get(R5.TOPIC_ALIAS_MAXIMUM) == 2
    c.send(R5.publish5("ta/big", b"x", props=[(R5.TOPIC_ALIAS, 3)]))
    assert c.expect_disconnect()[0] == R5.RC_TOPIC_ALIAS_INVALID


def test_topic_alias_zero_is_answered_with_a_disconnect(broker):
    # [MQTT-3.3.2-8]: alias 0 is not permitted. The specification names no
    # code for the receiver: 0x94 (Topic Alias invalid) fits best, 0x82
    # (Protocol Error) is what 3.3.2.3.4 calls it, Mosquitto 2.0.11 answers
    # 0x81 (Malformed Packet); any of them, with the connection closed.
    b = broker(limits_max_topic_alias=2)
    c, _, _ = raw5(b, client_id="ta-zero")
    c.send(R5.publish5("ta/zero", b"x", props=[(R5.TOPIC_ALIAS, 0)]))
    assert c.expect_disconnect()[0] in (R5.RC_TOPIC_ALIAS_INVALID, R5.RC_PROTOCOL_ERROR,
                                        R5.RC_MALFORMED)


def test_empty_topic_with_an_unknown_alias_is_a_protocol_error(broker):
    # 3.3.2.3.4: an empty topic with an alias not mapped on this connection
    # is a Protocol Error (0x82); aliases do not carry over from another
    # connection [MQTT-3.3.2-7].
    b = broker(limits_max_topic_alias=2)
    c, _, _ = raw5(b, client_id="ta-unknown", props=[(R5.SESSION_EXPIRY, 60)])
    c.send(R5.publish5("ta/known", b"x", qos=1, pid=1, props=[(R5.TOPIC_ALIAS, 1)]))
    c.expect(rm.PUBACK)
    c.send(R5.disconnect5(0))
    c.close()
    c, _, _ = raw5(b, client_id="ta-unknown", clean_start=False)
    c.send(R5.publish5("", b"x", props=[(R5.TOPIC_ALIAS, 1)]))
    assert c.expect_disconnect()[0] == R5.RC_PROTOCOL_ERROR


@pytest.mark.tern_only
def test_server_uses_outbound_topic_aliases_within_the_clients_maximum(broker):
    # The broker's own alias policy: a subscriber that allows aliases
    # (Topic Alias Maximum in CONNECT) gets repeated topics as an alias with
    # an empty topic, never above its maximum [MQTT-3.3.2-11]; a
    # subscriber that allows none never gets one [MQTT-3.1.2-27].
    b = broker()
    s = R5.RawClient5(b.host, b.port)
    assert s.connect5(client_id="ta-out", props=[(R5.TOPIC_ALIAS_MAXIMUM, 2)])[1] == 0
    assert s.subscribe5([("ta/out/#", 0)]) == [0]
    plain = paho5(b, "ta-out-none")
    plain.subscribe("ta/out/#", 0)
    p = paho5(b, "ta-out-pub")
    topics = ["ta/out/a", "ta/out/a", "ta/out/b", "ta/out/c", "ta/out/a", "ta/out/a"]
    for i, t in enumerate(topics):
        p.publish(t, b"%d" % i, qos=1)
    aliases, resolved, empties = {}, [], 0
    for _ in topics:
        topic, _, props, payload = R5.publish_fields(s.expect(rm.PUBLISH))
        alias = props.get(R5.TOPIC_ALIAS)
        if alias is not None:
            assert 1 <= alias <= 2
            if topic:
                aliases[alias] = topic
            else:
                empties += 1
                topic = aliases[alias]
        resolved.append((topic, payload))
    assert resolved == [(t, b"%d" % i) for i, t in enumerate(topics)]
    assert empties >= 1, "the broker never used an alias for a repeated topic"
    got = plain.wait_messages(len(topics))
    assert [m.alias for m in got] == [None] * len(topics)
    assert [m.topic for m in got] == topics
    p.disconnect()
    plain.disconnect()


# ---- receive maximum --------------------------------------------------------

@pytest.mark.tern_only
def test_server_sends_no_more_unacknowledged_publishes_than_the_clients_receive_maximum(broker):
    # (Mosquitto 2.0.11 fails this: after one PUBACK it sends two more.)
    # [MQTT-3.3.4-9]: at most Receive Maximum QoS 1/2 PUBLISH packets
    # unacknowledged; each PUBACK lets one more go [MQTT-3.3.4-10: other
    # packets are not delayed: PINGRESP still comes].
    b = broker()
    s = R5.RawClient5(b.host, b.port)
    assert s.connect5(client_id="rm-sub", props=[(R5.RECEIVE_MAXIMUM, 2)])[1] == 0
    assert s.subscribe5([("rm/t", 1)]) == [1]
    p = paho5(b, "rm-pub")
    for i in range(5):
        p.publish("rm/t", b"%d" % i, qos=1)
    first = [s.expect(rm.PUBLISH) for _ in range(2)]
    assert s.is_open_after_ping()
    assert [x for x in s.pending if x.type == rm.PUBLISH] == [], "a third PUBLISH beyond receive maximum 2"
    s.send(R5.ack5(rm.PUBACK, first[0].pid))
    third = s.expect(rm.PUBLISH)
    assert R5.publish_fields(third)[3] == b"2"
    assert s.is_open_after_ping()
    assert [x for x in s.pending if x.type == rm.PUBLISH] == []
    for pk in first[1:] + [third]:
        s.send(R5.ack5(rm.PUBACK, pk.pid))
    rest = [R5.publish_fields(s.expect(rm.PUBLISH))[3] for _ in range(2)]
    assert rest == [b"3", b"4"]
    p.disconnect()


@pytest.mark.tern_only
def test_client_exceeding_the_servers_receive_maximum_gets_0x93(broker):
    # (Mosquitto 2.0.11 announces a Receive Maximum but does not enforce it.)
    # The server's Receive Maximum (limits.receive_maximum) in CONNACK; a
    # client with more unacknowledged QoS 2 PUBLISHes (no PUBREL sent, so
    # none is complete) gets DISCONNECT 0x93 (Receive Maximum exceeded,
    # section 3.3.4 / 4.9).
    b = broker(limits_receive_maximum=3)
    c, _, props = raw5(b, client_id="rm-flood")
    assert props.get(R5.RECEIVE_MAXIMUM) == 3
    for pid in range(1, 5):
        c.send(R5.publish5("rm/flood", b"x", qos=2, pid=pid))
    assert c.expect_disconnect()[0] == R5.RC_RECEIVE_MAXIMUM_EXCEEDED


# ---- maximum packet size ----------------------------------------------------

def test_message_larger_than_the_clients_maximum_packet_size_is_not_sent(broker):
    # [MQTT-3.1.2-24] / [MQTT-3.1.2-25]: never send a packet beyond the
    # client's Maximum Packet Size; the message is dropped for that client,
    # the rest still arrive, other clients get it.
    b = broker()
    small = paho5(b, "mps-small", MaximumPacketSize=128)
    small.subscribe("mps/t", 1)
    big = paho5(b, "mps-big")
    big.subscribe("mps/t", 1)
    p = paho5(b, "mps-pub")
    p.publish("mps/t", b"a" * 10, qos=1)
    p.publish("mps/t", b"b" * 500, qos=1)
    p.publish("mps/t", b"c" * 10, qos=1)
    assert [m.payload for m in big.wait_messages(3)] == [b"a" * 10, b"b" * 500, b"c" * 10]
    got = small.barrier(p, "mps-small")
    assert [m.payload for m in got] == [b"a" * 10, b"c" * 10]
    assert small.client.is_connected()
    for c in (small, big, p):
        c.disconnect()


def test_packet_larger_than_the_servers_maximum_is_answered_with_0x95(broker):
    # CONNACK's Maximum Packet Size = limits.max_packet_size; a larger packet
    # from the client: DISCONNECT 0x95 (Packet too large, 3.2.2.3.6).
    b = broker(limits_max_packet_size=1024)
    c, _, props = raw5(b, client_id="mps-in")
    assert props.get(R5.MAXIMUM_PACKET_SIZE) == 1024
    c.send(R5.publish5("mps/in", b"z" * 2000, qos=0))
    assert c.expect_disconnect()[0] == R5.RC_PACKET_TOO_LARGE


# ---- properties passed through ----------------------------------------------

def test_payload_format_content_type_response_topic_and_correlation_pass_unaltered(broker):
    # [MQTT-3.3.2-4] payload format indicator, [MQTT-3.3.2-20] content
    # type, [MQTT-3.3.2-15]/[MQTT-3.3.2-16] response topic and correlation
    # data, [MQTT-3.3.2-17] user properties: sent unaltered.
    b = broker()
    s = paho5(b, "pp-sub")
    s.subscribe("pp/t", 2)
    p = paho5(b, "pp-pub")
    p.publish("pp/t", b'{"v": 1}', qos=2, PayloadFormatIndicator=1,
              ContentType="application/json", ResponseTopic="pp/reply/7",
              CorrelationData=b"\x00\x01corr\xff", UserProperty=[("k", "v")])
    m = s.wait_messages(1)[0]
    assert m.payload == b'{"v": 1}'
    assert m.props["PayloadFormatIndicator"] == 1
    assert m.props["ContentType"] == "application/json"
    assert m.props["ResponseTopic"] == "pp/reply/7"
    assert m.props["CorrelationData"] == b"\x00\x01corr\xff"
    assert m.props["UserProperty"] == [("k", "v")]
    s.disconnect()
    p.disconnect()


def test_user_properties_keep_their_order_and_repeated_keys(broker):
    # [MQTT-3.3.2-18]: order kept; a name may appear more than once.
    b = broker()
    s = paho5(b, "up-sub")
    s.subscribe("up/t", 1)
    p = paho5(b, "up-pub")
    pairs = [("z", "1"), ("a", "2"), ("z", "3"), ("ключ", "значение")]
    p.publish("up/t", b"x", qos=1, UserProperty=pairs)
    assert s.wait_messages(1)[0].props["UserProperty"] == pairs
    s.disconnect()
    p.disconnect()


def test_mosquitto_clients_pass_user_properties_and_request_response_properties(broker):
    # mosquitto_pub -D publish ... / mosquitto_sub -F %P %R %D %C %F.
    b = broker()
    s = Mosq5Sub(b.port, ["mp/t"], qos=1, count=1)
    s.wait_subscribed()
    mosq5_pub(b.port, "mp/t", "hello", qos=1, props=[
        ("publish", "user-property", "site", "north"),
        ("publish", "response-topic", "mp/answer"),
        ("publish", "correlation-data", "req-42"),
        ("publish", "content-type", "text/plain"),
        ("publish", "payload-format-indicator", "1")])
    (m,) = s.wait()
    assert m.payload == b"hello"
    assert m.user_props == "site:north"
    assert m.response_topic == "mp/answer"
    assert m.correlation == b"req-42"
    assert m.content_type == "text/plain"
    assert m.payload_format == "1"


def test_mosquitto_rr_gets_the_response_on_its_response_topic(broker):
    # Request/response (4.10): a responder (Paho) answers on the request's
    # Response Topic with its Correlation Data; mosquitto_rr, the
    # requester, prints the answer.
    b = broker()
    responder = paho5(b, "rr-responder")
    responder.subscribe("rr/request", 1)
    import subprocess
    proc = subprocess.Popen(["mosquitto_rr", "-V", "mqttv5", "-h", b.host, "-p", str(b.port),
                             "-t", "rr/request", "-e", "rr/response/1", "-m", "ping",
                             "-D", "publish", "correlation-data", "c-1", "-W", "5", "-q", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    req = responder.wait_messages(1, topic="rr/request")[0]
    assert req.props["ResponseTopic"] == "rr/response/1"
    assert req.props["CorrelationData"] == b"c-1"
    responder.publish(req.props["ResponseTopic"], b"pong", qos=1,
                      CorrelationData=req.props["CorrelationData"])
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert out.strip() == b"pong"
    responder.disconnect()


def test_publish_to_a_topic_nobody_subscribes_is_acknowledged_with_0x00_or_0x10(broker):
    # PUBACK reason: 0x00, or 0x10 (No matching subscribers) which a server
    # MAY use (3.4.2.1); never an error for an allowed topic.
    b = broker()
    c, _, _ = raw5(b, client_id="nobody")
    c.send(R5.publish5("nobody/listens", b"x", qos=1, pid=7))
    ack = c.expect(rm.PUBACK)
    assert ack.pid == 7
    assert R5.ack_reason(ack) in (R5.RC_SUCCESS, R5.RC_NO_MATCHING_SUBSCRIBERS)


# ---- mixed versions ---------------------------------------------------------

def test_3_1_1_subscriber_gets_a_5_0_message_without_properties(broker):
    # A 3.1.1 client cannot carry properties: it gets topic, payload, QoS.
    b = broker()
    s = MosqSub(b.port, ["mix/to311"], qos=1, count=1, version="mqttv311")
    s.wait_subscribed()
    p = paho5(b, "mix-pub5")
    p.publish("mix/to311", b"from five", qos=1, UserProperty=[("k", "v")],
              ContentType="text/plain", MessageExpiryInterval=60)
    (m,) = s.wait()
    assert (m.topic, m.payload, m.qos) == ("mix/to311", b"from five", 1)
    p.disconnect()


def test_5_0_subscriber_gets_a_3_1_1_message_with_no_properties(broker):
    b = broker()
    s = paho5(b, "mix-sub5")
    s.subscribe("mix/to5", 2)
    mosq_pub(b.port, "mix/to5", "from 3.1.1", qos=2, version="mqttv311")
    m = s.wait_messages(1)[0]
    assert (m.payload, m.qos) == (b"from 3.1.1", 2)
    assert {k: v for k, v in m.props.items() if k != "SubscriptionIdentifier"} == {}
    s.disconnect()


def test_3_1_1_and_5_0_clients_exchange_retained_messages(broker):
    b = broker()
    mosq_pub(b.port, "mix/ret/a", "a311", qos=1, retain=True, version="mqttv311")
    mosq5_pub(b.port, "mix/ret/b", "b5", qos=1, retain=True,
              props=[("publish", "user-property", "x", "y")])
    s5 = Mosq5Sub(b.port, ["mix/ret/#"], qos=1, count=2)
    got5 = {m.topic: (m.payload, m.retain, m.user_props) for m in s5.wait()}
    assert got5 == {"mix/ret/a": (b"a311", True, ""), "mix/ret/b": (b"b5", True, "x:y")}
    s3 = MosqSub(b.port, ["mix/ret/#"], qos=1, count=2, version="mqttv311")
    got3 = {m.topic: (m.payload, m.retain) for m in s3.wait()}
    assert got3 == {"mix/ret/a": (b"a311", True), "mix/ret/b": (b"b5", True)}


def test_3_1_1_paho_and_5_0_paho_talk_both_ways(broker):
    b = broker()
    old = PahoClient(b.port, client_id="mix-old")
    old.connect()
    old.subscribe("mix/chat/old", 1)
    new = paho5(b, "mix-new")
    new.subscribe("mix/chat/new", 1)
    new.publish("mix/chat/old", b"hi old", qos=1, UserProperty=[("a", "b")])
    old.publish("mix/chat/new", b"hi new", qos=1)
    assert [m.payload for m in old.wait_messages(1)] == [b"hi old"]
    assert [m.payload for m in new.wait_messages(1)] == [b"hi new"]
    old.disconnect()
    new.disconnect()


# ---- reason codes and reason strings ----------------------------------------

@pytest.mark.tern_only
def test_refused_publish_gets_0x87_with_a_reason_string_unless_problem_information_is_off(
        broker, tmp_path):
    # A QoS 1 PUBLISH the ACL refuses: PUBACK 0x87 (Not authorized, 3.4.2.1)
    # with a Reason String saying why (3.4.2.2.2, issue 15 "reason
    # strings"); a client that set Request Problem Information 0 gets the
    # code without the string [MQTT-3.1.2-29].
    acl = tmp_path / "acl"
    acl.write_text("topic read closed/#\n")
    b = broker(config={"acl.file": str(acl)})
    c = R5.RawClient5(b.host, b.port)
    assert c.connect5(client_id="rs-on")[1] == 0
    c.send(R5.publish5("closed/t", b"x", qos=1, pid=5))
    ack = c.expect(rm.PUBACK)
    assert (ack.pid, R5.ack_reason(ack)) == (5, R5.RC_NOT_AUTHORIZED)
    props, _ = R5.decode_props(ack.body, 3)
    assert props.get(R5.REASON_STRING), props
    quiet = R5.RawClient5(b.host, b.port)
    assert quiet.connect5(client_id="rs-off", props=[(R5.REQUEST_PROBLEM_INFO, 0)])[1] == 0
    quiet.send(R5.publish5("closed/t", b"x", qos=1, pid=6))
    ack = quiet.expect(rm.PUBACK)
    assert (ack.pid, R5.ack_reason(ack)) == (6, R5.RC_NOT_AUTHORIZED)
    assert len(ack.body) == 3 or R5.decode_props(ack.body, 3)[0] == {}, ack.body
