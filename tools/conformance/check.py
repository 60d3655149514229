#!/usr/bin/env python3
"""tools/conformance/check.py - check docs/CONFORMANCE.md, the conformance
matrix of MQTT 3.1.1 and MQTT 5.0, against the tree, and print its summary.

The matrix is only worth something if its claims hold, so this script reads
every row and fails (exit status 1) when:

- a row's status is not one of the four words (tested, n/a, untested,
  not implemented) or its "binds" is not server, client or both;
- a statement id is malformed or appears twice in one version;
- a version's table does not hold the number of statements its marker
  announces (a row lost in an edit);
- a "tested" row names no test, or names one that does not exist: the file
  must exist and define the test (a pytest `def name(`, a C `TEST(name)`,
  or a C function `name(` for the simulator and fuzz drivers), and a
  parametrised case `name[case]` must also find `case` in that file;
- a row binding the server (server or both) that is not "tested" gives no
  reason for it.

A tested row that proves only part of its statement says "partly:" and
what is not covered; the summary counts such rows.

The markdown layout it reads, in one place:

    <!-- conformance: version=3.1.1 statements=141 -->
    | Id | Statement | Binds | Status | Tests or reason |
    |---|---|---|---|---|
    | MQTT-1.5.3-1 | ... | both | tested | `tests/unit/test_mqtt_utf8.c::mqtt_utf8_validity_table` |

A version's rows are the table rows (lines starting "| MQTT-") after its
marker, up to the next marker. Tests are cited in backticks as
`path::name` or `path::name[case]`, paths from the repository root; several
may be given. A 5.0 table has a sixth column, "Expected test": the test
file the feature's tests are planned in; it is not required to exist yet,
and the summary counts how many already do (a glob such as
tests/unit/test_mqtt5_*.c counts when it matches a file), so the rows to
promote at a merge are easy to find.

Usage: tools/conformance/check.py [--root DIR] [--matrix FILE] [--quiet]
Exit status: 0 when the matrix is consistent, 1 otherwise, 2 on bad usage.
"""

import argparse
import glob
import os
import re
import sys

STATUSES = ("tested", "n/a", "untested", "not implemented")
BINDS = ("server", "client", "both")

MARKER = re.compile(r"<!--\s*conformance:\s*version=(\S+)\s+statements=(\d+)\s*-->")
# Statement ids in their regular form, MQTT-3.1.2-4. Where a specification's
# body misprints one (3.1.1's MQTT-3.1.2.7 and MQTT-3-8.3-4, 5.0's
# MQTT-4.2-1), the matrix uses the regular form, as 5.0's appendix B does.
STATEMENT_ID = re.compile(r"^MQTT-\d+\.\d+\.\d+-\d+$")
# A tested row whose tests cover only part of the statement says so with
# "partly:" and what is left; the summary counts them.
PARTLY = re.compile(r"\bpartly:", re.I)
TEST_REF = re.compile(r"`([A-Za-z0-9_./-]+)::([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]`]+)\])?`")


class Row:
    """One statement of the matrix, as read from its table line."""

    def __init__(self, version, line_no, cells):
        self.version = version
        self.line_no = line_no
        self.sid = cells[0]
        self.text = cells[1]
        self.binds = cells[2]
        self.status = cells[3]
        self.detail = cells[4]
        self.expected = cells[5] if len(cells) > 5 else ""


