"""Real MQTT clients for the integration tests, with bounded waits.

- MosqSub: Debian's mosquitto_sub as a subprocess (-C N -W secs), with a
  wait for its SUBACK and the QoS / retain flag of every message received.
- mosq_pub(): Debian's mosquitto_pub as a subprocess.
- PahoClient: Paho 1.6.1 (python3-paho-mqtt) with its network thread
  (loop_start) and reconnect_on_failure=False, so it never reconnects on its
  own (a reconnect would hide a takeover or a broker-initiated close).

Every wait here has a timeout; nothing waits forever.
"""

import collections
import os
import queue
import socket
import subprocess
import sys
import threading
import time

import paho.mqtt.client as mqtt

HOST = "127.0.0.1"
HERE = os.path.dirname(os.path.abspath(__file__))

Msg = collections.namedtuple("Msg", "topic payload qos retain dup")


def wait_until(predicate, timeout, interval=0.02, what="condition"):
    """Poll predicate() until it returns a true value (returned) or fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


# --------------------------------------------------------------------------
# mosquitto_sub / mosquitto_pub

# One line per message; fields separated by tabs. Our payloads have no
# newlines or tabs.
_SUB_FORMAT = "MSG\t%q\t%r\t%t\t%p"


class MosqSub:
    """mosquitto_sub subscribed to `topics`, exiting after `count` messages
    (-C) or `timeout` seconds (-W), whichever comes first.

    Usage: s = MosqSub(port, ["a/b"], qos=1, count=2)
           s.wait_subscribed()      # SUBACK received -> safe to publish
           msgs = s.wait()          # list of Msg after the process exits
    """

    def __init__(self, port, topics, qos=0, count=None, timeout=10, host=HOST,
                 version=None, client_id=None, clean=True, extra=()):
        args = ["stdbuf", "-oL", "mosquitto_sub", "-h", host, "-p", str(port),
                "-q", str(qos), "-d", "-F", _SUB_FORMAT, "-W", str(int(timeout))]
        for t in topics:
            args += ["-t", t]
        if count is not None:
            args += ["-C", str(count)]
        if version is not None:
            args += ["-V", version]
        if client_id is not None:
            args += ["-i", client_id]
        if not clean:
            args += ["-c"]
        args += list(extra)
        self.args = args
        self.timeout = timeout
        # stdbuf makes mosquitto_sub's stdout line-buffered so that the
        # "Subscribed" debug line reaches us before the process exits.
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.all_lines = []
        self.messages = []
        self.returncode = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.rstrip(b"\n")
            self.all_lines.append(line)
            if line.startswith(b"MSG\t"):
                _, q, r, topic, payload = line.split(b"\t", 4)
                self.messages.append(Msg(topic.decode(), payload, int(q), r == b"1", None))
            self.lines.put(line)
        self.lines.put(None)

    def wait_subscribed(self, timeout=5):
        """Block until SUBACK; return the granted QoS list."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                self.kill()
                raise AssertionError("mosquitto_sub got no SUBACK within %s s: %r" % (timeout, self.all_lines))
            if line is None:
                raise AssertionError("mosquitto_sub exited before SUBACK: rc=%s out=%r err=%r" % (
                    self.proc.wait(), self.all_lines, self.proc.stderr.read()))
            if line.startswith(b"Subscribed (mid:"):
                granted = line.split(b":", 2)[2]
                return [int(x) for x in granted.split(b",")]

    def wait(self, expect_rc=0):
        """Wait (bounded by the -W timeout plus a margin) for the process to
        exit; return the messages it received. expect_rc=0 means it got its
        -C count; 27 means the -W timeout expired first."""
        try:
            self.returncode = self.proc.wait(timeout=self.timeout + 5)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("mosquitto_sub did not exit: %r" % self.all_lines)
        self._reader.join(timeout=5)
        if expect_rc is not None:
            assert self.returncode == expect_rc, (
                "mosquitto_sub exited %s (27 = -W timeout before -C count), messages %r, stderr %r"
                % (self.returncode, self.messages, self.proc.stderr.read()))
        return list(self.messages)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)


def mosq_pub(port, topic, message=None, qos=0, retain=False, lines=None,
             null=False, version=None, client_id=None, host=HOST, extra=(),
             check=True):
    """Run mosquitto_pub once. lines: list of payloads sent as separate
    messages over one connection (-l, in order). Returns CompletedProcess."""
    args = ["mosquitto_pub", "-h", host, "-p", str(port), "-t", topic, "-q", str(qos)]
    if retain:
        args.append("-r")
    if version is not None:
        args += ["-V", version]
    if client_id is not None:
        args += ["-i", client_id]
    stdin = None
    if null:
        args.append("-n")
    elif lines is not None:
        args.append("-l")
        stdin = "".join(l + "\n" for l in lines).encode()
    else:
        args += ["-m", message if message is not None else ""]
    args += list(extra)
    res = subprocess.run(args, input=stdin, capture_output=True, timeout=20)
    if check:
        assert res.returncode == 0, "mosquitto_pub failed rc=%s: %s" % (res.returncode, res.stderr)
    return res


# --------------------------------------------------------------------------
# Paho


