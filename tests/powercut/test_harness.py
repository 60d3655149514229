"""Self-tests of the power-cut harness's checks (run.py, and the checks it
shares with the daemon torture in tests/torture/durable_load.py): each
catches what it is there to catch. The end-to-end ones run the harness's
cycles against the Linux daemon (over mutual TLS, SIGKILL instead of a
power cut) and need it built: $TERN_BIN or build/rel/ternd.

    /usr/bin/python3 -m pytest -q tests/powercut/test_harness.py
"""
import argparse
import os
import random

import pytest

import run  # first: it puts tests/torture and tests/kernel on the path
import durable_load as dl  # noqa: E402

REPO = run.REPO
TERN_BIN = os.environ.get("TERN_BIN") or os.path.join(REPO, "build", "rel", "ternd")
needs_daemon = pytest.mark.skipif(not os.path.exists(TERN_BIN),
                                  reason="no daemon at %s (make, or set TERN_BIN)" % TERN_BIN)


def acked_state():
    s = dl.State()
    s.acked_r["r/1/0"] = (1, b"1/0:a")
    s.sent_r["r/1/0"] = [(1, b"1/0:a"), (21, b"21/0:b")]
    s.acked["q1"]["1/1"] = b"1/1:"
    s.acked["q2"]["1/2"] = b"1/2:"
    return s


def test_retained_holding_the_acknowledged_or_a_later_value_passes():
    s = acked_state()
    dl.compare_retained({"r/1/0": b"1/0:a"}, s, [1])
    dl.compare_retained({"r/1/0": b"21/0:b"}, s, [1])


@pytest.mark.parametrize("have", [{}, {"r/1/0": b"0/0:older"}])
def test_retained_missing_or_older_fails(have):
    with pytest.raises(dl.Failure, match="retained r/1/0"):
        dl.compare_retained(have, acked_state(), [1])


def test_retained_outside_the_checked_slots_is_not_judged():
    dl.compare_retained({}, acked_state(), [2])


def test_queued_all_delivered_once_passes():
    s = acked_state()
    s.received_q1 = {"1/1": 2}          # QoS 1: at least once
    s.received_q2 = {"1/2": 1, "9/9": 1}  # an unacknowledged QoS 2 may arrive, once
    dl.check_queued(s)


@pytest.mark.parametrize("q1,q2,why", [
    ({}, {"1/2": 1}, "QoS 1 message 1/1 never delivered"),
    ({"1/1": 1}, {}, "QoS 2 message 1/2 delivered 0 times"),
    ({"1/1": 1}, {"1/2": 2}, "QoS 2 message 1/2 delivered 2 times"),
    ({"1/1": 1}, {"1/2": 1, "9/9": 2}, "QoS 2 message 9/9 delivered 2 times"),
])
def test_queued_lost_or_duplicated_fails(q1, q2, why):
    s = acked_state()
    s.received_q1, s.received_q2 = q1, q2
    with pytest.raises(dl.Failure, match=why):
        dl.check_queued(s)


QUICK_OK = b"tern: store: database found: quick_check ok, schema 2, opened in 62 ms\n"
INTEGRITY_OK = b"tern: store: integrity_check ok\n"


def test_guest_store_integrity_passes_with_both_checks_ok():
    assert run.guest_store_integrity(b"tern: booting\n" + QUICK_OK + INTEGRITY_OK +
                                     b"tern: ready (boot pvh)\n") == "ok"
    created = b"tern: store: database created: quick_check ok, schema 2, opened in 9 ms\r\n"
    assert run.guest_store_integrity(created + b"tern: store: integrity_check ok\r\n") == "ok"


@pytest.mark.parametrize("console,why", [
    (b"tern: ready (boot pvh)\n", "0 store quick_check lines"),
    (QUICK_OK, "0 store integrity_check lines"),
    (INTEGRITY_OK, "0 store quick_check lines"),
    (QUICK_OK + QUICK_OK + INTEGRITY_OK, "2 store quick_check lines"),
    (b"tern: store: database found: quick_check failed; replaced by backup a, schema 2, "
     b"opened in 80 ms\n" + INTEGRITY_OK, "store check: .*replaced by backup a"),
    (QUICK_OK + b"tern: store: integrity_check FAILED: *** in database main ***\n",
     "store check: tern: store: integrity_check FAILED"),
])
def test_guest_store_integrity_fails_without_both_checks_ok(console, why):
    with pytest.raises(dl.Failure, match=why):
        run.guest_store_integrity(console)


def daemon_args(cuts, **kw):
    a = dict(build=os.path.join(REPO, "build"), cuts=cuts, seed=5, bin=TERN_BIN,
             plumbing=False, max_load=0.3, keep=False)
    a.update(kw)
    return argparse.Namespace(**a)


@needs_daemon
def test_cycles_against_the_daemon_pass(tmp_path):
    args = daemon_args(3)
    target = run.DaemonTarget(args, str(tmp_path), random.Random(1))
    try:
        state, tally, _ = run.run_cuts(target, args, random.Random(1))
    finally:
        target.close()
    assert tally.published > 0 and state.acknowledged() > 0
    assert target.counts()["kills"] >= 3


