"""The durable load and its checks, shared by the daemon's SIGKILL torture
(torture.py) and the unikernel's power-cut harness (tests/powercut/run.py).

A publisher streams QoS 1 retained messages to distinct topics and QoS 1
and QoS 2 messages for an offline persistent session, and records what the
broker acknowledged (PUBACK for QoS 1, PUBREC for QoS 2). Retained topics
are distinct within a cycle; cycle c reuses the topics of cycle c - SLOTS,
which keeps the database small and exercises replacement: a topic must hold
its last acknowledged payload or one sent after it. After the broker comes
back from a kill or a power cut:

  - check_retained: every acknowledged retained message is there;
  - drain_session + check_queued: the persistent session is connected and
    drained: every acknowledged QoS 1 message arrives at least once, every
    acknowledged QoS 2 message exactly once over the whole run (also
    counting unacknowledged ones that made it: none may arrive twice).

Everything talks to the broker through an Endpoint (plain TCP, or mutual
TLS with an ssl context) and waits with a timeout.
"""

import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import rawmqtt as rm  # noqa: E402  (the integration tests' raw client)

SUB_ID = "torture-sub"
WINDOW = 64            # publishes in flight at once
SLOTS = 20             # retained topic sets, reused every SLOTS cycles
# The topics the load uses (an ACL for it must allow them).
TOPIC_FILTERS = ("r/#", "q/#", "setup/#")
# Configuration lines for the broker under test: everything acknowledged
# must stay queued, no limit may drop it.
NO_DROP_LIMITS = ("limits.max_queued = 1000000",
                  "limits.max_queued_bytes = 1000000000",
                  "limits.max_retained = 100000000")


class Failure(Exception):
    pass


class Endpoint:
    """Where the broker listens and how to reach it: tls is an
    ssl.SSLContext (mutual TLS) or None (plain TCP). timeout bounds every
    single wait; quiet is the silence that ends a drain (longer for a guest
    under TCG, whose disk is slow)."""

    def __init__(self, host, port, tls=None, timeout=10.0, quiet=0.25):
        self.host, self.port, self.tls = host, port, tls
        self.timeout, self.quiet = timeout, quiet

    def client(self):
        return rm.RawClient(self.host, self.port, timeout=self.timeout, tls=self.tls)


class State:
    """What was sent, acknowledged and received, over the whole run."""

    def __init__(self):
        self.acked = {"r": {}, "q1": {}, "q2": {}}  # every acknowledgement, for counts
        self.acked_r = {}   # retained topic -> (cycle, payload) last acknowledged
        self.sent_r = {}    # retained topic -> [(cycle, payload)] every one sent
        self.received_q1 = {}
        self.received_q2 = {}
        self.awaiting_rel = set()  # subscriber: QoS 2 ids PUBREC'd, no PUBREL yet

    def acknowledged(self):
        return sum(len(v) for v in self.acked.values())


class Publisher(threading.Thread):
    """Streams the cycle's messages with WINDOW in flight until the
    connection dies; records what the broker acknowledged. `connected` is
    set once the broker accepted the connection."""

    def __init__(self, endpoint, cycle, rng, state):
        super().__init__(daemon=True)
        self.endpoint, self.cycle, self.rng, self.state = endpoint, cycle, rng, state
        self.sent = 0
        self.error = None
        self.connected = threading.Event()

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
        c = self.endpoint.client()
        try:
            ack = c.connect(client_id="torture-pub-%d" % self.cycle, clean=True,
                            timeout=self.endpoint.timeout)
            if ack.return_code != 0:
                raise Failure("publisher refused: %d" % ack.return_code)
            self.connected.set()
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
                pkt = c.recv_packet(timeout=self.endpoint.timeout)
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


def drain_session(endpoint, state):
    """Connect the persistent session, take everything queued, acknowledge
    it, and leave it offline again. Returns how many PUBLISHes came."""
    c = endpoint.client()
    try:
        ack = c.connect(client_id=SUB_ID, clean=False, timeout=endpoint.timeout)
        if not ack.session_present:
            raise Failure("the persistent session is gone")
        got = 0
        deadline = time.monotonic() + 60.0
        while True:
            if time.monotonic() > deadline:
                raise Failure("the session's queue did not drain within 60 s")
            try:
                pkt = c.recv_packet(timeout=endpoint.quiet)
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


def read_retained(endpoint, filters):
    """Topic -> payload of every retained message matching the filters."""
    c = endpoint.client()
    out = {}
    try:
        c.connect(client_id="", clean=True, timeout=endpoint.timeout)
        c.send(rm.subscribe(1, [(f, 1) for f in filters]))
        while True:
            try:
                pkt = c.recv_packet(timeout=endpoint.quiet)
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


def check_retained(endpoint, state, slots):
    """Every retained topic of the given slots holds its last acknowledged
    payload, or one published after it (unacknowledged, but committed)."""
    compare_retained(read_retained(endpoint, ["r/%d/#" % s for s in slots]), state, slots)


def compare_retained(have, state, slots):
    """check_retained's verdict on what the broker holds (topic -> payload)."""
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


def setup_session(endpoint):
    """The persistent subscriber, made durable before the first kill: its
    SUBACK is not held for the commit, but the PUBACK of a retained publish
    behind it is, and batches commit in order."""
    c = endpoint.client()
    try:
        c.connect(client_id=SUB_ID, clean=False, timeout=endpoint.timeout)
        c.subscribe([("q/#", 2)], timeout=endpoint.timeout)
        c.send(rm.publish("setup/done", b"1", qos=1, retain=True, pid=7))
        c.expect(rm.PUBACK, timeout=endpoint.timeout)
        c.send(rm.disconnect())
    finally:
        c.close()


def finish(workdir, ok, keep):
    """The end of a run: the work directory removed after a pass (unless
    keep), kept and named after a failure; the exit status."""
    if ok and not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print("work directory kept: %s" % workdir)
    return 0 if ok else 1
