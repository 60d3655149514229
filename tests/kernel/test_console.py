"""The operator console in the unikernel (issue 17, SPEC C6): one
production kernel over mutual TLS with a virtio-blk disk (tern-mkdisk),
every command asked by an operator (dev-operator's certificate) with
unmodified clients: Paho MQTTv5 with a Response Topic and Correlation
Data, and mosquitto_pub/mosquitto_sub for the answer on
$SYS/console/response/<identity>.

- First a non-operator (dev-client) asks every command: nothing arrives
  on its response topic, and nothing is done (the kicked clients stay
  connected, the session and the retained message stay, no backup, no
  scrub pass, the log level stays).
- Then the operator: status, clients, kick (a 5.0 client gets DISCONNECT
  0x98, a 3.1.1 client is closed), session-delete (the session is gone
  at the next connect), retained-list, retained-clear, config-show (every
  key; no byte of the server's key: its PEM body lines, its DER, their
  hex; the certificate's SHA-256 right), backup-now and scrub-now (their
  $SYS counters move: backups are on demand only and the scrub interval
  is 30 days, so nothing else moves them), diag (the crypto and handshake
  sections, each null value with its why), log-level (debug lines appear
  on the console only after it).
"""
import base64
import hashlib
import json
import subprocess
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from clients import mosq, rm
from harness import MTLS_CONF, Failure, Pki, drive, scratch, show
from test_store_disk import DiskBroker, mkdisk

# Backups on demand only; the scrubber fast but its next pass 30 days on
# (its first comes KSCRUB_FIRST_DELAY_S = 10 s after the store opens).
CONF = MTLS_CONF + ("store.backup_interval = 0\nstore.scrub_rate = 65536\n"
                    "store.scrub_interval = 2592000\n")
REQUEST = "$SYS/console/request"
WAIT = 30
QUIET = 4  # seconds a refused request's answer would have had to arrive


class Asker:
    """A Paho MQTTv5 client over mutual TLS that asks the console with a
    Response Topic (its own clients/<identity>/console) and Correlation
    Data, and collects whatever arrives there."""

    def __init__(self, db, who):
        self.cond = threading.Condition()
        self.answers, self.connack, self.subacked, self.n = {}, None, False, 0
        self.topic = f"clients/{who}/console"
        c = self.c = mqtt.Client(client_id=f"console-{who}", protocol=mqtt.MQTTv5,
                                 reconnect_on_failure=False)
        c.tls_set(ca_certs=db.pki.path("ca.crt"), certfile=db.pki.path(f"{who}.crt"),
                  keyfile=db.pki.path(f"{who}.key"))
        c.on_connect = self._on_connect
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        c.connect("127.0.0.1", db.port, 60)
        c.loop_start()
        self._wait(lambda: self.connack is not None, "CONNACK")
        if self.connack != 0:
            raise Failure(f"{who}: CONNACK {self.connack}")
        c.subscribe(self.topic, 1)
        self._wait(lambda: self.subacked, "SUBACK")

    def _on_connect(self, c, u, flags, rc, props=None):
        with self.cond:
            self.connack = rc.value if hasattr(rc, "value") else rc
            self.cond.notify_all()

    def _on_subscribe(self, c, u, mid, granted, props=None):
        with self.cond:
            self.subacked = True
            self.cond.notify_all()

    def _on_message(self, c, u, msg):
        corr = getattr(msg.properties, "CorrelationData", b"") or b""
        with self.cond:
            self.answers[bytes(corr)] = msg.payload
            self.cond.notify_all()

    def _wait(self, pred, what, timeout=WAIT):
        with self.cond:
            if not self.cond.wait_for(pred, timeout):
                raise Failure(f"no {what} within {timeout} s")

    def send(self, request):
        """Publish one request (a dict), QoS 1; its correlation data."""
        self.n += 1
        corr = f"req-{self.n}".encode()
        p = Properties(PacketTypes.PUBLISH)
        p.ResponseTopic = self.topic
        p.CorrelationData = corr
        self.c.publish(REQUEST, json.dumps(request), 1, properties=p).wait_for_publish(WAIT)
        return corr

    def ask(self, request):
        """The answer to request, parsed; fails when it says ok false."""
        corr = self.send(request)
        self._wait(lambda: corr in self.answers, f"answer to {request}")
        a = json.loads(self.answers[corr])
        if a.get("command") != request["command"] or a.get("ok") is not True:
            raise Failure(f"{request} answered {a}")
        return a, self.answers[corr]

    def close(self):
        self.c.disconnect()
        self.c.loop_stop()


