"""Application processors (issue 18): the boot matrix and the fatal stop.

The matrix: the production kernel with -smp 1, 2 and 4 under each of PVH
(qemu -kernel with a boot bundle), SeaBIOS and OVMF (the ISO, GRUB,
multiboot2, its development bundle): nine boots, one per (firmware,
-smp) pair, each checked for everything at once - the MADT's CPU count
in the boot log, every CPU online with its role named and no more CPUs
than asked for, no AP left behind, and a mutual-TLS MQTT round trip
(mosquitto_sub and mosquitto_pub with the dev PKI, QoS 1) through the
broker with the APs up; nothing fatal.

The ISO's -smp 1 boots also read the framebuffer back (the console
line and the ready line) and check the bundle and the RSDP's revision:
they are the ISO boot tests, so no pair boots twice.

The fatal stop ("a fatal error on any CPU stops all of them and reports on
every console"): a fault on an application processor (tern.test.apfault=N,
test build) under PVH (-smp 2, CPU 1; serial is its only console; the
reset it asks for boots the kernel again) and under SeaBIOS and OVMF
from a test ISO (-smp 4, CPU 3) with the report read back from the
framebuffer (QMP screendump, the kernel's font) as well as serial; a
fatal error on the boot CPU with three APs online (the stack protector's
panic, tern.test.guard=smash, PVH -smp 4); and one on CPU 0 just after
it sent an AP its start-up IPI (tern.test.apstartfatal=2), after which
that AP must end stopped too. Each report names the CPU and counts the
others the stop halted, nothing is printed after it, and with the VM
stopped during the hold QEMU's registers show every other CPU halted in
the kernel with interrupts off (a parked CPU has them on), the reporter
still running.
smp-hotplug-slots-counted-not-started: -smp 2,maxcpus=6, the MADT's four
disabled entries counted, none started.

Cost (2026-12-02, one test at a time, QEMU CPU seconds on a loaded
2-core host): the module takes 99 s of wall time and 52 s of CPU for its
16 tests (OVMF boots 8-11 s of CPU each, SeaBIOS 3, PVH under 1; -smp 4
costs no more than -smp 1 under any firmware, within the noise), where
the 7 SMP tests and the two ISO boot tests it replaced took 46 s and 26 s.

Broken on purpose once: with the stop NMI not sent (lapic.c), smp-ap-fault
failed ("on CPU 1; 0 other CPU(s) stopped"). With smp_halt_stopped left
idling with interrupts on instead of halting (2026-12-02), the four fault
tests of the time failed on the CPU state ("CPU 0 (halted, interrupts
on)"). smp-fatal-while-an-ap-starts: see its function.

smp-late-ap-halts-itself-and-its-reused-slot-is-intact (test build,
tern.test.aplate=1, -smp 3 with a disk): a CPU that arrives after its
start window closed and its slot went to the next CPU halts in the
trampoline without touching anything and is reported; the slot's new
owner runs the storage core (ADR-066; see its function).
smp-ap-arriving-after-the-boot-is-named-by-the-main-loop (test build,
tern.test.aplateboot=1, -smp 2): the CPU is held until CPU 0's main
loop runs, after every start window and the boot's report; it must halt in the
trampoline as above and CPU 0's main loop must name it (ADR-066's "not
named" gap). Before smp_poll_late it failed: no line ever named it.
smp-slow-ap-that-claimed-in-time-is-waited-for (tern.test.apslow=1,
-smp 2): one that took its claim in time but is slow is waited for and
comes online with its role.

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
import subprocess
import time

from clients import mosq
from harness import (BANNER, OVMF, READY, Failure, Pki, Qmp, Screen, Vm, drive, expect_lines,
                     free_port, make_bundle, module_vm, qmp_args, ready_line, run_vm, scratch, show,
                     test_iso, MTLS_CONF)
from test_store_disk import DiskBroker, mkdisk

ROLES = {
    0: rb"tern: smp: CPU 0 \(APIC id 0\): network and broker",
    1: rb"tern: smp: CPU 1 \(APIC id 1\): storage \(parked until the store opens; then the "
       rb"store's threads run here\)",
    2: rb"tern: smp: CPU 2 \(APIC id 2\): network \(idle until the multi-core broker lands\)",
    3: rb"tern: smp: CPU 3 \(APIC id 3\): network \(idle until the multi-core broker lands\)",
}
# The firmware each matrix column boots under: None is PVH (qemu -kernel,
# whose QEMU option ROM hands over the ACPI tables as SeaBIOS does), the
# others boot the ISO.
FIRMWARE = {"pvh": None, "seabios": [], "ovmf": ["-bios", OVMF]}
LOADER = {"pvh": "pvh", "seabios": "multiboot2", "ovmf": "multiboot2"}


def expect_cpus(out, n, madt=True):
    """The boot log of a -smp n boot: the MADT lists n enabled CPUs (none
    held back for hot-plug, none disabled; madt), CPUs 0..n-1 online with
    their roles, no CPU beyond them, none that did not come up."""
    if madt:
        expect_lines(out, [rb"tern: smp: MADT lists %d enabled CPU\(s\), 0 online-capable "
                           rb"\(not started: no hot-plug\), 0 disabled; trampoline page" % n])
    expect_lines(out, [ROLES[i] for i in range(n)] + [rb"tern: smp: %d CPU\(s\) online" % n])
    if re.search(rb"tern: smp: CPU %d " % n, out):
        raise Failure(f"a CPU beyond the {n} asked for:\n" + show(out))
    if re.search(rb"tern: smp: (CPU with )?APIC id \d+ (not started|did not come up)", out):
        raise Failure("a CPU was left out:\n" + show(out))


def mqtt_round_trip(vm, port, pki):
    """A QoS 1 message through the broker over mutual TLS (dev-client):
    seconds to the ready line and the serial output after the round trip."""
    took, out = vm.wait_ready(240)
    tls = pki.args("dev-client")
    sub = subprocess.Popen(
        ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "test/smp", "-q", "1",
         "-C", "1", "-W", "60"] + tls, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Published until the subscriber has it: its SUBSCRIBE may land
        # after the first PUBLISH.
        for _ in range(30):
            mosq("mosquitto_pub", port, "-t", "test/smp", "-q", "1", "-m", "smp-ok", tls=tls)
            try:
                o, e = sub.communicate(timeout=2)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            raise Failure("no message came back:\n" + show(vm.text()[-3000:]))
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    if b"smp-ok" not in o:
        raise Failure(f"subscriber got {o!r} {e!r}")
    vm.expect_no_fatal()
    return took, vm.text()


def matrix_cell(b, firmware, n, want=(), screen=False):
    """One boot of the matrix: firmware (a FIRMWARE key) with -smp n; every
    pattern of want on serial too. screen (an ISO boot): the framebuffer
    console, read back with the VM stopped after the round trip, shows the
    console line and the whole ready line as serial does."""
    def check():
        shown = ""
        with scratch() as tmp:
            pki = Pki(b.dir)
            port = free_port()
            net = ["-nic", f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{port}-:8883"]
            qmp, sock = qmp_args(tmp) if screen else ([], None)
            if FIRMWARE[firmware] is None:
                vm = module_vm(b.elf, make_bundle(b.dir, tmp, MTLS_CONF), net,
                               ["-smp", str(n)] + qmp)
            else:
                vm = Vm(FIRMWARE[firmware] + ["-cdrom", b.iso, "-smp", str(n)] + net + qmp)
            with vm:
                took, out = mqtt_round_trip(vm, port, pki)
                if screen:
                    q = Qmp(sock)
                    q.cmd("stop")
                    s = Screen(q, out, tmp)
                    for line in (s.console, ready_line(out)):
                        s.expect(line)
                    shown = (f"; {s.width}x{s.height} screen, {s.cols} x {s.rows} characters, "
                             f"ready line on it")
        loader = READY.search(out).group(1).decode()
        if loader != LOADER[firmware]:
            raise Failure(f"booted via {loader}, expected {LOADER[firmware]}")
        expect_lines(out, want)
        expect_cpus(out, n)
        return (f"ready {took:.1f} s; MADT {n}, {n} CPU(s) online with roles; "
                f"mTLS QoS 1 round trip{shown}")
    return check


def fault_lines(cpu, n):
    """The report of a null-pointer write on CPU cpu of n (text lines)."""
    return ["*** tern: FATAL: CPU exception: page fault (#PF)",
            "*** tern: cause: null pointer dereference",
            f"*** tern: on CPU {cpu}; {n - 1} other CPU(s) stopped"]


def cpu_states(q):
    """{QEMU CPU index: (halted, interrupts enabled, in the kernel)} of a
    stopped VM, from `info registers -a`: HLT=, RFLAGS.IF, and whether it
    runs in long mode in the higher half (RIP=ffff...; a CPU in the
    firmware or just reset shows EIP=). The index is the APIC id, which
    the matrix shows is the kernel's CPU number under QEMU."""
    text = q.cmd("human-monitor-command", **{"command-line": "info registers -a"})["return"]
    states = {}
    for block in re.split(r"^CPU#", text, flags=re.M)[1:]:
        m = re.match(r"(\d+)\s.*?\b([RE])IP=([0-9a-f]+) [RE]FL=([0-9a-f]+) .*?HLT=(\d)", block,
                     re.S)
        if not m:
            raise Failure(f"QEMU's registers unreadable:\n{block[:600]}")
        states[int(m.group(1))] = (m.group(5) == "1", bool(int(m.group(4), 16) & 0x200),
                                   m.group(2) == "R" and m.group(3).startswith("ffff"))
    return states


