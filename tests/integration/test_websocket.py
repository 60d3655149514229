"""MQTT over WebSocket (listener.ws, listener.wss; RFC 6455, src/conn/ws.c).

MQTT.js (js/ws.js) over ws:// and over wss:// with a client certificate:
QoS 0/1/2, retained, will, a large message. A raw client checks what
MQTT.js never sends: MQTT packets split over frames and several in one
frame, fragmented messages, ping/pong, the close handshake, bad opening
requests (400 with the reason), and malformed frames (unmasked, text,
oversized, bad UTF-8 close reason, a fragment storm) closing only their
own connection with their close code while another client goes on.
"""

import base64
import hashlib
import json
import os
import re
import socket
import ssl
import struct
import subprocess
import time

import pytest

import rawmqtt as rm
from conftest import HOST, STARTUP_TIMEOUT
from mqtt5clients import JS_DIR, mqttjs_available

pytestmark = pytest.mark.tern_only

_WS_LINE = re.compile(r"listening on [^ ]*:(\d+) \((?:mutual TLS|TLS|plaintext), WebSocket\)")


def ws_port(b):
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        m = _WS_LINE.search(b.stderr_text())
        if m:
            return int(m.group(1))
        assert time.monotonic() < deadline, "no WebSocket listener in the log:\n" + b.stderr_tail()
        time.sleep(0.02)


def ws_broker(broker, **cfg):
    b = broker(config=dict({"listener.ws": "%s:0" % HOST}, **cfg))
    b.ws_port = ws_port(b)
    return b


KEY = base64.b64encode(os.urandom(16)).decode()


def request(key=KEY, protocol="mqtt", extra=""):
    lines = ["GET /mqtt HTTP/1.1", "Host: localhost", "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
    if protocol is not None:
        lines.append("Sec-WebSocket-Protocol: " + protocol)
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def frame(payload, op=2, fin=True, masked=True, rsv=0):
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | rsv | op])
    m = 0x80 if masked else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if not masked:
        return head + payload
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


class WsClient:
    """A raw WebSocket client: the upgrade, frames out, frames in."""

    def __init__(self, port, ctx=None):
        s = socket.create_connection((HOST, port), timeout=5)
        self.sock = ctx.wrap_socket(s, server_hostname="localhost") if ctx else s
        self.buf = b""

    def upgrade(self, req=None):
        self.sock.sendall(req or request())
        while b"\r\n\r\n" not in self.buf:
            more = self.sock.recv(4096)
            if not more:
                break
            self.buf += more
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head.decode(errors="replace")

    def _need(self, n):
        while len(self.buf) < n:
            more = self.sock.recv(65536)
            if not more:
                raise EOFError("closed with %d of %d bytes" % (len(self.buf), n))
            self.buf += more

    def read_frame(self):
        """(fin, opcode, payload) of the next server frame."""
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        assert b1 & 0x80 == 0, "server frames are not masked"
        n, at = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, at = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
        self._need(at + n)
        payload, self.buf = self.buf[at:at + n], self.buf[at + n:]
        return bool(b0 & 0x80), b0 & 0x0F, payload

    def read_mqtt(self, count=1):
        """count MQTT packets from binary frames (packets may span them)."""
        data, out = b"", []
        while len(out) < count:
            fin, op, p = self.read_frame()
            assert op in (0, 2), "unexpected opcode %d" % op
            data += p
            while True:
                pkt, used = rm._try_parse(data)
                if pkt is None:
                    break
                out.append((pkt.type, pkt.body))
                data = data[used:]
        return out

    def read_close(self):
        """The close frame's code, skipping data frames; then the end."""
        while True:
            fin, op, p = self.read_frame()
            if op == 8:
                code = struct.unpack("!H", p[:2])[0] if len(p) >= 2 else None
                self.sock.settimeout(5)
                try:
                    rest = self.sock.recv(1)
                except (ConnectionResetError, ssl.SSLError):
                    rest = b""
                assert rest == b"", "bytes after the close"
                return code

    def send(self, data):
        self.sock.sendall(data)

    def close(self):
        self.sock.close()


