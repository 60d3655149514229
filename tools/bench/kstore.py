#!/usr/bin/python3
"""tools/bench/kstore.py - `make bench-kstore`: the unikernel's disk store
under a durable load, beside the Linux daemon's store (issue 13, the
docs/PERFORMANCE.md line of its Done-when).

For each repetition and each target (the order alternates between
repetitions, as in scripts/bench.sh), a fresh broker:

  kernel  build/kernel/tern.elf under QEMU (TCG unless --kvm), pinned with
          taskset to --broker-cpu, booted from a boot bundle (the dev PKI,
          the configuration below plus GUEST_STORE_CONF), a host port
          forwarded to the guest's listener, and a virtio-blk (or
          virtio-scsi) disk: a fresh copy of a raw image file (by default
          build/tern-disk.img from `make image`: GPT, ESP, an empty tern
          data partition), QEMU's cache mode writeback with the guest's
          flushes passed on to the host (QEMU's default cache: no O_DIRECT,
          no cache.no-flush; write-cache=on: the device offers flush, and a
          flush becomes an fdatasync);
  daemon  build/rel/ternd pinned to --broker-cpu, the same configuration
          with store.path on a file in the same directory (same file
          system) as the guest's disk image, store.sync = full.

and, with tern-bench and this driver pinned to --gen-cpu:

  1. quiet:  the bystander alone: one QoS 0 publisher/subscriber pair at
             --bystander-rate msg/s for --duration s: latency p50/p99;
  2. loaded: the durable load, tern-bench flood --qos 1 --persistent
             (--pairs publishers, --window PUBLISHes in flight each, to
             subscribers with persistent sessions: every message is queued
             for a persistent session, so it is committed before its
             PUBACK); once it is publishing, the same bystander runs for
             --duration s inside it. Reported: PUBACKs/s inside the load's
             measured window (the durable rate), the bystander's latency
             under it, and from $SYS/broker/store/ (read as the operator):
             commits and records over the load (before/after deltas),
             records per commit, and commit latency p50/p99 as the store
             last reported them while the load ran (its last 1,024 commits).

A target whose $SYS has no store topics (today's kernel keeps everything
in RAM) is measured all the same and reported as "no store": its acks are
not durable, and the table says so instead of failing.

Results: build/bench/kstore-TIME.jsonl (a meta line, then one line per
target and repetition; copied to kstore-latest.jsonl), run files in
build/bench/kstore-run-TIME/ (configurations, consoles, logs), a table on
stdout. Under TCG every guest figure is emulation: read the kernel ÷
daemon ratios, not the absolutes.

    tools/bench/kstore.py --build build                 # full run
    tools/bench/kstore.py --quick --targets daemon      # seconds, no QEMU
    tools/bench/kstore.py --targets kernel --smp 2 --broker-cpus 0,1
                          # the store on CPU 1 (ADR-064), QEMU on both host CPUs
    tools/bench/kstore.py --guest-store 'store.disk = virtio-blk'  # keys, when they exist
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "kernel"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import harness  # noqa: E402  (QEMU, the dev PKI, boot bundles)
import rawmqtt as rm  # noqa: E402

# ---- parameters ---------------------------------------------------------------

# The guest's store configuration (docs/CONFIG.md): the disk with the tern
# data partition (auto: the template's), the same durability as the daemon
# (every commit flushed before its acknowledgements leave) and no periodic
# backups, so no backup step lands inside a measurement. --guest-store LINE
# adds lines; the kernel-ram target leaves these out.
GUEST_STORE_CONF = ("store.disk = auto", "store.sync = full", "store.backup_interval = 0")
# The raw disk image each boot gets a fresh copy of (--disk-template),
# relative to the build directory: the image builder's development disk
# (GPT, ESP, an empty tern data partition the kernel formats on first
# boot). "zeroes": DISK_MIB MiB of zeroes instead.
GUEST_DISK_TEMPLATE = "tern-disk.img"

# The daemon's store (the same durability as the guest's: every commit
# flushed before its acknowledgements leave; no periodic backups in either,
# so no backup step lands inside a measurement).
DAEMON_STORE_CONF = ("store.sync = full", "store.backup_interval = 0")

# Limits as scripts/bench.sh sets them for every broker (docs/PERFORMANCE.md).
LIMITS = ("limits.max_inflight = 32", "limits.max_queued = 1000",
          "limits.max_queued_bytes = 16777216", "limits.max_packet_size = 1048576")
SYS_INTERVAL = 1
GUEST_PORT = {"mtls": 8883, "plain": 1883}
ACL = "topic readwrite tern-bench/#\n"   # tern-bench's topics; the operator reads $SYS
STORE = "$SYS/broker/store/"
UPTIME = "$SYS/broker/uptime"
BOOT_TIMEOUT = 180.0     # TCG; later a store to open and check
DISK_MIB = 256


class Failure(Exception):
    pass


def note(msg):
    print("kstore: " + msg, file=sys.stderr, flush=True)


# ---- configurations -------------------------------------------------------------

def broker_conf(transport, bind, port, pki_dir, acl, store_lines):
    """The configuration both targets run: listener, TLS (paths under
    pki_dir), ACL, $SYS, the limits, then the store lines."""
    lines = ["config_version = 1", "log.level = warn", "sys.interval = %d" % SYS_INTERVAL]
    if transport == "mtls":
        lines += ["listener.tls = %s:%d" % (bind, port),
                  "tls.cert = %s/server.crt" % pki_dir,
                  "tls.key = %s/server.key" % pki_dir,
                  "tls.client_ca = %s/ca.crt" % pki_dir,
                  "tls.operator_ca = %s/operator-ca.crt" % pki_dir,
                  # A handshake competes with the load for the guest's CPU.
                  "tls.handshake_timeout = 10",
                  "acl.file = %s" % acl]
    else:
        lines += ["listener.plain = %s:%d" % (bind, port),
                  "auth.allow_anonymous = true", "sys.public = true"]
    return "\n".join(lines + list(LIMITS) + list(store_lines)) + "\n"


def client_args(transport, pki, who="dev-client"):
    """tern-bench's TLS options (none for plaintext)."""
    return pki.args(who) if transport == "mtls" else []