def expect_others_halted(q, reporter, n, out, others=None):
    """Every CPU but the reporter (or those of others) halted in the
    kernel with interrupts off: the stop's end (cli; hlt). A parked CPU
    halts with interrupts on and wakes at its next timer tick; one in the
    firmware or a reset machine is not in the kernel: each fails this, as
    does one still running. The reporter runs its hold, in the kernel."""
    states = cpu_states(q)
    if sorted(states) != list(range(n)):
        raise Failure(f"QEMU lists CPUs {sorted(states)}, expected 0..{n - 1}")
    halted, _, kernel = states[reporter]
    if halted or not kernel:
        raise Failure(f"the reporting CPU {reporter} is not holding in the kernel "
                      f"({'halted' if halted else 'running'}, "
                      f"{'in the kernel' if kernel else 'outside it'}):\n" + show(out))
    loose = [f"CPU {i} ({'halted' if h else 'running'}, interrupts {'on' if f else 'off'}, "
             f"{'in the kernel' if k else 'outside it'})"
             for i, (h, f, k) in sorted(states.items())
             if i != reporter and (others is None or i in others) and (not h or f or not k)]
    if loose:
        raise Failure(f"not stopped after CPU {reporter}'s report: {', '.join(loose)}:\n" +
                      show(out))


