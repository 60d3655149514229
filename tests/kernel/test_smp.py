"""Application processors (issue 18): the kernel with -smp 2 under PVH,
SeaBIOS and OVMF (the ISO) and -smp 4 under PVH starts every CPU, names
each one's role in the boot log and serves mutual-TLS MQTT (a QoS 1
round trip with the dev PKI); -smp 1 says it has one CPU; a fault on an
application processor (tern.test.apfault=1, test build) is reported,
names the CPU, and stops the machine. About 35 s in all under TCG with
-j 2 (OVMF's boot, ~22 s, is the longest).

Broken on purpose once: with the stop NMI not sent (lapic.c), smp-ap-fault
failed ("on CPU 1; 0 other CPU(s) stopped").

smp-share-heap-console (test build, tern.test.smpshare=1, -smp 2): CPU 0
and CPU 1 allocate, check and free heap objects and print console lines
at the same time (arch/x86_64/smp_selftest.c); every object must come
back intact, the heap's counters back where they were, and every console
line whole (ADR-063's heap and console locks). Broken on purpose once each
(2026-12-02): with the console lock not taken, it failed on lines mixed
from the two CPUs; with kmalloc and kfree not taking the heap lock, the
heap halted ("free-list pointer corrupted").
"""
import os
import re

from clients import mosq
from harness import (OVMF, Failure, Pki, Vm, expect_lines, free_port, make_bundle, module_vm,
                     run_vm, scratch, show, MTLS_CONF)

ROLES = {
    0: rb"tern: smp: CPU 0 \(APIC id 0\): network and broker",
    1: rb"tern: smp: CPU 1 \(APIC id 1\): storage \(reserved for the storage core; parked: "
       rb"storage still runs on CPU 0\)",
    2: rb"tern: smp: CPU 2 \(APIC id 2\): network \(idle until the multi-core broker lands\)",
    3: rb"tern: smp: CPU 3 \(APIC id 3\): network \(idle until the multi-core broker lands\)",
}


def expect_cpus(out, n):
    expect_lines(out, [ROLES[i] for i in range(n)] +
                 [rb"tern: smp: %d CPU\(s\) online" % n])
    if b"did not come up" in out:
        raise Failure("an AP did not come up:\n" + show(out))


def mqtt_round_trip(vm, port, pki):
    """A QoS 1 message through the broker over mutual TLS (dev-client)."""
    took, out = vm.wait_ready(180)
    tls = pki.args("dev-client")
    sub = __import__("subprocess").Popen(
        ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "test/smp", "-q", "1",
         "-C", "1", "-W", "60"] + tls, stdout=-1, stderr=-1)
    try:
        for _ in range(30):
            mosq("mosquitto_pub", port, "-t", "test/smp", "-q", "1", "-m", "smp-ok", tls=tls)
            try:
                o, e = sub.communicate(timeout=2)
                break
            except Exception:
                continue
        else:
            raise Failure("no message came back")
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    if b"smp-ok" not in o:
        raise Failure(f"subscriber got {o!r} {e!r}")
    vm.expect_no_fatal()
    return took, vm.text()


def pvh_mtls(build, kernel, n):
    def check():
        with scratch() as tmp:
            pki = Pki(build)
            port = free_port()
            net = ["-nic", f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{port}-:8883"]
            with module_vm(kernel, make_bundle(build, tmp, MTLS_CONF), net,
                           ["-smp", str(n)]) as vm:
                took, out = mqtt_round_trip(vm, port, pki)
        expect_cpus(out, n)
        return f"-smp {n}: ready {took:.1f} s, {n} CPUs with roles, mTLS QoS 1 round trip"
    return check


def iso_mtls(build, iso, n, firmware):
    def check():
        pki = Pki(build)
        port = free_port()
        args = firmware + ["-cdrom", iso, "-smp", str(n), "-nic",
                           f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{port}-:8883"]
        with Vm(args) as vm:
            took, out = mqtt_round_trip(vm, port, pki)
        expect_cpus(out, n)
        return f"-smp {n}: ready {took:.1f} s, {n} CPUs with roles, mTLS QoS 1 round trip"
    return check


def one_cpu(kernel):
    def check():
        took, out = run_vm(["-kernel", kernel, "-smp", "1"],
                           lambda o: b"CPU(s) online" in o, 30, "the smp summary")
        expect_cpus(out, 1)
        if b"CPU 1" in out:
            raise Failure("a second CPU on -smp 1:\n" + show(out))
        return f"{took:.1f} s"
    return check


def ap_fault(kernel):
    def check():
        want = re.compile(rb"\*\*\* tern: FATAL: CPU exception: page fault \(#PF\)\r?\n"
                          rb"\*\*\* tern: cause: null pointer dereference\r?\n"
                          rb"\*\*\* tern: on CPU 1; 1 other CPU\(s\) stopped")
        took, out = run_vm(["-kernel", kernel, "-smp", "2", "-append", "tern.test.apfault=1"],
                           lambda o: b"resetting in" in o, 60, "the fatal report")
        if not want.search(out):
            raise Failure("no fatal report naming CPU 1:\n" + show(out))
        tail = out[want.search(out).end():]
        if re.search(rb"tern: (?!resetting|reset\b)", tail.replace(b"*** tern: resetting", b"")):
            raise Failure("the machine went on after the report:\n" + show(out))
        return f"{took:.1f} s"
    return check


SHARE_LINE = re.compile(rb"tern: smptest: CPU ([01]) round (\d+) of 20000: a whole line from "
                        rb"one CPU, never mixed with the other's\r?$")


def share_heap_console(kernel):
    def check():
        took, out = run_vm(["-kernel", kernel, "-smp", "2", "-append", "tern.test.smpshare=1"],
                           lambda o: b"counters back where they were" in o or
                           b"smptest: FAIL" in o or b"FATAL" in o, 120, "the smptest result")
        if b"smptest: FAIL" in out or b"FATAL" in out or b"every object intact" not in out:
            raise Failure("the shared heap and console test failed:\n" + show(out))
        # Every line that mentions the test is one of its whole lines (a
        # line mixed with another CPU's matches neither pattern), and each
        # CPU printed all of its 20.
        seen = {b"0": 0, b"1": 0}
        for line in out.split(b"\n"):
            if b"smptest" not in line or b"heap and console shared" in line:
                continue
            m = SHARE_LINE.search(line)
            if not m or not line.startswith(b"tern: smptest"):
                raise Failure(f"a console line mixed from two CPUs: {line!r}\n" + show(out))
            seen[m.group(1)] += 1
        if seen != {b"0": 20, b"1": 20}:
            raise Failure(f"console lines per CPU {seen}, want 20 each:\n" + show(out))
        return f"{took:.1f} s, 20 whole lines from each CPU, heap intact"
    return check


def cases(b):
    return {
        "smp-pvh-1": one_cpu(b.elf),
        "smp-pvh-2-mtls": pvh_mtls(b.dir, b.elf, 2),
        "smp-pvh-4-mtls": pvh_mtls(b.dir, b.elf, 4),
        "smp-seabios-2-mtls": iso_mtls(b.dir, b.iso, 2, []),
        "smp-ovmf-2-mtls": iso_mtls(b.dir, b.iso, 2, ["-bios", OVMF])
        if os.path.exists(OVMF) else None,
        "smp-ap-fault": ap_fault(b.test_elf),
        "smp-share-heap-console": share_heap_console(b.test_elf),
    }