# ---- targets ----------------------------------------------------------------------

class KernelTarget:
    """The unikernel under QEMU with a disk, pinned to one CPU; with its
    store configured ("kernel") or without ("kernel-ram": the same guest
    and disk, everything in RAM, the baseline that shows what the commits
    cost the guest's network)."""

    def __init__(self, a, pki, workdir, name):
        self.a, self.pki, self.name = a, pki, name
        self.workdir = os.path.join(workdir, name)
        os.makedirs(self.workdir)
        workdir = self.workdir
        # kernel-ram: the same disk attached, but store.disk = none (the
        # default, auto, would find the template's tern partition and store).
        self.store_lines = ["store.disk = none"] if name == "kernel-ram" else \
            list(GUEST_STORE_CONF) + list(a.guest_store)
        conf = broker_conf(a.transport, "0.0.0.0", GUEST_PORT[a.transport], "pki",
                           "tern.acl", self.store_lines)
        # tern-bundle checks the configuration as the kernel will.
        self.bundle = harness.make_bundle(a.build, workdir, conf, ACL)
        self.vm = self.image = None

    def start(self, rep):
        a = self.a
        self.image = os.path.join(self.workdir, "disk-%d.img" % rep)
        if a.disk_template != "zeroes":
            subprocess.run(["cp", "--sparse=always", a.disk_template, self.image], check=True)
        else:
            with open(self.image, "wb") as f:
                f.truncate(a.disk_mib << 20)
        self.port = harness.free_port()
        self.qmp = os.path.join(self.workdir, "qmp-%d" % rep)
        # QEMU's default cache mode is writeback with flushes passed on
        # (cache.direct and cache.no-flush off); write-cache=on makes the
        # device offer flush. disk_cache() reads the mode back.
        disk = harness.drive(self.image, "disk0", a.bus, "write-cache=on,logical_block_size=512,"
                             "physical_block_size=4096")
        # -device, not -nic: the NIC gets MSI-X, so the guest takes
        # interrupts instead of polling (harness.nic).
        net = harness.nic("hostfwd=tcp:127.0.0.1:%d-:%d" % (self.port, GUEST_PORT[a.transport]))
        accel = ["-accel", "kvm", "-cpu", "host"] if a.kvm else []
        self.vm = harness.Vm(["-kernel", harness.Build(a.build).elf, "-initrd", self.bundle,
                              "-device", "virtio-rng-pci", "-m", str(a.mem_mib),
                              "-qmp", "unix:%s,server=on,wait=off" % self.qmp] +
                             accel + disk + net + ["-smp", str(a.smp)],
                             prefix=["taskset", "-c", a.broker_cpus or str(a.broker_cpu)])
        self.rep = rep
        took, out = self.vm.wait_ready(BOOT_TIMEOUT)
        self.boot_s = took
        self.ready = harness.ready_line(out)
        return self.ready

    @property
    def pid(self):
        return self.vm.proc.pid

    def alive(self):
        return self.vm.proc.poll() is None

    def disk_cache(self):
        """QEMU's cache mode for the guest's disk (query-block). virtio-blk
        stays writethrough until the guest's driver negotiates flush, so
        this also says whether the guest drove its disk at all."""
        q = harness.Qmp(self.qmp)
        try:
            blocks = q.cmd("query-block")["return"]
        finally:
            q.close()
        for b in blocks:
            if b.get("device") == "disk0":
                return b.get("inserted", {}).get("cache")
        return None

    def stop(self):
        cache = self.disk_cache() if self.vm and self.alive() else None
        if self.vm:
            self.vm.stop()
            with open(os.path.join(self.workdir, "console-%d.log" % self.rep), "wb") as f:
                f.write(self.vm.text())
            if b"FATAL" in self.vm.text():
                raise Failure("the guest reported a fatal fault (console-%d.log)" % self.rep)
        if self.image and os.path.exists(self.image):
            os.unlink(self.image)
        return {"qemu_disk_cache": cache, "bus": self.a.bus, "boot_s": round(self.boot_s, 2),
                "ready": self.ready}


