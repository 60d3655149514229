"""Raw MQTT 3.1.1 and 5.0 packets over a plain socket, for the integration tests only.

Real clients (mosquitto_pub/sub, Paho) are used wherever they can produce the
situation under test. This module is for what they cannot do: malformed or
out-of-order packets, a client that goes silent or stops reading, exact
control over packet ids, flags and socket buffer sizes.

Building: the functions below return whole packets as bytes; they take
keyword arguments that override any field, so a test can build a packet that
is wrong in exactly one way.

Reading: RawClient.recv_packet() returns a Packet (type, flags, body) with
helpers to decode the fields of the packet types a broker sends.

MQTT 5.0: connect(proto_level=5, properties=..., will=(..., will_props)),
publish5, subscribe5, unsubscribe5, ack5, disconnect5 and auth build level-5
packets; a property block's content is the concatenation of prop_*() values
(the builders add the Property Length; *_block= overrides the whole block,
length included, for malformed ones). Packet.v5() decodes a received level-5
packet: its reason code(s) and a Props of its properties.
"""

import select
import socket
import ssl
import struct
import time

CONNECT = 1
CONNACK = 2
PUBLISH = 3
PUBACK = 4
PUBREC = 5
PUBREL = 6
PUBCOMP = 7
SUBSCRIBE = 8
SUBACK = 9
UNSUBSCRIBE = 10
UNSUBACK = 11
PINGREQ = 12
PINGRESP = 13
DISCONNECT = 14
AUTH = 15

TYPE_NAMES = {
    CONNECT: "CONNECT", CONNACK: "CONNACK", PUBLISH: "PUBLISH",
    PUBACK: "PUBACK", PUBREC: "PUBREC", PUBREL: "PUBREL",
    PUBCOMP: "PUBCOMP", SUBSCRIBE: "SUBSCRIBE", SUBACK: "SUBACK",
    UNSUBSCRIBE: "UNSUBSCRIBE", UNSUBACK: "UNSUBACK", PINGREQ: "PINGREQ",
    PINGRESP: "PINGRESP", DISCONNECT: "DISCONNECT", AUTH: "AUTH",
}

# MQTT 5.0 property identifiers (section 2.2.2.2) and their data types.
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
WILDCARD_SUB_AVAILABLE = 0x28
SUB_ID_AVAILABLE = 0x29
SHARED_SUB_AVAILABLE = 0x2A

PROP_TYPES = {
    PAYLOAD_FORMAT: "byte", MESSAGE_EXPIRY: "u32", CONTENT_TYPE: "str",
    RESPONSE_TOPIC: "str", CORRELATION_DATA: "bin", SUBSCRIPTION_ID: "varint",
    SESSION_EXPIRY: "u32", ASSIGNED_CLIENT_ID: "str", SERVER_KEEP_ALIVE: "u16",
    AUTH_METHOD: "str", AUTH_DATA: "bin", REQUEST_PROBLEM_INFO: "byte",
    WILL_DELAY: "u32", REQUEST_RESPONSE_INFO: "byte", RESPONSE_INFO: "str",
    SERVER_REFERENCE: "str", REASON_STRING: "str", RECEIVE_MAXIMUM: "u16",
    TOPIC_ALIAS_MAXIMUM: "u16", TOPIC_ALIAS: "u16", MAXIMUM_QOS: "byte",
    RETAIN_AVAILABLE: "byte", USER_PROPERTY: "pair", MAXIMUM_PACKET_SIZE: "u32",
    WILDCARD_SUB_AVAILABLE: "byte", SUB_ID_AVAILABLE: "byte",
    SHARED_SUB_AVAILABLE: "byte",
}

# Subscription options (SUBSCRIBE, level 5).
NO_LOCAL = 0x04
RETAIN_AS_PUBLISHED = 0x08


def retain_handling(n):
    """Options bits for Retain Handling n (0 send, 1 if new, 2 never)."""
    return n << 4


# --------------------------------------------------------------------------
# Encoding


def varint(n):
    """MQTT 'remaining length' encoding (1-4 bytes, 7 bits each)."""
    if n < 0 or n > 268435455:
        raise ValueError("remaining length out of range: %d" % n)
    out = bytearray()
    while True:
        byte = n % 128
        n //= 128
        if n:
            byte |= 0x80
        out.append(byte)
        if not n:
            return bytes(out)


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def mqtt_string(s):
    """Two-byte length prefix followed by the bytes (UTF-8 for str)."""
    data = _b(s)
    return struct.pack("!H", len(data)) + data


