"""Retained messages (SPEC C1): set, clear with an empty payload, delivery
on subscribe (retain flag set) including wildcard subscriptions, and the
retain flag clear on live forwarding [MQTT-3.3.1-9].

"Nothing arrives" checks use a barrier instead of a timed wait: after
subscribing to the filter under test the client subscribes to a marker
topic that holds a retained message. The broker handles one connection's
packets in order, so any retained message for the first subscription is
sent before the marker.
"""

from mqttclients import MosqSub, PahoClient, mosq_pub


def _retained_then_marker(client, flt, qos=1):
    """Subscribe to flt, then to the marker; return what flt delivered."""
    client.subscribe(flt, qos)
    client.subscribe("marker/retained", 0)
    msgs = client.wait_for(lambda ms: any(m.topic == "marker/retained" for m in ms) and ms,
                           what="retained marker")
    return [m for m in msgs[:[m.topic for m in msgs].index("marker/retained")]]


def test_new_subscriber_gets_retained_message_with_retain_flag(broker):
    b = broker()
    mosq_pub(b.port, "ret/a", "hello", qos=1, retain=True)
    sub = MosqSub(b.port, ["ret/a"], qos=1, count=1)
    sub.wait_subscribed()
    got = sub.wait()
    assert [(m.topic, m.payload, m.qos, m.retain) for m in got] == [("ret/a", b"hello", 1, True)]


def test_retained_message_is_replaced_by_later_retained_publish(broker):
    b = broker()
    mosq_pub(b.port, "marker/retained", "M", retain=True)
    mosq_pub(b.port, "ret/r", "v1", qos=1, retain=True)
    mosq_pub(b.port, "ret/r", "v2", qos=1, retain=True)
    c = PahoClient(b.port, client_id="ret-replace")
    c.connect()
    got = _retained_then_marker(c, "ret/r")
    assert [(m.payload, m.retain) for m in got] == [(b"v2", True)]
    c.disconnect()


def test_empty_retained_payload_clears_retained_message(broker):
    b = broker()
    mosq_pub(b.port, "marker/retained", "M", retain=True)
    mosq_pub(b.port, "ret/c", "to-be-cleared", qos=1, retain=True)
    # Sanity: it is there.
    c1 = PahoClient(b.port, client_id="ret-clear-1")
    c1.connect()
    assert [m.payload for m in _retained_then_marker(c1, "ret/c")] == [b"to-be-cleared"]
    c1.disconnect()
    # mosquitto_pub -n -r: zero-length retained payload.
    mosq_pub(b.port, "ret/c", null=True, qos=1, retain=True)
    c2 = PahoClient(b.port, client_id="ret-clear-2")
    c2.connect()
    assert _retained_then_marker(c2, "ret/c") == []
    c2.disconnect()


def test_empty_retained_publish_is_still_forwarded_to_current_subscribers(broker):
    """[MQTT-3.3.1-10]: a zero-byte retained PUBLISH is delivered normally
    to existing subscribers (and removes the retained message)."""
    b = broker()
    c = PahoClient(b.port, client_id="ret-empty-live")
    c.connect()
    c.subscribe("ret/e", 1)
    mosq_pub(b.port, "ret/e", null=True, qos=1, retain=True)
    got = c.wait_messages(1)
    assert [(m.payload, m.retain) for m in got] == [(b"", False)]
    c.disconnect()


def test_wildcard_subscription_receives_every_matching_retained_message(broker):
    b = broker()
    mosq_pub(b.port, "marker/retained", "M", retain=True)
    topics = {"w/1": "one", "w/2": "two", "w/x/3": "three", "other/4": "four"}
    for t, p in topics.items():
        mosq_pub(b.port, t, p, qos=1, retain=True)

    c = PahoClient(b.port, client_id="ret-wild-hash")
    c.connect()
    got = _retained_then_marker(c, "w/#")
    assert sorted((m.topic, m.payload, m.retain) for m in got) == [
        ("w/1", b"one", True), ("w/2", b"two", True), ("w/x/3", b"three", True)]
    c.disconnect()

    c = PahoClient(b.port, client_id="ret-wild-plus")
    c.connect()
    got = _retained_then_marker(c, "w/+")
    assert sorted((m.topic, m.payload, m.retain) for m in got) == [
        ("w/1", b"one", True), ("w/2", b"two", True)]
    c.disconnect()


def test_retained_delivery_uses_min_of_retained_qos_and_subscription_qos(broker):
    b = broker()
    mosq_pub(b.port, "ret/q2", "two", qos=2, retain=True)
    mosq_pub(b.port, "ret/q0", "zero", qos=0, retain=True)
    s1 = MosqSub(b.port, ["ret/q2"], qos=1, count=1)
    s1.wait_subscribed()
    assert [(m.payload, m.qos, m.retain) for m in s1.wait()] == [(b"two", 1, True)]
    s2 = MosqSub(b.port, ["ret/q0"], qos=2, count=1)
    s2.wait_subscribed()
    assert [(m.payload, m.qos, m.retain) for m in s2.wait()] == [(b"zero", 0, True)]


def test_live_forwarded_message_has_retain_flag_clear(broker):
    """A retained PUBLISH forwarded to an already-subscribed client is not a
    retained-delivery: the retain flag must be 0 [MQTT-3.3.1-9]."""
    b = broker()
    sub = MosqSub(b.port, ["ret/live"], qos=1, count=1)
    sub.wait_subscribed()
    paho = PahoClient(b.port, client_id="ret-live-paho")
    paho.connect()
    paho.subscribe("ret/live", 1)
    mosq_pub(b.port, "ret/live", "now", qos=1, retain=True)
    assert [(m.payload, m.retain) for m in sub.wait()] == [(b"now", False)]
    assert [(m.payload, m.retain) for m in paho.wait_messages(1)] == [(b"now", False)]
    paho.disconnect()
    # ...and it was stored: a new subscriber gets it with the flag set.
    late = MosqSub(b.port, ["ret/live"], qos=1, count=1)
    late.wait_subscribed()
    assert [(m.payload, m.retain) for m in late.wait()] == [(b"now", True)]
