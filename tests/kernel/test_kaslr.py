"""Randomised placement and read-only page tables (SPEC B5, issue 19).

Two boots of the same test image (PVH, tern.test.kaslr=show, which only
test builds honour) show different kernel, heap (direct map) and stack
bases; with 9 bits for the kernel two boots collide once in ~500, so a
third boot breaks a tie and the bases must not all be equal. The
production image states the placement entropy and its source on the
boot log and prints no address of the higher half up to its ready line,
by PVH (qemu64: no RDRAND, the jitter fallback; -cpu max: RDRAND, as
TCG has no RDSEED) and by GRUB multiboot2 from the ISO under SeaBIOS and
OVMF. A write to a page table through its direct-map alias
(tern.test=write-pagetable) faults with a report naming it. An image
whose relocation table is damaged halts before the higher half runs,
saying so on serial.
"""
import os
import re
import sys

from harness import BANNER, OVMF, REPO, Failure, run_ready, run_vm, scratch, show
from test_faults import fault_test

sys.path.insert(0, os.path.join(REPO, "tools", "kreloc"))
import kreloc  # noqa: E402

KASLR_LINE = re.compile(rb"tern: kaslr: kernel (\d+) bits, heap (\d+) bits, stacks (\d+) bits, "
                        rb"mmio (\d+) bits \(([^)\n]+)\)\r?\n")
BASES = re.compile(rb"tern: kaslr: test build: kernel base ([0-9a-f]+) heap base ([0-9a-f]+) "
                   rb"stack base ([0-9a-f]+) mmio base ([0-9a-f]+) \((\d+) relocations\)")
# An address of the higher half as kprintf would print one (%llx, %p).
HIGH_ADDRESS = re.compile(rb"(?i)(0x)?ffff[89a-f][0-9a-f]{11}")


def check_kaslr_line(out, source):
    m = KASLR_LINE.search(out)
    if not m:
        raise Failure("no kaslr line:\n" + show(out[:1500]))
    bits = tuple(int(x) for x in m.groups()[:4])
    if bits != (9, 24, 28, 19):
        raise Failure(f"kaslr bits {bits}, expected (9, 24, 28, 19): {m.group(0)!r}")
    if m.group(5).decode() != source:
        raise Failure(f"entropy source {m.group(5).decode()!r}, expected {source!r}")
    return m.group(0).decode().strip()


def bases_once(kernel):
    _, out = run_vm(["-kernel", kernel, "-append", "tern.test.kaslr=show"],
                    lambda o: BASES.search(o) is not None, 30, "the test build's bases")
    m = BASES.search(out)
    kernel_base, heap, stack, mmio = (int(x, 16) for x in m.groups()[:4])
    if not int(m.group(5)):
        raise Failure("no relocation applied")
    return kernel_base, heap, stack, mmio


def bases_differ_test(kernel):
    def check():
        boots = [bases_once(kernel), bases_once(kernel)]
        if any(a == b for a, b in zip(*boots)):
            boots.append(bases_once(kernel))  # a tie: 1 in ~2^9 for the kernel
        for i, name in enumerate(("kernel", "heap", "stack", "mmio")):
            if len({b[i] for b in boots}) == 1:
                raise Failure(f"{name} base the same in {len(boots)} boots")
        return f"{len(boots)} boots, kernel bases differ by {abs(boots[0][0] - boots[1][0]) >> 20} MiB"
    return check


def prod_boot_test(args, source, timeout, loader_line=None):
    """The production image up to its ready line (or loader_line): the
    kaslr line, and no address of the higher half anywhere."""
    def check():
        if loader_line:
            took, out = run_vm(args, lambda o: loader_line in o, timeout, loader_line.decode())
        else:
            took, out = run_ready(args, timeout)
        line = check_kaslr_line(out, source)
        m = HIGH_ADDRESS.search(out)
        if m:
            raise Failure(f"an address in the production boot log: {m.group(0)!r}")
        if BASES.search(out):
            raise Failure("the production build printed its bases")
        return f"{line} ({took:.1f} s)"
    return check


def damaged_table_test(kernel):
    def check():
        with open(kernel, "rb") as f:
            elf = bytearray(f.read())
        sec = next(s for s in kreloc.sections(bytes(elf)) if s["name"] == ".kreloc")
        elf[sec["off"]] ^= 0xFF  # the magic
        with scratch() as tmp:
            bad = os.path.join(tmp, "bad.elf")
            with open(bad, "wb") as f:
                f.write(elf)
            want = b"tern: kaslr: the relocation table is damaged; halted"
            took, out = run_vm(["-kernel", bad], lambda o: want in o, 20, "the refusal")
        if BANNER in out:
            raise Failure("the higher half ran with a damaged table:\n" + show(out))
        return f"halted with the reason in {took:.1f} s"
    return check


def cases(b):
    iso = ["-cdrom", b.iso]
    ovmf = os.path.exists(OVMF)
    return {
        "kaslr-bases-differ": bases_differ_test(b.test_elf),
        "kaslr-prod-pvh-jitter": prod_boot_test(["-kernel", b.elf, "-nic", "none"],
                                                "tsc jitter and rtc, no rdrand", 60),
        "kaslr-prod-pvh-rdrand": prod_boot_test(["-cpu", "max", "-kernel", b.elf, "-nic", "none"],
                                                "rdrand", 60),
        "kaslr-iso-seabios": prod_boot_test(iso + ["-nic", "none"], "tsc jitter and rtc, no rdrand",
                                            60, b"tern: pci:"),
        "kaslr-iso-ovmf": prod_boot_test(["-bios", OVMF] + iso + ["-nic", "none"],
                                         "tsc jitter and rtc, no rdrand", 120, b"tern: pci:")
                          if ovmf else None,
        "kaslr-damaged-table-halts": damaged_table_test(b.test_elf),
        "fault-write-pagetable": fault_test(b.test_elf, "write-pagetable", "page fault (#PF)",
                                            "write to a page table (read-only after boot)"),
    }
