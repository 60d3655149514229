"""MQTT 5.0 clients for the integration tests (test_mqtt5_*.py), with
bounded waits, next to mqttclients.py (3.1.1).

- Paho5: Debian's Paho 1.6.1 (python3-paho-mqtt) speaking MQTTv5, every
  property it receives kept as a dict (props()). Paho 1.6.1 does not
  resolve a Topic Alias the server sends, so Paho5 does (the alias map of
  the connection, as a client must [MQTT-3.3.2-10]) and records the alias
  each message came with. It also drops the reason code of a DISCONNECT
  shorter than 3 bytes (its _handle_disconnect), so server DISCONNECT
  reasons are checked with raw5.RawClient5 or MQTT.js instead.
- Mosq5Sub / mosq5_pub: mosquitto_sub and mosquitto_pub (Debian's,
  2.0.11) with -V mqttv5 and their -D properties; Mosq5Sub prints each
  message's 5.0 properties with -F. (mosquitto_rr, the request/response
  client, runs in its test.)
- mqttjs(): runs a scenario of tests/integration/js/runner.js (MQTT.js, the
  npm mqtt package that `make setup` installs there) and returns its JSON.
- sigterm_and_wait(): SIGTERM a broker from the fixture and wait for a
  clean exit (the fixture's teardown then has nothing left to do).
"""

import collections
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

HOST = "127.0.0.1"
HERE = os.path.dirname(os.path.abspath(__file__))
JS_DIR = os.path.join(HERE, "js")

# A received message: props is a dict of the PUBLISH's properties by Paho's
# names (UserProperty: list of pairs, SubscriptionIdentifier: list);
# alias is the Topic Alias it carried (None: none).
Msg5 = collections.namedtuple("Msg5", "topic payload qos retain dup props alias")


def props_dict(p):
    """A Paho Properties object as a plain dict (missing: {})."""
    if p is None:
        return {}
    out = {}
    for name in p.names.keys():
        key = name.replace(" ", "")
        if hasattr(p, key):
            out[key] = getattr(p, key)
    return out


def make_props(packet_type, **values):
    """Paho Properties for packet_type (PacketTypes.CONNECT, PUBLISH, ...)
    with the given values by Paho's names (UserProperty=[(k, v), ...])."""
    p = Properties(packet_type)
    for k, v in values.items():
        setattr(p, k, v)
    return p


