"""The broker's durable store on the machine's own disk (issue 13), through
the production path: the production kernel serving mutual TLS from a boot
bundle (the dev PKI), its disk an image made by tern-mkdisk or a copy of
the disk image (make image), driven by unmodified clients (mosquitto_pub,
mosquitto_sub) and, for exact QoS 2 flows, the raw TLS client.

- Survival, with a virtio-blk and with a virtio-scsi disk: a retained
  message and a persistent session's queued QoS 1 and QoS 2 messages,
  published while the subscriber is offline, survive a clean stop (QMP
  quit) and a SIGKILL of QEMU right after the last PUBCOMP. Across the
  kill, QoS 2 stays exactly once both ways: a message whose PUBREL the
  subscriber had is released again by PUBREL (never resent as PUBLISH),
  and a publisher's QoS 2 id acknowledged by PUBREC is still known (its
  resent PUBLISH is not delivered twice). The subscriber gets each message
  once, and nothing again after one more reboot, whose database passes
  SQLite's integrity_check (the test kernel). An 800 kB retained message
  and 500 queued messages survive a kill byte for byte and in order.
- The disk image itself (GRUB on its ESP, tern.mode=disk) under SeaBIOS
  with virtio-blk and under OVMF with virtio-scsi: the first boot formats
  the data partition, a retained message survives a reboot.
- Refusals halt with the reason on the console and leave every byte of
  the image as it was: a newer layout, both superblocks corrupt, foreign
  data in the tern partition, a device without flush (test kernel,
  tern.test.blk=noflush), store.disk naming a disk that is not there
  (FILE:LINE), two disks with a tern partition and store.disk = auto.
  One corrupt superblock is not a refusal: the other is used, the console
  says so, and the data is all there. A disk named by its PCI address is
  used and the other disk left alone.
- Backups: a database whose first page is destroyed is replaced by the
  backup at the next boot, said on the console and in $SYS.
- The storage core (ADR-064): the virtio-blk survival run again with
  -smp 2, every boot's log saying CPU 1 runs the store's two threads and
  owns the disks.
"""
import os
import re
import subprocess
import time

from clients import mosq, next_packet, raw_tls, rm
from harness import (MTLS_CONF, OVMF, READY, Failure, Pki, Qmp, Vm, drive, expect_lines,
                     free_port, make_bundle, patch, qmp_quit, reseal, scratch, sha, show)

MIB = 1 << 20
SLOT_B = 512 << 10  # superblock slot B's offset in the partition (docs/DISK.md)
STORE_HALT = rb"tern: store: refusing to serve without the configured durable store; halted"
CONFIG_HALT = rb"tern: config refused: not serving; halted"
# CPU 1's line once the store's threads and the disks are its (ADR-064).
STORAGE_CORE = re.compile(rb"tern: smp: CPU 1: storage core running: 2 storage thread\(s\), "
                          rb"the disks and their interrupts here")
QUIET_S = 3  # a session with nothing (more) to receive: no packet for this long

BLK_512_4K = ("virtio-blk", "physical_block_size=4096", 512)
SCSI_4K = ("virtio-scsi", "logical_block_size=4096,physical_block_size=4096", 4096)
DISK_NAME = {"virtio-blk": rb"virtio-blk [0-9a-f]{2}:[0-9a-f]{2}\.\d",
             "virtio-scsi": rb"virtio-scsi [0-9a-f]{2}:[0-9a-f]{2}\.\d 0:0"}


def mkdisk(build, tmp, size="64M", logical=512, name="disk.img"):
    """A sparse raw disk with a blank tern data partition and no ESP
    (tern-mkdisk); its path and the partition's first byte."""
    img = os.path.join(tmp, name)
    tool = os.path.join(build.dir, "rel", "tern-mkdisk")
    args = [tool, "--size", size, "--esp", "0", "--logical-block", str(logical), img]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise Failure(f"{' '.join(args)}: {r.stdout}{r.stderr}")
    r = subprocess.run([tool, "--show", "--logical-block", str(logical), img],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"tern-data\s+LBA (\d+)\.\.", r.stdout)
    if not m:
        raise Failure(f"tern-mkdisk --show: no tern data partition:\n{r.stdout}{r.stderr}")
    return img, int(m.group(1)) * logical


