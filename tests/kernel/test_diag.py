"""Diagnostics modes (SPEC E1-E4, F5; docs/DIAGNOSTICS.md): the ISO's
"Diagnostics" and "Diagnostics, then serve" entries.

The ISOs here are built by the image builder's own mkiso.sh around the
test kernel, as test_install.py does, with one difference: their grub.cfg
makes a diagnostics entry the default and adds the test-only
tern.test.diag_ms (test kernels only), which bounds each measurement so a
TCG boot stays within tens of seconds; the entries' module lines are the
shipped ones (checked against grub.cfg).

- diag, under SeaBIOS and OVMF, with a virtio-blk disk holding a GPT, one
  partition full of a pattern and free space (test_diag_disk.make_disk):
  the JSON between the serial markers parses, every section is filled or
  says why, and the dashboard (QMP screendump) equals, pixel for pixel
  over its 1024x768, the PNG tern-diag-png draws from that same JSON (the
  PNG decoded here with zlib: 8-bit RGB, the five row filters), and does
  not equal the PNG of the JSON with one character changed. The machine
  halts (no reset). At the write test's question the SeaBIOS boot answers
  "wipe" (refused: the image is unchanged byte for byte) and the OVMF boot
  "WIPE" (the free span changed; the partition and both GPTs did not).
- diag-serve, under SeaBIOS and OVMF: the broker serves afterwards; an
  operator (mutual TLS, the dev PKI) reads $SYS/diag/report retained, the
  same JSON as on serial; a non-operator subscribing gets nothing
  (refused) within a few seconds; the write test is not run.
"""
import atexit
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import zlib

from harness import (MTLS_CONF, OVMF, REPO, Failure, Pki, Qmp, Vm, disk_image, drive,
                     make_bundle, qmp_args, scratch, sha, show)
from clients import mosq
from test_diag_disk import PROMPT, make_disk, region_hashes

DIAG_MS = 200          # tern.test.diag_ms: each measurement's bound
BEGIN = b"tern: diag: report begin\r\n"
END = b"\r\ntern: diag: report end"
HALTED = b"tern: diag: done; halted"
PUBLISHED = b"tern: diag: report published on $SYS/diag/report"
TOPIC = "$SYS/diag/report"
# Every section of schema 1; each is a value or null with "<name>_why".
SECTIONS = ("cpu", "hypervisor", "cores", "memory", "firmware", "pci", "nics", "disks", "rng",
            "memory_bandwidth", "disk_read", "disk_write", "crypto", "handshake")
DASH_W, DASH_H = 1024, 768

_isos = {}
_iso_lock = threading.Lock()


def diag_iso(build, entry):
    """The test ISO (built once per run) whose default is the menu entry
    `entry` ("Diagnostics" or "Diagnostics, then serve")."""
    with _iso_lock:
        if entry in _isos:
            return _isos[entry]
        tmp = tempfile.mkdtemp(prefix="tern-kt-diag-")
        atexit.register(shutil.rmtree, tmp, True)
        bundle = make_bundle(build.dir, tmp, MTLS_CONF)
        with open(os.path.join(REPO, "tools", "image", "grub.cfg")) as f:
            cfg = f.read()
        titles = re.findall(r'menuentry "([^"]+)"', cfg)
        mode = {"Diagnostics": "diag", "Diagnostics, then serve": "diag-serve"}[entry]
        body = (f'menuentry "{entry}" {{\n    multiboot2 /boot/tern.elf tern.mode={mode}\n'
                f'    module2 /boot/tern.bundle tern.bundle\n    boot\n}}')
        if entry not in titles or body not in cfg or "set default=0" not in cfg:
            raise Failure(f"tools/image/grub.cfg's {entry!r} entry is not the one this test knows")
        cfg = cfg.replace("set default=0", f"set default={titles.index(entry)}").replace(
            f"tern.mode={mode}\n", f"tern.mode={mode} tern.test.diag_ms={DIAG_MS}\n")
        cfg_path = os.path.join(tmp, "grub.cfg")
        with open(cfg_path, "w") as f:
            f.write(cfg)
        iso = os.path.join(tmp, f"{mode}.iso")
        r = subprocess.run([os.path.join(REPO, "tools", "image", "mkiso.sh"), build.test_elf,
                            iso, bundle, os.path.join(build.dir, "rel", "tern-payload")],
                           env=dict(os.environ, TERN_ISO_GRUB_CFG=cfg_path),
                           capture_output=True, timeout=300)
        if r.returncode != 0:
            raise Failure("mkiso.sh: " + show(r.stdout + r.stderr))
        _isos[entry] = iso
        return iso


