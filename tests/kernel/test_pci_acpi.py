"""PCI and ACPI: enumeration finds the modern virtio devices and the
drivers use them; configuration space through ECAM where ACPI has an MCFG
table (q35) and through the legacy ports where it has none (i440fx), and
the RSDP found by the BIOS-area search as well as from PVH start info.
"""
import re

from harness import expect_lines, run_ready


def pci_test(kernel, machine="q35", access=rb"ECAM", extra=(), append=None):
    """Enumeration finds modern virtio devices (vendor 1af4, id 0x1040 + type)
    and the drivers use them: entropy from virtio-rng, an address by DHCP.
    q35 has an ACPI MCFG table, so configuration space is reached through
    ECAM; i440fx (pc) has none, so through the legacy ports."""
    def check():
        args = ["-kernel", kernel, "-M", machine, "-device", "virtio-rng-pci,disable-legacy=on",
                "-device", "virtio-net-pci,disable-legacy=on,netdev=n0",
                "-netdev", "user,id=n0"]
        if append:
            args += ["-append", append]
        took, out = run_ready(args, 20)
        wants = [rb"tern: pci 00:0[0-9a-f]\.0 1af4:1044 class 00ff",
                 rb"tern: pci 00:0[0-9a-f]\.0 1af4:1041 class 0200",
                 rb"tern: pci: \d+ devices \(" + access,
                 rb"tern: ready .*rng: seeded, \d+ bits credited \(.*virtio-rng \d+",
                 rb"tern: ready .*net: 52:54:00:12:34:56 link up, dhcp 10\.0\.2\.15/24"]
        if machine == "q35":
            wants.append(rb"tern: pci 00:1f\.0 8086:2918 class 0601")
        expect_lines(out, wants + list(extra))
        line = re.search(rb"tern: pci: (ECAM|legacy).*", out).group(0).decode()
        return f"{took:.1f} s: {line}"
    return check


def cases(b):
    return {
        "pci-virtio-modern": pci_test(b.elf),
        "pci-virtio-modern-pc-legacy": pci_test(
            b.elf, machine="pc", access=rb"legacy configuration ports",
            extra=[rb"tern: pci: legacy configuration ports \(no ECAM: MCFG not present; "
                   rb"RSDP revision 0 from PVH start info, RSDT\)"]),
        "pci-acpi-bios-area-search": pci_test(
            b.test_elf, machine="q35", access=rb"ECAM",
            extra=[rb"tern: pci: ECAM at 0xb0000000, buses 0-255, from the MCFG table \(RSDP "
                   rb"revision 0 from BIOS area search, RSDT\)"], append="tern.acpi=scan"),
    }