class DiskBroker:
    """One machine booted again and again: the production kernel (or the
    test kernel) with a boot bundle of conf, the QEMU arguments of its
    disks, the same host port forwarded to the guest's 8883 at every boot,
    and a QMP socket per boot."""

    def __init__(self, build, tmp, disks, conf=MTLS_CONF, smp=1):
        self.build, self.tmp, self.disks = build, tmp, list(disks)
        self.smp = smp
        self.bundle = make_bundle(build.dir, tmp, conf)
        self.port = free_port()
        self.pki = Pki(build.dir)
        self.tls = self.pki.args("dev-client")
        self.ctx = self.pki.context("dev-client")
        self.boots = 0
        self.qmp = None

    def boot(self, kernel=None, append=None, firmware=None):
        """A new QEMU on the same disks: -kernel (the production kernel
        unless kernel names another) with the bundle, or with firmware
        (QEMU arguments, () for SeaBIOS) from the disk through its GRUB."""
        self.boots += 1
        self.qmp = os.path.join(self.tmp, f"qmp-{self.boots}")
        args = ["-nic", f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{self.port}-:8883",
                "-device", "virtio-rng-pci", "-qmp", f"unix:{self.qmp},server=on,wait=off"]
        args += self.disks + ["-smp", str(self.smp)]
        if firmware is not None:
            return Vm(list(firmware) + args)
        return Vm(["-kernel", kernel or self.build.elf, "-initrd", self.bundle] +
                  (["-append", append] if append else []) + args)

    def ready(self, vm, timeout=90):
        """The boot's serial output once ready, with the store's lines."""
        _, out = vm.wait_ready(timeout)
        vm.expect_no_fatal()
        if self.smp >= 2:
            # CPU 1 says so itself, a moment after the hand-over (ADR-064).
            if vm.wait_for(lambda o: STORAGE_CORE.search(o) is not None, timeout) is None:
                raise Failure(f"-smp {self.smp}: the store did not move to CPU 1:\n"
                              + show(vm.text()[-2000:]))
            out = vm.text()
        return out

    def quit(self, vm):
        """The clean stop: QMP quit (QEMU flushes the disk and exits)."""
        qmp_quit(vm, self.qmp)

    def pub(self, topic, payload, qos, retain=False):
        """mosquitto_pub: returns once the PUBACK (QoS 1) or the PUBCOMP
        (QoS 2) arrived, that is once the broker committed the message."""
        args = ["-t", topic, "-m", payload, "-q", str(qos)] + (["-r"] if retain else [])
        mosq("mosquitto_pub", self.port, *args, tls=self.tls)

    def retained(self, filt, n):
        """The n retained messages matching filt (mosquitto_sub), as
        {topic: payload}; every one must carry the retain flag."""
        out = mosq("mosquitto_sub", self.port, "-t", filt, "-C", str(n), "-W", "30",
                   "-F", "%r %t %p", tls=self.tls, check=False).stdout.decode()
        got = {}
        for line in out.splitlines():
            flag, topic, payload = line.split(" ", 2)
            if flag != "1":
                raise Failure(f"{topic} arrived without the retain flag")
            got[topic] = payload
        return got

    def expect_retained(self, filt, want):
        got = self.retained(filt, len(want))
        if got != want:
            raise Failure(f"retained under {filt}: {got}, expected {want}")

    def raw(self, client_id, clean=True):
        return raw_tls(self.port, self.ctx, client_id, clean)


def drain(c, who, publishes=0, releases=0, timeout=60):
    """The packets the broker sends raw client c, answered as a subscriber
    answers (PUBACK for QoS 1, PUBREC for QoS 2, PUBCOMP for each PUBREL):
    until publishes PUBLISHes and releases resent PUBRELs (ids this
    connection sent no PUBREC for: releases from before a reboot) have
    arrived and every QoS 2 flow is complete, then for QUIET_S more to
    catch anything extra. Returns the PUBLISHes as (topic, payload, qos)
    in arrival order and the resent PUBRELs' ids."""
    got, resent, recd = [], [], set()
    deadline = time.monotonic() + timeout
    while True:
        done = len(got) >= publishes and len(resent) >= releases and not recd
        try:
            pkt = c.recv_packet(QUIET_S if done else deadline - time.monotonic())
        except TimeoutError:
            if done:
                return got, resent
            raise Failure(f"{who}: {timeout} s and only {got}, PUBRELs {resent} resent, "
                          f"no PUBREL yet for {sorted(recd)}")
        except (rm.Closed, OSError) as e:
            raise Failure(f"{who}: {e!r} after {got}")
        if pkt.type == rm.PUBLISH:
            got.append((pkt.topic, pkt.payload.decode(), pkt.qos))
            if pkt.qos == 1:
                c.send(rm.puback(pkt.pid))
            elif pkt.qos == 2:
                recd.add(pkt.pid)
                c.send(rm.pubrec(pkt.pid))
        elif pkt.type == rm.PUBREL:
            if pkt.pid not in recd:
                resent.append(pkt.pid)
            recd.discard(pkt.pid)
            c.send(rm.pubcomp(pkt.pid))
        else:
            raise Failure(f"{who}: unexpected {pkt!r}")