def report_from(out):
    """The JSON text between the markers on serial, parsed; both."""
    b = out.find(BEGIN)
    e = out.find(END, b + len(BEGIN)) if b >= 0 else -1
    if b < 0 or e < 0:
        raise Failure("no report between the markers:\n" + show(out[-2000:]))
    text = out[b + len(BEGIN):e]
    try:
        return text, json.loads(text)
    except ValueError as x:
        raise Failure(f"the report is not JSON ({x}): {text[:400]!r}")


def check_sections(doc, mode):
    """schema 1, the mode, and every section a value or null with its why."""
    if doc.get("schema") != 1 or doc.get("mode") != mode or not doc.get("tern"):
        raise Failure(f"report header: schema {doc.get('schema')!r}, mode {doc.get('mode')!r}")
    missing = [s for s in SECTIONS if s not in doc]
    unexplained = [s for s in SECTIONS if s in doc and doc[s] is None
                   and not doc.get(f"{s}_why")]
    if missing or unexplained:
        raise Failure(f"sections missing {missing}, null without a why {unexplained}")
    if "time" not in doc or (doc["time"] is None and not doc.get("time_why")):
        raise Failure("no time, or null without a why")
    return sum(doc[s] is not None for s in SECTIONS)


def read_png(path):
    """An 8-bit RGB, non-interlaced PNG (what tern-diag-png writes) as
    width, height and its rows of bytes, decoded with zlib."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Failure(f"{path}: not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = ihdr
    if (depth, colour, interlace) != (8, 2, 0):
        raise Failure(f"{path}: not 8-bit RGB non-interlaced: {ihdr}")
    raw = zlib.decompress(idat)
    stride, rows, prev = w * 3, [], bytearray(w * 3)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(b"\n", 3)
    if parts[0] != b"P6" or parts[2] != b"255":
        raise Failure(f"screendump is not a binary 8-bit PPM: {data[:20]!r}")
    w, h = map(int, parts[1].split())
    return w, h, parts[3]


def compare_dashboard(build, tmp, text, shot):
    """The screendump's top-left 1024x768 against tern-diag-png's PNG of
    the same JSON; the number of pixels compared."""
    rep = os.path.join(tmp, "report.json")
    with open(rep, "wb") as f:
        f.write(text)
    png = os.path.join(tmp, "dash.png")
    r = subprocess.run([os.path.join(build.dir, "rel", "tern-diag-png"), rep, png],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        raise Failure("tern-diag-png: " + show(r.stdout + r.stderr))
    pw, ph, rows = read_png(png)
    sw, sh, pix = read_ppm(shot)
    if (pw, ph) != (DASH_W, DASH_H) or sw < DASH_W or sh < DASH_H:
        raise Failure(f"PNG {pw}x{ph}, screen {sw}x{sh}: cannot compare {DASH_W}x{DASH_H}")
    for y in range(DASH_H):
        got = pix[y * sw * 3:y * sw * 3 + DASH_W * 3]
        if got != rows[y]:
            x = next(i for i in range(DASH_W * 3) if got[i] != rows[y][i]) // 3
            raise Failure(f"dashboard differs from the PNG at pixel ({x}, {y}): screen "
                          f"{tuple(got[x * 3:x * 3 + 3])}, PNG {tuple(rows[y][x * 3:x * 3 + 3])}")
    return DASH_W * DASH_H


def diag_test(firmware, answer):
    def check(build):
        with scratch() as tmp:
            qmp, sock = qmp_args(tmp)
            disk = make_disk(tmp)
            before, before_sha = region_hashes(disk), sha(disk)
            # The CD first: SeaBIOS would try the disk's protective MBR.
            args = firmware + ["-boot", "order=d", "-cdrom", diag_iso(build, "Diagnostics"),
                               "-vga", "std",
                               "-device", "virtio-rng-pci", "-nic", "user,model=virtio-net-pci"
                               ] + drive(disk, "d0") + qmp
            with Vm(args, serial_input=True) as vm:
                if vm.wait_for(lambda o: PROMPT in o or HALTED in o, 240) is None:
                    raise Failure("no WIPE question:\n" + show(vm.text()[-2500:]))
                if PROMPT not in vm.text():
                    raise Failure("the write test did not ask:\n" + show(vm.text()[-2500:]))
                vm.type(answer + b"\r")
                took = vm.wait_for(lambda o: HALTED in o, 240)
                out = vm.text()
                if took is None:
                    raise Failure("diag did not halt:\n" + show(out[-2500:]))
                vm.expect_no_fatal()
                text, doc = report_from(out)
                filled = check_sections(doc, "diag")
                q = Qmp(sock)
                q.cmd("stop")
                shot = os.path.join(tmp, "screen.ppm")
                q.cmd("screendump", filename=shot)
                q.close()
                if vm.proc.poll() is not None:
                    raise Failure("QEMU exited: the machine reset instead of halting")
            wrote = check_write(answer, doc["disk_write"], disk, before, before_sha)
            n = compare_dashboard(build, tmp, text, shot)
            # The comparison can fail: one character changed in the JSON
            # changes the PNG, and it no longer matches the screen.
            try:
                compare_dashboard(build, tmp, text.replace(b'"mode":"diag"', b'"mode":"diaX"'),
                                  shot)
            except Failure:
                pass
            else:
                raise Failure("a PNG of a different report matched the screen too")
        return (f"{took:.1f} s to halt; report {len(text)} bytes, {filled}/{len(SECTIONS)} "
                f"sections measured; dashboard = PNG over {n} pixels; {wrote}")
    return check


def check_write(answer, dw, disk, before, before_sha):
    """The write test after `answer`: refused and nothing written, or run
    in the free span only."""
    if answer != b"WIPE":
        if dw.get("done") is not False or "not confirmed" not in (dw.get("why") or ""):
            raise Failure(f"{answer!r} answered, disk_write: {dw!r}")
        if sha(disk) != before_sha:
            raise Failure(f"{answer!r} answered, yet the disk changed")
        return f"{answer.decode()!r} refused, disk unchanged"
    after = region_hashes(disk)
    if dw.get("done") is not True:
        raise Failure(f"WIPE answered, disk_write: {dw!r}")
    kept = [k for k in before if k != "free span" and after[k] != before[k]]
    if kept or after["free span"] == before["free span"]:
        raise Failure(f"WIPE: changed outside the free span {kept}, free span changed: "
                      f"{after['free span'] != before['free span']}")
    return "WIPE wrote the free span only"


def diag_serve_test(build, firmware):
    pki = Pki(build.dir)
    with scratch() as tmp:
        port = __import__("harness").free_port()
        disk = disk_image(tmp, "scratch.img", 64)
        args = firmware + ["-cdrom", diag_iso(build, "Diagnostics, then serve"),
                           "-device", "virtio-rng-pci",
                "-nic", f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{port}-:8883"
                ] + drive(disk, "d0")
        with Vm(args) as vm:
            took, out = vm.wait_ready(240)
            if PUBLISHED not in out:
                raise Failure("report not published:\n" + show(out[-2500:]))
            vm.expect_no_fatal()
            text, doc = report_from(out)
            check_sections(doc, "diag-serve")
            if doc["disk_write"] != {"done": False, "why": "not run in diag-serve"}:
                raise Failure(f"disk_write in diag-serve: {doc['disk_write']!r}")
            got = mosq("mosquitto_sub", port, "-t", TOPIC, "-C", "1", "-W", "30",
                       tls=pki.args("dev-operator"))
            if got.rstrip("\n").encode() != text:
                raise Failure(f"operator read {len(got)} bytes, not the serial JSON "
                              f"({len(text)} bytes): {got[:200]!r}")
            r = mosq("mosquitto_sub", port, "-t", TOPIC, "-C", "1", "-W", "4", "-v",
                     tls=pki.args("dev-client"), check=False)
            if b"schema" in r.stdout or b"denied" not in r.stdout + r.stderr:
                raise Failure(f"non-operator and {TOPIC}: exit {r.returncode}: "
                              f"{(r.stdout + r.stderr)[:300]!r}")
    return (f"{took:.1f} s to ready; operator read the {len(text)}-byte report, "
            f"non-operator got nothing ({(r.stdout + r.stderr).decode().strip()[:60]})")


def cases(b):
    seabios = diag_test([], b"wipe")
    ovmf = diag_test(["-bios", OVMF], b"WIPE")
    have_ovmf = os.path.exists(OVMF)
    return {
        "diag-mode-seabios": lambda: seabios(b),
        "diag-mode-ovmf": (lambda: ovmf(b)) if have_ovmf else None,
        "diag-mode-serve-seabios": lambda: diag_serve_test(b, []),
        "diag-mode-serve-ovmf": (lambda: diag_serve_test(b, ["-bios", OVMF])) if have_ovmf
        else None,
    }
