"""QoS 0, 1 and 2 end to end (SPEC C1).

A message published at QoS p to a subscription granted QoS s arrives at
QoS min(p, s), exactly once. Each publisher sends the message and then an
"end" message on the same topic over the same connection; the subscriber
takes exactly two messages, so a duplicate of the first (or a lost one)
shows up as a wrong list rather than needing a timed negative wait.
"""

import pytest

import rawmqtt as R
from mqttclients import MosqSub, PahoClient, mosq_pub

QOS = [0, 1, 2]


@pytest.mark.parametrize("sub_qos", QOS)
@pytest.mark.parametrize("pub_qos", QOS)
def test_mosquitto_clients_deliver_once_at_min_of_pub_and_sub_qos(broker, pub_qos, sub_qos):
    b = broker()
    topic = "qos/mosq/%d%d" % (pub_qos, sub_qos)
    sub = MosqSub(b.port, [topic], qos=sub_qos, count=2)
    assert sub.wait_subscribed() == [sub_qos]
    mosq_pub(b.port, topic, lines=["payload-%d" % pub_qos, "end"], qos=pub_qos)
    got = sub.wait()
    want = min(pub_qos, sub_qos)
    assert [(m.topic, m.payload, m.qos, m.retain) for m in got] == [
        (topic, b"payload-%d" % pub_qos, want, False),
        (topic, b"end", want, False),
    ]


@pytest.mark.parametrize("sub_qos", QOS)
@pytest.mark.parametrize("pub_qos", QOS)
def test_paho_clients_deliver_once_at_min_of_pub_and_sub_qos(broker, pub_qos, sub_qos):
    b = broker()
    topic = "qos/paho/%d%d" % (pub_qos, sub_qos)
    sub = PahoClient(b.port, client_id="qsub%d%d" % (pub_qos, sub_qos))
    sub.connect()
    assert sub.subscribe(topic, sub_qos) == [sub_qos]
    pub = PahoClient(b.port, client_id="qpub%d%d" % (pub_qos, sub_qos))
    pub.connect()
    pub.publish(topic, b"payload", qos=pub_qos)
    pub.publish(topic, b"end", qos=pub_qos)
    got = sub.wait_messages(2)
    assert got[-1].payload == b"end"
    want = min(pub_qos, sub_qos)
    assert [(m.payload, m.qos, m.retain) for m in got] == [(b"payload", want, False), (b"end", want, False)]
    pub.disconnect()
    sub.disconnect()


def test_qos2_publish_resent_with_dup_before_pubrel_is_delivered_once(broker):
    """A QoS 2 publisher that retransmits PUBLISH (DUP=1, same packet id)
    before sending PUBREL must not cause a second delivery (MQTT 4.3.3)."""
    b = broker()
    sub = PahoClient(b.port, client_id="q2dup-sub")
    sub.connect()
    sub.subscribe("q2/dup", 2)
    with R.RawClient(b.host, b.port) as pub:
        assert pub.connect(client_id="q2dup-pub").return_code == 0
        pub.send(R.publish("q2/dup", b"once", qos=2, pid=7))
        assert pub.expect(R.PUBREC).pid == 7
        pub.send(R.publish("q2/dup", b"once", qos=2, pid=7, dup=True))
        assert pub.expect(R.PUBREC).pid == 7
        pub.send(R.pubrel(7))
        assert pub.expect(R.PUBCOMP).pid == 7
        pub.send(R.publish("q2/dup", b"end", qos=2, pid=8))
        pub.expect(R.PUBREC)
        pub.send(R.pubrel(8))
        pub.expect(R.PUBCOMP)
        got = sub.wait_for(lambda ms: [m for m in ms if m.payload == b"end"] and ms)
        assert [m.payload for m in got] == [b"once", b"end"]
        pub.send(R.disconnect())
    sub.disconnect()


def test_qos2_outbound_flow_publish_pubrec_pubrel_pubcomp(broker):
    """The broker's side of QoS 2 towards a subscriber: PUBLISH(qos2) ->
    PUBREC -> PUBREL(flags 0b0010, same id) -> PUBCOMP, one PUBLISH only."""
    b = broker()
    with R.RawClient(b.host, b.port) as sub:
        assert sub.connect(client_id="q2flow-sub").return_code == 0
        assert sub.subscribe([("q2/flow", 2)]) == [2]
        mosq_pub(b.port, "q2/flow", lines=["m1", "m2"], qos=2)
        publishes, released = [], []
        while len(released) < 2:
            p = sub.recv_packet()
            if p.type == R.PUBLISH:
                assert (p.topic, p.qos, p.dup) == ("q2/flow", 2, False), p
                publishes.append(p)
                sub.send(R.pubrec(p.pid))
            else:
                assert p.type == R.PUBREL, p
                assert p.flags == 0x02, "PUBREL must have flags 0b0010"
                assert p.pid in [q.pid for q in publishes[len(released):]], "PUBREL for unknown id"
                released.append(p.pid)
                sub.send(R.pubcomp(p.pid))
        assert [p.payload for p in publishes] == [b"m1", b"m2"]
        assert released == [p.pid for p in publishes]
        assert sub.is_open_after_ping()
        assert sub.pending == [], "unexpected extra packets: %r" % sub.pending
        sub.send(R.disconnect())
