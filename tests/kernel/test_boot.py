"""Boots: the production kernel reaches its ready line by PVH (qemu
-kernel) on q35 and i440fx, with 64 MiB and with 5 GiB, and with -cpu max
(wolfSSL's assembly paths for the crypto self-tests); an unknown tern.mode
says it is not in this build and halts (install mode: test_install.py,
the diagnostics modes: test_diag.py); the test
build's heap self-test passes, and so does its kernel-thread self-test
(registers, MXCSR, x87 control word and stack survive every switch both
ways; waits and time slices hand the CPU back). The ISO (GRUB, multiboot2)
under SeaBIOS and OVMF, serving mutual TLS from its bundle and showing
the same lines on the screen as on serial, is test_smp.py's matrix.
"""
from harness import KAT_PASSED, READY, Failure, expect_lines, ready_line, run_ready, run_vm, show


def expect_ready(out, loader, want):
    """Booted via loader, no fatal report, every pattern of want on serial;
    the ready line."""
    loaded = READY.search(out).group(1).decode()
    if loaded != loader:
        raise Failure(f"booted via {loaded}, expected {loader}")
    if b"FATAL" in out:
        raise Failure("fatal report during boot")
    expect_lines(out, want)
    return ready_line(out)


def ready_test(args, loader, timeout, want=()):
    def check():
        took, out = run_ready(args, timeout)
        return f"{took:.1f} s: {expect_ready(out, loader, want)}"
    return check


def mode_test(kernel, mode, title):
    def check():
        args = ["-kernel", kernel, "-append", f"tern.mode={mode}"]
        want = f"tern: {title}: not available in this build".encode()
        took, out = run_vm(args, lambda o: b"tern: halted" in o, 20, "halt message")
        if want not in out or READY.search(out):
            raise Failure(f"unexpected output:\n{show(out)}")
        return f"{took:.1f} s"
    return check


def selftest(kernel, name):
    """A test build's self-test (tern.test=NAME) reports itself passed."""
    def check():
        took, out = run_ready(["-kernel", kernel, "-append", f"tern.test={name}"], 30)
        if f"selftest {name}: ok".encode() not in out:
            raise Failure(f"selftest {name} did not pass:\n{show(out)}")
        return f"{took:.1f} s"
    return check


def cases(b):
    # The ISO under SeaBIOS and OVMF (mutual TLS from its bundle, the same
    # lines on the screen as on serial) boots in test_smp.py's matrix:
    # smp-seabios-1-mtls and smp-ovmf-1-mtls, one boot per (firmware, -smp).
    return {
        # The production build reseeds the stack guard and prints no figure about it.
        "pvh-ready": ready_test(["-kernel", b.elf], "pvh", 20,
                                (KAT_PASSED, rb"tern: stack guard: reseeded from the DRBG\r?\n")),
        # -cpu max: AES-NI, AVX2, BMI2/ADX, so wolfSSL's assembly paths run
        # the self-tests (qemu64, the default, takes its C fallbacks).
        "pvh-ready-cpu-max-5g": ready_test(["-kernel", b.elf, "-cpu", "max", "-m", "5G"],
                                           "pvh", 20,
                                           (rb"AES-NI yes, AVX2 yes, BMI2/ADX yes", KAT_PASSED)),
        "pvh-ready-pc-64m": ready_test(["-kernel", b.elf, "-M", "pc", "-m", "64"], "pvh", 20),
        "selftest-heap": selftest(b.test_elf, "heap"),
        "selftest-kthread": selftest(b.test_elf, "kthread"),
        "mode-unknown": mode_test(b.elf, "bogus", "that mode"),
    }
