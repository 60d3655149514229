"""Bridges (issue 20, SPEC C7, ADR-060): ternd connects out to a remote
broker and relays topics both ways.

The remote is Debian's real Mosquitto, started here on a free loopback port
(with persistence in the test's directory, so a restart keeps what it
acknowledged), or a second ternd for tern-to-tern over mutual TLS. A small
TCP proxy in the test stands between the bridge and the remote when the
network is to be cut and restored.

The tests marked with PROTOCOLS run twice: the bridge speaking MQTT 3.1.1
to the remote (the default, loop prevention by the 0x80 bridge bit) and
MQTT 5.0 (bridge.NAME.protocol = 5: No Local on its remote subscriptions,
properties carried through).
"""

import os
import pwd
import socket
import subprocess
import threading
import time

import pytest

from conftest import HOST, IS_MOSQUITTO, MOSQUITTO_BIN, free_port
from mqttclients import PahoClient, wait_until
from mqtt5clients import Paho5, make_props
from paho.mqtt.packettypes import PacketTypes

pytestmark = pytest.mark.tern_only  # ternd is the bridging side

# The bridge retries quickly in tests (reconnect_min 1 s, max 2 s).
FAST = {"reconnect_min": 1, "reconnect_max": 2, "keepalive": 5}

# bridge.NAME.protocol toward the remote, for the tests run at both.
PROTOCOLS = pytest.mark.parametrize("protocol", ["3.1.1", "5"])


