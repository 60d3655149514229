"""The host's side of the broker tests: no tests of its own.

MQTT clients run against a port forwarded to the guest: raw sockets (plain
or mutual TLS; the integration tests' rawmqtt client over mutual TLS for
exact QoS flows), the unmodified mosquitto_pub/mosquitto_sub, Paho (through
paho_check.py and the system Python), $SYS memory readings, and the
message checks that the plaintext and the mutual-TLS broker tests both
make (QoS 0/1/2, a 300 kB message, retained, will, idle connections
answering PINGREQ).
"""
import os
import socket
import subprocess
import sys
import threading
import time

from harness import HERE, REPO, Failure, Pki, make_bundle, scratch, show, tls_vm

# Appended, not prepended: tests/integration has test modules of the same
# names as this directory's (test_config.py), which must stay these.
sys.path.append(os.path.join(REPO, "tests", "integration"))
import rawmqtt as rm  # noqa: E402  (the integration tests' raw MQTT client, TLS capable)

PAHO_CHECK = os.path.join(HERE, "paho_check.py")
CORE_MEMORY = "$SYS/broker/memory/core"
CONNACK_OK = b"\x20\x02\x00\x00"
PINGREQ, PINGRESP = b"\xc0\x00", b"\xd0\x00"


def remaining_length(n):
    """MQTT's variable-length encoding of a packet's remaining length."""
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def mtls_broker_check(kernel, build, conf, body):
    """A test: the kernel booted with a boot bundle of conf (with the test
    ACL and the dev PKI), a host port forwarded to its mutual-TLS listener,
    and body(vm, tmp, pki, cl, notes) run against it (cl: dev-client's
    clients). Socket and TLS errors become a Failure showing what the guest
    said; the notes are the report."""
    def check():
        notes = []
        with scratch() as tmp:
            pki = Pki(build)
            vm, port = tls_vm(kernel, make_bundle(build, tmp, conf))
            with vm, Clients(port, pki.args("dev-client")) as cl:
                try:
                    body(vm, tmp, pki, cl, notes)
                except OSError as e:
                    raise Failure(f"{e!r} after: {'; '.join(notes)}; serial output ends:\n" +
                                  show(vm.text()[-3000:]))
        return "; ".join(notes)
    return check


