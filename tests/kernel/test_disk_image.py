"""The disk image tool (build/rel/tern-mkdisk, the kernel's layout code on
the host): the GPT it writes passes sgdisk's and fdisk's own checks with
512- and 4096-byte blocks, holds a 1 MiB-aligned ESP of the asked size and
one tern data partition whose type is the GUID in disk/gpt.h (read from
that header, the one place it is written), reads back as blank, stays
sparse; a disk too small for layout v2 is refused with the reason. No VM
is booted.
"""
import os
import re
import subprocess

from harness import Failure, scratch

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
            want = "the partition has 12 MiB; layout v2 needs at least 22 MiB"
            if p.returncode == 0 or want not in p.stderr:
                raise Failure(f"exit {p.returncode}, stderr: {p.stderr!r}")
        return "refused"
    return check


def cases(b):
    return {
        "disk-image-gpt-512": image_test(b.dir, 512, 1024, 64),
        "disk-image-gpt-4096": image_test(b.dir, 4096, 256, 16),
        "disk-image-too-small": too_small_test(b.dir),
    }
