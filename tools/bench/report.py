#!/usr/bin/env python3
"""report.py - turn a `make bench` results file into the table of
docs/PERFORMANCE.md.

Usage: report.py RESULTS.jsonl DOC.md

Only the text between the markers <!-- bench:begin --> and
<!-- bench:end --> is replaced, so the prose around the table survives
(the markers are appended if the document lacks them). Ratios are
tern / mosquitto per repetition (repetitions interleave the brokers, so
each pair ran under similar machine load); the table shows their median
and range, next to each broker's median and range.
"""
import json
import statistics
import sys

BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"

def per_broker_cpu_s(rec):
    """Deliveries per second of broker CPU time: on a shared machine, where
    a broker may get only part of its core, this is steadier than
    deliveries per wall-clock second."""
    try:
        cpu = rec["cpu"]
        n = rec["results"]["delivered_per_s"] * cpu["wall_s"]
        return n / cpu["broker_s"] if cpu["broker_s"] > 0 else None
    except (KeyError, TypeError):
        return None


def us_per_delivery(rec):
    v = per_broker_cpu_s(rec)
    return 1e6 / v if v else None


# case prefix -> [(label, path in the result or a function of it, better)]
METRICS = {
    "handshake": [
        ("connections/s", "results.per_s", "higher"),
        ("connect latency p50, ms", "results.connect_latency.p50_ms", "lower"),
        ("connect latency p99, ms", "results.connect_latency.p99_ms", "lower"),
        ("broker CPU per connection, ms", "results.broker_cpu_ms_per_handshake", "lower"),
        ("errors", "results.errors", "lower"),
    ],
    "idle": [
        ("broker RSS per connection, bytes", "results.rss_bytes_per_conn", "lower"),
        ("broker's own figure per connection, bytes", "results.sys_bytes_per_conn", "lower"),
        ("time to connect all, s", "results.connect_all_s", "lower"),
        ("failed + lost", "results.failed+results.lost", "lower"),
    ],
    "latency": [
        ("latency p50, ms", "latency.p50_ms", "lower"),
        ("latency p99, ms", "latency.p99_ms", "lower"),
        ("delivered / expected", "results.delivered_ratio", "higher"),
        ("broker CPU per delivery, µs", us_per_delivery, "lower"),
    ],
    "fanout": [
        ("delivered/s", "results.delivered_per_s", "higher"),
        ("deliveries per broker CPU-second", per_broker_cpu_s, "higher"),
        ("latency p50, ms", "latency.p50_ms", "lower"),
        ("latency p99, ms", "latency.p99_ms", "lower"),
        ("delivered / expected", "results.delivered_ratio", "higher"),
    ],
    "overload": [
        ("delivered/s", "results.delivered_per_s", "higher"),
        ("latency p50, ms", "latency.p50_ms", "lower"),
        ("latency p99, ms", "latency.p99_ms", "lower"),
        ("latency max, ms", "latency.max_ms", "lower"),
        ("delivered / expected (after drain)", "results.delivered_ratio", "higher"),
    ],
    "storm": [
        ("broker's CPU bound, cores", "results.broker_cpu_bound", "—"),
        ("closed-loop peak, handshakes/s", "results.peak_per_s", "higher"),
        ("completed at 10x peak, /s", "results.completed_per_s", "higher"),
        ("completed / peak", "results.completed_vs_peak", "higher"),
        ("worst second / peak", "results.worst_second_vs_peak", "higher"),
        ("bystander latency p99, ms", "results.bystander_latency.p99_ms", "lower"),
        ("dropped after CONNACK", "results.dropped_after_connack", "lower"),
        ("generator CPU in the storm, cores", "cpu.generator_util", "lower"),
    ],
    "flood": [
        ("delivered/s", "results.delivered_per_s", "higher"),
        ("deliveries per broker CPU-second", per_broker_cpu_s, "higher"),
        ("published/s", "results.published_per_s", "higher"),
        ("latency p50, ms", "latency.p50_ms", "lower"),
        ("latency p99, ms", "latency.p99_ms", "lower"),
        ("delivered / expected (after drain)", "results.delivered_ratio", "higher"),
        ("connections lost", "results.lost_connections", "lower"),
    ],
}

# A subscriber behind the delay proxy is measured as a flood is.
METRICS["rtt50"] = METRICS["flood"]

