"""The operator console (SPEC C6, docs/CONSOLE.md) against the daemon over
mutual TLS: every command answered for an operator (on its identity topic,
and on an MQTT 5.0 Response Topic with Correlation Data), every command
refused for a non-operator (nothing executed, no answer), kick's
DISCONNECT 0x98 and 3.1.1 close, config-show without key material,
session-delete and retained-clear across a restart with a store, and the
mosquitto_pub/mosquitto_sub session docs/CONSOLE.md shows."""

import base64
import json
import ssl
import subprocess
import time

import pytest

import raw5 as R5
import rawmqtt as rm
from mqtt5clients import Paho5, make_props
from mqttclients import MosqSub, wait_until
from paho.mqtt.packettypes import PacketTypes

pytestmark = pytest.mark.tern_only

REQUEST = "$SYS/console/request"
OP = "dev-operator"            # CN of the test PKI's operator
ANSWERS = "$SYS/console/response/" + OP

COMMANDS = [
    {"command": "status"},
    {"command": "clients"},
    {"command": "kick", "client": "victim"},
    {"command": "session-delete", "client": "victim"},
    {"command": "retained-list"},
    {"command": "retained-clear", "topic": "keep/me"},
    {"command": "config-show"},
    {"command": "backup-now"},
    {"command": "scrub-now"},
    {"command": "diag"},
    {"command": "log-level", "level": "debug"},
]


def paho(tls, b, name, client_id, **kw):
    c = tls.paho(b, name, client_id=client_id, **kw)
    c.connect()
    return c


def paho5(tls, b, name, client_id):
    c = Paho5(b.tls_port, client_id=client_id)
    crt, key = tls.pki.cert(name)
    c.client.tls_set(ca_certs=tls.pki.ca, certfile=crt, keyfile=key,
                     tls_version=ssl.PROTOCOL_TLS_CLIENT)
    return c


class Operator:
    """An operator (3.1.1) reading its answers on its identity topic."""

    def __init__(self, tls, b, client_id="op"):
        self.c = paho(tls, b, OP, client_id)
        assert self.c.subscribe(ANSWERS, 1) == [1]

    def ask(self, request, timeout=10):
        before = len(self.c.messages)
        self.c.publish(REQUEST, json.dumps(request).encode(), qos=1)
        self.c.wait_for(lambda ms: len(ms) > before, timeout=timeout, what="an answer")
        m = self.c.messages[before]
        assert m.topic == ANSWERS
        return json.loads(m.payload)


def test_every_command_is_answered_for_an_operator(tls, tmp_path):
    b = tls.start(config={"store.path": str(tmp_path / "store.db")})
    op = Operator(tls, b)
    victim = paho(tls, b, "alice", "victim", clean_session=False)
    pub = paho(tls, b, "bob", "pub")
    pub.publish("keep/me", b"retained", qos=1, retain=True)

    a = op.ask({"command": "status"})
    assert a["ok"] is True and a["command"] == "status"
    assert a["clients"]["connected"] == 3 and a["store"]["state"] == "ok"

    a = op.ask({"command": "clients"})
    assert a["ok"] and a["matched"] == 3 and a["more"] is False
    v = [c for c in a["clients"] if c["client"] == "victim"][0]
    assert v["identity"] == "alice" and v["protocol"] == "3.1.1"
    assert v["address"].startswith("127.0.0.1:")
    assert "connected_since_ms" in v and "queued" in v and "inflight" in v

    a = op.ask({"command": "retained-list"})
    assert a["ok"] and [r["topic"] for r in a["retained"]] == ["keep/me"]
    assert a["retained"][0]["bytes"] == len(b"retained")

    a = op.ask({"command": "config-show"})
    assert a["ok"] and a["config"]["tls.key"].endswith("server.key")

    a = op.ask({"command": "backup-now"})
    assert a["ok"] and a["started"] is True
    a = op.ask({"command": "scrub-now"})
    assert a["ok"] is False and "no disk scrubber" in a["error"]

    a = op.ask({"command": "diag"}, timeout=30)
    assert a["ok"], a
    assert "crypto" in a and "handshake" in a

    a = op.ask({"command": "log-level", "level": "debug"})
    assert a["ok"] and a["level"] == "debug" and a["previous"] == "info"
    pub.publish("$SYS/forged", b"x", qos=1)    # refused: a DEBUG line now
    wait_until(lambda: "DEBUG client pub: publish to '$SYS/forged' denied" in b.stderr_text(),
               timeout=5, what="a debug line")

    a = op.ask({"command": "kick", "client": "victim"})
    assert a["ok"] and a["kicked"] is True
    victim.wait_disconnected()
    a = op.ask({"command": "session-delete", "client": "victim"})
    assert a["ok"] and a["was_connected"] is False
    a = op.ask({"command": "retained-clear", "topic": "keep/me"})
    assert a["ok"] and a["cleared"] == 1

    a = op.ask({"command": "status"})
    # Counted once answered: this status is not in its own figures.
    assert a["console"]["requests"] == 11 and a["console"]["errors"] == 1  # scrub-now
    log = b.stderr_text()
    assert "console: operator dev-operator (client op): kick: ok" in log
    op.c.disconnect()
    pub.disconnect()