def mqtt_client(port, cid):
    c = WsClient(port)
    assert " 101 " in c.upgrade()
    c.send(frame(rm.connect(cid)))
    (ptype, body), = c.read_mqtt()
    assert ptype == rm.CONNACK and body[-1] == 0
    return c


def test_upgrade_answers_with_the_rfc_accept_value_and_mqtt(broker):
    b = ws_broker(broker)
    c = WsClient(b.ws_port)
    head = c.upgrade()
    want = base64.b64encode(hashlib.sha1(
        (KEY + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    assert head.startswith("HTTP/1.1 101 ")
    assert "Sec-WebSocket-Accept: " + want in head
    assert "Sec-WebSocket-Protocol: mqtt" in head
    c.close()


@pytest.mark.parametrize("req,reason", [
    (request(protocol=None), b"mqtt"),
    (request(protocol="mqttv3.1"), b"mqtt"),
    (request(key="short"), b"base64"),
    (request().replace(b"Version: 13", b"Version: 8"), b"13"),
    (request().replace(b"GET", b"PUT"), b"GET"),
    (request(extra="X: " + "a" * 5000 + "\r\n"), b"too large"),
])
def test_bad_opening_requests_get_400_with_the_reason_and_close(broker, req, reason):
    b = ws_broker(broker)
    s = socket.create_connection((HOST, b.ws_port), timeout=5)
    s.sendall(req)
    data = b""
    while True:
        try:
            more = s.recv(4096)
        except ConnectionResetError:
            break
        if not more:
            break
        data += more
    s.close()
    assert data.startswith(b"HTTP/1.1 400 "), data
    assert reason in data.split(b"\r\n\r\n", 1)[1], data


def test_packets_span_frames_and_frames_carry_several_packets(broker):
    b = ws_broker(broker)
    c = WsClient(b.ws_port)
    assert " 101 " in c.upgrade()
    conn = rm.connect("ws-split")
    # CONNECT in three frames, the middle one a fragmented message.
    c.send(frame(conn[:3]) + frame(conn[3:7], fin=False) + frame(conn[7:], op=0))
    (ptype, _), = c.read_mqtt()
    assert ptype == rm.CONNACK
    # SUBSCRIBE and PUBLISH in one frame; a ping between them and the reply.
    c.send(frame(rm.subscribe(1, [("ws/split", 1)]) + rm.publish("ws/split", b"x" * 70000,
                                                                  qos=1, pid=2)))
    got = c.read_mqtt(3)
    assert sorted(p[0] for p in got) == sorted([rm.SUBACK, rm.PUBACK, rm.PUBLISH])
    assert [p[1] for p in got if p[0] == rm.PUBLISH][0].endswith(b"x" * 70000)
    c.send(frame(b"hey", op=9))
    fin, op, p = c.read_frame()
    assert (op, p) == (10, b"hey")
    # Our close gets the close back, with our code, and the end.
    c.send(frame(struct.pack("!H", 1000) + "fin é".encode(), op=8))
    assert c.read_close() == 1000
    c.close()


@pytest.mark.parametrize("name,data,code", [
    ("unmasked", frame(b"\x10", masked=False), 1002),
    ("text", frame(b"hello", op=1), 1003),
    ("reserved bit", frame(b"\x10", rsv=0x40), 1002),
    ("oversized", frame(b"\x30" + b"\0" * 1100), 1009),
    ("bad UTF-8 close reason", frame(struct.pack("!H", 1000) + b"\xc0\xaf", op=8), 1007),
    ("fragment storm", frame(b"", fin=False) + frame(b"", op=0, fin=False) * 5000, 1008),
    ("long ping", frame(b"p" * 126, op=9), 1002),
])
def test_malformed_frames_close_only_their_connection(broker, name, data, code):
    b = ws_broker(broker, limits_max_packet_size=1024)
    good = mqtt_client(b.ws_port, "ws-good")
    good.send(frame(rm.subscribe(1, [("ws/m", 0)])))
    assert good.read_mqtt()[0][0] == rm.SUBACK
    bad = mqtt_client(b.ws_port, "ws-bad-" + name.replace(" ", "-"))
    bad.send(data)
    assert bad.read_close() == code, name
    bad.close()
    good.send(frame(rm.publish("ws/m", b"still here")))
    (ptype, body), = good.read_mqtt()
    assert ptype == rm.PUBLISH and body.endswith(b"still here")
    good.close()
    assert b.alive()


def test_refusals_and_framing_errors_are_counted_on_sys(broker):
    b = ws_broker(broker, sys_interval=1)
    s = socket.create_connection((HOST, b.ws_port), timeout=5)
    s.sendall(request(protocol=None))
    assert s.recv(4096).startswith(b"HTTP/1.1 400 ")
    s.close()
    bad = mqtt_client(b.ws_port, "ws-counted")
    bad.send(frame(b"hello", op=1))
    assert bad.read_close() == 1003
    bad.close()
    assert rm.sys_shows(b.host, b.port, "$SYS/broker/connections/websocket_refused", b"1")
    assert rm.sys_shows(b.host, b.port, "$SYS/broker/connections/websocket_errors", b"1")


def test_an_unanswered_opening_request_counts_as_buffered_input(broker):
    """The request's buffer is input held for a client that has not even
    sent MQTT yet: limits.max_input_bytes must see it."""
    b = ws_broker(broker, sys_interval=1)
    socks = []
    for _ in range(2):
        s = socket.create_connection((HOST, b.ws_port), timeout=5)
        s.sendall(request(extra="X-Pad: " + "a" * 2000 + "\r\n")[:1000])
        socks.append(s)
    assert rm.sys_shows(b.host, b.port, "$SYS/broker/connections/input_bytes", b"%d" % 2000)
    for s in socks:
        s.close()


def _node(args):
    ok, why = mqttjs_available()
    if not ok:
        pytest.skip(why)
    res = subprocess.run(["node", os.path.join(JS_DIR, "ws.js"), json.dumps(args)],
                         capture_output=True, timeout=40, cwd=JS_DIR)
    lines = [l for l in res.stdout.decode().splitlines() if l.startswith("{")]
    assert res.returncode == 0 and lines, "ws.js failed (rc %s): %s %s" % (
        res.returncode, res.stdout.decode()[-2000:], res.stderr.decode()[-2000:])
    return json.loads(lines[-1])


def _check_mqttjs(r, big):
    by = {m["topic"].rsplit("/", 1)[1]: m for m in r["received"]}
    assert by["retained"]["retain"] and by["retained"]["payload"] == "kept"
    assert [by["q%d" % q]["payload"] for q in range(3)] == ["qos0", "qos1", "qos2"]
    assert by["q2"]["qos"] == 2 and by["q1"]["qos"] == 1
    assert by["big"]["len"] == big and by["big"]["intact"]
    assert by["will"]["payload"] == "gone"


def test_mqttjs_over_ws_qos_retained_will_and_large_messages(broker):
    b = ws_broker(broker)
    big = 300000  # more than one 64 KiB server frame
    r = _node({"url": "ws://%s:%d/mqtt" % (HOST, b.ws_port), "big": big})
    _check_mqttjs(r, big)


def test_mqttjs_over_wss_with_a_client_certificate(tls):
    b = tls.start(config={"listener.wss": "%s:0" % HOST, "auth.allow_anonymous": "false"})
    port = ws_port(b)
    crt, key = tls.pki.cert("dev-client")
    big = 200000
    r = _node({"url": "wss://%s:%d/mqtt" % (HOST, port), "ca": tls.pki.ca, "cert": crt,
               "key": key, "big": big})
    _check_mqttjs(r, big)
    assert "identity dev-client" in b.stderr_text()


def test_wss_without_a_client_certificate_is_refused(tls):
    b = tls.start(config={"listener.wss": "%s:0" % HOST})
    port = ws_port(b)
    with pytest.raises((ssl.SSLError, ConnectionResetError, EOFError, BrokenPipeError)):
        c = WsClient(port, tls.context())
        c.upgrade()
        c.send(frame(rm.connect("nocert")))
        c.read_mqtt()


def test_broker_side_close_sends_a_close_frame_first(broker):
    # After DISCONNECT the core closes the connection: the WebSocket peer
    # gets a close frame (1000) before the end, not a bare TCP close.
    b = ws_broker(broker)
    c = mqtt_client(b.ws_port, "ws-bye")
    c.send(frame(rm.disconnect()))
    assert c.read_close() == 1000
    c.close()