class PahoClient:
    """A Paho 1.6.1 client (threaded interface, no automatic reconnect) with
    blocking, bounded helpers. Messages received are appended to
    self.messages."""

    def __init__(self, port, client_id="", clean_session=True, host=HOST,
                 protocol=mqtt.MQTTv311, will=None, keepalive=60):
        self.host, self.port, self.keepalive = host, port, keepalive
        self.client = mqtt.Client(client_id=client_id, clean_session=clean_session,
                                  protocol=protocol, reconnect_on_failure=False)
        if will is not None:
            topic, payload, qos, retain = will
            self.client.will_set(topic, payload, qos, retain)
        self.cond = threading.Condition()
        self.messages = []
        self.connack = None          # (session_present, rc)
        self.disconnect_rc = None    # rc passed to on_disconnect
        self.disconnected = threading.Event()
        self._subacks = {}
        self._unsubacks = set()
        self._started = False
        c = self.client
        c.on_connect = self._on_connect
        c.on_disconnect = self._on_disconnect
        c.on_message = self._on_message
        c.on_subscribe = self._on_subscribe
        c.on_unsubscribe = self._on_unsubscribe

    # callbacks (network thread)
    def _on_connect(self, client, userdata, flags, rc):
        with self.cond:
            self.connack = (bool(flags.get("session present")), rc)
            self.cond.notify_all()

    def _on_disconnect(self, client, userdata, rc):
        with self.cond:
            self.disconnect_rc = rc
            self.disconnected.set()
            self.cond.notify_all()

    def _on_message(self, client, userdata, m):
        with self.cond:
            self.messages.append(Msg(m.topic, m.payload, m.qos, bool(m.retain), bool(m.dup)))
            self.cond.notify_all()

    def _on_subscribe(self, client, userdata, mid, granted):
        with self.cond:
            self._subacks[mid] = list(granted)
            self.cond.notify_all()

    def _on_unsubscribe(self, client, userdata, mid):
        with self.cond:
            self._unsubacks.add(mid)
            self.cond.notify_all()

    def _wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if callable(what):
                        what = what()
                    raise AssertionError("Paho client: timed out after %.1f s waiting for %s" % (timeout, what))
                self.cond.wait(remaining)

    # API
    def connect(self, timeout=5, expect_rc=0):
        """Connect and wait for CONNACK; returns (session_present, rc)."""
        self.client.connect(self.host, self.port, self.keepalive)
        self.client.loop_start()
        self._started = True
        self._wait(lambda: self.connack is not None or self.disconnected.is_set(),
                   timeout, "CONNACK")
        assert self.connack is not None, "connection closed before CONNACK"
        if expect_rc is not None:
            assert self.connack[1] == expect_rc, "CONNACK rc %s" % self.connack[1]
        return self.connack

    def subscribe(self, topic, qos=0, timeout=5):
        """topic: a filter or a list of (filter, qos). Returns granted QoS list."""
        rc, mid = self.client.subscribe(topic, qos)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "subscribe rc %s" % rc
        return self._wait(lambda: self._subacks.get(mid), timeout, "SUBACK")

    def unsubscribe(self, topic, timeout=5):
        rc, mid = self.client.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "unsubscribe rc %s" % rc
        self._wait(lambda: mid in self._unsubacks, timeout, "UNSUBACK")

    def publish(self, topic, payload, qos=0, retain=False, wait=True, timeout=10):
        """Publish; with wait, block until the QoS flow completes (PUBACK /
        PUBCOMP) or the bytes are written (QoS 0)."""
        info = self.client.publish(topic, payload, qos, retain)
        assert info.rc == mqtt.MQTT_ERR_SUCCESS, "publish rc %s" % info.rc
        if wait:
            info.wait_for_publish(timeout)
            assert info.is_published(), "publish of %r to %s not acknowledged within %s s" % (
                payload, topic, timeout)
        return info

    def wait_messages(self, n, timeout=5, topic=None):
        """Wait until at least n messages (on `topic`, if given) have arrived;
        return those messages."""
        def sel():
            return [m for m in self.messages if topic is None or m.topic == topic]
        self._wait(lambda: len(sel()) >= n, timeout,
                   lambda: "%d messages%s (have %d)" % (n, " on " + topic if topic else "", len(sel())))
        return sel()

    def wait_for(self, predicate, timeout=5, what="messages"):
        """Wait until predicate(list of messages) is true; return its value.
        what: description (or a callable giving one) for the failure message."""
        return self._wait(lambda: predicate(list(self.messages)), timeout, what)

    def wait_disconnected(self, timeout=5):
        self._wait(self.disconnected.is_set, timeout, "disconnect")
        return self.disconnect_rc

    def sync(self, timeout=5):
        """Round-trip barrier: everything this client sent before has been
        processed by the broker when this returns (a QoS 1 publish to a topic
        nobody subscribes to, waiting for its PUBACK)."""
        self.publish("sync-barrier/%d" % id(self), b"", qos=1, timeout=timeout)

    def disconnect(self, timeout=5):
        """Clean DISCONNECT."""
        if not self.disconnected.is_set():
            self.client.disconnect()
            self.wait_disconnected(timeout)
        self.stop()

    def stop(self):
        """Stop the network thread; if still connected, drop the connection
        without DISCONNECT (shutdown wakes the thread at once)."""
        if not self._started:
            return
        if not self.disconnected.is_set():
            sock = self.client.socket()
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.disconnected.wait(5)
        self.client.loop_stop()
        self._started = False


def start_will_client(port, client_id, will_topic, will_payload, will_qos=1,
                      will_retain=False, mode="hang"):
    """Start tests/integration/paho_will_client.py (a Paho client with a
    will) in its own process; returns the Popen once the client has its
    CONNACK. mode "hang": stays connected until killed. mode "disconnect":
    sends DISCONNECT and exits 0."""
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "paho_will_client.py"), str(port), client_id,
         will_topic, will_payload, str(will_qos), "1" if will_retain else "0", mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = _readline_bounded(proc, 10)
    if line.strip() != b"CONNECTED":
        proc.kill()
        raise AssertionError("will client did not connect: %r %r" % (line, proc.stderr.read()))
    return proc


def _readline_bounded(proc, timeout):
    out = []
    t = threading.Thread(target=lambda: out.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return out[0] if out else b""
