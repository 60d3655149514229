"""Hand-built MQTT 5.0 packets for the integration tests (test_mqtt5_*.py),
on top of rawmqtt.py (its RawClient, packet(), varint(), mqtt_string()).

For what real clients cannot do: malformed or protocol-violating 5.0
packets, a client that does not acknowledge (receive maximum), and reading
the exact reason code and properties of a server's CONNACK or DISCONNECT.

Properties are given as a list of (id, value) pairs, in order, so a test
can repeat one or put one where it does not belong; encode_props() writes
each by the type of its id (PROP_TYPES). decode_props() reads them back
into a dict of id -> value (user properties and subscription identifiers:
lists).
"""

import struct

import rawmqtt as rm
from rawmqtt import mqtt_string, packet, varint

AUTH = 15

# Property identifiers (MQTT 5.0 section 2.2.2.2).
PAYLOAD_FORMAT = 0x01
MESSAGE_EXPIRY = 0x02
CONTENT_TYPE = 0x03
RESPONSE_TOPIC = 0x08
CORRELATION_DATA = 0x09
SUBSCRIPTION_ID = 0x0B
SESSION_EXPIRY = 0x11
ASSIGNED_CLIENT_ID = 0x12
SERVER_KEEP_ALIVE = 0x13
AUTH_METHOD = 0x15
AUTH_DATA = 0x16
REQUEST_PROBLEM_INFO = 0x17
WILL_DELAY = 0x18
REQUEST_RESPONSE_INFO = 0x19
RESPONSE_INFO = 0x1A
SERVER_REFERENCE = 0x1C
REASON_STRING = 0x1F
RECEIVE_MAXIMUM = 0x21
TOPIC_ALIAS_MAXIMUM = 0x22
TOPIC_ALIAS = 0x23
MAXIMUM_QOS = 0x24
RETAIN_AVAILABLE = 0x25
USER_PROPERTY = 0x26
MAXIMUM_PACKET_SIZE = 0x27
WILDCARD_AVAILABLE = 0x28
SUB_ID_AVAILABLE = 0x29
SHARED_AVAILABLE = 0x2A

PROP_TYPES = {
    PAYLOAD_FORMAT: "byte", MESSAGE_EXPIRY: "u32", CONTENT_TYPE: "str",
    RESPONSE_TOPIC: "str", CORRELATION_DATA: "bin", SUBSCRIPTION_ID: "varint",
    SESSION_EXPIRY: "u32", ASSIGNED_CLIENT_ID: "str", SERVER_KEEP_ALIVE: "u16",
    AUTH_METHOD: "str", AUTH_DATA: "bin", REQUEST_PROBLEM_INFO: "byte",
    WILL_DELAY: "u32", REQUEST_RESPONSE_INFO: "byte", RESPONSE_INFO: "str",
    SERVER_REFERENCE: "str", REASON_STRING: "str", RECEIVE_MAXIMUM: "u16",
    TOPIC_ALIAS_MAXIMUM: "u16", TOPIC_ALIAS: "u16", MAXIMUM_QOS: "byte",
    RETAIN_AVAILABLE: "byte", USER_PROPERTY: "pair", MAXIMUM_PACKET_SIZE: "u32",
    WILDCARD_AVAILABLE: "byte", SUB_ID_AVAILABLE: "byte", SHARED_AVAILABLE: "byte",
}
MULTI = (USER_PROPERTY, SUBSCRIPTION_ID)

