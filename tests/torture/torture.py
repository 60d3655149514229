#!/usr/bin/python3
"""Power-cut torture test for the durable store (SPEC D8, H4).

A publisher streams QoS 1 retained messages to distinct topics and QoS 1 and
QoS 2 messages for an offline persistent session, and records what the
broker acknowledged (PUBACK for QoS 1, PUBREC for QoS 2). Retained topics
are distinct within a cycle; cycle c reuses the topics of cycle c - SLOTS,
which keeps the database (and every restart) small and exercises
replacement: a topic must hold its last acknowledged payload or one sent
after it. The daemon is
killed with SIGKILL at a random moment (seeded), the database files are
checked with PRAGMA integrity_check, and the daemon is restarted. Then:

  - every acknowledged retained message is there (subscribe and compare:
    this cycle's topics and two other slots' after each restart, all of
    them at the end);
  - the persistent session is connected and drained: every acknowledged
    QoS 1 message arrives at least once, every acknowledged QoS 2 message
    exactly once over the whole run (also counting unacknowledged ones
    that made it: none may arrive twice).

Some kills land while the daemon is still opening its database, and backups
run every second, so kills also hit backups in progress. At the end the
whole retained set is checked once more and both backup copies must pass
quick_check.

    TERN_BIN=build/rel/ternd tests/torture/torture.py --kills 200 --seed 1

Exit status 0 when every check passed. Everything waits with a timeout.
"""

import argparse
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import rawmqtt as rm  # noqa: E402  (the integration tests' raw client)

HOST = "127.0.0.1"
SUB_ID = "torture-sub"
WINDOW = 64            # publishes in flight at once
QUIET = 0.25           # seconds of silence that end a drain
SLOTS = 20             # retained topic sets, reused every SLOTS cycles
START_TIMEOUT = 20.0   # ASan builds start slower
STEP_TIMEOUT = 10.0


SANITIZER_PATTERNS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                      "AddressSanitizer:DEADLYSIGNAL", "runtime error:")


class Failure(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Daemon:
    """ternd on a fixed port and database, started and killed repeatedly."""

    def __init__(self, binary, workdir, port):
        self.binary = binary
        self.port = port
        self.db = os.path.join(workdir, "tern.db")
        self.conf = os.path.join(workdir, "tern.conf")
        self.log_path = os.path.join(workdir, "ternd.log")
        self.proc = None
        with open(self.conf, "w") as f:
            f.write("\n".join([
                "config_version = 1",
                "listener.plain = %s:%d" % (HOST, port),
                "log.level = warn",
                "auth.allow_anonymous = true",
                "sys.interval = 0",
                # Everything acknowledged must stay queued: no limit may drop it.
                "limits.max_queued = 1000000",
                "limits.max_queued_bytes = 1000000000",
                "limits.max_retained = 100000000",
                "store.path = %s" % self.db,
                "store.backup_interval = 1",
                ""]))

    def start(self):
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([self.binary, "-c", self.conf], stdout=self.log,
                                     stderr=self.log)

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failure("ternd exited with %s at start" % self.proc.returncode)
            try:
                with socket.create_connection((HOST, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.01)
        raise Failure("ternd did not accept connections within %.0f s" % START_TIMEOUT)

    def kill(self):
        # A daemon that died by itself (a crash, a sanitizer abort) must not
        # pass for one of our kills.
        rc = self.proc.poll()
        if rc is not None:
            raise Failure("ternd exited on its own (status %s)" % rc)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STEP_TIMEOUT)
        self.log.close()
        self.proc = None
        self.check_log()

    def check_log(self):
        with open(self.log_path, errors="replace") as f:
            text = f.read()
        for pat in SANITIZER_PATTERNS:
            if pat in text:
                raise Failure("sanitizer report in the daemon's log: %r" % pat)

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=STEP_TIMEOUT)
        self.log.close()
        self.proc = None
        if rc != 0:
            raise Failure("ternd exited with %d after SIGTERM" % rc)
        self.check_log()

    def tail(self, n=30):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def integrity_check(db, scratch):
    """PRAGMA integrity_check on a copy of the files as the kill left them
    (a copy, so the check's own recovery does not change what the daemon
    finds at restart)."""
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    os.mkdir(scratch)
    copy = os.path.join(scratch, "check.db")
    for suffix in ("", "-wal", "-journal"):
        if os.path.exists(db + suffix):
            shutil.copyfile(db + suffix, copy + suffix)
    if not os.path.exists(copy):
        return "no database yet"
    con = sqlite3.connect(copy)
    try:
        rows = con.execute("PRAGMA integrity_check").fetchall()
    finally:
        con.close()
    if rows != [("ok",)]:
        raise Failure("integrity_check: %r" % rows[:5])
    return "ok"