def barrier(c, who):
    """A SUBSCRIBE of c's persistent session: its SUBACK leaves only after
    the commit of the new subscription and so of everything this session
    recorded before it (the acknowledgements drain() sent)."""
    ack = next_packet(c, rm.SUBACK, f"{who}: SUBACK", 30,
                      rm.subscribe(99, [("test/barrier", 1)]))
    if ack.pid != 99 or ack.granted != [1]:
        raise Failure(f"{who}: SUBACK {ack!r}")


def store_lines(out, kind, *wants):
    """Fail unless each pattern is on one of the store's console lines
    (DISK is the disk's name)."""
    expect_lines(out, [w.replace(b"DISK", DISK_NAME[kind]) for w in wants])


def expect_reopened(out, kind, part, *wants, sb=rb"generation 2 \(superblock B\)"):
    """A boot that found its store on partition #part of the disk (of
    kind) as it was left, without formatting, the database checked; and
    each of wants."""
    store_lines(out, kind, rb"tern: store: DISK: partition #%d, layout v3 %s; database"
                % (part, sb), rb"tern: store: database found: quick_check ok, schema 2", *wants)
    if b"formatted" in out:
        raise Failure("formatted again:\n" + show(out))


def loaded(sessions, subs, messages, queued, qos2_ids, retained, wills=0):
    """The store's line with what it restored at boot."""
    return (rb"tern: store: info: store: loaded %d session\(s\), %d subscription\(s\), "
            rb"%d message\(s\), %d queue entries, %d inbound QoS 2 id\(s\), %d will\(s\), "
            rb"%d retained message\(s\)"
            % (sessions, subs, messages, queued, qos2_ids, wills, retained))


# ---- retained messages and queued QoS 1/2 across a quit and a kill -------

def survival_test(build, disk, smp=1):
    """Four boots of one machine on one disk (kind, device options,
    logical block size): see the module's docstring. With smp 2 the store
    runs on CPU 1 at every boot (ADR-064), which each boot's log must say."""
    kind, opts, logical = disk

    def check():
        notes = []
        with scratch() as tmp:
            img, _ = mkdisk(build, tmp, "256M", logical)
            db = DiskBroker(build, tmp, drive(img, "d0", kind, opts), smp=smp)
            vm = db.boot()
            try:
                boot_offline(db, vm, kind, notes)
                vm = db.boot()
                held = boot_release_then_kill(db, vm, kind, notes)
                vm = db.boot()
                boot_after_kill(db, vm, kind, held, notes)
                # The test kernel: the same broker, plus SQLite's integrity_check.
                vm = db.boot(build.test_elf, "tern.test.integrity=1")
                boot_nothing_twice(db, vm, kind, notes)
            except OSError as e:
                raise Failure(f"{e!r} at boot {db.boots} after: {'; '.join(notes)}; serial "
                              f"output ends:\n" + show(vm.text()[-3000:]))
            finally:
                vm.stop()
        return "; ".join(notes)
    return check


def boot_offline(db, vm, kind, notes):
    """Boot 1 formats the disk; the keeper's persistent session
    (mosquitto_sub -c) goes offline, then a retained message and a QoS 1
    and a QoS 2 message for it are published; QMP quit."""
    with vm:
        out = db.ready(vm)
        store_lines(out, kind,
                    rb"tern: store: DISK: formatted the blank tern partition #1 ",
                    rb"tern: store: DISK: partition #1, layout v3 generation 2 \(superblock "
                    rb"B\), formatted now",
                    rb"tern: store: database created: quick_check ok, schema 2",
                    loaded(0, 0, 0, 0, 0, 0))
        mosq("mosquitto_sub", db.port, "-c", "-i", "keeper", "-q", "2", "-t", "test/q/#",
             "-E", tls=db.tls)
        db.pub("test/ret/1", "r1", 1, retain=True)
        db.pub("test/q/1", "one-qos1", 1)
        db.pub("test/q/2", "one-qos2", 2)
        db.quit(vm)
    notes.append("formatted at the first boot")


