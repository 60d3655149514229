#!/usr/bin/env python3
"""scripts/handshake_parts.py - a perf profile of ternd during tern-bench's
`handshake` scenario (scripts/profile-handshake.sh perf) summed into the
parts of a handshake: microseconds of broker CPU per handshake for each.

    scripts/handshake_parts.py PERF_DATA HANDSHAKES TERN_OBJ_DIR

Each sample's symbol is put in one part by its name and its source file
(perf's srcfile, from the debug information); tern's own functions are
those defined in the object files under TERN_OBJ_DIR (build/rel/src).
The microseconds are the part's share of the samples times the profile's
CPU time (perf's event count: cpu-clock nanoseconds) over the handshakes.
Attribution is by the sampled instruction, not the caller: a SHA-256 block
counts as SHA-2 whether the transcript, HKDF or the DRBG asked for it.
"""
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

SUFFIX = re.compile(r"(\.(lto_priv|constprop|isra|part|cold)(\.\d+)?)+$")

# (part, test on (dso, srcfile, symbol)); the first that matches wins.
RULES = [
    ("Linux kernel (TCP over loopback, system calls, scheduling)",
     lambda d, f, s: d.startswith("[kernel")),
    ("malloc/free (glibc)",
     lambda d, f, s: d.startswith("libc") and f == "malloc.c"),
    ("memcpy/memset (glibc)",
     lambda d, f, s: d.startswith("libc") and re.search(r"mem(move|cpy|set)|memcmp|strlen", s)),
    ("system call wrappers and other glibc",
     lambda d, f, s: d.startswith("libc") or d.startswith("ld-")),
    ("ECDSA P-256 (1 sign, 2 verifies)",
     lambda d, f, s: re.match(r"(sp_256|L_256|sp_ecc_(sign|verify)_256)", s) is not None),
    ("X25519 (key generation, shared secret)",
     lambda d, f, s: "x25519" in f or "curve25519" in f or "fe_operations" in f
     or re.match(r"(L_curve25519|L_fe_|fe_|curve25519)", s) is not None),
    ("SHA-2 (transcript, HKDF, signature hashes, DRBG)",
     lambda d, f, s: re.match(r"sha(256|512)", f) is not None
     or re.search(r"(?i)sha(256|384|512)|Transform", s) is not None),
    ("HMAC/HKDF glue", lambda d, f, s: f in ("hmac.c", "kdf.c")),
    ("wolfSSL DRBG (random.c)", lambda d, f, s: f == "random.c"),
    ("certificate parsing (ASN.1)",
     lambda d, f, s: f in ("asn.c", "asn_public.c", "coding.c")),
    ("AES-GCM (records)", lambda d, f, s: f.startswith("aes")),
    ("ECC glue (ecc.c, sp_int.c)", lambda d, f, s: f in ("ecc.c", "sp_int.c")),
]


def tern_symbols(obj_dir):
    names = set()
    objs = [str(p) for p in Path(obj_dir).rglob("*.o")]
    for i in range(0, len(objs), 200):
        out = subprocess.run(["nm", "--defined-only", *objs[i:i + 200]],
                             capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTdDbBrR":
                names.add(parts[2])
    return names


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    data, handshakes, obj_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    tern = tern_symbols(obj_dir)
    rep = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--sort", "dso,srcfile,sym",
         "--stdio", "-g", "none", "--percent-limit", "0"],
        capture_output=True, text=True, check=True).stdout
    m = re.search(r"Event count \(approx\.\): (\d+)", rep)
    if m is None or handshakes <= 0:
        sys.exit("handshake_parts.py: no event count in the profile, or no handshakes")
    total_ns = int(m.group(1))
    line_re = re.compile(r"^\s+([\d.]+)%\s+(\S+)\s+(.*?)\s+\[[.k]\]\s+(\S+)")
    parts = defaultdict(float)
    for line in rep.splitlines():
        lm = line_re.match(line)
        if lm is None:
            continue
        pct, dso, src, sym = float(lm.group(1)), lm.group(2), lm.group(3).strip(), lm.group(4)
        src = src.split(":")[0]
        base = SUFFIX.sub("", sym)
        part = None
        broker = not dso.startswith(("[", "libc", "ld-"))  # ternd, however named
        if broker and base in tern:
            part = "tern (connection layer, MQTT, broker core, TLS adapter)"
        if part is None:
            for name, test in RULES:
                if test(dso, src, base):
                    part = name
                    break
        if part is None:
            part = "wolfSSL TLS protocol (messages, key schedule, other)" \
                if broker else "other"
        parts[part] += pct
    us = total_ns / 1000.0 / handshakes
    print(f"| part | share | µs per handshake |")
    print(f"|---|---|---|")
    for name, pct in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {pct:.1f}% | {pct / 100 * us:.1f} |")
    print(f"| **total** (profile CPU time / {handshakes} handshakes) | 100% | **{us:.1f}** |")


if __name__ == "__main__":
    main()
