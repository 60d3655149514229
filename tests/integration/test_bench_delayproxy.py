"""tern-bench's delay proxy (--rtt-ms, tools/bench/delayproxy.c) and its
acknowledgement modes (--ack): a subscriber behind the proxy sees every
message at least half the round trip late (the proxy's floor, not a
timing of the broker), never more than one window per round trip, and in
order (the stream decodes, no connection is lost); QoS 2 completes
through it.
"""

import json
import os
import subprocess

import pytest

from conftest import REPO

BENCH = os.path.join(REPO, "build", "rel", "tern-bench")

pytestmark = [
    pytest.mark.tern_only,
    pytest.mark.skipif(not os.access(BENCH, os.X_OK),
                       reason="needs %s (make build/rel/tern-bench)" % BENCH),
]


def flood(port, *args):
    r = subprocess.run([BENCH, "flood", "--port", str(port), "--pairs", "1", "--size", "64",
                        "--duration", "1", "--drain", "1", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("ack", ["batch", "immediate", "event"])
def test_subscriber_behind_the_proxy_is_half_a_round_trip_late_and_capped_by_the_window(broker, ack):
    b = broker(limits_max_inflight=8)
    res = flood(b.port, "--qos", "1", "--window", "100", "--rtt-ms", "40", "--ack", ack)
    assert res["params"]["rtt_ms"] == 40 and res["params"]["ack"] == ack, res["params"]
    r = res["results"]
    # A reordered or damaged stream would not decode: an error, a lost
    # connection. (Not every message is through after the drain: the
    # publisher outruns a 200 messages/s subscriber.)
    assert r["errors"] == 0 and r["lost_connections"] == 0 and r["delivered"] > 0, r
    # Publisher to broker is direct, broker to subscriber 20 ms away: no
    # message can arrive sooner.
    assert res["latency"]["p50_ms"] >= 20, res["latency"]
    # 8 in flight per 40 ms round trip: 200 messages/s at most (some slack
    # for the window's first fill).
    assert r["delivered_per_s"] <= 8 / 0.040 * 1.25, r


def test_without_the_proxy_the_same_window_is_not_held_to_it(broker):
    """The control for the test above: the cap comes from the proxy."""
    b = broker(limits_max_inflight=8)
    res = flood(b.port, "--qos", "1", "--window", "100", "--ack", "batch")
    assert "rtt_ms" not in res["params"]
    assert res["results"]["delivered_per_s"] > 8 / 0.040 * 1.25, res["results"]


def test_qos2_completes_through_the_proxy(broker):
    b = broker(limits_max_inflight=8)
    res = flood(b.port, "--qos", "2", "--window", "100", "--rtt-ms", "20", "--ack", "batch")
    r = res["results"]
    assert r["errors"] == 0 and r["lost_connections"] == 0, r
    # Both sides complete their exchanges: the publisher's PUBLISHes end
    # with PUBCOMP (those the broker read: back-pressure holds the rest,
    # ADR-028), and with 8 in flight the broker would stop after 8
    # deliveries if the subscriber's PUBRECs or PUBCOMPs did not arrive.
    assert r["puback"] > 100, r
    assert r["delivered"] > 4 * 8, r
