#!/usr/bin/env python3
"""Kernel boot tests under QEMU (TCG): tern boots, reports readiness, and
turns every fatal fault into a clear report followed by a reset.

Boots build/kernel/tern.elf directly (qemu -kernel, PVH), the test build
tern-test.elf with tern.test=NAME (deliberate faults), and build/tern.iso
under SeaBIOS and OVMF (GRUB multiboot2). The network tests boot the test
build with virtio-net (QEMU user networking, a host port forwarded to the
echo service on port 7) and virtio-rng, check the DHCP lease and the seeded
RNG on the ready line, and push data through the echo service, verified
byte for byte; the entropy test boots without virtio-rng, RDRAND or RDSEED
so that only the jitter source can seed. The broker tests boot the test
build with a configuration as a boot module (-initrd, which PVH passes in
its module list), forward a host port to the guest's 1883 and use the
unmodified mosquitto_pub/mosquitto_sub clients and raw sockets; a
configuration with an unknown key must halt the kernel with the parser's
message. The interface tests boot with a static address (net.ipv4,
net.gateway), with the NIC's MSI-X taken away (polling fallback) and on
both q35 (ECAM from the ACPI MCFG table) and i440fx (legacy configuration
ports). The ISO tests also read the screen: QEMU's screendump (over QMP),
decoded cell by cell with the kernel's own font, must show the same lines
as serial - the ready line, and, from a test ISO that faults, the fatal
report. The mutual-TLS tests boot the production kernel with a boot bundle
made by the image builder (tern-bundle) from a configuration and the dev
PKI (build/pki), forward the guest's 8883, and use mosquitto_pub/sub, Paho
and Python's ssl with client certificates; bundles with a missing or bad
certificate, an unknown key or a newer format must halt the kernel with
the reason. The crypto self-tests run at every boot; test builds can force
one to fail (tern.katfail=NAME), which must stop the broker from starting.
Each VM's serial console is read
until the expected lines appear or a deadline passes. A reset is proven by
the kernel's boot banner appearing a second time (QEMU restarts the VM).

Usage: run.py [--build DIR] [-k SUBSTRING] [-j JOBS]
"""
import argparse
import concurrent.futures
import os
import random
import re
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

OVMF = "/usr/share/ovmf/OVMF.fd"
BANNER = b"tern: booting"
# The whole line: a test that stops reading at its start may cut it short.
READY = re.compile(rb"tern: ready \(boot (\w+)[^\n]*\n")
# The ISO's GRUB passes the development bundle (tools/image/tern.conf, its
# ACL and the dev PKI) as a multiboot2 module; the broker serves mTLS.
ISO_WANT = (rb"tern: config: bundle with 6 files from boot module \(\d+ bytes\); "
            rb"configuration tern\.conf",
            rb"tern: mqtt: mutual TLS port 8883, 0 connections")


class Vm:
    """A QEMU process whose serial output is collected in the background."""

    def __init__(self, args):
        cmd = ["qemu-system-x86_64", "-M", "q35", "-m", "256", "-display", "none",
               "-serial", "stdio", "-monitor", "none", "-no-user-config"] + args
        self.start = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.out = bytearray()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            chunk = self.proc.stdout.read1(4096)
            if not chunk:
                return
            with self.lock:
                self.out += chunk

    def text(self):
        with self.lock:
            return bytes(self.out)

    def wait_for(self, predicate, timeout):
        """Wait until predicate(output) is true; returns seconds taken or None."""
        deadline = self.start + timeout
        while time.monotonic() < deadline:
            if predicate(self.text()):
                return time.monotonic() - self.start
            if self.proc.poll() is not None:
                self.reader.join(1)
                return time.monotonic() - self.start if predicate(self.text()) else None
            time.sleep(0.05)
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(2)


class Failure(Exception):
    pass


def run_vm(args, predicate, timeout, what):
    vm = Vm(args)
    try:
        took = vm.wait_for(predicate, timeout)
        out = vm.text()
    finally:
        vm.stop()
    if took is None:
        tail = out[-1500:].decode("utf-8", "replace")
        raise Failure(f"{what} not seen within {timeout} s; serial output ends:\n{tail}")
    return took, out


def ready_test(args, loader, timeout, want=()):
    def check():
        took, out = run_vm(args, lambda o: READY.search(o) is not None, timeout,
                           "ready line")
        m = READY.search(out)
        if m.group(1).decode() != loader:
            raise Failure(f"booted via {m.group(1).decode()}, expected {loader}")
        if b"FATAL" in out:
            raise Failure("fatal report during boot")
        for w in want:
            if not re.search(w, out):
                raise Failure(f"{w!r} not in:\n{out.decode('utf-8', 'replace')}")
        line = out[m.start():].split(b"\n")[0].decode().strip()
        return f"{took:.1f} s: {line}"
    return check


def fault_test(kernel, name, exception, cause):
    """A deliberate fault must print the report, hold, reset and boot again."""
    def check():
        args = ["-kernel", kernel, "-append", f"tern.test={name}"]
        took, out = run_vm(args, lambda o: o.count(BANNER) >= 2, 30,
                           "fatal report followed by a reboot")
        first = out.split(BANNER)[1]
        text = first.decode("utf-8", "replace")
        if f"*** tern: FATAL: CPU exception: {exception}" not in text:
            raise Failure(f"no '{exception}' report in:\n{text}")
        if cause and f"*** tern: cause: {cause}" not in text:
            raise Failure(f"no cause '{cause}' in:\n{text}")
        if "*** tern: resetting in 1 s" not in text or "*** tern: reset" not in text:
            raise Failure(f"no hold-and-reset in:\n{text}")
        report = [l for l in text.splitlines() if l.startswith("***")]
        for line in report:
            # Production-style reports carry no addresses or register values.
            if re.search(r"0x|[0-9a-fA-F]{8,}", line):
                raise Failure(f"report line carries an address: {line}")
        return f"{took:.1f} s to reset and reboot"
    return check


def debug_dump_test(kernel):
    """Debug builds add a register dump to the report."""
    def check():
        args = ["-kernel", kernel, "-append", "tern.test=gpfault"]
        took, out = run_vm(args, lambda o: o.count(BANNER) >= 2, 30, "report and reboot")
        text = out.split(BANNER)[1].decode("utf-8", "replace")
        if not re.search(r"rip [0-9a-f]{16}", text) or "general protection" not in text:
            raise Failure(f"no register dump in:\n{text}")
        return f"{took:.1f} s"
    return check


def pci_test(kernel, machine="q35", access=rb"ECAM", extra=(), append=None):
    """Enumeration finds modern virtio devices (vendor 1af4, id 0x1040 + type)
    and the drivers use them: entropy from virtio-rng, an address by DHCP.
    q35 has an ACPI MCFG table, so configuration space is reached through
    ECAM; i440fx (pc) has none, so through the legacy ports."""
    def check():
        args = ["-kernel", kernel, "-M", machine, "-device", "virtio-rng-pci,disable-legacy=on",
                "-device", "virtio-net-pci,disable-legacy=on,netdev=n0",
                "-netdev", "user,id=n0"]
        if append:
            args += ["-append", append]
        took, out = run_vm(args, lambda o: READY.search(o) is not None, 20, "ready line")
        wants = [rb"tern: pci 00:0[0-9a-f]\.0 1af4:1044 class 00ff",
                 rb"tern: pci 00:0[0-9a-f]\.0 1af4:1041 class 0200",
                 rb"tern: pci: \d+ devices \(" + access,
                 rb"tern: ready .*rng: seeded, \d+ bits credited \(.*virtio-rng \d+",
                 rb"tern: ready .*net: 52:54:00:12:34:56 link up, dhcp 10\.0\.2\.15/24"]
        if machine == "q35":
            wants.append(rb"tern: pci 00:1f\.0 8086:2918 class 0601")
        for want in wants + list(extra):
            if not re.search(want, out):
                raise Failure(f"{want!r} not in:\n{out.decode('utf-8', 'replace')}")
        line = re.search(rb"tern: pci: (ECAM|legacy).*", out).group(0).decode()
        return f"{took:.1f} s: {line}"
    return check


