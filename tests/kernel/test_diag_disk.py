"""The disk measurements of the diagnostics report (SPEC E2), run alone by
the test kernel's hook tern.test.diag=disk (diag/disk_selftest.c), which
prints {"disk_read": [...], "disk_write": {...}} between marker lines and
halts. The disk: a 32 MiB virtio-blk image with a GPT (sgdisk) holding
one partition, 1 MiB to 9 MiB, filled with a known pattern, and free
space after it (9 MiB to 31 MiB: the last MiB holds the backup GPT, the
write test's span is cut to whole MiB).

  - answering "wipe" and giving no answer at all are refusals: the image is
    unchanged byte for byte (SHA-256), disk_write says done false and why,
    and disk_read has its figures (reads only);
  - answering WIPE writes: the free span changed, while the partition's
    bytes, the primary GPT (the first MiB) and the backup GPT (the last
    MiB) are unchanged; disk_write has its figures and names the span. A
    second, all-zero disk without a partition table is read (disk_read has
    two entries) but refused for writing ("no valid GPT") and unchanged.

Time budgets are cut by test-only boot arguments (tern.test.diag_ms: 300
ms per disk and section; tern.test.diag.wipe_s: the question's timeout),
so each boot takes a few seconds under TCG (both tests: about 12 s).

Seen failing on purpose: with diskspan.c keeping only each partition's
first block as covered, both tests fail (the span asked about starts at
2 MiB; the partition changed after WIPE); with diskask.c comparing without
case, "wipe" ran the write test and the refusal test fails.
"""
import hashlib
import json
import os
import re
import subprocess

from harness import Failure, Vm, drive, raw_disk, scratch, sha, show

MIB = 1 << 20
DISK_MIB = 32
PART = (1 * MIB, 9 * MIB)        # [start, end) bytes of partition 1
SPAN = (9 * MIB, 31 * MIB)       # the free span the write test must use
BEGIN = b"tern: diag: disk selftest begin"
END = b"tern: diag: disk selftest end"
PROMPT = b"type WIPE and press Enter"
DIAG_MS = 300