def boot_release_then_kill(db, vm, kind, notes):
    """Boot 2: after the quit, everything is there; the keeper takes its two
    messages. Then, with QEMU killed right after the last PUBCOMP: the
    keeper holds a QoS 2 message at PUBREL (PUBREC sent, no PUBCOMP), a
    persistent publisher holds a QoS 2 id at PUBREC (no PUBREL), and a
    second retained message and a QoS 1 and a QoS 2 message wait for the
    offline keeper."""
    with vm:
        expect_reopened(db.ready(vm), kind, 1, loaded(1, 1, 2, 2, 0, 1))
        db.expect_retained("test/ret/#", {"test/ret/1": "r1"})
        keeper, present = db.raw("keeper", clean=False)
        if not present:
            raise Failure("keeper: the session is not present after the quit")
        want = [("test/q/1", "one-qos1", 1), ("test/q/2", "one-qos2", 2)]
        got, resent = drain(keeper, "keeper", len(want))
        if got != want or resent:
            raise Failure(f"keeper after the quit: {got}, resent PUBRELs {resent}; "
                          f"expected {want}")
        notes.append("quit: retained, QoS 1 and QoS 2 delivered once")

        # The keeper's QoS 2 message stopped at PUBREL.
        db.pub("test/q/5", "held-at-pubrel", 2)
        p = next_packet(keeper, rm.PUBLISH, "keeper: test/q/5")
        if (p.topic, p.payload, p.qos) != ("test/q/5", b"held-at-pubrel", 2):
            raise Failure(f"keeper: {p!r}")
        next_packet(keeper, rm.PUBREL, "keeper: PUBREL for test/q/5", 30, rm.pubrec(p.pid))
        keeper.abort()
        notes.append(f"keeper held id {p.pid} at PUBREL")

        # A persistent publisher's QoS 2 id stopped at PUBREC.
        sender, _ = db.raw("sender", clean=False)
        next_packet(sender, rm.PUBREC, "sender: PUBREC 7", 30,
                    rm.publish("test/q/6", b"held-at-pubrec", qos=2, pid=7))
        sender.abort()

        db.pub("test/ret/2", "r2", 1, retain=True)
        db.pub("test/q/3", "two-qos1", 1)
        db.pub("test/q/4", "two-qos2", 2)
        vm.stop()  # SIGKILL, right after the PUBCOMP
    return p.pid


def boot_after_kill(db, vm, kind, held, notes):
    """Boot 3: after the kill, both retained messages are there; the
    sender's resent PUBLISH (DUP) of id 7 is acknowledged but not delivered
    again; the keeper gets the PUBREL of its held message (not the
    message) and the three queued messages, each once."""
    with vm:
        expect_reopened(db.ready(vm), kind, 1, loaded(2, 1, 3, 4, 1, 2))
        db.expect_retained("test/ret/#", {"test/ret/1": "r1", "test/ret/2": "r2"})

        sender, present = db.raw("sender", clean=False)
        if not present:
            raise Failure("sender: the session is not present after the kill")
        rec = next_packet(sender, rm.PUBREC, "sender: PUBREC for the resent id 7", 30,
                          rm.publish("test/q/6", b"held-at-pubrec", qos=2, pid=7, dup=True))
        comp = next_packet(sender, rm.PUBCOMP, "sender: PUBCOMP 7", 30, rm.pubrel(7))
        if rec.pid != 7 or comp.pid != 7:
            raise Failure(f"sender: {rec!r} {comp!r}")
        barrier(sender, "sender")
        sender.send(rm.disconnect())
        sender.close()

        keeper, present = db.raw("keeper", clean=False)
        if not present:
            raise Failure("keeper: the session is not present after the kill")
        want = [("test/q/6", "held-at-pubrec", 2), ("test/q/3", "two-qos1", 1),
                ("test/q/4", "two-qos2", 2)]
        got, resent = drain(keeper, "keeper", len(want), 1)
        if sorted(got) != sorted(want) or resent != [held]:
            raise Failure(f"keeper after the kill: {got}, resent PUBRELs {resent}; expected "
                          f"{want} (any order) and PUBREL {held}")
        barrier(keeper, "keeper")
        keeper.send(rm.disconnect())
        keeper.close()
        notes.append(f"kill: retained, QoS 1, QoS 2 once each, PUBREL {held} resent, "
                     f"a resent PUBLISH of a known id not delivered twice")
        db.quit(vm)