def packet(ptype, flags, body, remaining_length=None):
    """Fixed header + body. remaining_length (raw bytes) overrides the encoded
    length, to build packets whose length field is wrong."""
    rl = varint(len(body)) if remaining_length is None else remaining_length
    return bytes([(ptype << 4) | (flags & 0x0F)]) + rl + body


def connect(client_id="", clean=True, keepalive=60, will=None,
            username=None, password=None, proto_name="MQTT", proto_level=4,
            connect_flags=None, header_flags=0, properties=b"",
            properties_block=None):
    """CONNECT. will = (topic, payload, qos, retain) or, at level 5,
    (topic, payload, qos, retain, will_properties) or None.
    connect_flags overrides the computed flags byte (reserved bit tests).
    Level 5: properties is the CONNECT property block's content (prop_*()
    values), properties_block the whole block, length included."""
    v5 = proto_level == 5
    flags = 0
    payload = mqtt_string(client_id)
    if clean:
        flags |= 0x02
    if will is not None:
        wtopic, wpayload, wqos, wretain = will[:4]
        flags |= 0x04 | (wqos << 3) | (0x20 if wretain else 0)
        if v5:
            payload += prop_block(will[4] if len(will) > 4 else b"")
        payload += mqtt_string(wtopic) + mqtt_string(wpayload)
    if username is not None:
        flags |= 0x80
        payload += mqtt_string(username)
    if password is not None:
        flags |= 0x40
        payload += mqtt_string(password)
    if connect_flags is not None:
        flags = connect_flags
    var = mqtt_string(proto_name) + bytes([proto_level, flags]) + struct.pack("!H", keepalive)
    if v5:
        var += prop_block(properties) if properties_block is None else properties_block
    return packet(CONNECT, header_flags, var + payload)


def publish(topic, payload=b"", qos=0, retain=False, dup=False, pid=None,
            flags=None):
    """PUBLISH. pid is required for qos > 0. flags overrides the header flags."""
    if flags is None:
        flags = (0x08 if dup else 0) | (qos << 1) | (0x01 if retain else 0)
    body = mqtt_string(topic)
    if qos > 0 or pid is not None:
        if pid is None:
            raise ValueError("QoS > 0 PUBLISH needs a packet id")
        body += struct.pack("!H", pid)
    body += _b(payload)
    return packet(PUBLISH, flags, body)


def puback(pid):
    return packet(PUBACK, 0, struct.pack("!H", pid))


def pubrec(pid):
    return packet(PUBREC, 0, struct.pack("!H", pid))


def pubrel(pid, flags=0x02):
    return packet(PUBREL, flags, struct.pack("!H", pid))


def pubcomp(pid):
    return packet(PUBCOMP, 0, struct.pack("!H", pid))


def subscribe(pid, filters, flags=0x02):
    """SUBSCRIBE. filters = [(topic_filter, requested_qos), ...]."""
    body = struct.pack("!H", pid)
    for flt, qos in filters:
        body += mqtt_string(flt) + bytes([qos])
    return packet(SUBSCRIBE, flags, body)


def unsubscribe(pid, filters, flags=0x02):
    body = struct.pack("!H", pid)
    for flt in filters:
        body += mqtt_string(flt)
    return packet(UNSUBSCRIBE, flags, body)


# --------------------------------------------------------------------------
# MQTT 5.0 encoding


def prop_byte(pid, v):
    return bytes([pid, v])


def prop_u16(pid, v):
    return bytes([pid]) + struct.pack("!H", v)


def prop_u32(pid, v):
    return bytes([pid]) + struct.pack("!I", v)


def prop_varint(pid, v):
    return bytes([pid]) + varint(v)


def prop_str(pid, s):
    """A UTF-8 string or binary data property."""
    return bytes([pid]) + mqtt_string(s)


def prop_user(key, value):
    return bytes([USER_PROPERTY]) + mqtt_string(key) + mqtt_string(value)


def prop(pid, value):
    """Any property, its encoding chosen by PROP_TYPES; value is a
    (key, value) tuple for a user property."""
    kind = PROP_TYPES[pid]
    if kind == "byte":
        return prop_byte(pid, value)
    if kind == "u16":
        return prop_u16(pid, value)
    if kind == "u32":
        return prop_u32(pid, value)
    if kind == "varint":
        return prop_varint(pid, value)
    if kind == "pair":
        return prop_user(*value)
    return prop_str(pid, value)


def prop_block(content):
    """Property Length + content (bytes, or a list of prop_*() values)."""
    if isinstance(content, (list, tuple)):
        content = b"".join(content)
    return varint(len(content)) + content