def sys_u64(db, topic):
    """One $SYS value, read by the operator with mosquitto_sub."""
    return int(mosq("mosquitto_sub", db.port, "-t", topic, "-C", "1", "-W", "20",
                    tls=db.pki.args("dev-operator")).strip())


def wait_sys_above(db, topic, floor, timeout):
    deadline = time.monotonic() + timeout
    while True:
        v = sys_u64(db, topic)
        if v > floor or time.monotonic() > deadline:
            return v
        time.sleep(1)


def raw(db, cid, level, clean=True):
    """A raw MQTT client over mutual TLS as dev-client; it and its CONNACK."""
    c = rm.RawClient("127.0.0.1", db.port, timeout=WAIT, tls=db.ctx)
    ack = c.connect(timeout=WAIT, client_id=cid, proto_level=level, clean=clean)
    if ack.return_code != 0:
        raise Failure(f"{cid}: CONNACK {ack.return_code}")
    return c, ack


def key_material(db):
    """Every form of the server key config-show must not contain: its PEM
    body lines, its DER, the DER in hex."""
    with open(db.pki.path("server.key")) as f:
        lines = [l.strip() for l in f if l.strip() and not l.startswith("-----")]
    der = base64.b64decode("".join(lines))
    return [l.encode() for l in lines] + [der, der.hex().encode(), der.hex().upper().encode()]


def refused_requests():
    return [{"command": "status"}, {"command": "clients"},
            {"command": "kick", "client": "victim5"},
            {"command": "kick", "client": "victim311"},
            {"command": "session-delete", "client": "keeper"},
            {"command": "retained-list"}, {"command": "retained-clear", "topic": "test/ret/a"},
            {"command": "config-show"}, {"command": "backup-now"}, {"command": "scrub-now"},
            {"command": "diag"}, {"command": "log-level", "level": "debug"}]


