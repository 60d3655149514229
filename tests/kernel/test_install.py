"""Install mode (SPEC A1, A3; docs/INSTALL.md): the ISO's install entry
writes the machine's disk, which then boots by itself.

The ISO here is built by the image builder's own script (mkiso.sh with
the install payload from mkboot.sh and tern-payload) around the test
kernel, with one difference: its grub.cfg makes the install entry the
default and passes the test-only tern.test.install.countdown=2 (test
kernels only). Driving the real menu over serial would need GRUB's editor
to add that argument, which is slower and more fragile under TCG; the
entry's module lines are the shipped ones, checked against grub.cfg.

- An empty virtio-blk disk: the countdown runs out, the installer writes
  and verifies, QEMU exits through ACPI power-off; the disk alone then
  boots under SeaBIOS into the broker (mutual TLS) whose store is on the
  installed data partition, a retained message published there is served
  after booting the same disk under OVMF.
- A disk holding a tern partition (the image builder's disk): anything
  but WIPE over serial aborts and leaves every byte as it was; WIPE
  installs.
- An empty disk whose countdown gets a key over serial, or on the PS/2
  keyboard (QMP send-key): aborted, the disk still all zeros.
- Refusals: no payload (the production kernel by -kernel), several
  suitable disks, read-only, 4Kn and too small disks; each names its
  reason and changes no byte.
"""
import atexit
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

from harness import (MTLS_CONF, OVMF, REPO, Failure, Qmp, Vm, disk_image, drive, expect_lines,
                     make_bundle, qmp_args, scratch, sha, show)
from test_store_disk import DiskBroker

COUNTDOWN_S = 2
POWER_OFF_TIMEOUT = 300
PROMPT = rb"Type WIPE and press Enter"
ABORTED = rb"tern: install: install aborted; nothing was written"

_iso = {}
_iso_lock = threading.Lock()


def test_iso(build):
    """The test ISO (built once per run): the test kernel, a bundle of the
    mutual-TLS configuration, the install entry as the default."""
    with _iso_lock:
        if "path" in _iso:
            return _iso["path"]
        tmp = tempfile.mkdtemp(prefix="tern-kt-iso-")
        atexit.register(shutil.rmtree, tmp, True)
        bundle = make_bundle(build.dir, tmp, MTLS_CONF)
        with open(os.path.join(REPO, "tools", "image", "grub.cfg")) as f:
            cfg = f.read()
        install = ("    multiboot2 /boot/tern.elf tern.mode=install\n"
                   "    module2 /boot/tern.bundle tern.bundle\n"
                   "    module2 /boot/tern.install tern.install\n")
        if install not in cfg or "set default=0" not in cfg:
            raise Failure("tools/image/grub.cfg's install entry is not the one this test knows")
        cfg = cfg.replace("set default=0", "set default=1").replace(
            "tern.mode=install", f"tern.mode=install tern.test.install.countdown={COUNTDOWN_S}")
        cfg_path = os.path.join(tmp, "grub.cfg")
        with open(cfg_path, "w") as f:
            f.write(cfg)
        iso = os.path.join(tmp, "install.iso")
        r = subprocess.run([os.path.join(REPO, "tools", "image", "mkiso.sh"), build.test_elf,
                            iso, bundle, os.path.join(build.dir, "rel", "tern-payload")],
                           env=dict(os.environ, TERN_ISO_GRUB_CFG=cfg_path),
                           capture_output=True, timeout=300)
        if r.returncode != 0:
            raise Failure("mkiso.sh: " + show(r.stdout + r.stderr))
        _iso["path"] = iso
        return iso


def install_vm(build, img, serial_input=False):
    """The test ISO booted (SeaBIOS, CD first) with img as the only disk."""
    return Vm(["-cdrom", test_iso(build), "-boot", "d", "-device", "virtio-rng-pci"] +
              drive(img, "d0", "virtio-blk"), serial_input=serial_input)


def wait_power_off(vm, what):
    """QEMU gone by the guest's ACPI power-off after a verified install."""
    try:
        rc = vm.proc.wait(POWER_OFF_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what}: QEMU still running after {POWER_OFF_TIMEOUT} s:\n" +
                      show(vm.text()[-3000:]))
    vm.reader.join(2)
    out = vm.text()
    if rc != 0:
        raise Failure(f"{what}: QEMU exit status {rc}:\n{show(out[-3000:])}")
    expect_lines(out, (rb"tern: install: payload v1 checked \(SHA-256 of every part\)",
                       rb"tern: install: virtio-blk 00:0\d\.0: model \"[^\"]*\", 256 MiB, "
                       rb"logical block 512, physical block 512",
                       rb"tern: install: written in \d+ ms: GPT, MBR boot code, core.img, ESP; "
                       rb"data partition #3 \"tern-data\" formatted, layout v\d+",
                       rb"tern: install: verified in \d+ ms: \d+ KiB read back, SHA-256 of every "
                       rb"part matches; data partition #3",
                       rb"tern: install: done; remove the install medium and boot from "
                       rb"virtio-blk [^;]*; powering off"))
    if b"FAILED" in out or b"FATAL" in out:
        raise Failure(f"{what}:\n{show(out)}")
    return out


