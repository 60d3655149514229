"""The store thread (issue 13: a commit waiting for the disk must not stop
the network), with timing no disk gives reliably: the test build's store double
(tern.teststore, store/kstore_test.h) makes every commit wait like a disk
request, or compute like SQLite's virtual machine, for 400 ms. A retained
QoS 1 message is acknowledged only after its commit, while a bystander's
PINGREQ round trips and a QoS 1 message nothing durable depends on are
answered at once; $SYS shows the commits. Without a disk with a tern data
partition (none, or a zeroed one, which stays untouched) and without the
double the broker says it keeps everything in memory.

With -smp 2 the store thread runs on CPU 1, the storage core (ADR-064):
the compute-bound double's commits then leave CPU 0 alone altogether, the
acknowledgement still waits for its commit, and removing a mapping once
CPU 1 runs halts the machine (paging's check in place of a shootdown).
"""
import re
import time

from clients import PINGREQ, PINGRESP, raw_client, recv_exact
from harness import MQTT_CONF, Failure, disk_image, drive, expect_lines, nic, module_vm, \
    free_port, scratch, show, write_file

# CPU 1's line once it runs the store (ADR-064), and paging's refusal of an
# unmap while it does.
STORAGE_CORE = b"tern: smp: CPU 1: storage core running"
UNMAP_PANIC = b"paging: a mapping removed while another CPU runs (no TLB shootdown)"
COMMIT_MS = 400
# Far below a commit: the network is served during it. Generous for TCG.
BYSTANDER_MAX_S = 0.2


def publish(topic, payload, pid, retain):
    t, p = topic.encode(), payload.encode()
    body = len(t).to_bytes(2, "big") + t + pid.to_bytes(2, "big") + p
    return bytes([0x32 | (1 if retain else 0), len(body)]) + body


def puback_after(sock, packet, pid):
    """Send a QoS 1 PUBLISH; seconds until its PUBACK."""
    t0 = time.monotonic()
    sock.sendall(packet)
    ack = recv_exact(sock, 4)
    if ack != bytes([0x40, 2]) + pid.to_bytes(2, "big"):
        raise Failure(f"expected PUBACK {pid}, got {ack.hex()}")
    return time.monotonic() - t0


def ping_rtt(sock):
    t0 = time.monotonic()
    sock.sendall(PINGREQ)
    if recv_exact(sock, 2) != PINGRESP:
        raise Failure("no PINGRESP")
    return time.monotonic() - t0


def sys_value(port, topic, timeout=10):
    """A retained $SYS value (sys.public in MQTT_CONF)."""
    s = raw_client(port, "sys-reader")
    t = topic.encode()
    body = b"\x00\x01" + len(t).to_bytes(2, "big") + t + b"\x00"
    s.sendall(bytes([0x82, len(body)]) + body)
    s.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data += s.recv(4096)
        i = data.find(t)
        if i >= 0 and len(data) > i + len(t):
            # PUBLISH QoS 0: the payload runs to the end of the packet.
            start = data.rfind(b"\x31", 0, i - 2)
            if start < 0:
                start = data.rfind(b"\x30", 0, i - 2)
            length = data[start + 1]
            end = start + 2 + length
            if len(data) >= end:
                s.close()
                return data[i + len(t):end].decode()
    s.close()
    raise Failure(f"{topic} not received")


