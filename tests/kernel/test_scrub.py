"""The disk scrubber (issue 14, SPEC D6) on the production kernel over
mutual TLS, its disk made by tern-mkdisk (512-byte blocks).

- A live store is scrubbed with no finding (a pass while commits, a backup
  and the WAL are in use: no false positives).
- One byte flipped in each of five region kinds of the stopped image -
  superblock slot B, the GPT backup header, the database region's second
  header copy, a page of backup A, a frame inside the WAL - is found at the
  next boot's first pass: one console line each naming the region, and
  $SYS/broker/store/scrub/corrupt and last_corrupt say so; the broker
  serves meanwhile (the $SYS reads go through it).
- A byte flipped inside a database page's payload is caught before the
  scrubber: the store's quick_check at boot reads the page through the
  checksum layer, fails, and the newest backup replaces the database; the
  retained messages it held are there.
"""
import re

from clients import mosq
from harness import MTLS_CONF, Failure, drive, patch, scratch, show
from test_store_disk import SLOT_B, DiskBroker, mkdisk, region

# A pass every 2 s at 64 MiB/s: the whole 64 MiB image's files in well under a second.
FAST = MTLS_CONF + "store.backup_interval = 1\nstore.scrub_rate = 65536\nstore.scrub_interval = 2\n"
BLOCK = 512  # logical and physical block of drive()'s default virtio-blk
PAGE = 4096  # SQLite's page size in the store


def wait(vm, pattern, timeout, what):
    out = vm.wait_for(lambda o: re.search(pattern, o) is not None, timeout)
    if out is None:
        raise Failure(f"no {what}:\n" + show(vm.text()))
    return out


def sys_value(db, topic):
    operator = db.pki.args("dev-operator")
    return mosq("mosquitto_sub", db.port, "-t", "$SYS/broker/store/scrub/" + topic, "-C", "1",
                "-W", "20", tls=operator).strip()


def prepare(build, tmp):
    """An image whose store holds retained messages, backup A and a WAL of
    several commits, stopped (QMP quit: the WAL is not checkpointed away);
    the live pass on the way found nothing."""
    img, part = mkdisk(build, tmp)
    db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"), FAST)
    with db.boot() as vm:
        db.ready(vm)
        for i in range(3):
            db.pub(f"test/ret/{i}", f"message {i} " + "x" * 3000, 1, retain=True)
        wait(vm, rb"backup 1 to /tern\.db\.bak-a complete", 60, "backup")
        for i in range(3, 8):
            db.pub(f"test/ret/{i}", f"message {i} " + "y" * 3000, 1, retain=True)
        out = wait(vm, rb"tern: scrub: pass \d+ done in \d+ ms: \d+ damaged", 60, "scrub pass")
        if b"DAMAGE" in out or not re.search(rb"pass \d+ done in \d+ ms: 0 damaged", out):
            raise Failure("the live store's pass found damage:\n" + show(out))
        db.quit(vm)
    return img, part, db


def regions_test(build):
    def check():
        with scratch() as tmp:
            img, part, db = prepare(build, tmp)
            with open(img, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
            dbr, _ = region(build, img, "database")
            bak, _ = region(build, img, "backup A")
            wal, _ = region(build, img, "WAL")
            flips = {
                "superblock B": part + SLOT_B + 100,
                "GPT backup": size - BLOCK + 60,
                "database": dbr + BLOCK + 30,  # its second region header copy
                "backup A": bak + 2 * BLOCK + PAGE + 2000,  # page 2's payload
                "WAL": wal + 2 * BLOCK + 32 + (PAGE + 24) + 24 + 500,  # frame 2's page
            }
            for off in flips.values():
                with open(img, "rb") as f:
                    f.seek(off)
                    b = f.read(1)
                patch(img, off, bytes([b[0] ^ 0x10]))
            with db.boot() as vm:
                out = wait(vm, rb"tern: scrub: pass 1 done in \d+ ms", 90, "first pass")
                for name in flips:
                    if not re.search(rb"tern: scrub: DAMAGE in %s at byte \d+: " %
                                     re.escape(name.encode()), out):
                        raise Failure(f"no DAMAGE line for {name}:\n" + show(out))
                if not re.search(rb"pass 1 done in \d+ ms: 5 damaged", out):
                    raise Failure("the pass did not count 5:\n" + show(out))
                corrupt = sys_value(db, "corrupt")
                last = sys_value(db, "last_corrupt")
                if int(corrupt) < 5 or not last.startswith(b"WAL, byte"):
                    raise Failure(f"$SYS scrub: corrupt {corrupt!r}, last_corrupt {last!r}")
                vm.stop()
        return "5 regions named on the console and in $SYS, broker serving"
    return check


def database_page_test(build):
    def check():
        with scratch() as tmp:
            img, part, db = prepare(build, tmp)
            dbr, _ = region(build, img, "database")
            off = dbr + 2 * BLOCK + PAGE + PAGE - 200  # page 2, near its end
            with open(img, "rb") as f:
                f.seek(off)
                b = f.read(1)
            patch(img, off, bytes([b[0] ^ 0x10]))
            with db.boot() as vm:
                out = db.ready(vm)
                if not re.search(rb"quick_check failed; replaced by backup [ab]", out):
                    raise Failure("no restore:\n" + show(out))
                db.expect_retained("test/ret/0", {"test/ret/0": "message 0 " + "x" * 3000})
                vm.stop()
        return "quick_check failed on the flipped page, the newest backup restored"
    return check


def cases(b):
    return {
        "scrub-finds-a-flipped-byte-in-five-region-kinds": regions_test(b),
        "scrub-flipped-database-page-fails-the-boot-check-backup-restored": database_page_test(b),
    }
