"""Crypto and entropy: a crypto self-test forced to fail in the test build
(tern.katfail=NAME, on the C and on the assembly path) is named on the
console and keeps the broker from starting; without virtio-rng, RDRAND
and RDSEED the jitter source alone seeds the RNG. (That every self-test
passes at boot is checked by the boot and mutual-TLS tests.)
"""
import re

from harness import Failure, ready_line, run_ready, show


def kat_fail_test(kernel, name, cpu=None):
    """A known-answer test forced to fail (test builds: tern.katfail=NAME)
    is named on the console and the broker does not start; the kernel
    itself still comes up (no reset loop)."""
    def check():
        args = ["-kernel", kernel, "-append", f"tern.katfail={name}",
                "-device", "virtio-rng-pci",
                "-nic", "user,model=virtio-net-pci"] + (["-cpu", cpu] if cpu else [])
        took, out = run_ready(args, 30)
        text = show(out)
        for want in (f"tern: crypto self-test FAILED: {name}: ",
                     "tern: crypto self-tests: 1 failed",
                     "tern: crypto self-test failed: the broker will not start"):
            if want not in text:
                raise Failure(f"{want!r} not in:\n{text}")
        if "tern: mqtt:" in text and "not serving" not in text:
            raise Failure(f"the broker started:\n{text}")
        return f"{took:.1f} s"
    return check


def jitter_only_test(kernel):
    """Without virtio-rng, RDRAND and RDSEED, the jitter source alone seeds."""
    def check():
        took, out = run_ready(["-kernel", kernel, "-cpu", "qemu64,-rdrand,-rdseed"], 60)
        line = ready_line(out)
        if not re.search(r"rng: seeded, \d+ bits credited \(jitter \d+\)", line):
            raise Failure(f"not seeded by jitter alone: {line}")
        return f"{took:.1f} s: {line}"
    return check


def cases(b):
    return {
        "crypto-kat-fail-ecdsa": kat_fail_test(b.test_elf, "ecdsa-p256-verify"),
        "crypto-kat-fail-gcm-asm": kat_fail_test(b.test_elf, "aes-128-gcm", "max"),
        "rng-jitter-only": jitter_only_test(b.elf),
    }