@pytest.mark.parametrize("request_", COMMANDS, ids=[c["command"] for c in COMMANDS])
def test_non_operator_request_executes_nothing_and_gets_no_answer(tls, tmp_path, request_):
    b = tls.start(config={"store.path": str(tmp_path / "store.db")})
    watch = paho(tls, b, OP, "watch")
    assert watch.subscribe("$SYS/console/#", 1) == [1]
    victim = paho(tls, b, "alice", "victim", clean_session=False)
    pub = paho(tls, b, "bob", "pub")
    pub.publish("keep/me", b"retained", qos=1, retain=True)

    # A 5.0 non-operator asking for its answer on a topic it reads.
    nosy = paho5(tls, b, "dev-client", "nosy")
    nosy.connect()
    nosy.subscribe("replies/nosy", 1)
    props = make_props(PacketTypes.PUBLISH, ResponseTopic="replies/nosy",
                       CorrelationData=b"c1")
    nosy.publish(REQUEST, json.dumps(request_).encode(), qos=1, props=props)
    # 3.1.1 too, answered (if at all) on its identity topic.
    plain = paho(tls, b, "bob", "plain")
    plain.publish(REQUEST, json.dumps(request_).encode(), qos=1)

    # Barrier: the operator's own request is answered after anything the
    # refused ones could have caused.
    watch.publish(REQUEST, b'{"command":"status"}', qos=1)
    watch.wait_for(lambda ms: any(m.topic == ANSWERS for m in ms), timeout=10,
                   what="the operator's answer")
    status = json.loads([m for m in watch.messages if m.topic == ANSWERS][0].payload)
    assert [m.topic for m in watch.messages if m.topic != ANSWERS] == []
    assert status["console"]["refused"] == 2 and status["console"]["requests"] == 0
    assert status["connections"]["acl_denied"] >= 2
    assert status["clients"]["connected"] == 5          # victim not kicked
    assert status["retained"]["count"] >= 1             # keep/me not cleared
    assert [m for m in nosy.messages if m.topic == "replies/nosy"] == []
    assert victim.client.is_connected()
    log = b.stderr_text()
    assert "console: operator" not in log.replace("console: operator dev-operator (client watch)", "")
    assert "DEBUG" not in log
    assert "backup requested" not in log
    for c in (watch, victim, pub, plain):
        c.disconnect()
    nosy.disconnect()


def test_response_topic_gets_the_answer_with_its_correlation_data(tls):
    b = tls.start()
    op = paho5(tls, b, OP, "op5")
    op.connect()
    op.subscribe("replies/op", 1)
    props = make_props(PacketTypes.PUBLISH, ResponseTopic="replies/op", CorrelationData=b"id-7")
    op.publish(REQUEST, b'{"command":"clients"}', qos=1, props=props)
    got = op.wait_messages(1, topic="replies/op", timeout=10)
    assert got[0].props.get("CorrelationData") == b"id-7"
    a = json.loads(got[0].payload)
    assert a["ok"] and a["clients"][0]["protocol"] == "5.0"
    op.disconnect()