def boot_nothing_twice(db, vm, kind, notes):
    """Boot 4 (the test kernel): the database passes integrity_check,
    nothing is delivered again, the store's $SYS state is ok."""
    with vm:
        expect_reopened(db.ready(vm), kind, 1, loaded(2, 3, 0, 0, 0, 2),
                        rb"tern: store: integrity_check ok")
        keeper, present = db.raw("keeper", clean=False)
        got, resent = drain(keeper, "keeper")
        if not present or got or resent:
            raise Failure(f"keeper at the fourth boot: session present {present}, got {got}, "
                          f"resent PUBRELs {resent}")
        keeper.close()
        db.expect_retained("test/ret/#", {"test/ret/1": "r1", "test/ret/2": "r2"})
        state = mosq("mosquitto_sub", db.port, "-t", "$SYS/broker/store/state", "-C", "1",
                     "-W", "20", tls=db.pki.args("dev-operator")).strip()
        if state != "ok":
            raise Failure(f"$SYS/broker/store/state: {state!r}")
        notes.append("nothing twice after another reboot; integrity_check ok; $SYS store "
                     "state ok")


def volume_test(build, disk):
    """An 800 kB retained message (a transaction over many pages) and 500
    QoS 1 messages queued for an offline session (mosquitto_pub -l, one
    connection) survive a SIGKILL right after the last PUBACK, byte for
    byte and in order."""
    kind, opts, logical = disk

    def check():
        with scratch() as tmp:
            img, _ = mkdisk(build, tmp, "256M", logical)
            db = DiskBroker(build, tmp, drive(img, "d0", kind, opts))
            big = os.path.join(tmp, "big")
            payload = "".join(f"{i:07d}," for i in range(100000))
            with open(big, "w") as f:
                f.write(payload)
            lines = [f"queued {i}" for i in range(500)]
            with db.boot() as vm:
                db.ready(vm)
                mosq("mosquitto_sub", db.port, "-c", "-i", "bulk", "-q", "1", "-t", "test/q/#",
                     "-E", tls=db.tls)
                mosq("mosquitto_pub", db.port, "-t", "test/big", "-f", big, "-q", "1", "-r",
                     tls=db.tls, timeout=120)
                r = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(db.port)] +
                                   db.tls + ["-t", "test/q/bulk", "-q", "1", "-l"],
                                   input="".join(l + "\n" for l in lines).encode(),
                                   capture_output=True, timeout=300)
                if r.returncode != 0:
                    raise Failure(f"mosquitto_pub -l: exit {r.returncode}: {show(r.stderr)}")
                vm.stop()
            with db.boot() as vm:
                expect_reopened(db.ready(vm), kind, 1, loaded(1, 1, 500, 500, 0, 1))
                got = mosq("mosquitto_sub", db.port, "-t", "test/big", "-C", "1", "-W", "60",
                           tls=db.tls, timeout=90).rstrip("\n")
                if got != payload:
                    raise Failure(f"the 800 kB retained message came back altered "
                                  f"({len(got)} characters)")
                got = mosq("mosquitto_sub", db.port, "-c", "-i", "bulk", "-q", "1", "-t",
                           "test/q/#", "-C", "500", "-W", "60", tls=db.tls,
                           timeout=90).splitlines()
                if got != lines:
                    missing = sorted(set(lines) - set(got), key=lines.index)
                    raise Failure(f"{len(got)} queued messages after the kill, not the 500 in "
                                  f"order; missing {missing[:5]}, first lines {got[:3]}")
        return "800 kB retained and 500 queued QoS 1 messages back after a kill, in order"
    return check


# ---- the disk image: GRUB on its own disk, tern.mode=disk ----------------