DESCR = {
    "handshake-mtls": "handshake, mutual TLS 1.3, 32 in parallel",
    "handshake-plain": "handshake, plaintext, 32 in parallel",
    "idle-plain": "idle connections, plaintext",
    "idle-mtls": "idle connections, mutual TLS",
    "latency-q0": "latency, 8 pairs x 100 msg/s, 64 B, QoS 0",
    "latency-q1": "latency, 8 pairs x 100 msg/s, 64 B, QoS 1",
    "latency-q1-v5": "latency, MQTT 5.0, 8 pairs x 100 msg/s, 64 B, QoS 1",
    "fanout-100": "fan-out, 1 -> 100 subscribers, 500 msg/s",
    "fanout-1000": "fan-out, 1 -> 1,000 subscribers, 50 msg/s",
    "flood-q0-64": "flood, 16 pairs, QoS 0, 64 B",
    "flood-q1-64": "flood, 16 pairs, QoS 1, 64 B, window 64",
    "flood-q0-64-v5": "flood, MQTT 5.0, 16 pairs, QoS 0, 64 B",
    "flood-q1-64-v5": "flood, MQTT 5.0, 16 pairs, QoS 1, 64 B, window 64",
    "flood-q0-1k": "flood, 16 pairs, QoS 0, 1 KiB",
    "flood-mtls-q0-64": "flood over mutual TLS, 16 pairs, QoS 0, 64 B",
    "flood-q0-64-w2": "flood, 16 pairs, QoS 0, 64 B; tern at workers = 2, brokers allowed CPUs 0-1",
    "flood-mtls-q0-64-w2": "flood over mutual TLS, 16 pairs, QoS 0, 64 B; tern at workers = 2, "
                           "brokers allowed CPUs 0-1",
    "handshake-mtls-w2": "handshake, mutual TLS 1.3, 32 in parallel; tern at workers = 2, "
                         "brokers allowed CPUs 0-1",
    "flood-q1-default": "flood, 4 pairs, QoS 1, 64 B, publishers 100 unacknowledged, "
                        "batch acks, both brokers' default window and queue",
    "rtt50-q1": "1 pair, QoS 1, 64 B, subscriber behind a 50 ms round trip, batch acks, "
                "both brokers' default window and queue",
    "overload-q0": "open-loop overload, 4 pairs, 20,000 msg/s published, 10,000 msg/s taken per subscriber, QoS 0, 64 B",
    "storm-mtls": "handshake storm, mutual TLS: new clients at 10x the closed-loop peak "
                  "(2 s connect timeout, 2 retries), 20 bystanders at QoS 1; the broker "
                  "under a CPU quota for peak and storm alike",
}


def get(rec, path):
    """Value at a dotted path; 'a+b' adds two paths; a function is called
    with the record; None when absent."""
    if callable(path):
        return path(rec)
    if "+" in path:
        vals = [get(rec, p) for p in path.split("+")]
        return None if any(v is None for v in vals) else sum(vals)
    cur = rec
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur if isinstance(cur, (int, float)) else None


def fmt(v):
    if v is None:
        return "n/a"
    if v == int(v) and abs(v) < 1000:
        return str(int(v))
    a = abs(v)
    if a >= 100000:
        return f"{v / 1000:,.0f}k"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 0.1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def cell(vals):
    if not vals:
        return "—"
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt(med)
    return f"{fmt(med)} ({fmt(min(vals))}–{fmt(max(vals))})"


def load(path):
    meta, recs = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "meta" in r:
                meta = r["meta"]
            elif "case" in r:
                recs.append(r)
    return meta, recs