def publish5(topic, payload=b"", qos=0, retain=False, dup=False, pid=None,
             properties=b"", flags=None, properties_block=None):
    """Level-5 PUBLISH; topic may be "" with a TOPIC_ALIAS property."""
    if flags is None:
        flags = (0x08 if dup else 0) | (qos << 1) | (0x01 if retain else 0)
    body = mqtt_string(topic)
    if qos > 0 or pid is not None:
        if pid is None:
            raise ValueError("QoS > 0 PUBLISH needs a packet id")
        body += struct.pack("!H", pid)
    body += prop_block(properties) if properties_block is None else properties_block
    body += _b(payload)
    return packet(PUBLISH, flags, body)


def subscribe5(pid, filters, properties=b"", flags=0x02, properties_block=None):
    """Level-5 SUBSCRIBE. filters = [(topic_filter, options_byte), ...]
    (QoS | NO_LOCAL | RETAIN_AS_PUBLISHED | retain_handling(n))."""
    body = struct.pack("!H", pid)
    body += prop_block(properties) if properties_block is None else properties_block
    for flt, opts in filters:
        body += mqtt_string(flt) + bytes([opts])
    return packet(SUBSCRIBE, flags, body)


def unsubscribe5(pid, filters, properties=b"", flags=0x02):
    body = struct.pack("!H", pid) + prop_block(properties)
    for flt in filters:
        body += mqtt_string(flt)
    return packet(UNSUBSCRIBE, flags, body)


def ack5(ptype, pid, reason=None, properties=None):
    """PUBACK/PUBREC/PUBREL/PUBCOMP at level 5: reason None is the 2-byte
    short form; properties None leaves the Property Length out."""
    body = struct.pack("!H", pid)
    if reason is not None:
        body += bytes([reason])
        if properties is not None:
            body += prop_block(properties)
    return packet(ptype, 0x02 if ptype == PUBREL else 0, body)


def disconnect5(reason=None, properties=None):
    """DISCONNECT at level 5: reason None gives the empty form."""
    body = b""
    if reason is not None:
        body = bytes([reason])
        if properties is not None:
            body += prop_block(properties)
    return packet(DISCONNECT, 0, body)


def auth(reason=None, properties=b""):
    """AUTH (level 5 only): reason None gives the empty form (Success);
    with a reason the Property Length is always written (AUTH has no
    one-byte form), unless properties=None asks for that malformed one."""
    body = b""
    if reason is not None:
        body = bytes([reason])
        if properties is not None:
            body += prop_block(properties)
    return packet(AUTH, 0, body)


def pingreq():
    return packet(PINGREQ, 0, b"")


def disconnect():
    return packet(DISCONNECT, 0, b"")


# --------------------------------------------------------------------------
# Decoding


class Packet:
    """One received control packet."""

    def __init__(self, ptype, flags, body):
        self.type = ptype
        self.flags = flags
        self.body = body

    def __repr__(self):
        name = TYPE_NAMES.get(self.type, str(self.type))
        return "<%s flags=%#x body=%r>" % (name, self.flags, self.body[:40])

    # PUBLISH
    @property
    def qos(self):
        return (self.flags >> 1) & 3

    @property
    def retain(self):
        return bool(self.flags & 1)

    @property
    def dup(self):
        return bool(self.flags & 8)

    def _publish_fields(self):
        assert self.type == PUBLISH, self
        (tlen,) = struct.unpack_from("!H", self.body, 0)
        topic = self.body[2:2 + tlen].decode("utf-8")
        pos = 2 + tlen
        pid = None
        if self.qos > 0:
            (pid,) = struct.unpack_from("!H", self.body, pos)
            pos += 2
        return topic, pid, self.body[pos:]

    @property
    def topic(self):
        return self._publish_fields()[0]

    @property
    def payload(self):
        return self._publish_fields()[2]

    # PUBLISH (qos>0), PUBACK, PUBREC, PUBREL, PUBCOMP, SUBACK, UNSUBACK
    @property
    def pid(self):
        if self.type == PUBLISH:
            return self._publish_fields()[1]
        (pid,) = struct.unpack_from("!H", self.body, 0)
        return pid

    # CONNACK
    @property
    def session_present(self):
        assert self.type == CONNACK, self
        return bool(self.body[0] & 1)

    @property
    def return_code(self):
        assert self.type == CONNACK, self
        return self.body[1]

    # SUBACK
    @property
    def granted(self):
        assert self.type == SUBACK, self
        return list(self.body[2:])

    def v5(self):
        """Decode this packet as MQTT 5.0 (section 3): a V5 with the reason
        code(s), the properties and, for PUBLISH, topic, pid and payload.
        The short forms decode as the spec says (reason 0, no properties)."""
        b = self.body
        if self.type == CONNACK:
            props, _ = parse_props(b, 2)
            return V5(session_present=bool(b[0] & 1), reason=b[1], props=props)
        if self.type in (PUBACK, PUBREC, PUBREL, PUBCOMP):
            (pid,) = struct.unpack_from("!H", b, 0)
            reason = b[2] if len(b) > 2 else 0
            props = parse_props(b, 3)[0] if len(b) > 3 else Props([])
            return V5(pid=pid, reason=reason, props=props)
        if self.type in (DISCONNECT, AUTH):
            reason = b[0] if b else 0
            props = parse_props(b, 1)[0] if len(b) > 1 else Props([])
            return V5(reason=reason, props=props)
        if self.type in (SUBACK, UNSUBACK):
            (pid,) = struct.unpack_from("!H", b, 0)
            props, pos = parse_props(b, 2)
            return V5(pid=pid, props=props, reasons=list(b[pos:]))
        if self.type == PUBLISH:
            topic, pos = _read_string(b, 0)
            pid = None
            if self.qos > 0:
                (pid,) = struct.unpack_from("!H", b, pos)
                pos += 2
            props, pos = parse_props(b, pos)
            return V5(topic=topic.decode("utf-8"), pid=pid, props=props,
                      payload=bytes(b[pos:]))
        return V5()