def image_test(build, firmware, kind, timeout):
    """A copy of build/tern-disk.img as the machine's only disk, booted by
    the firmware through GRUB; the first boot formats the data partition
    (#3, after the BIOS boot partition and the ESP), a retained message
    published then is there after a reboot (QMP system_reset)."""
    def check():
        with scratch() as tmp:
            img = os.path.join(tmp, "tern-disk.img")
            subprocess.run(["cp", "--sparse=always", os.path.join(build.dir, "tern-disk.img"),
                            img], check=True, timeout=60)
            db = DiskBroker(build, tmp, drive(img, "d0", kind, "bootindex=0"))
            with db.boot(firmware=firmware) as vm:
                took, out = vm.wait_ready(timeout)
                expect_lines(out, (rb"tern: ready \(boot multiboot2\)",))
                store_lines(out, kind,
                            rb"tern: store: DISK: formatted the blank tern partition #3 ",
                            rb"tern: store: DISK: partition #3, layout v3 generation 2 "
                            rb"\(superblock B\), formatted now",
                            rb"tern: store: database created: quick_check ok")
                db.pub("test/image", f"kept on {kind}", 1, retain=True)
                q = Qmp(db.qmp)
                q.cmd("system_reset")
                q.close()
                if vm.wait_for(lambda o: len(READY.findall(o)) >= 2, timeout * 2) is None:
                    raise Failure("no second ready line after the reset:\n" +
                                  show(vm.text()[-3000:]))
                expect_reopened(vm.text()[len(out):], kind, 3, loaded(0, 0, 0, 0, 0, 1))
                db.expect_retained("test/image", {"test/image": f"kept on {kind}"})
                vm.expect_no_fatal()
        return f"first boot {took:.1f} s, formatted; retained message there after a reset"
    return check


# ---- refusals and the one-corrupt-superblock case -----------------------

def refused(db, imgs, wants, halt=STORE_HALT, kernel=None, append=None):
    """A boot that must halt before serving, with each of wants on the
    console and every byte of the image (or list of images) imgs
    unchanged; the serial output."""
    imgs = [imgs] if isinstance(imgs, str) else imgs
    before = [sha(i) for i in imgs]
    with db.boot(kernel, append) as vm:
        took = vm.wait_for(lambda o: re.search(halt, o) is not None, 60)
        vm.stop()
        out = vm.text()
    if took is None or READY.search(out):
        raise Failure(f"no halt ({halt!r}):\n{show(out)}")
    expect_lines(out, wants)
    if [sha(i) for i in imgs] != before:
        raise Failure(f"an image changed on a refusal ({wants[0]!r})")
    return out


def formatted_disk(build, tmp):
    """A 64 MiB disk formatted by a first boot that stored a retained
    message; the broker (on virtio-blk), the image and the partition's
    first byte."""
    img, part = mkdisk(build, tmp)
    db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"))
    with db.boot() as vm:
        store_lines(db.ready(vm), "virtio-blk",
                    rb"tern: store: DISK: partition #1, layout v3 generation 2 \(superblock "
                    rb"B\), formatted now")
        db.pub("test/ret", "before", 1, retain=True)
        db.quit(vm)
    return db, img, part


def one_corrupt_superblock_test(build):
    """The newer superblock (B) corrupted: the older one (A, generation 1,
    the same regions) is used, the console says why, the data is there."""
    def check():
        with scratch() as tmp:
            db, img, part = formatted_disk(build, tmp)
            patch(img, part + SLOT_B + 30, b"\xff")  # B's generation, CRC not updated
            with db.boot() as vm:
                expect_reopened(db.ready(vm), "virtio-blk", 1,
                                rb"tern: store: DISK: superblock B is unusable \(CRC32 "
                                rb"mismatch[^\n]*\); using superblock A \(generation 1\)",
                                loaded(0, 0, 0, 0, 0, 1), sb=rb"generation 1 \(superblock A\)")
                db.expect_retained("test/ret", {"test/ret": "before"})
                db.pub("test/ret", "after", 1, retain=True)
                vm.stop()
            with db.boot() as vm:
                db.ready(vm)
                db.expect_retained("test/ret", {"test/ret": "after"})
        return "superblock A used, said on the console, data kept and written"
    return check


