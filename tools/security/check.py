#!/usr/bin/env python3
"""tools/security/check.py - check docs/SECURITY.md against the tree.

SECURITY.md says what tern promises and names, for each promise, the tests
that prove it. A promise whose test was renamed or removed is a promise
nobody checks any more, so this script fails (exit status 1) when:

- a test cited anywhere in the document, written in backticks as
  `path::name` (paths from the repository root), does not exist;
- a promise row (a table line starting "| S<number> |") is malformed, its
  id is used twice, its status is neither "tested" nor "untested", a
  tested promise cites no test, or an untested one gives no reason.

What "exists" means is tools/conformance/check.py's rule (one source for
it): a pytest `def name(`, a C `TEST(name)`, or a C function `name(` (the
driver a fuzz, simulation or torture test starts from). Kernel tests are
the cases of tests/kernel/test_*.py, named by the string key of their
module's cases() table, such as `tests/kernel/test_faults.py::fault-pagefault`;
such a name exists when the file holds it as a quoted string.

Usage: tools/security/check.py [--root DIR] [--doc FILE] [--quiet]
Exit status: 0 when every citation holds, 1 otherwise.
"""

import argparse
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STATUSES = ("tested", "untested")
PROMISE_ROW = re.compile(r"^\|\s*S\d[^|]*\|")
PROMISE_ID = re.compile(r"^S\d+$")
# Kernel case names hold hyphens (and capitals: WIPE); unit and pytest
# names are identifiers, which the same pattern covers.
TEST_REF = re.compile(r"`([A-Za-z0-9_./-]+)::([A-Za-z_][A-Za-z0-9_-]*)`")
KERNEL_TESTS = "tests/kernel/"


def _conformance():
    """tools/conformance/check.py, loaded under its own name (both are
    check.py) for its test_exists and split_cells."""
    path = os.path.join(HERE, "..", "conformance", "check.py")
    spec = importlib.util.spec_from_file_location("conformance_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CONFORMANCE = _conformance()


def test_missing(root, path, name, cache):
    """Why the cited test does not exist, or None when it does."""
    if path.startswith(KERNEL_TESTS) and path.endswith(".py"):
        full = os.path.join(root, path)
        if not os.path.isfile(full):
            return f"no file {path}"
        if full not in cache:
            with open(full, encoding="utf-8", errors="replace") as f:
                cache[full] = f.read()
        if f'"{name}"' in cache[full] or re.search(r"^\s*def\s+" + re.escape(name) + r"\s*\(",
                                                    cache[full], re.M):
            return None
        return f"{path} has no kernel test case {name!r}"
    return CONFORMANCE.test_exists(root, path, name, None, cache)


def check(root, text):
    """Errors, and the promises as (id, status, number of tests cited)."""
    errors, promises, seen, cache = [], [], {}, {}
    for no, line in enumerate(text.splitlines(), 1):
        for path, name in TEST_REF.findall(line):
            why = test_missing(root, path, name, cache)
            if why:
                errors.append(f"line {no}: {why}")
        if not PROMISE_ROW.match(line):
            continue
        cells = CONFORMANCE.split_cells(line)
        if len(cells) != 4:
            errors.append(f"line {no}: {len(cells)} cells, a promise row has 4 "
                          "(Id, Promise, Status, Tests or reason)")
            continue
        pid, promise, status, detail = cells
        if not PROMISE_ID.match(pid):
            errors.append(f"line {no}: malformed promise id {pid!r}")
        if pid in seen:
            errors.append(f"line {no}: promise {pid} also on line {seen[pid]}")
        seen.setdefault(pid, no)
        if not promise:
            errors.append(f"line {no}: {pid} promises nothing")
        refs = TEST_REF.findall(detail)
        if status not in STATUSES:
            errors.append(f"line {no}: {pid}: status {status!r}, not one of "
                          + ", ".join(STATUSES))
        elif status == "tested" and not refs:
            errors.append(f"line {no}: {pid}: tested, but names no test as `path::name`")
        elif status == "untested" and len(detail) < 8:
            errors.append(f"line {no}: {pid}: untested without a reason")
        promises.append((pid, status, len(refs)))
    if not promises:
        errors.append("no promise rows (| S1 | ... |)")
    return errors, promises


def main(argv=None):
    ap = argparse.ArgumentParser(description="check docs/SECURITY.md against the tree")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(HERE, "..", "..")),
                    help="repository root (default: this script's repository)")
    ap.add_argument("--doc", help="the document (default: ROOT/docs/SECURITY.md)")
    ap.add_argument("--quiet", action="store_true", help="print errors only")
    args = ap.parse_args(argv)
    doc = args.doc or os.path.join(args.root, "docs", "SECURITY.md")
    try:
        with open(doc, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"security: cannot read {doc}: {e.strerror}", file=sys.stderr)
        return 1
    errors, promises = check(args.root, text)
    for e in errors:
        print(f"security: {os.path.relpath(doc, args.root)}: {e}", file=sys.stderr)
    if errors:
        print(f"security: {len(errors)} error(s)", file=sys.stderr)
        return 1
    if not args.quiet:
        tested = [p for p in promises if p[1] == "tested"]
        print(f"security: {len(promises)} promises, {len(tested)} tested "
              f"({sum(p[2] for p in tested)} test citations), "
              f"{len(promises) - len(tested)} untested with a reason; ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
