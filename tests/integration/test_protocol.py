"""Basic MQTT 3.1.1 protocol behaviour (SPEC C1): protocol levels, client
ids, PINGREQ, SUBSCRIBE/UNSUBSCRIBE acknowledgements, DISCONNECT."""

import pytest

import rawmqtt as R
from mqttclients import MosqSub, PahoClient, mosq_pub


def test_mqtt31_clients_mqisdp_level_3_publish_and_subscribe(broker):
    b = broker()
    sub = MosqSub(b.port, ["v31/t"], qos=1, count=1, version="mqttv31")
    assert sub.wait_subscribed() == [1]
    mosq_pub(b.port, "v31/t", "old protocol", qos=1, version="mqttv31")
    assert [(m.payload, m.qos) for m in sub.wait()] == [(b"old protocol", 1)]


def test_raw_mqisdp_level_3_connect_is_accepted(broker):
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        ack = c.connect(client_id="v31-raw", proto_name="MQIsdp", proto_level=3)
        assert (ack.return_code, ack.session_present) == (0, False)
        assert c.is_open_after_ping()


@pytest.mark.parametrize("level", [2, 6, 255])
def test_unsupported_protocol_level_gets_connack_0x01_then_close(broker, level):
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        c.send(R.connect(client_id="badlevel", proto_level=level))
        ack = c.expect(R.CONNACK)
        assert ack.return_code == 0x01
        assert ack.session_present is False
        assert c.wait_closed(timeout=3) == []


def test_empty_client_id_with_clean_session_is_accepted_paho(broker):
    b = broker()
    anon = PahoClient(b.port, client_id="", clean_session=True)  # Paho sends a zero-length id
    assert anon.connect() == (False, 0)
    anon.subscribe("anon/t", 1)
    anon.publish("anon/t", b"hi", qos=1)
    assert [m.payload for m in anon.wait_messages(1)] == [b"hi"]
    anon.disconnect()


def test_two_empty_client_ids_get_distinct_server_assigned_ids(broker):
    """Both connections stay up: had the broker given them the same id, the
    second would have taken over the first."""
    b = broker()
    with R.RawClient(b.host, b.port) as c1, R.RawClient(b.host, b.port) as c2:
        assert c1.connect(client_id="", clean=True).return_code == 0
        assert c2.connect(client_id="", clean=True).return_code == 0
        assert c1.is_open_after_ping()
        assert c2.is_open_after_ping()


def test_empty_client_id_without_clean_session_gets_connack_0x02_then_close(broker):
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        c.send(R.connect(client_id="", clean=False))
        ack = c.expect(R.CONNACK)
        assert ack.return_code == 0x02
        assert c.wait_closed(timeout=3) == []


def test_long_client_id_is_accepted(broker):
    b = broker()
    c = PahoClient(b.port, client_id="x" * 100)
    assert c.connect() == (False, 0)
    c.disconnect()


def test_pingreq_gets_pingresp(broker):
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        assert c.connect(client_id="pinger").return_code == 0
        for _ in range(3):
            c.send(R.pingreq())
            resp = c.expect(R.PINGRESP)
            assert (resp.flags, resp.body) == (0, b"")


def test_suback_has_packet_id_and_one_granted_qos_per_filter_in_order(broker):
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        assert c.connect(client_id="suback").return_code == 0
        c.send(R.subscribe(0x1234, [("s/2", 2), ("s/0", 0), ("s/1", 1)]))
        ack = c.expect(R.SUBACK)
        assert ack.pid == 0x1234
        assert ack.granted == [2, 0, 1]


def test_qos1_publish_gets_puback_and_qos2_gets_pubrec_pubcomp(broker):
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        assert c.connect(client_id="acks").return_code == 0
        c.send(R.publish("acks/t", b"1", qos=1, pid=11))
        assert c.expect(R.PUBACK).pid == 11
        c.send(R.publish("acks/t", b"2", qos=2, pid=12))
        assert c.expect(R.PUBREC).pid == 12
        c.send(R.pubrel(12))
        assert c.expect(R.PUBCOMP).pid == 12


def test_unsubscribe_gets_unsuback_and_stops_delivery(broker):
    b = broker()
    sub = PahoClient(b.port, client_id="unsub")
    sub.connect()
    sub.subscribe([("unsub/t", 1), ("unsub/marker", 1)])
    pub = PahoClient(b.port, client_id="unsub-pub")
    pub.connect()
    pub.publish("unsub/t", b"before", qos=1)
    sub.wait_messages(1, topic="unsub/t")
    sub.unsubscribe("unsub/t")          # waits for UNSUBACK
    pub.publish("unsub/t", b"after", qos=1)
    pub.publish("unsub/marker", b"end", qos=1)
    sub.wait_messages(1, topic="unsub/marker")
    assert [m.payload for m in sub.messages if m.topic == "unsub/t"] == [b"before"]
    pub.disconnect()
    sub.disconnect()


def test_raw_unsuback_echoes_packet_id_even_for_unknown_filter(broker):
    """[MQTT-3.10.4-4], [MQTT-3.10.4-5]: UNSUBACK with the same packet id,
    also when nothing was subscribed."""
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        assert c.connect(client_id="unsuback").return_code == 0
        assert c.subscribe([("u/a", 1)], pid=3) == [1]
        c.send(R.unsubscribe(0x0102, ["u/a", "never/subscribed"]))
        ack = c.expect(R.UNSUBACK)
        assert (ack.pid, ack.flags, len(ack.body)) == (0x0102, 0, 2)


def test_resubscribing_same_filter_replaces_subscription(broker):
    """[MQTT-3.8.4-3]: a SUBSCRIBE with an existing filter replaces it; the
    message arrives once, at the new QoS."""
    b = broker()
    sub = PahoClient(b.port, client_id="resub")
    sub.connect()
    assert sub.subscribe("resub/t", 0) == [0]
    assert sub.subscribe("resub/t", 2) == [2]
    sub.subscribe("resub/marker", 2)
    pub = PahoClient(b.port, client_id="resub-pub")
    pub.connect()
    pub.publish("resub/t", b"x", qos=2)
    # Marker at QoS 2 too: Paho hands QoS 2 messages over at PUBREL time.
    pub.publish("resub/marker", b"end", qos=2)
    sub.wait_messages(1, topic="resub/marker")
    assert [(m.payload, m.qos) for m in sub.messages if m.topic == "resub/t"] == [(b"x", 2)]
    pub.disconnect()
    sub.disconnect()


def test_disconnect_packet_makes_broker_close_the_connection(broker):
    b = broker()
    with R.RawClient(b.host, b.port) as c:
        assert c.connect(client_id="bye").return_code == 0
        c.send(R.disconnect())
        assert c.wait_closed(timeout=3) == []
