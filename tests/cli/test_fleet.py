"""``accel conformance`` at fleet scale: shards and their merge, per-case timeouts and crashes,
--max-fails, retries and flakes, caselists and skips, baselines, CSV; on the reference device, lavapipe
(a real Vulkan driver) and the test-only ``cases`` family (tests/cli/plugins/accel_cli_testfamilies.py)."""

from __future__ import annotations

import csv
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from accel_cli.junit import xml_tree
from accel_cli.schemas import validate
from accel_cli.shard import Shard, parse_shard, plan_durations

REAL = {"XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}


def _cells(document: dict[str, Any]) -> dict[str, list[tuple[str, str, str]]]:
    return {
        run["device"]["id"]: [(c["id"], c["status"], c["verdict"]) for c in run["cases"]] for run in document["runs"]
    }


def _lavapipe(accel) -> str:
    proc = accel(["devices", "--json"], providers=["vulkan"], env=REAL)
    if proc.returncode != 0:
        pytest.skip(f"no Vulkan: {proc.stderr.strip()[:200]}")
    ids = [d["id"] for d in json.loads(proc.stdout)["devices"] if "llvmpipe" in d["name"]]
    if not ids:
        pytest.skip("lavapipe (Vulkan llvmpipe) not installed")
    return str(ids[0])


def test_parse_shard_and_hash_assignment_is_stable() -> None:
    assert parse_shard("2/4") == (1, 4)
    for bad in ("0/4", "5/4", "x", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)
    ids = [f"area.case{i}" for i in range(200)]
    shards = [Shard(i, 4) for i in range(4)]
    owners = [[s.index for s in shards if s.keeps("k", c)] for c in ids]
    assert all(len(o) == 1 for o in owners)  # every cell in exactly one shard
    assert all(s.keeps("k", "accounting.resource-lifecycle") for s in shards)  # the final case runs in all
    assert [Shard(1, 4).shard_of("k", c) for c in ids] == [Shard(1, 4).shard_of("k", c) for c in ids]
    sizes = [sum(1 for o in owners if o == [i]) for i in range(4)]
    assert min(sizes) > 30  # roughly balanced


def test_durations_balance_shards_longest_first() -> None:
    cells = [("d", "slow", 10.0), ("d", "a", 4.0), ("d", "b", 3.0), ("d", "c", 3.0), ("e", "x", 1.0)]
    plan = plan_durations(cells, 2)
    loads = [0.0, 0.0]
    for key, case_id, seconds in cells:
        loads[plan[key][case_id]] += seconds
    assert plan["d"]["slow"] != plan["d"]["a"] and sorted(loads) == [10.0, 11.0]


def test_shards_merge_to_the_unsharded_run_on_reference_and_lavapipe(accel, tmp_path: Path) -> None:
    device = _lavapipe(accel)
    base = ["conformance", "reference:0", device, "--suite", "contract", "--jobs", "2"]
    providers = ["reference", "vulkan"]
    whole = tmp_path / "whole.json"
    proc = accel([*base, "--json", whole], providers=providers, env=REAL, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parts = []
    for number in (1, 2, 3):
        part = tmp_path / f"shard{number}.json"
        proc = accel([*base, "--shard", f"{number}/3", "--json", part], providers=providers, env=REAL, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        document = json.loads(part.read_text())
        validate("conformance-matrix", document)
        assert {run["shard"] for run in document["runs"]} == {f"{number}/3"}
        parts.append(part)
    # Each non-final cell ran in exactly one shard.
    seen: dict[tuple[str, str], int] = {}
    for part in parts:
        for device_id, cells in _cells(json.loads(part.read_text())).items():
            for case_id, _, _ in cells:
                seen[(device_id, case_id)] = seen.get((device_id, case_id), 0) + 1
    assert {k: n for k, n in seen.items() if n != 1 and k[1] != "accounting.resource-lifecycle"} == {}
    merged = tmp_path / "merged.json"
    proc = accel(["conformance", "--merge", *parts, "--json", merged], providers=[])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged_doc, whole_doc = json.loads(merged.read_text()), json.loads(whole.read_text())
    validate("conformance-matrix", merged_doc)
    assert _cells(merged_doc) == _cells(whole_doc)
    assert merged_doc["case_ids"] == whole_doc["case_ids"]
    # The same shard again picks the same cells; --durations rebalances deterministically.
    again = tmp_path / "again.json"
    proc = accel([*base, "--shard", "2/3", "--json", again], providers=providers, env=REAL, timeout=300)
    assert _cells(json.loads(again.read_text())) == _cells(json.loads(parts[1].read_text()))
    balanced = []
    for number in (1, 2):
        part = tmp_path / f"balanced{number}.json"
        args = [*base, "--shard", f"{number}/2", "--durations", whole, "--json", part]
        proc = accel(args, providers=providers, env=REAL, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        balanced.append(part)
    proc = accel(["conformance", "--merge", *balanced, "--json", merged], providers=[])
    assert _cells(json.loads(merged.read_text())) == _cells(whole_doc)


def test_case_timeout_and_crash_cost_one_cell_each(accel, tmp_path: Path) -> None:
    report, junit = tmp_path / "m.json", tmp_path / "m.xml"
    proc = accel(
        ["conformance", "cases:0", "--case-timeout", "1s", "--retries", "0", "--json", report, "--junit", junit],
        providers=["cases"],
        env={"ACCEL_TEST_CASES": "hang,kill-self,slow"},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    document = json.loads(report.read_text())
    validate("conformance-matrix", document)
    (run,) = document["runs"]
    cells = {c["id"]: c for c in run["cases"]}
    assert run["outcome"] == "completed" and "worker" not in cells
    assert cells["test.hang"]["verdict"] == "timeout" and "--case-timeout" in cells["test.hang"]["reason"]
    crash = cells["test.kill-self"]
    assert crash["verdict"] == "crash" and "SIGKILL" in crash["reason"]
    assert "about to SIGKILL my own worker" in crash["reason"]  # the last lines of its stderr
    assert cells["test.slow"]["verdict"] == "pass" and cells["accounting.resource-lifecycle"]["verdict"] == "pass"
    assert document["summary"]["unexpected_failures"] == 2
    tree = xml_tree(junit.read_text())
    validate("junit", tree)
    assert tree["attrib"]["errors"] == "2"


def test_max_fails_stops_scheduling_and_says_so(accel, tmp_path: Path) -> None:
    report = tmp_path / "m.json"
    proc = accel(
        ["conformance", "cases:0", "--max-fails", "1", "--retries", "0", "--json", report],
        providers=["cases"],
        env={"ACCEL_TEST_CASES": "always-fails,slow"},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (run,) = json.loads(report.read_text())["runs"]
    cells = {c["id"]: c for c in run["cases"]}
    assert cells["test.always-fails"]["verdict"] == "fail"
    assert cells["test.slow"]["verdict"] == "skip" and "--max-fails 1 reached" in cells["test.slow"]["reason"]
    assert "stopped early: not run: --max-fails 1 reached" in proc.stdout


def test_a_failure_that_passes_on_retry_is_a_flake(accel, tmp_path: Path) -> None:
    state, report, junit, page = tmp_path / "state", tmp_path / "m.json", tmp_path / "m.xml", tmp_path / "m.html"
    env = {"ACCEL_TEST_CASES": "fails-once", "ACCEL_TEST_FLAKY_STATE": str(state)}
    args = ["conformance", "cases:0", "--json", report, "--junit", junit, "--html", page]
    proc = accel(args, providers=["cases"], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a flake counts as a pass
    document = json.loads(report.read_text())
    validate("conformance-matrix", document)
    cell = next(c for c in document["runs"][0]["cases"] if c["id"] == "test.fails-once")
    assert cell["status"] == cell["verdict"] == "flake"
    assert [a["status"] for a in cell["attempts"]] == ["failed", "passed"]
    assert "first run fails" in cell["attempts"][0]["reason"]
    assert document["summary"]["flake"] == 1 and document["summary"]["unknown_flakes"] == 1
    tree = xml_tree(junit.read_text())
    validate("junit", tree)
    assert "flakyFailure" in junit.read_text() and tree["attrib"]["failures"] == "0"
    assert 'class="flake"' in page.read_text()
    assert "flaky: cases:0 test.fails-once" in proc.stdout
    # --strict: an unlisted flake fails; a [[flake]] entry makes it known.
    state.unlink()
    assert accel([*args, "--strict"], providers=["cases"], env=env).returncode == 1
    flakes = tmp_path / "flakes.toml"
    flakes.write_text('[[flake]]\ndevice = "cases:*"\ncase = "test.fails-once"\nreason = "racy"\ndate = 2026-12-01\n')
    state.unlink()
    proc = accel([*args, "--strict", "--expect", flakes], providers=["cases"], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a known flake" in proc.stdout
    # --retries 0: the first failure stands.
    state.unlink()
    proc = accel(["conformance", "cases:0", "--retries", "0"], providers=["cases"], env=env)
    assert proc.returncode == 1


def test_caselist_and_skips_are_recorded(accel, tmp_path: Path) -> None:
    caselist, skips, report = tmp_path / "cases.txt", tmp_path / "skips.txt", tmp_path / "m.json"
    caselist.write_text("# the memory cases and one more\nmemory.\nmetadata.stable-valid  # inline comment\n")
    skips.write_text("# known slow\n\nmemory.device\n")
    proc = accel(
        ["conformance", "reference:0", "--cases", caselist, "--skips", skips, "--skip", "memory.sh*", "--json", report],
        providers=["reference"],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = json.loads(report.read_text())["runs"]
    cells = {c["id"]: c for c in run["cases"]}
    assert set(cells) == {"metadata.stable-valid", "memory.host", "memory.device", "memory.shared"}
    assert cells["memory.device"]["verdict"] == "skip"
    assert cells["memory.device"]["reason"] == f"skipped by {skips}:3"
    assert cells["memory.shared"]["reason"] == "skipped by --skip memory.sh*"
    assert cells["memory.host"]["verdict"] == "pass"
    bad = tmp_path / "bad.txt"
    bad.write_text("memory\n")
    proc = accel(["conformance", "reference:0", "--cases", bad], providers=["reference"])
    assert proc.returncode == 2 and "'memory.'" in proc.stderr


def test_baseline_round_trips_through_expect(accel, tmp_path: Path) -> None:
    baseline, report, table = tmp_path / "baseline.toml", tmp_path / "m.json", tmp_path / "m.csv"
    env = {"ACCEL_TEST_CASES": "always-fails,slow"}
    proc = accel(
        ["conformance", "cases:0", "--retries", "0", "--write-baseline", baseline, "--csv", table],
        providers=["cases"],
        env=env,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    entries = tomllib.loads(baseline.read_text())["expected-failure"]
    assert [(e["device"], e["case"]) for e in entries] == [("cases:Reference with test cases", "test.always-fails")]
    assert "always fails" in entries[0]["reason"] and entries[0]["date"]
    proc = accel(
        ["conformance", "cases:0", "--retries", "0", "--expect", baseline, "--json", report],
        providers=["cases"],
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cell = next(c for c in json.loads(report.read_text())["runs"][0]["cases"] if c["id"] == "test.always-fails")
    assert cell["verdict"] == "xfail"
    rows = list(csv.DictReader(table.read_text().splitlines()))
    assert list(rows[0]) == ["device", "case", "status", "duration", "reason"]
    failing = next(r for r in rows if r["case"] == "test.always-fails")
    assert failing["status"] == "fail" and failing["device"] == "cases:0" and float(failing["duration"]) >= 0


def test_html_lists_the_slowest_cases(accel, tmp_path: Path) -> None:
    page = tmp_path / "m.html"
    proc = accel(["conformance", "cases:0", "--html", page], providers=["cases"], env={"ACCEL_TEST_CASES": "slow"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = page.read_text()
    slowest = text[text.index("Slowest cases") :]
    assert slowest.index("test.slow") < slowest.index("</table>")
    body = slowest[slowest.index("<tbody>") :]
    assert "test.slow" in body[: body.index("</tr>")]  # the slowest first


def test_on_lavapipe_case_timeout_skips_caselist_baseline_and_csv(accel, tmp_path: Path) -> None:
    device = _lavapipe(accel)
    caselist, report, table = tmp_path / "cases.txt", tmp_path / "m.json", tmp_path / "m.csv"
    caselist.write_text("metadata.stable-valid\nvulkan.kernel-arguments  # about 1.4 s on lavapipe\nmemory.\n")
    args = ["conformance", device, "--cases", caselist, "--skip", "memory.shared", "--retries", "0"]
    proc = accel(
        [*args, "--case-timeout", "0.3s", "--json", report, "--csv", table], providers=["vulkan"], env=REAL, timeout=300
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (run,) = json.loads(report.read_text())["runs"]
    cells = {c["id"]: c for c in run["cases"]}
    assert cells["vulkan.kernel-arguments"]["verdict"] == "timeout"  # its worker was killed...
    assert cells["memory.host"]["verdict"] == "pass"  # ...and the cases after it ran in a new one
    assert cells["memory.shared"]["reason"] == "skipped by --skip memory.shared"
    assert cells["metadata.stable-valid"]["verdict"] == "pass"
    rows = {r["case"]: r for r in csv.DictReader(table.read_text().splitlines())}
    assert rows["vulkan.kernel-arguments"]["status"] == "timeout" and rows["memory.shared"]["status"] == "skip"
    # The same failure as a baseline, accepted back by --expect.
    baseline = tmp_path / "baseline.toml"
    proc = accel([*args, "--case-timeout", "0.3s", "--write-baseline", baseline], providers=["vulkan"], env=REAL)
    assert proc.returncode == 1
    assert "vulkan.kernel-arguments" in baseline.read_text()
    proc = accel(
        [*args, "--case-timeout", "0.3s", "--expect", baseline, "--json", report], providers=["vulkan"], env=REAL
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = json.loads(report.read_text())["runs"]
    assert {c["id"]: c["verdict"] for c in run["cases"]}["vulkan.kernel-arguments"] == "xfail"


def test_run_options_are_refused_under_merge(accel, tmp_path: Path) -> None:
    proc = accel(["conformance", "--merge", tmp_path / "x.json", "--shard", "1/2"], providers=[])
    assert proc.returncode == 2 and "--merge runs nothing" in proc.stderr
    proc = accel(["conformance", "reference:0", "--shard", "3/2"], providers=["reference"])
    assert proc.returncode == 2 and "between 1 and N" in proc.stderr
    proc = accel(["conformance", "reference:0", "--durations", tmp_path / "x.json"], providers=["reference"])
    assert proc.returncode == 2 and "give --shard" in proc.stderr
