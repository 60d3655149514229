"""tools/security/test_security_check.py - tests of the SECURITY.md checker
(check.py) on small documents in a scratch tree: a consistent one passes,
and each kind of false claim (a cited test that does not exist, a tested
promise without a test, an untested one without a reason, a bad row)
fails with its own message.

Run: /usr/bin/python3 -m pytest -q tools/security
(named apart from tools/conformance/test_check.py so one pytest run can
collect both)
"""

import importlib.util
import os

import pytest

_spec = importlib.util.spec_from_file_location(
    "security_check", os.path.join(os.path.dirname(os.path.abspath(__file__)), "check.py"))
sc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sc)

HEADER = "| Id | Promise | Status | Tests or reason |\n|---|---|---|---|\n"


@pytest.fixture
def tree(tmp_path):
    """A scratch repository with a unit test, a pytest and a kernel test."""
    for d in ("unit", "integration", "kernel"):
        (tmp_path / "tests" / d).mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_b.c").write_text(
        "TEST(tls_client_without_certificate_is_refused)\n{\n}\n")
    (tmp_path / "tests" / "integration" / "test_a.py").write_text(
        "def test_malformed_packet_closes_only_its_own_connection(broker):\n    pass\n")
    (tmp_path / "tests" / "kernel" / "test_k.py").write_text(
        "def cases(b):\n    return {\n        \"fault-pagefault\": None,\n"
        "        \"diag-disk-WIPE-writes\": None,\n    }\n")
    return tmp_path


def doc(*rows, prose=""):
    return "# Security\n\n" + prose + "\n" + HEADER + "".join(r + "\n" for r in rows)


GOOD = ("| S1 | refused without a certificate | tested | "
        "`tests/unit/test_b.c::tls_client_without_certificate_is_refused` "
        "`tests/integration/test_a.py::test_malformed_packet_closes_only_its_own_connection` "
        "`tests/kernel/test_k.py::fault-pagefault` `tests/kernel/test_k.py::diag-disk-WIPE-writes` |")


def errors_of(tree, text):
    return sc.check(str(tree), text)[0]


def test_a_document_whose_citations_all_exist_passes(tree):
    errors, promises = sc.check(str(tree), doc(GOOD, "| S2 | no shell | untested | "
                                               "by construction of the build |"))
    assert errors == []
    assert promises == [("S1", "tested", 4), ("S2", "untested", 0)]


@pytest.mark.parametrize("ref, why", [
    ("tests/unit/test_b.c::tls_client_with_any_certificate", "defines no test"),
    ("tests/unit/test_gone.c::tls_client_without_certificate_is_refused", "no file"),
    ("tests/integration/test_a.py::test_gone", "defines no test"),
    ("tests/kernel/test_k.py::fault-gone", "no kernel test case 'fault-gone'"),
    ("tests/kernel/test_gone.py::fault-pagefault", "no file"),
])
def test_a_cited_test_that_does_not_exist_fails(tree, ref, why):
    errors = errors_of(tree, doc(f"| S1 | a promise | tested | `{ref}` |"))
    assert len(errors) == 1 and why in errors[0], errors


def test_a_missing_test_cited_in_prose_fails_too(tree):
    errors = errors_of(tree, doc(GOOD, prose="See `tests/unit/test_b.c::gone_test`.\n"))
    assert len(errors) == 1 and "defines no test gone_test" in errors[0], errors


def test_a_tested_promise_without_a_test_fails(tree):
    errors = errors_of(tree, doc("| S1 | a promise | tested | the unit tests |"))
    assert len(errors) == 1 and "names no test" in errors[0], errors


def test_an_untested_promise_without_a_reason_fails(tree):
    errors = errors_of(tree, doc("| S1 | a promise | untested | |"))
    assert len(errors) == 1 and "without a reason" in errors[0], errors


@pytest.mark.parametrize("row, why", [
    ("| S1 | a promise | proven | `tests/kernel/test_k.py::fault-pagefault` |", "status"),
    ("| S1 | a promise | `tests/kernel/test_k.py::fault-pagefault` |", "3 cells"),
    ("| S1x | a promise | untested | no way to test it |", "malformed promise id"),
])
def test_a_malformed_promise_row_fails(tree, row, why):
    errors = errors_of(tree, doc(row))
    assert any(why in e for e in errors), errors


def test_a_promise_id_used_twice_fails(tree):
    errors = errors_of(tree, doc(GOOD, GOOD))
    assert len(errors) == 1 and "also on line" in errors[0], errors


def test_a_document_without_promises_fails(tree):
    errors = errors_of(tree, "# Security\n\nNothing promised.\n")
    assert errors == ["no promise rows (| S1 | ... |)"]


def test_the_main_entry_point_fails_on_a_bad_document(tree, capsys):
    (tree / "docs").mkdir()
    (tree / "docs" / "SECURITY.md").write_text(doc("| S1 | x | tested | `tests/unit/test_b.c::no` |"))
    assert sc.main(["--root", str(tree)]) == 1
    assert "defines no test no" in capsys.readouterr().err
    (tree / "docs" / "SECURITY.md").write_text(doc(GOOD))
    assert sc.main(["--root", str(tree)]) == 0
