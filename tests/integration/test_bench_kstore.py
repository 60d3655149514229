"""The durable benchmark (tools/bench/kstore.py, `make bench-kstore`)
against the daemon: its load reaches the store with every acknowledged
message, its store figures come from $SYS, its bystander runs inside the
load, and a broker without a store is reported as such instead of failing.
The kernel side needs QEMU and is not run here (make bench-kstore).
"""

import importlib.util
import json
import os
import subprocess
import sys
import types

import pytest

from conftest import REPO, TERN_BIN

BUILD = os.path.join(REPO, "build")
BENCH = os.path.join(BUILD, "rel", "tern-bench")
KSTORE = os.path.join(REPO, "tools", "bench", "kstore.py")

pytestmark = [
    pytest.mark.tern_only,
    # make integration builds it; run alone, say what is missing.
    pytest.mark.skipif(not os.access(BENCH, os.X_OK),
                       reason="needs %s (make build/rel/tern-bench)" % BENCH),
]


def load_kstore():
    spec = importlib.util.spec_from_file_location("kstore", KSTORE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_durable_load_through_the_daemon_commits_every_acknowledged_message(tmp_path):
    r = subprocess.run([sys.executable, KSTORE, "--build", BUILD, "--out", str(tmp_path),
                        "--quick", "--duration", "1", "--targets", "daemon",
                        "--ternd", TERN_BIN], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp_path / "kstore-latest.jsonl") as f:
        meta, res = [json.loads(line) for line in f]
    assert meta["meta"]["daemon_store_conf"] == ["store.sync = full", "store.backup_interval = 0"]
    assert res["store_active"] is True, res
    d, st = res["durable"], res["store"]
    assert d["puback"] > 0 and d["acks_per_s"] > 0 and d["delivered_ratio"] == 1, d
    # --persistent subscribers: each acknowledged message was queued for a
    # persistent session, so it was committed (clean ones record nothing).
    assert st["records"] >= d["puback"], res
    assert st["commits"] > 0 and st["failed_commits"] == 0 and st["state"] == "ok", st
    assert st["commit_p50_us"] is not None and st["commit_p99_us"] >= st["commit_p50_us"], st
    for phase in ("bystander_quiet", "bystander_loaded"):
        assert res[phase]["samples"] > 0 and res[phase]["delivered_ratio"] == 1, res
    assert res["bystander_loaded"]["inside_load"] is True, res
    assert "durable QoS 1 acks/s" in r.stdout and "records per commit" in r.stdout, r.stdout


def test_broker_without_a_store_is_reported_as_such_not_failed(broker, tmp_path):
    b = broker(sys_interval=1)
    ks = load_kstore()
    a = types.SimpleNamespace(transport="plain", duration=1.0, bystander_rate=50, pairs=2,
                              load_rate=0, window=16, size=64, bench=BENCH,
                              gen_cpu=os.cpu_count() - 1)
    target = types.SimpleNamespace(name="daemon", port=b.port, pid=b.proc.pid)
    res = ks.measure(a, target, None, 1, str(tmp_path))
    assert res["store_active"] is False and "store" not in res, res
    assert res["durable"]["puback"] > 0, res
    text = ks.table([res], ["daemon"])
    assert "daemon (no store)" in text, text
