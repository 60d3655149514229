"""Raw MQTT 3.1.1 packets over a plain socket, for the integration tests only.

Real clients (mosquitto_pub/sub, Paho) are used wherever they can produce the
situation under test. This module is for what they cannot do: malformed or
out-of-order packets, a client that goes silent or stops reading, exact
control over packet ids, flags and socket buffer sizes.

Building: the functions below return whole packets as bytes; they take
keyword arguments that override any field, so a test can build a packet that
is wrong in exactly one way.

Reading: RawClient.recv_packet() returns a Packet (type, flags, body) with
helpers to decode the fields of the packet types a broker sends.
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

TYPE_NAMES = {
    CONNECT: "CONNECT", CONNACK: "CONNACK", PUBLISH: "PUBLISH",
    PUBACK: "PUBACK", PUBREC: "PUBREC", PUBREL: "PUBREL",
    PUBCOMP: "PUBCOMP", SUBSCRIBE: "SUBSCRIBE", SUBACK: "SUBACK",
    UNSUBSCRIBE: "UNSUBSCRIBE", UNSUBACK: "UNSUBACK", PINGREQ: "PINGREQ",
    PINGRESP: "PINGRESP", DISCONNECT: "DISCONNECT",
}


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
            connect_flags=None, header_flags=0):
    """CONNECT. will = (topic, payload, qos, retain) or None.
    connect_flags overrides the computed flags byte (reserved bit tests)."""
    flags = 0
    payload = mqtt_string(client_id)
    if clean:
        flags |= 0x02
    if will is not None:
        wtopic, wpayload, wqos, wretain = will
        flags |= 0x04 | (wqos << 3) | (0x20 if wretain else 0)
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