def commit_wait_test(kernel, mode, smp=1):
    """With every commit taking COMMIT_MS (a disk wait or CPU work), the
    retained message's PUBACK waits for its commit and the bystander is
    served meanwhile. With smp 2 the store thread runs on CPU 1 (ADR-064):
    the batch crosses to it and the result comes back to CPU 0."""
    def check():
        with scratch() as tmp:
            port = free_port()
            vm = module_vm(kernel, write_file(tmp, "tern.conf", MQTT_CONF),
                           nic(f"hostfwd=tcp:127.0.0.1:{port}-:1883"),
                           ["-append", f"tern.teststore={mode}:{COMMIT_MS}", "-smp", str(smp)])
            with vm:
                took, out = vm.wait_ready(60)
                expect_lines(out, (rb"tern: store: TEST store double \(tern\.teststore=" +
                                   mode.encode() + rb":\d+\): commits keep nothing",
                                   rb"tern: store: ok, 0 commits"))
                if smp >= 2 and vm.wait_for(lambda o: STORAGE_CORE in o, 20) is None:
                    raise Failure("the store thread did not move to CPU 1:\n"
                                  + show(vm.text()[-2000:]))
                try:
                    pub = raw_client(port, "publisher")
                    by = raw_client(port, "bystander")
                    pub.settimeout(10)
                    # A QoS 1 message nothing durable depends on: at once.
                    quick = puback_after(pub, publish("plain/t", "x", 1, False), 1)
                    # A retained one: after its commit, while the bystander is served.
                    t0 = time.monotonic()
                    pub.sendall(publish("ret/t", "kept", 2, True))
                    rtts = []
                    while time.monotonic() - t0 < COMMIT_MS / 1000 * 0.75:
                        rtts.append(ping_rtt(by))
                    ack = recv_exact(pub, 4)
                    held = time.monotonic() - t0
                    if ack != b"\x40\x02\x00\x02":
                        raise Failure(f"expected PUBACK 2, got {ack.hex()}")
                    time.sleep(2)  # counters follow at the next $SYS refresh (1 s)
                    commits = int(sys_value(port, "$SYS/broker/store/commits", 15))
                    state = sys_value(port, "$SYS/broker/store/state")
                except OSError as e:
                    raise Failure(f"{e!r}; serial output ends:\n{show(vm.text()[-2000:])}")
                vm.expect_no_fatal()
        if held < COMMIT_MS / 1000 * 0.9:
            raise Failure(f"retained PUBACK after {held * 1000:.0f} ms, before its "
                          f"{COMMIT_MS} ms commit")
        if quick > BYSTANDER_MAX_S:
            raise Failure(f"a PUBACK that waits for nothing took {quick * 1000:.0f} ms")
        if len(rtts) < 3 or max(rtts) > BYSTANDER_MAX_S:
            raise Failure(f"bystander PINGREQ round trips during the commit: "
                          f"{[round(r * 1000) for r in rtts]} ms")
        if commits < 1 or state != "ok":
            raise Failure(f"$SYS store: commits {commits}, state {state!r}")
        return (f"ready {took:.1f} s; PUBACK held {held * 1000:.0f} ms for a {COMMIT_MS} ms "
                f"commit; {len(rtts)} bystander round trips meanwhile, max "
                f"{max(rtts) * 1000:.0f} ms; unheld PUBACK {quick * 1000:.0f} ms; "
                f"$SYS commits {commits}")
    return check


def unmap_after_handover_test(kernel):
    """Once CPU 1 runs the store, removing a mapping would need a TLB
    shootdown this kernel does not have: paging's check (always on) halts
    the machine with the reason instead (test hook tern.test.unmap=shared:
    one vm_unmap right after the hand-over)."""
    def check():
        with scratch() as tmp:
            port = free_port()
            vm = module_vm(kernel, write_file(tmp, "tern.conf", MQTT_CONF),
                           nic(f"hostfwd=tcp:127.0.0.1:{port}-:1883"),
                           ["-append", "tern.teststore=wait:10 tern.test.unmap=shared",
                            "-smp", "2"])
            with vm:
                took = vm.wait_for(lambda o: UNMAP_PANIC in o, 90)
                out = vm.text()
            if took is None:
                raise Failure("no halt on an unmap after the hand-over:\n" + show(out[-2000:]))
            expect_lines(out, (re.escape(STORAGE_CORE),))
        return f"halted after {took:.1f} s"
    return check


def all_zero(path):
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            if chunk.count(0) != len(chunk):
                return False
    return True


def ram_only_test(kernel, zeroed_disk):
    """No disk with a tern data partition and no double: the broker says
    its data lives in memory. With a zeroed disk attached (no GPT), the
    disk is counted and left alone: every byte stays zero."""
    def check():
        with scratch() as tmp:
            disks, img = [], None
            if zeroed_disk:
                img = disk_image(tmp, "zero.img")
                disks = drive(img, "d0")
            port = free_port()
            vm = module_vm(kernel, write_file(tmp, "tern.conf", MQTT_CONF),
                           nic(f"hostfwd=tcp:127.0.0.1:{port}-:1883"), disks)
            with vm:
                took, out = vm.wait_ready(60)
            expect_lines(out, (rb"tern: store: no disk with a tern data partition \(%d disks\): "
                               rb"retained messages and sessions live in memory only"
                               % (1 if zeroed_disk else 0),))
            if img and not all_zero(img):
                raise Failure("the zeroed disk was written")
        return f"{took:.1f} s"
    return check


def cases(b):
    return {
        "store-ram-only-without-disk": ram_only_test(b.elf, False),
        "store-ram-only-zeroed-disk-untouched": ram_only_test(b.elf, True),
        "store-commit-waiting-for-disk-does-not-stop-network":
            commit_wait_test(b.test_elf, "wait"),
        "store-long-commit-yields-to-network": commit_wait_test(b.test_elf, "cpu"),
        "store-smp2-storage-core-commit-on-cpu1-does-not-stop-network":
            commit_wait_test(b.test_elf, "cpu", smp=2),
        "store-smp2-unmap-after-handover-halts": unmap_after_handover_test(b.test_elf),
    }
