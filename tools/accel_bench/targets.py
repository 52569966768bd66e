"""The issue's targets, checked against a result document (pure: JSON in, verdicts out)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["TARGETS", "verdicts"]

MIB = 1 << 20

TARGETS = {
    "transfer_vs_raw": "transfers >= 0.9x the raw API (GB/s ratio), host-visible memory, >= 1 MiB",
    "transfer_vs_memcpy": "transfers within 1.25x of memcpy (GB/s ratio >= 0.8), host-visible memory, >= 1 MiB",
    "round_trip_vs_raw": "dispatch round trip <= 1.3x the raw API (time ratio, fastest raw way to wait)",
    "round_trip_vs_wgpu": "dispatch round trip faster than wgpu-py (Vulkan devices)",
    "sustained_vs_raw": "sustained submissions at 64 in flight >= 0.8x raw-gated (OpenCL), >= 0.9x raw (Vulkan)",
    "submit_overhead": "engine overhead <= 25 us per submit",
    "poll_overhead": "engine overhead <= 5 us per poll",
    "warm_load": "warm program load >= 10x faster than cold (OpenCL source, SPIR-V pipeline)",
}

_HOST_VISIBLE = ("host", "shared")
RAW_WAITS = ("raw", "raw-poll")
"""Ungated raw round trips: blocking wait and busy poll. The target compares ours with the faster one."""
COMPILED_KINDS = ("opencl-source", "spirv-pipeline")
"""Program-load kinds the warm-load target applies to: those with a compile step a cache can skip.
A device binary is itself the cached form, so its cold/warm ratio is reported but not judged."""


def _verdict(target: str, value: float | None, ok: bool | None, detail: str) -> dict[str, Any]:
    return {"target": target, "value": value, "met": ok, "detail": detail}


def _device_verdicts(device: dict[str, Any]) -> Iterator[dict[str, Any]]:
    rows = [
        r
        for r in device.get("transfers", [])
        if r["domain"] in _HOST_VISIBLE and r["bytes"] >= MIB and r.get("host_visible", True)
    ]
    for key, name, bound in (
        ("ratio_ours_raw", "transfer_vs_raw", 0.9),
        ("ratio_ours_memcpy", "transfer_vs_memcpy", 0.8),
    ):
        values = [(r[key], r) for r in rows if r.get(key) is not None]
        if values:
            worst, row = min(values, key=lambda item: item[0])
            where = f"worst: {row['domain']} {row['direction']} {row['bytes'] // MIB} MiB"
            yield _verdict(name, worst, worst >= bound, where)
        else:
            yield _verdict(name, None, None, "not measured")
    dispatch = device.get("round_trip", {})
    ours = dispatch.get("ours", {}).get("median_s")
    raws = [(dispatch[name]["median_s"], name) for name in RAW_WAITS if dispatch.get(name, {}).get("median_s")]
    raw, raw_name = min(raws) if raws else (None, "")
    wgpu = dispatch.get("wgpu", {}).get("median_s")
    if ours and raw:
        yield _verdict(
            "round_trip_vs_raw", ours / raw, ours / raw <= 1.3, f"ours / {raw_name} median time (the faster raw wait)"
        )
    else:
        yield _verdict("round_trip_vs_raw", None, None, "not measured")
    if device.get("api") == "vulkan":
        if ours and wgpu:
            yield _verdict("round_trip_vs_wgpu", ours / wgpu, ours < wgpu, "ours / wgpu median time")
        else:
            yield _verdict("round_trip_vs_wgpu", None, None, "not measured")
    yield _sustained_verdict(device)
    overhead = device.get("overhead", {})
    for name, key, bound in (("submit_overhead", "submit_us", 25.0), ("poll_overhead", "poll_us", 5.0)):
        value = overhead.get(key)
        if value is None:
            yield _verdict(name, None, None, "not measured")
        else:
            yield _verdict(
                name, value, value <= bound, "engine-own CPU us per call (provider time subtracted in-call), median"
            )
    loads = device.get("program_load", {}).get("ours", {})
    speedups = [
        (v["speedup"], k) for k, v in loads.items() if k in COMPILED_KINDS and isinstance(v, dict) and v.get("speedup")
    ]
    if speedups:
        worst, kind = min(speedups)
        yield _verdict("warm_load", worst, worst >= 10.0, f"cold / warm median, worst: {kind}")
    else:
        yield _verdict("warm_load", None, None, "not measured")


SUSTAINED_IN_FLIGHT = 64
SUSTAINED_BOUNDS = {"opencl": ("raw-gated", 0.8), "vulkan": ("raw", 0.9)}
"""The side ours is compared with and the bound, per API (OpenCL: the gated raw calls, the native
price of cancellability included; Vulkan: the raw resubmission)."""


def _sustained_verdict(device: dict[str, Any]) -> dict[str, Any]:
    name = "sustained_vs_raw"
    groups = device.get("sustained_in_flight") or {}
    group = groups.get(str(SUSTAINED_IN_FLIGHT))
    headline = device.get("sustained") or {}
    if group is None and headline and all(s.get("window") == SUSTAINED_IN_FLIGHT for s in headline.values()):
        group = headline  # a document from before the in-flight groups (one run at 64)
    api = device.get("api")
    if not group or api not in SUSTAINED_BOUNDS:
        return _verdict(name, None, None, "not measured")
    other, bound = SUSTAINED_BOUNDS[api]
    ours, raw = group.get("ours", {}).get("per_s"), group.get(other, {}).get("per_s")
    if not ours or not raw:
        return _verdict(name, None, None, "not measured")
    ratio = ours / raw
    return _verdict(
        name, ratio, ratio >= bound, f"ours / {other} submits/s (medians), {SUSTAINED_IN_FLIGHT} in flight, >= {bound}"
    )


def verdicts(document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """{device id: [verdict per target]} — ``met`` None means not measured."""
    return {device["device_id"]: list(_device_verdicts(device)) for device in document.get("devices", [])}
