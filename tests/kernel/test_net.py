"""The network: the test build with virtio-net (QEMU user networking, a host
port forwarded to the guest's echo service on port 7) and virtio-rng takes
a DHCP lease and seeds its RNG (both on the ready line), receives by MSI-X
interrupts or, with the NIC's MSI-X taken away, by polling, and echoes
1 MiB on one connection and on 100 at once byte for byte; with a static
address from the configuration (net.ipv4, net.gateway; /24, and /32 with
an on-link gateway) it takes no lease and echoes on that address.
"""
import random
import re
import selectors
import socket
import time

from harness import (MQTT_CONF, Failure, Vm, free_port, module_vm, nic, ready_line, scratch,
                     show, write_file)


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


# How the driver receives, by whether the NIC has MSI-X: the device's
# options, the end of the ready line, the driver's line on serial.
MSIX = ("", r"msi-x, (\d+) interrupts",
        rb"tern: virtio-net [0-9a-f:.]+: receive interrupts by MSI-X \(vector \d+\)")
POLLED = ("vectors=0", r"polled", rb"tern: virtio-net [0-9a-f:.]+: polled \(no MSI-X capability\)")


def net_test(kernel, receive=MSIX):
    """DHCP lease and seeded RNG on the ready line, then 1 MiB through the
    echo service on one connection, then 100 connections at once. With
    MSI-X the receive ring is read only after an interrupt, so the echo
    working proves they arrive; the ready line counts those before it
    (DHCP's offer and ack at least). With vectors=0 (POLLED) the device
    has no MSI-X and the driver must fall back to polling."""
    device_opts, irq, log = receive

    def check():
        port = free_port()
        args = ["-kernel", kernel, "-device", "virtio-rng-pci"] + \
            nic(f"hostfwd=tcp:127.0.0.1:{port}-:7", device_opts)
        with Vm(args) as vm:
            took, out = vm.wait_ready(60)
            line = ready_line(out)
            if not re.search(r"rng: seeded, \d+ bits credited \(.*virtio-rng \d+", line):
                raise Failure(f"RNG not seeded with virtio-rng: {line}")
            if not re.search(r"net: 52:54:00:12:34:56 link up, dhcp 10\.0\.2\.15/24 gw 10\.0\.2\.2",
                             line):
                raise Failure(f"no DHCP lease: {line}")
            if not re.search(log, out):
                raise Failure(f"{log!r} not in:\n{show(out)}")
            m = re.search(r"; " + irq + r"$", line)
            if not m or (m.groups() and int(m.group(1)) < 1):
                raise Failure(f"{irq!r} (with interrupts counted) not at the end of: {line}")
            t0 = time.monotonic()
            echo_exchange(port, [1 << 20], 60)
            t1 = time.monotonic()
            echo_exchange(port, [1 << 20] * 100, 180)
            t2 = time.monotonic()
            rtt = spaced_rtt_ms(port)
            vm.expect_no_fatal()
        return (f"ready {took:.1f} s ({m.group(0)[2:]}); 1 MiB echoed in {t1 - t0:.1f} s; "
                f"100 x 1 MiB in parallel in {t2 - t1:.1f} s; idle round trip {rtt:.1f} ms")
    return check


def static_net_test(kernel, ipv4, gateway, sizes):
    """A static address from the configuration (net.ipv4, net.gateway): the
    ready line says "static", and the echo service answers on that address.
    QEMU's DHCP server is moved to .50, so a lease taken by mistake would
    show; a /32 address reaches every peer, 10.0.2.2 included, through its
    gateway on the link."""
    def check():
        addr = ipv4.split("/")[0]
        conf = MQTT_CONF + f"net.ipv4 = {ipv4}\nnet.gateway = {gateway}\n".encode()
        port = free_port()
        net = nic(f"dhcpstart=10.0.2.50,hostfwd=tcp:127.0.0.1:{port}-{addr}:7")
        with scratch() as tmp, module_vm(kernel, write_file(tmp, "tern.conf", conf), net) as vm:
            took, out = vm.wait_ready(60)
            line = ready_line(out)
            want = f"net: 52:54:00:12:34:56 link up, static {ipv4} gw {gateway}"
            if want not in line:
                raise Failure(f"{want!r} not in: {line}")
            t0 = time.monotonic()
            echo_exchange(port, sizes, 120)
            t1 = time.monotonic()
            vm.expect_no_fatal()
        return (f"ready {took:.1f} s; {len(sizes)} connection(s), {sum(sizes) >> 10} KiB "
                f"echoed in {t1 - t0:.1f} s")
    return check


def cases(b):
    return {
        "net-dhcp-echo": net_test(b.test_elf),
        "net-polled-fallback": net_test(b.test_elf, POLLED),
        "net-static-echo": static_net_test(b.test_elf, "10.0.2.15/24", "10.0.2.2",
                                           [1 << 20] + [64 << 10] * 20),
        "net-static-32-onlink-gateway": static_net_test(b.test_elf, "10.0.2.99/32", "10.0.2.2",
                                                        [256 << 10]),
    }