class Paho5:
    """A Paho MQTTv5 client (threaded, no automatic reconnect) with bounded
    helpers. Received messages go to self.messages (Msg5)."""

    def __init__(self, port, client_id="", host=HOST, keepalive=60, will=None,
                 will_props=None):
        self.host, self.port, self.keepalive = host, port, keepalive
        self.client = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv5,
                                  reconnect_on_failure=False)
        if will is not None:
            topic, payload, qos, retain = will
            self.client.will_set(topic, payload, qos, retain, properties=will_props)
        self.cond = threading.Condition()
        self.messages = []
        self.connack = None            # (session_present, reason code int, props dict)
        self.disconnected = threading.Event()
        self.disconnect_rc = None
        self._subacks = {}
        self._unsubacks = {}
        self._aliases = {}
        self._started = False
        c = self.client
        c.on_connect = self._on_connect
        c.on_disconnect = self._on_disconnect
        c.on_message = self._on_message
        c.on_subscribe = self._on_subscribe
        c.on_unsubscribe = self._on_unsubscribe

    def _on_connect(self, client, userdata, flags, rc, properties=None):
        with self.cond:
            code = rc.value if hasattr(rc, "value") else int(rc)
            self.connack = (bool(flags.get("session present")), code, props_dict(properties))
            self.cond.notify_all()

    def _on_disconnect(self, client, userdata, rc, properties=None):
        with self.cond:
            self.disconnect_rc = rc
            self.disconnected.set()
            self.cond.notify_all()

    def _on_message(self, client, userdata, m):
        props = props_dict(getattr(m, "properties", None))
        alias = props.get("TopicAlias")
        topic = m.topic
        if alias is not None:
            # The server's outbound alias: a topic sets it, an empty topic
            # uses it [MQTT-3.3.2-10].
            if topic:
                self._aliases[alias] = topic
            else:
                topic = self._aliases.get(alias, "<unknown alias %d>" % alias)
        with self.cond:
            self.messages.append(Msg5(topic, m.payload, m.qos, bool(m.retain), bool(m.dup),
                                      props, alias))
            self.cond.notify_all()

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties=None):
        with self.cond:
            self._subacks[mid] = [rc.value if hasattr(rc, "value") else int(rc)
                                  for rc in reason_codes]
            self.cond.notify_all()

    def _on_unsubscribe(self, client, userdata, mid, properties=None, reason_codes=None):
        with self.cond:
            codes = reason_codes if isinstance(reason_codes, list) else [reason_codes]
            self._unsubacks[mid] = [rc.value if hasattr(rc, "value") else rc for rc in codes]
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
                    raise AssertionError("Paho5: timed out after %.1f s waiting for %s" % (timeout, what))
                self.cond.wait(remaining)

    def connect(self, clean_start=True, props=None, timeout=5, expect_rc=0, **prop_values):
        """CONNECT (props: Paho Properties, or property values as keywords:
        SessionExpiryInterval=60); wait for CONNACK; returns
        (session_present, reason_code, connack_props)."""
        if props is None and prop_values:
            props = make_props(PacketTypes.CONNECT, **prop_values)
        self.client.connect(self.host, self.port, self.keepalive, clean_start=clean_start,
                            properties=props)
        self.client.loop_start()
        self._started = True
        self._wait(lambda: self.connack is not None or self.disconnected.is_set(),
                   timeout, "CONNACK")
        assert self.connack is not None, "connection closed before CONNACK"
        if expect_rc is not None:
            assert self.connack[1] == expect_rc, "CONNACK reason code %#x" % self.connack[1]
        return self.connack

    def subscribe(self, topic, qos=0, no_local=False, rap=False, rh=0, sub_id=None,
                  timeout=5):
        """One filter with its 5.0 options; returns the SUBACK reason codes."""
        opts = SubscribeOptions(qos=qos, noLocal=no_local, retainAsPublished=rap,
                                retainHandling=rh)
        props = None
        if sub_id is not None:
            props = make_props(PacketTypes.SUBSCRIBE, SubscriptionIdentifier=sub_id)
        rc, mid = self.client.subscribe(topic, options=opts, properties=props)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "subscribe rc %s" % rc
        return self._wait(lambda: self._subacks.get(mid), timeout, "SUBACK")

    def unsubscribe(self, topic, timeout=5):
        rc, mid = self.client.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "unsubscribe rc %s" % rc
        return self._wait(lambda: self._unsubacks.get(mid), timeout, "UNSUBACK")

    def publish(self, topic, payload, qos=0, retain=False, wait=True, timeout=10, props=None,
                **prop_values):
        """PUBLISH with properties (keywords by Paho's names:
        MessageExpiryInterval=5, UserProperty=[("k", "v")], ...); with wait,
        block until PUBACK / PUBCOMP (or the bytes are written, QoS 0)."""
        if props is None and prop_values:
            props = make_props(PacketTypes.PUBLISH, **prop_values)
        info = self.client.publish(topic, payload, qos, retain, properties=props)
        assert info.rc == mqtt.MQTT_ERR_SUCCESS, "publish rc %s" % info.rc
        if wait:
            info.wait_for_publish(timeout)
            assert info.is_published(), "publish of %r to %s not acknowledged within %s s" % (
                payload, topic, timeout)
        return info

    def wait_messages(self, n, timeout=5, topic=None):
        def sel():
            return [m for m in self.messages if topic is None or m.topic == topic]
        self._wait(lambda: len(sel()) >= n, timeout,
                   lambda: "%d messages%s (have %r)" % (n, " on " + topic if topic else "", sel()))
        return sel()

    def wait_for(self, predicate, timeout=5, what="messages"):
        """Wait until predicate(list of messages) is true; return its value."""
        return self._wait(lambda: predicate(list(self.messages)), timeout, what)

    def barrier(self, sender, name):
        """Subscribe to barrier/NAME, have `sender` (a Paho5 or PahoClient)
        publish a QoS 1 marker there and wait for it: anything the broker
        routed to this client before has arrived by then. Returns the
        messages received before the marker."""
        topic = "barrier/" + name
        self.subscribe(topic, 1)
        sender.publish(topic, b"end", qos=1)
        self.wait_messages(1, topic=topic)
        return [m for m in self.messages if m.topic != topic]

    def sync(self, timeout=5):
        """Everything this client sent before has been processed when this
        returns (a QoS 1 publish to a topic nobody subscribes to)."""
        self.publish("sync-barrier/%d" % id(self), b"", qos=1, timeout=timeout)

    def wait_disconnected(self, timeout=5):
        self._wait(self.disconnected.is_set, timeout, "disconnect")
        return self.disconnect_rc

    def disconnect(self, timeout=5, reason=0, **prop_values):
        """DISCONNECT with a reason code and properties
        (SessionExpiryInterval=0, ...)."""
        if not self.disconnected.is_set():
            props = make_props(PacketTypes.DISCONNECT, **prop_values) if prop_values else None
            from paho.mqtt.reasoncodes import ReasonCodes
            rc = ReasonCodes(PacketTypes.DISCONNECT, identifier=reason)
            self.client.disconnect(reasoncode=rc, properties=props)
            self.wait_disconnected(timeout)
        self.stop()

    def stop(self):
        """Stop the network thread; if still connected, drop the connection
        without DISCONNECT."""
        if not self._started:
            return
        if not self.disconnected.is_set():
            sock = self.client.socket()
            if sock is not None:
                try:
                    import socket as _s
                    sock.shutdown(_s.SHUT_RDWR)
                except OSError:
                    pass
            self.disconnected.wait(5)
        self.client.loop_stop()
        self._started = False


# --------------------------------------------------------------------------
# mosquitto_sub / mosquitto_pub / mosquitto_rr with -V mqttv5

