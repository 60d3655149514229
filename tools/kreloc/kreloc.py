#!/usr/bin/env python3
"""kreloc.py - the kernel's relocation table for KASLR (SPEC B5).

The kernel is compiled with -mcmodel=kernel (absolute addresses in the top
2 GiB, as fast as before) and linked once with --emit-relocs, which keeps
every relocation the linker applied. This tool reads that ELF and writes
the few kinds the boot code must redo when it moves the higher half by a
random slide (src/platform/kernel/arch/x86_64/kaslr_early.c):

  R_X86_64_64   against a symbol of the higher half: 64-bit pointers
  R_X86_64_32S  against a symbol of the higher half: sign-extended 32-bit
                immediates and displacements (valid while the slide keeps
                the image in the top 2 GiB, which the boot code ensures)

Everything else must not depend on where the higher half lies, and the
tool refuses the image (build error) when something does: a 32-bit
zero-extended or 8/16-bit absolute reference to the higher half, a
PC-relative reference between the higher half and the fixed boot code,
a GOT reference. Sites in non-loaded sections (debug info) are ignored.

Output (little endian): magic "KREL", count of 64-bit sites, count of
32S sites, 0; then each list of sites as the low 32 bits of the site's
link-time address (sign-extended by the reader: the higher half is in the
top 2 GiB, the boot code below 2 GiB). Usage:

  kreloc.py IMAGE.elf OUT.bin            write the table
  kreloc.py --check IMAGE.elf TABLE.bin  fail unless IMAGE's table is TABLE
"""
import struct
import sys

KERNEL_VMA = 0xffffffff80000000
SHF_ALLOC = 2
SHT_RELA = 4
SHN_UNDEF, SHN_ABS = 0, 0xfff1

R_NONE, R_64, R_PC32, R_PLT32, R_32, R_32S = 0, 1, 2, 4, 10, 11
R_PC16, R_PC8, R_PC64, R_SIZE32, R_SIZE64 = 13, 15, 24, 32, 33
PC_RELATIVE = {R_PC32, R_PLT32, R_PC16, R_PC8, R_PC64}
NAMES = {3: "GOT32", 9: "GOTPCREL", 10: "32", 12: "16", 14: "8", 25: "GOTOFF64",
         26: "GOTPC32", 41: "GOTPCRELX", 42: "REX_GOTPCRELX"}


class Refused(Exception):
    pass


def sections(elf):
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise Refused("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3a)
    out = []
    for i in range(shnum):
        (name, typ, flags, addr, off, size, link, info, _align,
         entsize) = struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
        out.append(dict(name=name, type=typ, flags=flags, addr=addr, off=off,
                        size=size, link=link, info=info, entsize=entsize))
    strtab = out[shstrndx]
    for s in out:
        end = elf.index(b"\0", strtab["off"] + s["name"])
        s["name"] = elf[strtab["off"] + s["name"]:end].decode()
    return out


def table(elf):
    """(sites of 64-bit relocations, sites of 32S relocations), sorted."""
    secs = sections(elf)

    def moves_section(idx):
        s = secs[idx]
        return bool(s["flags"] & SHF_ALLOC) and s["addr"] >= KERNEL_VMA

    r64, r32s, errors = set(), set(), []
    for rel in secs:
        if rel["type"] != SHT_RELA:
            continue
        site_sec = secs[rel["info"]]
        if not site_sec["flags"] & SHF_ALLOC:
            continue  # debug information: never loaded
        site_moves = moves_section(rel["info"])
        symtab = secs[rel["link"]]
        for off in range(rel["off"], rel["off"] + rel["size"], 24):
            where, info, addend = struct.unpack_from("<QQq", elf, off)
            typ, symi = info & 0xffffffff, info >> 32
            _name, _inf, _oth, shndx, value, _size = struct.unpack_from(
                "<IBBHQQ", elf, symtab["off"] + symi * 24)
            if shndx == SHN_UNDEF:
                target_moves = False
            elif shndx == SHN_ABS or shndx >= len(secs):
                target_moves = value >= KERNEL_VMA
            else:
                target_moves = moves_section(shndx)
            what = f"{site_sec['name']}+{where - site_sec['addr']:#x} (type {typ}, {addend:+#x})"
            if typ in (R_NONE, R_SIZE32, R_SIZE64):
                continue
            if typ in PC_RELATIVE:
                if site_moves != target_moves:
                    errors.append(f"PC-relative reference across the slide: {what}")
                continue
            if typ == R_64:
                if target_moves:
                    r64.add(where & 0xffffffff)
                continue
            if typ == R_32S:
                if target_moves:
                    r32s.add(where & 0xffffffff)
                continue
            if typ == R_32 and not target_moves:
                continue  # the fixed boot code's own addresses
            errors.append(f"relocation R_X86_64_{NAMES.get(typ, typ)} cannot move: {what}")
    if errors:
        raise Refused("\n".join(errors[:20]) + (f"\n... {len(errors)} in all" if len(errors) > 20 else ""))
    return sorted(r64), sorted(r32s)


def encode(r64, r32s):
    return (b"KREL" + struct.pack("<III", len(r64), len(r32s), 0) +
            struct.pack(f"<{len(r64)}I", *r64) + struct.pack(f"<{len(r32s)}I", *r32s))


def main(argv):
    try:
        if len(argv) == 4 and argv[1] == "--check":
            with open(argv[2], "rb") as f:
                got = encode(*table(f.read()))
            with open(argv[3], "rb") as f:
                if f.read() != got:
                    raise Refused("the relocation table changed between the two links")
            return 0
        if len(argv) != 3:
            print(__doc__, file=sys.stderr)
            return 2
        with open(argv[1], "rb") as f:
            data = encode(*table(f.read()))
        with open(argv[2], "wb") as f:
            f.write(data)
        return 0
    except (Refused, struct.error, ValueError, IndexError) as e:
        print(f"kreloc: {argv[-2] if len(argv) > 2 else ''}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
