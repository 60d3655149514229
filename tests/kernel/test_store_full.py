"""A full database region (docs/STORE.md, "Failures"): the production
kernel on the smallest disk the layout takes (a 4 MiB database region),
one publisher sending 60 kB retained QoS 1 messages to new topics until
the broker stops acknowledging and closes it - the database has no room,
the commit fails before it reaches the log, the PUBACK is withheld -
while $SYS/broker/store/state reads "full" for an operator. The power is
cut (QEMU killed), and the next boot serves (no halt on the checkpoint,
the bug this replaces) with every acknowledged message there byte for
byte.

SQLite's own heap used up (ADR-069): the test kernel at -smp 2 with that
heap cut to 2 MiB (tern.test.sqlheap_kib), the same 60 kB retained QoS 1
messages until a PUBACK is withheld: the allocation that does not fit
fails, SQLite reports SQLITE_NOMEM, the store's commit fails ("commits
fail" on the console, $SYS/broker/store/state "failing") and the kernel
goes on serving; no fatal error.
"""
import re
import time

from clients import next_packet, mosq, rm
from harness import Failure, drive, scratch, show
from test_store_disk import DiskBroker, mkdisk

PAYLOAD = 60000
MAX_MESSAGES = 400  # far more than 4 MiB holds
STATE_TRIES = 10


def publish_until_withheld(db, prefix, fill):
    """60 kB retained QoS 1 messages to new topics under prefix, one at a
    time, until a PUBACK is withheld (the commit failed: the publisher is
    closed) or MAX_MESSAGES went through; how many were acknowledged."""
    c, _ = db.raw("filler")
    acked = 0
    try:
        for n in range(1, MAX_MESSAGES + 1):
            body = (b"%06d" % n) + fill * (PAYLOAD - 6)
            next_packet(c, rm.PUBACK, f"PUBACK {n}", 30,
                        rm.publish(f"{prefix}/{n}", body, qos=1, retain=True, pid=n))
            acked = n
    except Failure:
        pass  # no PUBACK: the publisher was closed
    finally:
        c.close()
    return acked


def full_test(build):
    def check():
        with scratch() as tmp:
            img, _ = mkdisk(build, tmp, size="24M")
            db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"))
            with db.boot() as vm:
                out = db.ready(vm)
                if not re.search(rb"partition #1, layout v\d+ [^\n]*; database 4 MiB", out):
                    raise Failure("not a 4 MiB database region:\n" + show(out))
                if not re.search(rb'tern: store: data partition: virtio-blk [^\n]* partition #1 '
                                 rb'"tern-data" [0-9a-f-]{36}, 22 MiB\r?\n', out):
                    raise Failure("no data partition line:\n" + show(out))
                acked = publish_until_withheld(db, "test/full", b"x")
                if not 20 <= acked < MAX_MESSAGES:
                    raise Failure(f"{acked} messages acknowledged:\n{show(vm.text()[-3000:])}")
                # "failing" at once, "full" once the store's counters follow
                for _ in range(STATE_TRIES):
                    state = mosq("mosquitto_sub", db.port, "-t", "$SYS/broker/store/state",
                                 "-C", "1", "-W", "20", tls=db.pki.args("dev-operator")).strip()
                    if state == "full":
                        break
                    time.sleep(1)
                if state != "full":
                    raise Failure(f"$SYS/broker/store/state is {state!r}, not 'full':\n"
                                  f"{show(vm.text()[-3000:])}")
                vm.stop()  # the power cut
            with db.boot() as vm:
                out = db.ready(vm)
                got = db.retained("test/full/#", acked)
                vm.expect_no_fatal()
            want = {f"test/full/{n}": ("%06d" % n) + "x" * (PAYLOAD - 6)
                    for n in range(1, acked + 1)}
            if got != want:
                missing = sorted(set(want) - set(got))
                raise Failure(f"after the cut: {len(got)} of {acked} acknowledged retained "
                              f"messages; missing {missing[:5]}")
        return (f"{acked} x 60 kB acknowledged, then withheld, $SYS state full; after a power "
                f"cut the next boot serves all {acked}")
    return check


def sqlheap_test(build):
    def check():
        with scratch() as tmp:
            img, _ = mkdisk(build, tmp)
            db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"), smp=2)
            with db.boot(kernel=build.test_elf, append="tern.test.sqlheap_kib=2048") as vm:
                db.ready(vm)
                if b"in one piece for SQLite's own heap" in vm.text():
                    raise Failure("SQLite did not get its own heap:\n" + show(vm.text()))
                acked = publish_until_withheld(db, "test/heap", b"y")
                if acked >= MAX_MESSAGES:
                    raise Failure(f"all {acked} x 60 kB acknowledged within a 2 MiB SQLite "
                                  f"heap:\n{show(vm.text()[-3000:])}")
                deadline = time.monotonic() + 30
                while b"tern: store: commits fail" not in vm.text():
                    if time.monotonic() > deadline:
                        raise Failure("no failed commit reported:\n" + show(vm.text()[-3000:]))
                    time.sleep(0.2)
                state = mosq("mosquitto_sub", db.port, "-t", "$SYS/broker/store/state",
                             "-C", "1", "-W", "20", tls=db.pki.args("dev-operator")).strip()
                if state not in ("failing", "full"):
                    raise Failure(f"$SYS/broker/store/state is {state!r}:\n"
                                  f"{show(vm.text()[-3000:])}")
                vm.expect_no_fatal()
        return (f"{acked} x 60 kB acknowledged in a 2 MiB SQLite heap, then a failed commit "
                f"(state {state}); the kernel served on")
    return check


def cases(b):
    return {"store-full-database-region-withholds-acks-and-next-boot-serves": full_test(b),
            "store-smp2-sqlite-heap-used-up-fails-commits-not-the-kernel": sqlheap_test(b)}
