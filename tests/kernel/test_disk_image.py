"""The disk image tool and the layout in the kernel. tern-mkdisk (the
kernel's layout code on the host): the GPT it writes passes sgdisk's and
fdisk's own checks with 512- and 4096-byte blocks, holds a 1 MiB-aligned
ESP of the asked size and one tern data partition whose type is the GUID in
disk/gpt.h (read from that header, the one place it is written), reads back
as blank, stays sparse; a disk too small for layout v3 is refused with the
reason. The test kernel (tern.test.layout) formats such a disk's blank
partition through virtio-blk and virtio-scsi, reopens it after a reboot,
and the host tool reads the same regions back; a corrupt superblock is
used around and reported, and a blank partition opened without formatting,
foreign data and a newer layout are refused with the reason and leave every
byte of the image unchanged.
"""
import os
import re
import subprocess

from harness import Failure, Vm, drive, patch, reseal, scratch, sha, show

HERE = os.path.dirname(os.path.abspath(__file__))
GPT_H = os.path.join(HERE, "..", "..", "src", "platform", "kernel", "disk", "gpt.h")
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
MIB = 1 << 20


def tern_type():
    """TERN_DATA_TYPE_GUID as gpt.h defines it."""
    with open(GPT_H) as f:
        m = re.search(r'#define TERN_DATA_TYPE_GUID "([0-9a-f-]{36})"', f.read())
    if not m:
        raise Failure(f"no TERN_DATA_TYPE_GUID in {GPT_H}")
    return m.group(1).upper()


def run(args, ok=True):
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if ok and p.returncode != 0:
        raise Failure(f"{' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def fdisk_parts(img, logical):
    """The GPT's partitions as fdisk reads them: [{start, size, type}]."""
    out = run(["fdisk", "-b", str(logical), "-l", "-o", "Start,Sectors,Type-UUID", img]).stdout
    if "Disklabel type: gpt" not in out:
        raise Failure(f"fdisk sees no GPT:\n{out}")
    rows = out.split("Start Sectors Type-UUID\n", 1)[1].split("\n")
    return [dict(zip(("start", "size", "type"), (int(a), int(b), c)))
            for a, b, c in (r.split() for r in rows if r.strip())]


def image_test(build_dir, logical, size_mib, esp_mib):
    tool = os.path.join(build_dir, "rel", "tern-mkdisk")

    def check():
        with scratch() as tmp:
            img = os.path.join(tmp, "disk.img")
            run([tool, "--size", f"{size_mib}M", "--esp", f"{esp_mib}M",
                 "--logical-block", str(logical), img])
            parts = fdisk_parts(img, logical)
            if len(parts) != 2:
                raise Failure(f"not two GPT partitions: {parts}")
            esp, data = parts
            per_mib = MIB // logical
            if esp["type"] != ESP_TYPE or esp["start"] != per_mib or esp["size"] != esp_mib * per_mib:
                raise Failure(f"ESP: {esp}")
            if data["type"] != tern_type() or data["start"] != (1 + esp_mib) * per_mib \
                    or data["start"] % per_mib or data["size"] % per_mib:
                raise Failure(f"data partition: {data} (want type {tern_type()})")
            if size_mib * MIB - (data["start"] + data["size"]) * logical > MIB:
                raise Failure(f"data partition does not fill the disk: {data}")
            if logical == 512:
                v = run(["sgdisk", "-v", img]).stdout
                if "No problems found" not in v:
                    raise Failure(f"sgdisk -v:\n{v}")
            show = run([tool, "--show", "--logical-block", str(logical), img]).stdout
            if "data partition #2: blank" not in show:
                raise Failure(f"--show:\n{show}")
            used = os.stat(img).st_blocks * 512
            if used > 4 * MIB:
                raise Failure(f"{used} bytes allocated: the image is not sparse")
        return f"{size_mib} MiB, {logical}-byte blocks"
    return check


def too_small_test(build_dir):
    tool = os.path.join(build_dir, "rel", "tern-mkdisk")

    def check():
        with scratch() as tmp:
            p = run([tool, "--size", "30M", "--esp", "16M", os.path.join(tmp, "small.img")], ok=False)
            want = "the partition has 12 MiB; layout v3 needs at least 22 MiB"
            if p.returncode == 0 or want not in p.stderr:
                raise Failure(f"exit {p.returncode}, stderr: {p.stderr!r}")
        return "refused"
    return check


def layout_boot(kernel, img, disk, mode):
    """Boot the test kernel with img as its one disk (kind, options) and
    tern.test.layout=mode; the serial output once ready."""
    kind, opts = disk
    args = ["-kernel", kernel, "-append", f"tern.test.layout={mode}",
            "-device", "virtio-rng-pci"] + drive(img, "d0", kind, opts)
    with Vm(args) as vm:
        vm.wait_ready(90)
        vm.expect_no_fatal()
        return vm.text().decode(errors="replace")


def kernel_regions(out):
    """{region: (lba, blocks)} from the kernel's layout lines."""
    return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in
            re.finditer(r"tern: layout: [^\n]*?: (database|WAL|backup A|backup B|telemetry) "
                        r"at LBA (\d+), (\d+) blocks", out)}