class Publisher(threading.Thread):
    """Streams the cycle's messages with WINDOW in flight until the
    connection dies; records what the broker acknowledged."""

    def __init__(self, port, cycle, rng, state):
        super().__init__(daemon=True)
        self.port, self.cycle, self.rng, self.state = port, cycle, rng, state
        self.sent = 0
        self.error = None

    def message(self, i):
        kind = self.rng.choices(("r", "q1", "q2"), weights=(4, 3, 3))[0]
        key = "%d/%d" % (self.cycle, i)
        pad = "x" * self.rng.randint(0, 200)
        if kind == "r":
            topic = "r/%d/%d" % (self.cycle % SLOTS, i)
            payload = (key + ":" + pad).encode()
            self.state.sent_r.setdefault(topic, []).append((self.cycle, payload))
            return kind, topic, topic, 1, True, payload
        qos = 1 if kind == "q1" else 2
        return kind, key, "q/%d/%s" % (qos, key), qos, False, (key + ":" + pad).encode()

    def run(self):
        try:
            self.stream()
        except (rm.Closed, OSError, TimeoutError):
            pass  # the kill
        except Exception as e:  # noqa: BLE001  (reported by the main thread)
            self.error = e

    def stream(self):
        c = rm.RawClient(HOST, self.port, timeout=STEP_TIMEOUT)
        try:
            ack = c.connect(client_id="torture-pub-%d" % self.cycle, clean=True)
            if ack.return_code != 0:
                raise Failure("publisher refused: %d" % ack.return_code)
            inflight = {}
            pid = 0
            while True:
                while len(inflight) < WINDOW:
                    pid = pid % 65535 + 1
                    m = self.message(self.sent)
                    self.sent += 1
                    kind, key, topic, qos, retain, payload = m
                    inflight[pid] = (kind, key, payload)
                    c.send(rm.publish(topic, payload, qos=qos, retain=retain, pid=pid))
                pkt = c.recv_packet(timeout=STEP_TIMEOUT)
                if pkt.type in (rm.PUBACK, rm.PUBREC):
                    kind, key, payload = inflight[pkt.pid]
                    if kind == "r":
                        self.state.acked_r[key] = (self.cycle, payload)
                    self.state.acked[kind][key] = payload
                    if pkt.type == rm.PUBACK:
                        del inflight[pkt.pid]
                    else:
                        c.send(rm.pubrel(pkt.pid))
                elif pkt.type == rm.PUBCOMP:
                    del inflight[pkt.pid]
                else:
                    raise Failure("publisher got %r" % pkt)
        finally:
            c.close()


class State:
    def __init__(self):
        self.acked = {"r": {}, "q1": {}, "q2": {}}  # every acknowledgement, for counts
        self.acked_r = {}   # retained topic -> (cycle, payload) last acknowledged
        self.sent_r = {}    # retained topic -> [(cycle, payload)] every one sent
        self.received_q1 = {}
        self.received_q2 = {}
        self.awaiting_rel = set()  # subscriber: QoS 2 ids PUBREC'd, no PUBREL yet


def drain_session(port, state):
    """Connect the persistent session, take everything queued, acknowledge
    it, and leave it offline again."""
    c = rm.RawClient(HOST, port, timeout=STEP_TIMEOUT)
    try:
        ack = c.connect(client_id=SUB_ID, clean=False)
        if not ack.session_present:
            raise Failure("the persistent session is gone")
        got = 0
        deadline = time.monotonic() + 60.0
        while True:
            if time.monotonic() > deadline:
                raise Failure("the session's queue did not drain within 60 s")
            try:
                pkt = c.recv_packet(timeout=QUIET)
            except TimeoutError:
                if state.awaiting_rel:
                    continue  # a PUBREL is still to come
                break
            if pkt.type == rm.PUBLISH:
                got += 1
                key = pkt.payload.split(b":", 1)[0].decode()
                if pkt.qos == 1:
                    state.received_q1[key] = state.received_q1.get(key, 0) + 1
                    c.send(rm.puback(pkt.pid))
                elif pkt.qos == 2:
                    if pkt.pid not in state.awaiting_rel:
                        state.received_q2[key] = state.received_q2.get(key, 0) + 1
                        state.awaiting_rel.add(pkt.pid)
                    c.send(rm.pubrec(pkt.pid))
                else:
                    raise Failure("QoS 0 delivery to the session: %r" % pkt)
            elif pkt.type == rm.PUBREL:
                state.awaiting_rel.discard(pkt.pid)
                c.send(rm.pubcomp(pkt.pid))
            else:
                raise Failure("subscriber got %r" % pkt)
        c.send(rm.disconnect())
        return got
    finally:
        c.close()


def read_retained(port, filters):
    """Topic -> payload of every retained message matching the filters."""
    c = rm.RawClient(HOST, port, timeout=STEP_TIMEOUT)
    out = {}
    try:
        c.connect(client_id="", clean=True)
        c.send(rm.subscribe(1, [(f, 1) for f in filters]))
        while True:
            try:
                pkt = c.recv_packet(timeout=QUIET)
            except TimeoutError:
                break
            if pkt.type == rm.SUBACK:
                continue
            if pkt.type != rm.PUBLISH or not pkt.retain:
                raise Failure("retained check got %r" % pkt)
            out[pkt.topic] = pkt.payload
            if pkt.qos > 0:
                c.send(rm.puback(pkt.pid))
        c.send(rm.disconnect())
    finally:
        c.close()
    return out