def check_test(kernel, name):
    def check():
        args = ["-kernel", kernel, "-append", f"tern.test={name}"]
        took, out = run_vm(args, lambda o: READY.search(o) is not None, 30, "ready line")
        if f"selftest {name}: ok".encode() not in out:
            raise Failure(f"selftest {name} did not pass:\n{out.decode('utf-8', 'replace')}")
        return f"{took:.1f} s"
    return check


KAT_PASSED = rb"tern: crypto self-tests passed in [\d.]+ ms: sha-256 hmac-drbg aes-128-gcm " \
             rb"aes-256-gcm x25519 ecdsa-p256-verify ecdsa-p256-sign"


def kat_fail_test(kernel, name, cpu=None):
    """A known-answer test forced to fail (test builds: tern.katfail=NAME)
    is named on the console and the broker does not start; the kernel
    itself still comes up (no reset loop)."""
    def check():
        args = ["-kernel", kernel, "-append", f"tern.katfail={name}",
                "-device", "virtio-rng-pci",
                "-nic", "user,model=virtio-net-pci"] + (["-cpu", cpu] if cpu else [])
        took, out = run_vm(args, lambda o: READY.search(o) is not None, 30, "ready line")
        text = out.decode("utf-8", "replace")
        for want in (f"tern: crypto self-test FAILED: {name}: ",
                     "tern: crypto self-tests: 1 failed",
                     "tern: crypto self-test failed: the broker will not start"):
            if want not in text:
                raise Failure(f"{want!r} not in:\n{text}")
        if "tern: mqtt:" in text and "not serving" not in text:
            raise Failure(f"the broker started:\n{text}")
        return f"{took:.1f} s"
    return check


def mode_test(kernel, mode, title):
    def check():
        args = ["-kernel", kernel, "-append", f"tern.mode={mode}"]
        want = f"tern: {title}: not available in this build".encode()
        took, out = run_vm(args, lambda o: b"tern: halted" in o, 20, "halt message")
        if want not in out or READY.search(out):
            raise Failure(f"unexpected output:\n{out.decode('utf-8', 'replace')}")
        return f"{took:.1f} s"
    return check


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nic(user_opts, device_opts=""):
    """QEMU user networking with a virtio-net device. -device (not -nic):
    QEMU 7.2 gives a NIC made by -nic no MSI-X capability, one made by
    -device has it (vectors=0 takes it away again)."""
    return ["-netdev", "user,id=n0" + (f",{user_opts}" if user_opts else ""),
            "-device", "virtio-net-pci,netdev=n0" + (f",{device_opts}" if device_opts else "")]


