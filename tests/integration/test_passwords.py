"""Mosquitto-format password files (auth.password_file, SPEC C3) with a
file made by the real mosquitto_passwd: right and wrong passwords and
unknown users (refused after a delay, counted on $SYS), the user name as
the ACL identity, a SIGHUP reload that removes a user, a bad file at start
and at reload, passwords refused on plaintext unless allowed, MQTT 5.0
codes, and credentials refused when there is no password file."""

import signal
import subprocess
import time

import pytest

from conftest import TERN_BIN
from mqtt5clients import Paho5
from mqttclients import PahoClient, mosq_pub, wait_until

pytestmark = pytest.mark.tern_only

BAD_CREDENTIALS = 4
NOT_AUTHORIZED = 5


def passwd_file(tmp_path, users):
    """A password file written by mosquitto_passwd (its default: $7$)."""
    path = tmp_path / "passwd"
    first = True
    for user, pw in users:
        args = ["mosquitto_passwd"] + (["-c"] if first else []) + ["-b", str(path), user, pw]
        subprocess.run(args, check=True, capture_output=True, timeout=20)
        first = False
    assert path.read_text().startswith(users[0][0] + ":$7$")
    return path


def start_tls(tls, path, **extra):
    """TLS listener where clients may come without a certificate and log in."""
    return tls.start(tls_require_client_cert="false", auth_password_file=str(path), **extra)


def pub(tls, b, user, pw, version=None):
    extra = tls.mosq_args(None) + ["--insecure"]
    if user is not None:
        extra += ["-u", user]
    if pw is not None:
        extra += ["-P", pw]
    t0 = time.monotonic()
    res = mosq_pub(b.tls_port, "t", "m", version=version, extra=extra, check=False)
    return res, time.monotonic() - t0


def paho_tls(tls, b, user, pw, client_id="", v5=False):
    import ssl
    pc = Paho5(b.tls_port, client_id=client_id) if v5 else PahoClient(b.tls_port, client_id=client_id)
    pc.client.tls_set(ca_certs=tls.pki.ca, tls_version=ssl.PROTOCOL_TLS_CLIENT)
    pc.client.tls_insecure_set(True)
    pc.client.username_pw_set(user, pw)
    return pc


def test_right_password_connects_wrong_and_unknown_are_refused_after_a_delay(tls, tmp_path):
    path = passwd_file(tmp_path, [("alice", "secret"), ("bob", "b:ob pw")])
    b = start_tls(tls, path)
    res, _ = pub(tls, b, "alice", "secret")
    assert res.returncode == 0, res.stderr
    res, _ = pub(tls, b, "bob", "b:ob pw")
    assert res.returncode == 0, res.stderr
    for user, pw in [("alice", "Secret"), ("nobody", "secret"), ("bob", "")]:
        res, took = pub(tls, b, user, pw)
        assert res.returncode != 0
        assert b"bad user name or password" in res.stderr.lower(), res.stderr
        assert took >= 0.9, "refused after %.2f s: not slowed" % took
    assert "CONNECT as user 'nobody' refused: bad user name or password" in b.stderr_text()


def test_user_name_is_the_acl_identity_without_a_certificate(tls, tmp_path):
    path = passwd_file(tmp_path, [("alice", "secret")])
    acl = tmp_path / "acl"
    acl.write_text("pattern readwrite home/%u/#\n")
    b = start_tls(tls, path, acl_file=str(acl))
    c = paho_tls(tls, b, "alice", "secret", client_id="a1")
    c.connect()
    assert c.subscribe("home/alice/#", 0) == [0]
    assert c.subscribe("home/bob/#", 0) == [0x80]
    c.disconnect()