def console_test(build):
    notes = []
    with scratch() as tmp:
        img, _ = mkdisk(build, tmp)
        Pki(build.dir)  # made before the bundle links it
        db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"), CONF)
        start = time.monotonic()
        with db.boot() as vm:
            db.ready(vm)
            db.pub("test/ret/a", "kept a", 1, retain=True)
            db.pub("test/ret/b", "kept b", 1, retain=True)
            keeper, _ = raw(db, "keeper", 4, clean=False)
            keeper.subscribe([("test/keep", 1)])
            keeper.send(rm.disconnect())
            keeper.close()
            v5, _ = raw(db, "victim5", 5)
            v311, _ = raw(db, "victim311", 4)
            backups0 = sys_u64(db, "$SYS/broker/store/backups/done")

            # ---- a non-operator: no answer, nothing done ----
            client = Asker(db, "dev-client")
            log_mark = len(vm.text())
            for r in refused_requests():
                client.send(r)
            time.sleep(QUIET)
            if client.answers:
                raise Failure(f"a non-operator got answers: {client.answers}")
            for c, name in ((v5, "victim5"), (v311, "victim311")):
                if not c.is_open_after_ping(WAIT):
                    raise Failure(f"{name} was kicked by a non-operator's request")
            client.close()
            c, ack = raw(db, "keeper", 4, clean=False)
            if not ack.session_present:
                raise Failure("a non-operator's session-delete removed the session")
            c.send(rm.disconnect())
            c.close()
            if sys_u64(db, "$SYS/broker/store/backups/done") != backups0:
                raise Failure("a non-operator's backup-now made a backup")
            notes.append("non-operator: 12 requests, no answer, nothing done")

            op = Asker(db, "dev-operator")
            # ---- status and clients ----
            a, _ = op.ask({"command": "status"})
            if "uptime_ms" not in json.dumps(a) and "uptime" not in json.dumps(a):
                raise Failure(f"status without uptime: {a}")
            a, text = op.ask({"command": "clients"})
            for cid in (b"victim5", b"victim311", b"console-dev-operator"):
                if cid not in text:
                    raise Failure(f"clients does not list {cid}: {a}")

            # ---- kick: 5.0 DISCONNECT 0x98, 3.1.1 closed ----
            op.ask({"command": "kick", "client": "victim5"})
            got = v5.wait_closed(WAIT)
            if not got or got[-1].type != rm.DISCONNECT or got[-1].v5().reason != 0x98:
                raise Failure(f"kicked 5.0 client got {got}, not DISCONNECT 0x98")
            op.ask({"command": "kick", "client": "victim311"})
            got = v311.wait_closed(WAIT)
            if got:
                raise Failure(f"kicked 3.1.1 client got packets {got} before the close")
            notes.append("kick: 0x98 / closed")

            # ---- session-delete ----
            op.ask({"command": "session-delete", "client": "keeper"})
            c, ack = raw(db, "keeper", 4, clean=False)
            if ack.session_present:
                raise Failure("session-delete: the session is still present")
            c.send(rm.disconnect())
            c.close()

            # ---- retained-list, retained-clear (test/ret/a survived the refusal) ----
            a, text = op.ask({"command": "retained-list", "filter": "test/ret/#"})
            if b"test/ret/a" not in text or b"test/ret/b" not in text:
                raise Failure(f"retained-list: {a}")
            op.ask({"command": "retained-clear", "topic": "test/ret/a"})
            a, text = op.ask({"command": "retained-list", "filter": "test/ret/#"})
            if b"test/ret/a" in text or b"test/ret/b" not in text:
                raise Failure(f"retained-list after retained-clear: {a}")

            # ---- config-show: every key, no key material ----
            a, text = op.ask({"command": "config-show"})
            for m in key_material(db):
                if m in text:
                    raise Failure(f"config-show contains server key material {m[:16]!r}...")
            s = a.get("config", {})
            if s.get("tls.key") != "pki/server.key" or s.get("store.scrub_interval") != 2592000 \
                    or "net.ipv4" not in s or s["net.ipv4"] is not None:
                raise Failure(f"config-show settings: {s}")
            files = {f["key"]: f for f in a.get("files", [])}
            with open(db.pki.path("server.crt"), "rb") as f:
                crt = hashlib.sha256(f.read()).hexdigest()
            if files.get("tls.cert", {}).get("sha256") != crt or \
                    files.get("tls.key", {}).get("sha256", "x") is not None or \
                    not files["tls.key"].get("bytes"):
                raise Failure(f"config-show files: {files}")
            notes.append(f"config-show {len(s)} keys, no key bytes")

            # ---- backup-now: on demand only, so only it moves the counter ----
            op.ask({"command": "backup-now"})
            if wait_sys_above(db, "$SYS/broker/store/backups/done", backups0, 60) <= backups0:
                raise Failure("backup-now: $SYS backups/done did not move\n" + show(vm.text()))

            # ---- scrub-now: after the first pass, the next is 30 days on ----
            p0 = wait_sys_above(db, "$SYS/broker/store/scrub/passes", 0, 60)
            time.sleep(2)
            if sys_u64(db, "$SYS/broker/store/scrub/passes") != p0:
                raise Failure("scrub passes move without a request")
            a, _ = op.ask({"command": "scrub-now"})
            if wait_sys_above(db, "$SYS/broker/store/scrub/passes", p0, 60) <= p0:
                raise Failure(f"scrub-now ({a}): $SYS scrub/passes did not move")
            notes.append("backup-now and scrub-now moved $SYS")

            # ---- diag: the crypto and handshake sections, every value or its why ----
            t0 = time.monotonic()
            d, _ = op.ask({"command": "diag"})
            took = time.monotonic() - t0
            for section in ("crypto", "handshake"):
                if not isinstance(d.get(section), dict) or not d[section]:
                    raise Failure(f"diag without {section}: {d}")
                for k, v in d[section].items():
                    if v is None and f"{k}_why" not in d[section]:
                        raise Failure(f"diag {section}.{k} null without a why: {d[section]}")
            hs = d["handshake"]
            notes.append(f"diag answered in {took:.1f} s ({hs.get('handshakes')} handshakes, "
                         f"median {hs.get('server_median_ms')} ms)")
            # the kernel's contention counters (issue 18): every shared lock
            # the store's kernel has, each taken, never more contended than taken
            locks = d.get("locks") or {}
            for name in ("heap", "sqlite_heap", "frames", "console", "wallclock",
                         "store_queue", "telemetry"):
                v = locks.get(name)
                if not isinstance(v, dict) or not v.get("taken") or \
                        not 0 <= v.get("contended", -1) <= v["taken"]:
                    raise Failure(f"diag locks.{name} missing or inconsistent: {locks}")
            cpus = d.get("cpus") or []
            if not cpus or cpus[0].get("id") != 0 or "halts" not in cpus[0]:
                raise Failure(f"diag cpus missing: {cpus}")
            notes.append(f"diag counted {locks['heap']['taken']} heap lock acquisitions")

            # ---- log-level: debug lines only after it ----
            if b"tern: mqtt: debug:" in vm.text()[log_mark:]:
                raise Failure("debug lines before log-level debug (the refused request?)")
            a, _ = op.ask({"command": "log-level", "level": "debug"})
            mark = len(vm.text())
            # A refused $SYS publish is logged at debug (publish.c).
            mosq("mosquitto_pub", db.port, "-t", "$SYS/probe", "-m", "x", "-q", "1",
                 tls=db.tls)
            if vm.wait_for(lambda o: b"tern: mqtt: debug:" in o[mark:], 60) is None:
                raise Failure(f"log-level debug ({a}): no debug line on the console")
            op.ask({"command": "log-level", "level": "info"})

            # ---- the identity topic, with mosquitto ----
            sub = mosq_sub(db, "$SYS/console/response/dev-operator")
            time.sleep(2)
            mosq("mosquitto_pub", db.port, "-t", REQUEST, "-m", '{"command":"status"}',
                 "-q", "1", tls=db.pki.args("dev-operator"))
            out, _ = sub.communicate(timeout=WAIT + 10)
            if b'"command":"status"' not in out.replace(b" ", b""):
                raise Failure(f"no status answer on $SYS/console/response/dev-operator: {out}")
            op.close()
            vm.expect_no_fatal()
        notes.append(f"{time.monotonic() - start:.0f} s")
    return "; ".join(notes)


def ram_only_test(build):
    """No disk (RAM only): backup-now and scrub-now say there is no disk
    store; config-show still answers (store.disk auto, nothing found)."""
    with scratch() as tmp:
        Pki(build.dir)
        db = DiskBroker(build, tmp, [], CONF)
        start = time.monotonic()
        with db.boot() as vm:
            db.ready(vm)
            op = Asker(db, "dev-operator")
            for cmd in ("backup-now", "scrub-now"):
                corr = op.send({"command": cmd})
                op._wait(lambda: corr in op.answers, f"{cmd} answer")
                a = json.loads(op.answers[corr])
                if a.get("ok") is not False or "no disk store" not in a.get("error", ""):
                    raise Failure(f"RAM only: {cmd} answered {a}")
            op.ask({"command": "config-show"})
            op.close()
            vm.expect_no_fatal()
        return f"backup-now and scrub-now: no disk store; {time.monotonic() - start:.0f} s"


def mosq_sub(db, topic):
    return subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(db.port), "-t", topic,
                             "-C", "1", "-W", str(WAIT)] + db.pki.args("dev-operator"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def cases(b):
    return {"console-kernel": lambda: console_test(b),
            "console-kernel-ram": lambda: ram_only_test(b)}
