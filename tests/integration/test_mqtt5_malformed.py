"""Malformed and protocol-violating MQTT 5.0 input (SPEC C2, issue 15),
hand-built with raw5.py: each is answered with the DISCONNECT reason code
the specification names (before CONNACK: a CONNACK with that code,
[MQTT-3.14.0-1] no DISCONNECT before a CONNACK), the connection closed,
and nothing else affected (another client keeps working).

tern-only: 4.13.1 makes the DISCONNECT (and the refusing CONNACK) a
SHOULD (a MAY); issue 15 makes tern send them. Mosquitto 2.0.11 mostly
closes the connection without either, and accepts some of these packets.
"""

import pytest

import raw5 as R5
import rawmqtt as rm
from rawmqtt import packet, varint
from mqtt5clients import Paho5

pytestmark = pytest.mark.tern_only


def connected(b, cid):
    c = R5.RawClient5(b.host, b.port)
    present, rc, _ = c.connect5(client_id=cid)
    assert rc == 0
    return c


def bystander_still_served(b):
    """A Paho 5.0 client connects and gets its own message back."""
    c = Paho5(b.port, client_id="bystander")
    c.connect()
    c.subscribe("bystander/t", 1)
    c.publish("bystander/t", b"ok", qos=1)
    assert [m.payload for m in c.wait_messages(1)] == [b"ok"]
    c.disconnect()


# Each case: (id, packet bytes sent after a good CONNECT, reason codes
# accepted). Where the specification names one code, one is accepted.
CASES = [
    # 2.2.2.2: a property not valid for the packet type is a Malformed
    # Packet: Session Expiry Interval (CONNECT/CONNACK/DISCONNECT only)
    # in a PUBLISH.
    ("property-not-allowed-in-publish",
     R5.publish5("m/t", b"x", props=[(R5.SESSION_EXPIRY, 5)]), (R5.RC_MALFORMED,
                                                               R5.RC_PROTOCOL_ERROR)),
    # 3.3.2.3.3: Message Expiry Interval twice is a Protocol Error.
    ("message-expiry-twice",
     R5.publish5("m/t", b"x", props=[(R5.MESSAGE_EXPIRY, 5), (R5.MESSAGE_EXPIRY, 6)]),
     (R5.RC_PROTOCOL_ERROR,)),
    # 2.2.2.1: a Property Length beyond the packet is malformed.
    ("property-length-beyond-the-packet",
     R5.publish5("m/t", b"", raw_props=varint(50) + bytes([R5.PAYLOAD_FORMAT, 1])),
     (R5.RC_MALFORMED,)),
    # 2.2.2.2: an unknown property identifier is malformed.
    ("unknown-property-identifier",
     R5.publish5("m/t", b"x", raw_props=bytes([3, 0x7F, 0, 0])), (R5.RC_MALFORMED,)),
    # [MQTT-3.3.4-6]: a PUBLISH from a client must not carry a Subscription
    # Identifier. The specification names no code: Protocol Error (the
    # property is valid in PUBLISH, only not from a client) or Malformed.
    ("subscription-identifier-in-publish",
     R5.publish5("m/t", b"x", props=[(R5.SUBSCRIPTION_ID, 3)]), (R5.RC_PROTOCOL_ERROR,
                                                                 R5.RC_MALFORMED)),
    # 3.3.2.3.2: Payload Format Indicator other than 0/1 is a Protocol Error.
    ("payload-format-indicator-2",
     R5.publish5("m/t", b"x", props=[(R5.PAYLOAD_FORMAT, 2)]), (R5.RC_PROTOCOL_ERROR,)),
    # [MQTT-3.3.2-14]: a Response Topic with wildcards.
    ("wildcard-in-response-topic",
     R5.publish5("m/t", b"x", props=[(R5.RESPONSE_TOPIC, "reply/#")]),
     (R5.RC_PROTOCOL_ERROR, R5.RC_MALFORMED)),
    # 3.3.2.1: a zero-length topic without a Topic Alias is a Protocol Error.
    ("empty-topic-without-alias", R5.publish5("", b"x"), (R5.RC_PROTOCOL_ERROR,)),
    # [MQTT-3.1.0-2]: a second CONNECT is a Protocol Error.
    ("second-connect", R5.connect5(client_id="again"), (R5.RC_PROTOCOL_ERROR,)),
    # [MQTT-3.14.1-1]: DISCONNECT with reserved header bits set.
    ("disconnect-reserved-flags", packet(rm.DISCONNECT, 0x1, bytes([0, 0])),
     (R5.RC_MALFORMED,)),
    # 4.12: a client whose CONNECT had no Authentication Method must not
    # send AUTH; receiving one is a Protocol Error.
    ("auth-without-method-in-connect",
     R5.auth5(0x18, props=[(R5.AUTH_METHOD, "SCRAM-SHA-256")]), (R5.RC_PROTOCOL_ERROR,)),
    # 3.8.3: a SUBSCRIBE with no filter (payload empty) is a Protocol Error
    # [MQTT-3.8.3-2].
    ("subscribe-without-filters", R5.subscribe5(1, []), (R5.RC_PROTOCOL_ERROR,
                                                        R5.RC_MALFORMED)),
    # 3.14.2.2.2: a DISCONNECT setting a non-zero Session Expiry Interval
    # when CONNECT's was 0 is a Protocol Error.
    ("disconnect-raises-session-expiry-from-zero",
     R5.disconnect5(0, props=[(R5.SESSION_EXPIRY, 60)]), (R5.RC_PROTOCOL_ERROR,)),
    # [MQTT-1.5.4-1]: ill-formed UTF-8 (a lone 0xC0) in a user property's
    # name is a Malformed Packet.
    ("user-property-with-invalid-utf8",
     R5.publish5("m/t", b"x", raw_props=varint(7) + bytes([R5.USER_PROPERTY, 0, 1, 0xC0, 0, 1])
                 + b"v"), (R5.RC_MALFORMED,)),
]


