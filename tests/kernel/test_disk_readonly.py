"""A read-only medium (SPEC A4): the disk image (make image:
tern-build-image --disk, GRUB for SeaBIOS, tern.mode=disk, a blank tern
data partition) attached read-only - a virtio-blk drive with readonly=on
(the device offers VIRTIO_BLK_F_RO) and a scsi-hd on a read-only drive (its
MODE SENSE sets the write-protect bit) - boots, says on serial and on the
framebuffer (QEMU's screendump read back with the kernel's font) that the
medium is read-only and that it halted, and halts: with -no-reboot a reset
would end QEMU, so QEMU still running HOLD_S seconds later with exactly one
boot banner, no fatal report and no reset announced shows it did not reset.
The image is unchanged byte for byte.
"""
import os
import re
import subprocess
import time

from harness import (BANNER, READY, Failure, Qmp, Screen, Vm, drive, qmp_args, scratch, sha,
                     show)

HALTED = re.compile(rb"tern: store: refusing to serve without the configured durable store; "
                    rb"halted\r?\n")
READ_ONLY = re.compile(rb"tern: store: virtio-(blk|scsi) [^\n]*: read-only medium: [^\n]*\n")
HOLD_S = 5  # after the halt: a reset (or a fatal report's reset) would end QEMU


def readonly_image_test(build, kind, timeout):
    def check():
        with scratch() as tmp:
            img = os.path.join(tmp, "tern-disk.img")
            subprocess.run(["cp", "--sparse=always", os.path.join(build.dir, "tern-disk.img"),
                            img], check=True, timeout=60)
            before = sha(img)
            qmp, sock = qmp_args(tmp)
            args = (["-no-reboot", "-nic", "user,model=virtio-net-pci",
                     "-device", "virtio-rng-pci"] +
                    drive(img, "d0", kind, "bootindex=0", readonly=True) + qmp)
            with Vm(args) as vm:
                took = vm.wait_for(lambda o: HALTED.search(o) is not None, timeout)
                if took is None:
                    raise Failure("no halt:\n" + show(vm.text()[-3000:]))
                time.sleep(HOLD_S)
                out = vm.text()
                if vm.proc.poll() is not None:
                    raise Failure(f"QEMU exited (the machine reset) within {HOLD_S} s of the "
                                  f"halt:\n{show(out[-3000:])}")
                if out.count(BANNER) != 1 or READY.search(out) or b"FATAL" in out or \
                        b"resetting" in out:
                    raise Failure("not exactly one boot that halted without a fatal report:\n"
                                  + show(out))
                lines = [READ_ONLY.search(out), HALTED.search(out)]
                if not lines[0]:
                    raise Failure(f"{READ_ONLY.pattern!r} not in:\n{show(out)}")
                q = Qmp(sock)
                q.cmd("stop")
                screen = Screen(q, out, tmp)
                for m in lines:
                    screen.expect(m.group(0).decode().strip())
            if sha(img) != before:
                raise Failure("the read-only image changed")
        return (f"halted {took:.1f} s after start, reason on serial and screen, still halted "
                f"{HOLD_S} s later, one boot, image unchanged")
    return check


def cases(b):
    return {
        "disk-readonly-blk-image-halts-with-reason-no-reset":
            readonly_image_test(b, "virtio-blk", 120),
        "disk-readonly-scsi-image-halts-with-reason-no-reset":
            readonly_image_test(b, "virtio-scsi", 120),
    }