class DaemonTarget:
    """ternd with store.path beside the guest's disk image, pinned to one CPU."""

    name = "daemon"

    def __init__(self, a, pki, workdir, name):
        self.a = a
        self.workdir = workdir = os.path.join(workdir, name)
        os.makedirs(workdir)
        self.store_lines = list(DAEMON_STORE_CONF)
        acl = os.path.join(workdir, "tern.acl")
        with open(acl, "w") as f:
            f.write(ACL)
        self.acl, self.pki_dir = acl, pki.dir
        self.proc = self.db = None

    def start(self, rep):
        a = self.a
        self.port = harness.free_port()
        self.db = os.path.join(self.workdir, "daemon-%d.db" % rep)
        conf = os.path.join(self.workdir, "daemon-%d.conf" % rep)
        with open(conf, "w") as f:
            f.write(broker_conf(a.transport, "127.0.0.1", self.port, self.pki_dir, self.acl,
                                self.store_lines + ["store.path = %s" % self.db]))
        self.log = open(os.path.join(self.workdir, "daemon-%d.log" % rep), "w")
        self.proc = subprocess.Popen(["taskset", "-c", str(a.broker_cpu), a.ternd, "-c", conf],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failure("ternd exited at start (status %s, see %s)"
                              % (self.proc.returncode, self.log.name))
            if subprocess.run(["ss", "-Hltn", "sport = :%d" % self.port],
                              capture_output=True, text=True).stdout.strip():
                return "ternd listening on %d" % self.port
            time.sleep(0.05)
        raise Failure("ternd did not listen on %d within 20 s" % self.port)

    @property
    def pid(self):
        return self.proc.pid   # taskset execs ternd: the same process

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return {}
        proc, self.proc = self.proc, None
        died = proc.poll()
        if died is None:
            proc.terminate()
        rc = proc.wait(timeout=30)
        self.log.close()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.db + suffix):
                os.unlink(self.db + suffix)
        if died is not None:
            raise Failure("ternd exited during the run (status %s)" % died)
        if rc != 0:
            raise Failure("ternd exited with %d after SIGTERM" % rc)
        return {}


# ---- $SYS -------------------------------------------------------------------------

class SysReader(threading.Thread):
    """The operator's subscription to $SYS/broker/store/# and the uptime:
    the latest value of each topic with the time it arrived."""

    def __init__(self, port, transport, pki):
        super().__init__(daemon=True)
        tls = pki.context("dev-operator") if transport == "mtls" else None
        self.c = rm.RawClient("127.0.0.1", port, timeout=30.0, tls=tls)
        ack = self.c.connect(client_id="kstore-sys", clean=True, timeout=30.0)
        if ack.return_code != 0:
            raise Failure("$SYS reader refused: CONNACK %d" % ack.return_code)
        self.c.subscribe([(STORE + "#", 0), (UPTIME, 0)], timeout=30.0)
        self.values = {}
        self.lock = threading.Lock()
        self.error = None
        self.stopping = False

    def run(self):
        try:
            while not self.stopping:
                try:
                    p = self.c.recv_packet(timeout=0.5)
                except TimeoutError:
                    continue
                if p.type == rm.PUBLISH:
                    with self.lock:
                        self.values[p.topic] = (p.payload.decode("utf-8", "replace"),
                                                time.monotonic())
        except Exception as e:  # noqa: BLE001 (reported by the caller)
            if not self.stopping:
                self.error = e

    def latest(self, topic):
        with self.lock:
            return self.values.get(topic)

    def wait_fresh(self, topic, timeout):
        """The first value of topic that arrives after now, or None."""
        since = time.monotonic()
        deadline = since + timeout
        while time.monotonic() < deadline:
            v = self.latest(topic)
            if v is not None and v[1] > since:
                return v[0]
            if self.error:
                raise Failure("$SYS reader: %r" % self.error)
            time.sleep(0.05)
        return None

    def store(self):
        """The store's numbers as last published, or None without a store."""
        with self.lock:
            vals = {t[len(STORE):]: v[0] for t, v in self.values.items() if t.startswith(STORE)}
        if "commits" not in vals:
            return None
        num = {}
        for k in ("commits", "records", "failed_commits", "commit_latency/p50_us",
                  "commit_latency/p99_us"):
            if k in vals and re.fullmatch(r"\d+", vals[k]):
                num[k] = int(vals[k])
        num["state"] = vals.get("state")
        return num

    def close(self):
        self.stopping = True
        self.join(2)
        self.c.close()


