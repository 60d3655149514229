"""The disk scrubber (issue 14, SPEC D6) on the production kernel over
mutual TLS, its disk made by tern-mkdisk (512-byte blocks).

- A live store is scrubbed with no finding (a pass while commits, a backup
  and the WAL are in use: no false positives).
- One byte flipped, under the running broker, in each region kind -
  superblock slot B, the GPT backup header, the database region's second
  header copy, a database page's payload, a page of backup A, a frame
  inside the WAL, a record of the telemetry journal - is found by the next
  pass: one console line each naming
  the region, and $SYS/broker/store/scrub/corrupt and last_corrupt say so;
  the broker serves meanwhile (the $SYS and retained reads go through it).
  The same again at -smp 2, where the store thread (and so the scrubber,
  its backups and its $SYS status) runs on CPU 1, the storage core.
- A byte flipped in a database page of the stopped image (its WAL emptied)
  is caught at boot before any scrub: the store's quick_check reads the
  page through the checksum layer, fails, and the newest backup replaces
  the database; the retained messages it held are there.
"""
import re
import time

from clients import mosq
from harness import MTLS_CONF, Failure, drive, patch, scratch, show
from test_store_disk import SLOT_B, DiskBroker, mkdisk, region

# A pass every 2 s at 64 MiB/s: the whole 64 MiB image's files in well under a second.
FAST = MTLS_CONF + "store.backup_interval = 1\nstore.scrub_rate = 65536\nstore.scrub_interval = 2\n"
BLOCK = 512  # logical and physical block of drive()'s default virtio-blk
PAGE = 4096  # SQLite's page size in the store


def wait(vm, pattern, timeout, what):
    """The console once pattern is on it (timeout: seconds from the boot)."""
    if vm.wait_for(lambda o: re.search(pattern, o) is not None, timeout) is None:
        raise Failure(f"no {what}:\n" + show(vm.text()))
    return vm.text()


def sys_value(db, topic):
    operator = db.pki.args("dev-operator")
    return mosq("mosquitto_sub", db.port, "-t", "$SYS/broker/store/scrub/" + topic, "-C", "1",
                "-W", "20", tls=operator).strip()


def flip(img, off):
    with open(img, "rb") as f:
        f.seek(off)
        b = f.read(1)
    patch(img, off, bytes([b[0] ^ 0x10]))


def prepare(build, tmp, vm_body, smp=1):
    """Boot an image, store retained messages, wait for backups A and B and
    a clean scrub pass (the live store: no false positives), then run
    vm_body(db, vm, img, part) with the VM still running. With smp 2 the
    store thread, and so the scrubber, runs on CPU 1 (ADR-064)."""
    img, part = mkdisk(build, tmp)
    db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"), FAST, smp=smp)
    with db.boot() as vm:
        db.ready(vm)
        for i in range(3):
            db.pub(f"test/ret/{i}", f"message {i} " + "x" * 3000, 1, retain=True)
        wait(vm, rb"backup 1 to /tern\.db\.bak-a complete", 60, "backup A")
        for i in range(3, 8):
            db.pub(f"test/ret/{i}", f"message {i} " + "y" * 3000, 1, retain=True)
        wait(vm, rb"backup 2 to /tern\.db\.bak-b complete", 60, "backup B")
        before = vm.text().count(b"tern: scrub: pass")
        out = wait(vm, rb"(tern: scrub: pass [^\n]*\n[^\0]*){%d}" % (before + 1), 60,
                   "a scrub pass after the backups")
        if b"DAMAGE" in out or not re.search(rb"pass \d+ done in \d+ ms: 0 damaged", out):
            raise Failure("the live store's pass found damage:\n" + show(out))
        return vm_body(db, vm, img, part)