class AmnesicDaemon(run.DaemonTarget):
    """A daemon whose disk forgets everything at each kill."""

    def kill(self, mode):
        note = super().kill(mode)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.daemon.db + suffix):
                os.unlink(self.daemon.db + suffix)
        return note


@needs_daemon
def test_cycles_catch_a_disk_that_loses_acknowledged_messages(tmp_path):
    args = daemon_args(2)
    target = AmnesicDaemon(args, str(tmp_path), random.Random(1))
    try:
        with pytest.raises(dl.Failure, match="retained|session is gone"):
            run.run_cuts(target, args, random.Random(1))
    finally:
        target.close()


ASAN_BIN = os.environ.get("TERN_ASAN_BIN") or os.path.join(REPO, "build", "asan", "ternd")


@pytest.mark.skipif(not os.path.exists(ASAN_BIN),
                    reason="no test-hook daemon at %s (make build/asan/ternd)" % ASAN_BIN)
def test_failing_disk_scenario_passes_on_the_daemon_with_its_fault_hook(tmp_path, capsys):
    args = daemon_args(0, bin=ASAN_BIN, fail_seconds=3.0)
    target = run.DaemonTarget(args, str(tmp_path), random.Random(1))
    try:
        run.run_failing_disk(target, args)
    finally:
        target.close()
    out = capsys.readouterr().out
    for what in ("writes and flushes", "flushes only", "writes only"):
        assert "%s failing: durable publishes withheld" % what in out
    assert "a random power cut while it failed kept the acknowledged values" in out


@needs_daemon
def test_failing_disk_scenario_catches_a_puback_from_a_disk_that_never_fails(tmp_path):
    """The release daemon has no fault hook: its disk never fails, so it
    acknowledges the durable publish, which the scenario must call out."""
    args = daemon_args(0, fail_seconds=3.0)
    target = run.DaemonTarget(args, str(tmp_path), random.Random(1))
    try:
        with pytest.raises(dl.Failure, match="writes and flushes failing: PUBACK for a "
                                             "durable QoS 1 publish"):
            run.run_failing_disk(target, args)
    finally:
        target.close()


# ---- disk_check: the backup slots read from the host ------------------------

import hashlib  # noqa: E402
import sqlite3  # noqa: E402
import struct  # noqa: E402

import disk_check  # noqa: E402

PB = 4096
SLOTS = {"backup A": (1 << 20, 1 << 20), "backup B": (2 << 20, 1 << 20)}


def region_header(start, length, seq, size):
    """A region header copy as region.c encodes it (role 3: backup)."""
    body = b"tern-rgn" + struct.pack("<IIIIQQQQ", 1, 3, 1 if size else 0, 0, seq, size,
                                     start // 512, length // 512)
    return body + hashlib.sha256(body).digest()[:8]


def tern_db(tmp_path, app_id=disk_check.APPLICATION_ID):
    path = str(tmp_path / ("src-%x.db" % app_id))
    db = sqlite3.connect(path)
    db.execute("PRAGMA application_id = %d" % app_id)
    db.execute("CREATE TABLE t(x)")
    db.executemany("INSERT INTO t VALUES (?)", [(b"x" * 200,)] * 200)
    db.commit()
    db.close()
    with open(path, "rb") as f:
        return f.read()


def disk_with(tmp_path, slot_a):
    """A 4 MiB image with backup A holding slot_a (bytes, or None: never
    written) in its data area and a header saying so; backup B empty."""
    image = str(tmp_path / "disk.img")
    with open(image, "wb") as f:
        f.truncate(4 << 20)
        if slot_a is not None:
            start, length = SLOTS["backup A"]
            f.seek(start + PB)   # header copy 1, as if written second
            f.write(region_header(start, length, 2, len(slot_a)))
            f.seek(start + 2 * PB)
            f.write(slot_a)
    return image


def test_backup_slots_empty_or_whole_databases_pass(tmp_path):
    assert disk_check.check_backups(disk_with(tmp_path, None), SLOTS) == {
        "backup A": "empty", "backup B": "empty"}
    data = tern_db(tmp_path)
    got = disk_check.check_backups(disk_with(tmp_path, data), SLOTS)
    assert got == {"backup A": "%d bytes ok" % len(data), "backup B": "empty"}


def test_damaged_or_foreign_backup_copy_fails(tmp_path):
    data = bytearray(tern_db(tmp_path))
    data[len(data) // 2:len(data) // 2 + 4096] = bytes(4096)   # a page gone
    with pytest.raises(disk_check.DiskError, match="backup A .*integrity_check|not a database"):
        disk_check.check_backups(disk_with(tmp_path, bytes(data)), SLOTS)
    with pytest.raises(disk_check.DiskError, match="application_id"):
        disk_check.check_backups(disk_with(tmp_path, tern_db(tmp_path, 1)), SLOTS)