def split_cells(line):
    """The cells of a markdown table line; a '|' inside backticks does not
    split (test names never hold one, but a paraphrase might quote one)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    cells, cur, in_code = [], [], False
    for ch in body:
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    cells.append("".join(cur).strip())
    return cells


def parse(text):
    """Rows and announced counts per version, and format errors."""
    rows, announced, errors = [], {}, []
    version = None
    for no, line in enumerate(text.splitlines(), 1):
        m = MARKER.search(line)
        if m:
            version = m.group(1)
            if version in announced:
                errors.append(f"line {no}: version {version} has a second marker")
            announced[version] = int(m.group(2))
            continue
        if not line.lstrip().startswith("| MQTT-"):
            continue
        if version is None:
            errors.append(f"line {no}: a statement row before any version marker")
            continue
        cells = split_cells(line)
        if len(cells) < 5:
            errors.append(f"line {no}: {len(cells)} cells, need at least 5")
            continue
        rows.append(Row(version, no, cells))
    return rows, announced, errors


def test_exists(root, path, name, case, cache):
    """Why the cited test does not exist, or None when it does."""
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return f"no file {path}"
    if full not in cache:
        with open(full, encoding="utf-8", errors="replace") as f:
            cache[full] = f.read()
    src = cache[full]
    if path.endswith(".py"):
        found = re.search(r"^\s*(?:async\s+)?def\s+" + re.escape(name) + r"\s*\(", src, re.M)
    else:
        found = (re.search(r"\bTEST\(\s*" + re.escape(name) + r"\s*\)", src)
                 or re.search(r"^[A-Za-z_][^;{}()]*\b" + re.escape(name) + r"\s*\(", src, re.M))
    if not found:
        return f"{path} defines no test {name}"
    if case is not None and case not in src:
        return f"{path} has no case {case!r} for {name}"
    return None


def check(root, text):
    """All errors of the matrix and its rows (for the summary)."""
    rows, announced, errors = parse(text)
    if not announced:
        errors.append("no version marker (<!-- conformance: version=... statements=N -->)")
    seen, cache = {}, {}
    for r in rows:
        where = f"line {r.line_no} ({r.version} {r.sid})"
        if not STATEMENT_ID.match(r.sid):
            errors.append(f"{where}: malformed statement id")
        key = (r.version, r.sid)
        if key in seen:
            errors.append(f"{where}: also on line {seen[key]}")
        seen.setdefault(key, r.line_no)
        if not r.text:
            errors.append(f"{where}: no statement text")
        if r.binds not in BINDS:
            errors.append(f"{where}: binds {r.binds!r}, not one of {', '.join(BINDS)}")
        if r.status not in STATUSES:
            errors.append(f"{where}: status {r.status!r}, not one of {', '.join(STATUSES)}")
            continue
        refs = TEST_REF.findall(r.detail)
        if r.status == "tested":
            if not refs:
                errors.append(f"{where}: tested, but names no test as `path::name`")
            for path, name, case in refs:
                why = test_exists(root, path, name, case or None, cache)
                if why:
                    errors.append(f"{where}: {why}")
        elif r.binds in ("server", "both") and len(r.detail.strip()) < 8:
            errors.append(f"{where}: {r.status} without a reason")
    for version, n in announced.items():
        have = sum(1 for r in rows if r.version == version)
        if have != n:
            errors.append(f"version {version}: {have} rows, the marker announces {n}")
    return rows, announced, errors


def summary(root, rows, announced):
    """Counts per status per version, and for each version how many
    expected tests not yet cited already exist."""
    out = []
    for version in announced:
        vr = [r for r in rows if r.version == version]
        counts = {s: sum(1 for r in vr if r.status == s) for s in STATUSES}
        server = [r for r in vr if r.binds in ("server", "both")]
        scounts = {s: sum(1 for r in server if r.status == s) for s in STATUSES}
        out.append(f"MQTT {version}: {len(vr)} statements: "
                   + ", ".join(f"{counts[s]} {s}" for s in STATUSES))
        out.append(f"  binding the server ({len(server)}): "
                   + ", ".join(f"{scounts[s]} {s}" for s in STATUSES))
        partly = sum(1 for r in vr if r.status == "tested" and PARTLY.search(r.detail))
        if partly:
            out.append(f"  tested rows with a part untested (\"partly:\"): {partly}")
        planned = sorted({r.expected.strip("` ") for r in vr
                          if r.status != "tested" and r.expected.strip("` ")})
        if planned:
            present = [p for p in planned if glob.glob(os.path.join(root, p))]
            out.append(f"  expected test files: {len(planned)}, present now: {len(present)}"
                       + (" (" + ", ".join(present) + ")" if present else ""))
    return out


def gaps(rows):
    """The rows binding the server that are not tested, or tested only
    partly: what is left to do, one line each."""
    out = []
    for r in rows:
        if r.binds not in ("server", "both") or r.status == "n/a":
            continue
        if r.status != "tested" or PARTLY.search(r.detail):
            out.append(f"{r.version} {r.sid} [{r.status}] {r.detail}")
    return out


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="check docs/CONFORMANCE.md against the tree")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")),
                    help="repository root (default: this script's repository)")
    ap.add_argument("--matrix", help="the matrix (default: ROOT/docs/CONFORMANCE.md)")
    ap.add_argument("--quiet", action="store_true", help="print errors only")
    ap.add_argument("--gaps", action="store_true",
                    help="also list the rows binding the server that are not tested "
                         "or tested only partly, with their reasons")
    args = ap.parse_args(argv)
    matrix = args.matrix or os.path.join(args.root, "docs", "CONFORMANCE.md")
    try:
        with open(matrix, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"conformance: cannot read {matrix}: {e.strerror}", file=sys.stderr)
        return 1
    rows, announced, errors = check(args.root, text)
    for e in errors:
        print(f"conformance: {os.path.relpath(matrix, args.root)}: {e}", file=sys.stderr)
    if not args.quiet:
        for line in summary(args.root, rows, announced):
            print(f"conformance: {line}")
    if args.gaps:
        for line in gaps(rows):
            print(line)
    if errors:
        print(f"conformance: {len(errors)} error(s)", file=sys.stderr)
        return 1
    if not args.quiet:
        print("conformance: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
