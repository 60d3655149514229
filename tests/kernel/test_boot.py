"""Boots: the production kernel reaches its ready line by PVH (qemu
-kernel) on q35 and i440fx, with 64 MiB and with 5 GiB, and with -cpu max
(wolfSSL's assembly paths for the crypto self-tests); the ISO (GRUB,
multiboot2) under SeaBIOS and OVMF serves mutual TLS from its bundle and
shows the same lines on the screen as on serial; an unknown tern.mode
says it is not in this build and halts (install mode: test_install.py,
the diagnostics modes: test_diag.py); the test
build's heap self-test passes, and so does its kernel-thread self-test
(registers, MXCSR, x87 control word and stack survive every switch both
ways; waits and time slices hand the CPU back).
"""
import os

from harness import (KAT_PASSED, OVMF, READY, Failure, Qmp, Screen, Vm, expect_lines,
                     qmp_args, ready_line, run_ready, run_vm, scratch, show)

# The ISO's GRUB passes the development bundle (tools/image/tern.conf, its
# ACL and the dev PKI) as a multiboot2 module; the broker serves mTLS.
ISO_WANT = (rb"tern: config: bundle with 6 files from boot module \(\d+ bytes\); "
            rb"configuration tern\.conf",
            rb"tern: mqtt: mutual TLS port 8883, 0 connections")


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


def screen_test(args, loader, timeout, want=()):
    """Boot an ISO with a display: the serial console must show the ready
    line and say the framebuffer joined, and the screen (QEMU's
    screendump, read with the kernel's own font) must show the same lines
    as serial - the console line and the whole ready line."""
    def check():
        with scratch() as tmp:
            qmp, sock = qmp_args(tmp)
            with Vm(args + qmp) as vm:
                took, out = vm.wait_ready(timeout)
                ready = expect_ready(out, loader, want)
                q = Qmp(sock)
                q.cmd("stop")
                screen = Screen(q, out, tmp)
                for e in (screen.console, ready):
                    screen.expect(e)
        return (f"{took:.1f} s; {screen.width}x{screen.height}, {screen.cols} x {screen.rows} "
                f"characters; ready line on screen")
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
    iso_net = ["-cdrom", b.iso, "-nic", "user,model=virtio-net-pci"]
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
        "iso-seabios": screen_test(iso_net, "multiboot2", 60, ISO_WANT + (
            rb"tern: pci: ECAM at 0xb0000000, buses 0-255, from the MCFG table \(RSDP "
            rb"revision 0 from multiboot2 tag, RSDT\)",)),
        "iso-ovmf": screen_test(["-bios", OVMF] + iso_net, "multiboot2", 120, ISO_WANT + (
            rb"tern: pci: ECAM at 0xb0000000, buses 0-255, from the MCFG table \(RSDP "
            rb"revision 2 from multiboot2 tag, XSDT\)",)) if os.path.exists(OVMF) else None,
    }
