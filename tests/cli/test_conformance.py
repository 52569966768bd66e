"""``accel conformance``: workers per device, a crashing device, expectations, merge, JSON/JUnit/HTML outputs."""

from __future__ import annotations

import json
from pathlib import Path

from accel_cli.junit import xml_tree
from accel_cli.main import main
from accel_cli.schemas import validate
from click.testing import CliRunner

from .conftest import matrix_run

STANDARD = {
    "metadata.stable-valid",
    "intent.reserved-flags",
    "buffer.segmented-transfer-bounds",
    "submission.binding-validation",
    "accounting.resource-lifecycle",
}


def test_reference_device_passes_and_writes_every_output(accel, tmp_path: Path) -> None:
    report, junit, page = tmp_path / "m.json", tmp_path / "m.xml", tmp_path / "m.html"
    proc = accel(
        ["conformance", "reference:0", "--json", report, "--junit", junit, "--html", page, "--reasons"],
        providers=["reference"],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads(report.read_text())
    validate("conformance-matrix", document)
    assert document["ok"] is True
    (run,) = document["runs"]
    assert run["outcome"] == "completed" and run["device"]["id"] == "reference:0"
    assert STANDARD <= {case["id"] for case in run["cases"]}
    assert all(case["verdict"] == "pass" for case in run["cases"])
    tree = xml_tree(junit.read_text())
    validate("junit", tree)
    assert tree["attrib"]["failures"] == "0" and int(tree["attrib"]["tests"]) == len(run["cases"])
    assert "metadata.stable-valid" in page.read_text()
    assert "Conformance matrix" in proc.stdout and "OK:" in proc.stdout
    assert "reference:0" in proc.stderr  # per-device progress


def test_crashing_device_is_recorded_and_the_run_continues(accel, tmp_path: Path) -> None:
    report, junit = tmp_path / "m.json", tmp_path / "m.xml"
    proc = accel(
        ["conformance", "--json", report, "--junit", junit, "--jobs", "2", "--retries", "0"],
        providers=["crashing", "reference"],
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    document = json.loads(report.read_text())
    validate("conformance-matrix", document)
    crashed, healthy = document["runs"]
    # The case whose worker aborted is a crash cell; every other case still ran, in new workers.
    assert crashed["device"]["id"] == "crashing:0" and crashed["outcome"] == "completed"
    assert [c["id"] for c in crashed["cases"]] == [c["id"] for c in healthy["cases"]]
    crashes = [c for c in crashed["cases"] if c["verdict"] == "crash"]
    assert crashes and all("killed by SIGABRT while running this case" in c["reason"] for c in crashes)
    assert any(c["verdict"] == "pass" for c in crashed["cases"])
    assert healthy["outcome"] == "completed" and all(c["verdict"] == "pass" for c in healthy["cases"])
    assert document["summary"]["unexpected_failures"] == len(crashes) == document["summary"]["crash"]
    tree = xml_tree(junit.read_text())
    validate("junit", tree)
    assert tree["children"][0]["attrib"]["errors"] == str(len(crashes))
    assert f"unexpected failure: crashing:0 {crashes[0]['id']}" in proc.stdout


def test_expected_crash_is_xfail_and_strict_flags_xpass(accel, tmp_path: Path) -> None:
    expect = tmp_path / "expect.toml"
    expect.write_text(
        '[[expected-failure]]\ndevice = "cases:*"\ncase = "test.kill-self"\nreason = "test driver aborts"\n'
        "date = 2026-11-30\n"
        '[[expected-failure]]\ndevice = "reference:0"\ncase = "metadata.stable-valid"\nreason = "stale"\n'
        "date = 2026-11-01\n"
    )
    report = tmp_path / "m.json"
    proc = accel(
        ["conformance", "--expect", expect, "--json", report],
        providers=["cases", "reference"],
        env={"ACCEL_TEST_CASES": "kill-self"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads(report.read_text())
    assert document["summary"]["xfail"] == 1 and document["summary"]["xpass"] == 1
    assert "expected failure passed: reference:0 metadata.stable-valid" in proc.stdout
    strict = accel(["conformance", "--merge", report, "--expect", expect, "--strict"], providers=[])
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "XPASS" in strict.stdout


def test_merge_reports_from_two_machines(runner: CliRunner, tmp_path: Path, cli_env) -> None:
    reports = []
    for host in ("alpha", "beta"):
        path = tmp_path / f"{host}.json"
        document = {
            "format": "accel-conformance-matrix/1",
            "generated": "2026-11-30T00:00:00+00:00",
            "runs": [
                matrix_run(
                    host,
                    "opencl",
                    0,
                    f"dev-{host}",
                    {},
                    [
                        ("metadata.stable-valid", "passed", ""),
                        ("event.cancellation-races", "failed" if host == "beta" else "skipped", "why"),
                    ],
                )
            ],
        }
        path.write_text(json.dumps(document))
        reports.append(str(path))
    merged = tmp_path / "merged.json"
    result = runner.invoke(main, ["conformance", "--merge", *reports, "--json", str(merged)])
    assert result.exit_code == 1, result.output
    document = json.loads(merged.read_text())
    validate("conformance-matrix", document)
    assert [r["label"] for r in document["runs"]] == ["alpha/opencl:0", "beta/opencl:0"]
    assert document["sources"] == reports
    assert "alpha/opencl:0" in result.stdout and "beta/opencl:0" in result.stdout


def test_merge_json_to_stdout_is_one_document(runner: CliRunner, tmp_path: Path, cli_env) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"format": "accel-conformance-matrix/1", "runs": []}))
    result = runner.invoke(main, ["conformance", "--merge", str(path), "--json", "-"])
    assert result.exit_code == 0, result.output
    validate("conformance-matrix", json.loads(result.stdout))


def test_bad_inputs(runner: CliRunner, tmp_path: Path, cli_env) -> None:
    bad_expect = tmp_path / "e.toml"
    bad_expect.write_text("[[expected-failure]]\ndevice='*'\n")
    result = runner.invoke(main, ["conformance", "--expect", str(bad_expect), "fixture:0"])
    assert result.exit_code == 3
    assert "lacks case, reason, date" in result.stderr
    not_report = tmp_path / "r.json"
    not_report.write_text("[]")
    result = runner.invoke(main, ["conformance", "--merge", str(not_report)])
    assert result.exit_code == 3 and "not an accel conformance matrix" in result.stderr
    result = runner.invoke(main, ["conformance", "--merge"])
    assert result.exit_code == 2 and "--merge needs at least one report" in result.stderr
    result = runner.invoke(main, ["conformance", "fixture:9"])
    assert result.exit_code == 2
    assert "matches no device" in result.stderr and "fixture:0  Alpha PoCL CPU" in result.stderr
    result = runner.invoke(main, ["conformance", "missing:0"])
    assert result.exit_code == 2 and "libmissing.so.1 not found" in result.stderr
    result = runner.invoke(main, ["conformance", "--device-timeout", "soon", "fixture:0"])
    assert result.exit_code == 2 and "--device-timeout" in result.stderr


def test_no_device_at_all(runner: CliRunner, cli_env, monkeypatch) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "broken,missing")
    result = runner.invoke(main, ["conformance"])
    assert result.exit_code == 4
    assert "no device found" in result.stderr and "clGetPlatformIDs exploded" in result.stderr