@pytest.mark.parametrize("name,data,codes", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_the_specified_disconnect_reason_and_a_close(broker, name, data, codes):
    b = broker()
    c = connected(b, "bad-" + name[:16])
    c.send(data)
    reason, _ = c.expect_disconnect()
    assert reason in codes, "%s: DISCONNECT %#x, expected %s" % (
        name, reason, " or ".join("%#x" % x for x in codes))
    bystander_still_served(b)


def test_connect_with_receive_maximum_zero_is_refused_in_the_connack(broker):
    # 3.1.2.11.3: Receive Maximum 0 is a Protocol Error; before a CONNACK
    # the refusal is the CONNACK's reason code [MQTT-3.14.0-1], then close
    # [MQTT-3.2.2-7].
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    present, rc, _ = c.connect5(client_id="rm0", props=[(R5.RECEIVE_MAXIMUM, 0)])
    assert (present, rc) == (False, R5.RC_PROTOCOL_ERROR)
    assert c.wait_closed() == []
    bystander_still_served(b)


def test_connect_with_a_property_twice_is_refused_in_the_connack(broker):
    # 3.1.2.11.2: Session Expiry Interval more than once is a Protocol Error.
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    present, rc, _ = c.connect5(client_id="twice", props=[(R5.SESSION_EXPIRY, 1),
                                                         (R5.SESSION_EXPIRY, 2)])
    assert (present, rc) == (False, R5.RC_PROTOCOL_ERROR)
    assert c.wait_closed() == []


def test_connect_with_maximum_packet_size_zero_is_refused_in_the_connack(broker):
    # 3.1.2.11.4: Maximum Packet Size 0 is a Protocol Error.
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    present, rc, _ = c.connect5(client_id="mps0", props=[(R5.MAXIMUM_PACKET_SIZE, 0)])
    assert (present, rc) == (False, R5.RC_PROTOCOL_ERROR)
    assert c.wait_closed() == []


def test_connect_with_reserved_flag_set_is_malformed(broker):
    # [MQTT-3.1.2-3]: the reserved connect flag must be 0: Malformed Packet,
    # answered in the CONNACK (0x81) or by closing.
    b = broker()
    c = R5.RawClient5(b.host, b.port)
    data = bytearray(R5.connect5(client_id="rsv"))
    data[9] |= 0x01      # fixed header 2 bytes + "MQTT" 6 + level 1: the flags byte
    c.send(bytes(data))
    got = c.wait_closed()
    assert all(p.type == rm.CONNACK for p in got), got
    if got:
        assert R5.connack_fields(got[0])[1] == R5.RC_MALFORMED


def test_5_0_client_disconnect_with_reason_0x04_publishes_the_will(broker):
    # 3.14.2.1: DISCONNECT 0x04 (Disconnect with Will Message) ends the
    # connection and the will is still published (not deleted as with 0x00,
    # [MQTT-3.1.2-10]).
    b = broker()
    w = Paho5(b.port, client_id="will-watch")
    w.connect()
    w.subscribe("dw/t", 1)
    c = R5.RawClient5(b.host, b.port)
    assert c.connect5(client_id="dw", will=("dw/t", b"bye", 1, False))[1] == 0
    c.send(R5.disconnect5(0x04))
    assert c.wait_closed() == []
    assert [m.payload for m in w.wait_messages(1)] == [b"bye"]
    w.disconnect()