def superblock_refusals_test(build):
    """Both superblocks corrupt; then (both restored) slot B of a newer
    layout version with a good CRC."""
    def check():
        with scratch() as tmp:
            db, img, part = formatted_disk(build, tmp)
            with open(img, "rb") as f:
                f.seek(part)
                slots = f.read(SLOT_B + 4096)
            patch(img, part + 30, b"\xff")
            patch(img, part + SLOT_B + 30, b"\xff")
            refused(db, img, [rb"tern: store: virtio-blk [^\n]*: no usable superblock: A: "
                              rb"CRC32 mismatch [^\n]*; B: CRC32 mismatch "])
            patch(img, part, slots)
            patch(img, part + SLOT_B + 8, (4).to_bytes(4, "little"))
            reseal(img, part + SLOT_B)
            refused(db, img, [rb"tern: store: virtio-blk [^\n]*: superblock B: layout version "
                              rb"4 is newer than this release's 3: a newer tern is needed"])
        return "both corrupt and newer: halted, image unchanged"
    return check


def foreign_test(build):
    """A file system's superblock over the start of the partition, and
    foreign bytes between the slots of an otherwise blank partition."""
    def check():
        with scratch() as tmp:
            img, part = mkdisk(build, tmp)
            db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"))
            patch(img, part + 1024 + 0x38, b"\x53\xef")  # an ext4 superblock's magic
            refused(db, img, [rb"tern: store: virtio-blk [^\n]*: the tern partition starts "
                              rb"with foreign data"])
            patch(img, part + 1024 + 0x38, b"\0\0")
            patch(img, part + 300000, b"\x01")
            refused(db, img, [rb"tern: store: virtio-blk [^\n]*: the tern partition has no "
                              rb"superblock but holds data at byte 300000 \(foreign\)"])
        return "both halted, image unchanged"
    return check


def noflush_test(build):
    """The test kernel hiding the devices' flush: a disk with a volatile
    write cache and no flush is refused for durable storage, on virtio-blk
    and on virtio-scsi."""
    def check():
        for kind in ("virtio-blk", "virtio-scsi"):
            with scratch() as tmp:
                img, _ = mkdisk(build, tmp)
                db = DiskBroker(build, tmp, drive(img, "d0", kind))
                refused(db, img, [rb"tern: store: " + DISK_NAME[kind] + rb": volatile write "
                                  rb"cache without flush"],
                        kernel=build.test_elf, append="tern.test.blk=noflush")
        return "virtio-blk and virtio-scsi halted, images unchanged"
    return check


def missing_disk_test(build):
    """store.disk naming a kind of disk and a PCI address that the machine
    does not have (it has a virtio-blk disk with a tern partition)."""
    def check():
        for value in ("virtio-scsi", "00:09.0"):
            with scratch() as tmp:
                conf = MTLS_CONF + f"store.disk = {value}\n"
                line = conf.splitlines().index(f"store.disk = {value}") + 1
                img, _ = mkdisk(build, tmp)
                db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"), conf)
                refused(db, img, [rb"tern: config: tern\.conf:%d: store\.disk: no such disk"
                                  % line], halt=CONFIG_HALT)
        return "both halted with FILE:LINE, image unchanged"
    return check


def region(build, img, name):
    """(first byte, bytes) of a region of img's tern partition, as
    tern-mkdisk --show reads the superblock."""
    out = subprocess.run([os.path.join(build.dir, "rel", "tern-mkdisk"), "--show", img],
                         capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"^  %s\s+LBA (\d+), (\d+) blocks" % name, out, re.M)
    if not m:
        raise Failure(f"no {name} region in tern-mkdisk --show:\n{out}")
    return int(m.group(1)) * 512, int(m.group(2)) * 512