def table(meta, recs):
    cases = [c for c in DESCR if any(r["case"] == c for r in recs)]
    by = {}
    notes = {}
    refused = []
    for r in recs:
        key = (r["case"], r.get("broker"))
        if "skipped" in r or "error" in r:
            notes.setdefault(key, r.get("skipped") or r.get("error"))
            continue
        # A storm whose figure is the generator's, not the broker's
        # (scripts/bench.sh, storm_verdict), stays out of the cells.
        why = (r.get("results") or {}).get("refused")
        if why:
            refused.append(f"{r['case']} {r.get('broker')} rep {r.get('rep')}: {why}")
            notes.setdefault(key, "every run refused (the generator was the limit)")
            continue
        by.setdefault(key, []).append(r)

    out = []
    out.append("| case | metric | tern | mosquitto | tern ÷ mosquitto | better |")
    out.append("|---|---|---|---|---|---|")
    for case in cases:
        prefix = case.split("-")[0]
        t_runs, m_runs = by.get((case, "tern"), []), by.get((case, "mosquitto"), [])
        first = True
        for label, path, better in METRICS[prefix]:
            tv = [v for v in (get(r, path) for r in t_runs) if v is not None]
            mv = [v for v in (get(r, path) for r in m_runs) if v is not None]
            if not tv and not mv:
                continue
            # Ratios pair the two brokers' runs of the same repetition.
            tr = {r.get("rep"): get(r, path) for r in t_runs}
            mr = {r.get("rep"): get(r, path) for r in m_runs}
            ratios = [tr[k] / mr[k] for k in tr
                      if k in mr and tr[k] is not None and mr[k]]
            tcell = cell(tv)
            mcell = cell(mv)
            rcell = cell(ratios) if ratios else "—"
            name = f"**{case}**<br>{DESCR[case]}" if first else ""
            first = False
            out.append(f"| {name} | {label} | {tcell} | {mcell} | {rcell} | {better} |")
    # Why cells are empty, once per reason rather than in every cell.
    reasons = {}
    for (case, broker), why in notes.items():
        if not by.get((case, broker)):
            reasons.setdefault(f"{broker}: {why}", []).append(case)
    if reasons:
        out.append("")
        for why, which in sorted(reasons.items()):
            out.append(f"Empty cells — {why}: {', '.join(which)}.")
    if refused:
        out.append("")
        out.append("Runs left out (the generator, not the broker, was the limit): "
                   + "; ".join(refused) + ".")
    return out


def cpu_table(recs):
    """Who used the CPU during each case: the evidence that the generator
    was not the limit, and how busy the rest of the machine was."""
    out = ["| case | broker | broker CPU (cores) | generator CPU (cores, max) | other processes (cores) |",
           "|---|---|---|---|---|"]
    seen = []
    for r in recs:
        key = (r["case"], r.get("broker"))
        if "cpu" in r and key not in seen:
            seen.append(key)
    for case, broker in seen:
        runs = [r for r in recs if r["case"] == case and r.get("broker") == broker and "cpu" in r]
        b = [r["cpu"]["broker_util"] for r in runs if "broker_util" in r["cpu"]]
        g = [r["cpu"]["generator_util"] for r in runs]
        o = [r["cpu"]["other_util"] for r in runs if "other_util" in r["cpu"]]
        out.append(f"| {case} | {broker} | {cell(b)} | {fmt(max(g)) if g else '—'} | {cell(o)} |")
    return out


def render(meta, recs):
    others = [r["cpu"]["other_util"] for r in recs if "cpu" in r and "other_util" in r["cpu"]]
    lines = [BEGIN, "",
             "_Generated by `make bench` (tools/bench/report.py); edits here are overwritten._", ""]
    lines.append(f"- Run: {meta.get('stamp', '?')}, "
                 f"{'quick mode' if meta.get('quick') else 'full run'}, "
                 f"{meta.get('reps', '?')} repetition(s), {meta.get('duration_s', '?')} s per "
                 f"measured phase; cells are median (min–max) over repetitions.")
    lines.append(f"- Machine: {meta.get('cpu', '?')}, {meta.get('nproc', '?')} CPUs, "
                 f"{meta.get('kernel', '?')}; broker pinned to CPU {meta.get('broker_cpu', '?')}, "
                 f"generator to CPU {meta.get('generator_cpu', '?')}.")
    ternd = meta.get("ternd", "")
    where = "" if not ternd or ternd.endswith("build/rel/ternd") else ", a build of the working tree"
    lines.append(f"- Versions: {meta.get('tern', '?')} (binary built {meta.get('tern_built', '?')}{where}), "
                 f"Mosquitto {meta.get('mosquitto', '?')}, generator TLS wolfSSL "
                 f"{meta.get('wolfssl', '?')}.")
    lines.append(f"- Load: load average {meta.get('loadavg_start', '?')} at start; other processes "
                 f"used {cell(others)} cores during the measured phases "
                 f"(this machine is shared: read ratios, not absolutes).")
    if not meta.get("tern_tls", True):
        lines.append("- tern's mutual-TLS cells are empty: this ternd has no TLS listener yet.")
    lines += ["", *table(meta, recs), "", "CPU use during the measured phases:", "",
              *cpu_table(recs), "", END]
    return "\n".join(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: report.py RESULTS.jsonl DOC.md")
    meta, recs = load(sys.argv[1])
    block = render(meta, recs)
    try:
        with open(sys.argv[2], encoding="utf-8") as f:
            doc = f.read()
    except FileNotFoundError:
        doc = "# Performance\n\n"
    if BEGIN in doc and END in doc:
        head = doc[:doc.index(BEGIN)]
        tail = doc[doc.index(END) + len(END):]
        doc = head + block + tail
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(doc)


if __name__ == "__main__":
    main()
