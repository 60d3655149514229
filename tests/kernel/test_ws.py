"""MQTT over WebSocket in the kernel (listener.wss and listener.ws, the
connection layer's WebSocket layer, src/conn/ws.c): the production kernel
with a bundle whose configuration has no listener.tls (the TLS context is
built for listener.wss alone), two host ports forwarded to the guest's
wss and ws ports. MQTT.js (tests/integration/js/ws.js) over wss:// with
the dev client certificate: QoS 0/1/2, a retained message, a will and a
message larger than one server frame; a raw client whose unmasked frame
gets close 1002 while another raw client on the same listener goes on;
a raw client over ws:// gets its CONNACK; stalled handshakes on the wss
port meet the per-address handshake limit at the SYN gate while ws is
still served.
"""
import base64
import json
import os
import socket
import ssl
import struct
import subprocess
import time

from clients import mqtt_connect_packet
from harness import (MTLS_ACL, REPO, Failure, Pki, expect_lines, free_port, make_bundle,
                     module_vm, scratch, show)

WS_CONF = """config_version = 1
listener.wss = 0.0.0.0:8081
listener.ws = 0.0.0.0:8080
auth.allow_anonymous = true
tls.cert = pki/server.crt
tls.key = pki/server.key
tls.client_ca = pki/ca.crt
tls.handshake_timeout = 10
acl.file = tern.acl
limits.max_handshakes_per_address = 3
"""
JS_DIR = os.path.join(REPO, "tests", "integration", "js")
BIG = 100000  # more than one 64 KiB server frame
PINGREQ, PINGRESP = b"\xc0\x00", b"\xd0\x00"
HALF_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"  # a stalled ClientHello


def syn_gate(wss, ws):
    """Handshakes on the wss port count against the TLS handshake budget
    (limits.max_handshakes_per_address = 3: a fourth stalled one's SYN is
    dropped: no answer, no reset), ws connections do not (a client over
    ws is served meanwhile)."""
    stalled = []
    try:
        for _ in range(4):
            s = socket.create_connection(("127.0.0.1", wss), timeout=20)
            s.sendall(HALF_HELLO)
            stalled.append(s)
        stalled[-1].settimeout(3)
        try:
            data = stalled[-1].recv(1)
            raise Failure(f"fourth wss handshake from one address answered or closed: {data!r}")
        except socket.timeout:
            pass
        except ConnectionResetError:
            raise Failure("fourth wss handshake from one address was reset, not dropped")
        plain = WsClient(ws)
        plain.upgrade()
        plain.mqtt(mqtt_connect_packet("ws-during-stall"), b"\x20\x02\x00\x00")
        plain.sock.close()
    finally:
        for s in stalled:
            s.close()


def frame(payload, op=2, masked=True):
    """One final client frame (RFC 6455 5.2), masked unless told."""
    n = len(payload)
    m = 0x80 if masked else 0
    head = bytes([0x80 | op])
    if n < 126:
        head += bytes([m | n])
    else:
        head += bytes([m | 126]) + struct.pack("!H", n)
    if not masked:
        return head + payload
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


class WsClient:
    """A raw WebSocket client (over TLS when ctx is given): the upgrade,
    frames out, server frames in."""

    def __init__(self, port, ctx=None):
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.sock = ctx.wrap_socket(s, server_hostname="localhost") if ctx else s
        self.buf = b""

    def upgrade(self):
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /mqtt HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: " + key + "\r\n"
                           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n"
                           "\r\n").encode())
        while b"\r\n\r\n" not in self.buf:
            more = self.sock.recv(4096)
            if not more:
                raise Failure(f"closed during the upgrade: {self.buf!r}")
            self.buf += more
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise Failure(f"upgrade refused: {head!r}")

    def _need(self, n):
        while len(self.buf) < n:
            more = self.sock.recv(65536)
            if not more:
                raise Failure(f"closed with {len(self.buf)} of {n} bytes")
            self.buf += more

    def read_frame(self):
        """(opcode, payload) of the next server frame (not masked)."""
        self._need(2)
        b1 = self.buf[1]
        if b1 & 0x80:
            raise Failure("a masked server frame")
        n, at = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, at = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
        self._need(at + n)
        op, payload, self.buf = self.buf[0] & 0x0F, self.buf[at:at + n], self.buf[at + n:]
        return op, payload

    def mqtt(self, packet, want):
        """Send packet in one frame; the next data frame must be want."""
        self.sock.sendall(frame(packet))
        op, p = self.read_frame()
        if (op, p[:len(want)]) != (2, want):
            raise Failure(f"wanted {want!r} in a binary frame, got opcode {op}: {p[:40]!r}")

    def read_close(self):
        """The close frame's code, then the end of the connection."""
        op, p = self.read_frame()
        if op != 8 or len(p) < 2:
            raise Failure(f"wanted a close frame, got opcode {op}: {p[:40]!r}")
        try:
            rest = self.sock.recv(1)
        except (ConnectionResetError, ssl.SSLError):
            rest = b""
        if rest:
            raise Failure(f"bytes after the close frame: {rest!r}")
        return struct.unpack("!H", p[:2])[0]