# One message a line, tab-separated: qos, retain, topic, response topic,
# correlation data, content type, payload format indicator, message expiry,
# subscription identifier, user properties, payload. Payloads in the tests
# have no tabs or newlines.
_SUB5_FORMAT = "MSG5\t%q\t%r\t%t\t%R\t%D\t%C\t%F\t%E\t%S\t%P\t%p"
MosqMsg5 = collections.namedtuple(
    "MosqMsg5", "qos retain topic response_topic correlation content_type payload_format "
                "expiry sub_id user_props payload")


class Mosq5Sub:
    """mosquitto_sub -V mqttv5 subscribed to `topics`, exiting after `count`
    messages (-C) or `timeout` seconds (-W). extra: more options (-D ...,
    --retain-as-published, -x, -c, -i)."""

    def __init__(self, port, topics, qos=0, count=None, timeout=10, host=HOST, extra=()):
        args = ["stdbuf", "-oL", "mosquitto_sub", "-V", "mqttv5", "-h", host, "-p", str(port),
                "-q", str(qos), "-d", "-F", _SUB5_FORMAT, "-W", str(int(timeout))]
        for t in topics:
            args += ["-t", t]
        if count is not None:
            args += ["-C", str(count)]
        args += list(extra)
        self.args = args
        self.timeout = timeout
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
            if line.startswith(b"MSG5\t"):
                f = line.split(b"\t", 11)[1:]
                self.messages.append(MosqMsg5(
                    int(f[0]), f[1] == b"1", f[2].decode(), f[3].decode(), f[4], f[5].decode(),
                    f[6].decode(), f[7].decode(), f[8].decode(), f[9].decode(), f[10]))
            self.lines.put(line)
        self.lines.put(None)

    def wait_subscribed(self, timeout=5):
        """Block until SUBACK; return the reason codes it printed."""
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
                return [int(x) for x in line.split(b":", 2)[2].split(b",")]

    def wait(self, expect_rc=0):
        try:
            self.returncode = self.proc.wait(timeout=self.timeout + 5)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("mosquitto_sub did not exit: %r" % self.all_lines)
        self._reader.join(timeout=5)
        if expect_rc is not None:
            assert self.returncode == expect_rc, (
                "mosquitto_sub exited %s (27 = -W timeout before -C count), lines %r, stderr %r"
                % (self.returncode, self.all_lines, self.proc.stderr.read()))
        return list(self.messages)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)


def mosq5_pub(port, topic, message, qos=0, retain=False, props=(), host=HOST, extra=(),
              check=True, lines=None):
    """mosquitto_pub -V mqttv5 once. props: (command, name, value...) tuples
    for -D, e.g. ("publish", "user-property", "k", "v"). lines: payloads
    sent as separate messages over one connection (-l), message ignored."""
    args = ["mosquitto_pub", "-V", "mqttv5", "-h", host, "-p", str(port), "-t", topic,
            "-q", str(qos)]
    stdin = None
    if lines is not None:
        args.append("-l")
        stdin = "".join(l + "\n" for l in lines).encode()
    else:
        args += ["-m", message]
    if retain:
        args.append("-r")
    for p in props:
        args += ["-D"] + list(p)
    args += list(extra)
    res = subprocess.run(args, input=stdin, capture_output=True, timeout=20)
    if check:
        assert res.returncode == 0, "mosquitto_pub failed rc=%s: %s" % (res.returncode, res.stderr)
    return res


# --------------------------------------------------------------------------
# MQTT.js


def mqttjs_available():
    """(True, "") when node and MQTT.js are installed, else (False, why)."""
    if shutil.which("node") is None:
        return False, "node is not installed (make setup)"
    if not os.path.isdir(os.path.join(JS_DIR, "node_modules", "mqtt")):
        return False, "MQTT.js is not installed in %s (make setup)" % JS_DIR
    return True, ""


def mqttjs(scenario, port, timeout=20, **args):
    """Run `node runner.js SCENARIO JSON-ARGS` and return the JSON object it
    prints last. Its exit status must be 0 (the runner exits non-zero and
    prints {"error": ...} on an unexpected failure or its own time-out)."""
    ok, why = mqttjs_available()
    assert ok, why
    args = dict(args, port=port, host=HOST)
    res = subprocess.run(["node", os.path.join(JS_DIR, "runner.js"), scenario, json.dumps(args)],
                         capture_output=True, timeout=timeout + 10, cwd=JS_DIR)
    lines = [l for l in res.stdout.decode().splitlines() if l.startswith("{")]
    assert res.returncode == 0 and lines, "MQTT.js scenario %s failed (rc %s): %s %s" % (
        scenario, res.returncode, res.stdout.decode()[-2000:], res.stderr.decode()[-2000:])
    return json.loads(lines[-1])


# --------------------------------------------------------------------------
# Broker process


def sigterm_and_wait(b, timeout=10):
    """SIGTERM the broker and wait for its exit; asserts status 0 and marks
    it stopped so the fixture does not signal it again."""
    b.proc.send_signal(signal.SIGTERM)
    rc = b.proc.wait(timeout=timeout)
    b.stopped = True
    assert rc == 0, "broker exit status %s after SIGTERM:\n%s" % (rc, b.stderr_tail())
