"""Re-load with changed arguments (accel_bench.reload_arguments): the group runs on one real OpenCL
and one real Vulkan device with tiny repeat counts, has every operation of both sides, and ours
really did not recompile: every OpenCL re-load came from the binary cache, a Vulkan push-constant
re-load created no pipeline (previous program kept) and re-ran no module or agreement check, a
spec-constant re-load created a pipeline but re-ran no module check. Counts only, never times."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from accel_bench import reload_arguments
from accel_bench.config import Config
from accel_bench.targets_found import Target, find_targets

CONFIG = dataclasses.replace(Config.quick_mode(), reload_repeats=2, reload_warmup=1, reload_inner=5)
CALLS = CONFIG.reload_repeats + CONFIG.reload_warmup

OPENCL_OURS = {"cold", "reload, previous kept", "reload, previous unloaded", "repack"}
OPENCL_RAW = {"clSetKernelArg", "clCreateKernel", "program from binary", "cold build"}
VULKAN_OURS = OPENCL_OURS | {"spec cold", "spec reload, previous kept"}
VULKAN_RAW = {"vkCmdPushConstants", "re-record", "vkCreateComputePipelines", "cold", "spec pipeline"}


def _target(api: str) -> Target:
    targets = [t for t in find_targets(None, None) if t.api == api and t.family is not None and t.entry is not None]
    if not targets:
        pytest.skip(f"no {api} device with a provider on this machine")
    # PoCL first where present (the CPU driver every build machine has).
    return sorted(targets, key=lambda t: "pthread" not in t.name)[0]


def _measure(api: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    monkeypatch.setenv("ACCELCORE_CACHE_DIR", str(tmp_path / "cache"))  # cold loads must not litter the user's cache
    target = _target(api)
    if api == "opencl":
        from accel_bench import raw_opencl

        device = raw_opencl.find_device(
            target.native.get("platform") or target.native.get("platform_name"),
            target.native.get("device_name", target.name),
        )
        return reload_arguments.measure_device(api, target.family, target.entry, raw_opencl.RawOpenCL(device), CONFIG)
    from accel_bench import raw_vulkan

    raw = raw_vulkan.RawVulkan(target.uuid or None)
    try:
        return reload_arguments.measure_device(api, target.family, target.entry, raw, CONFIG)
    finally:
        raw.close()


def _check_stats(result: dict[str, Any], ours: set[str], raw: set[str], per_call: str) -> None:
    assert "not_measured" not in result
    assert set(result["ours"]) == ours
    assert set(result["raw"]) == raw
    for side in ("ours", "raw"):
        for name, entry in result[side].items():
            assert entry["repeats"] == CONFIG.reload_repeats, (side, name)
            assert entry["warmup"] == CONFIG.reload_warmup, (side, name)
            assert 0 < entry["min_s"] <= entry["median_s"] <= entry["max_s"], (side, name)
            assert entry["what"]
    assert result["raw"][per_call]["inner"] == CONFIG.reload_inner
    for label, value in result["ratios"].items():
        numerator, denominator = label.split(" / ")
        assert value > 0, label
        assert numerator and denominator
    json.dumps(result)  # plain JSON


def test_opencl_reload_comes_from_the_binary_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = _measure("opencl", monkeypatch, tmp_path)
    _check_stats(result, OPENCL_OURS, OPENCL_RAW, "clSetKernelArg")
    ours = result["ours"]
    assert ours["cold"]["counts"] == {"loads": CALLS, "from_cache": 0}  # unique sources: compiled every time
    for mode in ("reload, previous kept", "reload, previous unloaded"):
        assert ours[mode]["counts"] == {"loads": CALLS, "from_cache": CALLS}, mode  # never compiled again
    ratio = result["ratios"]["ours cold / ours reload (kept)"]
    assert ratio == pytest.approx(ours["cold"]["median_s"] / ours["reload, previous kept"]["median_s"])
    assert len(result["ratios"]) == 6


def test_vulkan_push_constant_reload_creates_no_pipeline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = _measure("vulkan", monkeypatch, tmp_path)
    _check_stats(result, VULKAN_OURS, VULKAN_RAW, "vkCmdPushConstants")
    ours = result["ours"]
    n = CALLS
    assert ours["cold"]["counts"] == {"loads": n, "pipelines_created": n, "module_checks": n, "agreement_checks": n}
    # Push-constant values only, previous program kept: the shared pipeline serves it, nothing re-checked.
    kept = {"loads": n, "pipelines_created": 0, "module_checks": 0, "agreement_checks": 0}
    assert ours["reload, previous kept"]["counts"] == kept
    # Previous program unloaded first: its pipeline went with it, so one is created; the checks are remembered.
    unloaded = {"loads": n, "pipelines_created": n, "module_checks": 0, "agreement_checks": 0}
    assert ours["reload, previous unloaded"]["counts"] == unloaded
    # Another spec constant: a new pipeline and a new agreement check, the module checks reused.
    spec = {"loads": n, "pipelines_created": n, "module_checks": 0, "agreement_checks": n}
    assert ours["spec reload, previous kept"]["counts"] == spec
    assert ours["spec cold"]["counts"]["module_checks"] == n
    assert len(result["ratios"]) == 8


def test_quick_run_has_the_group_for_every_device(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    for device in document["devices"]:
        if device["api"] not in ("opencl", "vulkan"):
            continue
        result = device["reload_arguments"]
        expected = (OPENCL_OURS, OPENCL_RAW) if device["api"] == "opencl" else (VULKAN_OURS, VULKAN_RAW)
        assert (set(result["ours"]), set(result["raw"])) == expected, device["device_id"]
        for entry in result["ours"].values():
            if "counts" in entry and "from_cache" in entry["counts"] and entry is not result["ours"]["cold"]:
                assert entry["counts"]["from_cache"] == entry["counts"]["loads"], device["device_id"]


def test_a_partial_run_writes_its_own_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_bench import run

    target = _target("opencl")
    monkeypatch.setenv("ACCELCORE_CACHE_DIR", str(tmp_path / "cache"))
    json_path = tmp_path / "reload-arguments.json"
    (tmp_path / "results.md").write_text("the full run's table\n", encoding="utf-8")
    lines: list[str] = []
    document = run([target.device_id], json_path, quick=True, items=["reload_arguments"], log=lines.append)
    assert document["items"] == ["reload_arguments"]
    (device,) = document["devices"]
    assert device["errors"] == []
    assert set(device) >= {"reload_arguments"}
    assert not {"transfers", "round_trip", "sustained", "overhead", "program_load", "copy_freedom"} & set(device)
    assert (tmp_path / "results.md").read_text(encoding="utf-8") == "the full run's table\n"
    table = (tmp_path / "reload-arguments.md").read_text(encoding="utf-8")
    assert "### Re-load with changed arguments" in table
    assert "Targets at a glance" not in table
    with pytest.raises(ValueError, match="unknown benchmark item"):
        run([target.device_id], None, quick=True, items=["nosuch"], log=lines.append)