def test_mqtt5_wrong_password_gets_0x86(tls, tmp_path):
    path = passwd_file(tmp_path, [("alice", "secret")])
    b = start_tls(tls, path)
    c = paho_tls(tls, b, "alice", "wrong", v5=True)
    c.connect(expect_rc=None, timeout=10)
    assert c.connack[1] == 0x86, c.connack
    res, _ = pub(tls, b, "alice", "secret", version="mqttv5")
    assert res.returncode == 0, res.stderr


def test_sighup_reload_removes_a_user_and_a_bad_file_keeps_the_old_one(tls, tmp_path):
    path = passwd_file(tmp_path, [("alice", "secret"), ("bob", "bobpw")])
    b = start_tls(tls, path)
    assert pub(tls, b, "bob", "bobpw")[0].returncode == 0
    subprocess.run(["mosquitto_passwd", "-D", str(path), "bob"], check=True, timeout=20)
    b.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "password file reloaded" in b.stderr_text(), 5, what="reload line")
    res, _ = pub(tls, b, "bob", "bobpw")
    assert res.returncode != 0 and b"bad user name or password" in res.stderr.lower()
    assert pub(tls, b, "alice", "secret")[0].returncode == 0
    # A broken file: logged with file and line, and alice still gets in.
    path.write_text(path.read_text() + "carol:$6$KgQx8os1bTcU8QTX$ElTb8zvshm+tZgCaRP6l2T4gqnPKZ5sN"
                    "OF9QvlIDtmldXldSWT1n104YKuy2xxQF8SIetk1goxjDhYDjhCpKxA==\n")
    b.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "keeping the previous password file" in b.stderr_text(), 5, what="error")
    assert "%s:2: $6$ hash" % path in b.stderr_text()
    assert pub(tls, b, "alice", "secret")[0].returncode == 0
    assert b.alive()


def test_bad_password_file_stops_the_daemon_naming_file_and_line(tmp_path):
    path = tmp_path / "passwd"
    path.write_text("# users\nalice:secret\n")
    conf = tmp_path / "t.conf"
    conf.write_text("config_version = 1\nlistener.plain = 127.0.0.1:0\n"
                    "auth.password_file = %s\n" % path)
    res = subprocess.run([TERN_BIN, "-c", str(conf)], capture_output=True, timeout=30)
    assert res.returncode == 2
    assert ("%s:2: not a $7$" % path).encode() in res.stderr, res.stderr


def test_plaintext_passwords_refused_unless_allowed(broker, tmp_path):
    path = passwd_file(tmp_path, [("alice", "secret")])
    b = broker(auth_password_file=str(path), auth_allow_anonymous="false")
    res = mosq_pub(b.port, "t", "m", extra=["-u", "alice", "-P", "secret"], check=False)
    assert res.returncode != 0 and b"not authori" in res.stderr.lower(), res.stderr
    assert "password sent in plaintext" in b.stderr_text()
    b2 = broker(auth_password_file=str(path), auth_allow_anonymous="false",
                auth_allow_plaintext_passwords="true")
    res = mosq_pub(b2.port, "t", "m", extra=["-u", "alice", "-P", "secret"], check=False)
    assert res.returncode == 0, res.stderr


def test_without_a_password_file_credentials_are_refused_and_counted(broker):
    # The surprise: this used to succeed silently as anonymous.
    b = broker(sys_interval=1)
    res = mosq_pub(b.port, "t", "m", extra=["-u", "alice", "-P", "secret"], check=False)
    assert res.returncode != 0
    assert b"bad user name or password" in res.stderr.lower(), res.stderr
    assert "no auth.password_file" in b.stderr_text()
    assert mosq_pub(b.port, "t", "m").returncode == 0  # anonymous still works here

    def counter():
        got = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(b.port), "-t",
                              "$SYS/broker/clients/auth_failed", "-C", "1", "-W", "10"],
                             capture_output=True, timeout=20)
        return got.stdout.strip()
    # $SYS is refreshed each second: the retained value catches up.
    wait_until(lambda: counter() == b"1", 10, what="$SYS/broker/clients/auth_failed = 1")