def spaced_rtt_ms(port, n=20, gap=0.03):
    """Median one-byte echo round trip with the kernel idle (halted) before
    each: a wake-up by interrupt shows as well under the 10 ms timer tick."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        times = []
        for _ in range(n):
            time.sleep(gap)
            t = time.perf_counter()
            s.sendall(b"x")
            if s.recv(1) != b"x":
                raise Failure("echo: round trip returned something else")
            times.append((time.perf_counter() - t) * 1000)
    return sorted(times)[n // 2]


def echo_exchange(port, sizes, timeout):
    """Open one connection per size, all at once; send each a distinct
    pseudo-random stream and read it back; verify every byte. Non-blocking,
    one thread, so 100 connections cost nothing on the host.

    Each connection first completes a one-byte round trip: QEMU's forwarded
    port listens with a tiny backlog, and connecting faster than it accepts
    makes the host's TCP retry the SYN after a second (measured: a third of
    back-to-back connects took 1.02 s; with the round trip, none did)."""
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    conns = []
    for i, size in enumerate(sizes):
        data = random.Random(i).randbytes(size)
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"\xa5")
        if s.recv(1) != b"\xa5":
            raise Failure(f"echo: connection {i} did not echo its first byte")
        s.setblocking(False)
        c = {"sock": s, "data": data, "sent": 0, "got": bytearray(), "i": i}
        conns.append(c)
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    pending = len(conns)
    while pending:
        if time.monotonic() > deadline:
            done = sum(len(c["got"]) for c in conns)
            raise Failure(f"echo: {done} of {sum(sizes)} bytes back within {timeout} s")
        for key, ev in sel.select(1):
            c = key.data
            s = c["sock"]
            if ev & selectors.EVENT_WRITE and c["sent"] < len(c["data"]):
                try:
                    c["sent"] += s.send(c["data"][c["sent"]:c["sent"] + 65536])
                except BlockingIOError:
                    pass
                if c["sent"] == len(c["data"]):
                    sel.modify(s, selectors.EVENT_READ, c)
            if ev & selectors.EVENT_READ:
                try:
                    chunk = s.recv(65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise Failure(f"echo: connection {c['i']} closed early")
                c["got"] += chunk
                if len(c["got"]) >= len(c["data"]):
                    if bytes(c["got"]) != c["data"]:
                        raise Failure(f"echo: connection {c['i']} returned different bytes")
                    sel.unregister(s)
                    s.close()
                    pending -= 1
    sel.close()


def net_test(kernel, device_opts="", irq=r"msi-x, (\d+) interrupts",
             log=rb"tern: virtio-net [0-9a-f:.]+: receive interrupts by MSI-X \(vector \d+\)"):
    """DHCP lease and seeded RNG on the ready line, then 1 MiB through the
    echo service on one connection, then 100 connections at once. With
    MSI-X the receive ring is read only after an interrupt, so the echo
    working proves they arrive; the ready line counts those before it
    (DHCP's offer and ack at least). With vectors=0 the device has no MSI-X
    and the driver must fall back to polling."""
    def check():
        port = free_port()
        args = ["-kernel", kernel, "-device", "virtio-rng-pci"] + \
            nic(f"hostfwd=tcp:127.0.0.1:{port}-:7", device_opts)
        vm = Vm(args)
        try:
            took = vm.wait_for(lambda o: READY.search(o) is not None, 60)
            out = vm.text()
            if took is None:
                raise Failure("no ready line:\n" + out[-1500:].decode("utf-8", "replace"))
            line = out[READY.search(out).start():].split(b"\n")[0].decode().strip()
            if not re.search(r"rng: seeded, \d+ bits credited \(.*virtio-rng \d+", line):
                raise Failure(f"RNG not seeded with virtio-rng: {line}")
            if not re.search(r"net: 52:54:00:12:34:56 link up, dhcp 10\.0\.2\.15/24 gw 10\.0\.2\.2",
                             line):
                raise Failure(f"no DHCP lease: {line}")
            if not re.search(log, out):
                raise Failure(f"{log!r} not in:\n{out.decode('utf-8', 'replace')}")
            m = re.search(r"; " + irq + r"$", line)
            if not m or (m.groups() and int(m.group(1)) < 1):
                raise Failure(f"{irq!r} (with interrupts counted) not at the end of: {line}")
            t0 = time.monotonic()
            echo_exchange(port, [1 << 20], 60)
            t1 = time.monotonic()
            echo_exchange(port, [1 << 20] * 100, 180)
            t2 = time.monotonic()
            rtt = spaced_rtt_ms(port)
            if b"FATAL" in vm.text():
                raise Failure("fatal report:\n" + vm.text().decode("utf-8", "replace"))
        finally:
            vm.stop()
        return (f"ready {took:.1f} s ({m.group(0)[2:]}); 1 MiB echoed in {t1 - t0:.1f} s; "
                f"100 x 1 MiB in parallel in {t2 - t1:.1f} s; idle round trip {rtt:.1f} ms")
    return check


def jitter_only_test(kernel):
    """Without virtio-rng, RDRAND and RDSEED, the jitter source alone seeds."""
    def check():
        args = ["-kernel", kernel, "-cpu", "qemu64,-rdrand,-rdseed"]
        took, out = run_vm(args, lambda o: READY.search(o) is not None, 60, "ready line")
        line = out[READY.search(out).start():].split(b"\n")[0].decode()
        if not re.search(r"rng: seeded, \d+ bits credited \(jitter \d+\)", line):
            raise Failure(f"not seeded by jitter alone: {line}")
        return f"{took:.1f} s: {line}"
    return check

# ---- the broker in the kernel ------------------------------------------

PAHO_CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paho_check.py")
MQTT_CONF = b"""config_version = 1
listener.plain = 0.0.0.0:1883
auth.allow_anonymous = true
sys.public = true
sys.interval = 1
"""


def mqtt_connect_packet(client_id):
    """An MQTT 3.1.1 CONNECT with a clean session and a 60 s keepalive."""
    cid = client_id.encode()
    body = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(cid).to_bytes(2, "big") + cid
    return bytes([0x10, len(body)]) + body


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise Failure(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def raw_client(port, client_id):
    """A connected, idle MQTT client on a plain socket."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(mqtt_connect_packet(client_id))
    ack = recv_exact(s, 4)
    if ack != b"\x20\x02\x00\x00":
        raise Failure(f"{client_id}: CONNACK {ack.hex()}")
    return s


def mosq(tool, port, *args, timeout=30, tls=(), check=True):
    """Run mosquitto_pub/sub against the forwarded port; tls: the --cafile,
    --cert, --key arguments of an identity (empty: plaintext)."""
    r = subprocess.run([tool, "-h", "127.0.0.1", "-p", str(port)] + list(tls) + list(args),
                       capture_output=True, timeout=timeout)
    if check and r.returncode != 0:
        raise Failure(f"{tool} {' '.join(args)}: exit {r.returncode}: "
                      f"{(r.stdout + r.stderr).decode('utf-8', 'replace')}")
    if not check:
        return r
    return r.stdout.decode("utf-8", "replace")


class Sub:
    """mosquitto_sub in the background, lines collected; synced() returns
    once its subscriptions are in place (a message on `sync` came back)."""

    def __init__(self, port, topics, extra=(), tls=(), sync="sync"):
        self.port = port
        self.tls = list(tls)
        self.sync = sync
        args = ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-q", "2",
                "-F", "%q %r %t %p", "-t", sync] + self.tls + list(extra)
        for t in topics:
            args += ["-t", t]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self.lines):
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        with self.lock:
            raise Failure(f"{what}: subscriber got {self.lines}")

    def synced(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            mosq("mosquitto_pub", self.port, "-t", self.sync, "-m", "s", tls=self.tls)
            try:
                self.wait(lambda ls: any(f" {self.sync} " in l for l in ls), 1, "sync")
                return
            except Failure:
                pass
        raise Failure("subscriber never saw its sync message")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(2)


def sys_memory(port, tls=(), topic="$SYS/broker/memory/used"):
    out = mosq("mosquitto_sub", port, "-t", topic, "-C", "1", "-W", "20", tls=tls)
    return int(out.strip())


def settle_memory(port, tls=(), topic="$SYS/broker/memory/used"):
    """A $SYS memory figure once it holds still (it is refreshed every
    second): two equal readings a refresh apart."""
    last = sys_memory(port, tls, topic)
    for _ in range(10):
        time.sleep(1.2)
        cur = sys_memory(port, tls, topic)
        if cur == last:
            return cur
        last = cur
    return last


CORE_MEMORY = "$SYS/broker/memory/core"


def broker_vm(kernel, conf, tmp):
    path = os.path.join(tmp, "tern.conf")
    with open(path, "wb") as f:
        f.write(conf)
    port = free_port()
    args = ["-kernel", kernel, "-initrd", path, "-device", "virtio-rng-pci",
            ] + nic(f"hostfwd=tcp:127.0.0.1:{port}-:1883")
    return Vm(args), port


def mqtt_test(kernel):
    """QoS 0/1/2 through the broker, a 300 kB message, a retained message,
    a will, a Paho persistent session, $SYS memory for 100 idle
    connections (and all of it back after), garbage closing only its
    connection."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        vm, port = broker_vm(kernel, MQTT_CONF, tmp)
        subs, socks = [], []
        notes = []
        try:
            took = vm.wait_for(lambda o: READY.search(o) is not None, 60)
            out = vm.text()
            if took is None:
                raise Failure("no ready line:\n" + out[-1500:].decode("utf-8", "replace"))
            for want in (rb"tern: config: tern\.conf from boot module \(\d+ bytes\)",
                         rb"tern: mqtt: plaintext port 1883"):
                if not re.search(want, out):
                    raise Failure(f"{want!r} not in:\n{out.decode('utf-8', 'replace')}")
            notes.append(f"ready {took:.1f} s")

            # Publish/subscribe at each QoS (delivered at the publisher's QoS).
            sub = Sub(port, ["test/#"])
            subs.append(sub)
            sub.synced()
            for q in (0, 1, 2):
                mosq("mosquitto_pub", port, "-t", f"test/q{q}", "-m", f"hello {q}", "-q", str(q))
            want = [f"{q} 0 test/q{q} hello {q}" for q in (0, 1, 2)]
            sub.wait(lambda ls: all(w in ls for w in want), 20, "QoS 0/1/2 messages")

            # A message larger than lwIP's send buffer: many pbufs in, many
            # partial writes out (resumed from the sent callback).
            big = os.path.join(tmp, "big")
            payload = "".join(f"{i:07d}," for i in range(37500))  # 300000 bytes, one line
            with open(big, "w") as f:
                f.write(payload)
            mosq("mosquitto_pub", port, "-t", "test/big", "-f", big, "-q", "1")
            sub.wait(lambda ls: any(l.startswith("1 0 test/big ") for l in ls), 30, "300 kB")
            line = [l for l in sub.lines if l.startswith("1 0 test/big ")][0]
            if line != "1 0 test/big " + payload:
                raise Failure(f"300 kB message arrived as {len(line)} different characters")

            # A retained message reaches a later subscriber, flagged retained.
            mosq("mosquitto_pub", port, "-t", "ret/a", "-m", "keep", "-r", "-q", "1")
            got = mosq("mosquitto_sub", port, "-t", "ret/#", "-C", "1", "-W", "20",
                       "-F", "%r %t %p").strip()
            if got != "1 ret/a keep":
                raise Failure(f"retained: got {got!r}")

            # A will on abnormal disconnect (the client is killed).
            watch = Sub(port, ["will/#"])
            subs.append(watch)
            watch.synced()
            victim = Sub(port, ["nothing"], ["-i", "victim", "--will-topic", "will/victim",
                                             "--will-payload", "gone", "--will-qos", "1"])
            subs.append(victim)
            victim.synced()
            victim.proc.kill()
            watch.wait(lambda ls: "1 0 will/victim gone" in ls, 20, "will")

            # Paho (the system Python's python3-paho-mqtt), if installed.
            paho = subprocess.run(["/usr/bin/python3", "-c", "import paho.mqtt"],
                                  capture_output=True)
            if paho.returncode == 0:
                r = subprocess.run(["/usr/bin/python3", PAHO_CHECK, str(port)],
                                   capture_output=True, timeout=90)
                if r.returncode != 0 or r.stdout.strip() != b"ok":
                    raise Failure("paho: " + (r.stdout + r.stderr).decode("utf-8", "replace"))
                notes.append("paho persistent QoS 2 ok")
            else:
                notes.append("paho not installed, skipped")

            # Core memory for 100 idle connections, and all of it back after.
            core0 = settle_memory(port, topic=CORE_MEMORY)
            m0 = settle_memory(port)
            for i in range(100):
                socks.append(raw_client(port, f"idle-{i:03d}"))
            core1 = settle_memory(port, topic=CORE_MEMORY)
            m1 = settle_memory(port)
            notes.append(f"100 idle connections: core memory {core0} -> {core1} bytes, "
                         f"{(core1 - core0) / 100:.0f} per connection; kernel heap "
                         f"{m0} -> {m1}, {(m1 - m0) / 100:.0f} per connection")

            # Garbage closes only its own connection: the idle ones still answer.
            bad = socket.create_connection(("127.0.0.1", port), timeout=20)
            bad.sendall(b"\xff\xffthis is not MQTT\r\n")
            try:
                if bad.recv(16) != b"":
                    raise Failure("garbage: the broker answered instead of closing")
            except ConnectionResetError:
                pass
            bad.close()
            for s in socks:
                s.sendall(b"\xc0\x00")  # PINGREQ
            for s in socks:
                if recv_exact(s, 2) != b"\xd0\x00":
                    raise Failure("an idle connection did not answer PINGREQ")
            for s in socks:
                s.close()
            socks.clear()
            m2 = settle_memory(port)
            notes.append(f"heap {m2} after closing them")
            # $SYS values grow by a digit now and then; a leak of even one
            # allocation per connection would be more than 1700 bytes.
            if abs(m2 - m0) > 1024:
                raise Failure(f"heap {m0} before, {m2} after 100 connections closed")
            text = vm.text()
            if b"FATAL" in text:
                raise Failure("fatal report:\n" + text.decode("utf-8", "replace"))
        finally:
            for s in socks:
                s.close()
            for sub in subs:
                sub.stop()
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        return "; ".join(notes)
    return check


# ---- mutual TLS in the kernel -----------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MTLS_CONF = """config_version = 1
listener.tls = 0.0.0.0:8883
tls.cert = pki/server.crt
tls.key = pki/server.key
tls.client_ca = pki/ca.crt
tls.operator_ca = pki/operator-ca.crt
tls.handshake_timeout = 3
acl.file = tern.acl
sys.interval = 1
"""
MTLS_ACL = """topic readwrite test/#
topic readwrite will/#
topic readwrite sync
topic readwrite paho/#
topic readwrite idle/#
pattern readwrite clients/%u/#
"""


class Pki:
    """The development PKI (scripts/pki.sh build/pki, made by make image):
    mosquitto arguments per identity, and Python ssl contexts."""

    def __init__(self, build):
        self.dir = os.path.abspath(os.path.join(build, "pki"))
        if not os.path.exists(os.path.join(self.dir, "dev-client.crt")):
            subprocess.run([os.path.join(REPO, "scripts", "pki.sh"), self.dir], check=True,
                           capture_output=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def args(self, who=None):
        a = ["--cafile", self.path("ca.crt")]
        if who:
            a += ["--cert", self.path(f"{who}.crt"), "--key", self.path(f"{who}.key")]
        return a

    def context(self, who="dev-client"):
        import ssl
        ctx = ssl.create_default_context(cafile=self.path("ca.crt"))
        ctx.load_cert_chain(self.path(f"{who}.crt"), self.path(f"{who}.key"))
        return ctx


def make_bundle(build, tmp, conf, acl=MTLS_ACL):
    """conf and acl next to a link to the PKI, turned into a boot bundle by
    the image builder's tern-bundle (which checks them as the kernel will)."""
    with open(os.path.join(tmp, "tern.conf"), "w") as f:
        f.write(conf)
    with open(os.path.join(tmp, "tern.acl"), "w") as f:
        f.write(acl)
    os.symlink(os.path.abspath(os.path.join(build, "pki")), os.path.join(tmp, "pki"))
    out = os.path.join(tmp, "tern.bundle")
    r = subprocess.run([os.path.join(build, "rel", "tern-bundle"),
                        os.path.join(tmp, "tern.conf"), out], capture_output=True)
    if r.returncode != 0:
        raise Failure("tern-bundle: " + (r.stdout + r.stderr).decode("utf-8", "replace"))
    return out


def tls_vm(kernel, module, guest_port=8883):
    port = free_port()
    args = ["-kernel", kernel, "-initrd", module, "-device", "virtio-rng-pci",
            "-nic", f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{port}-:{guest_port}"]
    return Vm(args), port


def tls_client(ctx, port, client_id, timeout=30):
    """A full mutual-TLS handshake and MQTT CONNECT/CONNACK; the socket."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(mqtt_connect_packet(client_id))
        ack = recv_exact(s, 4)
    except Exception:
        raw.close()
        raise
    if ack != b"\x20\x02\x00\x00":
        s.close()
        raise Failure(f"{client_id}: CONNACK {ack.hex()}")
    return s


def expect_closed(sock, what, timeout=10):
    """The broker closes sock (EOF or reset) within timeout; seconds taken."""
    t0 = time.monotonic()
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                break
    except (ConnectionResetError, BrokenPipeError):
        pass
    except socket.timeout:
        raise Failure(f"{what}: still open after {timeout} s")
    return time.monotonic() - t0


def mtls_test(kernel, build):
    """The image's mutual-TLS broker with unmodified clients: QoS 0/1/2,
    a 300 kB message, retained, will, Paho over TLS, operator $SYS, a
    non-operator and a certificate-less client refused, the ACL, 200
    sequential handshakes, 200 idle connections with their memory, and a
    garbage and a stalled client that disturb nobody."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        pki = Pki(build)
        vm, port = tls_vm(kernel, make_bundle(build, tmp, MTLS_CONF))
        client, operator = pki.args("dev-client"), pki.args("dev-operator")
        subs, socks, notes = [], [], []
        try:
            took = vm.wait_for(lambda o: READY.search(o) is not None, 60)
            out = vm.text()
            if took is None:
                raise Failure("no ready line:\n" + out[-1500:].decode("utf-8", "replace"))
            for want in (rb"tern: config: bundle with 6 files from boot module \(\d+ bytes\); "
                         rb"configuration tern\.conf", KAT_PASSED,
                         rb"tern: config: ACL tern\.acl loaded",
                         rb"tern: mqtt: mutual TLS port 8883, 0 connections"):
                if not re.search(want, out):
                    raise Failure(f"{want!r} not in:\n{out.decode('utf-8', 'replace')}")
            notes.append(f"ready {took:.1f} s")

            # QoS 0/1/2 over mTLS, delivered at the publisher's QoS.
            sub = Sub(port, ["test/#"], tls=client)
            subs.append(sub)
            sub.synced()
            for q in (0, 1, 2):
                mosq("mosquitto_pub", port, "-t", f"test/q{q}", "-m", f"hello {q}", "-q", str(q),
                     tls=client)
            want = [f"{q} 0 test/q{q} hello {q}" for q in (0, 1, 2)]
            sub.wait(lambda ls: all(w in ls for w in want), 20, "QoS 0/1/2 messages")

            # 300 kB: many records in, records out limited by lwIP's send buffer.
            big = os.path.join(tmp, "big")
            payload = "".join(f"{i:07d}," for i in range(37500))
            with open(big, "w") as f:
                f.write(payload)
            mosq("mosquitto_pub", port, "-t", "test/big", "-f", big, "-q", "1", tls=client)
            sub.wait(lambda ls: any(l.startswith("1 0 test/big ") for l in ls), 60, "300 kB")
            if [l for l in sub.lines if l.startswith("1 0 test/big ")][0] != \
                    "1 0 test/big " + payload:
                raise Failure("300 kB message arrived altered")

            # The ACL: a topic outside it is neither delivered nor subscribable.
            r = mosq("mosquitto_sub", port, "-t", "other/#", "-W", "5", tls=client, check=False)
            if b"denied" not in r.stdout + r.stderr:
                raise Failure(f"subscription outside the ACL: {r.stdout + r.stderr!r}")

            # Retained.
            mosq("mosquitto_pub", port, "-t", "test/ret", "-m", "keep", "-r", "-q", "1",
                 tls=client)
            got = mosq("mosquitto_sub", port, "-t", "test/ret", "-C", "1", "-W", "20",
                       "-F", "%r %t %p", tls=client).strip()
            if got != "1 test/ret keep":
                raise Failure(f"retained: got {got!r}")

            # A will on abnormal disconnect (the client is killed).
            watch = Sub(port, ["will/#"], tls=client)
            subs.append(watch)
            watch.synced()
            victim = Sub(port, ["nothing"], ["-i", "victim", "--will-topic", "will/victim",
                                             "--will-payload", "gone", "--will-qos", "1"],
                         tls=client)
            subs.append(victim)
            victim.synced()
            victim.proc.kill()
            watch.wait(lambda ls: "1 0 will/victim gone" in ls, 20, "will")

            # Paho (system Python) over mutual TLS: persistent session, QoS 2.
            if subprocess.run(["/usr/bin/python3", "-c", "import paho.mqtt"],
                              capture_output=True).returncode == 0:
                r = subprocess.run(["/usr/bin/python3", PAHO_CHECK, str(port),
                                    pki.path("ca.crt"), pki.path("dev-client.crt"),
                                    pki.path("dev-client.key")], capture_output=True, timeout=90)
                if r.returncode != 0 or r.stdout.strip() != b"ok":
                    raise Failure("paho: " + (r.stdout + r.stderr).decode("utf-8", "replace"))
                notes.append("paho over mTLS ok")
            else:
                notes.append("paho not installed, skipped")

            # $SYS: the operator reads it, a client is refused it.
            used = sys_memory(port, operator)
            r = mosq("mosquitto_sub", port, "-t", "$SYS/#", "-W", "5", "-v", tls=client,
                     check=False)
            if b"$SYS" in r.stdout or b"denied" not in r.stdout + r.stderr:
                raise Failure(f"non-operator and $SYS: {(r.stdout + r.stderr)!r}")

            # No client certificate: refused in the handshake, logged as such.
            r = mosq("mosquitto_pub", port, "-t", "test/x", "-m", "x", tls=pki.args(None),
                     check=False)
            if r.returncode == 0:
                raise Failure("a client without a certificate was served")
            vm.wait_for(lambda o: b"failed: no client certificate" in o, 20)
            if b"failed: no client certificate" not in vm.text():
                raise Failure("the refusal of a certificate-less client was not logged")

            # 200 sequential full handshakes (no resumption), CONNECT/CONNACK each.
            ctx = pki.context("dev-client")
            t0 = time.monotonic()
            for i in range(200):
                c = tls_client(ctx, port, f"seq-{i:03d}")
                c.sendall(b"\xe0\x00")  # DISCONNECT
                c.close()
            seq = time.monotonic() - t0
            notes.append(f"200 sequential mTLS handshakes+CONNECT in {seq:.1f} s "
                         f"({200 / seq:.0f}/s)")

            # 200 idle connections: memory per connection from $SYS.
            m0 = settle_memory(port, operator)
            core0 = settle_memory(port, operator, CORE_MEMORY)
            t0 = time.monotonic()
            for i in range(200):
                socks.append(tls_client(ctx, port, f"idle-{i:03d}"))
            opened = time.monotonic() - t0
            m1 = settle_memory(port, operator)
            core1 = settle_memory(port, operator, CORE_MEMORY)
            per, core_per = (m1 - m0) / 200, (core1 - core0) / 200
            notes.append(f"200 idle mTLS connections opened in {opened:.1f} s; memory/used "
                         f"{m0} -> {m1}: {per:.0f} bytes per connection (core {core_per:.0f})")

            # A garbage client and a stalled handshake disturb nobody: while
            # both are open, a subscriber still gets a message and every idle
            # connection still answers.
            stalled = socket.create_connection(("127.0.0.1", port), timeout=20)
            stalled.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # half a ClientHello
            bad = socket.create_connection(("127.0.0.1", port), timeout=20)
            bad.sendall(b"\xff\xffthis is not TLS\r\n" * 50)
            expect_closed(bad, "garbage client")
            bad.close()
            mosq("mosquitto_pub", port, "-t", "test/during", "-m", "fine", "-q", "1",
                 tls=client)
            sub.wait(lambda ls: "1 0 test/during fine" in ls, 20, "delivery beside bad clients")
            for c in socks:
                c.sendall(b"\xc0\x00")  # PINGREQ
            for c in socks:
                if recv_exact(c, 2) != b"\xd0\x00":
                    raise Failure("an idle connection did not answer PINGREQ")
            expect_closed(stalled, "stalled handshake", 15)
            stalled.close()
            text = vm.text()
            if b"timed out after 3 s" not in text:
                raise Failure("no log line for the stalled handshake")
            if not re.search(rb"TLS handshake with [\d.:]+ failed: not TLS", text):
                raise Failure("no log line for the garbage client:\n" +
                              text[-2000:].decode("utf-8", "replace"))
            notes.append("garbage closed at once, stalled handshake by its 3 s deadline, "
                         "others served meanwhile")

            for c in socks:
                c.close()
            socks.clear()
            m2 = settle_memory(port, operator)
            notes.append(f"memory/used {m2} after closing them")
            if m2 - m0 > 4096:
                raise Failure(f"memory/used {m0} before, {m2} after 200 connections closed")
            if b"FATAL" in vm.text():
                raise Failure("fatal report:\n" + vm.text().decode("utf-8", "replace"))
        except OSError as e:  # socket and TLS errors: show what the guest said
            raise Failure(f"{e!r} after: {'; '.join(notes)}; serial output ends:\n" +
                          vm.text()[-3000:].decode("utf-8", "replace"))
        finally:
            for c in socks:
                c.close()
            for sb in subs:
                sb.stop()
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        return "; ".join(notes)
    return check


def clock_unset_test(kernel, build):
    """An RTC that says 2020 (a flat battery) gives no trustworthy date
    (ADR-025): the kernel says so, and with a TLS listener it halts rather
    than serving certificates it cannot check."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        module = make_bundle(build, tmp, MTLS_CONF)
        vm = Vm(["-kernel", kernel, "-initrd", module, "-device", "virtio-rng-pci",
                 "-rtc", "base=2020-06-01T00:00:00", "-nic", "user,model=virtio-net-pci"])
        try:
            took = vm.wait_for(lambda o: b"halted" in o, 30)
            time.sleep(2)  # a reset would show a second banner by now
            out = vm.text()
        finally:
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        text = out.decode("utf-8", "replace")
        if took is None:
            raise Failure(f"no halt:\n{text}")
        for want in ("tern: clock: no date: the RTC says before 2025-01-01",
                     "tern: config: tern.conf: listener.tls: no date: the RTC says before "
                     "2025-01-01 (flat battery?); certificates cannot be checked",
                     "tern: config refused: not serving; halted"):
            if want not in text:
                raise Failure(f"{want!r} not in:\n{text}")
        if out.count(BANNER) != 1 or READY.search(out):
            raise Failure(f"served or reset:\n{text}")
        return f"{took:.1f} s"
    return check


def builder_test(build):
    """The image builder refuses, with the daemon's message and before any
    image exists, what the kernel would refuse at boot."""
    def check():
        cases = [
            (MTLS_CONF + "bogus.key = 1\n", MTLS_ACL, "tern.conf:10: unknown key 'bogus.key'"),
            (MTLS_CONF + "store.path = t.db\n", MTLS_ACL,
             "tern.conf: store.path: the unikernel has no store yet"),
            (MTLS_CONF.replace("pki/server.key", "pki/nothing.key"), MTLS_ACL,
             ("tern.conf:4: tls.key: ", "pki/nothing.key: No such file or directory")),
            (MTLS_CONF.replace("pki/server.key", "pki/dev-client.key"), MTLS_ACL,
             ("tern.conf:4: tls.key: ",
              "pki/dev-client.key: does not match the server certificate")),
            (MTLS_CONF, "tpoic read x\n", "tern.acl:1: unknown keyword 'tpoic'"),
        ]
        for conf, acl, want in cases:
            tmp = tempfile.mkdtemp(prefix="tern-kt-")
            try:
                make_bundle(build, tmp, conf, acl)
                raise Failure(f"tern-bundle accepted a configuration with {want!r}")
            except Failure as e:
                for w in want if isinstance(want, tuple) else (want,):
                    if w not in str(e):
                        raise Failure(f"{w!r} not in: {e}")
                if os.path.exists(os.path.join(tmp, "tern.bundle")):
                    raise Failure("a refused bundle was written anyway")
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return f"{len(cases)} refusals"
    return check


def raw_bundle(files):
    """A bundle written here, independently of tern-bundle (the kernel must
    also refuse what the builder would not make)."""
    out = b"tern-bundle 1\n"
    for name, data in files:
        out += b"file %d %s\n" % (len(data), name.encode()) + data + b"\n"
    return out + b"end\n"


def bundle_refused_test(kernel, build, files, want):
    """A bundle the kernel must refuse: the reason on serial, then a halt
    (no serving, no reset)."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        path = os.path.join(tmp, "tern.bundle")
        content = files(Pki(build))
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else raw_bundle(content))
        vm, _ = tls_vm(kernel, path)
        try:
            took = vm.wait_for(lambda o: b"halted" in o, 30)
            time.sleep(2)  # a reset would show a second banner by now
            out = vm.text()
        finally:
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        text = out.decode("utf-8", "replace")
        if took is None:
            raise Failure(f"no halt:\n{text}")
        if want not in text:
            raise Failure(f"{want!r} not in:\n{text}")
        if out.count(BANNER) != 1 or READY.search(out):
            raise Failure(f"served or reset:\n{text}")
        return f"{took:.1f} s"
    return check


def pki_files(pki, skip=(), replace=None):
    conf = MTLS_CONF.replace("acl.file = tern.acl\n", "").encode()
    files = [("tern.conf", conf)]
    for name in ("server.crt", "server.key", "ca.crt", "operator-ca.crt"):
        if name in skip:
            continue
        with open(pki.path(name), "rb") as f:
            data = f.read()
        if replace and name in replace:
            data = replace[name]
        files.append((f"pki/{name}", data))
    return files


def config_refused_test(kernel):
    """An unknown key: the parser's message names it, the kernel halts and
    does not reset."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        conf = MQTT_CONF.replace(b"sys.public", b"bogus.key = 1\nsys.public")
        vm, _ = broker_vm(kernel, conf, tmp)
        try:
            took = vm.wait_for(lambda o: b"halted" in o, 30)
            time.sleep(2)  # a reset would show a second banner by now
            out = vm.text()
        finally:
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        text = out.decode("utf-8", "replace")
        if took is None:
            raise Failure(f"no halt:\n{text}")
        if "tern: config: tern.conf:4: unknown key 'bogus.key'" not in text:
            raise Failure(f"no message naming the key:\n{text}")
        if out.count(BANNER) != 1 or READY.search(out):
            raise Failure(f"served or reset:\n{text}")
        return f"{took:.1f} s"
    return check


def static_net_test(kernel, ipv4, gateway, sizes):
    """A static address from the configuration (net.ipv4, net.gateway): the
    ready line says "static", and the echo service answers on that address.
    QEMU's DHCP server is moved to .50, so a lease taken by mistake would
    show; a /32 address reaches every peer, 10.0.2.2 included, through its
    gateway on the link."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        addr = ipv4.split("/")[0]
        conf = MQTT_CONF + f"net.ipv4 = {ipv4}\nnet.gateway = {gateway}\n".encode()
        path = os.path.join(tmp, "tern.conf")
        with open(path, "wb") as f:
            f.write(conf)
        port = free_port()
        args = ["-kernel", kernel, "-initrd", path, "-device", "virtio-rng-pci"] + \
            nic(f"dhcpstart=10.0.2.50,hostfwd=tcp:127.0.0.1:{port}-{addr}:7")
        vm = Vm(args)
        try:
            took = vm.wait_for(lambda o: READY.search(o) is not None, 60)
            out = vm.text()
            if took is None:
                raise Failure("no ready line:\n" + out[-1500:].decode("utf-8", "replace"))
            line = out[READY.search(out).start():].split(b"\n")[0].decode()
            want = f"net: 52:54:00:12:34:56 link up, static {ipv4} gw {gateway}"
            if want not in line:
                raise Failure(f"{want!r} not in: {line}")
            t0 = time.monotonic()
            echo_exchange(port, sizes, 120)
            t1 = time.monotonic()
            if b"FATAL" in vm.text():
                raise Failure("fatal report:\n" + vm.text().decode("utf-8", "replace"))
        finally:
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        return (f"ready {took:.1f} s; {len(sizes)} connection(s), {sum(sizes) >> 10} KiB "
                f"echoed in {t1 - t0:.1f} s")
    return check


def config_bad_value_test(kernel, line, message):
    """A bad value: the kernel halts with the parser's message naming the
    key and its line, and neither serves nor resets."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        vm, _ = broker_vm(kernel, MQTT_CONF + line.encode() + b"\n", tmp)
        try:
            took = vm.wait_for(lambda o: b"halted" in o, 30)
            time.sleep(2)  # a reset would show a second banner by now
            out = vm.text()
        finally:
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        text = out.decode("utf-8", "replace")
        if took is None:
            raise Failure(f"no halt:\n{text}")
        if f"tern: config: tern.conf:6: {message}" not in text:
            raise Failure(f"no message naming the key and line:\n{text}")
        if out.count(BANNER) != 1 or READY.search(out):
            raise Failure(f"served or reset:\n{text}")
        return f"{took:.1f} s"
    return check


# ---- the framebuffer console -------------------------------------------

FONT_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src",
                      "platform", "kernel", "dev", "font8x8.c")
CONSOLE_LINE = re.compile(rb"tern: console: serial and framebuffer (\d+)x(\d+) "
                          rb"\((\d+) x (\d+) characters\)")


def load_font():
    """The kernel's glyphs, read from the drawing in font8x8.c: eight
    glyphs per band, rows of '#' (ink) and '.' (paper), from 0x20; the
    last slot (0x7F) is the box for unprintable bytes."""
    with open(FONT_C) as f:
        text = f.read()
    rows = re.findall(r'"([.#]{8}(?: [.#]{8}){7})"', text)
    if len(rows) != 96:
        raise Failure(f"font8x8.c: {len(rows)} glyph rows, expected 96")
    glyphs = {}
    for g in range(96):
        band, slot = divmod(g, 8)
        cell = tuple(rows[band * 8 + r][slot * 9:slot * 9 + 8] for r in range(8))
        glyphs[cell] = chr(0x20 + g) if g < 95 else "\x7f"
    return glyphs


class Qmp:
    """Just enough of QEMU's machine protocol: stop and screendump."""

    def __init__(self, path, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise Failure(f"QMP socket {path} never answered")
                time.sleep(0.05)
        self.buf = b""
        self._reply()  # the greeting
        self.cmd("qmp_capabilities")

    def _reply(self):
        import json
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise Failure("QMP connection closed")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def cmd(self, name, **args):
        import json
        self.sock.sendall(json.dumps({"execute": name, "arguments": args}).encode() + b"\n")
        msg = self._reply()
        if "error" in msg and name != "qmp_capabilities":
            raise Failure(f"QMP {name}: {msg['error']}")
        return msg

    def close(self):
        self.sock.close()


def read_screen(path, glyphs, cols, rows, scale):
    """The text on a screendump (PPM), cell by cell: a cell whose pixels
    (black = paper, anything else = ink) are not exactly one glyph of the
    font reads as NUL, so stray or misdrawn pixels fail the comparison."""
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(b"\n", 3)
    if parts[0] != b"P6" or parts[2] != b"255":
        raise Failure(f"screendump is not a binary 8-bit PPM: {data[:20]!r}")
    w, h = map(int, parts[1].split())
    pix = parts[3]
    cell = 8 * scale
    if cols * cell > w or rows * cell > h:
        raise Failure(f"screen {w}x{h} smaller than {cols} x {rows} cells")
    lines = []
    for r in range(rows):
        bands = []
        for y in range(8):
            off = ((r * cell + y * scale) * w) * 3
            row = pix[off:off + w * 3]
            bands.append("".join("." if row[x * 3 * scale:x * 3 * scale + 3] == b"\0\0\0"
                                 else "#" for x in range(cols * 8)))
        lines.append("".join(glyphs.get(tuple(b[c * 8:c * 8 + 8] for b in bands), "\0")
                             for c in range(cols)))
    return lines


def on_screen(lines, text, cols):
    """1 if text (one console line, wrapped at cols) is on consecutive rows."""
    chunks = [text[i:i + cols] for i in range(0, len(text), cols)] or [""]
    for i in range(len(lines) - len(chunks) + 1):
        if all(lines[i + k].rstrip() == chunks[k].rstrip() for k in range(len(chunks))):
            return True
    return False


def expect_on_screen(lines, text, cols):
    """Fail, showing what the screen reads, unless text is on it."""
    if not on_screen(lines, text, cols):
        shown = "\n".join(l.rstrip() for l in lines if l.strip())
        raise Failure(f"{text!r} not on the screen, which reads:\n{shown}")


def screen_test(args, loader, timeout, want=(), screen_lines=None):
    """Boot an ISO with a display: the serial console must show the ready
    line and say the framebuffer joined, and the screen (QEMU's
    screendump, read with the kernel's own font) must show the same lines
    as serial - the console line and the whole ready line."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        sock = os.path.join(tmp, "qmp")
        vm = Vm(args + ["-qmp", f"unix:{sock},server=on,wait=off"])
        try:
            took = vm.wait_for(lambda o: READY.search(o) is not None, timeout)
            out = vm.text()
            if took is None:
                raise Failure("no ready line:\n" + out[-1500:].decode("utf-8", "replace"))
            m = READY.search(out)
            if m.group(1).decode() != loader or b"FATAL" in out:
                raise Failure(f"booted via {m.group(1).decode()} or failed:\n{out.decode()}")
            for w in want:
                if not re.search(w, out):
                    raise Failure(f"{w!r} not in:\n{out.decode('utf-8', 'replace')}")
            c = CONSOLE_LINE.search(out)
            if not c:
                raise Failure("no framebuffer console:\n" + out.decode("utf-8", "replace"))
            width, height, cols, rows = (int(x) for x in c.groups())
            scale = 2 if width >= 1600 else 1
            qmp = Qmp(sock)
            shot = os.path.join(tmp, "screen.ppm")
            qmp.cmd("stop")
            qmp.cmd("screendump", filename=shot)
            qmp.close()
            lines = read_screen(shot, load_font(), cols, rows, scale)
            ready = out[m.start():].split(b"\n")[0].decode().strip()
            expect = [c.group(0).decode(), ready] + list(screen_lines or [])
            for e in expect:
                expect_on_screen(lines, e, cols)
        finally:
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        return f"{took:.1f} s; {width}x{height}, {cols} x {rows} characters; ready line on screen"
    return check


def fatal_screen_test(test_elf):
    """A5 on the framebuffer: a test ISO (the test kernel, a page fault
    requested on its command line) must put the fatal report on the screen
    as well as on serial. The VM is stopped when serial shows the report,
    before the short test-build hold ends in a reset."""
    def check():
        tmp = tempfile.mkdtemp(prefix="tern-kt-")
        root = os.path.join(tmp, "iso")
        os.makedirs(os.path.join(root, "boot", "grub"))
        shutil.copy(test_elf, os.path.join(root, "boot", "tern.elf"))
        with open(os.path.join(root, "boot", "grub", "grub.cfg"), "w") as f:
            f.write("serial --unit=0 --speed=115200\nterminal_output serial\n"
                    "insmod all_video\nset timeout=0\n"
                    "menuentry fault {\n  multiboot2 /boot/tern.elf tern.test=pagefault\n}\n")
        iso = os.path.join(tmp, "fault.iso")
        r = subprocess.run(["grub-mkrescue", "-o", iso, root], capture_output=True)
        if r.returncode != 0:
            raise Failure("grub-mkrescue: " + r.stderr.decode("utf-8", "replace"))
        sock = os.path.join(tmp, "qmp")
        vm = Vm(["-cdrom", iso, "-qmp", f"unix:{sock},server=on,wait=off"])
        try:
            qmp = Qmp(sock)
            took = vm.wait_for(lambda o: b"*** tern: resetting in" in o, 60)
            if took is None:
                raise Failure("no fatal report:\n" + vm.text().decode("utf-8", "replace"))
            qmp.cmd("stop")
            out = vm.text()
            c = CONSOLE_LINE.search(out)
            if not c:
                raise Failure("no framebuffer console:\n" + out.decode("utf-8", "replace"))
            width, _, cols, rows = (int(x) for x in c.groups())
            shot = os.path.join(tmp, "screen.ppm")
            qmp.cmd("screendump", filename=shot)
            qmp.close()
            lines = read_screen(shot, load_font(), cols, rows, 2 if width >= 1600 else 1)
            for e in ("*** tern: FATAL: CPU exception: page fault (#PF)",
                      "*** tern: cause: null pointer dereference",
                      "*** tern: resetting in 1 s"):
                if e not in out.decode("utf-8", "replace"):
                    raise Failure(f"{e!r} not on serial")
                expect_on_screen(lines, e, cols)
        finally:
            vm.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        return f"{took:.1f} s to the report; on serial and on the screen"
    return check


def tests(build):
    elf = os.path.join(build, "kernel", "tern.elf")
    test_elf = os.path.join(build, "kernel", "tern-test.elf")
    debug_elf = os.path.join(build, "kernel", "tern-debug.elf")
    iso = os.path.join(build, "tern.iso")
    t = {
        "pvh-ready": ready_test(["-kernel", elf], "pvh", 20, (KAT_PASSED,)),
        # -cpu max: AES-NI, AVX2, BMI2/ADX, so wolfSSL's assembly paths run
        # the self-tests (qemu64, the default, takes its C fallbacks).
        "pvh-ready-cpu-max-5g": ready_test(["-kernel", elf, "-cpu", "max", "-m", "5G"],
                                           "pvh", 20,
                                           (rb"AES-NI yes, AVX2 yes, BMI2/ADX yes", KAT_PASSED)),
        "pvh-ready-pc-64m": ready_test(["-kernel", elf, "-M", "pc", "-m", "64"], "pvh", 20),
        "fault-pagefault": fault_test(test_elf, "pagefault", "page fault (#PF)",
                                      "null pointer dereference"),
        "fault-gpfault": fault_test(test_elf, "gpfault", "general protection fault (#GP)",
                                    None),
        "fault-stackoverflow": fault_test(test_elf, "stackoverflow", "page fault (#PF)",
                                          "stack overflow into a guard page"),
        "fault-write-text": fault_test(test_elf, "write-text", "page fault (#PF)",
                                       "write to read-only memory (W^X)"),
        "fault-exec-data": fault_test(test_elf, "exec-data", "page fault (#PF)",
                                      "execution of non-executable memory (NX)"),
        "debug-register-dump": debug_dump_test(debug_elf),
        "pci-virtio-modern": pci_test(elf),
        "pci-virtio-modern-pc-legacy": pci_test(
            elf, "pc", rb"legacy configuration ports",
            [rb"tern: pci: legacy configuration ports \(no ECAM: MCFG not present; "
             rb"RSDP revision 0 from PVH start info, RSDT\)"]),
        "pci-acpi-bios-area-search": pci_test(
            test_elf, "q35", rb"ECAM",
            [rb"tern: pci: ECAM at 0xb0000000, buses 0-255, from the MCFG table \(RSDP "
             rb"revision 0 from BIOS area search, RSDT\)"], append="tern.acpi=scan"),
        "selftest-heap": check_test(test_elf, "heap"),
        "crypto-kat-fail-ecdsa": kat_fail_test(test_elf, "ecdsa-p256-verify"),
        "crypto-kat-fail-gcm-asm": kat_fail_test(test_elf, "aes-128-gcm", "max"),
        "net-dhcp-echo": net_test(test_elf),
        "net-polled-fallback": net_test(
            test_elf, "vectors=0", r"polled",
            rb"tern: virtio-net [0-9a-f:.]+: polled \(no MSI-X capability\)"),
        "rng-jitter-only": jitter_only_test(elf),
        "mqtt-broker": mqtt_test(test_elf),
        "mqtt-config-unknown-key": config_refused_test(elf),
        "net-static-echo": static_net_test(test_elf, "10.0.2.15/24", "10.0.2.2",
                                           [1 << 20] + [64 << 10] * 20),
        "net-static-32-onlink-gateway": static_net_test(test_elf, "10.0.2.99/32", "10.0.2.2",
                                                        [256 << 10]),
        "net-static-bad-value": config_bad_value_test(
            elf, "net.ipv4 = 10.0.2.0/24",
            "net.ipv4: '10.0.2.0/24' is the network's own address, not a host address"),
        "fatal-report-on-framebuffer": fatal_screen_test(test_elf),
        "mqtt-mtls": mtls_test(elf, build),
        "image-builder-checks": builder_test(build),
        "mqtt-mtls-clock-unset": clock_unset_test(elf, build),
        "mqtt-mtls-missing-cert": bundle_refused_test(
            elf, build, lambda pki: pki_files(pki, skip=("server.crt",)),
            "tern: config: tern.conf: tls.cert: 'pki/server.crt' is not in the image's bundle"),
        "mqtt-mtls-bad-cert": bundle_refused_test(
            elf, build, lambda pki: pki_files(pki, replace={"server.crt": b"not a certificate"}),
            "tern: config: tern.conf:3: tls.cert: pki/server.crt: no PEM certificate found"),
        "mqtt-mtls-unknown-key": bundle_refused_test(
            elf, build, lambda pki: [(n, d + b"bogus.key = 1\n" if n == "tern.conf" else d)
                                     for n, d in pki_files(pki)],
            "tern: config: tern.conf:9: unknown key 'bogus.key'"),
        "mqtt-mtls-bundle-version": bundle_refused_test(
            elf, build, lambda pki: raw_bundle(pki_files(pki)).replace(b"tern-bundle 1",
                                                                       b"tern-bundle 2", 1),
            "tern: config: bundle format version 2: this kernel reads version 1; a newer "
            "release of tern is needed"),
        "mode-install": mode_test(elf, "install", "Install to this machine's disk"),
        "mode-diag": mode_test(elf, "diag", "Diagnostics"),
        "mode-diag-serve": mode_test(elf, "diag-serve", "Diagnostics, then serve"),
        "iso-seabios": screen_test(["-cdrom", iso, "-nic", "user,model=virtio-net-pci"],
                                   "multiboot2", 60, ISO_WANT + (
            rb"tern: pci: ECAM at 0xb0000000, buses 0-255, from the MCFG table \(RSDP "
            rb"revision 0 from multiboot2 tag, RSDT\)",)),
    }
    if os.path.exists(OVMF):
        t["iso-ovmf"] = screen_test(["-bios", OVMF, "-cdrom", iso, "-nic",
                                     "user,model=virtio-net-pci"], "multiboot2", 120,
                                    ISO_WANT + (rb"tern: pci: ECAM at 0xb0000000, buses 0-255, "
                                                rb"from the MCFG table \(RSDP revision 2 from "
                                                rb"multiboot2 tag, XSDT\)",))
    else:
        t["iso-ovmf"] = None
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("-k", default="", help="run tests whose name contains this")
    ap.add_argument("-j", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    a = ap.parse_args()
    selected = {n: f for n, f in tests(a.build).items() if a.k in n}
    failed = 0
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        futures = {n: pool.submit(f) for n, f in selected.items() if f}
        for name in selected:
            if selected[name] is None:
                print(f"SKIP {name} ({OVMF} missing: apt-get install ovmf)")
                continue
            try:
                print(f"ok   {name}: {futures[name].result()}")
            except Failure as e:
                failed += 1
                print(f"FAIL {name}: {e}")
            sys.stdout.flush()
    total = len([f for f in selected.values() if f])
    print(f"kernel tests: {total - failed} passed, {failed} failed "
          f"({time.monotonic() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
