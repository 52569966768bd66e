"""The high-level call group (accel_bench.highlevel_call; docs/benchmarks.md, "High-level call"): every
OpenCL device has ours
against PyOpenCL and every Vulkan device ours against wgpu-py, both variants at every size, every
side's result checked against numpy, ratios that are the ratios of the medians, one verdict per size
and variant, and a profile of ours wherever a target is missed. Structure only, never times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from accel_bench import highlevel_call
from accel_bench.targets_found import find_targets

QUICK = highlevel_call.settings_for(True)


def _check(result: dict[str, Any], api: str) -> None:
    peer, bound, _ = highlevel_call.BOUNDS[api]
    assert result["peer"] == peer
    assert set(result["sizes"]) == {str(n) for n in QUICK.sizes}
    for size, entry in result["sizes"].items():
        assert entry["elements"] == int(size)
        for side in ("ours", peer):
            assert set(entry[side]) == set(highlevel_call.VARIANTS)
            for variant, stat in entry[side].items():
                assert stat["verified"] is True, (side, variant)
                assert stat["repeats"] == QUICK.repeats and stat["warmup"] == QUICK.warmup
                assert 0 < stat["min_s"] <= stat["median_s"] <= stat["max_s"]
        for variant in highlevel_call.VARIANTS:
            ratio = entry["ratios"][f"ours / {peer}, {variant}"]
            assert ratio == pytest.approx(entry["ours"][variant]["median_s"] / entry[peer][variant]["median_s"])
        assert entry["ours_repack"]["median_s"] > 0
    verdicts = result["verdicts"]
    assert len(verdicts) == len(QUICK.sizes) * len(highlevel_call.VARIANTS)
    for verdict in verdicts:
        assert verdict["bound"] == bound and isinstance(verdict["met"], bool)
    if any(not v["met"] for v in verdicts):
        profile = result["profile"]
        for variant in highlevel_call.VARIANTS:
            spots = profile[variant]["spots_us"]
            assert {"Kernel.__call__ (the whole call)", "engine submit", "engine wait"} <= set(spots)
            assert profile[variant]["top"] and profile[variant]["calls"] == QUICK.profile_calls
    else:
        assert "profile" not in result


def test_quick_run_has_the_group_for_every_device(quick_run: tuple[dict[str, Any], Path]) -> None:
    document, _ = quick_run
    checked = 0
    for device in document["devices"]:
        if device["api"] not in highlevel_call.BOUNDS or device.get("ours_status") != "measured":
            continue
        assert not [e for e in device["errors"] if e.startswith("high-level call")], device["errors"]
        _check(device["highlevel"], device["api"])
        checked += 1
    assert checked, "no OpenCL or Vulkan device measured"


def test_a_partial_run_writes_its_own_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from accel_bench import run

    targets = [t for t in find_targets(None, None) if t.api == "opencl" and t.entry is not None]
    if not targets:
        pytest.skip("no OpenCL device with a provider on this machine")
    target = sorted(targets, key=lambda t: "pthread" not in t.name)[0]  # PoCL first where present
    monkeypatch.setenv("ACCELCORE_CACHE_DIR", str(tmp_path / "cache"))
    json_path = tmp_path / "highlevel.json"
    lines: list[str] = []
    document = run([target.device_id], json_path, quick=True, items=["highlevel"], log=lines.append)
    assert document["items"] == ["highlevel"]
    assert isinstance(document["load_average_at_end"], list)
    (device,) = document["devices"]
    assert device["errors"] == []
    assert "driver" in device and "transfers" not in device
    _check(device["highlevel"], "opencl")
    table = (tmp_path / "highlevel.md").read_text(encoding="utf-8")
    assert "### High-level call against pyopencl" in table
    assert "load average at end" in table
    assert not (tmp_path / "results.md").exists()
