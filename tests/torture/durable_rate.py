#!/usr/bin/python3
"""Durable QoS 1 retained publish rate: a first figure for docs/PERFORMANCE.md.

N publisher connections each keep W QoS 1 retained PUBLISHes to distinct
topics in flight and count PUBACKs for D seconds; prints acknowledged
messages/s and PUBACK latency (send to ack) p50/p99. Run it against ternd
with store.path (acks wait for the group commit), ternd without a store, and
Mosquitto (whose acks never wait for the disk), in one run:

    tests/torture/durable_rate.py --ternd build/rel/ternd [--seconds 5]

One Python process drives all connections (selectors, no threads), so the
generator itself caps the figure near its own speed; the memory-only runs
show where that cap is.
"""

import argparse
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import rawmqtt as rm  # noqa: E402

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("broker exited at start")
        try:
            with socket.create_connection((HOST, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("broker not ready")


class Pub:
    def __init__(self, port, idx):
        self.sock = socket.create_connection((HOST, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(rm.connect(client_id="rate-%d" % idx, clean=True))
        self.buf = bytearray()
        self.idx = idx
        self.seq = 0
        self.sent_at = {}
        self.next_pid = 0

    def send_one(self, payload):
        self.next_pid = self.next_pid % 65535 + 1
        # Distinct topics, but fewer than limits.max_retained (100000) in all:
        # beyond it a new topic is not kept, so nothing waits for the disk.
        topic = "rate/%d/%d" % (self.idx, self.seq % 10000)
        self.seq += 1
        self.sent_at[self.next_pid] = time.perf_counter()
        return rm.publish(topic, payload, qos=1, retain=True, pid=self.next_pid)


def run_rate(port, conns, window, seconds, size):
    payload = b"p" * size
    sel = selectors.DefaultSelector()
    pubs = [Pub(port, i) for i in range(conns)]
    for p in pubs:
        p.sock.setblocking(False)
        sel.register(p.sock, selectors.EVENT_READ, p)
    lat = []
    acked = 0
    start = None
    end = None
    connected = 0
    while True:
        now = time.perf_counter()
        if end is not None and now >= end:
            break
        for key, _ in sel.select(timeout=1.0):
            p = key.data
            try:
                data = p.sock.recv(1 << 16)
            except BlockingIOError:
                continue
            if not data:
                raise RuntimeError("broker closed a publisher")
            p.buf += data
            out = []
            while True:
                pkt, used = rm._try_parse(p.buf)
                if pkt is None:
                    break
                del p.buf[:used]
                if pkt.type == rm.CONNACK:
                    connected += 1
                    out += [p.send_one(payload) for _ in range(window)]
                    if connected == conns:
                        start = time.perf_counter()
                        end = start + seconds
                elif pkt.type == rm.PUBACK:
                    t0 = p.sent_at.pop(pkt.pid)
                    if start is not None:
                        acked += 1
                        lat.append(time.perf_counter() - t0)
                    out.append(p.send_one(payload))
            if out:
                p.sock.setblocking(True)
                p.sock.sendall(b"".join(out))
                p.sock.setblocking(False)
    for p in pubs:
        p.sock.close()
    lat.sort()
    return (acked / seconds, lat[len(lat) // 2] * 1e3 if lat else 0,
            lat[int(len(lat) * 0.99)] * 1e3 if lat else 0)


def start_tern(binary, workdir, port, store, sync):
    conf = os.path.join(workdir, "t%d.conf" % port)
    lines = ["config_version = 1", "listener.plain = %s:%d" % (HOST, port),
             "auth.allow_anonymous = true", "log.level = info", "sys.interval = 0"]
    if store:
        lines += ["store.path = %s" % os.path.join(workdir, "rate%d.db" % port),
                  "store.sync = %s" % sync, "store.backup_interval = 0"]
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    log = open(os.path.join(workdir, "t%d.log" % port), "w")
    return subprocess.Popen([binary, "-c", conf], stdout=log, stderr=log), log


def start_mosquitto(workdir, port):
    conf = os.path.join(workdir, "m%d.conf" % port)
    with open(conf, "w") as f:
        f.write("listener %d %s\nallow_anonymous true\npersistence true\n"
                "persistence_location %s/\nlog_dest none\n" % (port, HOST, workdir))
    log = open(os.path.join(workdir, "m%d.log" % port), "w")
    return subprocess.Popen(["/usr/sbin/mosquitto", "-c", conf], stdout=log, stderr=log), log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ternd", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                    "build/rel/ternd"))
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--dir", default=None, help="where the databases go (default: build/)")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="tern-rate-", dir=args.dir or os.path.join(
        os.path.dirname(os.path.dirname(HERE)), "build"))
    runs = [("tern, store.sync=full (durable)", "tern", True, "full"),
            ("tern, store.sync=normal", "tern", True, "normal"),
            ("tern, no store (memory)", "tern", False, None),
            ("mosquitto 2.0 (persistence, acks not durable)", "mosq", False, None)]
    print("%d connections x %d in flight, QoS 1 retained, %d-byte payloads, %.0f s each"
          % (args.conns, args.window, args.size, args.seconds))
    for name, kind, store, sync in runs:
        port = free_port()
        if kind == "tern":
            proc, log = start_tern(args.ternd, workdir, port, store, sync)
        else:
            proc, log = start_mosquitto(workdir, port)
        try:
            wait_port(port, proc)
            rate, p50, p99 = run_rate(port, args.conns, args.window, args.seconds, args.size)
            print("%-48s %8.0f acked msg/s   PUBACK latency p50 %6.2f ms  p99 %6.2f ms"
                  % (name, rate, p50, p99), flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            log.close()
        if kind == "tern" and store:
            with open(os.path.join(workdir, "t%d.log" % port)) as f:
                for line in f:
                    if "commit latency" in line:
                        print("    " + line.split(" INFO ", 1)[1].strip())
    print("logs and databases: %s" % workdir)


if __name__ == "__main__":
    main()