def test_kick_sends_0x98_to_a_5_client_and_closes_a_311_one(tls):
    # Raw clients: Paho 1.6.1 drops a server DISCONNECT's reason code.
    b = tls.start()
    op = Operator(tls, b)
    five = R5.RawClient5("127.0.0.1", b.tls_port, tls=tls.context("alice"))
    assert five.connect5(client_id="five")[1] == 0
    a = op.ask({"command": "kick", "client": "five"})
    assert a["ok"] and a["kicked"] is True
    reason, _ = five.expect_disconnect()
    assert reason == 0x98                      # Administrative action
    three = rm.RawClient("127.0.0.1", b.tls_port, tls=tls.context("bob"))
    assert three.connect(client_id="three").return_code == 0
    a = op.ask({"command": "kick", "client": "three"})
    assert a["ok"]
    assert three.wait_closed() == []           # 3.1.1: closed, no DISCONNECT
    a = op.ask({"command": "kick", "client": "three"})
    assert a["ok"] is False and a["error"] == "no such client"
    op.c.disconnect()


def test_config_show_contains_no_key_material(tls):
    b = tls.start(config={"tls.operators": "listed-op"})
    op = Operator(tls, b)
    a = op.ask({"command": "config-show"})
    assert a["ok"]
    text = json.dumps(a)
    for name in ("server.key", "dev-operator.key", "ca.key", "operator-ca.key"):
        try:
            key = open(tls.pki.path(name), "rb").read()
        except FileNotFoundError:
            continue
        assert key.decode() not in text
        body = [l for l in key.decode().splitlines() if l and not l.startswith("-----")]
        assert body
        for line in body:
            assert line not in text
        der = base64.b64decode("".join(body))
        assert der.hex() not in text
    # Every configuration value is shown; the one list and the paths as written.
    cfg = a["config"]
    assert cfg["tls.key"] == tls.pki.path("server.key")
    assert cfg["tls.operators"] == "listed-op"
    assert "PRIVATE KEY" not in text
    op.c.disconnect()


def test_session_delete_and_retained_clear_hold_across_a_restart(broker, tls, tmp_path):
    db = str(tmp_path / "store.db")
    b = tls.start(config={"store.path": db})
    sleepy = paho(tls, b, "alice", "sleepy", clean_session=False)
    assert sleepy.subscribe("x/#", 1) == [1]
    sleepy.disconnect()
    keep = paho(tls, b, "bob", "keep", clean_session=False)
    keep.disconnect()
    pub = paho(tls, b, "bob", "pub")
    pub.publish("gone/a", b"1", qos=1, retain=True)
    pub.publish("gone/b", b"2", qos=1, retain=True)
    pub.publish("stays", b"3", qos=1, retain=True)
    pub.disconnect()
    op = Operator(tls, b)
    assert op.ask({"command": "session-delete", "client": "sleepy"})["ok"]
    a = op.ask({"command": "retained-clear", "filter": "gone/#"})
    assert a["ok"] is False and "confirm" in a["error"]
    a = op.ask({"command": "retained-clear", "filter": "gone/#", "confirm": True})
    assert a["ok"] and a["cleared"] == 2
    op.c.disconnect()
    assert b.stop() == []

    b2 = tls.start(config={"store.path": db})
    op = Operator(tls, b2)
    a = op.ask({"command": "retained-list", "filter": "#"})
    assert [r["topic"] for r in a["retained"]] == ["stays"]
    a = op.ask({"command": "session-delete", "client": "sleepy"})
    assert a["ok"] is False and a["error"] == "no such session"
    a = op.ask({"command": "session-delete", "client": "keep"})
    assert a["ok"] is True
    op.c.disconnect()


def test_the_documented_mosquitto_session(tls):
    """docs/CONSOLE.md's example: mosquitto_sub on the identity topic,
    mosquitto_pub sending the request, both with the operator's certificate."""
    b = tls.start()
    sub = MosqSub(b.tls_port, [ANSWERS], qos=1, count=1, timeout=15,
                  extra=tls.mosq_args(OP) + ["--insecure"])
    sub.wait_subscribed()
    res = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(b.tls_port)]
                         + tls.mosq_args(OP) + ["--insecure", "-t", REQUEST, "-q", "1",
                                                "-m", '{"command":"status"}'],
                         capture_output=True, timeout=20)
    assert res.returncode == 0, res.stderr
    msgs = sub.wait()
    a = json.loads(msgs[0].payload)
    assert a["command"] == "status" and a["ok"] is True
