"""tools/conformance/test_check.py - tests of the conformance matrix checker
(check.py) on small matrices in a scratch tree: a consistent one passes,
and each kind of false claim fails with its own message.

Run: /usr/bin/python3 -m pytest -q tools/conformance
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

HEADER = ("| Id | Statement | Binds | Status | Tests or reason |\n"
          "|---|---|---|---|---|\n")
HEADER5 = ("| Id | Statement | Binds | Status | Tests or reason | Expected test |\n"
           "|---|---|---|---|---|---|\n")


@pytest.fixture
def tree(tmp_path):
    """A scratch repository with one pytest file and one C test file."""
    (tmp_path / "tests" / "integration").mkdir(parents=True)
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "integration" / "test_a.py").write_text(
        "CASES = ['qos_3', 'empty_topic']\n\n"
        "def test_pingreq_gets_pingresp(broker):\n    pass\n\n"
        "def test_bad(case):\n    pass\n")
    (tmp_path / "tests" / "unit" / "test_b.c").write_text(
        "TEST(mqtt_utf8_validity_table)\n{\n}\n")
    return tmp_path


def matrix(rows, version="3.1.1", n=None, header=HEADER):
    n = len(rows) if n is None else n
    return (f"<!-- conformance: version={version} statements={n} -->\n\n"
            + header + "".join(r + "\n" for r in rows))


def errors_of(tree, text):
    return check.check(str(tree), text)[2]


GOOD_ROWS = [
    "| MQTT-3.12.4-1 | PINGREQ gets PINGRESP | server | tested | "
    "`tests/integration/test_a.py::test_pingreq_gets_pingresp` |",
    "| MQTT-1.5.3-1 | strings are UTF-8 | both | tested | "
    "`tests/unit/test_b.c::mqtt_utf8_validity_table`, "
    "`tests/integration/test_a.py::test_bad[qos_3]` |",
    "| MQTT-3.1.2-23 | the client pings | client | n/a | a client obligation |",
    "| MQTT-6.0.0-1 | WebSocket binary frames | server | n/a | tern has no WebSocket transport |",
]


def test_consistent_matrix_passes_and_counts_each_status(tree):
    rows, announced, errors = check.check(str(tree), matrix(GOOD_ROWS))
    assert errors == []
    assert announced == {"3.1.1": 4}
    lines = check.summary(str(tree), rows, announced)
    assert lines[0] == "MQTT 3.1.1: 4 statements: 2 tested, 2 n/a, 0 untested, 0 not implemented"
    assert lines[1] == "  binding the server (3): 2 tested, 1 n/a, 0 untested, 0 not implemented"


def test_tested_row_naming_a_missing_test_function_fails(tree):
    bad = ["| MQTT-3.12.4-1 | PINGREQ gets PINGRESP | server | tested | "
           "`tests/integration/test_a.py::test_pingreq_gets_nothing` |"]
    errs = errors_of(tree, matrix(bad))
    assert len(errs) == 1 and "defines no test test_pingreq_gets_nothing" in errs[0]


def test_tested_row_naming_a_missing_file_fails(tree):
    bad = ["| MQTT-3.12.4-1 | PINGREQ gets PINGRESP | server | tested | "
           "`tests/integration/test_gone.py::test_pingreq_gets_pingresp` |"]
    errs = errors_of(tree, matrix(bad))
    assert len(errs) == 1 and "no file tests/integration/test_gone.py" in errs[0]


def test_tested_row_naming_a_missing_c_test_fails(tree):
    bad = ["| MQTT-1.5.3-1 | strings are UTF-8 | both | tested | "
           "`tests/unit/test_b.c::mqtt_utf8_table` |"]
    errs = errors_of(tree, matrix(bad))
    assert len(errs) == 1 and "defines no test mqtt_utf8_table" in errs[0]


def test_tested_row_naming_a_missing_parametrised_case_fails(tree):
    bad = ["| MQTT-3.3.1-4 | QoS 3 is malformed | both | tested | "
           "`tests/integration/test_a.py::test_bad[qos_4]` |"]
    errs = errors_of(tree, matrix(bad))
    assert len(errs) == 1 and "no case 'qos_4'" in errs[0]


def test_tested_row_without_a_test_fails(tree):
    bad = ["| MQTT-3.12.4-1 | PINGREQ gets PINGRESP | server | tested | by hand |"]
    errs = errors_of(tree, matrix(bad))
    assert len(errs) == 1 and "names no test" in errs[0]


def test_server_row_untested_without_a_reason_fails(tree):
    bad = ["| MQTT-3.3.1-7 | QoS 0 retained replaces | server | untested | |",
           "| MQTT-3.3.1-8 | retain on new subscription | both | not implemented | |"]
    errs = errors_of(tree, matrix(bad))
    assert len(errs) == 2 and all("without a reason" in e for e in errs)


def test_client_row_may_be_untested_without_a_reason(tree):
    ok = ["| MQTT-2.3.1-2 | a client uses unused packet ids | client | untested | |"]
    assert errors_of(tree, matrix(ok)) == []


def test_unknown_status_and_binds_fail(tree):
    bad = ["| MQTT-3.12.4-1 | PINGREQ gets PINGRESP | broker | done | "
           "`tests/integration/test_a.py::test_pingreq_gets_pingresp` |"]
    errs = errors_of(tree, matrix(bad))
    assert any("binds 'broker'" in e for e in errs)
    assert any("status 'done'" in e for e in errs)


def test_duplicate_and_malformed_ids_fail(tree):
    bad = [GOOD_ROWS[0], GOOD_ROWS[0],
           "| MQTT-3.1.2.7 | retained outlive sessions | server | untested | no test yet |"]
    errs = errors_of(tree, matrix(bad))
    assert any("also on line" in e for e in errs)
    assert any("malformed statement id" in e for e in errs)


def test_row_count_differing_from_the_marker_fails(tree):
    errs = errors_of(tree, matrix(GOOD_ROWS, n=5))
    assert errs == ["version 3.1.1: 4 rows, the marker announces 5"]


def test_same_id_in_two_versions_is_allowed_and_counted_apart(tree):
    v5 = ["| MQTT-3.12.4-1 | PINGREQ gets PINGRESP | server | not implemented | "
          "level 5 is refused | `tests/integration/test_mqtt5_ping.py` |"]
    text = matrix(GOOD_ROWS) + "\n" + matrix(v5, version="5.0", header=HEADER5)
    rows, announced, errors = check.check(str(tree), text)
    assert errors == []
    lines = check.summary(str(tree), rows, announced)
    assert lines[2].startswith("MQTT 5.0: 1 statements: 0 tested")
    assert lines[4] == "  expected test files: 1, present now: 0"


def test_main_exits_1_and_names_the_row_when_a_test_is_missing(tree, capsys):
    bad = ["| MQTT-3.12.4-1 | PINGREQ gets PINGRESP | server | tested | "
           "`tests/integration/test_a.py::test_pingreq_gets_nothing` |"]
    (tree / "docs").mkdir()
    (tree / "docs" / "CONFORMANCE.md").write_text(matrix(bad))
    assert check.main(["--root", str(tree)]) == 1
    err = capsys.readouterr().err
    assert "MQTT-3.12.4-1" in err and "1 error(s)" in err


def test_main_exits_0_on_a_consistent_matrix(tree, capsys):
    (tree / "docs").mkdir()
    (tree / "docs" / "CONFORMANCE.md").write_text(matrix(GOOD_ROWS))
    assert check.main(["--root", str(tree)]) == 0
    assert "conformance: ok" in capsys.readouterr().out


def test_partly_tested_rows_are_counted_and_listed_as_gaps(tree):
    rows_in = GOOD_ROWS + [
        "| MQTT-2.3.1-4 | server packet ids | server | tested | "
        "`tests/integration/test_a.py::test_pingreq_gets_pingresp`; partly: uniqueness |",
        "| MQTT-3.3.1-7 | QoS 0 retained replaces | server | untested | no QoS 0 replacement test |"]
    rows, announced, errors = check.check(str(tree), matrix(rows_in))
    assert errors == []
    assert '  tested rows with a part untested ("partly:"): 1' in check.summary(str(tree), rows, announced)
    listed = check.gaps(rows)
    assert [line.split()[1] for line in listed] == ["MQTT-2.3.1-4", "MQTT-3.3.1-7"]


def test_expected_test_glob_counts_as_present_once_a_file_matches(tree):
    v5 = ["| MQTT-2.2.2-1 | property length 0 | both | not implemented | level 5 is refused | "
          "`tests/unit/test_mqtt5_*.c` |"]
    text = matrix(v5, version="5.0", header=HEADER5)
    rows, announced, errors = check.check(str(tree), text)
    assert errors == []
    assert check.summary(str(tree), rows, announced)[-1] == "  expected test files: 1, present now: 0"
    (tree / "tests" / "unit" / "test_mqtt5_props.c").write_text("TEST(x)\n{\n}\n")
    assert check.summary(str(tree), rows, announced)[-1] == \
        "  expected test files: 1, present now: 1 (tests/unit/test_mqtt5_*.c)"