def expect_quiet_after(out, report_end):
    """Nothing but the hold after the report ends: no CPU went on printing."""
    if re.search(rb"tern: (?!resetting in)", out[report_end:]):
        raise Failure("the machine went on after the report:\n" + show(out))


def fatal_stop(args, n, reporter, lines, tmp, screen=False, reboot=False, others=None):
    """Boot args with -smp n to a fatal report by CPU reporter whose lines
    (text, or a compiled bytes pattern for a line) must be on serial,
    followed by the hold; stopped then (before the test build's 1 s hold
    ends), every other CPU must be halted in the kernel with interrupts
    off and nothing printed after the report. screen: the lines
    on the framebuffer too (a screendump read with the kernel's font).
    reboot: let it go on, and the reset must boot the kernel again.
    others: the CPUs to look at (default: all), the rest never started.
    Seconds to the report and the serial output."""
    lines = lines + ["*** tern: resetting in 1 s"]
    qmp, sock = qmp_args(tmp)
    with Vm(args + ["-smp", str(n)] + qmp) as vm:
        q = Qmp(sock)
        took = vm.wait_for(lambda o: b"*** tern: resetting in" in o, 240)
        if took is None:
            raise Failure("no fatal report:\n" + show(vm.text()))
        q.cmd("stop")
        out = vm.text()
        if re.search(rb"\*\*\* tern: reset\r?\n", out):
            raise Failure("the VM was stopped only after the 1 s hold had ended (a host too "
                          "busy to judge the CPUs' state):\n" + show(out))
        expect_others_halted(q, reporter, n, out, others)
        if screen:
            shown = Screen(q, out, tmp)
        elif reboot:
            q.cmd("cont")
            if vm.wait_for(lambda o: o.count(BANNER) >= 2, took + 60) is None:
                raise Failure("no reboot after the report:\n" + show(vm.text()))
    want = re.compile(rb"\r?\n".join(line.pattern if isinstance(line, re.Pattern)
                                      else re.escape(line.encode()) for line in lines))
    m = want.search(out)
    if not m:
        raise Failure(f"{want.pattern!r} not on serial, which reads:\n" + show(out))
    expect_quiet_after(out, m.end())
    if screen:
        for line in lines:
            shown.expect(line)
    return took, out