# --------------------------------------------------------------------------
# MQTT 5.0 decoding


def _read_varint(buf, pos):
    value, shift = 0, 0
    for _ in range(4):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
    raise ValueError("malformed variable byte integer from peer")


def _read_string(buf, pos):
    (n,) = struct.unpack_from("!H", buf, pos)
    return bytes(buf[pos + 2:pos + 2 + n]), pos + 2 + n


class Props:
    """A decoded property block: items is [(id, value), ...] in wire order;
    strings are str, binary data bytes, a user property a (key, value)
    tuple of str."""

    def __init__(self, items):
        self.items = items

    def get(self, pid, default=None):
        for k, v in self.items:
            if k == pid:
                return v
        return default

    def all(self, pid):
        return [v for k, v in self.items if k == pid]

    def __contains__(self, pid):
        return any(k == pid for k, _ in self.items)

    @property
    def user(self):
        return self.all(USER_PROPERTY)

    def __repr__(self):
        return "Props(%r)" % self.items


def parse_props(buf, pos):
    """The property block at buf[pos:]: (Props, position after it)."""
    length, pos = _read_varint(buf, pos)
    end = pos + length
    if end > len(buf):
        raise ValueError("property block runs past the packet")
    items = []
    while pos < end:
        pid = buf[pos]
        pos += 1
        kind = PROP_TYPES.get(pid)
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
        elif kind == "pair":
            k, pos = _read_string(buf, pos)
            v, pos = _read_string(buf, pos)
            value = (k.decode("utf-8"), v.decode("utf-8"))
        elif kind == "str":
            raw, pos = _read_string(buf, pos)
            value = raw.decode("utf-8")
        elif kind == "bin":
            value, pos = _read_string(buf, pos)
        else:
            raise ValueError("unknown property id %#x from peer" % pid)
        items.append((pid, value))
    if pos != end:
        raise ValueError("property runs past its block")
    return Props(items), end


class V5:
    """The level-5 fields of a received packet (see Packet.v5)."""

    def __init__(self, **fields):
        self.reason = None      # CONNACK, acks, DISCONNECT, AUTH
        self.reasons = []       # SUBACK, UNSUBACK
        self.props = Props([])
        self.session_present = False
        self.pid = None
        self.topic = None
        self.payload = None
        self.__dict__.update(fields)

    def __repr__(self):
        return "V5(%r)" % self.__dict__


class Closed(Exception):
    """The peer closed the connection (EOF or reset)."""


def _try_parse(buf):
    """Return (Packet, bytes consumed) or (None, 0) if buf is incomplete."""
    if len(buf) < 2:
        return None, 0
    mult = 1
    length = 0
    pos = 1
    while True:
        if pos >= len(buf):
            return None, 0
        byte = buf[pos]
        length += (byte & 0x7F) * mult
        mult *= 128
        pos += 1
        if not byte & 0x80:
            break
        if pos > 4:
            raise ValueError("malformed remaining length from peer")
    if len(buf) < pos + length:
        return None, 0
    return Packet(buf[0] >> 4, buf[0] & 0x0F, bytes(buf[pos:pos + length])), pos + length