def store_settled(sysr, timeout):
    """The store's figures once its commit count stopped moving (two $SYS
    refreshes alike), or its last figures at the timeout; None without a
    store."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if sysr.wait_fresh(STORE + "commits", SYS_INTERVAL * 3 + 2) is None:
            break
        now = sysr.store()
        if last is not None and now and now.get("commits") == last.get("commits"):
            return now
        last = now
    return sysr.store()


def contention(port, transport, pki):
    """The kernel's contention counters since boot (issue 18: spinlock
    acquisitions, contended ones, spin iterations and TSC ticks waited;
    each CPU's wake IPIs and hlts) from the operator console's `diag`
    answer, or None where there is none (plaintext has no operator; the
    daemon's diag has no "locks"). Asked after the load: the answer's
    crypto measurement holds the guest's main loop for ~300 ms."""
    if transport != "mtls":
        return None
    c = rm.RawClient("127.0.0.1", port, timeout=30.0, tls=pki.context("dev-operator"))
    try:
        if c.connect(client_id="kstore-diag", clean=True, timeout=30.0).return_code != 0:
            return None
        c.subscribe([("$SYS/console/response/#", 0)], timeout=30.0)
        c.send(rm.publish("$SYS/console/request", json.dumps({"command": "diag"}).encode()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                p = c.recv_packet(timeout=max(deadline - time.monotonic(), 0.1))
            except TimeoutError:
                break
            if p.type == rm.PUBLISH and p.topic.startswith("$SYS/console/response/"):
                ans = json.loads(p.payload)
                if ans.get("command") == "diag":
                    return {k: ans[k] for k in ("locks", "cpus") if k in ans} or None
        return None
    finally:
        c.close()


# ---- tern-bench ------------------------------------------------------------------------

class Bench:
    """One tern-bench process: its JSON result, and the times (this
    process's clock) at which it announced its phases (--phases)."""

    def __init__(self, a, args, logpath):
        cmd = [a.bench] + args + ["--phases", "--cpus", str(a.gen_cpu)]
        self.cmd = cmd
        self.phases = {}
        self.cond = threading.Condition()
        self.errlog = open(logpath, "a")
        self.errlog.write("$ %s\n" % " ".join(cmd))
        self.errlog.flush()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        # Both pipes read by threads of ours (communicate() would race the
        # stderr reader for the phase lines).
        self.out = []
        self.readers = [threading.Thread(target=self._read_err, daemon=True),
                        threading.Thread(target=lambda: self.out.append(self.proc.stdout.read()),
                                         daemon=True)]
        for t in self.readers:
            t.start()

    def _read_err(self):
        for line in self.proc.stderr:
            m = re.fullmatch(r"tern-bench: phase (\w+)\n", line)
            if m:
                with self.cond:
                    self.phases[m.group(1)] = time.monotonic()
                    self.cond.notify_all()
            else:
                self.errlog.write(line)
                self.errlog.flush()

    def wait_phase(self, name, timeout):
        """True once tern-bench announced phase name; False if it ended
        (or the timeout passed) first."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while name not in self.phases:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return name in self.phases
                self.cond.wait(min(left, 0.2))
            return True

    def kill(self):
        """Stop it if it still runs (a measurement that failed half-way)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def result(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Failure("tern-bench did not finish within %.0f s: %s"
                          % (timeout, " ".join(self.cmd)))
        for t in self.readers:
            t.join(5)
        self.errlog.close()
        lines = [ln for ln in "".join(self.out).splitlines() if ln.startswith("{")]
        if self.proc.returncode != 0 or not lines:
            raise Failure("tern-bench failed (status %d, see %s): %s"
                          % (self.proc.returncode, self.errlog.name,
                             lines[-1] if lines else "no result"))
        return json.loads(lines[-1])


def bench_args(a, target, pki, scenario, label):
    return ([scenario, "--port", str(target.port), "--label", target.name, "--case", label,
             "--pid", str(target.pid)] + client_args(a.transport, pki))


def bystander_args(a, target, pki, label, duration):
    return bench_args(a, target, pki, "latency", label) + [
        "--pairs", "1", "--qos", "0", "--rate", str(a.bystander_rate),
        "--duration", str(duration), "--drain", "1"]


def latency_of(r):
    """The latency block of a tern-bench result, without the mean."""
    lat = r["latency"]
    return {"p50_ms": lat["p50_ms"], "p99_ms": lat["p99_ms"], "max_ms": lat["max_ms"],
            "samples": lat["samples"]}


def bystander_of(r):
    """What the table and the JSON keep of a bystander's run."""
    b = latency_of(r)
    b.update(delivered_ratio=r["results"]["delivered_ratio"],
             broker_util=r["cpu"].get("broker_util"))
    return b


def measure(a, target, pki, rep, logdir):
    """Both phases against a started target: one result dict."""
    log = os.path.join(logdir, "bench-%s-%d.stderr" % (target.name, rep))
    res = {"target": target.name, "rep": rep, "transport": a.transport}
    sysr = SysReader(target.port, a.transport, pki)
    sysr.start()
    started = []

    def bench(args):
        started.append(Bench(a, args, log))
        return started[-1]
    try:
        if sysr.wait_fresh(UPTIME, SYS_INTERVAL * 3 + 5) is None:
            raise Failure("no $SYS from the %s within %d s: is the operator's $SYS readable?"
                          % (target.name, SYS_INTERVAL * 3 + 5))
        # The store's topics appear with its first completed commit: none
        # yet means zero so far, or no store at all (known after the load).
        before = store_settled(sysr, 10)

        # 1. The bystander alone.
        quiet = bench(bystander_args(a, target, pki, "bystander-quiet", a.duration))
        q = quiet.result(a.duration + 120)
        res["bystander_quiet"] = bystander_of(q)

        # 2. The durable load, and the bystander inside its measured window.
        # The load runs long enough for the bystander's set-up (measured in
        # the quiet phase, slower under load) plus its window.
        slack = max(3.0, 4 * q["results"]["setup_s"] + 2)
        load_s = a.duration + slack
        paced = ["--rate", str(a.load_rate)] if a.load_rate else []
        flood = bench(bench_args(a, target, pki, "latency" if paced else "flood", "durable-q1") +
                      paced + ["--qos", "1", "--persistent", "--pairs", str(a.pairs),
                               "--window", str(a.window), "--size", str(a.size),
                               "--duration", "%.1f" % load_s, "--drain", "2"])
        if not flood.wait_phase("run", 120):
            r = flood.result(10)
            raise Failure("the durable load never started publishing: %s" % r)
        by = bench(bystander_args(a, target, pki, "bystander-loaded", a.duration))
        b = by.result(a.duration + 120)
        during = None
        if flood.wait_phase("drain", load_s + 120):
            during = sysr.store()     # as last published while the load ran
        f = flood.result(120)
        after = store_settled(sysr, 20)
        if target.name.startswith("kernel"):
            try:
                res["contention"] = contention(target.port, a.transport, pki)
            except Exception as e:  # noqa: BLE001 (a figure missing, not a failed run)
                note("%s rep %d: no contention counters: %r" % (target.name, rep, e))
    finally:
        sysr.close()
        for p in started:
            p.kill()
    fr = f["results"]
    # The bystander's measured window against the load's, in seconds from
    # the load's start of publishing.
    t0 = flood.phases["run"]
    window = {k: round(v - t0, 2) for k, v in (("from_s", by.phases.get("run")),
                                                ("to_s", by.phases.get("drain")),
                                                ("load_to_s", flood.phases.get("drain")))
              if v is not None}
    inside = len(window) == 3 and window["from_s"] >= 0 and window["to_s"] <= window["load_to_s"]
    if not inside:
        note("%s rep %d: the loaded bystander's window %r was not wholly inside the load's: "
             "flagged in the results" % (target.name, rep, window))
    res["bystander_loaded"] = bystander_of(b)
    res["bystander_loaded"].update(window, inside_load=inside)
    res["store_active"] = after is not None
    if after is None:
        note("%s: no %s* topics in $SYS: this target keeps no store (RAM only); its "
             "acknowledgements are not durable and there are no store figures"
             % (target.name, STORE))
    res["durable"] = {
        "acks_per_s": fr.get("puback_per_s"), "published": fr["published"],
        "puback": fr.get("puback"), "delivered_ratio": fr["delivered_ratio"],
        "lost_connections": fr["lost_connections"], "errors": fr["errors"],
        "latency": latency_of(f), "seconds": f["cpu"]["wall_s"],
        "broker_util": f["cpu"].get("broker_util"), "other_util": f["cpu"].get("other_util"),
        "generator_util": f["cpu"]["generator_util"],
    }
    if after is not None:
        before = before or {"commits": 0, "records": 0, "failed_commits": 0}
        commits = after["commits"] - before["commits"]
        records = after["records"] - before["records"]
        res["store"] = {
            "commits": commits, "records": records,
            "records_per_commit": records / commits if commits else None,
            "failed_commits": after.get("failed_commits", 0) - before.get("failed_commits", 0),
            "commit_p50_us": (during or after).get("commit_latency/p50_us"),
            "commit_p99_us": (during or after).get("commit_latency/p99_us"),
            "state": after.get("state"),
        }
        puback = fr.get("puback") or 0
        if records < puback:
            note("%s rep %d: %d records committed for %d acknowledged messages: not every "
                 "acknowledged message reached the store" % (target.name, rep, records, puback))
    return res


# ---- the run --------------------------------------------------------------------------------

def med(vals):
    """'median (min-max)' of the numbers among vals, or '-'."""
    v = [x for x in vals if isinstance(x, (int, float))]
    if not v:
        return "-"
    fmt = (lambda x: "%.3g" % x if abs(x) < 100 else "{:,.0f}".format(x))
    m = statistics.median(v)
    return fmt(m) if len(v) == 1 else "%s (%s-%s)" % (fmt(m), fmt(min(v)), fmt(max(v)))


ROWS = [
    ("durable QoS 1 acks/s", lambda r: r["durable"]["acks_per_s"]),
    ("  publish->delivery p50, ms", lambda r: r["durable"]["latency"]["p50_ms"]),
    ("  publish->delivery p99, ms", lambda r: r["durable"]["latency"]["p99_ms"]),
    ("  broker CPU (cores; the guest: all of QEMU)", lambda r: r["durable"]["broker_util"]),
    ("store commits", lambda r: r.get("store", {}).get("commits")),
    ("  records per commit", lambda r: r.get("store", {}).get("records_per_commit")),
    ("  records per acknowledged message",
     lambda r: r["store"]["records"] / r["durable"]["puback"]),
    ("  commit latency p50, us", lambda r: r.get("store", {}).get("commit_p50_us")),
    ("  commit latency p99, us", lambda r: r.get("store", {}).get("commit_p99_us")),
    ("broker CPU, bystander alone (cores)", lambda r: r["bystander_quiet"]["broker_util"]),
    ("bystander QoS 0 p50, quiet, ms", lambda r: r["bystander_quiet"]["p50_ms"]),
    ("bystander QoS 0 p99, quiet, ms", lambda r: r["bystander_quiet"]["p99_ms"]),
    ("bystander QoS 0 p50, loaded, ms", lambda r: r["bystander_loaded"]["p50_ms"]),
    ("bystander QoS 0 p99, loaded, ms", lambda r: r["bystander_loaded"]["p99_ms"]),
]


def cache_verdict(r):
    """What QEMU's cache mode of the guest's disk, read at the end of a
    run, says about the run."""
    c = r["qemu_disk_cache"]
    if not c:
        return "QEMU's cache mode of the guest's disk could not be read"
    if c.get("writeback") and not c.get("no-flush"):
        if r.get("bus") == "virtio-blk":
            return ("the guest's disk ran with a volatile write cache whose flushes reach the "
                    "host: its driver negotiated flush (%r)" % c)
        # scsi-hd reports the configured mode whether or not a driver ran.
        return ("QEMU gave the guest's disk a volatile write cache whose flushes reach the "
                "host (%r; scsi-hd reports this with or without a guest driver)" % c)
    if r.get("store_active"):
        return ("WARNING: the guest's disk ran writethrough (%r): every write was made durable "
                "by QEMU, not by the guest's flushes; did its driver negotiate flush?" % c)
    return ("the guest's disk stayed writethrough (%r): no driver negotiated flush, as expected "
            "of a guest without a disk store" % c)


def table(results, targets):
    by = {t: [r for r in results if r.get("target") == t and "error" not in r] for t in targets}
    head = ["figure"] + ["%s%s" % (t, "" if all(r.get("store_active") for r in by[t])
                                   else " (no store)") for t in targets]
    ratio = "kernel" in targets and "daemon" in targets
    if ratio:
        head.append("kernel / daemon")
    rows = [head]
    for name, get in ROWS:
        cells = [name]
        per = {}   # target -> {rep: value}
        for t in targets:
            per[t] = {}
            for r in by[t]:
                try:
                    per[t][r["rep"]] = get(r)
                except (KeyError, TypeError, ZeroDivisionError):
                    pass
            cells.append(med(per[t].values()))
        if ratio:
            rs = [per["kernel"][k] / per["daemon"][k] for k in per["kernel"]
                  if isinstance(per["kernel"].get(k), (int, float))
                  and isinstance(per["daemon"].get(k), (int, float)) and per["daemon"][k]]
            cells.append(med(rs))
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


TARGETS = {"kernel": KernelTarget, "kernel-ram": KernelTarget, "daemon": DaemonTarget}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", help="results directory (default BUILD/bench)")
    ap.add_argument("--targets", default="kernel,daemon",
                    help="comma-separated: kernel (with its store), kernel-ram (the same "
                    "guest, RAM only), daemon; default kernel,daemon")
    ap.add_argument("--transport", choices=("mtls", "plain"), default="mtls",
                    help="mutual TLS with the dev PKI (default) or the plaintext listener")
    ap.add_argument("--quick", action="store_true", help="1 repetition of 3 s phases")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--duration", type=float, help="seconds of each measured window [10]")
    ap.add_argument("--pairs", type=int, default=8, help="durable publishers [8]")
    ap.add_argument("--window", type=int, default=64, help="PUBLISHes in flight each [64]")
    ap.add_argument("--size", type=int, default=64, help="payload bytes [64]")
    ap.add_argument("--load-rate", type=float, default=0,
                    help="msg/s per durable publisher; 0 = as fast as acknowledged [0]")
    ap.add_argument("--bystander-rate", type=float, default=50, help="msg/s [50]")
    ap.add_argument("--broker-cpu", type=int, default=int(os.environ.get("BENCH_BROKER_CPU", 0)))
    ap.add_argument("--gen-cpu", type=int, default=int(os.environ.get("BENCH_GEN_CPU", 1)))
    ap.add_argument("--bus", choices=("virtio-blk", "virtio-scsi"), default="virtio-blk")
    ap.add_argument("--disk-template", help="raw disk image to copy for each boot, or "
                    "'zeroes' for %d MiB of zeroes (default: BUILD/%s)"
                    % (DISK_MIB, GUEST_DISK_TEMPLATE))
    ap.add_argument("--disk-mib", type=int, default=DISK_MIB)
    ap.add_argument("--mem-mib", type=int, default=256)
    ap.add_argument("--smp", type=int, default=1,
                    help="the guest's CPUs [1]; with 2 or more the store runs on CPU 1 "
                    "(ADR-064)")
    ap.add_argument("--broker-cpus", help="host CPUs for QEMU (a taskset list, e.g. 0,1); "
                    "default --broker-cpu")
    ap.add_argument("--kvm", action="store_true", help="-accel kvm (where it works)")
    ap.add_argument("--guest-store", action="append", default=[], metavar="LINE",
                    help="a line of the guest's store configuration (repeatable), "
                    "after GUEST_STORE_CONF")
    ap.add_argument("--ternd", help="default BUILD/rel/ternd")
    ap.add_argument("--bench", help="default BUILD/rel/tern-bench")
    a = ap.parse_args()
    a.reps = a.reps or (1 if a.quick else 3)
    a.duration = a.duration or (3.0 if a.quick else 10.0)
    a.targets = [t for t in a.targets.split(",") if t]
    for t in a.targets:
        if t not in TARGETS:
            ap.error("--targets: unknown target %r" % t)
    a.ternd = a.ternd or os.path.join(a.build, "rel", "ternd")
    a.disk_template = a.disk_template or os.path.join(a.build, GUEST_DISK_TEMPLATE)
    a.bench = a.bench or os.path.join(a.build, "rel", "tern-bench")
    need = [a.bench] + ([a.ternd] if "daemon" in a.targets else []) + \
        ([harness.Build(a.build).elf, os.path.join(a.build, "rel", "tern-bundle")] +
         ([a.disk_template] if a.disk_template != "zeroes" else [])
         if any(t.startswith("kernel") for t in a.targets) else [])
    for p in need:
        if not os.path.exists(p):
            ap.error("%s missing (make %s)" % (p, "kernel" if p.endswith(".elf") else p))
    return a


def meta(a, stamp, targets):
    qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                          text=True).stdout.splitlines()[:1]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), "")
    m = {"stamp": stamp, "cpu": cpu, "nproc": os.cpu_count(), "qemu": qemu[0] if qemu else "",
         "accel": "kvm" if a.kvm else "tcg", "transport": a.transport, "reps": a.reps,
         "duration_s": a.duration, "pairs": a.pairs, "window": a.window, "size": a.size,
         "load_rate": a.load_rate,
         "bystander_rate": a.bystander_rate, "broker_cpu": a.broker_cpu, "gen_cpu": a.gen_cpu,
         "smp": a.smp, "broker_cpus": a.broker_cpus or str(a.broker_cpu),
         "loadavg_start": load, "targets": [t.name for t in targets]}
    for t in targets:
        m["%s_store_conf" % t.name] = t.store_lines
    if any(t.name.startswith("kernel") for t in targets):
        m.update(bus=a.bus, disk=a.disk_template if a.disk_template != "zeroes"
                 else "%d MiB of zeroes" % a.disk_mib,
                 qemu_cache="writeback, flushes passed on (QEMU's default cache, write-cache=on)")
    return {"meta": m}


def contention_line(c):
    """One line of the kernel's contention counters (since boot)."""
    locks = ", ".join("%s %d/%d contended (%d spins, %.1f Mticks)"
                      % (n, v["contended"], v["taken"], v["spins"], v["wait_ticks"] / 1e6)
                      for n, v in c.get("locks", {}).items())
    cpus = ", ".join("CPU %d: %d IPIs sent, %d skipped, %d hlts"
                     % (v["id"], v["ipis_sent"], v["ipis_skipped"], v["halts"])
                     for v in c.get("cpus", []))
    return "locks: %s; %s" % (locks, cpus)


def main():
    a = parse_args()
    os.sched_setaffinity(0, {a.gen_cpu})   # this driver and its $SYS reader
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = a.out or os.path.join(a.build, "bench")
    workdir = os.path.abspath(os.path.join(out, "kstore-run-" + stamp))
    os.makedirs(workdir)
    pki = harness.Pki(a.build)
    try:
        targets = [TARGETS[t](a, pki, workdir, t) for t in a.targets]
    except harness.Failure as e:
        # tern-bundle checks the guest's configuration as the kernel will.
        note("the guest's configuration is refused: %s" % e)
        if a.guest_store or GUEST_STORE_CONF:
            note("(the store lines come from GUEST_STORE_CONF and --guest-store: does this "
                 "kernel have those keys?)")
        return 2
    if any(t.name == "kernel" and not t.store_lines for t in targets):
        note("the guest's configuration has no store lines (GUEST_STORE_CONF, --guest-store):"
             " it keeps everything in RAM; its figures are a baseline, not the disk store's")
    path = os.path.join(out, "kstore-%s.jsonl" % stamp)
    results = []
    with open(path, "w") as f:
        f.write(json.dumps(meta(a, stamp, targets)) + "\n")
        for rep in range(1, a.reps + 1):
            order = targets if rep % 2 else targets[::-1]
            for t in order:
                note("rep %d/%d: %s" % (rep, a.reps, t.name))
                try:
                    ready = t.start(rep)
                    note("  %s" % ready)
                    r = measure(a, t, pki, rep, workdir)
                    r.update(t.stop())
                except (Failure, harness.Failure, OSError, ValueError, KeyError) as e:
                    r = {"target": t.name, "rep": rep, "error": str(e)}
                    note("  %s failed: %s" % (t.name, e))
                    try:
                        t.stop()
                    except Exception as e2:  # noqa: BLE001 (already failing)
                        note("  stopping it: %s" % e2)
                results.append(r)
                f.write(json.dumps(r) + "\n")
                f.flush()
    shutil.copyfile(path, os.path.join(out, "kstore-latest.jsonl"))
    print("Durable QoS 1 through the %s (%s, %s; %d repetition(s) of %g s phases; "
          "median (min-max))" % (" and ".join(a.targets), a.transport,
                                 "KVM" if a.kvm else "QEMU TCG: relative figures", a.reps,
                                 a.duration))
    print(table(results, a.targets))
    for r in results:
        if "store_active" in r and not r["store_active"]:
            print("%s rep %d: no store ($SYS has no %s* topics): RAM only, not durable"
                  % (r["target"], r["rep"], STORE))
        if "qemu_disk_cache" in r:
            print("%s rep %d: %s" % (r["target"], r["rep"], cache_verdict(r)))
        if r.get("contention"):
            print("%s rep %d: %s" % (r["target"], r["rep"], contention_line(r["contention"])))
    note("results in %s; run files in %s" % (path, workdir))
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