def ap_fault(kernel):
    """PVH, -smp 2: CPU 1 faults; serial is PVH's only console. The reset
    (requested by CPU 1) boots the kernel again."""
    def check():
        with scratch() as tmp:
            took, _ = fatal_stop(["-kernel", kernel, "-append", "tern.test.apfault=1"], 2, 1,
                                 fault_lines(1, 2), tmp, reboot=True)
        return f"{took:.1f} s to the report; CPU 0 stopped; rebooted"
    return check


def ap_fault_iso(test_elf, firmware, n, cpu):
    """A test ISO under firmware with -smp n whose CPU cpu faults once
    online: the report on serial and on the framebuffer console."""
    def check():
        with scratch() as tmp:
            iso = test_iso(tmp, test_elf, f"tern.test.apfault={cpu}")
            took, out = fatal_stop(FIRMWARE[firmware] + ["-cdrom", iso], n, cpu,
                                   fault_lines(cpu, n), tmp, screen=True)
        expect_lines(out, [ROLES[i] for i in range(n)])
        return (f"{took:.1f} s to the report; the {n - 1} others stopped; on serial and on "
                f"the screen")
    return check


def boot_cpu_fatal(test_elf, n):
    """PVH, -smp n: a fatal error on CPU 0 with every AP online (the stack
    protector's panic, right after the APs are started) stops the APs."""
    def check():
        lines = ["*** tern: FATAL: stack smashing detected (stack protector)",
                 f"*** tern: on CPU 0; {n - 1} other CPU(s) stopped"]
        with scratch() as tmp:
            took, out = fatal_stop(["-kernel", test_elf, "-append", "tern.test.guard=smash"],
                                   n, 0, lines, tmp)
        expect_lines(out, [rb"tern: smp: %d CPU\(s\) online" % n])
        return f"{took:.1f} s to the report; the {n - 1} APs stopped"
    return check


def fatal_while_ap_starts(test_elf):
    """PVH, -smp 4: CPU 0 panics right after sending CPU 2 its start-up IPI
    (tern.test.apstartfatal=2). CPU 2 comes online around the stop (after
    it, or, when the host runs CPU 0's thread late, just before it) and
    must end stopped either way: sent the NMI if it was online, else
    stopping itself on arrival rather than parking. CPU 1 is stopped by
    the NMI; CPU 3 was never started (the firmware's). Before the fix the
    NMI went to every other CPU at once and reached CPU 2 inside the
    trampoline, and QEMU reset the machine during the hold (three runs out
    of three); with the NMIs sent only to the first ncpus slots, CPU 2
    online just before the panic was left parked (one run in eight)."""
    def check():
        # CPU 2 may stop and count itself before the count is printed.
        lines = ["*** tern: FATAL: selftest: a fatal error while an AP starts",
                 re.compile(rb"\*\*\* tern: on CPU 0; [12] other CPU\(s\) stopped")]
        with scratch() as tmp:
            took, _ = fatal_stop(["-kernel", test_elf, "-append", "tern.test.apstartfatal=2"],
                                 4, 0, lines, tmp, others={1, 2})
        return f"{took:.1f} s to the report; CPUs 1 and 2 stopped"
    return check


def hotplug_slots(kernel):
    """PVH, -smp 2,maxcpus=6: QEMU's MADT lists the four absent CPUs as
    disabled; the kernel counts them, starts none, and the two present
    come up with their roles."""
    def check():
        took, out = run_vm(["-kernel", kernel, "-smp", "2,maxcpus=6"],
                           lambda o: READY.search(o) is not None, 60, "the ready line")
        expect_lines(out, [rb"tern: smp: MADT lists 2 enabled CPU\(s\), 0 online-capable "
                           rb"\(not started: no hot-plug\), 4 disabled"])
        expect_cpus(out, 2, madt=False)
        return f"{took:.1f} s"
    return check


LATE = (rb"tern: smp: CPU with APIC id 1 arrived after its start window had closed: halted "
        rb"before touching any CPU's data, not used")


