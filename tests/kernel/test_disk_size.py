"""Boot time does not grow with the disk (issue 14): the production kernel
with the same boot bundle boots a sparse 1 GiB and a sparse 64 GiB data
disk (tern-mkdisk; layout v2's regions scale with the partition: a
315 MiB and a 21,674 MiB database, docs/DISK.md), each twice - the first
boot formats the blank partition, the second opens it - interleaved so
that the machine's load drifts over both alike. Start to ready line of
the 64 GiB disk must be within noise of the 1 GiB one (SLACK_S or
SLACK_RATIO, whichever is larger) for the formatting and for the opening
boot; the figures are printed, with the kernel's own store open time.
The blocks the boots allocated in the two sparse images must be about the
same too (nothing written in proportion to the disk).
"""
import os
import re

from harness import Failure, drive, scratch, show
from test_store_disk import DiskBroker, mkdisk

SIZES = ("1G", "64G")
SLACK_S = 3.0      # TCG on a shared 2-core machine: boots move by seconds
SLACK_RATIO = 0.3
WRITTEN_SLACK = 16 << 20  # bytes: the regions' first 64 KiB, headers, the log
OPENED = re.compile(rb"tern: store: database (created|found): [^\n]*opened in (\d+) ms")


def boot_time(db):
    """Seconds from QEMU's start to the ready line, and the store's own
    open time in ms (from its console line)."""
    with db.boot() as vm:
        took, out = vm.wait_ready(120)
        vm.expect_no_fatal()
        vm.stop()
    m = OPENED.search(out)
    if not m:
        raise Failure("no store open line:\n" + show(out))
    return took, int(m.group(2))


def size_test(build):
    def check():
        with scratch() as tmp:
            brokers, images = {}, {}
            for size in SIZES:
                own = os.path.join(tmp, size)  # a bundle and QMP sockets each
                os.mkdir(own)
                img, _ = mkdisk(build, own, size=size)
                images[size] = img
                brokers[size] = DiskBroker(build, own, drive(img, "d0", "virtio-blk"))
            times = {}
            for boot in ("format", "open"):
                for size in SIZES:
                    times[(boot, size)] = boot_time(brokers[size])
            # What the boots wrote, from the sparse files' allocation: the
            # same small amount for both, nothing in proportion to the disk.
            written = {size: os.stat(images[size]).st_blocks * 512 for size in SIZES}
        figures = "; ".join(f"{boot} {size}: {times[(boot, size)][0]:.1f} s "
                            f"(store {times[(boot, size)][1]} ms)"
                            for boot in ("format", "open") for size in SIZES)
        figures += "; allocated " + ", ".join(f"{size} {written[size] >> 10} KiB"
                                               for size in SIZES)
        if written[SIZES[1]] > written[SIZES[0]] + WRITTEN_SLACK:
            raise Failure(f"the {SIZES[1]} disk got more blocks written: {figures}")
        for boot in ("format", "open"):
            small, big = times[(boot, SIZES[0])][0], times[(boot, SIZES[1])][0]
            if big - small > max(SLACK_S, small * SLACK_RATIO):
                raise Failure(f"the {SIZES[1]} disk's {boot} boot is slower beyond noise: "
                              f"{figures}")
        return figures
    return check


def cases(b):
    return {"disk-size-1g-and-64g-boot-in-the-same-time": size_test(b)}
