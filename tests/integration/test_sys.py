"""$SYS topics (SPEC C5): retained, refreshed every sys.interval seconds,
Mosquitto's names, decimal values."""

import re

import pytest

from mqttclients import MosqSub, PahoClient, mosq_pub, wait_until

NUMERIC_TOPICS = [
    "$SYS/broker/clients/connected",
    "$SYS/broker/clients/total",
    "$SYS/broker/clients/maximum",
    "$SYS/broker/publish/messages/received",
    "$SYS/broker/publish/messages/sent",
    "$SYS/broker/publish/messages/dropped",
    "$SYS/broker/bytes/received",
    "$SYS/broker/bytes/sent",
    "$SYS/broker/retained messages/count",
    "$SYS/broker/subscriptions/count",
]


class SysMonitor(PahoClient):
    """A Paho client subscribed to $SYS/#, remembering the latest value."""

    def __init__(self, port, client_id="sys-mon"):
        super().__init__(port, client_id=client_id)
        self.connect()
        self.subscribe("$SYS/#", 0)

    def latest(self, topic):
        for m in reversed(self.messages):
            if m.topic == topic:
                return m.payload.decode()
        return None

    def wait_value(self, topic, predicate, timeout=4, what=None):
        def check():
            v = self.latest(topic)
            return v is not None and predicate(v)
        wait_until(check, timeout, what=what or "%s to satisfy the condition (last %r)" % (
            topic, self.latest(topic)))
        return self.latest(topic)


def test_version_is_retained_and_readable(broker):
    b = broker(sys_interval=1)
    sub = MosqSub(b.port, ["$SYS/broker/version"], count=1, timeout=5)
    sub.wait_subscribed()
    got = sub.wait()
    assert len(got) == 1
    assert got[0].retain is True
    assert got[0].payload.strip() != b""


def test_clients_connected_is_retained_and_tracks_connections(broker):
    b = broker(sys_interval=1)
    late = MosqSub(b.port, ["$SYS/broker/clients/connected"], count=1, timeout=5)
    late.wait_subscribed()
    first = late.wait()
    assert first[0].retain is True and re.fullmatch(rb"\d+", first[0].payload)

    mon = SysMonitor(b.port)
    extra = [PahoClient(b.port, client_id="sys-extra%d" % i) for i in range(3)]
    for c in extra:
        c.connect()
    mon.wait_value("$SYS/broker/clients/connected", lambda v: v == "4")
    for c in extra[:2]:
        c.disconnect()
    mon.wait_value("$SYS/broker/clients/connected", lambda v: v == "2")
    extra[2].disconnect()
    mon.disconnect()


def test_messages_received_counter_increases_after_publishes(broker):
    b = broker(sys_interval=1)
    mon = SysMonitor(b.port)
    before = int(mon.wait_value("$SYS/broker/publish/messages/received", lambda v: v.isdigit()))
    for i in range(5):
        mosq_pub(b.port, "sys/count", "m%d" % i, qos=1)
    mon.wait_value("$SYS/broker/publish/messages/received", lambda v: int(v) >= before + 5)
    mon.disconnect()


def test_mosquitto_named_counters_exist_with_decimal_values(broker):
    b = broker(sys_interval=1)
    mon = SysMonitor(b.port)
    # Some traffic so that every counter has something to say.
    mosq_pub(b.port, "sys/retained", "r", qos=1, retain=True)
    for t in NUMERIC_TOPICS:
        mon.wait_value(t, lambda v: re.fullmatch(r"\d+", v) is not None, timeout=4)
    mon.wait_value("$SYS/broker/uptime", lambda v: re.fullmatch(r"\d+ seconds", v) is not None)
    mon.wait_value("$SYS/broker/retained messages/count", lambda v: int(v) >= 1)
    mon.wait_value("$SYS/broker/subscriptions/count", lambda v: int(v) >= 1)
    mon.wait_value("$SYS/broker/clients/maximum", lambda v: int(v) >= 1)
    mon.wait_value("$SYS/broker/bytes/received", lambda v: int(v) > 0)
    mon.wait_value("$SYS/broker/bytes/sent", lambda v: int(v) > 0)
    mon.disconnect()


def test_uptime_advances(broker):
    b = broker(sys_interval=1)
    mon = SysMonitor(b.port)
    v1 = int(mon.wait_value("$SYS/broker/uptime", lambda v: v.endswith(" seconds")).split()[0])
    mon.wait_value("$SYS/broker/uptime", lambda v: int(v.split()[0]) > v1, timeout=4)
    mon.disconnect()


@pytest.mark.tern_only  # mosquitto names it $SYS/broker/heap/current
def test_memory_used_is_published(broker):
    b = broker(sys_interval=1)
    mon = SysMonitor(b.port)
    mon.wait_value("$SYS/broker/memory/used", lambda v: re.fullmatch(r"\d+", v) is not None and int(v) > 0)
    mon.disconnect()