def late_ap(b):
    """PVH, -smp 3, the test kernel serving from a disk: the CPU with APIC
    id 1 is held in the trampoline (tern.test.aplate=1) past its 1 s start
    window, so its slot (CPU 1, the storage role) goes to APIC id 2; then
    let go. It must find out it is late and halt where it is (in the
    trampoline, real mode, interrupts off) without writing anything, CPU 0
    must report it, and the slot's new owner must be intact: APIC id 2
    runs the storage core, a retained QoS 1 message commits and reads
    back, and it is running in the kernel. Written before the fix
    (2026-12-02, ADR-066), it failed: the late CPU ran the trampoline as
    rewritten for APIC id 2, and QEMU reset the machine ("no ready
    line")."""
    def check():
        with scratch() as tmp:
            img, _ = mkdisk(b, tmp, "64M", 512)
            db = DiskBroker(b, tmp, drive(img, "d0"), smp=3)
            vm = db.boot(kernel=b.test_elf, append="tern.test.aplate=1")
            with vm:
                out = db.ready(vm)
                if vm.wait_for(lambda o: re.search(LATE, o) is not None, 30) is None:
                    raise Failure("the late CPU was not reported:\n" + show(vm.text()))
                out = vm.text()
                expect_lines(out, [rb"tern: smp: CPU with APIC id 1 did not come up within "
                                   rb"1000 ms; going on without it",
                                   rb"tern: smp: CPU 1 \(APIC id 2\): storage ",
                                   rb"tern: smp: 2 CPU\(s\) online"])
                if re.search(rb"tern: smp: CPU 2 ", out):
                    raise Failure("a third CPU in the role lines:\n" + show(out))
                db.pub("test/late", "ok", 1, retain=True)
                db.expect_retained("test/late", {"test/late": "ok"})
                q = Qmp(db.qmp)
                q.cmd("stop")
                states = cpu_states(q)
                q.cmd("cont")
                q.close()
                if states.get(1) != (True, False, False):
                    raise Failure(f"the late CPU (QEMU's CPU 1) is not halted outside the "
                                  f"kernel with interrupts off: {states}")
                if states.get(2, (0, 0, False))[2] is not True:
                    raise Failure(f"the slot's new owner (QEMU's CPU 2) is not in the kernel: "
                                  f"{states}")
                vm.expect_no_fatal()
                if vm.text().count(BANNER) > 1:
                    raise Failure("the machine reset:\n" + show(vm.text()))
                db.quit(vm)
        return "late CPU reported and halted; APIC id 2 runs the store; QoS 1 retained"
    return check


def late_ap_after_boot(kernel):
    """PVH, -smp 2: the CPU with APIC id 1 is held in the trampoline until
    CPU 0's main loop runs, after the ready line (the hook lets it go from
    smp_poll_late's first look), then arrives: it must find its start taken
    away and halt, CPU 0 must name it after the ready line, and the machine
    must go on (no reset, no fatal error)."""
    def check():
        with Vm(["-kernel", kernel, "-smp", "2", "-append", "tern.test.aplateboot=1"]) as vm:
            took = vm.wait_for(lambda o: re.search(LATE, o) is not None, 90)
            out = vm.text()
            if took is None:
                raise Failure("the CPU arriving after the boot was never named:\n" +
                              show(out[-2000:]))
            ready = READY.search(out)
            late = re.search(LATE, out)
            if not ready or late.start() < ready.start():
                raise Failure("the late CPU was named before the ready line, not by the "
                              "main loop:\n" + show(out))
            expect_lines(out, [rb"tern: smp: CPU with APIC id 1 did not come up within "
                               rb"1000 ms; going on without it",
                               rb"tern: smp: selftest: letting APIC id 1 go on, after the boot",
                               rb"tern: smp: 1 CPU\(s\) online"])
            time.sleep(2)  # the machine goes on after it
            out = vm.text()
            vm.expect_no_fatal()
            if out.count(BANNER) > 1:
                raise Failure("the machine reset:\n" + show(out))
            if len(re.findall(LATE, out)) != 1:
                raise Failure("the late CPU named more than once:\n" + show(out))
        return f"named {took:.1f} s after boot began, after the ready line"
    return check


