"""Table and plots regenerate from the JSON alone; target verdicts follow the issue's thresholds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from accel_bench.report import load, regenerate, render_markdown
from accel_bench.targets import verdicts

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "results.json"


def _check_outputs(paths: list[Path], document: dict[str, Any]) -> None:
    markdown = paths[0]
    assert markdown.name == "results.md"
    text = markdown.read_text(encoding="utf-8")
    for device in document["devices"]:
        assert f"## {device['device_id']} " in text
    assert "## Targets at a glance" in text
    pngs = [p for p in paths if p.suffix == ".png"]
    names = {p.name for p in pngs}
    assert {"round_trip.png", "sustained.png"} <= names
    for device in document["devices"]:
        if device["transfers"]:
            assert f"transfers_{device['device_id'].replace(':', '_')}.png" in names
    for png in pngs:
        head = png.read_bytes()[:8]
        assert head == PNG_MAGIC, png


def test_regenerate_from_quick_json(quick_run: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    document, json_path = quick_run
    paths = regenerate(json_path, tmp_path)
    _check_outputs(paths, document)


def test_committed_results_regenerate_identically(tmp_path: Path) -> None:
    """docs/benchmarks/results.md is exactly what the committed JSON renders to (no hand edits, no drift)."""
    document = load(COMMITTED)
    paths = regenerate(COMMITTED, tmp_path)
    _check_outputs(paths, document)
    committed_md = (COMMITTED.parent / "results.md").read_text(encoding="utf-8")
    assert paths[0].read_text(encoding="utf-8") == committed_md
    for png in (p for p in paths if p.suffix == ".png"):
        assert (COMMITTED.parent / png.name).is_file(), f"{png.name} is rendered but not committed"


def test_load_refuses_a_foreign_file(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"schema": "something-else"}), encoding="utf-8")
    with pytest.raises(ValueError, match="not an accel-bench/1 result file"):
        load(path)


def _device(**overrides: Any) -> dict[str, Any]:
    mib = 1 << 20
    row = {
        "domain": "host",
        "direction": "write",
        "bytes": mib,
        "ratio_ours_raw": 0.95,
        "ratio_ours_memcpy": 0.85,
    }
    device: dict[str, Any] = {
        "device_id": "vulkan:0",
        "api": "vulkan",
        "transfers": [
            row,
            {**row, "domain": "device", "ratio_ours_raw": 0.1},
            {**row, "bytes": 4096, "ratio_ours_raw": 0.1},
        ],
        "round_trip": {"ours": {"median_s": 120e-6}, "raw": {"median_s": 100e-6}, "wgpu": {"median_s": 200e-6}},
        "overhead": {"submit_us": 20.0, "poll_us": 6.0},
        "program_load": {"ours": {"spirv-pipeline": {"speedup": 12.0}, "opencl-binary": {"speedup": 1.0}}},
    }
    device.update(overrides)
    return device


def test_verdicts_apply_the_issue_thresholds() -> None:
    result = {v["target"]: v for v in verdicts({"devices": [_device()]})["vulkan:0"]}
    # device-domain and 4 KiB rows are outside the transfer targets (host-visible, >= 1 MiB)
    assert result["transfer_vs_raw"]["met"] is True and result["transfer_vs_raw"]["value"] == 0.95
    assert result["transfer_vs_memcpy"]["met"] is True
    assert result["round_trip_vs_raw"]["value"] == pytest.approx(1.2) and result["round_trip_vs_raw"]["met"]
    assert result["round_trip_vs_wgpu"]["met"] is True
    # The faster raw way to wait is the baseline.
    polled = _device(
        round_trip={"ours": {"median_s": 120e-6}, "raw": {"median_s": 100e-6}, "raw-poll": {"median_s": 80e-6}}
    )
    judged = {v["target"]: v for v in verdicts({"devices": [polled]})["vulkan:0"]}["round_trip_vs_raw"]
    assert judged["value"] == pytest.approx(1.5) and judged["met"] is False and "raw-poll" in judged["detail"]
    assert result["submit_overhead"]["met"] is True
    assert result["poll_overhead"]["met"] is False
    assert result["warm_load"]["met"] is True


def test_verdicts_report_misses_and_gaps() -> None:
    device = _device(
        round_trip={"ours": {"median_s": 140e-6}, "raw": {"median_s": 100e-6}},
        overhead={"not_measured": "no engine"},
        program_load={},
    )
    device["transfers"][0]["ratio_ours_memcpy"] = 0.7
    result = {v["target"]: v for v in verdicts({"devices": [device]})["vulkan:0"]}
    assert result["round_trip_vs_raw"]["met"] is False
    assert result["round_trip_vs_wgpu"]["met"] is None
    assert result["transfer_vs_memcpy"]["met"] is False
    assert result["submit_overhead"]["met"] is None
    assert result["warm_load"]["met"] is None
    assert "not measured" in render_markdown(
        {"machine": {}, "config": {"quick": True}, "devices": [{**device, "name": "x"}]}
    )


def test_script_renders_from_json(quick_run: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    """tools/bench.py --render-only: the script entry regenerates table and plots from a JSON."""
    import subprocess
    import sys

    _, json_path = quick_run
    script = Path(__file__).resolve().parents[2] / "tools" / "bench.py"
    done = subprocess.run(
        [sys.executable, str(script), "--render-only", "--json", str(json_path), "--plot", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "results.md").is_file()
    assert (tmp_path / "round_trip.png").read_bytes()[:8] == PNG_MAGIC


def test_sustained_verdict_compares_ours_at_64_in_flight_with_the_api_s_baseline() -> None:
    def group(ours: float, raw: float, gated: float) -> dict[str, Any]:
        return {
            "ours": {"per_s": ours, "window": 64},
            "raw": {"per_s": raw, "window": 64},
            "raw-gated": {"per_s": gated, "window": 64},
        }

    opencl = _device(api="opencl", device_id="opencl:0", sustained_in_flight={"1": group(1, 1, 1)})
    opencl["sustained_in_flight"]["64"] = group(85.0, 200.0, 100.0)
    vulkan = _device(sustained_in_flight={"64": group(85.0, 100.0, 1.0)})
    found = verdicts({"devices": [opencl, vulkan]})
    cl = {v["target"]: v for v in found["opencl:0"]}["sustained_vs_raw"]
    vk = {v["target"]: v for v in found["vulkan:0"]}["sustained_vs_raw"]
    assert cl["value"] == pytest.approx(0.85) and cl["met"] is True and "raw-gated" in cl["detail"]
    assert vk["value"] == pytest.approx(0.85) and vk["met"] is False
    legacy = _device(sustained={"ours": {"per_s": 95.0, "window": 64}, "raw": {"per_s": 100.0, "window": 64}})
    assert {v["target"]: v for v in verdicts({"devices": [legacy]})["vulkan:0"]}["sustained_vs_raw"]["met"] is True
    assert {v["target"]: v for v in verdicts({"devices": [_device()]})["vulkan:0"]}["sustained_vs_raw"]["met"] is None
