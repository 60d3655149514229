"""tools/kreloc/kreloc.py on small images linked here like the kernel (a
fixed boot section at 1 MiB, a higher half at 0xffffffff80000000 +
physical, --emit-relocs): the table lists exactly the 64-bit and 32S
sites that refer to the higher half, boot-section sites included, and
none of the references that need no change; a PC-relative reference from
the boot section into the higher half is refused with its place; --check
fails for a table of another image; a file that is not ELF is refused.
Needs gcc and ld (the kernel's build needs them too).
"""
import os
import struct
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kreloc  # noqa: E402

LDS = """
SECTIONS {
  . = 0x100000;
  .boot : { *(.boot.text) }
  . = ALIGN(4096);
  . += 0xffffffff80000000;
  .text : AT(ADDR(.text) - 0xffffffff80000000) { *(.text) }
  .data : AT(ADDR(.data) - 0xffffffff80000000) { *(.data) }
  /DISCARD/ : { *(.note.GNU-stack) }
}
"""

GOOD = """
    .section .boot.text, "ax"
    .globl _start
_start:
    movabsq $high_fn, %rax          /* 64: boot site, high target */
    movl $_start, %ebx              /* 32: low target, stays */
    jmp *%rax
    .text
high_fn:
    movq $high_var, %rax            /* 32S: high target */
    call other                      /* PC32 inside the higher half */
    movq high_var(%rip), %rbx       /* PC32 inside the higher half */
    movl _start, %ecx               /* 32S to the boot section: stays */
    ret
other:
    ret
    .data
high_var:
    .quad other                     /* 64: high target */
    .quad 0x100000                  /* a plain number: no relocation */
"""

CROSS = """
    .section .boot.text, "ax"
    .globl _start
_start:
    call high_fn                    /* PC32 from the boot section: refused */
    .text
high_fn:
    ret
"""


def link(tmp_path, name, asm):
    src, obj, lds, elf = (tmp_path / f"{name}{ext}" for ext in (".S", ".o", ".ld", ".elf"))
    src.write_text(asm)
    lds.write_text(LDS)
    subprocess.run(["gcc", "-c", str(src), "-o", str(obj)], check=True)
    subprocess.run(["ld", "-nostdlib", "-static", "-z", "max-page-size=0x1000", "--emit-relocs",
                    "--no-warn-rwx-segments", "-T", str(lds), str(obj), "-o", str(elf)], check=True)
    return elf.read_bytes()


def symbol(elf_bytes, tmp_path, name):
    path = tmp_path / "sym.elf"
    path.write_bytes(elf_bytes)
    out = subprocess.run(["nm", str(path)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        value, _kind, sym = line.split()
        if sym == name:
            return int(value, 16)
    raise KeyError(name)


def test_the_table_lists_exactly_the_sites_that_refer_to_the_higher_half(tmp_path):
    elf = link(tmp_path, "good", GOOD)
    r64, r32s = kreloc.table(elf)
    start = symbol(elf, tmp_path, "_start")
    high_fn = symbol(elf, tmp_path, "high_fn")
    high_var = symbol(elf, tmp_path, "high_var")
    # movabsq's immediate starts 2 bytes in; movq $imm32's 3 bytes in.
    assert r64 == sorted([(start + 2) & 0xffffffff, high_var & 0xffffffff])
    assert r32s == [(high_fn + 3) & 0xffffffff]
    blob = kreloc.encode(r64, r32s)
    assert blob[:4] == b"KREL" and struct.unpack_from("<II", blob, 4) == (2, 1)


def test_a_pc_relative_reference_across_the_slide_is_refused(tmp_path):
    elf = link(tmp_path, "cross", CROSS)
    with pytest.raises(kreloc.Refused, match=r"PC-relative reference across the slide: \.boot\+0x1"):
        kreloc.table(elf)


def test_check_fails_for_another_images_table(tmp_path):
    good = tmp_path / "g.elf"
    good.write_bytes(link(tmp_path, "good", GOOD))
    table = tmp_path / "t.bin"
    assert kreloc.main(["kreloc", str(good), str(table)]) == 0
    assert kreloc.main(["kreloc", "--check", str(good), str(table)]) == 0
    table.write_bytes(table.read_bytes()[:-4] + b"\0\0\0\0")
    assert kreloc.main(["kreloc", "--check", str(good), str(table)]) == 1


def test_a_file_that_is_not_elf_is_refused(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"not an ELF file at all" * 10)
    assert kreloc.main(["kreloc", str(junk), str(tmp_path / "out")]) == 1
    short = tmp_path / "short"
    short.write_bytes(b"\x7fELF\x02\x01" + b"\0" * 10)
    assert kreloc.main(["kreloc", str(short), str(tmp_path / "out")]) == 1