# Reason codes the tests look for (section 2.4).
RC_SUCCESS = 0x00
RC_NO_MATCHING_SUBSCRIBERS = 0x10
RC_UNSPECIFIED = 0x80
RC_MALFORMED = 0x81
RC_PROTOCOL_ERROR = 0x82
RC_NOT_AUTHORIZED = 0x87
RC_BAD_AUTH_METHOD = 0x8C
RC_SERVER_SHUTTING_DOWN = 0x8B
RC_KEEP_ALIVE_TIMEOUT = 0x8D
RC_SESSION_TAKEN_OVER = 0x8E
RC_TOPIC_FILTER_INVALID = 0x8F
RC_RECEIVE_MAXIMUM_EXCEEDED = 0x93
RC_TOPIC_ALIAS_INVALID = 0x94
RC_PACKET_TOO_LARGE = 0x95
RC_RETAIN_NOT_SUPPORTED = 0x9A
RC_SHARED_NOT_SUPPORTED = 0x9E


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def encode_props(props):
    """[(id, value), ...] -> property length + properties."""
    out = bytearray()
    for pid, value in props or ():
        out += varint(pid)
        kind = PROP_TYPES[pid]
        if kind == "byte":
            out.append(value)
        elif kind == "u16":
            out += struct.pack("!H", value)
        elif kind == "u32":
            out += struct.pack("!I", value)
        elif kind == "varint":
            out += varint(value)
        elif kind in ("str", "bin"):
            out += mqtt_string(value)
        elif kind == "pair":
            out += mqtt_string(value[0]) + mqtt_string(value[1])
    return varint(len(out)) + bytes(out)


def _read_varint(buf, pos):
    value, mult = 0, 1
    for _ in range(4):
        byte = buf[pos]
        pos += 1
        value += (byte & 0x7F) * mult
        if not byte & 0x80:
            return value, pos
        mult *= 128
    raise ValueError("malformed variable byte integer from the broker")


def decode_props(buf, pos=0):
    """Properties at buf[pos:] -> (dict, position after them)."""
    length, pos = _read_varint(buf, pos)
    end = pos + length
    out = {}
    while pos < end:
        pid, pos = _read_varint(buf, pos)
        kind = PROP_TYPES[pid]
        if kind == "byte":
            value = buf[pos]
            pos += 1
        elif kind == "u16":
            (value,) = struct.unpack_from("!H", buf, pos)
            pos += 2
        elif kind == "u32":
            (value,) = struct.unpack_from("!I", buf, pos)
            pos += 4
        elif kind == "varint":
            value, pos = _read_varint(buf, pos)
        elif kind in ("str", "bin"):
            (n,) = struct.unpack_from("!H", buf, pos)
            value = bytes(buf[pos + 2:pos + 2 + n])
            if kind == "str":
                value = value.decode("utf-8")
            pos += 2 + n
        else:
            (n,) = struct.unpack_from("!H", buf, pos)
            k = bytes(buf[pos + 2:pos + 2 + n]).decode()
            pos += 2 + n
            (n,) = struct.unpack_from("!H", buf, pos)
            v = bytes(buf[pos + 2:pos + 2 + n]).decode()
            pos += 2 + n
            value = (k, v)
        if pid in MULTI:
            out.setdefault(pid, []).append(value)
        else:
            assert pid not in out, "property %#x twice from the broker" % pid
            out[pid] = value
    assert pos == end, "property length mismatch from the broker"
    return out, end


# --------------------------------------------------------------------------
# Packets a client sends


def connect5(client_id="", clean_start=True, keepalive=60, props=(), will=None,
             will_props=(), username=None, password=None, header_flags=0):
    """CONNECT, protocol level 5. will = (topic, payload, qos, retain)."""
    flags = 0x02 if clean_start else 0
    payload = mqtt_string(client_id)
    if will is not None:
        wtopic, wpayload, wqos, wretain = will
        flags |= 0x04 | (wqos << 3) | (0x20 if wretain else 0)
        payload += encode_props(will_props) + mqtt_string(wtopic) + mqtt_string(wpayload)
    if username is not None:
        flags |= 0x80
        payload += mqtt_string(username)
    if password is not None:
        flags |= 0x40
        payload += mqtt_string(password)
    var = mqtt_string("MQTT") + bytes([5, flags]) + struct.pack("!H", keepalive)
    return packet(rm.CONNECT, header_flags, var + encode_props(props) + payload)


def publish5(topic, payload=b"", qos=0, retain=False, dup=False, pid=None, props=(),
             raw_props=None):
    """PUBLISH. raw_props: bytes put where the properties go (malformed)."""
    flags = (0x08 if dup else 0) | (qos << 1) | (0x01 if retain else 0)
    body = mqtt_string(topic)
    if qos > 0:
        body += struct.pack("!H", pid)
    body += encode_props(props) if raw_props is None else raw_props
    return packet(rm.PUBLISH, flags, body + _b(payload))