def mqttjs(url, pki):
    """ws.js's scenario over url with the dev client certificate: what the
    subscriber received, by the topic's last level."""
    args = {"url": url, "ca": pki.path("ca.crt"), "cert": pki.path("dev-client.crt"),
            "key": pki.path("dev-client.key"), "big": BIG, "topic": "test/ws", "timeout": 40}
    res = subprocess.run(["node", os.path.join(JS_DIR, "ws.js"), json.dumps(args)],
                         capture_output=True, timeout=60, cwd=JS_DIR)
    lines = [l for l in res.stdout.decode().splitlines() if l.startswith("{")]
    if res.returncode != 0 or not lines:
        raise Failure(f"ws.js failed (rc {res.returncode}): {res.stdout.decode()[-1500:]} "
                      f"{res.stderr.decode()[-1500:]}")
    return {m["topic"].rsplit("/", 1)[1]: m for m in json.loads(lines[-1])["received"]}


def check_mqttjs(by):
    ok = (by.get("retained", {}).get("retain") and by["retained"]["payload"] == "kept" and
          [by.get(f"q{q}", {}).get("payload") for q in range(3)] == ["qos0", "qos1", "qos2"] and
          by["q1"]["qos"] == 1 and by["q2"]["qos"] == 2 and
          by.get("big", {}).get("len") == BIG and by["big"]["intact"] and
          by.get("will", {}).get("payload") == "gone")
    if not ok:
        raise Failure(f"MQTT.js over wss received: {by!r}")


def ws_test(kernel, build):
    """listener.wss alone with TLS (no listener.tls) and listener.ws: MQTT.js
    over wss with a client certificate, a malformed frame closing only its
    connection, a client over ws."""
    def check():
        if not os.path.isdir(os.path.join(JS_DIR, "node_modules", "mqtt")):
            raise Failure("MQTT.js not installed (make setup: npm ci in tests/integration/js)")
        notes = []
        with scratch() as tmp:
            pki = Pki(build)
            wss, ws = free_port(), free_port()
            vm = module_vm(kernel, make_bundle(build, tmp, WS_CONF, MTLS_ACL),
                           ["-nic", "user,model=virtio-net-pci,"
                            f"hostfwd=tcp:127.0.0.1:{wss}-:8081,"
                            f"hostfwd=tcp:127.0.0.1:{ws}-:8080"])
            with vm:
                try:
                    took, out = vm.wait_ready(60)
                    expect_lines(out, (rb"tern: mqtt: ws port 8080, wss port 8081, "
                                       rb"0 connections",))
                    notes.append(f"ready {took:.1f} s")
                    t0 = time.monotonic()
                    ctx = pki.context("dev-client")
                    good = WsClient(wss, ctx)
                    good.upgrade()
                    good.mqtt(mqtt_connect_packet("ws-good"), b"\x20\x02\x00\x00")
                    bad = WsClient(wss, ctx)
                    bad.upgrade()
                    bad.sock.sendall(frame(mqtt_connect_packet("ws-bad"), masked=False))
                    code = bad.read_close()
                    if code != 1002:
                        raise Failure(f"an unmasked frame got close {code}, not 1002")
                    good.mqtt(PINGREQ, PINGRESP)  # the other connection goes on
                    notes.append("unmasked frame: close 1002, the other client unaffected")
                    check_mqttjs(mqttjs(f"wss://127.0.0.1:{wss}/mqtt", pki))
                    notes.append(f"MQTT.js over wss: QoS 0/1/2, retained, will, {BIG} B")
                    plain = WsClient(ws)
                    plain.upgrade()
                    plain.mqtt(mqtt_connect_packet("ws-plain"), b"\x20\x02\x00\x00")
                    good.mqtt(PINGREQ, PINGRESP)
                    notes.append("ws ok")
                    good.sock.close()
                    plain.sock.close()
                    syn_gate(wss, ws)
                    notes.append("fourth stalled wss handshake: SYN dropped; ws served "
                                 f"meanwhile; clients {time.monotonic() - t0:.1f} s")
                except OSError as e:
                    raise Failure(f"{e!r} after: {'; '.join(notes)}; serial output ends:\n" +
                                  show(vm.text()[-3000:]))
                vm.expect_no_fatal()
        return "; ".join(notes)
    return check


def cases(b):
    return {"mqtt-ws": ws_test(b.elf, b.dir)}