def test_device_timeout_kills_the_worker(accel, tmp_path: Path) -> None:
    report = tmp_path / "m.json"
    proc = accel(["conformance", "reference:0", "--device-timeout", "1ns", "--json", report], providers=["reference"])
    assert proc.returncode == 1
    (run,) = json.loads(report.read_text())["runs"]
    assert run["outcome"] == "timeout" and run["cases"][-1]["id"] == "worker"


def test_merge_with_a_named_expectations_file_does_not_check_the_shipped_file_against_the_reports(
    accel, tmp_path: Path
) -> None:
    """A merge of numerics-only reports holds no contract case; the shipped file (applied with every --expect)
    names contract cases such as opencl.long-loop and must not make the merge exit 3. A named file's entry
    that matches no reported case still does."""
    report = Path(__file__).parent / "data" / "numerics-report.json"
    mine = tmp_path / "mine.toml"
    mine.write_text(
        '[[expected-failure]]\ndevice = "vulkan:*"\ncase = "numerics.fmod.f32"\nreason = "x"\ndate = 2026-12-01\n'
    )
    merged = accel(["conformance", "--merge", report, report, "--expect", mine], providers=[])
    assert merged.returncode == 0, merged.stdout + merged.stderr
    typo = tmp_path / "typo.toml"
    typo.write_text(
        '[[expected-failure]]\ndevice = "vulkan:*"\ncase = "numerics.fmodd.f32"\nreason = "x"\ndate = 2026-12-01\n'
    )
    refused = accel(["conformance", "--merge", report, "--expect", typo], providers=[])
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "numerics.fmodd.f32" in refused.stdout + refused.stderr
