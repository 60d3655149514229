"""What the power-cut harness reads on the guest's disk image from the host,
between boots: where the tern regions are (tern-mkdisk --show), what each
region's file holds (its region header, docs/DISK.md "Inside the regions"),
and whether every backup copy a cut left behind is a whole database.

A backup slot whose header says size 0 holds no copy (a copy cut halfway
leaves that: the slot is emptied durably before the copy and gets its size
only at the copy's final sync). A slot with a size must hold a complete
copy: PRAGMA integrity_check ok, and tern's application_id. Python standard
library only.

    python3 tests/powercut/disk_check.py --mkdisk build/rel/tern-mkdisk IMAGE
"""

import argparse
import hashlib
import os
import re
import sqlite3
import struct
import subprocess
import tempfile

SECTOR = 512
HDR_MAGIC = b"tern-rgn"
HDR_BYTES = 64
HDR_VERSION = 1
APPLICATION_ID = 0x7465726E   # 'tern' (docs/STORE.md)

REGION_LINE = re.compile(r"^\s+(WAL|telemetry|database|backup A|backup B)\s+LBA (\d+), "
                         r"(\d+) blocks", re.M)


class DiskError(Exception):
    """The image does not hold what the check expects."""


def regions(image, mkdisk):
    """{"database": (first byte, length in bytes), "WAL": ..., "backup A":
    ..., "backup B": ..., "telemetry": ...} as tern-mkdisk --show reads
    them (512-byte blocks); DiskError when it cannot."""
    r = subprocess.run([mkdisk, "--show", image], capture_output=True, text=True)
    found = {m.group(1): (int(m.group(2)) * SECTOR, int(m.group(3)) * SECTOR)
             for m in REGION_LINE.finditer(r.stdout)}
    if r.returncode != 0 or len(found) != 5:
        raise DiskError("tern-mkdisk --show %s: %s" % (image, (r.stdout + r.stderr).strip()))
    return found


def parse_header(buf, start, length):
    """One header copy: (seq, owner, size), or None when it is not a valid
    header of the region [start, start + length) (blank, torn, another
    region's)."""
    if buf[:8] != HDR_MAGIC or hashlib.sha256(buf[:56]).digest()[:8] != buf[56:64]:
        return None
    version, _role, owner, flags, seq, size, lba, blocks = struct.unpack_from(
        "<IIIIQQQQ", buf, 8)
    if version != HDR_VERSION or flags or lba * SECTOR != start or blocks * SECTOR != length:
        return None
    return seq, owner, size


def region_file(f, start, length, physical_block=4096):
    """The bytes of the file a region holds now (the valid header copy with
    the higher sequence number gives its size; no valid copy: empty)."""
    copies = []
    for i in range(2):
        f.seek(start + i * physical_block)
        h = parse_header(f.read(HDR_BYTES), start, length)
        if h is not None:
            copies.append(h)
    if not copies:
        return b""
    _, _, size = max(copies)
    data_start = start + 2 * physical_block
    if size > length - 2 * physical_block:
        raise DiskError("region at byte %d: size %d beyond its capacity" % (start, size))
    f.seek(data_start)
    return f.read(size)


def database_check(data):
    """"ok", or what is wrong with the SQLite database in data (bytes)."""
    with tempfile.TemporaryDirectory(prefix="tern-bak-") as tmp:
        path = os.path.join(tmp, "copy.db")
        with open(path, "wb") as out:
            out.write(data)
        try:
            db = sqlite3.connect("file:%s?immutable=1" % path, uri=True)
            try:
                app = db.execute("PRAGMA application_id").fetchone()[0]
                rows = [r[0] for r in db.execute("PRAGMA integrity_check")]
            finally:
                db.close()
        except sqlite3.DatabaseError as e:
            return "not a database SQLite can read: %s" % e
    if app != APPLICATION_ID:
        return "application_id %#x, not tern's" % app
    return "ok" if rows == ["ok"] else "integrity_check: " + "; ".join(rows[:5])


def check_backups(image, where, physical_block=4096):
    """The backup slots of image (regions(): where), each "empty" or a
    whole tern database: {"backup A": "empty" | "N bytes ok", ...}; DiskError
    naming the slot and what is wrong otherwise."""
    out = {}
    with open(image, "rb") as f:
        for slot in ("backup A", "backup B"):
            start, length = where[slot]
            data = region_file(f, start, length, physical_block)
            if not data:
                out[slot] = "empty"
                continue
            verdict = database_check(data)
            if verdict != "ok":
                raise DiskError("%s (%d bytes): %s" % (slot, len(data), verdict))
            out[slot] = "%d bytes ok" % len(data)
    return out


def journal(image, tele):
    """The telemetry journal of image as tern-tele (the kernel's parser on
    the host) reads it: the list of its records (dicts), oldest first.
    DiskError when the journal is refused, a live segment fails its checks,
    or record numbers do not strictly increase."""
    r = subprocess.run([tele, image], capture_output=True, text=True)
    if r.returncode != 0:
        raise DiskError("tern-tele %s: exit %d: %s" % (image, r.returncode,
                                                       (r.stdout[-800:] + r.stderr).strip()))
    import json
    recs = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    nums = [x["record"] for x in recs]
    if any(b <= a for a, b in zip(nums, nums[1:])):
        raise DiskError("telemetry record numbers do not increase: %s" % nums[-20:])
    return recs


def check_boots(recs, served):
    """Every boot number in served (boots that printed their telemetry line
    and so had their boot record flushed before serving) has its boot
    record, and the boot records count 1, 2, 3... in order (none lost,
    none twice). Returns the boot numbers found; DiskError otherwise."""
    boots = [x["boot"] for x in recs if x["kind"] == "boot"]
    if boots and boots != list(range(boots[0], boots[0] + len(boots))):
        raise DiskError("boot records out of order or missing: %s" % boots)
    missing = [n for n in served if n not in boots and (not boots or n >= boots[0])]
    if missing:
        raise DiskError("boots %s served but have no boot record (found %s)" % (missing, boots))
    return boots


def main():
    ap = argparse.ArgumentParser(description="Check the backup copies on a tern disk image.")
    ap.add_argument("image")
    ap.add_argument("--mkdisk", default="build/rel/tern-mkdisk")
    ap.add_argument("--physical-block", type=int, default=4096)
    a = ap.parse_args()
    print(check_backups(a.image, regions(a.image, a.mkdisk), a.physical_block))


if __name__ == "__main__":
    main()
