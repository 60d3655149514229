#!/usr/bin/env python3
"""cpushare.py - where ternd's CPU goes, by part of the code base, from a
`perf record -p PID` profile of the daemon: the broker core, the
connection layer and the platform, wolfSSL and the TLS adapter, libc, the
kernel. ADR-061 chose the daemon's worker design from these shares: the
core's share bounds what threads around one core thread can gain.

Usage (from the repository root, after `perf record -F 999 -p PID -o F`):
    cpushare.py F

Samples are attributed by their source file (perf's srcfile sort key,
from the binary's debug information), the file to a directory of src/ or
to wolfSSL's sources under build/deps. libc's functions (memcpy, memcmp,
malloc) are called from every part, so they get a line of their own.
"""
import collections
import os
import subprocess
import sys

# The directories of src/ by part; the broker core is everything I/O-free.
PARTS = (
    ("src/broker", "core"), ("src/mqtt", "core"), ("src/store", "core"),
    ("src/json", "core"), ("src/text", "core"), ("src/time", "core"),
    ("src/conn", "conn + platform"), ("src/platform/posix", "conn + platform"),
    ("src/ring", "conn + platform"), ("src/tls", "wolfSSL + TLS adapter"),
)


def file_parts():
    where = {}
    for top, part in PARTS:
        for _, _, files in os.walk(top):
            for f in files:
                where.setdefault(f, part)
    wolf = os.path.realpath("build/deps/wolfssl")
    for _, _, files in os.walk(wolf):
        for f in files:
            where.setdefault(f, "wolfSSL + TLS adapter")
    return where


def shares(perf_data):
    where = file_parts()
    out = subprocess.run(
        ["perf", "report", "-i", perf_data, "--no-children", "--sort", "dso,srcfile",
         "-g", "none", "--stdio"], capture_output=True, text=True, check=True).stdout
    acc = collections.Counter()
    for line in out.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#") or not fields[0].endswith("%"):
            continue
        pct = float(fields[0].rstrip("%"))
        dso = fields[1] if len(fields) > 1 else ""
        src = fields[2] if len(fields) > 2 else ""
        if "kernel" in dso:
            part = "kernel (syscalls, TCP)"
        elif "libc" in dso or src == "string_fortified.h":
            part = "libc (and inlined memcpy)"
        elif src in where:
            part = where[src]
        else:
            part = "other"
        acc[part] += pct
    return acc


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cpushare.py PERF_DATA")
    for part, pct in shares(sys.argv[1]).most_common():
        print(f"{pct:6.1f}%  {part}")


if __name__ == "__main__":
    main()
