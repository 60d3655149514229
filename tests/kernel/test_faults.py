"""Fatal faults: a deliberate fault in the test build (tern.test=NAME: page
fault, #GP, stack overflow on the main stack and on a kernel thread's, a
write to text, execution of data) prints a
report with its cause and no addresses, holds, resets, and the kernel
boots again (its banner a second time); a stack frame smashed after the
stack protector's guard was reseeded from the DRBG (tern.test.guard=smash)
is caught the same way; the debug build adds a register
dump; a test ISO that faults puts the report on the framebuffer as well
as on serial.
"""
import re

from harness import (BANNER, Failure, Qmp, Screen, Vm, qmp_args, run_vm, scratch, show,
                     test_iso)


def reset_report(kernel, name):
    """Boot kernel with tern.test=name through a report and a reboot; the
    seconds taken and the text of the first boot."""
    args = ["-kernel", kernel, "-append", f"tern.test={name}"]
    took, out = run_vm(args, lambda o: o.count(BANNER) >= 2, 30,
                       "fatal report followed by a reboot")
    return took, show(out.split(BANNER)[1])


def fault_test(kernel, name, exception, cause):
    """A deliberate fault must print the report, hold, reset and boot again."""
    def check():
        took, text = reset_report(kernel, name)
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


GUARD_RESEEDED = re.compile(r"tern: stack guard: reseeded from the DRBG "
                            r"\(test build: (\d+) bits changed\)")


def canary_after_reseed_test(kernel):
    """The boot replaces the early stack guard with one from the DRBG (the
    test build says how many bits changed, never the value: 56 random bits,
    so none changing means no reseed); a frame smashed after that is caught
    by the stack protector with the new guard: report, hold, reset."""
    def check():
        args = ["-kernel", kernel, "-append", "tern.test.guard=smash"]
        took, out = run_vm(args, lambda o: o.count(BANNER) >= 2, 40,
                           "fatal report followed by a reboot")
        text = show(out.split(BANNER)[1])
        m = GUARD_RESEEDED.search(text)
        if not m:
            raise Failure(f"no reseed line in:\n{text}")
        if int(m.group(1)) == 0:
            raise Failure("the stack guard did not change when reseeded")
        if text.find("*** tern: FATAL: stack smashing detected (stack protector)") < m.end():
            raise Failure(f"no stack protector report after the reseed in:\n{text}")
        if "*** tern: resetting in 1 s" not in text or "*** tern: reset" not in text:
            raise Failure(f"no hold-and-reset in:\n{text}")
        for line in (l for l in text.splitlines() if l.startswith("***")):
            if re.search(r"0x|[0-9a-fA-F]{8,}", line):
                raise Failure(f"report line carries an address: {line}")
        return f"{took:.1f} s to reset and reboot; {m.group(1)} guard bits changed"
    return check


def debug_dump_test(kernel):
    """Debug builds add a register dump to the report."""
    def check():
        took, text = reset_report(kernel, "gpfault")
        if not re.search(r"rip [0-9a-f]{16}", text) or "general protection" not in text:
            raise Failure(f"no register dump in:\n{text}")
        return f"{took:.1f} s"
    return check


def fatal_screen_test(test_elf):
    """A5 on the framebuffer: a test ISO (the test kernel, a page fault
    requested on its command line) must put the fatal report on the screen
    as well as on serial. The VM is stopped when serial shows the report,
    before the short test-build hold ends in a reset."""
    def check():
        with scratch() as tmp:
            iso = test_iso(tmp, test_elf, "tern.test=pagefault")
            qmp, sock = qmp_args(tmp)
            with Vm(["-cdrom", iso] + qmp) as vm:
                q = Qmp(sock)
                took = vm.wait_for(lambda o: b"*** tern: resetting in" in o, 60)
                if took is None:
                    raise Failure("no fatal report:\n" + show(vm.text()))
                q.cmd("stop")
                out = vm.text()
                screen = Screen(q, out, tmp)
                for e in ("*** tern: FATAL: CPU exception: page fault (#PF)",
                          "*** tern: cause: null pointer dereference",
                          "*** tern: resetting in 1 s"):
                    if e not in show(out):
                        raise Failure(f"{e!r} not on serial")
                    screen.expect(e)
        return f"{took:.1f} s to the report; on serial and on the screen"
    return check


def cases(b):
    return {
        "fault-pagefault": fault_test(b.test_elf, "pagefault", "page fault (#PF)",
                                      "null pointer dereference"),
        "fault-gpfault": fault_test(b.test_elf, "gpfault", "general protection fault (#GP)",
                                    None),
        "fault-stackoverflow": fault_test(b.test_elf, "stackoverflow", "page fault (#PF)",
                                          "stack overflow into a guard page"),
        "fault-kthread-stackoverflow": fault_test(b.test_elf, "kthread-overflow",
                                                 "page fault (#PF)",
                                                 "stack overflow into a guard page"),
        "fault-write-text": fault_test(b.test_elf, "write-text", "page fault (#PF)",
                                       "write to read-only memory (W^X)"),
        "fault-exec-data": fault_test(b.test_elf, "exec-data", "page fault (#PF)",
                                      "execution of non-executable memory (NX)"),
        "fault-canary-after-guard-reseed": canary_after_reseed_test(b.test_elf),
        "debug-register-dump": debug_dump_test(b.debug_elf),
        "fatal-report-on-framebuffer": fatal_screen_test(b.test_elf),
    }