def slow_ap(kernel):
    """PVH, -smp 2: the CPU with APIC id 1 takes its claim in time, then is
    held in the trampoline (tern.test.apslow=1) until CPU 0's start window
    has closed. CPU 0 must find the claim taken and wait for it instead of
    giving its slot away: it comes online as CPU 1 with its role, and the
    log says it was late but had claimed in time (ADR-066). Broken on
    purpose once (2026-12-02: a taken claim treated as lost), CPU 0 cleared
    the slot under the arriving CPU and QEMU reset the machine at every
    boot."""
    def check():
        took, out = run_vm(["-kernel", kernel, "-smp", "2", "-append", "tern.test.apslow=1"],
                           lambda o: READY.search(o) is not None, 60, "the ready line")
        expect_lines(out, [rb"tern: smp: CPU with APIC id 1 had claimed its start in time and "
                           rb"came online \d+ ms after its window closed", ROLES[1],
                           rb"tern: smp: 2 CPU\(s\) online"])
        if re.search(rb"did not come up|arrived after its start window|FATAL", out):
            raise Failure("the slow CPU was given up:\n" + show(out))
        return f"ready {took:.1f} s; CPU 1 waited for and online"
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


# The ISO's GRUB passes the development bundle (tools/image/tern.conf, its
# ACL and the dev PKI) as a multiboot2 module; the broker serves mTLS. And
# how the kernel reached PCI: q35's MCFG, found through the RSDP GRUB
# passed (ACPI 1.0 and the RSDT from SeaBIOS, 2.0 and the XSDT from OVMF).
ISO_WANT = (rb"tern: config: bundle with 6 files from boot module \(\d+ bytes\); "
            rb"configuration tern\.conf",
            rb"tern: mqtt: mutual TLS port 8883, 0 connections")
ECAM = rb"tern: pci: ECAM at 0xb0000000, buses 0-255, from the MCFG table \(RSDP revision "
SEABIOS_WANT = ISO_WANT + (ECAM + rb"0 from multiboot2 tag, RSDT\)",)
OVMF_WANT = ISO_WANT + (ECAM + rb"2 from multiboot2 tag, XSDT\)",)


def cases(b):
    ovmf = os.path.exists(OVMF)
    return {
        # The matrix, one boot per (firmware, -smp) pair. The ISO's -smp 1
        # boots are also the ISO boot tests (the screen, the bundle, the
        # RSDP's revision), so that no pair boots twice.
        "smp-pvh-1-mtls": matrix_cell(b, "pvh", 1),
        "smp-pvh-2-mtls": matrix_cell(b, "pvh", 2),
        "smp-pvh-4-mtls": matrix_cell(b, "pvh", 4),
        "smp-seabios-1-mtls": matrix_cell(b, "seabios", 1, SEABIOS_WANT, screen=True),
        "smp-seabios-2-mtls": matrix_cell(b, "seabios", 2, SEABIOS_WANT),
        "smp-seabios-4-mtls": matrix_cell(b, "seabios", 4, SEABIOS_WANT),
        "smp-ovmf-1-mtls": matrix_cell(b, "ovmf", 1, OVMF_WANT, screen=True) if ovmf else None,
        "smp-ovmf-2-mtls": matrix_cell(b, "ovmf", 2, OVMF_WANT) if ovmf else None,
        "smp-ovmf-4-mtls": matrix_cell(b, "ovmf", 4, OVMF_WANT) if ovmf else None,
        # The fatal stop, on every console.
        "smp-ap-fault": ap_fault(b.test_elf),
        "smp-ap-fault-seabios-screen": ap_fault_iso(b.test_elf, "seabios", 4, 3),
        "smp-ap-fault-ovmf-screen": ap_fault_iso(b.test_elf, "ovmf", 4, 3) if ovmf else None,
        "smp-boot-cpu-fatal-stops-aps": boot_cpu_fatal(b.test_elf, 4),
        "smp-fatal-while-an-ap-starts": fatal_while_ap_starts(b.test_elf),
        "smp-hotplug-slots-counted-not-started": hotplug_slots(b.elf),
        "smp-share-heap-console": share_heap_console(b.test_elf),
        "smp-late-ap-halts-itself-and-its-reused-slot-is-intact": late_ap(b),
        "smp-slow-ap-that-claimed-in-time-is-waited-for": slow_ap(b.test_elf),
        "smp-ap-arriving-after-the-boot-is-named-by-the-main-loop":
            late_ap_after_boot(b.test_elf),
    }