def check_retained(port, state, slots):
    """Every retained topic of the given slots holds its last acknowledged
    payload, or one published after it (unacknowledged, but committed)."""
    have = read_retained(port, ["r/%d/#" % s for s in slots])
    prefixes = tuple("r/%d/" % s for s in slots)
    for topic, (cycle, payload) in state.acked_r.items():
        if not topic.startswith(prefixes):
            continue
        got = have.get(topic)
        if got == payload:
            continue
        later = [p for c, p in state.sent_r[topic] if c > cycle]
        if got not in later:
            raise Failure("retained %s: acknowledged %r (cycle %d), found %r"
                          % (topic, payload[:20], cycle, got[:20] if got else got))


def check_queued(state):
    for key in state.acked["q1"]:
        if state.received_q1.get(key, 0) < 1:
            raise Failure("acknowledged QoS 1 message %s never delivered" % key)
    for key in state.acked["q2"]:
        if state.received_q2.get(key, 0) != 1:
            raise Failure("acknowledged QoS 2 message %s delivered %d times"
                          % (key, state.received_q2.get(key, 0)))
    for key, n in state.received_q2.items():
        if n > 1:
            raise Failure("QoS 2 message %s delivered %d times" % (key, n))


def setup_session(port):
    """The persistent subscriber, made durable before the first kill: its
    SUBACK is not held for the commit, but the PUBACK of a retained publish
    behind it is, and batches commit in order."""
    c = rm.RawClient(HOST, port, timeout=STEP_TIMEOUT)
    try:
        c.connect(client_id=SUB_ID, clean=False)
        c.subscribe([("q/#", 2)])
        c.send(rm.publish("setup/done", b"1", qos=1, retain=True, pid=7))
        c.expect(rm.PUBACK)
        c.send(rm.disconnect())
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default=os.environ.get("TERN_BIN",
                                                    os.path.join(REPO, "build/rel/ternd")))
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="tern-torture-")
    daemon = Daemon(args.bin, workdir, free_port())
    state = State()
    started = time.monotonic()
    early = published = 0
    ok = False
    try:
        daemon.start()
        daemon.wait_ready()
        setup_session(daemon.port)
        for cycle in range(1, args.kills + 1):
            if rng.random() < 0.1:
                # Kill while the daemon opens, checks and loads the store.
                daemon.kill()
                integrity_check(daemon.db, os.path.join(workdir, "check"))
                daemon.start()
                time.sleep(rng.uniform(0.0, 0.03))
                early += 1
            pub = Publisher(daemon.port, cycle, random.Random(rng.random()), state)
            pub.start()
            time.sleep(rng.uniform(0.02, 0.5))
            daemon.kill()
            pub.join(timeout=STEP_TIMEOUT)
            if pub.is_alive():
                raise Failure("publisher did not notice the kill")
            if pub.error is not None:
                raise Failure("publisher: %r" % pub.error)
            published += pub.sent
            integrity_check(daemon.db, os.path.join(workdir, "check"))
            daemon.start()
            daemon.wait_ready()
            # This cycle's retained topics and two other slots' (all of them
            # once more at the end).
            slot = cycle % SLOTS
            check_retained(daemon.port, state,
                           [slot] + rng.sample([s for s in range(SLOTS) if s != slot], 2))
            drain_session(daemon.port, state)
            check_queued(state)
            if cycle % 10 == 0 or cycle == args.kills:
                print("cycle %d: %d published, acknowledged %d retained, %d QoS 1, %d QoS 2; "
                      "%.0f s" % (cycle, published, len(state.acked["r"]),
                                  len(state.acked["q1"]), len(state.acked["q2"]),
                                  time.monotonic() - started), flush=True)
        # Everything retained, from every cycle, once more.
        check_retained(daemon.port, state, range(SLOTS))
        daemon.stop()
        for slot in ("a", "b"):
            path = daemon.db + ".bak-" + slot
            if os.path.exists(path):
                con = sqlite3.connect(path)
                try:
                    if con.execute("PRAGMA quick_check").fetchall() != [("ok",)]:
                        raise Failure("backup %s fails quick_check" % path)
                finally:
                    con.close()
        ok = True
        print("torture: %d kills (%d during start-up), %d messages published, %d acknowledged, "
              "all present after every restart; QoS 2 exactly once; integrity ok; %.0f s"
              % (args.kills, early, published,
                 sum(len(v) for v in state.acked.values()), time.monotonic() - started))
    except Failure as e:
        print("torture FAILED (seed %d): %s" % (args.seed, e))
        print("--- ternd log tail ---\n" + daemon.tail())
    finally:
        if daemon.proc is not None:
            daemon.proc.kill()
            daemon.proc.wait()
        if ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("work directory kept: %s" % workdir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
