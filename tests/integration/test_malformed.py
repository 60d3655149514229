"""Protocol violations and malformed packets (SPEC C1): the offending
connection is closed, and only that one. A Paho client connected at the
same time keeps publishing and receiving, and an idle raw client stays
connected."""

import struct

import pytest

import rawmqtt as R
from mqttclients import PahoClient

CONNECTED = "connected"       # the bad bytes follow a valid CONNECT/CONNACK
FRESH = "fresh"               # the bad bytes are the first thing sent


def _connect_with_truncated_client_id():
    var = R.mqtt_string("MQTT") + bytes([4, 0x02]) + struct.pack("!H", 60)
    body = var + struct.pack("!H", 100) + b"abc"     # says 100 bytes, has 3
    return R.packet(R.CONNECT, 0, body)


CASES = [
    # remaining length
    ("remaining_length_five_bytes", CONNECTED, b"\x30\xff\xff\xff\xff\x01"),
    ("remaining_length_too_short_for_fields", CONNECTED, R.packet(R.PUBLISH, 2, b"\x00\x05ab")),
    ("connect_string_longer_than_packet", FRESH, _connect_with_truncated_client_id()),
    # reserved packet types and fixed-header flags
    ("reserved_packet_type_0", CONNECTED, b"\x00\x00"),
    ("reserved_packet_type_15", CONNECTED, b"\xf0\x00"),
    ("subscribe_flags_not_0010", CONNECTED, R.subscribe(1, [("t", 0)], flags=0)),
    ("unsubscribe_flags_not_0010", CONNECTED, R.unsubscribe(1, ["t"], flags=0)),
    ("pubrel_flags_not_0010", CONNECTED, R.pubrel(1, flags=0)),
    # [MQTT-2.2.2-2]; mosquitto 2.0.11 ignores PINGREQ's flag bits and
    # answers PINGRESP, so this case is checked against tern only.
    ("pingreq_flags_nonzero", CONNECTED, R.packet(R.PINGREQ, 1, b""), pytest.mark.tern_only),
    ("publish_qos_3", CONNECTED, R.publish("t", b"x", flags=0x06, pid=1)),
    ("connect_reserved_flag_bit0", FRESH, R.connect(client_id="bad", connect_flags=0x03)),
    ("connect_will_qos_3", FRESH, R.connect(client_id="bad", connect_flags=0x02 | 0x04 | 0x18)),
    ("connect_will_qos_without_will_flag", FRESH, R.connect(client_id="bad", connect_flags=0x02 | 0x08)),
    # UTF-8 and topic rules
    ("publish_topic_invalid_utf8", CONNECTED, R.publish(b"bad/\xc3\x28", b"x")),
    ("publish_topic_contains_nul", CONNECTED, R.publish(b"bad/\x00/t", b"x")),
    ("publish_topic_has_wildcard", CONNECTED, R.publish("bad/+/t", b"x")),
    ("publish_topic_empty", CONNECTED, R.publish("", b"x")),
    ("publish_qos1_packet_id_zero", CONNECTED, R.publish("t", b"x", qos=1, pid=0)),
    ("subscribe_filter_invalid_utf8", CONNECTED, R.subscribe(1, [(b"bad/\xff", 0)])),
    ("subscribe_no_filters", CONNECTED, R.packet(R.SUBSCRIBE, 2, struct.pack("!H", 1))),
    ("subscribe_requested_qos_3", CONNECTED, R.subscribe(1, [("t", 3)])),
    # packet order
    ("publish_before_connect", FRESH, R.publish("t", b"x")),
    ("pingreq_before_connect", FRESH, R.pingreq()),
    ("second_connect", CONNECTED, R.connect(client_id="again")),
    ("not_mqtt_at_all", FRESH, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
]


@pytest.mark.parametrize("prelude,bad", [pytest.param(c[1], c[2], id=c[0], marks=c[3:]) for c in CASES])
def test_malformed_packet_closes_only_its_own_connection(broker, prelude, bad):
    b = broker()
    witness = PahoClient(b.port, client_id="witness")
    witness.connect()
    witness.subscribe("witness/t", 1)
    idle = R.RawClient(b.host, b.port)
    assert idle.connect(client_id="idle").return_code == 0

    bad_client = R.RawClient(b.host, b.port)
    if prelude == CONNECTED:
        assert bad_client.connect(client_id="offender").return_code == 0
    bad_client.send(bad)
    received = bad_client.wait_closed(timeout=3)
    bad_client.close()
    # Nothing that looks like acceptance of the bad packet.
    assert all(p.type in (R.CONNACK,) for p in received), received
    if prelude == CONNECTED:
        assert received == []

    # Everyone else is unaffected.
    witness.publish("witness/t", b"still fine", qos=1)
    assert [m.payload for m in witness.wait_messages(1)] == [b"still fine"]
    assert not witness.disconnected.is_set()
    assert idle.is_open_after_ping()
    # And the broker still accepts new connections.
    with R.RawClient(b.host, b.port) as fresh:
        assert fresh.connect(client_id="after").return_code == 0
    idle.close()
    witness.disconnect()