class RawClient:
    """A TCP connection speaking hand-built MQTT.

    rcvbuf: SO_RCVBUF set before connect (the kernel may round it), to make a
    consumer whose receive window fills quickly.
    tls: an ssl.SSLContext to speak MQTT over (mutual) TLS, the handshake
    done here; the server's certificate is checked for "localhost".
    """

    def __init__(self, host, port, rcvbuf=None, timeout=5.0, tls=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect((host, port))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls is not None:
                self.sock = tls.wrap_socket(self.sock, server_hostname="localhost")
        except BaseException:
            self.sock.close()
            raise
        self.buf = bytearray()
        self.closed = False

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        """Read more bytes into the buffer; raises Closed on EOF/reset and
        TimeoutError at the deadline."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no data from broker in time")
        # TLS: bytes already decrypted wait in the SSL object, not the socket.
        pending = getattr(self.sock, "pending", None)
        if not (pending and pending()):
            ready, _, _ = select.select([self.sock], [], [], remaining)
            if not ready:
                raise TimeoutError("no data from broker in time")
        # A readable TLS socket may hold only part of a record, or a record
        # with no application data (a session ticket): recv then waits, but
        # no longer than this read's deadline.
        saved = self.sock.gettimeout()
        self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("no data from broker in time")
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                ssl.SSLEOFError, ssl.SSLZeroReturnError) as e:
            self.closed = True
            raise Closed(str(e))
        finally:
            self.sock.settimeout(saved)
        if not data:
            self.closed = True
            raise Closed("EOF")
        self.buf += data

    def recv_packet(self, timeout=5.0):
        """Next packet; TimeoutError if none within timeout; Closed on EOF."""
        deadline = time.monotonic() + timeout
        while True:
            pkt, used = _try_parse(self.buf)
            if pkt is not None:
                del self.buf[:used]
                return pkt
            self._fill(deadline)

    def expect(self, ptype, timeout=5.0):
        """Next packet, asserting its type."""
        pkt = self.recv_packet(timeout)
        assert pkt.type == ptype, "expected %s, got %r" % (TYPE_NAMES[ptype], pkt)
        return pkt

    def connect(self, timeout=5.0, **kwargs):
        """Send CONNECT, return the CONNACK packet."""
        self.send(connect(**kwargs))
        return self.expect(CONNACK, timeout)

    def subscribe(self, filters, pid=1, timeout=5.0):
        """Send SUBSCRIBE, return the granted QoS list from SUBACK.
        PUBLISHes arriving before the SUBACK are not expected here."""
        self.send(subscribe(pid, filters))
        ack = self.expect(SUBACK, timeout)
        assert ack.pid == pid
        return ack.granted

    def wait_closed(self, timeout=5.0):
        """Read (and collect) packets until the broker closes the connection.
        Returns the packets received before the close; raises TimeoutError
        if the connection is still open after timeout."""
        deadline = time.monotonic() + timeout
        got = []
        while True:
            try:
                got.append(self.recv_packet(max(deadline - time.monotonic(), 0.0)))
            except Closed:
                return got
            except ValueError:
                # Garbage from the broker is a failure of its own.
                raise

    def is_open_after_ping(self, timeout=5.0):
        """PINGREQ and wait for PINGRESP; False if the connection was closed.
        Packets other than PINGRESP received meanwhile are returned to the
        caller via self.pending."""
        self.pending = []
        try:
            self.send(pingreq())
        except (BrokenPipeError, ConnectionResetError):
            return False
        deadline = time.monotonic() + timeout
        try:
            while True:
                pkt = self.recv_packet(max(deadline - time.monotonic(), 0.0))
                if pkt.type == PINGRESP:
                    return True
                self.pending.append(pkt)
        except Closed:
            return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def abort(self):
        """Close with a TCP reset (SO_LINGER 0): the rudest possible exit."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def sys_shows(host, port, topic, want, timeout=5):
    """Whether the $SYS topic shows `want` (bytes) within timeout: it is
    republished every sys.interval, so a changed counter shows up on a
    later refresh."""
    c = RawClient(host, port)
    try:
        assert c.connect(client_id="sys-reader").return_code == 0
        c.send(subscribe(1, [(topic, 0)]))
        c.expect(SUBACK)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if c.expect(PUBLISH, timeout=deadline - time.monotonic()).payload == want:
                    return True
            except TimeoutError:
                break
        return False
    finally:
        c.close()