def subscribe5(pid, filters, props=()):
    """SUBSCRIBE. filters = [(filter, options byte), ...]; options byte =
    QoS | no local 0x04 | retain as published 0x08 | retain handling << 4."""
    body = struct.pack("!H", pid) + encode_props(props)
    for flt, opts in filters:
        body += mqtt_string(flt) + bytes([opts])
    return packet(rm.SUBSCRIBE, 0x02, body)


def ack5(ptype, pid, reason=0, props=()):
    """PUBACK / PUBREC / PUBREL / PUBCOMP with a reason code."""
    flags = 0x02 if ptype == rm.PUBREL else 0
    return packet(ptype, flags, struct.pack("!H", pid) + bytes([reason]) + encode_props(props))


def disconnect5(reason=0, props=()):
    return packet(rm.DISCONNECT, 0, bytes([reason]) + encode_props(props))


def auth5(reason=0x18, props=()):
    return packet(AUTH, 0, bytes([reason]) + encode_props(props))


# --------------------------------------------------------------------------
# Reading what the server sends


def connack_fields(pkt):
    """CONNACK -> (session_present, reason_code, props)."""
    assert pkt.type == rm.CONNACK, pkt
    # A 3.1.1 refusal (0x01, unacceptable protocol version) has no
    # properties: read as none, the reason code tells.
    props = decode_props(pkt.body, 2)[0] if len(pkt.body) > 2 else {}
    return bool(pkt.body[0] & 1), pkt.body[1], props


def disconnect_fields(pkt):
    """DISCONNECT -> (reason_code, props); a DISCONNECT with no body means
    0x00 (section 3.14.2.1)."""
    assert pkt.type == rm.DISCONNECT, pkt
    if not pkt.body:
        return 0, {}
    if len(pkt.body) == 1:
        return pkt.body[0], {}
    props, _ = decode_props(pkt.body, 1)
    return pkt.body[0], props


def publish_fields(pkt):
    """PUBLISH (5.0) -> (topic, pid, props, payload)."""
    assert pkt.type == rm.PUBLISH, pkt
    (tlen,) = struct.unpack_from("!H", pkt.body, 0)
    topic = pkt.body[2:2 + tlen].decode("utf-8")
    pos = 2 + tlen
    pid = None
    if pkt.qos > 0:
        (pid,) = struct.unpack_from("!H", pkt.body, pos)
        pos += 2
    props, pos = decode_props(pkt.body, pos)
    return topic, pid, props, pkt.body[pos:]


def ack_reason(pkt):
    """Reason code of a PUBACK/PUBREC/PUBREL/PUBCOMP (absent: 0x00)."""
    return pkt.body[2] if len(pkt.body) > 2 else 0


def suback_codes(pkt):
    """SUBACK -> its reason codes, one per filter."""
    assert pkt.type == rm.SUBACK, pkt
    _, pos = decode_props(pkt.body, 2)
    return list(pkt.body[pos:])


class RawClient5(rm.RawClient):
    """rawmqtt.RawClient speaking 5.0."""

    def connect5(self, timeout=5.0, **kwargs):
        """Send CONNECT (connect5 keywords); returns (session_present,
        reason_code, props) of the CONNACK."""
        self.send(connect5(**kwargs))
        return connack_fields(self.expect(rm.CONNACK, timeout))

    def subscribe5(self, filters, pid=1, props=(), timeout=5.0):
        """Returns the SUBACK reason codes."""
        self.send(subscribe5(pid, filters, props))
        ack = self.expect(rm.SUBACK, timeout)
        assert ack.pid == pid
        return suback_codes(ack)

    def expect_disconnect(self, timeout=5.0):
        """Read until the server's DISCONNECT (other packets before it are
        skipped) and then until it closes the connection; returns the
        DISCONNECT's (reason_code, props). Fails if the connection closes
        without one or stays open."""
        import time
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            try:
                pkt = self.recv_packet(max(deadline - time.monotonic(), 0.0))
            except rm.Closed:
                raise AssertionError("connection closed without a DISCONNECT; got %r" % seen)
            if pkt.type == rm.DISCONNECT:
                fields = disconnect_fields(pkt)
                rest = self.wait_closed(max(deadline - time.monotonic(), 0.5))
                assert rest == [], "packets after the server's DISCONNECT: %r" % rest
                return fields
            seen.append(pkt)