def empty_disk_test(build):
    def check():
        with scratch() as tmp:
            img = disk_image(tmp, "disk.img", 256)
            with install_vm(build, img) as vm:
                out = wait_power_off(vm, "install to an empty disk")
                took = time.monotonic() - vm.start
            if os.environ.get("TERN_INSTALL_LOG"):  # the installer's console, for docs
                with open(os.environ["TERN_INSTALL_LOG"], "wb") as f:
                    f.write(out)
            expect_lines(out, (rb"tern: install: it is empty \(no partition table",
                               rb"tern: install: installing to virtio-blk [^ ]+ in 2 s; press "
                               rb"any key to abort",
                               rb"tern: install: installing to virtio-blk [^ ]+ in 1 s"))
            # The disk alone: SeaBIOS, then OVMF, into the broker on its store.
            db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk", "bootindex=0"))
            with db.boot(firmware=()) as vm:
                first = db.ready(vm, 120)
                expect_lines(first, (rb"tern: ready \(boot multiboot2\)",
                                     rb"tern: booted from virtio-blk 00:0\d\.0 \(ESP #2, FAT "
                                     rb"volume [0-9A-F]{4}-[0-9A-F]{4}\)",
                                     rb"tern: store: virtio-blk 00:0\d\.0: partition #3, layout "
                                     rb"v\d+ generation \d+ \(superblock [AB]\); database",
                                     rb"tern: store: data partition #3 \"tern-data\" on the "
                                     rb"same disk",
                                     rb"tern: store: database created: quick_check ok"))
                if b"formatted now" in first:
                    raise Failure("the installed data partition was formatted again at boot")
                db.pub("test/installed", "kept", 1, retain=True)
                db.quit(vm)
            if not os.path.exists(OVMF):
                return f"installed in {took:.0f} s; SeaBIOS boot serves (no OVMF here)"
            with db.boot(firmware=("-bios", OVMF)) as vm:
                out = db.ready(vm, 240)
                expect_lines(out, (rb"tern: store: database found: quick_check ok",))
                db.expect_retained("test/installed", {"test/installed": "kept"})
                vm.expect_no_fatal()
        return (f"installed and powered off in {took:.0f} s; SeaBIOS boot serves mTLS, the "
                f"retained message is there under OVMF")
    return check


def tern_disk(build, tmp):
    """A copy of the image builder's disk (a GPT with a tern partition)."""
    img = os.path.join(tmp, "tern-disk.img")
    subprocess.run(["cp", "--sparse=always", os.path.join(build.dir, "tern-disk.img"), img],
                   check=True, timeout=60)
    return img


def wipe_test(build):
    def check():
        with scratch() as tmp:
            img = tern_disk(build, tmp)
            before = sha(img)
            with install_vm(build, img, serial_input=True) as vm:
                if vm.wait_for(lambda o: re.search(PROMPT, o), 180) is None:
                    raise Failure("no WIPE prompt:\n" + show(vm.text()[-3000:]))
                vm.type(b"wipe\r")
                if vm.wait_for(lambda o: re.search(ABORTED, o), 30) is None:
                    raise Failure("lower-case wipe did not abort:\n" + show(vm.text()[-3000:]))
                out = vm.text()
            expect_lines(out, (rb"tern: install: it holds a GPT with 3 partition\(s\)",
                               rb"#3 \"tern-data\" tern data, \d+ MiB at LBA 135168"))
            if b"installing to" in out or sha(img) != before:
                raise Failure("the disk changed after an answer other than WIPE")
            with install_vm(build, img, serial_input=True) as vm:
                if vm.wait_for(lambda o: re.search(PROMPT, o), 180) is None:
                    raise Failure("no WIPE prompt:\n" + show(vm.text()[-3000:]))
                vm.type(b"WIPE\r")
                out = wait_power_off(vm, "install after WIPE")
            expect_lines(out, (rb"tern: install: WIPE confirmed",))
            if sha(img) == before:
                raise Failure("WIPE confirmed, yet the disk is unchanged")
        return "'wipe' aborted with the disk unchanged; WIPE installed and powered off"
    return check


