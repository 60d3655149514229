"""Mutual TLS on ternd's TLS listener (SPEC C3): who gets in, with which
identity, and what the log says about those who do not. Real clients
(mosquitto_pub/sub, Paho, Python's ssl) with certificates from
scripts/pki.sh (the tls_pki fixture)."""

import socket
import ssl

import pytest

from mqttclients import MosqSub, mosq_pub, wait_until

pytestmark = pytest.mark.tern_only

CONNECT = b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00"   # clean session, empty id


def log_has(b, text, timeout=5):
    wait_until(lambda: text in b.stderr_text(), timeout, what="log line %r" % text)


def refused_pub(tls, b, name, extra=()):
    res = mosq_pub(b.tls_port, "t/x", "m", extra=tls.mosq_args(name) + list(extra), check=False)
    assert res.returncode != 0, "mosquitto_pub with %r was accepted" % name
    return res


def test_valid_client_certificate_carries_messages_both_ways(tls):
    b = tls.start()
    sub = MosqSub(b.tls_port, ["t/#"], qos=1, count=1, extra=tls.mosq_args("dev-client"))
    sub.wait_subscribed()
    mosq_pub(b.tls_port, "t/hello", "over mTLS", qos=1, extra=tls.mosq_args("alice"))
    got = sub.wait()
    assert [(m.topic, m.payload) for m in got] == [("t/hello", b"over mTLS")]
    log_has(b, "identity dev-client (TLSv1.3")
    log_has(b, "identity alice (TLSv1.3")


def test_paho_client_connects_with_its_certificate(tls):
    b = tls.start()
    c = tls.paho(b, "bob", client_id="paho-bob")
    c.connect()
    assert c.subscribe("p/#", 1) == [1]
    c.publish("p/1", b"x" * 100000, qos=1)          # several full records
    got = c.wait_messages(1)
    assert got[0].payload == b"x" * 100000
    c.disconnect()


def test_client_without_certificate_is_refused(tls):
    b = tls.start()
    refused_pub(tls, b, None)
    log_has(b, "failed: no client certificate")


def test_certificate_from_another_ca_is_refused(tls):
    b = tls.start()
    refused_pub(tls, b, "intruder")
    log_has(b, "failed: certificate not issued by a trusted CA")


def test_expired_certificate_is_refused(tls):
    b = tls.start()
    refused_pub(tls, b, "expired")
    log_has(b, "failed: certificate expired")


def test_client_that_distrusts_the_server_is_logged_with_its_alert(tls):
    b = tls.start()
    res = mosq_pub(b.tls_port, "t/x", "m", check=False,
                   extra=["--cafile", tls.pki.path("other-ca.crt"),
                          "--cert", tls.pki.cert("alice")[0], "--key", tls.pki.cert("alice")[1]])
    assert res.returncode != 0
    log_has(b, "the client does not accept tls.cert")


def tls12_handshake(tls, b):
    ctx = tls.context("dev-client", max_version=ssl.TLSVersion.TLSv1_2)
    with socket.create_connection((b.host, b.tls_port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            t.sendall(CONNECT)
            return t.version(), t.recv(4)


def test_tls12_only_client_is_refused_while_minimum_is_13(tls):
    b = tls.start()
    with pytest.raises(ssl.SSLError):
        tls12_handshake(tls, b)
    log_has(b, "failed: no TLS version in common")


def test_tls12_client_is_accepted_when_minimum_is_12(tls):
    b = tls.start(tls_min_version="1.2")
    version, connack = tls12_handshake(tls, b)
    assert version == "TLSv1.2"
    assert connack == b"\x20\x02\x00\x00"


def test_plaintext_mqtt_on_the_tls_port_is_closed_and_logged(tls):
    b = tls.start()
    with socket.create_connection((b.host, b.tls_port), timeout=5) as s:
        s.sendall(CONNECT)
        while s.recv(100):      # an alert may come first; then the broker closes
            pass                # (a timeout here would raise: not closed)
    log_has(b, "failed: not TLS")


def test_optional_client_certificate_admits_anonymous_clients(tls):
    b = tls.start(tls_require_client_cert="false", auth_allow_anonymous="true")
    sub = MosqSub(b.tls_port, ["a/#"], count=1, extra=tls.mosq_args(None))
    sub.wait_subscribed()
    mosq_pub(b.tls_port, "a/b", "anon", extra=tls.mosq_args(None))
    assert [m.payload for m in sub.wait()] == [b"anon"]
    log_has(b, "identity none (no certificate)")


def test_check_validates_the_tls_files(tls, tmp_path):
    """--check builds the TLS context: a key that does not match is caught
    before the daemon would start."""
    import subprocess
    from conftest import TERN_BIN
    conf = tmp_path / "bad.conf"
    conf.write_text("config_version = 1\nlistener.tls = 127.0.0.1:0\n"
                    "tls.cert = %s\ntls.key = %s\ntls.client_ca = %s\n"
                    % (tls.pki.path("server.crt"), tls.pki.cert("alice")[1], tls.pki.ca))
    res = subprocess.run([TERN_BIN, "--check", "-c", str(conf)], capture_output=True, timeout=30)
    assert res.returncode == 1
    # The key, its line and the file are named (issue 16 item 10).
    key_file = tls.pki.cert("alice")[1]
    assert ("%s:4: tls.key: %s: does not match the server certificate"
            % (conf, key_file)).encode() in res.stderr, res.stderr
    res = subprocess.run([TERN_BIN, "-c", str(conf)], capture_output=True, timeout=30)
    assert res.returncode == 2


def test_certificate_and_key_errors_name_the_key_line_and_file(tls, tmp_path):
    """Issue 16 item 10: an unreadable or unusable certificate or key is
    reported as "CONFIG:LINE: KEY: FILE: reason", like the parser's own
    messages, at start (exit status 2) and by --check (exit status 1)."""
    import subprocess
    from conftest import TERN_BIN
    conf = tmp_path / "tern.conf"
    missing = str(tmp_path / "no-such.crt")
    not_a_cert = tls.pki.path("server.key")
    cases = [
        ("tls.cert = %s\ntls.key = %s\n" % (missing, tls.pki.path("server.key")),
         "%s:3: tls.cert: %s: No such file or directory" % (conf, missing)),
        ("tls.cert = %s\ntls.key = %s\n" % (not_a_cert, tls.pki.path("server.key")),
         "%s:3: tls.cert: %s: no PEM certificate found" % (conf, not_a_cert)),
        ("tls.key = %s\ntls.cert = %s\n" % (tls.pki.ca, tls.pki.path("server.crt")),
         "%s:3: tls.key: %s: cannot load it" % (conf, tls.pki.ca)),
    ]
    for files, want in cases:
        conf.write_text("config_version = 1\nlistener.tls = 127.0.0.1:0\n" + files +
                        "tls.client_ca = %s\n" % tls.pki.ca)
        res = subprocess.run([TERN_BIN, "-c", str(conf)], capture_output=True, timeout=30,
                             stdin=subprocess.DEVNULL)
        assert res.returncode == 2, res.stderr
        assert want.encode() in res.stderr, res.stderr
        res = subprocess.run([TERN_BIN, "--check", "-c", str(conf)], capture_output=True,
                             timeout=30)
        assert res.returncode == 1, res.stderr
        assert want.encode() in res.stderr, res.stderr
