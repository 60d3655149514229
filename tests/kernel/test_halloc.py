"""The hardened kernel heap (mm/kmalloc.c, SPEC B5) in a test build: a
write after free, a double free and a corrupted free-list pointer
(tern.test=heap-uaf, heap-dfree, heap-link; selftest_halloc.c) each halt
with the heap's fatal report naming what was found and the object's size,
and no address; heap-bench times 100k alloc/free pairs under TCG for
docs/PERFORMANCE.md. Each VM stops at the report (no wait for the reset:
test_faults.py already proves the hold and reboot)."""
import re

from harness import Failure, run_vm, show


def heap_fault(kernel, name, report):
    """tern.test=name must end in the fatal report `report`."""
    def check():
        args = ["-kernel", kernel, "-append", f"tern.test={name}"]
        took, out = run_vm(args, lambda o: b"*** tern: resetting in" in o, 30,
                           "fatal report")
        text = show(out)
        want = f"*** tern: FATAL: kmalloc: heap corruption: {report}"
        if want not in text:
            raise Failure(f"no '{want}' in:\n{text}")
        for line in text.splitlines():
            if line.startswith("***") and re.search(r"0x|[0-9a-fA-F]{8,}", line):
                raise Failure(f"report line carries an address: {line}")
        return f"{took:.1f} s to the report"
    return check


def heap_bench(kernel):
    """The bench completes; its figure is the result."""
    def check():
        args = ["-kernel", kernel, "-append", "tern.test=heap-bench"]
        took, out = run_vm(args, lambda o: b"selftest heap-bench: ok" in o, 60, "bench")
        m = re.search(rb"selftest heap-bench: (\d+) alloc/free pairs in (\d+) ms, (\d+) ns", out)
        if not m:
            raise Failure("no bench figure in:\n" + show(out))
        return f"{int(m.group(3))} ns per alloc/free pair (TCG); {took:.1f} s"
    return check


def cases(b):
    return {
        "halloc-write-after-free": heap_fault(b.test_elf, "heap-uaf",
                                              "write after free (64-byte object)"),
        "halloc-double-free": heap_fault(b.test_elf, "heap-dfree",
                                         "double free (32-byte object)"),
        "halloc-corrupted-link": heap_fault(b.test_elf, "heap-link",
                                            "free-list pointer corrupted (128-byte object)"),
        "halloc-bench": heap_bench(b.test_elf),
    }