def pattern(n):
    """n bytes no disk holds by chance: SHA-256 in counter mode."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(b"tern diskbench %d" % i).digest()
        i += 1
    return bytes(out[:n])


def make_disk(tmp):
    """The image: GPT with one partition (PART) holding pattern(); the rest
    zero."""
    img = raw_disk(os.path.join(tmp, "disk.img"))
    with open(img, "wb") as f:
        f.truncate(DISK_MIB * MIB)
    r = subprocess.run(["sgdisk", "-n", f"1:{PART[0] // 512}:{PART[1] // 512 - 1}",
                        "-t", "1:8300", img], capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise Failure("sgdisk: " + r.stdout + r.stderr)
    with open(img, "r+b") as f:
        f.seek(PART[0])
        f.write(pattern(PART[1] - PART[0]))
    return img


def region_hashes(img):
    """SHA-256 of the primary GPT (first MiB), the partition, the free span
    and the backup GPT (last MiB)."""
    with open(img, "rb") as f:
        data = f.read()
    parts = {"primary GPT": (0, MIB), "partition": PART, "free span": SPAN,
             "backup GPT": ((DISK_MIB - 1) * MIB, DISK_MIB * MIB)}
    return {k: hashlib.sha256(data[a:b]).hexdigest() for k, (a, b) in parts.items()}


def run(kernel, img, answer, wipe_s, timeout=240, blank=None):
    """Boot the hook on img (and blank, a second disk without a partition
    table, if given); type answer (bytes, or None for none) at the WIPE
    question; the report (parsed JSON) and the serial output."""
    args = ["-kernel", kernel, "-append",
            f"tern.test.diag=disk tern.test.diag_ms={DIAG_MS} tern.test.diag.wipe_s={wipe_s}",
            "-device", "virtio-rng-pci"] + drive(img, "d0", "virtio-blk")
    if blank:
        args += drive(blank, "d1", "virtio-blk")
    with Vm(args, serial_input=True) as vm:
        if vm.wait_for(lambda o: PROMPT in o or END in o, timeout) is None:
            raise Failure("no WIPE question:\n" + show(vm.text()[-3000:]))
        if answer is not None and PROMPT in vm.text():
            vm.type(answer)
        if vm.wait_for(lambda o: END in o, timeout) is None:
            raise Failure("no end marker:\n" + show(vm.text()[-3000:]))
        out = vm.text()
    vm_fatal = b"FATAL" in out
    m = re.search(re.escape(BEGIN) + rb"\r?\n(.*?)\r?\n" + re.escape(END), out, re.S)
    if vm_fatal or not m:
        raise Failure("no report between the markers:\n" + show(out[-3000:]))
    try:
        return json.loads(m.group(1)), out
    except ValueError as e:
        raise Failure(f"the report is not JSON ({e}):\n{show(m.group(1))}")


def check_read(rep, out, disks=1):
    """disk_read: one entry per disk, the first with every figure of its
    three runs."""
    reads = rep.get("disk_read")
    if not isinstance(reads, list) or len(reads) != disks:
        raise Failure(f"disk_read is not {disks} disks: {reads!r}")
    d = reads[0]
    if d.get("bus") != "virtio-blk" or d.get("capacity_bytes") != DISK_MIB * MIB:
        raise Failure(f"disk_read's disk: {d!r}")
    seq = d.get("sequential") or {}
    if not (seq.get("bytes", 0) > 0 and seq.get("mib_s", 0) > 0 and seq.get("time_ns", 0) > 0):
        raise Failure(f"sequential read figures missing: {d!r}")
    rnd = d.get("random") or []
    if [r.get("depth_asked") for r in rnd] != [1, 8]:
        raise Failure(f"random read runs at depth 1 and 8 expected: {rnd!r}")
    for r in rnd:
        if r.get("request_bytes") != 4096 or not r.get("reads") or not r.get("reads_per_s"):
            raise Failure(f"random read figures missing: {r!r}")
        if r["samples"] != r["reads"] or not (0 < r["p50_us"] <= r["p90_us"] <= r["p99_us"]
                                             <= r["max_us"]):
            raise Failure(f"random read percentiles not ordered or samples short: {r!r}")
    return (f"seq {seq['mib_s']} MiB/s, 4K QD1 {rnd[0]['reads_per_s']}/s "
            f"p99 {rnd[0]['p99_us']} us, QD8 depth {rnd[1]['depth']} {rnd[1]['reads_per_s']}/s")


def refused_test(build):
    def check():
        with scratch() as tmp:
            img = make_disk(tmp)
            before = sha(img)
            notes = []
            for answer, why, wipe_s in ((b"wipe\r", "the answer was not WIPE", 60),
                                        (None, "no answer within 2 s", 2)):
                rep, out = run(build.test_elf, img, answer, wipe_s)
                w = rep.get("disk_write") or {}
                if w.get("done") is not False or why not in (w.get("why") or ""):
                    raise Failure(f"disk_write after {answer!r}: {w!r}")
                if (w.get("span_start_bytes"), w.get("span_bytes")) != (SPAN[0],
                                                                        SPAN[1] - SPAN[0]):
                    raise Failure(f"the span asked about is not the free space: {w!r}")
                if b"partitions and the partition table are untouched" not in out:
                    raise Failure("the question does not say partitions are untouched:\n" +
                                  show(out))
                if sha(img) != before:
                    raise Failure(f"the image changed after {answer!r}")
                notes.append(check_read(rep, out))
        return "'wipe' and no answer: image unchanged; " + notes[0]
    return check


def wipe_test(build):
    def check():
        with scratch() as tmp:
            img = make_disk(tmp)
            blank = raw_disk(os.path.join(tmp, "blank.img"))
            with open(blank, "wb") as f:
                f.truncate(8 * MIB)
            before, blank_before = region_hashes(img), sha(blank)
            rep, out = run(build.test_elf, img, b"WIPE\r", 60, blank=blank)
            after = region_hashes(img)
            if sha(blank) != blank_before:
                raise Failure("the disk without a partition table was written")
            for k in ("primary GPT", "partition", "backup GPT"):
                if before[k] != after[k]:
                    raise Failure(f"the {k} changed after WIPE")
            if before["free span"] == after["free span"]:
                raise Failure("WIPE confirmed, yet the free span is unchanged:\n" + show(out))
            w = rep.get("disk_write") or {}
            seq, rnd = w.get("sequential") or {}, w.get("random") or {}
            if w.get("done") is not True or w.get("span_start_bytes") != SPAN[0] or \
                    w.get("span_bytes") != SPAN[1] - SPAN[0]:
                raise Failure(f"disk_write: {w!r}")
            if not (seq.get("bytes", 0) > 0 and seq.get("mib_s", 0) > 0 and
                    rnd.get("writes", 0) > 0 and rnd.get("writes_per_s", 0) > 0 and
                    0 < rnd.get("p50_us", 0) <= rnd.get("max_us", 0)):
                raise Failure(f"write figures missing: {w!r}")
            listed = w.get("disks") or []
            if len(listed) != 2 or "no valid GPT" not in (listed[1].get("span_bytes_why") or ""):
                raise Failure(f"the disk without a GPT is not listed as refused: {listed!r}")
            check_read(rep, out, disks=2)
        return (f"only the free span changed; seq {seq['mib_s']} MiB/s, 4K "
                f"{rnd['writes_per_s']}/s ({w.get('random_durability')}), p99 "
                f"{rnd['p99_us']} us")
    return check


def cases(b):
    return {
        "diag-disk-refused-without-WIPE-writes-nothing": refused_test(b),
        "diag-disk-WIPE-writes-only-the-free-span": wipe_test(b),
    }