def mqtt_connect_packet(client_id, clean=True):
    """An MQTT 3.1.1 CONNECT with a 60 s keepalive, a clean session unless
    clean is False (a persistent one)."""
    cid = client_id.encode()
    flags = b"\x02" if clean else b"\x00"
    body = b"\x00\x04MQTT\x04" + flags + b"\x00\x3c" + len(cid).to_bytes(2, "big") + cid
    return bytes([0x10, len(body)]) + body


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise Failure(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def raw_client(port, client_id):
    """A connected, idle MQTT client on a plain socket."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(mqtt_connect_packet(client_id))
    ack = recv_exact(s, 4)
    if ack != CONNACK_OK:
        raise Failure(f"{client_id}: CONNACK {ack.hex()}")
    return s


def tls_client(ctx, port, client_id, timeout=30):
    """A full mutual-TLS handshake and MQTT CONNECT/CONNACK; the socket."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(mqtt_connect_packet(client_id))
        ack = recv_exact(s, 4)
    except Exception:
        raw.close()
        raise
    if ack != CONNACK_OK:
        s.close()
        raise Failure(f"{client_id}: CONNACK {ack.hex()}")
    return s


def raw_tls(port, ctx, client_id, clean=True, timeout=30):
    """A rawmqtt client over mutual TLS (ctx: Pki.context), connected as
    client_id with a clean or a persistent session; the client and its
    CONNACK's session-present flag."""
    c = rm.RawClient("127.0.0.1", port, timeout=timeout, tls=ctx)
    try:
        ack = next_packet(c, rm.CONNACK, f"{client_id}: CONNACK", timeout, rm.connect(
            client_id=client_id, clean=clean))
    except BaseException:
        c.close()
        raise
    if ack.return_code != 0:
        c.close()
        raise Failure(f"{client_id}: CONNACK return code {ack.return_code}")
    return c, ack.session_present


def next_packet(c, ptype, what, timeout=30, send=None):
    """Send send (if given), then the next packet from rawmqtt client c,
    which must be of type ptype; a Failure naming what otherwise."""
    try:
        if send is not None:
            c.send(send)
        pkt = c.recv_packet(timeout)
    except (rm.Closed, OSError) as e:
        raise Failure(f"{what}: {e!r}")
    if pkt.type != ptype:
        raise Failure(f"{what}: expected {rm.TYPE_NAMES[ptype]}, got {pkt!r}")
    return pkt


def expect_pings(socks):
    """Every connection answers a PINGREQ."""
    for s in socks:
        s.sendall(PINGREQ)
    for s in socks:
        if recv_exact(s, 2) != PINGRESP:
            raise Failure("an idle connection did not answer PINGREQ")


def expect_closed(sock, what, timeout=10):
    """The broker closes sock (EOF or reset) within timeout; seconds taken."""
    t0 = time.monotonic()
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                break
    except (ConnectionResetError, BrokenPipeError):
        pass
    except socket.timeout:
        raise Failure(f"{what}: still open after {timeout} s")
    return time.monotonic() - t0


def mosq(tool, port, *args, timeout=30, tls=(), check=True):
    """Run mosquitto_pub/sub against the forwarded port; tls: the --cafile,
    --cert, --key arguments of an identity (empty: plaintext)."""
    r = subprocess.run([tool, "-h", "127.0.0.1", "-p", str(port)] + list(tls) + list(args),
                       capture_output=True, timeout=timeout)
    if check and r.returncode != 0:
        raise Failure(f"{tool} {' '.join(args)}: exit {r.returncode}: "
                      f"{show(r.stdout + r.stderr)}")
    if not check:
        return r
    return r.stdout.decode("utf-8", "replace")


class Sub:
    """mosquitto_sub in the background, lines collected; synced() returns
    once its subscriptions are in place (a message on `sync` came back)."""

    def __init__(self, port, topics, extra=(), tls=(), sync="sync"):
        self.port = port
        self.tls = list(tls)
        self.sync = sync
        args = ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-q", "2",
                "-F", "%q %r %t %p", "-t", sync] + self.tls + list(extra)
        for t in topics:
            args += ["-t", t]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self.lines):
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        with self.lock:
            raise Failure(f"{what}: subscriber got {self.lines}")

    def synced(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            mosq("mosquitto_pub", self.port, "-t", self.sync, "-m", "s", tls=self.tls)
            try:
                self.wait(lambda ls: any(f" {self.sync} " in l for l in ls), 1, "sync")
                return
            except Failure:
                pass
        raise Failure("subscriber never saw its sync message")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(2)


class Clients:
    """The subscribers and sockets one test opens against one broker (port,
    with tls the mosquitto arguments of its identity); all of them closed
    on leaving the with block."""

    def __init__(self, port, tls=()):
        self.port, self.tls = port, list(tls)
        self.subs, self.socks = [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close_socks()
        for sub in self.subs:
            sub.stop()

    def close_socks(self):
        for s in self.socks:
            s.close()
        self.socks.clear()

    def sub(self, topics, extra=()):
        """A subscriber whose subscriptions are in place."""
        sub = Sub(self.port, topics, extra, tls=self.tls)
        self.subs.append(sub)
        sub.synced()
        return sub

    def pub(self, *args):
        return mosq("mosquitto_pub", self.port, *args, tls=self.tls)

    def pubsub(self, tmp, big_timeout):
        """QoS 0/1/2 (delivered at the publisher's QoS), then a 300 kB
        message larger than lwIP's send buffer (many pbufs in, many partial
        writes out, resumed from the sent callback), byte for byte; the
        subscriber on test/#."""
        sub = self.sub(["test/#"])
        for q in (0, 1, 2):
            self.pub("-t", f"test/q{q}", "-m", f"hello {q}", "-q", str(q))
        want = [f"{q} 0 test/q{q} hello {q}" for q in (0, 1, 2)]
        sub.wait(lambda ls: all(w in ls for w in want), 20, "QoS 0/1/2 messages")

        big = os.path.join(tmp, "big")
        payload = "".join(f"{i:07d}," for i in range(37500))  # 300000 bytes, one line
        with open(big, "w") as f:
            f.write(payload)
        self.pub("-t", "test/big", "-f", big, "-q", "1")
        sub.wait(lambda ls: any(l.startswith("1 0 test/big ") for l in ls), big_timeout,
                 "300 kB")
        line = [l for l in sub.lines if l.startswith("1 0 test/big ")][0]
        if line != "1 0 test/big " + payload:
            raise Failure(f"300 kB message arrived altered ({len(line)} characters)")
        return sub

    def retained(self, topic, filter):
        """A retained message reaches a later subscriber, flagged retained."""
        self.pub("-t", topic, "-m", "keep", "-r", "-q", "1")
        got = mosq("mosquitto_sub", self.port, "-t", filter, "-C", "1", "-W", "20",
                   "-F", "%r %t %p", tls=self.tls).strip()
        if got != f"1 {topic} keep":
            raise Failure(f"retained: got {got!r}")

    def will(self):
        """A will on abnormal disconnect (the client is killed)."""
        watch = self.sub(["will/#"])
        victim = self.sub(["nothing"], ["-i", "victim", "--will-topic", "will/victim",
                                        "--will-payload", "gone", "--will-qos", "1"])
        victim.proc.kill()
        watch.wait(lambda ls: "1 0 will/victim gone" in ls, 20, "will")


def paho(port, *tls_files):
    """paho_check.py (a persistent session at QoS 2; over mutual TLS with
    tls_files: CA, certificate, key) if the system Python has Paho
    (python3-paho-mqtt); False if it has not."""
    if subprocess.run(["/usr/bin/python3", "-c", "import paho.mqtt"],
                      capture_output=True).returncode != 0:
        return False
    r = subprocess.run(["/usr/bin/python3", PAHO_CHECK, str(port), *tls_files],
                       capture_output=True, timeout=90)
    if r.returncode != 0 or r.stdout.strip() != b"ok":
        raise Failure("paho: " + show(r.stdout + r.stderr))
    return True


def sys_value(port, tls, topic):
    """The retained integer value of a $SYS topic, read as tls (mosquitto
    arguments of an identity allowed to read $SYS)."""
    out = mosq("mosquitto_sub", port, "-t", topic, "-C", "1", "-W", "20", tls=tls)
    return int(out.strip())


def sys_memory(port, tls=(), topic="$SYS/broker/memory/used"):
    return sys_value(port, tls, topic)


def settle_memory(port, tls=(), topic="$SYS/broker/memory/used"):
    """A $SYS memory figure once it holds still (it is refreshed every
    second): two equal readings a refresh apart."""
    last = sys_memory(port, tls, topic)
    for _ in range(10):
        time.sleep(1.2)
        cur = sys_memory(port, tls, topic)
        if cur == last:
            return cur
        last = cur
    return last
