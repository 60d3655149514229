"""tern-disk (tools/disk/tern-disk*.c) on images made by tern-mkdisk and
filled by tdisk-fixture (the kernel's layout code, kvfs and the daemon's
store, on the host): what inspect shows, what verify finds when one layer
is damaged on purpose, its exit codes, and that it never changes a byte.

Run by `make tdisk-test` (part of `make test`); TERN_BUILD names the build
directory (default build).
"""
import hashlib
import os
import subprocess
import zlib

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO, os.environ.get("TERN_BUILD", "build"))
TDISK = os.path.join(BUILD, "asan", "tern-disk")
FIXTURE = os.path.join(BUILD, "asan", "tdisk-fixture")
MKDISK = os.path.join(BUILD, "rel", "tern-mkdisk")
MIB = 1 << 20
SLOT_B = 512 * 1024


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def tdisk(cmd, path, *extra):
    return run(TDISK, cmd, *extra, path)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def patch(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def read(path, offset, n):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


def make_disk(tmp_path, name="d.img", size="128M", lb="512", fill=True, extra=(), wal=True):
    path = str(tmp_path / name)
    rc, out = run(MKDISK, "--size", size, "--logical-block", lb, path)
    assert rc == 0, out
    if fill:
        rc, out = run(FIXTURE, path, "50", "10", "--backup", *(("--wal",) if wal else ()), *extra)
        assert rc == 0, out
    return path


def layout(path):
    """Partition start and region offsets (bytes) from inspect's output."""
    rc, out = tdisk("inspect", path)
    assert rc == 0, out
    regions = {}
    part = None
    lb = int(out.split("-byte blocks")[0].rsplit(" ", 1)[1])
    for line in out.splitlines():
        s = line.split()
        if "(tern" in line and s[0].startswith("#"):
            part = int(line.split("LBA ")[1].split("..")[0]) * lb
        if len(s) > 4 and s[1] == "offset" or (len(s) > 5 and s[2] == "offset"):
            name = line.split("offset")[0].strip()
            regions[name] = int(line.split("(LBA ")[1].split(",")[0]) * lb
    return part, regions, out


def test_inspect_shows_every_layer_and_changes_nothing(tmp_path):
    path = make_disk(tmp_path)
    before = sha(path)
    rc, out = tdisk("inspect", path)
    assert rc == 0, out
    for want in ["a whole disk (GPT)", "using the primary copy (both copies valid and equal)",
                 "superblock A: valid, layout v3, generation 1",
                 "superblock B: valid, layout v3, generation 2", "in use: superblock B",
                 "WAL ", "telemetry ", "database ", "backup A ", "backup B ",
                 "log: WAL", "schema 2", "integrity_check: ok", "backup B: no copy",
                 # the commit left in the WAL is read through kvfs: 51, the backup 50
                 "rows: retained 51 sessions 10 subs 10", "rows: retained 50 sessions 10 subs 10"]:
        assert want in out, f"{want!r} not in:\n{out}"
    assert sha(path) == before
    rc, out = tdisk("verify", path)
    assert rc == 0 and out.strip().endswith("clean: 0 problems"), out
    assert sha(path) == before


def test_blank_partition_and_blank_image_are_clean(tmp_path):
    path = make_disk(tmp_path, fill=False)
    rc, out = tdisk("inspect", path)
    assert rc == 0 and "blank: the kernel formats it at its first boot" in out, out
    zero = tmp_path / "zero.img"
    zero.write_bytes(bytes(4 * MIB))
    rc, out = tdisk("verify", str(zero))
    assert rc == 0, out


def test_formatted_layout_without_a_database_yet_is_clean(tmp_path):
    # The kernel formats a blank partition and creates the database when its
    # store first opens: a disk left between the two verifies clean.
    path = make_disk(tmp_path, fill=False)
    rc, out = run(FIXTURE, path, "0", "0", "--format-only")
    assert rc == 0, out
    rc, out = tdisk("verify", path)
    assert rc == 0, out
    rc, out = tdisk("inspect", path)
    assert rc == 0 and "database: none yet" in out, out


def test_partition_image_alone_is_detected(tmp_path):
    path = make_disk(tmp_path)
    part, _, _ = layout(path)
    alone = tmp_path / "part.img"
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(part)
        # up to the backup GPT: the partition ends on the last whole MiB
        alone.write_bytes(f.read((size - part) // MIB * MIB))
    rc, out = tdisk("inspect", str(alone))
    assert rc == 0, out
    assert "a tern data partition alone" in out and "rows: retained 51" in out, out


def test_4096_byte_blocks(tmp_path):
    path = make_disk(tmp_path, lb="4096")
    rc, out = tdisk("inspect", path)
    assert rc == 0 and "4096-byte blocks" in out and "integrity_check: ok" in out, out


def test_damaged_database_page_fails_verify(tmp_path):
    path = make_disk(tmp_path)
    _, regions, _ = layout(path)
    # data starts after the two header copies (512-byte physical blocks);
    # page 2 onward holds the tables' b-trees
    patch(path, regions["database"] + 1024 + 4096 * 2, b"\xa5" * 4096 * 3)
    rc, out = tdisk("verify", path)
    assert rc == 1 and "problem: database" in out and "CORRUPT" in out, out


def test_damaged_backup_fails_verify(tmp_path):
    path = make_disk(tmp_path)
    _, regions, _ = layout(path)
    patch(path, regions["backup A"] + 1024 + 4096 * 2, b"\x5a" * 4096 * 3)
    rc, out = tdisk("verify", path)
    assert rc == 1 and "problem: backup A" in out, out


def test_damaged_superblock_slot_is_a_problem(tmp_path):
    path = make_disk(tmp_path)
    part, _, _ = layout(path)
    patch(path, part + 100, b"\xff")
    rc, out = tdisk("verify", path)
    assert rc == 1 and "problem: superblock A is unusable (CRC32 mismatch" in out, out


def test_damaged_primary_gpt_uses_the_backup_and_fails_verify(tmp_path):
    path = make_disk(tmp_path)
    patch(path, 512 + 40, b"\x01\x02")
    rc, out = tdisk("inspect", path)
    assert rc == 1 and "primary GPT at LBA 1 is unusable" in out, out
    assert "using the backup copy" in out and "integrity_check: ok" in out, out


def test_header_copy_of_another_region_is_a_problem(tmp_path):
    path = make_disk(tmp_path)
    _, regions, _ = layout(path)
    # backup B's copy 0 replaced by backup A's copy 0: valid, but foreign
    patch(path, regions["backup B"], read(path, regions["backup A"], 512))
    rc, out = tdisk("verify", path)
    assert rc == 1 and "backup B region" in out and "another region" in out, out


def test_torn_header_copy_is_a_note_not_a_problem(tmp_path):
    path = make_disk(tmp_path)
    _, regions, _ = layout(path)
    # the WAL's copy not in use (its sequence is the lower) gets a bad
    # checksum, as a cut header write leaves it
    rc, out = tdisk("inspect", path)
    wal = out.split("WAL        offset")[1]
    unused = 1 if "header copy 0: sequence" in wal.split("header copy 1")[0] and \
        "(in use)" in wal.split("header copy 1")[0] else 0
    patch(path, regions["WAL"] + 512 * unused + 30, b"\xee")
    rc, out = tdisk("verify", path)
    assert rc == 0 and f"note: WAL region: header copy {unused} is torn" in out, out


def test_exit_codes_for_usage_unreadable_and_foreign(tmp_path):
    rc, out = run(TDISK)
    assert rc == 2, out
    rc, out = run(TDISK, "frobnicate", "x")
    assert rc == 2, out
    rc, out = tdisk("verify", str(tmp_path / "missing.img"))
    assert rc == 3 and "No such file" in out, out
    junk = tmp_path / "junk.img"
    junk.write_bytes(b"not a disk" * 100000)
    rc, out = tdisk("verify", str(junk))
    assert rc == 1 and "no GPT and no tern superblock" in out, out


def test_truncated_image_cannot_be_read_or_is_refused(tmp_path):
    path = make_disk(tmp_path)
    with open(path, "r+b") as f:
        f.truncate(80 * MIB)  # inside the database region, backups gone
    rc, out = tdisk("verify", path)
    assert rc in (1, 3) and "clean" not in out.splitlines()[-1], out


def test_telemetry_journal_summary_and_damaged_segment(tmp_path):
    path = make_disk(tmp_path, fill=False)
    rc, out = run(FIXTURE, path, "5", "1", "--tele", "3000")
    assert rc == 0, out
    _, regions, out = layout(path)
    assert "segments 1..5 live" in out and "3000 records" in out, out
    assert '"kind":"stats","record":3000' in out, out
    # segment 1 (slot 0) starts after the two head copies (32 KiB apart
    # with 512-byte physical blocks: DISK.md, "Inside the telemetry region")
    patch(path, regions["telemetry"] + 64 * 1024 + 20, b"\xff\xff")
    rc, out = tdisk("verify", path)
    assert rc == 1 and "problem: telemetry: live segment 1 is unusable" in out, out


def digest(out, which="database"):
    block = out.split(f"\n{which} (")[1]
    return block.split("content digest ")[1].split()[0]


def test_v2_disk_verifies_with_a_note_and_v3_is_current(tmp_path):
    v2 = make_disk(tmp_path, "v2.img", extra=("--v2",))
    rc, out = tdisk("verify", v2)
    assert rc == 0 and "note: layout v2 is older than this release's v3" in out, out
    rc, out = tdisk("inspect", v2)
    assert "in use: superblock B, layout v2" in out and "page checksums: no" in out, out
    v3 = make_disk(tmp_path, "v3.img")
    rc, out = run(TDISK, "migrate", v3)
    assert rc == 0 and "layout v3 is current: nothing to migrate" in out, out
    rc, out = tdisk("inspect", v3)
    assert "page checksums: yes (8 reserve bytes, all verified)" in out, out


def test_migrate_dry_run_writes_nothing_and_apply_keeps_the_rows(tmp_path):
    path = make_disk(tmp_path, extra=("--v2",))
    rc, before = tdisk("inspect", path)
    assert rc == 0, before
    h = sha(path)
    rc, out = run(TDISK, "migrate", path)
    assert rc == 0 and "plan (layout v2" in out and "dry run: nothing written" in out, out
    assert sha(path) == h
    rc, out = run(TDISK, "migrate", "--apply", path)
    assert rc == 0 and "4. switched:" in out and "6. emptied backup B" in out, out
    rc, after = tdisk("verify", path)
    assert rc == 0 and "note:" not in after, after
    rc, after = tdisk("inspect", path)
    assert "superblock A: valid, layout v3" in after and "superblock B: valid, layout v3" in after
    assert after.count("page checksums: yes (8 reserve bytes, all verified)") == 2, after
    assert "log: empty" in after and "backup B: no copy" in after, after
    # the commit the WAL held was checkpointed first: the same rows
    assert digest(after) == digest(before), (before, after)
    assert digest(after, "backup A") == digest(before), after
    rc, out = run(TDISK, "migrate", path)
    assert rc == 0 and "layout v3 is current" in out, out


def test_migrate_refuses_a_disk_that_does_not_verify(tmp_path):
    path = make_disk(tmp_path, extra=("--v2",))
    part, _, _ = layout(path)
    patch(path, part + 100, b"\xff")
    h = sha(path)
    rc, out = run(TDISK, "migrate", "--apply", path)
    assert rc == 1 and "not migrated: verify finds 1 problem" in out, out
    assert sha(path) == h


def test_checksummed_page_damage_is_found(tmp_path):
    """A byte in a page's unused space: integrity_check alone passes it on a
    v2 disk, the page checksum of v3 finds it."""
    for name, extra in (("v2.img", ("--v2",)), ("v3.img", ())):
        # no commit left in the WAL: the database file's pages are read
        path = make_disk(tmp_path, name, extra=extra, wal=False)
        _, regions, _ = layout(path)
        patch(path, regions["database"] + 1024 + 4096 * 3 + 2000, b"\x01")
        rc, out = tdisk("verify", path)
        if name == "v2.img":
            assert rc == 0, out
        else:
            assert rc == 1 and "problem: database" in out, out
