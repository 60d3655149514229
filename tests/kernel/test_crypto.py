"""Crypto and entropy: a crypto self-test forced to fail in the test build
(tern.katfail=NAME, on the C and on the assembly path) is named on the
console and keeps the broker from starting; without virtio-rng, RDRAND
and RDSEED the jitter source alone seeds the RNG; the diagnostics' crypto
and handshake measurements (src/diag/cryptobench.c) run in the kernel
(test hook tern.test.cryptobench=MS). (That every self-test passes at boot
is checked by the boot and mutual-TLS tests.)
"""
import json
import re

from harness import Failure, ready_line, run_ready, run_vm, show


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


CRYPTO_OPS = ("ecdsa_p256_sign", "ecdsa_p256_verify", "x25519_keygen", "x25519_shared_secret",
              "ecdh_p256_keygen", "ecdh_p256_shared_secret", "sha256_64_bytes", "sha256",
              "aes128_gcm", "aes256_gcm", "chacha20_poly1305")


def cryptobench_test(kernel, budget_ms):
    """tern.test.cryptobench=MS: the kernel measures every crypto operation
    and full mutual-TLS 1.3 handshakes between two in-memory sessions, and
    prints the report's two sections as JSON; every figure is there (> 0)."""
    def check():
        args = ["-kernel", kernel, "-append", f"tern.test.cryptobench={budget_ms}",
                "-device", "virtio-rng-pci"]
        took, out = run_vm(args, lambda o: b"tern: cryptobench: end" in o, 120,
                           "the cryptobench report")
        text = out.decode("utf-8", "replace")
        m = re.search(r"tern: cryptobench: begin\r?\n(.*?)\r?\ntern: cryptobench: end", text,
                      re.S)
        if m is None:
            raise Failure(f"no report between the markers:\n{show(out[-3000:])}")
        try:
            doc = json.loads(m.group(1))
        except ValueError as e:
            raise Failure(f"the report is not JSON ({e}):\n{m.group(1)[:3000]}") from e
        for op in CRYPTO_OPS:
            fig = doc["crypto"][op]
            if not fig["iterations"] >= 1 or not fig["per_op_ns"] or fig["per_op_ns"] <= 0:
                raise Failure(f"crypto.{op} not measured: {fig}")
        hs = doc["handshake"]
        if hs["handshakes"] < 1 or hs["version"] != "TLSv1.3" or not hs["server_median_ns"]:
            raise Failure(f"no handshake measured: {hs}")
        parts = hs["breakdown"]
        for key in ("key_exchange_ns", "signature_ns", "certificate_verification_ns"):
            if not parts[key] or parts[key] <= 0:
                raise Failure(f"breakdown.{key} missing: {parts}")
        return (f"{took:.1f} s: handshake median {hs['server_median_ns'] / 1e6:.2f} ms over "
                f"{hs['handshakes']}, {doc['crypto']['aes128_gcm']['impl']}")
    return check


def cases(b):
    return {
        "crypto-kat-fail-ecdsa": kat_fail_test(b.test_elf, "ecdsa-p256-verify"),
        "crypto-kat-fail-gcm-asm": kat_fail_test(b.test_elf, "aes-128-gcm", "max"),
        "crypto-kat-fail-chacha-asm": kat_fail_test(b.test_elf, "chacha20-poly1305", "max"),
        "crypto-kat-fail-ecdh": kat_fail_test(b.test_elf, "ecdh-p256"),
        "crypto-kat-fail-pbkdf2": kat_fail_test(b.test_elf, "pbkdf2-sha512"),
        "rng-jitter-only": jitter_only_test(b.elf),
        "crypto-cryptobench": cryptobench_test(b.test_elf, 300),
    }