def backup_restore_test(build):
    """Backups every second: after one is complete, the database's first
    page is overwritten (SQLite's header, after the region's two header
    blocks: docs/DISK.md); the next boot's quick_check fails, the backup
    replaces the database, the console and $SYS say so, and the store
    works on (a new retained message survives another boot)."""
    def check():
        with scratch() as tmp:
            img, _ = mkdisk(build, tmp)
            db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"),
                            MTLS_CONF + "store.backup_interval = 1\n")
            operator = db.pki.args("dev-operator")
            with db.boot() as vm:
                db.ready(vm)
                db.pub("test/ret/1", "backed up", 1, retain=True)
                done = rb"tern: store: info: store: backup 1 to /tern.db.bak-a complete"
                if vm.wait_for(lambda o: re.search(done, o) is not None, 60) is None:
                    raise Failure("no backup:\n" + show(vm.text()))
                db.quit(vm)
            start, _ = region(build, img, "database")
            data = start + 2 * 512  # physical blocks of 512 bytes here
            with open(img, "rb") as f:
                f.seek(data)
                if f.read(16) != b"SQLite format 3\0":
                    raise Failure("no SQLite header where docs/DISK.md puts the database")
            patch(img, data, b"\xa5" * 512)
            with db.boot() as vm:
                store_lines(db.ready(vm), "virtio-blk",
                            rb"tern: store: error: store: /tern.db is damaged; restoring backup "
                            rb"1 from /tern.db.bak-a",
                            rb"tern: store: database found: quick_check failed; replaced by "
                            rb"backup a, schema 2")
                db.expect_retained("test/ret/#", {"test/ret/1": "backed up"})
                said = mosq("mosquitto_sub", db.port, "-t",
                            "$SYS/broker/store/restored_from_backup", "-C", "1", "-W", "20",
                            tls=operator).strip()
                if said != "yes":
                    raise Failure(f"$SYS/broker/store/restored_from_backup: {said!r}")
                db.pub("test/ret/2", "after the restore", 1, retain=True)
                vm.stop()
            with db.boot() as vm:
                expect_reopened(db.ready(vm), "virtio-blk", 1)
                db.expect_retained("test/ret/#", {"test/ret/1": "backed up",
                                                  "test/ret/2": "after the restore"})
        return "backup a replaced the damaged database; console and $SYS said so; works on"
    return check


def two_disks_test(build):
    """Two disks with a tern data partition: auto refuses to choose; named
    by its PCI address (as the console listed it), the virtio-scsi disk is
    formatted and used and the virtio-blk disk stays as it was."""
    def check():
        with scratch() as tmp:
            blk, _ = mkdisk(build, tmp, name="blk.img")
            scsi, _ = mkdisk(build, tmp, name="scsi.img")
            disks = drive(blk, "d0", "virtio-blk") + drive(scsi, "d1", "virtio-scsi")
            db = DiskBroker(build, tmp, disks)
            out = refused(db, [blk, scsi], [
                rb"tern: store: store.disk = auto: several disks hold a tern data partition "
                rb"\(virtio-blk [0-9a-f:.]+, virtio-scsi [0-9a-f:.]+ 0:0\): name one with "
                rb"store.disk"])
            addr = re.search(rb"tern: disk virtio-scsi ([0-9a-f]{2}:[0-9a-f]{2}\.\d) ",
                             out).group(1).decode()
            named = os.path.join(tmp, "named")
            os.mkdir(named)
            db = DiskBroker(build, named, disks, MTLS_CONF + f"store.disk = {addr}\n")
            before = sha(blk)
            with db.boot() as vm:
                store_lines(db.ready(vm), "virtio-scsi",
                            rb"tern: store: DISK: formatted the blank tern partition #1 ")
                db.pub("test/ret", "on scsi", 1, retain=True)
                vm.stop()
            if sha(blk) != before:
                raise Failure("the disk store.disk did not name was written")
        return f"auto refused, image unchanged; store.disk = {addr} used, the other untouched"
    return check


def cases(b):
    return {
        "store-disk-blk-survives-quit-and-kill-qos2-once":
            survival_test(b, BLK_512_4K),
        "store-disk-scsi4k-survives-quit-and-kill-qos2-once":
            survival_test(b, SCSI_4K),
        "store-disk-scsi4k-800k-retained-500-queued-survive-kill": volume_test(b, SCSI_4K),
        "store-disk-smp2-storage-core-blk-survives-quit-and-kill-qos2-once":
            survival_test(b, BLK_512_4K, smp=2),
        "store-disk-image-seabios-blk-formats-and-keeps":
            image_test(b, (), "virtio-blk", 90),
        "store-disk-image-ovmf-scsi-formats-and-keeps":
            image_test(b, ("-bios", OVMF), "virtio-scsi", 180) if os.path.exists(OVMF) else None,
        "store-disk-one-corrupt-superblock-uses-the-other": one_corrupt_superblock_test(b),
        "store-disk-refuses-two-corrupt-superblocks-and-newer-layout":
            superblock_refusals_test(b),
        "store-disk-refuses-foreign-partition": foreign_test(b),
        "store-disk-refuses-device-without-flush": noflush_test(b),
        "store-disk-named-disk-missing-halts-other-disk-untouched": missing_disk_test(b),
        "store-disk-two-tern-disks-auto-refused-named-one-used": two_disks_test(b),
        "store-disk-damaged-database-replaced-by-backup": backup_restore_test(b),
    }
