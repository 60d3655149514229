"""Per-topic ordering for QoS >= 1 (SPEC C1): many messages from one
publisher on one topic arrive in publication order, each exactly once."""

import pytest

from mqttclients import MosqSub, PahoClient, mosq_pub

N = 1000


@pytest.mark.parametrize("qos", [1, 2])
def test_paho_messages_from_one_publisher_arrive_in_order(broker, qos):
    b = broker()
    sub = PahoClient(b.port, client_id="order-sub")
    sub.connect()
    sub.subscribe("order/t", qos)
    pub = PahoClient(b.port, client_id="order-pub")
    pub.connect()
    infos = [pub.publish("order/t", b"%06d" % i, qos=qos, wait=False) for i in range(N)]
    got = sub.wait_messages(N, timeout=60)
    for info in infos:
        info.wait_for_publish(10)
        assert info.is_published(), "publisher's message not acknowledged"
    seqs = [int(m.payload) for m in got]
    assert seqs == list(range(N)), "first difference at index %d" % next(
        i for i, (a, e) in enumerate(zip(seqs + [None], range(N))) if a != e)
    assert all(m.qos == qos for m in got)
    # No late duplicates: a marker on the same topic comes right after.
    pub.publish("order/t", b"end", qos=qos)
    sub.wait_messages(N + 1, timeout=10)
    assert len(sub.messages) == N + 1 and sub.messages[-1].payload == b"end"
    pub.disconnect()
    sub.disconnect()


def test_mosquitto_pub_line_mode_qos1_arrives_in_order(broker):
    b = broker()
    sub = MosqSub(b.port, ["order/mosq"], qos=1, count=N, timeout=60)
    sub.wait_subscribed()
    mosq_pub(b.port, "order/mosq", lines=["%06d" % i for i in range(N)], qos=1)
    got = sub.wait()
    assert [int(m.payload) for m in got] == list(range(N))
