"""Configuration file handling of the daemon (SPEC A6, task brief):
unknown keys and bad values are refused with exit status 2 and a message
FILE:LINE: naming the key. tern only (mosquitto has its own format)."""

import os
import re
import subprocess

import pytest

from conftest import TERN_BIN, free_port

pytestmark = pytest.mark.tern_only


def _run(tmp_path, lines):
    path = os.path.join(str(tmp_path), "bad.conf")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not os.access(TERN_BIN, os.X_OK):
        pytest.fail("broker binary %s not found" % TERN_BIN)
    try:
        res = subprocess.run([TERN_BIN, "-c", path], capture_output=True, timeout=10,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("ternd kept running with a bad config (should exit with status 2)")
    return path, res.returncode, res.stderr.decode(errors="replace")


def _base(port):
    return ["config_version = 1", "listener.plain = 127.0.0.1:%d" % port]


def test_unknown_key_exits_2_naming_file_line_and_key(tmp_path):
    lines = _base(free_port()) + ["# a comment", "frobnicate.level = 3"]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert "%s:4:" % path in err, err
    assert "frobnicate.level" in err, err


@pytest.mark.parametrize("key,value", [
    ("limits.max_connections", "lots"),
    ("limits.max_packet_size", "-5"),
    ("limits.max_inflight", "12abc"),
    ("auth.allow_anonymous", "maybe"),
    ("log.level", "loud"),
    ("sys.interval", ""),
    ("limits.max_queued", "99999999999999999999999"),
    ("limits.max_out_bytes", "100"),     # below the documented minimum 1024
])
def test_bad_value_exits_2_naming_file_line_and_key(tmp_path, key, value):
    lines = _base(free_port()) + ["log.level = info", "%s = %s" % (key, value)]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert "%s:4:" % path in err, err
    assert key in err, err


def test_packet_size_above_queue_bytes_exits_2_naming_both_keys(tmp_path):
    """Issue 16 item 7: a message within limits.max_packet_size must fit a
    session's queue (limits.max_queued_bytes), or the broker would accept
    and acknowledge it but never deliver it to a QoS 1/2 subscriber."""
    lines = _base(free_port()) + ["limits.max_queued_bytes = 65536"]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert ("%s:3: limits.max_packet_size (1048576, the default) is above "
            "limits.max_queued_bytes (65536, line 3)" % path) in err, err
    lines = _base(free_port()) + ["limits.max_packet_size = 200000000"]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert ("%s:3: limits.max_packet_size (200000000, line 3) is above "
            "limits.max_queued_bytes (16777216, the default)" % path) in err, err


def test_bad_listener_address_exits_2(tmp_path):
    lines = ["config_version = 1", "listener.plain = 127.0.0.1:99999"]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert "%s:2:" % path in err, err


def test_config_version_must_come_first(tmp_path):
    lines = ["listener.plain = 127.0.0.1:%d" % free_port(), "config_version = 1"]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert re.search(re.escape(path) + r":\d+:", err), err


def test_line_without_equals_sign_exits_2(tmp_path):
    lines = _base(free_port()) + ["this is not a setting"]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert "%s:3:" % path in err, err


def test_missing_config_file_exits_2(tmp_path):
    missing = os.path.join(str(tmp_path), "does-not-exist.conf")
    res = subprocess.run([TERN_BIN, "-c", missing], capture_output=True, timeout=10)
    assert res.returncode == 2
    assert missing in res.stderr.decode(errors="replace")


@pytest.mark.parametrize("version", ["2", "0"])
def test_unsupported_config_version_exits_2(tmp_path, version):
    lines = ["config_version = %s" % version, "listener.plain = 127.0.0.1:%d" % free_port()]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert "%s:1:" % path in err, err


def test_config_with_every_documented_key_starts_and_serves(broker):
    """Every key from the brief, with sensible values, is accepted."""
    from mqttclients import PahoClient
    b = broker(config={
        "log.level": "warn",
        "auth.allow_anonymous": True,
        "limits.max_connections": 100,
        "limits.max_packet_size": 65536,
        "limits.max_inflight": 16,
        "limits.max_queued": 100,
        "limits.max_queued_bytes": 1048576,
        "limits.max_out_bytes": 65536,
        "limits.max_inbound_qos2": 64,
        "limits.connect_timeout": 5,
        "limits.max_retained": 1000,
        "limits.work_budget": 64,
        "session.expiry": 3600,
        "sys.interval": 5,
    })
    c = PahoClient(b.port, client_id="allkeys")
    c.connect()
    c.subscribe("cfg/t", 1)
    c.publish("cfg/t", b"ok", qos=1)
    assert [m.payload for m in c.wait_messages(1)] == [b"ok"]
    c.disconnect()


def test_acl_pattern_with_unknown_substitution_exits_2_naming_file_line_and_sequence(tmp_path):
    # '%x' used to be kept as text: a rule that silently matched nothing.
    acl = tmp_path / "acl"
    acl.write_text("topic read ok/#\npattern readwrite devices/%x/#\n")
    lines = _base(free_port()) + ["acl.file = %s" % acl]
    path, rc, err = _run(tmp_path, lines)
    assert rc == 2, err
    assert "%s:2:" % acl in err, err
    assert "'%x'" in err, err
    # --check names it the same way (exit status 1: the file is invalid).
    res = subprocess.run([TERN_BIN, "--check", "-c", path], capture_output=True, timeout=10,
                         stdin=subprocess.DEVNULL)
    out = res.stderr.decode(errors="replace")
    assert res.returncode == 1, out
    assert "%s:2:" % acl in out and "'%x'" in out, out
