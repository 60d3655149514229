"""`ternd --check` and the store (docs/CONFIG.md): with store.path set, the
check looks at the database the daemon would open, read-only. It never
creates or changes anything; a store the daemon could not open fails with
one line on stderr naming the configuration file, store.path and the cause.
tern only."""

import os
import shutil
import sqlite3
import subprocess

import pytest

import rawmqtt as R
from conftest import TERN_BIN, free_port, tern_config_text

pytestmark = pytest.mark.tern_only

# A version-1 database written by the version-1 store (store-v1-gen.c).
STORE_V1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "data",
                        "store-v1.db")


def _check(tmp_path, store_path):
    """--check a config whose store.path is store_path (relative paths are
    relative to the config's directory, tmp_path). Returns (config path,
    status, stdout, stderr)."""
    conf = str(tmp_path / "check.conf")
    with open(conf, "w") as f:
        f.write(tern_config_text(free_port(), {"store.path": store_path}))
    if not os.access(TERN_BIN, os.X_OK):
        pytest.fail("broker binary %s not found" % TERN_BIN)
    res = subprocess.run([TERN_BIN, "--check", "-c", conf], capture_output=True, timeout=20,
                         stdin=subprocess.DEVNULL)
    return conf, res.returncode, res.stdout.decode(errors="replace"), \
        res.stderr.decode(errors="replace")


def _snapshot(directory):
    """Every file in directory: name -> (bytes, mtime_ns)."""
    out = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out[name] = (f.read(), os.stat(path).st_mtime_ns)
    return out


def _assert_fails_once(conf, rc, out, err, *words):
    assert rc == 1, (rc, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err            # one message, printed once
    assert lines[0].startswith(conf + ": store.path: "), err
    for w in words:
        assert w in lines[0], err
    assert "configuration ok" not in out, out


def test_check_store_in_a_missing_directory_fails(tmp_path):
    conf, rc, out, err = _check(tmp_path, "no-such-dir/tern.db")
    _assert_fails_once(conf, rc, out, err, "no-such-dir", "No such file or directory")
    assert not (tmp_path / "no-such-dir").exists()


def test_check_store_on_a_file_that_is_not_a_database_fails(tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"not a database, just some text\n" * 100)
    before = _snapshot(str(tmp_path))
    conf, rc, out, err = _check(tmp_path, "notes.txt")
    _assert_fails_once(conf, rc, out, err, str(junk), "not an SQLite database")
    after = _snapshot(str(tmp_path))
    del after["check.conf"]
    assert after == before


def test_check_store_path_that_is_a_directory_fails(tmp_path):
    (tmp_path / "data").mkdir()
    conf, rc, out, err = _check(tmp_path, "data")
    _assert_fails_once(conf, rc, out, err, "is a directory")
    assert os.listdir(str(tmp_path / "data")) == []


def test_check_store_of_another_program_fails(tmp_path):
    db = sqlite3.connect(str(tmp_path / "other.db"))
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    before = _snapshot(str(tmp_path))
    conf, rc, out, err = _check(tmp_path, "other.db")
    _assert_fails_once(conf, rc, out, err, "not a tern database")
    after = _snapshot(str(tmp_path))
    del after["check.conf"]
    assert after == before


def _make_store(broker, tmp_path):
    """A real store: the daemon creates it, a retained message goes in, the
    daemon stops cleanly. Returns the store's directory."""
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    b = broker(config={"store.path": str(store_dir / "tern.db")})
    c = R.RawClient(b.host, b.port)
    assert c.connect(client_id="writer").return_code == 0
    c.send(R.publish("check/r", b"kept", qos=1, retain=True, pid=1))
    assert c.expect(R.PUBACK).pid == 1
    c.send(R.disconnect())
    c.close()
    assert b.stop() == []
    return store_dir


def test_check_good_store_passes_and_leaves_it_unchanged(broker, tmp_path):
    store_dir = _make_store(broker, tmp_path)
    db = str(store_dir / "tern.db")
    before = _snapshot(str(store_dir))
    assert "tern.db" in before
    conf, rc, out, err = _check(tmp_path, db)
    assert rc == 0, (out, err)
    assert err == ""
    assert "%s: store.path: %s: tern database, schema version 2, passes its check" % (conf, db) \
        in out, out
    assert out.endswith("%s: configuration ok\n" % conf), out
    # Bytes and mtimes of the database and the files next to it, and no new
    # file (no -shm, no -journal).
    assert _snapshot(str(store_dir)) == before


def test_check_version_1_store_says_it_will_be_migrated_and_changes_nothing(tmp_path):
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    db = str(store_dir / "tern.db")
    shutil.copyfile(STORE_V1, db)
    before = _snapshot(str(store_dir))
    conf, rc, out, err = _check(tmp_path, db)
    assert rc == 0, (out, err)
    assert err == ""
    assert ("%s: store.path: %s: tern database, schema version 1; the daemon will migrate it "
            "to version 2" % (conf, db)) in out, out
    assert _snapshot(str(store_dir)) == before


def test_check_store_newer_schema_fails(broker, tmp_path):
    store_dir = _make_store(broker, tmp_path)
    db = sqlite3.connect(str(store_dir / "tern.db"))
    db.execute("UPDATE meta SET value = 99 WHERE key = 'schema_version'")
    db.commit()
    db.close()
    before = _snapshot(str(store_dir))
    conf, rc, out, err = _check(tmp_path, str(store_dir / "tern.db"))
    _assert_fails_once(conf, rc, out, err, "schema version 99 is newer")
    assert _snapshot(str(store_dir)) == before


def test_check_store_not_yet_created_passes_and_creates_nothing(tmp_path):
    conf, rc, out, err = _check(tmp_path, "fresh.db")
    assert rc == 0, (out, err)
    assert err == ""
    assert "%s: store.path: %s does not exist yet; the daemon will create it" % (
        conf, tmp_path / "fresh.db") in out, out
    assert out.endswith("%s: configuration ok\n" % conf), out
    assert sorted(os.listdir(str(tmp_path))) == ["check.conf"]


@pytest.mark.parametrize("how", ["missing", "empty"])
def test_check_store_missing_or_empty_beside_a_valid_backup_says_restore(broker, tmp_path, how):
    """A database emptied or removed by a restore cut short: the daemon
    restores the newest valid backup (docs/STORE.md), and --check says so
    instead of "will create"."""
    store_dir = _make_store(broker, tmp_path)
    db = str(store_dir / "tern.db")
    os.replace(db, db + ".bak-a")
    for leftover in ("tern.db-wal", "tern.db-shm"):
        if os.path.exists(str(store_dir / leftover)):
            os.remove(str(store_dir / leftover))
    if how == "empty":
        open(db, "wb").close()
    before = _snapshot(str(store_dir))
    conf, rc, out, err = _check(tmp_path, db)
    assert rc == 0, (out, err)
    assert "%s: store.path: %s is %s but a backup passes its check (%s.bak-a); the daemon " \
        "will restore the newest valid backup" % (conf, db, how, db) in out, out
    assert _snapshot(str(store_dir)) == before


def test_check_store_held_by_a_running_daemon_is_not_opened(broker, tmp_path):
    db = str(tmp_path / "live.db")
    b = broker(config={"store.path": db})
    conf, rc, out, err = _check(tmp_path, db)
    assert rc == 0, (out, err)
    assert "is in use by process %d" % b.proc.pid in out, out
    assert b.alive()