def abort_test(build, keyboard=False):
    """A key during the countdown - over serial, or on the PS/2 keyboard
    (QMP send-key) - aborts; the disk stays all zeros."""
    def check():
        with scratch() as tmp:
            img = disk_image(tmp, "disk.img", 256)
            before = sha(img)
            qmp, sock = qmp_args(tmp)
            with Vm(["-cdrom", test_iso(build), "-boot", "d", "-device", "virtio-rng-pci"] +
                    drive(img, "d0", "virtio-blk") + qmp, serial_input=True) as vm:
                if vm.wait_for(lambda o: b"press any key to abort" in o, 180) is None:
                    raise Failure("no countdown:\n" + show(vm.text()[-3000:]))
                if keyboard:
                    q = Qmp(sock)
                    q.cmd("send-key", keys=[{"type": "qcode", "data": "x"}])
                    q.close()
                else:
                    vm.type(b"x")
                if vm.wait_for(lambda o: re.search(ABORTED, o), 30) is None:
                    raise Failure("a key did not abort:\n" + show(vm.text()[-3000:]))
                out = vm.text()
            if b"writing" in out or sha(img) != before:
                raise Failure("the disk changed after an aborted countdown:\n" + show(out))
        return (f"a key {'on the PS/2 keyboard' if keyboard else 'over serial'} aborted the "
                f"countdown; the disk is still all zeros")
    return check


def no_payload_test(build):
    """The production kernel in install mode without the payload module
    (and without a disk): refused with the reason, halted, never reset."""
    def check():
        with Vm(["-kernel", build.elf, "-append", "tern.mode=install"]) as vm:
            took = vm.wait_for(lambda o: b"tern: install: halted" in o, 30)
            vm.wait_for(lambda o: False, (took or 0) + 2)  # no reset after the halt
            out = vm.text()
        if took is None or out.count(b"tern: booting") != 1:
            raise Failure("no halt, or a reset:\n" + show(out))
        expect_lines(out, (rb"tern: install: refused: no install payload \(the ISO's install "
                           rb"entry loads /boot/tern.install as the module \"tern.install\"\); "
                           rb"nothing was written",))
        return f"refused and halted in {took:.1f} s"
    return check


def refusals_test(build):
    """Refusals that name their reason and write nothing: two suitable
    disks with none named; then a read-only disk, a 4Kn disk and one too
    small, none suitable (one boot each, every image unchanged)."""
    def check():
        with scratch() as tmp:
            a, b = disk_image(tmp, "a.img", 256), disk_image(tmp, "b.img", 256)
            ro, k4, small = (disk_image(tmp, "ro.img", 256), disk_image(tmp, "4k.img", 256),
                             disk_image(tmp, "small.img", 128))
            boots = (
                ([a, b], drive(a, "d0", "virtio-blk") + drive(b, "d1", "virtio-blk"),
                 rb"tern: install: refused: several suitable disks \(virtio-blk [^;]+; "
                 rb"virtio-blk [^)]+\) and none named: set store.disk in the configuration; "
                 rb"nothing was written"),
                ([ro, k4, small],
                 ["-drive", f"file={ro},format=raw,if=none,id=r0,readonly=on",
                  "-device", "virtio-blk-pci,drive=r0"] +
                 drive(k4, "d1", "virtio-blk", "logical_block_size=4096,physical_block_size=4096")
                 + drive(small, "d2", "virtio-blk"),
                 rb"tern: install: refused: no suitable disk \(virtio-blk [0-9a-f:.]+: read-only; "
                 rb"virtio-blk [0-9a-f:.]+: 4096-byte logical blocks \(GRUB's BIOS stage boots "
                 rb"512-byte sectors only\); virtio-blk [0-9a-f:.]+: 128 MiB: too small \(at "
                 rb"least 160 MiB\)\); nothing was written"),
            )
            for imgs, disks, want in boots:
                before = [sha(i) for i in imgs]
                with Vm(["-cdrom", test_iso(build), "-boot", "d", "-device", "virtio-rng-pci"] +
                        disks) as vm:
                    if vm.wait_for(lambda o: b"tern: install: halted" in o, 180) is None:
                        raise Failure("no halt:\n" + show(vm.text()[-3000:]))
                    out = vm.text()
                expect_lines(out, (want,))
                if [sha(i) for i in imgs] != before:
                    raise Failure(f"a disk changed on a refusal ({want[:40]!r})")
        return "several disks, read-only, 4Kn and too small refused with the reason; no byte changed"
    return check


def cases(b):
    return {
        "install-without-payload-refused-halts": no_payload_test(b),
        "install-refuses-several-disks-read-only-4kn-too-small-unchanged": refusals_test(b),
        "install-empty-disk-powers-off-then-boots-seabios-and-ovmf-mtls-retained":
            empty_disk_test(b),
        "install-tern-disk-needs-wipe-anything-else-leaves-it-unchanged": wipe_test(b),
        "install-countdown-aborted-by-serial-key-writes-nothing": abort_test(b),
        "install-countdown-aborted-by-keyboard-key-writes-nothing": abort_test(b, True),
    }
