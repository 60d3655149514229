"""The diagnostics report's hardware sections (diag/hw.c, hwdev.c,
rngpanel.c, membw.c) on a real boot: the test kernel's tern.test.diaghw
hook prints them as JSON and halts. One PVH boot with -smp 2, -cpu max
(RDRAND), a virtio-rng, a virtio-blk disk and a virtio-net device: the JSON
parses, every section is there, every null value has its "_why", and the
facts QEMU fixes are right (2 processors in the MADT, the TCG hypervisor
signature, the disk's size and block sizes, both RNG sources present and
neither stuck nor biased, the TSC measured against the PM timer close to
boot's PIT figure). Then the same hook from a GRUB ISO under SeaBIOS and
OVMF (multiboot2): the firmware type ("bios", "uefi") and the loader's
name, with the same completeness checks.
"""
import json
import os
import re
import shutil
import subprocess

from harness import OVMF, Failure, disk_image, drive, raw_disk, run_vm, scratch, show

BEGIN = b"tern: diag-hw: begin"
END = b"tern: diag-hw: end"
SECTIONS = ("cpu", "hypervisor", "cores", "memory", "firmware", "pci", "nics", "disks", "rng",
            "memory_bandwidth")


def unexplained_nulls(v, path="$"):
    """Paths of null members without a sibling string "<key>_why"."""
    bad = []
    if isinstance(v, dict):
        for k, x in v.items():
            if x is None and not isinstance(v.get(k + "_why"), str):
                bad.append(f"{path}.{k}")
            bad += unexplained_nulls(x, f"{path}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            if x is None:
                bad.append(f"{path}[{i}]")
            bad += unexplained_nulls(x, f"{path}[{i}]")
    return bad


def report(out):
    start = out.find(BEGIN)
    end = out.find(END, start)
    if start < 0 or end < 0:
        raise Failure("no diag-hw report on serial:\n" + show(out[-2000:]))
    try:
        return json.loads(out[start + len(BEGIN):end].strip())
    except ValueError as e:
        raise Failure(f"the report is not JSON ({e}):\n" + show(out[start:end + 20]))


def check(cond, what, doc):
    if not cond:
        raise Failure(f"{what}; report:\n{json.dumps(doc, indent=1)[:6000]}")


def complete(d):
    """Every section present, every null explained, the MADT's 2 CPUs."""
    for s in SECTIONS:
        check(s in d, f"section {s} missing", d)
    bad = unexplained_nulls(d)
    check(not bad, f"null without _why: {bad}", d)
    cores = d["cores"]
    check(cores["enabled"] == 2 and cores["apic_ids"] == [0, 1] and cores["ioapics"] == 1,
          "the MADT says 2 processors and 1 IO-APIC", d)


def hw_sections(build):
    def run():
        with scratch() as tmp:
            disk = raw_disk(disk_image(tmp, "blank.img", 64))
            args = ["-kernel", build.test_elf, "-smp", "2", "-cpu", "max",
                    "-append", "tern.test.diaghw=1",
                    "-device", "virtio-rng-pci,disable-legacy=on",
                    "-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0",
                    ] + drive(disk, "d0", device_opts="physical_block_size=4096")
            took, out = run_vm(args, lambda o: END in o, 90, "the diag-hw report")
        d = report(out)
        complete(d)
        cpu, cores = d["cpu"], d["cores"]
        check(cpu["features"]["rdrand"] is True, "-cpu max has RDRAND", d)
        check(d["hypervisor"]["present"] and d["hypervisor"]["name"] == "QEMU TCG",
              "hypervisor is QEMU TCG", d)
        check(cores["used_by_tern"] == 1, "tern uses one core", d)
        check("acpi pm timer" in cpu["measured_against"], "TSC measured against the PM timer", d)
        check(abs(cpu["measured_khz"] - cpu["boot_pit_khz"]) < cpu["boot_pit_khz"] // 10,
              "PM timer and PIT figures agree within 10%", d)
        mem = d["memory"]
        check(200 << 20 < mem["usable_bytes"] <= 256 << 20 and mem["free_bytes"] > 0,
              "usable memory of a 256 MiB VM", d)
        check(d["firmware"]["loader"] == "pvh" and d["firmware"]["type"] is None,
              "PVH boot: firmware type unknown, explained", d)
        # Without disable-legacy QEMU makes transitional functions (1af4:1001...).
        names = [(p["name"] or "").replace(" (transitional)", "") for p in d["pci"]]
        for n in ("virtio-blk", "virtio-rng", "virtio-net", "Intel Q35 host bridge"):
            check(n in names, f"pci lists {n}", d)
        blk = d["pci"][names.index("virtio-blk")]
        check(isinstance(blk["msix_entries"], int) and blk["msix_entries"] >= 2,
              "virtio-blk has an MSI-X table", d)
        vnet = [n for n in d["nics"] if n["device"].startswith("virtio-net")]
        check(len(vnet) == 1 and vnet[0]["mac"] is None and "not started" in vnet[0]["mac_why"],
              "virtio-net listed, network not started by the hook (explained)", d)
        check(len(d["disks"]) == 1, "one disk", d)
        disk0 = d["disks"][0]
        check(disk0["bus"] == "virtio-blk" and disk0["capacity_bytes"] == 64 << 20
              and disk0["logical_block_bytes"] == 512 and disk0["physical_block_bytes"] == 4096
              and re.fullmatch(r"[0-9a-f]{2}:[0-9a-f]{2}\.\d", disk0["pci"] or ""),
              "the disk's bus, PCI address, size and block sizes", d)
        src = {s["name"]: s for s in d["rng"]["sources"]}
        for n in ("rdrand", "virtio-rng"):
            s = src[n]
            check(s["present"] and re.fullmatch(r"[0-9a-f]{32}", s["fresh_hex"])
                  and s["tested_bytes"] == 65536 and s["stuck"] is False
                  and s["biased"] is False and 49 < s["ones_pct"] < 51,
                  f"{n}: fresh bytes, 64 KiB neither stuck nor biased", d)
        check(src["rdrand"]["fresh_hex"] != src["virtio-rng"]["fresh_hex"],
              "sources give different bytes", d)
        j = src["jitter"]
        check(j["present"] and j["samples_taken"] >= 1024 and j["health"]["failed"] is False
              and "fresh_health" in j, "jitter statistics and health", d)
        check(d["rng"]["pool"]["seeded"] is True, "pool seeded", d)
        bw = d["memory_bandwidth"]
        check(bw["buffer_bytes"] >= 4 << 20 and bw["read_mib_s"] > 0 and bw["write_mib_s"] > 0
              and bw["copy_mib_s"] > 0, "memory bandwidth figures", d)
        timing = re.search(rb"tern: diag-hw: hw (\d+) ms, membw (\d+) ms, (\d+) bytes", out)
        return (f"{took:.1f} s; {timing.group(0).decode() if timing else ''}; "
                f"tsc {cpu['measured_khz']} kHz; read {bw['read_mib_s']} MiB/s")
    return run


def iso_firmware(build, uefi):
    """The hook from a GRUB ISO (multiboot2): SeaBIOS says bios, OVMF uefi
    (multiboot2's EFI tags), and GRUB names itself."""
    def run():
        with scratch() as tmp:
            root = os.path.join(tmp, "iso")
            os.makedirs(os.path.join(root, "boot", "grub"))
            shutil.copy(build.test_elf, os.path.join(root, "boot", "tern.elf"))
            with open(os.path.join(root, "boot", "grub", "grub.cfg"), "w") as f:
                f.write("serial --unit=0 --speed=115200\nterminal_output serial\n"
                        "set timeout=0\nmenuentry diaghw {\n"
                        "  multiboot2 /boot/tern.elf tern.test.diaghw=1\n}\n")
            iso = os.path.join(tmp, "diaghw.iso")
            r = subprocess.run(["grub-mkrescue", "-o", iso, root], capture_output=True)
            if r.returncode != 0:
                raise Failure("grub-mkrescue: " + show(r.stderr))
            args = ["-cdrom", iso, "-smp", "2"] + (["-bios", OVMF] if uefi else [])
            took, out = run_vm(args, lambda o: END in o, 120, "the diag-hw report")
        d = report(out)
        complete(d)
        fw = d["firmware"]
        want = "uefi" if uefi else "bios"
        check(fw["loader"] == "multiboot2" and fw["type"] == want, f"firmware type {want}", d)
        check(fw["loader_name"].startswith("GRUB"), "GRUB's loader name", d)
        check(fw["cmdline"] == "tern.test.diaghw=1", "the command line", d)
        return f"{took:.1f} s; firmware {fw['type']}, loader {fw['loader_name']}"
    return run


def cases(b):
    return {"diag-hw-sections-pvh-smp2": hw_sections(b),
            "diag-hw-firmware-seabios": iso_firmware(b, False),
            "diag-hw-firmware-ovmf": iso_firmware(b, True) if os.path.exists(OVMF) else None}
