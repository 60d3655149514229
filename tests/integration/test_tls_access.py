"""Identity-driven access over mutual TLS (SPEC C3): operators (by operator
CA or by tls.operators) read $SYS, nobody else does; acl.file rules with
%u (the certificate identity) and %c (the client id), allow and deny for
publish and subscribe; the identity cannot be replaced by a CONNECT user
name; the ACL is checked at start and reloaded on SIGHUP."""

import signal
import subprocess

import pytest

from conftest import TERN_BIN
from mqttclients import wait_until

pytestmark = pytest.mark.tern_only

SUB_FAILED = 0x80


def acl_file(tmp_path, text, name="acl"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def connected(tls, b, name, client_id, **kw):
    c = tls.paho(b, name, client_id=client_id, **kw)
    c.connect()
    return c


def silent(client, name, sender, unwanted):
    """True when `client` received nothing matching unwanted(topic) by the
    time a marker `sender` publishes afterwards has reached it (a barrier:
    anything sent to client earlier would have arrived first). `name` keeps
    each client's barrier topic apart; the ACL must let both use it."""
    barrier = "barrier/" + name
    assert client.subscribe(barrier, 1) == [1]
    sender.publish(barrier, b"end", qos=1)
    client.wait_messages(1, timeout=5, topic=barrier)
    return [m.topic for m in client.messages if unwanted(m.topic)] == []


# ---- $SYS and operators ---------------------------------------------------

def test_operator_from_operator_ca_receives_sys(tls):
    b = tls.start(sys_interval=1)
    op = connected(tls, b, "dev-operator", "op")
    assert op.subscribe("$SYS/#", 0) == [0]
    got = op.wait_messages(1, timeout=5, topic="$SYS/broker/version")
    assert got[0].payload
    op.disconnect()


def test_listed_identity_is_an_operator(tls):
    b = tls.start(sys_interval=1, tls_operators="someone, listed-op")
    op = connected(tls, b, "listed-op", "listed")
    assert op.subscribe("$SYS/broker/version", 0) == [0]
    op.wait_messages(1, timeout=5, topic="$SYS/broker/version")
    op.disconnect()


def test_non_operator_gets_0x80_for_sys_and_receives_nothing(tls):
    b = tls.start(sys_interval=1)
    c = connected(tls, b, "dev-client", "nosy")
    assert c.subscribe("$SYS/#", 0) == [SUB_FAILED]
    op = connected(tls, b, "dev-operator", "op")
    assert op.subscribe("$SYS/#", 0) == [0]
    # Two refreshes reach the operator; the client, asked after them, has
    # none (its barrier message comes after anything $SYS would have sent).
    op.wait_for(lambda ms: len([m for m in ms if m.topic == "$SYS/broker/uptime"]) >= 2,
                timeout=6, what="two $SYS refreshes")
    assert silent(c, "nosy", op, lambda t: t.startswith("$SYS"))
    c.disconnect()
    op.disconnect()


def test_nobody_publishes_to_sys_not_even_an_operator(tls):
    b = tls.start(sys_interval=0)
    op = connected(tls, b, "dev-operator", "op")
    assert op.subscribe("$SYS/custom", 0) == [0]
    op.publish("$SYS/custom", b"forged", qos=1)
    assert silent(op, "op", op, lambda t: t == "$SYS/custom")
    op.disconnect()


# ---- ACL with identities ----------------------------------------------------

def test_u_pattern_gives_each_identity_its_own_subtree(tls, tmp_path):
    acl = acl_file(tmp_path, "topic readwrite barrier/#\npattern readwrite devices/%u/#\n")
    b = tls.start(acl_file=acl)
    alice = connected(tls, b, "alice", "a1")
    bob = connected(tls, b, "bob", "b1")
    assert alice.subscribe("devices/alice/#", 1) == [1]
    assert alice.subscribe("devices/bob/#", 1) == [SUB_FAILED]
    assert bob.subscribe("devices/bob/#", 1) == [1]
    alice.publish("devices/bob/x", b"spoof", qos=1)       # acknowledged, not delivered
    alice.publish("devices/alice/x", b"mine", qos=1)
    assert [m.payload for m in alice.wait_messages(1, topic="devices/alice/x")] == [b"mine"]
    assert silent(bob, "bob", alice, lambda t: t == "devices/bob/x")
    alice.disconnect()
    bob.disconnect()


def test_c_pattern_binds_topics_to_the_client_id(tls, tmp_path):
    acl = acl_file(tmp_path, "pattern readwrite clients/%c/#\n")
    b = tls.start(acl_file=acl)
    c = connected(tls, b, "alice", "sensor-9")
    assert c.subscribe("clients/sensor-9/#", 0) == [0]
    assert c.subscribe("clients/sensor-1/#", 0) == [SUB_FAILED]
    c.publish("clients/sensor-9/t", b"ok", qos=1)
    c.wait_messages(1, topic="clients/sensor-9/t")
    c.disconnect()


def test_user_rules_allow_and_deny_publish_and_subscribe(tls, tmp_path):
    acl = acl_file(tmp_path, "topic read news/#\n"
                             "topic readwrite barrier/#\n"
                             "user alice\n"
                             "topic readwrite news/#\n"
                             "topic deny news/secret\n"
                             "user bob\n"
                             "topic read news/#\n")
    b = tls.start(acl_file=acl)
    alice = connected(tls, b, "alice", "alice")
    bob = connected(tls, b, "bob", "bob")
    assert bob.subscribe("news/#", 1) == [1]
    assert alice.subscribe("news/secret", 1) == [SUB_FAILED]   # deny beats allow
    alice.publish("news/today", b"hello", qos=1)              # alice may write
    assert [m.payload for m in bob.wait_messages(1, topic="news/today")] == [b"hello"]
    bob.publish("news/today", b"from bob", qos=1)             # bob may not
    alice.publish("news/secret", b"leak", qos=1)              # nobody writes this
    assert silent(bob, "bob", alice, lambda t: t == "news/secret")
    assert [m.payload for m in bob.messages if m.topic == "news/today"] == [b"hello"]
    alice.disconnect()
    bob.disconnect()


def test_connect_user_name_does_not_replace_the_certificate_identity(tls, tmp_path):
    acl = acl_file(tmp_path, "pattern readwrite home/%u/#\n")
    b = tls.start(acl_file=acl)
    # alice's certificate, claiming to be bob in CONNECT.
    c = connected(tls, b, "alice", "claims-bob", username="bob")
    assert c.subscribe("home/bob/#", 0) == [SUB_FAILED]
    assert c.subscribe("home/alice/#", 0) == [0]
    c.disconnect()


def test_bad_acl_file_stops_the_daemon_with_file_and_line(tls, tmp_path):
    acl = acl_file(tmp_path, "topic read ok/#\nnonsense here\n")
    conf = tmp_path / "t.conf"
    conf.write_text("config_version = 1\nlistener.tls = 127.0.0.1:0\n"
                    "tls.cert = %s\ntls.key = %s\ntls.client_ca = %s\nacl.file = %s\n"
                    % (tls.pki.path("server.crt"), tls.pki.path("server.key"), tls.pki.ca, acl))
    res = subprocess.run([TERN_BIN, "-c", str(conf)], capture_output=True, timeout=30)
    assert res.returncode == 2
    assert (acl + ":2:").encode() in res.stderr, res.stderr


def test_sighup_reloads_the_acl_and_keeps_it_when_the_new_one_is_bad(tls, tmp_path):
    acl = acl_file(tmp_path, "topic readwrite open/#\n")
    b = tls.start(acl_file=acl)
    c = connected(tls, b, "alice", "reloader")
    assert c.subscribe("later/#", 0) == [SUB_FAILED]
    (tmp_path / "acl").write_text("topic readwrite open/#\ntopic readwrite later/#\n")
    b.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "ACL reloaded" in b.stderr_text(), 5, what="reload log line")
    assert c.subscribe("later/#", 0) == [0]
    # A broken file: logged, and the rules in force stay.
    (tmp_path / "acl").write_text("topic readwrite open/#\nnonsense\n")
    b.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "keeping the previous ACL" in b.stderr_text(), 5, what="error line")
    assert c.subscribe("later/x", 0) == [0]
    assert b.alive()
    c.disconnect()


def test_sighup_reloads_certificates_for_new_connections(tls):
    b = tls.start()
    b.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "TLS certificates reloaded" in b.stderr_text(), 5, what="reload line")
    c = connected(tls, b, "dev-client", "after-reload")
    c.disconnect()