def host_regions(tool, img, logical):
    out = run([tool, "--show", "--logical-block", str(logical), img]).stdout
    return out, {m.group(1).strip(): (int(m.group(2)), int(m.group(3))) for m in
                 re.finditer(r"^  (database|WAL|backup A|backup B|telemetry)\s+LBA (\d+), "
                             r"(\d+) blocks", out, re.M)}


def expect(out, *wants):
    for want in wants:
        if want not in out:
            raise Failure(f"{want!r} not in:\n{show(out.encode())}")


def format_test(build_dir, kernel, disk, logical):
    """Blank -> formatted by the kernel -> reopened after a reboot -> the
    host tool reads the same regions."""
    tool = os.path.join(build_dir, "rel", "tern-mkdisk")

    def check():
        with scratch() as tmp:
            img = os.path.join(tmp, "disk.img")
            run([tool, "--size", "128M", "--esp", "16M", "--logical-block", str(logical), img])
            out = layout_boot(kernel, img, disk, "format")
            expect(out, "formatted the blank tern partition #2 (110 MiB) with layout v3",
                   "layout v3 generation 2 (superblock B)", "selftest layout-format: 1 disks opened")
            first = kernel_regions(out)
            if len(first) != 5:
                raise Failure(f"regions: {first}\n{out}")
            out = layout_boot(kernel, img, disk, "open")
            expect(out, "layout v3 generation 2 (superblock B)", "selftest layout-open: 1 disks opened")
            if "formatted" in out or kernel_regions(out) != first:
                raise Failure(f"second boot differs:\n{out}")
            shown, regions = host_regions(tool, img, logical)
            if "layout v3, generation 2 (superblock B)" not in shown or regions != first:
                raise Failure(f"tern-mkdisk --show differs from the kernel {first}:\n{shown}")
        return f"{disk[0]}, {logical}-byte blocks: formatted, reopened, host agrees"
    return check


def refusals_test(build_dir, kernel):
    """On one virtio-blk disk: blank opened without formatting, foreign data,
    a corrupt slot A (used around), a newer layout in slot B; the refusals
    leave the image byte for byte as it was."""
    tool = os.path.join(build_dir, "rel", "tern-mkdisk")
    disk = ("virtio-blk", "")
    part = 17 << 20  # the data partition's first byte (after 1 MiB + a 16 MiB ESP)
    slot_a, slot_b = part, part + (512 << 10)

    def refused(img, mode, want):
        before = sha(img)
        out = layout_boot(kernel, img, disk, mode)
        expect(out, want, f"selftest layout-{mode}: 0 disks opened")
        if sha(img) != before:
            raise Failure(f"the image changed on a refusal ({want!r})")

    def check():
        with scratch() as tmp:
            img = os.path.join(tmp, "disk.img")
            run([tool, "--size", "64M", "--esp", "16M", img])
            refused(img, "open", "blank: the tern partition is blank")
            patch(img, part + 1024 + 0x38, b"\x53\xef")  # an ext4 superblock's magic
            refused(img, "format", "refused: the tern partition starts with foreign data")
            patch(img, part + 1024 + 0x38, b"\0\0")
            patch(img, part + 300000, b"\x01")  # between the slots
            refused(img, "format", "refused: the tern partition has no superblock but holds "
                                   "data at byte 300000 (foreign)")
            patch(img, part + 300000, b"\0")
            out = layout_boot(kernel, img, disk, "format")
            expect(out, "selftest layout-format: 1 disks opened")
            patch(img, slot_a + 30, b"\xff")  # slot A's generation, CRC not updated
            out = layout_boot(kernel, img, disk, "open")
            expect(out, "superblock A is unusable (CRC32 mismatch",
                   "using superblock B (generation 2)", "selftest layout-open: 1 disks opened")
            patch(img, slot_b + 8, (3).to_bytes(4, "little"))
            reseal(img, slot_b)
            refused(img, "open", "refused: superblock B: layout version 3 is newer than this "
                                 "release's 2: a newer tern is needed")
        return "blank, foreign, corrupt slot, newer: as documented"
    return check


BLK_512_4K = ("virtio-blk", "physical_block_size=4096,opt_io_size=65536")
SCSI_4K = ("virtio-scsi", "logical_block_size=4096,physical_block_size=4096")


def cases(b):
    return {
        "disk-image-gpt-512": image_test(b.dir, 512, 1024, 64),
        "disk-image-gpt-4096": image_test(b.dir, 4096, 256, 16),
        "disk-image-too-small": too_small_test(b.dir),
        "layout-format-blk512-4k": format_test(b.dir, b.test_elf, BLK_512_4K, 512),
        "layout-format-scsi4k": format_test(b.dir, b.test_elf, SCSI_4K, 4096),
        "layout-refusals": refusals_test(b.dir, b.test_elf),
    }