class Mosquitto:
    """A Mosquitto on a fixed port, restartable with its persistence."""

    def __init__(self, tmp_path, extra=""):
        self.port = free_port()
        self.dir = str(tmp_path)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "mosq.conf")
        with open(self.conf, "w") as f:
            f.write("listener %d %s\nallow_anonymous true\npersistence true\n"
                    "persistence_location %s/\nautosave_interval 1\n"
                    "max_queued_messages 100000\nlog_dest stderr\n"
                    # Stay the test's user: as root Mosquitto would become
                    # "mosquitto", who cannot write the test's directory.
                    "user %s\n" % (self.port, HOST, self.dir, pwd.getpwuid(os.getuid()).pw_name)
                    + extra)
        self.proc = None
        self.start()

    def start(self):
        self.log = open(os.path.join(self.dir, "mosq.log"), "ab")
        self.proc = subprocess.Popen([MOSQUITTO_BIN, "-c", self.conf], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("mosquitto did not start")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: it saves its persistence file
            self.proc.wait(timeout=10)
        self.proc = None
        self.log.close()


@pytest.fixture
def mosquitto(tmp_path):
    if IS_MOSQUITTO:
        pytest.skip("the bridging side is ternd")
    m = Mosquitto(tmp_path / "mosq")
    yield m
    m.stop()


class Proxy:
    """A TCP relay from a loopback port to target; cut() closes every relayed
    connection and refuses new ones until restore()."""

    def __init__(self, target_port):
        self.target = (HOST, target_port)
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((HOST, 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.up = True
        self.socks = []
        self.lock = threading.Lock()
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            if not self.up:
                c.close()
                continue
            try:
                s = socket.create_connection(self.target, timeout=2)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.socks += [c, s]
            for a, b in ((c, s), (s, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.up = False
        with self.lock:
            for s in self.socks:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self.socks = []

    def restore(self):
        self.up = True

    def close(self):
        self.stopping = True
        self.cut()
        self.lsock.close()


def bridge_cfg(name, port, topics, **extra):
    cfg = {"bridge.%s.address" % name: "%s:%d" % (HOST, port),
           "bridge.%s.topics" % name: topics}
    for k, v in dict(FAST, **extra).items():
        cfg["bridge.%s.%s" % (name, k)] = v
    return cfg


def client(port, cid="", clean=True):
    c = PahoClient(port, client_id=cid, clean_session=clean)
    c.connect()
    return c


def wait_bridge_up(b, name="r", count=1, timeout=15):
    wait_until(lambda: b.stderr_text().count("bridge %s: up" % name) >= count, timeout,
               what="bridge %s up (x%d)" % (name, count))


def payloads(msgs, topic=None):
    return [m.payload for m in msgs if topic is None or m.topic == topic]


@PROTOCOLS
def test_bridge_relays_both_directions_at_qos_0_1_2_with_prefixes(broker, mosquitto, protocol):
    b = broker(config=bridge_cfg("r", mosquitto.port,
                                 "up/# out 2 site/ hq/site/, down/# in 2 \"\" hq/",
                                 protocol=protocol))
    wait_bridge_up(b)
    remote = client(mosquitto.port)
    remote.subscribe("hq/site/#", qos=2)
    local = client(b.port)
    local.subscribe("down/#", qos=2)
    pub_local, pub_remote = client(b.port), client(mosquitto.port)
    for q in (0, 1, 2):
        pub_local.publish("site/up/q%d" % q, b"out%d" % q, qos=q)
        pub_remote.publish("hq/down/q%d" % q, b"in%d" % q, qos=q)
    got = remote.wait_messages(3, timeout=10)
    assert sorted((m.topic, m.payload, m.qos) for m in got) == [
        ("hq/site/up/q0", b"out0", 0), ("hq/site/up/q1", b"out1", 1), ("hq/site/up/q2", b"out2", 2)]
    got = local.wait_messages(3, timeout=10)
    assert sorted((m.topic, m.payload, m.qos) for m in got) == [
        ("down/q0", b"in0", 0), ("down/q1", b"in1", 1), ("down/q2", b"in2", 2)]
    time.sleep(0.5)  # nothing more: no echo, no loop
    assert len(remote.messages) == 3 and len(local.messages) == 3
    for c in (remote, local, pub_local, pub_remote):
        c.disconnect()


@PROTOCOLS
def test_bridge_no_loop_with_both_directions_on_one_topic(broker, mosquitto, protocol):
    b = broker(config=bridge_cfg("r", mosquitto.port, "loop/# both 1", protocol=protocol))
    wait_bridge_up(b)
    remote, local = client(mosquitto.port), client(b.port)
    remote.subscribe("loop/#", qos=1)
    local.subscribe("loop/#", qos=1)
    client(b.port).publish("loop/a", b"from-local", qos=1)
    client(mosquitto.port).publish("loop/b", b"from-remote", qos=1)
    remote.wait_messages(2, timeout=10)
    local.wait_messages(2, timeout=10)
    time.sleep(1.0)
    assert sorted(payloads(remote.messages)) == [b"from-local", b"from-remote"]
    assert sorted(payloads(local.messages)) == [b"from-local", b"from-remote"]


@PROTOCOLS
def test_bridge_keeps_retain_as_published(broker, mosquitto, protocol):
    b = broker(config=bridge_cfg("r", mosquitto.port, "ret/# out 1", protocol=protocol))
    wait_bridge_up(b)
    client(b.port).publish("ret/x", b"kept", qos=1, retain=True)
    late = client(mosquitto.port)
    wait_until(lambda: (late.subscribe("ret/#", qos=1), late.messages)[1], 10,
               what="retained message on the remote")
    assert late.messages[0].retain and late.messages[0].payload == b"kept"


@PROTOCOLS
def test_bridge_remote_restart_mid_stream_loses_no_acknowledged_message(broker, mosquitto, protocol):
    b = broker(config=bridge_cfg("r", mosquitto.port, "s/# out 1", protocol=protocol))
    wait_bridge_up(b)
    sub = PahoClient(mosquitto.port, client_id="collector", clean_session=False)
    sub.connect()
    sub.subscribe("s/#", qos=1)
    sub.disconnect()  # its session queues at the remote, which persists it
    pub = client(b.port)
    n = 300
    for i in range(n):
        pub.publish("s/x", b"%d" % i, qos=1)  # acknowledged by tern
        if i == n // 3:
            mosquitto.stop()
            mosquitto.start()
    wait_bridge_up(b, count=2, timeout=20)
    sub = PahoClient(mosquitto.port, client_id="collector", clean_session=False)
    sub.connect()
    want = {b"%d" % i for i in range(n)}
    sub.wait_for(lambda ms: want <= set(payloads(ms)), timeout=20,
                 what=lambda: "all %d messages (missing %s)" % (
                     n, sorted(want - set(payloads(sub.messages)))[:10]))
    sub.disconnect()


@PROTOCOLS
def test_bridge_network_cut_and_restored_queues_then_delivers(broker, mosquitto, protocol):
    proxy = Proxy(mosquitto.port)
    try:
        b = broker(config=bridge_cfg("r", proxy.port, "c/# out 1, d/# in 1",
                                     protocol=protocol))
        wait_bridge_up(b)
        remote = PahoClient(mosquitto.port, client_id="rsub", clean_session=False)
        remote.connect()
        remote.subscribe("c/#", qos=1)
        local = client(b.port)
        local.subscribe("d/#", qos=1)
        proxy.cut()
        wait_until(lambda: "bridge r: down" in b.stderr_text(), 15, what="bridge down")
        pub = client(b.port)
        for i in range(50):
            pub.publish("c/x", b"q%d" % i, qos=1)  # queued in the bridge's session
        time.sleep(0.5)
        assert remote.messages == []
        proxy.restore()
        wait_bridge_up(b, count=2, timeout=20)
        remote.wait_for(lambda ms: {b"q%d" % i for i in range(50)} <= set(payloads(ms)),
                        timeout=15, what="the 50 queued messages")
        client(mosquitto.port).publish("d/y", b"after", qos=1)
        local.wait_messages(1, timeout=10)
        st = b.stderr_text()
        assert "bridge r: down" in st and "next attempt in" in st
    finally:
        proxy.close()


@PROTOCOLS
def test_bridge_tern_to_tern_over_mutual_tls_both_ways_without_loops(broker, tls, protocol):
    remote = tls.start()  # mutual TLS on remote.tls_port, plaintext on remote.port
    cfg = bridge_cfg("t", remote.tls_port, "tt/# both 1", protocol=protocol)
    crt, key = tls.pki.cert("dev-client")
    cfg.update({"bridge.t.tls_ca": tls.pki.ca, "bridge.t.tls_cert": crt, "bridge.t.tls_key": key,
                "bridge.t.tls_name": "localhost"})  # the dev server certificate's DNS name
    local_b = broker(config=cfg)
    wait_bridge_up(local_b, "t", timeout=20)
    assert "not for a name" not in local_b.stderr_text()
    # The remote tern saw the bridge (at 3.1.1 with the bridge bit, at 5.0
    # as a client whose subscriptions have No Local) with the certificate's
    # identity.
    assert "dev-client" in remote.stderr_text()
    r, l = client(remote.port), client(local_b.port)
    r.subscribe("tt/#", qos=1)
    l.subscribe("tt/#", qos=1)
    client(local_b.port).publish("tt/a", b"from-local", qos=1)
    client(remote.port).publish("tt/b", b"from-remote", qos=1)
    r.wait_messages(2, timeout=10)
    l.wait_messages(2, timeout=10)
    time.sleep(1.0)
    assert sorted(payloads(r.messages)) == [b"from-local", b"from-remote"]
    assert sorted(payloads(l.messages)) == [b"from-local", b"from-remote"]


def test_bridge_refuses_a_server_certificate_from_another_ca(broker, tls):
    remote = tls.start()
    cfg = bridge_cfg("t", remote.tls_port, "tt/# both 1")
    crt, key = tls.pki.cert("dev-client")
    cfg.update({"bridge.t.tls_ca": tls.pki.path("other-ca.crt"), "bridge.t.tls_cert": crt,
                "bridge.t.tls_key": key})
    local_b = broker(config=cfg)
    wait_until(lambda: "bridge t: down: TLS with the remote failed" in local_b.stderr_text(), 15,
               what="the TLS failure logged")
    assert "bridge t: up" not in local_b.stderr_text()
    # No tls_name: said once at start, since any certificate of that CA would do.
    assert "bridge t: the remote's certificate is checked against bridge.t.tls_ca but not " \
           "for a name" in local_b.stderr_text()


def test_bridge_refuses_a_server_certificate_without_the_expected_name(broker, tls):
    remote = tls.start()
    cfg = bridge_cfg("t", remote.tls_port, "tt/# both 1")
    crt, key = tls.pki.cert("dev-client")
    cfg.update({"bridge.t.tls_ca": tls.pki.ca, "bridge.t.tls_cert": crt, "bridge.t.tls_key": key,
                "bridge.t.tls_name": "broker.example.net"})
    local_b = broker(config=cfg)
    wait_until(lambda: "bridge t: down: TLS with the remote failed: the server's certificate "
                       "does not carry the expected name" in local_b.stderr_text(), 15,
               what="the name mismatch logged")
    assert "bridge t: up" not in local_b.stderr_text()


def test_bridge_missing_certificate_file_refuses_start_naming_the_key(tmp_path):
    if IS_MOSQUITTO:
        pytest.skip("ternd's configuration")
    from conftest import TERN_BIN
    conf = tmp_path / "b.conf"
    conf.write_text("config_version = 1\nlistener.plain = 127.0.0.1:0\n"
                    "bridge.x.address = 127.0.0.1:1\nbridge.x.topics = a in 0\n"
                    "bridge.x.tls_ca = nowhere.crt\n")
    p = subprocess.run([TERN_BIN, "-c", str(conf)], capture_output=True, timeout=20)
    assert p.returncode != 0
    err = p.stderr.decode() + p.stdout.decode()
    assert "b.conf:5: bridge.x.tls_ca: " in err and "nowhere.crt" in err
    assert "Sanitizer" not in err
    # --check says the same without starting.
    p = subprocess.run([TERN_BIN, "--check", "-c", str(conf)], capture_output=True, timeout=20)
    assert p.returncode == 1
    assert "b.conf:5: bridge.x.tls_ca: " in p.stderr.decode()


def test_bridge_state_and_counters_on_sys(broker, mosquitto):
    b = broker(config=dict(bridge_cfg("r", mosquitto.port, "k/# out 1, j/# in 1"),
                           **{"sys.interval": 1}))
    wait_bridge_up(b)
    client(b.port).publish("k/1", b"x", qos=1)
    client(mosquitto.port).publish("j/1", b"y", qos=1)
    watcher = client(b.port)
    watcher.subscribe("$SYS/broker/bridges/r/#", qos=0)

    def latest():
        d = {}
        for m in watcher.messages:
            d[m.topic.rsplit("/", 1)[1]] = m.payload
        return d
    watcher.wait_for(lambda ms: latest().get("sent") == b"1" and latest().get("received") == b"1",
                     timeout=10, what=lambda: "sent 1 and received 1 in %r" % latest())
    d = latest()
    assert d["connected"] == b"1" and d["state"] == b"up" and d["connects"] == b"1"
    mosquitto.stop()
    watcher.wait_for(lambda ms: latest().get("connected") == b"0", timeout=10,
                     what=lambda: "connected 0 in %r" % latest())
    assert int(latest()["reconnects"]) >= 1
    mosquitto.start()


def test_bridge_queue_survives_a_restart_of_tern_with_a_store(broker, mosquitto, tmp_path):
    store = str(tmp_path / "tern.db")
    sub = PahoClient(mosquitto.port, client_id="collector", clean_session=False)
    sub.connect()
    sub.subscribe("dq/#", qos=1)
    sub.disconnect()
    mosquitto.stop()  # the remote is away: the messages wait in the bridge's session
    cfg = dict(bridge_cfg("r", mosquitto.port, "dq/# out 1"), **{"store.path": store})
    b = broker(config=cfg)
    wait_until(lambda: "bridge r: down" in b.stderr_text(), 15, what="bridge down")
    pub = client(b.port)
    for i in range(40):
        pub.publish("dq/x", b"d%d" % i, qos=1)  # acknowledged after the store's commit
    pub.disconnect()
    assert b.stop() == []
    mosquitto.start()
    b2 = broker(config=cfg)  # same store: the bridge's session and its queue come back
    wait_bridge_up(b2)
    sub = PahoClient(mosquitto.port, client_id="collector", clean_session=False)
    sub.connect()
    want = {b"d%d" % i for i in range(40)}
    sub.wait_for(lambda ms: want <= set(payloads(ms)), timeout=15,
                 what=lambda: "the 40 queued messages (have %d)" % len(
                     want & set(payloads(sub.messages))))
    sub.disconnect()


def sys_watcher(b, name="r"):
    """A client on $SYS/broker/bridges/NAME/#, and a function giving the
    latest value of each of its topics (by last level)."""
    w = client(b.port)
    w.subscribe("$SYS/broker/bridges/%s/#" % name, qos=0)

    def latest():
        d = {}
        for m in list(w.messages):
            d[m.topic.rsplit("/", 1)[1]] = m.payload
        return d
    return w, latest


def test_bridge5_carries_message_properties_both_ways(broker, mosquitto):
    b = broker(config=bridge_cfg("r", mosquitto.port, "p/# out 1, q/# in 1", protocol="5"))
    wait_bridge_up(b)
    assert "bridge r: MQTT 5.0 to plaintext" in b.stderr_text()
    remote, local = Paho5(mosquitto.port), Paho5(b.port)
    remote.connect()
    local.connect()
    remote.subscribe("p/#", qos=1)
    local.subscribe("q/#", qos=1)
    props = dict(UserProperty=[("site", "north"), ("k", "v")], MessageExpiryInterval=300,
                 ContentType="text/plain", ResponseTopic="replies/1",
                 CorrelationData=b"\x01\x02", PayloadFormatIndicator=1)
    pub_l, pub_r = Paho5(b.port), Paho5(mosquitto.port)
    pub_l.connect()
    pub_r.connect()
    pub_l.publish("p/x", b"out", qos=1, **props)
    pub_r.publish("q/y", b"in", qos=1, **props)
    for c, topic in ((remote, "p/x"), (local, "q/y")):
        m = c.wait_messages(1, timeout=10)[0]
        assert m.topic == topic
        got = m.props
        assert got["UserProperty"] == [("site", "north"), ("k", "v")], got
        assert 290 <= got["MessageExpiryInterval"] <= 300, got  # what is left of it
        assert got["ContentType"] == "text/plain"
        assert got["ResponseTopic"] == "replies/1"
        assert got["CorrelationData"] == b"\x01\x02"
        assert got["PayloadFormatIndicator"] == 1
    for c in (remote, local, pub_l, pub_r):
        c.disconnect()


def test_bridge5_message_expiry_runs_out_while_queued_for_the_remote(broker, mosquitto):
    b = broker(config=bridge_cfg("r", mosquitto.port, "e/# out 1", protocol="5"))
    wait_bridge_up(b)
    sub = Paho5(mosquitto.port, client_id="esub")
    sub.connect(clean_start=False, SessionExpiryInterval=3600)
    sub.subscribe("e/#", qos=1)
    mosquitto.stop()
    wait_until(lambda: "bridge r: down" in b.stderr_text(), 15, what="bridge down")
    pub = Paho5(b.port)
    pub.connect()
    pub.publish("e/short", b"gone", qos=1, MessageExpiryInterval=1)
    pub.publish("e/long", b"kept", qos=1, MessageExpiryInterval=600)
    time.sleep(2.5)  # the short one expires in the bridge's session
    mosquitto.start()
    wait_bridge_up(b, count=2, timeout=20)
    sub = Paho5(mosquitto.port, client_id="esub")
    sub.connect(clean_start=False, SessionExpiryInterval=3600)
    m = sub.wait_messages(1, timeout=10)[0]
    assert m.payload == b"kept" and m.props["MessageExpiryInterval"] <= 598
    time.sleep(0.5)
    assert payloads(sub.messages) == [b"kept"]
    sub.disconnect()


def test_bridge_queued_counter_rises_while_the_remote_is_away_and_falls_to_zero(broker,
                                                                                 mosquitto):
    b = broker(config=dict(bridge_cfg("r", mosquitto.port, "w/# out 1", protocol="5"),
                           **{"sys.interval": 1}))
    wait_bridge_up(b)
    sub = PahoClient(mosquitto.port, client_id="wsub", clean_session=False)
    sub.connect()
    sub.subscribe("w/#", qos=1)
    sub.disconnect()
    watcher, latest = sys_watcher(b)
    watcher.wait_for(lambda ms: latest().get("queued") == b"0", timeout=10,
                     what=lambda: "queued 0 in %r" % latest())
    mosquitto.stop()
    wait_until(lambda: "bridge r: down" in b.stderr_text(), 15, what="bridge down")
    pub = client(b.port)
    for i in range(25):
        pub.publish("w/x", b"%d" % i, qos=1)
    watcher.wait_for(lambda ms: latest().get("queued") == b"25", timeout=10,
                     what=lambda: "queued 25 in %r" % latest())
    mosquitto.start()
    wait_bridge_up(b, count=2, timeout=20)
    watcher.wait_for(lambda ms: latest().get("queued") == b"0", timeout=15,
                     what=lambda: "queued back to 0 in %r" % latest())
    sub = PahoClient(mosquitto.port, client_id="wsub", clean_session=False)
    sub.connect()
    want = {b"%d" % i for i in range(25)}
    sub.wait_for(lambda ms: want <= set(payloads(ms)), timeout=10, what="the 25 messages")
    sub.disconnect()


def test_bridge5_message_the_remote_refuses_is_dropped_and_counted_not_retried(broker, tmp_path):
    if IS_MOSQUITTO:
        pytest.skip("the bridging side is ternd")
    acl = tmp_path / "mosq.acl"
    # Anonymous clients (the bridge, the test's subscriber): ok/# both
    # ways, deny/# read only, so Mosquitto answers the bridge's PUBLISH
    # there with PUBACK 0x87 (Not authorized) at 5.0.
    acl.write_text("topic readwrite ok/#\ntopic read deny/#\n")
    m = Mosquitto(tmp_path / "mosq", extra="acl_file %s\n" % acl)
    try:
        b = broker(config=dict(bridge_cfg("r", m.port, "deny/# out 1, ok/# out 1",
                                          protocol="5"), **{"sys.interval": 1}))
        wait_bridge_up(b)
        remote = client(m.port)
        remote.subscribe("deny/#", qos=1)
        remote.subscribe("ok/#", qos=1)
        watcher, latest = sys_watcher(b)
        pub = client(b.port)
        pub.publish("deny/a", b"refused", qos=1)
        pub.publish("ok/b", b"taken", qos=1)
        remote.wait_messages(1, timeout=10)
        watcher.wait_for(lambda ms: latest().get("rejected") == b"1" and
                         latest().get("queued") == b"0" and latest().get("sent") == b"2",
                         timeout=10, what=lambda: "rejected 1, queued 0, sent 2 in %r" % latest())
        time.sleep(1.5)  # not retried: still one rejection, the bridge still up
        assert latest().get("rejected") == b"1" and latest().get("connects") == b"1"
        assert payloads(remote.messages) == [b"taken"]
    finally:
        m.stop()


def test_bridge5_logs_the_reason_of_the_remotes_disconnect(broker):
    # Mosquitto 2.0.11 closes a taken-over connection without a DISCONNECT;
    # a remote tern sends 0x8E (Session taken over) to a 5.0 client.
    remote = broker()
    b = broker(config=bridge_cfg("r", remote.port, "t/# out 1", protocol="5"))
    wait_bridge_up(b)
    thief = Paho5(remote.port, client_id="tern-bridge-r")
    thief.connect(clean_start=False, SessionExpiryInterval=3600)
    wait_until(lambda: "bridge r: down: remote disconnected the bridge: reason 0x8e"
               in b.stderr_text(), 15, what="the DISCONNECT's reason logged")
    thief.stop()
    wait_bridge_up(b, count=2, timeout=20)  # back, at the configured address