def regions_test(build, smp=1):
    """With the store quiet (no commit, no backup due), one byte is flipped
    in the running VM's image file (QEMU reads through the host's page
    cache: this is the disk going bad under a live broker) in each of six
    region kinds; the next pass names every one."""
    def body(db, vm, img, part):
        with open(img, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
        dbr, _ = region(build, img, "database")
        bak, _ = region(build, img, "backup A")
        wal, _ = region(build, img, "WAL")
        tel, _ = region(build, img, "telemetry")
        flips = {
            "superblock B": part + SLOT_B + 100,
            "GPT backup": size - BLOCK + 60,
            "database": dbr + BLOCK + 30,  # its second region header copy
            "backup A": bak + 2 * BLOCK + PAGE + 2000,  # page 2's payload
            "WAL": wal + 2 * BLOCK + 32 + (PAGE + 24) + 24 + 500,  # frame 2's page
            # the journal's segment 1 (after two 32 KiB head slots): record 1's
            # payload (the boot record; the backups' records follow it)
            "telemetry": tel + 64 * 1024 + 64 + 24 + 10,
        }
        for off in flips.values():
            flip(img, off)
        flip(img, dbr + 2 * BLOCK + PAGE - 300)  # database page 1's payload (the schema)
        done = vm.text().count(b"tern: scrub: pass")
        out = wait(vm, rb"(tern: scrub: pass [^\n]*\n[^\0]*){%d}" % (done + 1), 60,
                   "the pass after the flips")
        for name in flips:
            if not re.search(rb"tern: scrub: DAMAGE in %s at byte \d+: " %
                             re.escape(name.encode()), out):
                raise Failure(f"no DAMAGE line for {name}:\n" + show(out))
        if not re.search(rb"DAMAGE in database at byte 0: page 1: checksum mismatch", out):
            raise Failure("no DAMAGE line for database page 1:\n" + show(out))
        if not re.search(rb"ms: 7 damaged places found so far", out):
            raise Failure("the pass did not count 7:\n" + show(out))
        for _ in range(10):  # $SYS goes out every second: the pass may be newer
            corrupt = sys_value(db, "corrupt")
            last = sys_value(db, "last_corrupt")
            if int(corrupt) >= 7:
                break
            time.sleep(1)
        if int(corrupt) < 7 or not last.startswith("telemetry, byte"):
            raise Failure(f"$SYS scrub: corrupt {corrupt!r}, last_corrupt {last!r}")
        db.expect_retained("test/ret/0", {"test/ret/0": "message 0 " + "x" * 3000})
        vm.stop()
        return "7 region kinds named on the console and in $SYS; serving"

    def check():
        with scratch() as tmp:
            return prepare(build, tmp, body, smp)
    return check


def database_page_test(build):
    """A byte flipped in a database page of the stopped image, with the WAL
    emptied (so the page is read from the database file): the boot's
    quick_check reads it through the checksum layer, fails, and the newest
    backup replaces the database."""
    def body(db, vm, img, part):
        db.quit(vm)
        dbr, _ = region(build, img, "database")
        wal, _ = region(build, img, "WAL")
        flip(img, dbr + 2 * BLOCK + PAGE + PAGE - 200)  # page 2, near its end
        patch(img, wal + 2 * BLOCK, bytes(32))  # no WAL header: an empty log
        with db.boot() as vm2:
            out = db.ready(vm2)
            if not re.search(rb"quick_check failed; replaced by backup [ab]", out):
                raise Failure("no restore:\n" + show(out))
            db.expect_retained("test/ret/0", {"test/ret/0": "message 0 " + "x" * 3000})
            vm2.stop()
        return "quick_check failed on the flipped page, the newest backup restored"

    def check():
        with scratch() as tmp:
            return prepare(build, tmp, body)
    return check


def cases(b):
    return {
        "scrub-finds-a-flipped-byte-in-every-region-kind-live": regions_test(b),
        "scrub-smp2-storage-core-finds-a-flipped-byte-in-every-region-kind-live":
            regions_test(b, smp=2),
        "scrub-flipped-database-page-fails-the-boot-check-backup-restored": database_page_test(b),
    }
