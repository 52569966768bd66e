"""Matrix model: verdicts against expectations, merge across hosts, JSON/JUnit/HTML against schemas."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from accel_cli.expectations import ExpectationError, load_expectations
from accel_cli.html_report import matrix_to_html
from accel_cli.junit import matrix_to_junit, xml_tree
from accel_cli.matrix import (
    CaseCell,
    DeviceRecord,
    DeviceRun,
    Matrix,
    MatrixFormatError,
    load_matrix,
    merge,
    with_unique_labels,
)
from accel_cli.schemas import validate

POCL = DeviceRecord("opencl", 0, "pthread-haswell", bytes(16))
RUSTICL = DeviceRecord("opencl", 1, "llvmpipe (LLVM 15)", bytes(range(16)))

EXPECT = """
[[expected-failure]]
device = "opencl:*llvmpipe*"
case = "event.cancellation-races"
reason = "rusticl keeps a gated kernel QUEUED"
date = 2026-11-30

[[expected-failure]]
device = "opencl:0"
case = "memory.*"
reason = "made-up expectation that will pass"
date = "2026-11-29"
"""


def _run(device: DeviceRecord, host: str, statuses: dict[str, str], outcome: str = "completed") -> DeviceRun:
    cells = tuple(
        CaseCell(case_id, status, f"why {case_id}" if status != "passed" else "")
        for case_id, status in statuses.items()
    )
    return DeviceRun(device, host, outcome, cells, "", 0, 1.0)


@pytest.fixture
def expectations(tmp_path: Path):
    path = tmp_path / "expect.toml"
    path.write_text(EXPECT)
    return load_expectations(path)


def _matrix(expectations) -> Matrix:
    runs = [
        _run(
            POCL,
            "a",
            {"metadata.stable-valid": "passed", "memory.host": "passed", "event.cancellation-races": "passed"},
        ),
        _run(
            RUSTICL,
            "a",
            {"metadata.stable-valid": "passed", "memory.host": "skipped", "event.cancellation-races": "failed"},
        ),
    ]
    return Matrix(runs=with_unique_labels(runs)).reclassified(expectations)


def test_verdicts(expectations) -> None:
    matrix = _matrix(expectations)
    pocl, rusticl = matrix.runs
    assert [c.verdict for c in pocl.cases] == ["pass", "xpass", "pass"]
    assert [c.verdict for c in rusticl.cases] == ["pass", "skip", "xfail"]
    assert rusticl.cell("event.cancellation-races").expectation["reason"] == "rusticl keeps a gated kernel QUEUED"
    assert matrix.ok(strict=False)
    assert not matrix.ok(strict=True)
    assert matrix.counts() == {
        "pass": 3,
        "fail": 0,
        "timeout": 0,
        "crash": 0,
        "flake": 0,
        "skip": 1,
        "xfail": 1,
        "xpass": 1,
    }


def test_unexpected_failure_without_expectations() -> None:
    matrix = _matrix([])
    assert [c.verdict for c in matrix.runs[1].cases] == ["pass", "skip", "fail"]
    assert not matrix.ok(strict=False)
    assert [(r.label, c.id) for r, c in matrix.unexpected_failures()] == [("opencl:1", "event.cancellation-races")]


def test_json_round_trip_and_schema(expectations, tmp_path: Path) -> None:
    matrix = _matrix(expectations)
    document = matrix.to_json(strict=True)
    validate("conformance-matrix", document)
    assert document["ok"] is False and document["summary"]["unexpected_passes"] == 1
    path = tmp_path / "m.json"
    path.write_text(json.dumps(document))
    again = load_matrix(path)
    assert [r.to_json() for r in again.runs] == [r.to_json() for r in matrix.runs]


def test_merge_labels_every_device_by_host_when_hosts_differ(expectations) -> None:
    a = _matrix(expectations)
    b = Matrix(runs=(_run(POCL, "b", {"metadata.stable-valid": "failed"}),)).reclassified([])
    merged = merge([a, b])
    assert [r.label for r in merged.runs] == ["a/opencl:0", "a/opencl:1", "b/opencl:0"]
    assert merged.case_ids == ["metadata.stable-valid", "memory.host", "event.cancellation-races"]
    validate("conformance-matrix", merged.to_json())
    assert not merged.ok(strict=False)


def test_crashed_run_and_junit_schema(expectations) -> None:
    crashed = _run(RUSTICL, "a", {"metadata.stable-valid": "passed", "worker": "failed"}, outcome="crashed")
    matrix = Matrix(runs=with_unique_labels([*_matrix(expectations).runs[:1], crashed])).reclassified(expectations)
    validate("conformance-matrix", matrix.to_json())
    assert matrix.case_ids[-1] == "worker"
    xml = matrix_to_junit(matrix, strict=True)
    tree = xml_tree(xml)
    validate("junit", tree)
    suites = tree["children"]
    assert [s["attrib"]["name"] for s in suites] == ["opencl:0", "opencl:1"]
    assert suites[0]["attrib"]["failures"] == "1"  # xpass under --strict
    assert suites[1]["attrib"]["errors"] == "1"  # the crashed worker
    worker = next(c for c in suites[1]["children"][1:] if c["attrib"]["name"] == "worker")
    assert worker["children"][0]["tag"] == "error"
    lenient = xml_tree(matrix_to_junit(matrix, strict=False))
    assert lenient["children"][0]["attrib"]["failures"] == "0"


def test_junit_schema_rejects_wrong_shape() -> None:
    import jsonschema

    bad = {"tag": "testsuites", "attrib": {"name": "x"}, "children": []}
    with pytest.raises(jsonschema.ValidationError):
        validate("junit", bad)


def test_html_is_self_contained(expectations) -> None:
    page = matrix_to_html(_matrix(expectations), strict=True)
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "XPASS" in page and "xfail" in page and "rusticl keeps a gated kernel QUEUED" in page
    assert "UNEXPECTED RESULTS" in page


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[expected-failure]]\ndevice='*'\ncase='x'\nreason='r'\n", "lacks date"),
        ("[[expected-failure]]\ndevice='*'\ncase='x'\nreason='r'\ndate=2026-01-01\nreasn='typo'\n", "unknown key"),
        ("[[expected-failure]]\ndevice='*'\ncase='x'\nreason='r'\ndate='yesterday'\n", "not a date"),
        ("[[expected-failure]]\ndevice=''\ncase='x'\nreason='r'\ndate=2026-01-01\n", "device must be a non-empty"),
        ("[[expected-failure]]\ndevice='opencl:'\ncase='x'\nreason='r'\ndate=2026-01-01\n", "nothing after opencl:"),
        ("[[expected]]\n", "unknown top-level key"),
        ("this is = not toml [", "expect.toml"),
    ],
)
def test_malformed_expectations(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "expect.toml"
    path.write_text(text)
    with pytest.raises(ExpectationError, match=message):
        load_expectations(path)


def test_expectations_json_form(tmp_path: Path) -> None:
    path = tmp_path / "expect.json"
    entry = {"device": "*", "case": "a.b", "reason": "r", "date": "2026-11-30"}
    path.write_text(json.dumps({"expected-failure": [entry]}))
    (only,) = load_expectations(path)
    assert only.matches(POCL, "a.b") and not only.matches(POCL, "a.c")


def test_not_a_matrix(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"format": "accelcore-conformance-report/1"}))
    with pytest.raises(MatrixFormatError, match="not an accel conformance matrix"):
        load_matrix(path)
    path.write_text("{")
    with pytest.raises(MatrixFormatError, match="not JSON"):
        load_matrix(path)


def test_case_order_keeps_provider_cases_before_a_shared_last_case() -> None:
    first = _run(POCL, "a", {"m.a": "passed", "cl.x": "passed", "z.last": "passed"})
    second = _run(RUSTICL, "a", {"m.a": "passed", "vk.y": "passed", "vk.z": "passed", "z.last": "passed"})
    matrix = Matrix(runs=with_unique_labels([first, second]))
    assert matrix.case_ids == ["m.a", "cl.x", "vk.y", "vk.z", "z.last"]


def test_html_lists_failures_first_groups_skips_and_shows_a_failed_cells_reason() -> None:
    runs = [
        _run(POCL, "a", {"a.one": "failed", "a.two": "skipped", "a.three": "skipped", "a.four": "passed"}),
        _run(RUSTICL, "a", {"a.one": "passed", "a.two": "skipped", "a.three": "skipped", "a.four": "failed"}),
    ]
    runs = [
        dataclasses.replace(run, cases=tuple(
            dataclasses.replace(c, reason="device does not claim f64") if c.status == "skipped" else c
            for c in run.cases
        ))
        for run in runs
    ]  # fmt: skip
    page = matrix_to_html(Matrix(runs=with_unique_labels(runs)).reclassified(None))
    failures, table = page.index("<h2>Failures</h2>"), page.index("<table><thead>")
    assert failures < table  # what needs a look comes before the matrix
    assert page.count('<small class="why">') == 2 and '<a href="#r0">why a.one</a>' in page  # in the cell itself
    assert "device does not claim f64 — 4 cell(s)" in page  # one group, not four entries
    assert page.index("<h2>Skips, by reason</h2>") > table
