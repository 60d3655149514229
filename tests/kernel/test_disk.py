"""Disks: the test build with a virtio-blk disk and a virtio-scsi disk
(scsi-hd behind virtio-scsi-pci) in the same VM reports each disk's
topology as QEMU was told (512-byte logical / 4 KiB physical with a 64 KiB
optimal I/O size, and 4 KiB / 4 KiB; FUA on the SCSI disk with dpofua=on),
completes by MSI-X or, with vectors=0, by polling; tern.test.disk=write
writes a pattern, flushes, reads it back, checks the largest transfer, has
reads beyond the capacity refused and write-zeroes and discard working;
after QEMU is killed, a second boot on the same image files finds the
pattern (tern.test.disk=verify). With tern.test.blk=noflush the flush is
hidden and both disks are refused for durable storage on the console.
"""
import re

from harness import Failure, Vm, disk_image, drive, expect_lines, raw_disk, scratch, show

BLK_512_4K = ("virtio-blk", "physical_block_size=4096,opt_io_size=65536")
SCSI_4K = ("virtio-scsi", "logical_block_size=4096,physical_block_size=4096,dpofua=on")
BLK_4K_POLLED = ("virtio-blk", "logical_block_size=4096,physical_block_size=4096,vectors=0")
SCSI_512_4K = ("virtio-scsi", "physical_block_size=4096,opt_io_size=65536")

# The describe line of each disk as configured above (64 MiB images).
WANT = {
    BLK_512_4K: rb"tern: disk virtio-blk [0-9a-f:.]+: 64 MiB \(131072 x 512 B\), physical 4 KiB, "
                rb"optimal i/o 64 KiB, max transfer 256 KiB; volatile write cache, flush, "
                rb"discard, write-zeroes; msi-x",
    SCSI_4K: rb"tern: disk virtio-scsi [0-9a-f:.]+ 0:0 \"QEMU QEMU HARDDISK\": 64 MiB "
             rb"\(16384 x 4 KiB\), physical 4 KiB, optimal i/o unknown, max transfer 256 KiB; "
             rb"volatile write cache, flush, fua, discard, write-zeroes; msi-x",
    BLK_4K_POLLED: rb"tern: disk virtio-blk [0-9a-f:.]+: 64 MiB \(16384 x 4 KiB\), physical "
                   rb"4 KiB, optimal i/o unknown, max transfer 256 KiB; volatile write cache, "
                   rb"flush, discard, write-zeroes; polled",
    SCSI_512_4K: rb"tern: disk virtio-scsi [0-9a-f:.]+ 0:0 \"QEMU QEMU HARDDISK\": 64 MiB "
                 rb"\(131072 x 512 B\), physical 4 KiB, optimal i/o 64 KiB, max transfer "
                 rb"256 KiB; volatile write cache, flush, discard, write-zeroes; msi-x",
}
WRITE_OK = rb"selftest disk-write: ok: %s [^\n]*: pattern, flush, largest transfer, " \
           rb"range refusals, write-zeroes, discard"


def disk_boot(kernel, images, disks, append, timeout=60):
    """Boot the test kernel with disks (kind, options) on images; wait for
    the ready line; the serial output."""
    args = ["-kernel", kernel, "-append", append]
    for i, ((kind, opts), path) in enumerate(zip(disks, images)):
        args += drive(path, f"d{i}", kind, opts)
    with Vm(args) as vm:
        vm.wait_ready(timeout)
        vm.expect_no_fatal()
        return vm.text()


def checked(out, name, n):
    if f"selftest disk-{name}: {n} disks checked".encode() not in out or b"FAILED" in out:
        raise Failure(f"disk-{name} did not pass on {n} disks:\n{show(out)}")


def reboot_test(kernel, disks):
    """Topology lines, the write check on every disk, QEMU killed, then the
    pattern found by a second boot on the same images."""
    def check():
        with scratch() as tmp:
            images = [raw_disk(disk_image(tmp, f"d{i}.img")) for i in range(len(disks))]
            out = disk_boot(kernel, images, disks, "tern.test.disk=write")
            expect_lines(out, [WANT[d] for d in disks])
            for kind, _ in disks:
                expect_lines(out, [WRITE_OK % kind.encode()])
            checked(out, "write", len(disks))
            out = disk_boot(kernel, images, disks, "tern.test.disk=verify")
            for kind, _ in disks:
                expect_lines(out, [rb"selftest disk-verify: ok: %s [^\n]*: pattern read back"
                                   % kind.encode()])
            checked(out, "verify", len(disks))
        return f"{len(disks)} disks written, killed, verified after reboot"
    return check


def noflush_test(kernel):
    """Flush hidden at negotiation (virtio-blk) and in the driver
    (virtio-scsi): both disks are refused, and the checks skip them."""
    def check():
        with scratch() as tmp:
            disks = (BLK_512_4K, SCSI_512_4K)
            images = [disk_image(tmp, f"d{i}.img") for i in range(2)]
            out = disk_boot(kernel, images, disks,
                            "tern.test.blk=noflush tern.test.disk=write")
        for kind in (rb"virtio-blk [0-9a-f:.]+", rb"virtio-scsi [0-9a-f:.]+ 0:0"):
            expect_lines(out, [rb"tern: disk " + kind + rb"[ :][^\n]*volatile write cache, "
                               rb"discard", rb"tern: disk " + kind + rb": refused for durable "
                               rb"storage: volatile write cache without flush"])
        checked(out, "write", 0)
        return "both refused"
    return check


def cases(build):
    k = build.test_elf
    return {
        "disk-blk512-scsi4k-reboot": reboot_test(k, (BLK_512_4K, SCSI_4K)),
        "disk-blk4k-polled-scsi512": reboot_test(k, (BLK_4K_POLLED, SCSI_512_4K)),
        "disk-noflush-refused": noflush_test(k),
    }
