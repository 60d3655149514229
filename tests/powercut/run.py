#!/usr/bin/python3
"""The power-cut harness (SPEC D8, H4; issue 13): real power cuts under the
unikernel's durable store.

The guest's disk is served by nbd_backend.py (an NBD server in this
process, QEMU connecting with -blockdev driver=nbd) which keeps every write
since the last flush in a volatile cache. The load and the checks are the
daemon torture's (tests/torture/durable_load.py), over mutual TLS with the
development PKI: QoS 1 retained publishes and QoS 1 / QoS 2 messages for a
persistent session, every PUBACK/PUBREC/PUBCOMP recorded. Each cycle:

  1. (one cycle in ten) cut the power during boot, while the guest opens
     and checks its store, and boot again; (about one in seven) cut it
     while the guest copies its database into a backup slot (its backups
     run every GUEST_BACKUP_INTERVAL seconds), and boot again;
  2. a publisher streams; after a random time QEMU is killed (SIGKILL),
     either at once or (half the cuts) while the backend holds one of the
     guest's next flushes unanswered, so that the writes of a sync in
     progress are in the cache; the backend cuts the power: the cache is
     lost whole ("lose-all"), kept whole ("keep-all") or each write kept,
     lost or torn by 512-byte sector inside its physical blocks
     ("random", chosen twice as often), chosen per cut;
  3. after every cut, disk_check.py reads the backup slots from the
     image: each is empty or a whole tern database (integrity_check);
     the guest boots from what persisted; guest_store_integrity() reads
     the store's check from the console; every acknowledged retained
     message holds its value or a newer one; the persistent session gets
     every acknowledged QoS 1 message, every QoS 2 message exactly once.

It prints the counts: published, acknowledged, cuts by mode and by aim,
backup copies made and cut, and the backend's writes, flushes, writes
lost and torn.

--failing-disk runs the failing-disk scenario instead: the backend fails
writes and flushes, then only flushes, then only writes, for a while
each: no PUBACK for a durable QoS 1 publish and no PUBREC for a QoS 2
one, $SYS/broker/store/state says "failing", another client is still
served; when the disk is back both are acknowledged, state is "ok" and
they survive a power cut; last, a power cut while the disk fails keeps
the last acknowledged values.

--target daemon runs the same cycles against the Linux daemon with a store
(SIGKILL, no power cut: its files are on the host's file system), to check
the harness's own logic; --plumbing boots the guest with a zeroed disk (no
GPT: it stores nothing, the disk is attached but unused) and skips the
durability checks.

The guest is the TEST kernel (build/kernel/tern-test.elf) booted with
tern.test.integrity=1 (PRAGMA integrity_check after the open's
quick_check); its disk starts as a tern-mkdisk image with a blank tern
data partition (no ESP), formatted by the guest at its first boot; the
configuration has no store lines (store.disk = auto finds that disk).

    tests/powercut/run.py --build build --cuts 20 --seed 1 --bus alternate
    tests/powercut/run.py --failing-disk --bus alternate
    tests/powercut/run.py --target daemon --bin build/rel/ternd --cuts 10

Exit status 0 when every check passed. Every wait has a timeout.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "kernel"))
sys.path.insert(0, os.path.join(REPO, "tests", "torture"))
import durable_load as dl  # noqa: E402
import harness  # noqa: E402  (the kernel tests' QEMU, PKI and bundle helpers)
import disk_check  # noqa: E402
import nbd_backend as nb  # noqa: E402
import rawmqtt as rm  # noqa: E402
import torture  # noqa: E402  (the daemon under SIGKILL, the file integrity check)

HOST = "127.0.0.1"
EARLY_CUTS = 0.1        # share of cycles that also cut the power during boot
BOOT_TIMEOUT = 120.0    # TCG, a store to open and check, maybe a WAL to replay
BYSTANDER = "bystander/#"
# Share of cuts taken while the guest waits for a flush (held by the
# backend) instead of at a random moment: a random moment almost always
# finds the cache empty, since the guest flushes right after it writes.
# Under load, half of those come at one of the next LOAD_HOLD_MAX flushes
# (mostly a group commit's one write), half at the next flush that finds
# at least BIG_SYNC writes in the cache (a checkpoint, a large group).
AT_FLUSH = 0.5
LOAD_HOLD_MAX = 3
BIG_SYNC = 4
BOOT_HOLD_MAX = 12      # during boot, at one of its first 12 (format, open, checkpoint)
HOLD_WAIT = 15.0        # seconds a held flush may take to come
# Share of cycles that start with a cut while the guest copies its database
# into a backup slot (at one of the first BACKUP_HOLD_MAX flushes with a
# write into a backup region: emptying the slot, the copy's sync, its size).
BACKUP_CUTS = 0.15
BACKUP_HOLD_MAX = 3
BACKUP_SLOTS = ("backup A", "backup B")
# How often each cut mode is chosen: "random" is the one that tears.
CUT_WEIGHTS = {"lose-all": 1, "keep-all": 1, "random": 2}

# The guest's configuration, beside the listener and the PKI. store.disk
# is left at auto: the one disk whose GPT holds a tern data partition
# (docs/CONFIG.md), which the disk below has; the guest formats it at its
# first boot. Backups every few seconds instead of every hour, so that
# cuts also land inside backup copies (each must leave one valid copy).
GUEST_BACKUP_INTERVAL = 3
GUEST_STORE_CONF = ("store.backup_interval = %d" % GUEST_BACKUP_INTERVAL,)
# The store's console lines about backups (src/store/backup.c).
BACKUP_STARTED = re.compile(rb"tern: store: info: store: backup \d+ to \S+ started")
BACKUP_DONE = re.compile(rb"tern: store: info: store: backup \d+ to \S+ complete")

# The TEST kernel runs PRAGMA integrity_check after opening its store when
# booted with this (src/platform/kernel/main.c); the production kernel only
# runs quick_check.
GUEST_APPEND = "tern.test.integrity=1"
# With -smp 2 and up, CPU 1's line once it runs the store (ADR-064), and the
# block layer's refusal of a request from any other CPU (never expected).
STORAGE_CORE = b"storage core running"
WRONG_CPU = b"not the disks' CPU"

# The telemetry journal's line once the boot record is durable (before
# serving): store/ktele.c.
TELE_BOOT_LINE = re.compile(rb"tern: telemetry: [^\n]*: boot (\d+) recorded")

# The store's checks at every boot (src/platform/kernel/store/
# kdisk_store.c): the open's quick_check, then integrity_check. A cut must
# never damage the database, so a quick_check that failed (even one
# repaired from a backup) fails the run as much as a failed integrity_check.
STORE_QUICK_LINE = re.compile(rb"tern: store: database (?:created|found): quick_check [^\n]*")
STORE_QUICK_OK = re.compile(rb"tern: store: database (?:created|found): quick_check ok, ")
STORE_INTEGRITY_LINE = re.compile(rb"tern: store: integrity_check [^\n]*")
STORE_INTEGRITY_OK = re.compile(rb"tern: store: integrity_check ok$")


def guest_store_integrity(console):
    """The store's integrity as the guest reported it on the console of
    one boot (bytes): "ok" when it printed exactly one quick_check line
    and one integrity_check line, both ok; else a Failure naming what the
    guest said (or that it said nothing)."""
    for what, line_re, ok_re in (("quick_check", STORE_QUICK_LINE, STORE_QUICK_OK),
                                 ("integrity_check", STORE_INTEGRITY_LINE, STORE_INTEGRITY_OK)):
        lines = line_re.findall(console)
        if len(lines) != 1:
            raise dl.Failure("%d store %s lines on the guest's console (want one matching %s)"
                             % (len(lines), what, line_re.pattern.decode()))
        if not ok_re.search(lines[0].rstrip(b"\r")):
            raise dl.Failure("store check: %s" % lines[0].decode("utf-8", "replace"))
    return "ok"


def make_disk_image(path, mib, template=None, mkdisk=None):
    """The guest's disk before its first boot: a copy of template, or one
    made by tern-mkdisk (mkdisk: GPT with a blank tern data partition and
    no ESP, which the kernel formats at its first boot), or without
    either, mib MiB of zeroes (a guest that stores nothing)."""
    if template:
        shutil.copyfile(template, path)
    elif mkdisk:
        r = subprocess.run([mkdisk, "--size", "%dM" % mib, "--esp", "0", path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise dl.Failure("tern-mkdisk: %s" % (r.stdout + r.stderr).strip())
    else:
        with open(path, "wb") as f:
            f.truncate(mib << 20)


def acl_text():
    return "".join("topic readwrite %s\n" % t for t in dl.TOPIC_FILTERS + (BYSTANDER,))


# ---- what the cycles run against --------------------------------------------

class KernelTarget:
    """The unikernel under QEMU: a boot bundle (mutual TLS, the dev PKI,
    the load's ACL), its disk served by the NBD backend, a fixed host port
    forwarded to the guest's 8883 across boots."""

    name = "kernel"

    def __init__(self, args, workdir, rng):
        build = harness.Build(args.build)
        # The TEST kernel: the production one plus integrity_check at boot.
        self.elf = build.test_elf
        self.workdir = workdir
        self.bus = args.bus
        self.physical_block = args.physical_block
        self.smp = args.smp
        self.storage_boots = 0      # boots that ran the store on CPU 1 (-smp 2 and up)
        pki = harness.Pki(args.build)
        conf = "\n".join(["config_version = 1",
                          "listener.tls = 0.0.0.0:8883",
                          "tls.cert = pki/server.crt",
                          "tls.key = pki/server.key",
                          "tls.client_ca = pki/ca.crt",
                          "tls.operator_ca = pki/operator-ca.crt",
                          "tls.handshake_timeout = 10",
                          "acl.file = tern.acl",
                          "sys.interval = 1"] +
                         list(dl.NO_DROP_LIMITS) + list(GUEST_STORE_CONF)) + "\n"
        self.bundle = harness.make_bundle(args.build, workdir, conf, acl_text())
        image = self.image = os.path.join(workdir, "disk.img")
        self.mkdisk = os.path.join(args.build, "rel", "tern-mkdisk")
        self.tern_disk = os.path.join(args.build, "rel", "tern-disk")
        self.verified = 0           # images tern-disk verify passed after a cut
        # --plumbing: a zeroed disk (no GPT), so the guest stores nothing.
        make_disk_image(image, args.disk_mib, args.disk_template,
                        None if args.plumbing else self.mkdisk)
        self.disk = nb.VolatileDisk(image, args.physical_block, random.Random(rng.random()))
        self.server = nb.NbdServer(self.disk, os.path.join(workdir, "nbd.sock"))
        port = harness.free_port()
        self.endpoint = dl.Endpoint(HOST, port, tls=pki.context("dev-client"),
                                    timeout=30.0, quiet=2.0)
        self.operator = dl.Endpoint(HOST, port, tls=pki.context("dev-operator"),
                                    timeout=30.0, quiet=2.0)
        self.vm = None
        self.boots = 0
        self.backups_done = 0       # backup copies completed, over all boots
        self.cuts_in_backup = 0     # cuts while a copy was in progress
        self.backup_checks = 0      # times the backup slots were checked
        self.backups_seen = 0       # complete copies found by those checks
        self.where = None           # regions(), once the guest formatted the disk
        self.check = not args.plumbing
        self.tele = os.path.join(args.build, "rel", "tern-tele")
        self.served_boots = []      # boot numbers whose boot record was flushed before serving
        self.journal_checks = 0
        self.boot_seconds = 5.0   # the last boot's time to ready: early cuts land inside it

    def start(self):
        bus = self.bus if self.bus != "alternate" else ("virtio-blk", "virtio-scsi")[self.boots % 2]
        self.last_bus = bus
        self.qmp_path = os.path.join(self.workdir, "qmp-%d" % (self.boots + 1))
        self.vm = harness.module_vm(
            self.elf, self.bundle,
            ["-nic", "user,model=virtio-net-pci,hostfwd=tcp:%s:%d-:8883"
             % (HOST, self.endpoint.port)],
            extra=["-append", GUEST_APPEND, "-smp", str(self.smp)] +
            nb.qemu_disk_args(self.server, bus, self.physical_block) +
            ["-qmp", "unix:%s,server=on,wait=off" % self.qmp_path])
        self.boots += 1
        # QEMU opens the disk at start: the backend sees every boot.
        if not self.server.wait_connected(self.boots, 30):
            raise dl.Failure("QEMU did not connect to the NBD backend (boot %d)" % self.boots)

    def wait_ready(self):
        self.boot_seconds, _ = self.vm.wait_ready(BOOT_TIMEOUT)
        if self.smp >= 2 and self.check:
            self.storage_core_running()

    def storage_core_running(self):
        """With two or more CPUs the store's threads and the disks run on
        CPU 1 (ADR-064): its boot line says so (printed by CPU 1 itself,
        so it may follow the ready line by a moment), and no disk request
        ever came from another CPU."""
        until = time.time() + 10
        while STORAGE_CORE not in self.vm.text():
            if time.time() > until:
                raise dl.Failure("-smp %d: CPU 1 never said the storage core runs:\n%s"
                                 % (self.smp, self.tail()))
            time.sleep(0.1)
        if WRONG_CPU in self.vm.text():
            raise dl.Failure("a disk request from a CPU that does not own the disks:\n%s"
                             % self.tail())
        self.storage_boots += 1

    def integrity(self):
        return guest_store_integrity(self.vm.text())

    def disk_cache(self):
        """QEMU's cache mode of the guest's disk, as query-block reports it:
        {"writeback": ..., "direct": ..., "no-flush": ...}. For virtio-blk,
        QEMU makes the disk writethrough until the guest's driver
        negotiates VIRTIO_BLK_F_FLUSH (the virtio spec's rule for legacy
        drivers), so this says whether the guest sees a volatile cache."""
        qmp = harness.Qmp(self.qmp_path)
        try:
            blocks = qmp.cmd("query-block")["return"]
        finally:
            qmp.close()
        cache = [b["inserted"]["cache"] for b in blocks
                 if b.get("inserted", {}).get("node-name") == "disk0"]
        if len(cache) != 1:
            raise dl.Failure("query-block: no disk0 in %r" % blocks)
        return cache[0]

    def expect_volatile_cache(self):
        """The guest runs its disk with a volatile write cache whose flushes
        reach the backend; otherwise QEMU would make every write durable
        on its own and the power cuts would test nothing."""
        cache = self.disk_cache()
        if not cache["writeback"] or cache["no-flush"]:
            raise dl.Failure("the guest's disk is not a volatile write cache with flushes "
                             "(QEMU reports %r): did its driver negotiate the flush "
                             "feature?" % cache)

    def check_disk_path(self):
        """Without the guest's help: a write and a flush that QEMU's block
        layer issues on the guest's drive (HMP qemu-io) reach the backend
        as one write and one flush. Writes 4 KiB at 1 MiB before the disk's
        end: in the gap tern-mkdisk leaves between the data partition (it
        ends on the last whole MiB) and the backup GPT, so tern-disk verify
        still finds both GPT copies intact."""
        cache = self.disk_cache()
        qmp = harness.Qmp(self.qmp_path)
        try:
            before = self.disk.stats()
            # The block device under the device's id: virtio-blk-pci is a
            # proxy whose virtio device is its child.
            dev = "/machine/peripheral/disk0-dev" + \
                ("/virtio-backend" if self.last_bus == "virtio-blk" else "")
            for io in ("write -P 0x5a %d 4k" % (self.disk.size - (1 << 20)), "flush"):
                out = qmp.cmd("human-monitor-command",
                              **{"command-line": 'qemu-io -d %s "%s"' % (dev, io)})["return"]
                if "error" in out.lower():
                    raise dl.Failure("qemu-io %s: %s" % (io, out))
            after = self.disk.stats()
        finally:
            qmp.close()
        if (after["writes"] - before["writes"], after["flushes"] - before["flushes"]) != (1, 1):
            raise dl.Failure("QEMU's write and flush reached the backend as %r" % (
                {k: after[k] - before[k] for k in ("writes", "fua_writes", "flushes")},))
        return "QEMU's cache %r; its write and flush reach the backend" % cache

    def hold_flush(self, n, min_writes, timeout, backups=False):
        """Hold the guest's n-th flush from now with at least min_writes
        writes in the cache (nb.VolatileDisk), with backups only one with a
        write into a backup region; True when one waits within timeout
        seconds (the cut that follows finds that sync's writes in the
        cache)."""
        ranges = [self.regions()[k] for k in BACKUP_SLOTS] if backups else None
        self.disk.hold_next_flush(n, min_writes, ranges)
        return self.disk.wait_flush_held(timeout)

    def regions(self):
        """The tern regions on the disk (the guest formatted it at its
        first boot), as byte ranges."""
        if self.where is None:
            self.where = disk_check.regions(self.image, self.mkdisk)
        return self.where

    def check_backups(self):
        """Between boots: every backup slot is empty or a whole database."""
        try:
            verdict = disk_check.check_backups(self.image, self.regions(), self.physical_block)
        except disk_check.DiskError as e:
            raise dl.Failure("after cut %d: %s" % (self.disk.stats()["cuts"], e))
        self.backup_checks += 1
        self.backups_seen += sum(v != "empty" for v in verdict.values())
        self.verify_image()

    def verify_image(self):
        """Between boots: `tern-disk verify` finds the whole image (GPT,
        superblocks, region headers, database after replaying the WAL,
        backups, telemetry) consistent after the cut."""
        r = subprocess.run([self.tern_disk, "verify", self.image], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            raise dl.Failure("after cut %d: tern-disk verify (exit %d):\n%s%s" % (
                self.disk.stats()["cuts"], r.returncode, r.stdout, r.stderr))
        self.verified += 1

    def check_journal(self, console):
        """After a cut: the journal reads cleanly and holds the boot record
        of every boot that served (its number from its console line)."""
        m = TELE_BOOT_LINE.search(console)
        if m:
            self.served_boots.append(int(m.group(1)))
        elif harness.READY.search(console):
            raise dl.Failure("boot %d served without a telemetry boot line" % self.boots)
        try:
            recs = disk_check.journal(self.image, self.tele)
            disk_check.check_boots(recs, self.served_boots)
        except disk_check.DiskError as e:
            raise dl.Failure("after cut %d: %s" % (self.disk.stats()["cuts"], e))
        self.journal_checks += 1

    def kill(self, mode):
        """SIGKILL QEMU, then the power cut: (kept, lost, torn)."""
        if self.vm.proc.poll() is not None:
            raise dl.Failure("QEMU exited on its own (status %s)" % self.vm.proc.returncode)
        self.vm.stop()
        self._keep_console()
        out = self.vm.text()
        if b"FATAL" in out:
            raise dl.Failure("the guest reported a fatal fault:\n" + self.tail())
        done = len(BACKUP_DONE.findall(out))
        self.backups_done += done
        self.cuts_in_backup += len(BACKUP_STARTED.findall(out)) > done
        r = self.server.power_cut(mode)
        if self.check:
            self.check_backups()
            self.check_journal(out)
        return r

    def set_disk_faults(self, write, flush):
        self.disk.set_faults(write=write, flush=flush)

    def counts(self):
        c = self.disk.stats()
        c["nbd_connections"] = self.server.connections
        c["backups_done"] = self.backups_done
        c["cuts_in_backup"] = self.cuts_in_backup
        c["backup_checks"] = self.backup_checks
        c["backups_seen"] = self.backups_seen
        c["verified"] = self.verified
        c["journal_checks"] = self.journal_checks
        c["boots_recorded"] = len(self.served_boots)
        c["storage_core_boots"] = self.storage_boots
        return c

    def tail(self, n=40):
        return "" if self.vm is None else \
            "\n".join(self.vm.text().decode("utf-8", "replace").splitlines()[-n:])

    def close(self):
        if self.vm is not None:
            self.vm.stop()
            self._keep_console()
        self.server.close()
        self.disk.close()
        if self.server.errors:
            raise dl.Failure("NBD protocol errors: %s" % "; ".join(self.server.errors))

    def _keep_console(self):
        with open(os.path.join(self.workdir, "console-%d.log" % self.boots), "wb") as f:
            f.write(self.vm.text())


class DaemonTarget:
    """The Linux daemon with store.path over mutual TLS: a SIGKILL instead of
    a power cut (the page cache survives it, so no cut mode applies), the
    database files checked with PRAGMA integrity_check after each kill.
    With an ASan build (TERN_TEST_HOOKS) disk faults go through the store's
    fault hook."""

    name = "daemon"

    def __init__(self, args, workdir, rng):
        pki = harness.Pki(args.build)
        port = torture.free_port()
        acl = os.path.join(workdir, "tern.acl")
        with open(acl, "w") as f:
            f.write(acl_text())
        self.fault_file = os.path.join(workdir, "fault")
        env = dict(os.environ, TERN_TEST_STORE_FAULT=self.fault_file)
        self.daemon = torture.Daemon(
            args.bin, workdir, port, env=env, sys_interval=1,
            listener=["listener.tls = %s:%d" % (HOST, port),
                      "tls.cert = %s" % pki.path("server.crt"),
                      "tls.key = %s" % pki.path("server.key"),
                      "tls.client_ca = %s" % pki.path("ca.crt"),
                      "tls.operator_ca = %s" % pki.path("operator-ca.crt"),
                      "acl.file = %s" % acl])
        self.scratch = os.path.join(workdir, "check")
        self.endpoint = dl.Endpoint(HOST, port, tls=pki.context("dev-client"))
        self.operator = dl.Endpoint(HOST, port, tls=pki.context("dev-operator"))
        self.boot_seconds = 0.03
        self.kills = 0
        self.checked = "no kill yet"

    def start(self):
        self.daemon.start()

    def wait_ready(self):
        self.daemon.wait_ready()

    def integrity(self):
        return self.checked

    def hold_flush(self, n, min_writes, timeout, backups=False):
        return False   # the daemon's syncs are the host's: none to hold

    def kill(self, mode):
        self.daemon.kill()
        self.kills += 1
        self.checked = torture.integrity_check(self.daemon.db, self.scratch)
        return None

    def set_disk_faults(self, write, flush):
        if write or flush:
            with open(self.fault_file, "w") as f:
                f.write("io")
        elif os.path.exists(self.fault_file):
            os.unlink(self.fault_file)

    def counts(self):
        return {"kills": self.kills}

    def tail(self, n=30):
        return self.daemon.tail(n)

    def close(self):
        if self.daemon.proc is not None:
            self.daemon.proc.kill()
            self.daemon.proc.wait()


# ---- the power cuts -----------------------------------------------------------

class Tally:
    """What the run did, for the summary."""

    def __init__(self):
        self.published = 0
        self.early = 0
        self.modes = dict.fromkeys(nb.CUT_MODES, 0)
        self.lost = self.torn = self.kept = 0
        self.at_flush = self.hold_missed = 0
        self.in_backup = 0

    def cut(self, target, mode, hold=0, min_writes=0, wait=0.0, backups=False):
        """Cut the power now, or (hold > 0) at the guest's hold-th flush
        from now with at least min_writes writes in the cache (backups:
        one of them into a backup region), if one comes within wait
        seconds."""
        if hold:
            if target.hold_flush(hold, min_writes, wait, backups):
                self.at_flush += 1
            else:
                self.hold_missed += 1
        r = target.kill(mode)
        if r is not None:
            self.modes[mode] += 1
            self.kept += r[0]
            self.lost += r[1]
            self.torn += r[2]


def cut_mode(rng):
    return rng.choices(list(CUT_WEIGHTS), list(CUT_WEIGHTS.values()))[0]


def boot(target, plumbing):
    """Start, wait for the ready line, check the store (not in plumbing)."""
    target.start()
    target.wait_ready()
    if not plumbing:
        target.integrity()


def answers(endpoint):
    """The broker completes a mutual-TLS MQTT connection."""
    c = endpoint.client()
    try:
        ack = c.connect(client_id="", clean=True, timeout=endpoint.timeout)
        if ack.return_code != 0:
            raise dl.Failure("CONNACK %d" % ack.return_code)
        c.send(rm.disconnect())
    finally:
        c.close()


def run_cuts(target, args, rng):
    state = dl.State()
    tally = Tally()
    ep = target.endpoint
    started = time.monotonic()
    boot(target, args.plumbing)
    if target.name == "kernel":
        if args.plumbing:
            print("disk path: %s" % target.check_disk_path(), flush=True)
        else:
            target.expect_volatile_cache()
    if not args.plumbing:
        dl.setup_session(ep)
    for cycle in range(1, args.cuts + 1):
        if rng.random() < EARLY_CUTS:
            # Cut while the guest boots, opens and checks its store: at a
            # random moment, or at one of its first flushes.
            tally.cut(target, cut_mode(rng))
            target.start()
            if rng.random() < AT_FLUSH:
                tally.cut(target, cut_mode(rng), rng.randint(1, BOOT_HOLD_MAX), 0,
                          target.boot_seconds)
            else:
                time.sleep(rng.uniform(0.0, target.boot_seconds))
                tally.cut(target, cut_mode(rng))
            tally.early += 1
            boot(target, args.plumbing)
        if target.name == "kernel" and not args.plumbing and rng.random() < BACKUP_CUTS:
            # Cut while the guest copies its database into a backup slot:
            # one is due store.backup_interval after the last copy, if
            # anything was committed since (this publish).
            why = publish_durable(target.endpoint, "backup-pub", b"%d" % cycle,
                                  target.endpoint.timeout, 1, "bystander/backup")
            if why:
                raise dl.Failure("durable publish before a backup cut: %s" % why)
            tally.cut(target, cut_mode(rng), rng.randint(1, BACKUP_HOLD_MAX), 0,
                      GUEST_BACKUP_INTERVAL * 3, backups=True)
            tally.in_backup += 1
            boot(target, args.plumbing)
        pub = dl.Publisher(ep, cycle, random.Random(rng.random()), state)
        pub.start()
        if not pub.connected.wait(ep.timeout * 2):
            pub.join(ep.timeout)
            raise dl.Failure("publisher of cycle %d not connected: %r" % (cycle, pub.error))
        time.sleep(rng.uniform(0.02, args.max_load))
        at = rng.random()
        if at < AT_FLUSH / 2:
            tally.cut(target, cut_mode(rng), rng.randint(1, LOAD_HOLD_MAX), 0, HOLD_WAIT)
        elif at < AT_FLUSH:
            tally.cut(target, cut_mode(rng), 1, BIG_SYNC, HOLD_WAIT)
        else:
            tally.cut(target, cut_mode(rng))
        pub.join(timeout=ep.timeout * 2)
        if pub.is_alive():
            raise dl.Failure("publisher did not notice the kill")
        if pub.error is not None:
            raise dl.Failure("publisher: %r" % pub.error)
        tally.published += pub.sent
        boot(target, args.plumbing)
        if args.plumbing:
            answers(ep)
        else:
            slot = cycle % dl.SLOTS
            dl.check_retained(ep, state, [slot] + rng.sample(
                [s for s in range(dl.SLOTS) if s != slot], 2))
            dl.drain_session(ep, state)
            dl.check_queued(state)
        if cycle % 10 == 0 or cycle == args.cuts:
            print("cycle %d: %d published, acknowledged %d retained, %d QoS 1, %d QoS 2; "
                  "%.0f s" % (cycle, tally.published, len(state.acked["r"]),
                              len(state.acked["q1"]), len(state.acked["q2"]),
                              time.monotonic() - started), flush=True)
    if not args.plumbing:
        dl.check_retained(ep, state, range(dl.SLOTS))
    return state, tally, time.monotonic() - started


def summary(target, args, state, tally, seconds):
    c = target.counts()
    cuts = " ".join("%s %d" % kv for kv in tally.modes.items())
    if target.name == "kernel":
        cuts += "; %d at a held flush (%d held flushes never came); %d aimed at a backup copy" % (
            tally.at_flush, tally.hold_missed, tally.in_backup)
    what = ("plumbing only (durability NOT checked)" if args.plumbing else
            "every acknowledged message present after every boot; QoS 2 exactly once; "
            "store integrity ok")
    line = ("powercut (%s, seed %d): %d cycles, %d cuts during boot; %d published, "
            "%d acknowledged; %s" % (target.name, args.seed, args.cuts, tally.early,
                                     tally.published, state.acknowledged(), what))
    if target.name == "kernel":
        line += ("; cuts: %s; backups: %d copies completed, %d cuts during a copy, after "
                 "every cut each slot empty or a whole database (%d complete copies seen); "
                 "tern-disk verify clean after %d cuts; "
                 "telemetry journal read after %d cuts, boot records of all %d boots that "
                 "served present, in order; "
                 "disk: %d writes (%d FUA), %d flushes, at cuts %d writes lost, %d torn, %d "
                 "kept; %d boots; %.0f s"
                 % (cuts, c["backups_done"], c["cuts_in_backup"], c["backups_seen"],
                    c["verified"], c["journal_checks"], c["boots_recorded"],
                    c["writes"], c["fua_writes"], c["flushes"], tally.lost, tally.torn,
                    tally.kept, c["nbd_connections"], seconds))
        if args.smp >= 2:
            line += "; -smp %d: the store ran on CPU 1 (the storage core) in %d boots" % (
                args.smp, c["storage_core_boots"])
    else:
        line += "; %d kills; %.0f s" % (c["kills"], seconds)
    print(line, flush=True)


# ---- the failing disk --------------------------------------------------------

def store_state(operator, want, timeout):
    """Wait until $SYS/broker/store/state (retained, read as an operator)
    is want; Failure with the last value seen otherwise."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        c = operator.client()
        try:
            c.connect(client_id="", clean=True, timeout=operator.timeout)
            c.send(rm.subscribe(1, [("$SYS/broker/store/state", 0)]))
            end = min(deadline, time.monotonic() + 3.0)
            while time.monotonic() < end:
                try:
                    pkt = c.recv_packet(timeout=max(end - time.monotonic(), 0.01))
                except TimeoutError:
                    break
                if pkt.type == rm.PUBLISH:
                    seen = pkt.payload.decode("utf-8", "replace")
                    if seen == want:
                        return
        finally:
            c.close()
    raise dl.Failure("$SYS/broker/store/state is %r, not %r, after %.0f s"
                     % (seen, want, timeout))


def publish_durable(ep, client_id, payload, wait, qos=1, topic="r/fail/1"):
    """A retained publish (a durable record) at QoS 1 or 2: None if
    PUBACK (PUBREC, then PUBCOMP) came within wait seconds, else what
    happened instead."""
    t0 = time.monotonic()
    c = ep.client()
    try:
        c.connect(client_id=client_id, clean=True, timeout=ep.timeout)
        c.send(rm.publish(topic, payload, qos=qos, retain=True, pid=1))
        pkt = c.recv_packet(timeout=wait)
        if pkt.type != (rm.PUBACK if qos == 1 else rm.PUBREC):
            raise dl.Failure("durable QoS %d publish answered %r" % (qos, pkt))
        if qos == 2:
            c.send(rm.pubrel(1))
            c.expect(rm.PUBCOMP, timeout=ep.timeout)
        return None
    except TimeoutError:
        return "no %s within %.0f s" % ("PUBACK" if qos == 1 else "PUBREC", wait)
    except rm.Closed:
        return "closed without %s after %.1f s" % ("PUBACK" if qos == 1 else "PUBREC",
                                                   time.monotonic() - t0)
    except OSError as e:
        return "%r after %.1f s" % (e, time.monotonic() - t0)
    finally:
        c.close()


def bystander_served(ep):
    """A clean client's QoS 1 message to a clean subscriber records
    nothing: acknowledged and delivered at once, also while commits fail."""
    sub, pub = ep.client(), ep.client()
    try:
        sub.connect(client_id="", clean=True, timeout=ep.timeout)
        sub.subscribe([(BYSTANDER, 1)], timeout=ep.timeout)
        pub.connect(client_id="", clean=True, timeout=ep.timeout)
        pub.send(rm.publish("bystander/x", b"served", qos=1, pid=9))
        if pub.expect(rm.PUBACK, timeout=ep.timeout).pid != 9:
            raise dl.Failure("bystander: PUBACK for another packet id")
        got = sub.expect(rm.PUBLISH, timeout=ep.timeout)
        if got.payload != b"served":
            raise dl.Failure("bystander got %r" % got.payload)
        if got.qos:
            sub.send(rm.puback(got.pid))
    finally:
        sub.close()
        pub.close()


# The failing disk's phases: which requests fail, and the power cut after
# the disk works again (lose-all: what the acknowledgement promised must be
# flushed; random and keep-all: what the failed batches left in the cache
# must not damage anything).
FAULT_PHASES = (("writes and flushes", True, True, "lose-all"),
                ("flushes only", False, True, "random"),
                ("writes only", True, False, "keep-all"))


def withheld_while_failing(target, args, what, phase):
    """With the disk failing: neither a QoS 1 nor a QoS 2 durable publish
    is acknowledged, $SYS says failing, a bystander is served. What
    happened to the publishes."""
    ep, op = target.endpoint, target.operator
    why = []
    for qos, topic in ((1, "r/fail/1"), (2, "r/fail/2")):
        w = publish_durable(ep, "fail-pub", b"during-%d" % phase, args.fail_seconds, qos, topic)
        if not w:
            raise dl.Failure("%s failing: %s for a durable QoS %d publish"
                             % (what, "PUBACK" if qos == 1 else "PUBREC", qos))
        why.append("QoS %d %s" % (qos, w))
    store_state(op, "failing", 30)
    bystander_served(ep)
    return ", ".join(why)


def acknowledged_again(target, payload):
    """Once the disk works: both durable publishes acknowledged within a
    minute, and $SYS says ok."""
    ep = target.endpoint
    deadline = time.monotonic() + 60
    for qos, topic in ((1, "r/fail/1"), (2, "r/fail/2")):
        while publish_durable(ep, "fail-pub", payload, ep.timeout, qos, topic):
            if time.monotonic() > deadline:
                raise dl.Failure("no acknowledgement within 60 s of the disk working again")
    store_state(target.operator, "ok", 30)


def holds(target, want, when):
    got = dl.read_retained(target.endpoint, ["r/fail/#"])
    for topic in ("r/fail/1", "r/fail/2"):
        if got.get(topic) != want:
            raise dl.Failure("%s %s holds %r, not %r" % (when, topic, got.get(topic), want))


def run_failing_disk(target, args):
    """The failing-disk scenario: each of FAULT_PHASES, then a power cut
    while the disk fails. Prints what happened."""
    started = time.monotonic()
    ep, op = target.endpoint, target.operator
    boot(target, args.plumbing)
    for qos, topic in ((1, "r/fail/1"), (2, "r/fail/2")):
        why = publish_durable(ep, "fail-pub", b"before", ep.timeout, qos, topic)
        if why:
            raise dl.Failure("durable QoS %d publish on a healthy disk: %s" % (qos, why))
    store_state(op, "ok", 30)   # published after the first commit's report
    last = b"before"
    for phase, (what, write, flush, cut) in enumerate(FAULT_PHASES, 1):
        target.set_disk_faults(write=write, flush=flush)
        withheld = withheld_while_failing(target, args, what, phase)
        target.set_disk_faults(write=False, flush=False)
        last = b"after-%d" % phase
        acknowledged_again(target, last)
        target.kill(cut)
        boot(target, args.plumbing)
        holds(target, last, "after the disk failed %s, recovered, and a %s power cut"
              % (what, cut))
        print("failing disk (%s), %s failing: durable publishes withheld (%s); store state "
              "failing; a bystander served; acknowledged and state ok once the disk worked; "
              "both survived a %s power cut"
              % (target.name, what, withheld, cut), flush=True)
    # The power goes while the disk still fails: the last acknowledged
    # values come back, the store intact.
    target.set_disk_faults(write=True, flush=True)
    withheld_while_failing(target, args, "writes and flushes", len(FAULT_PHASES) + 1)
    target.kill("random")
    target.set_disk_faults(write=False, flush=False)
    boot(target, args.plumbing)
    holds(target, last, "after a power cut while the disk failed")
    acknowledged_again(target, b"final")
    print("failing disk (%s): a random power cut while it failed kept the acknowledged "
          "values; the store then works; %.0f s" % (target.name, time.monotonic() - started),
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--cuts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--target", choices=("kernel", "daemon"), default="kernel")
    ap.add_argument("--bin", default=None, help="the daemon (--target daemon; default "
                    "BUILD/rel/ternd)")
    ap.add_argument("--bus", choices=("virtio-blk", "virtio-scsi", "alternate"),
                    default="virtio-blk")
    ap.add_argument("--physical-block", type=int, default=4096)
    ap.add_argument("--smp", type=int, default=1,
                    help="the guest's CPUs (kernel target; issue 18: CPU 1 is the storage core's)")
    # 256 MiB: a 79 MiB database region. The load's retained topics reach
    # about 100,000 (16 MB of database) in 200 cycles, which a 64 MiB
    # disk's 17 MiB region barely holds.
    ap.add_argument("--disk-mib", type=int, default=256)
    ap.add_argument("--disk-template", help="the disk's first contents (default: zeroes)")
    ap.add_argument("--max-load", type=float, default=1.5,
                    help="longest load before a cut, seconds (at least 0.02)")
    ap.add_argument("--failing-disk", action="store_true", help="the failing-disk scenario")
    ap.add_argument("--fail-seconds", type=float, default=5.0,
                    help="how long a durable publish waits in vain on the failing disk")
    ap.add_argument("--plumbing", action="store_true",
                    help="a zeroed disk, so the guest stores nothing: boots, load, cuts; no "
                    "durability checks")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    args.bin = args.bin or os.path.join(args.build, "rel", "ternd")

    rng = random.Random(args.seed)
    # A SIGTERM (make interrupted, a CI timeout) unwinds like an error, so
    # the finally below still stops QEMU.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = tempfile.mkdtemp(prefix="tern-powercut-")
    ok = False
    target = None
    try:
        target = (KernelTarget if args.target == "kernel" else DaemonTarget)(args, workdir, rng)
        if args.failing_disk:
            run_failing_disk(target, args)
        else:
            summary(target, args, *run_cuts(target, args, rng))
        ok = True
    except (dl.Failure, harness.Failure, OSError, AssertionError) as e:
        # OSError: also a socket timeout; AssertionError: rawmqtt's expect().
        print("powercut FAILED (%s, seed %d): %r" % (args.target, args.seed, e))
        if target is not None:
            print("--- %s output ends ---\n%s" % (target.name, target.tail()))
    finally:
        if target is not None:
            try:
                target.close()   # never leave a QEMU running
            except dl.Failure as e:
                print("powercut FAILED at the end: %s" % e)
                ok = False
    return dl.finish(workdir, ok, args.keep)


if __name__ == "__main__":
    sys.exit(main())
