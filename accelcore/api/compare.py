"""Cross-device comparison: one kernel, the same inputs, every selected device, one table of differences.

Promise: :func:`compare_arrays` measures how far an output is from a
reference — max absolute error, max ulp error (float outputs; NaN matches NaN
only, ±0 match each other) or mismatch count (integer outputs) — and judges
it against a :class:`Tolerance` (``ulp:N``, ``rel:X``, ``abs:X``; integers are
always compared exactly). :func:`compare` runs a kernel on each device with
fresh copies of the caller's arrays (the caller's arrays are not touched) and
compares every output with the first device's, or with ``expect``; a device
that fails is a row with its error, never a silent pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..contract.errors import BackendError, ErrorKind, MissingFileError

__all__ = ["Comparison", "ComparisonRow", "Tolerance", "compare", "compare_arrays"]


@dataclass(frozen=True, slots=True)
class Tolerance:
    """``ulp`` (max units in the last place), ``rel`` (max |a-b| / |ref|) or ``abs`` (max |a-b|)."""

    kind: str = "ulp"
    value: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Tolerance:
        match = re.fullmatch(r"\s*(ulp|rel|abs)\s*:\s*([0-9.eE+-]+)\s*", text)
        if match is None:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"tolerance {text!r} is not ulp:N, rel:X or abs:X")
        value = float(match.group(2))
        if not value >= 0 or (match.group(1) == "ulp" and value != int(value)):
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"tolerance {text!r}: give a non-negative (integer ulp) value"
            )
        return cls(match.group(1), value)

    def __str__(self) -> str:
        return f"{self.kind}:{self.value:g}"


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One output on one device against the reference."""

    output: str
    device: str
    max_abs_error: float | None = None
    max_ulp_error: int | None = None
    mismatches: int | None = None
    elements: int = 0
    ok: bool = False
    error: str | None = None


@dataclass
class Comparison:
    reference: str
    tolerance: Tolerance
    rows: list[ComparisonRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.rows)

    def as_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "tolerance": str(self.tolerance),
            "ok": self.ok,
            "rows": [
                {
                    "output": r.output,
                    "device": r.device,
                    "max_abs_error": r.max_abs_error,
                    "max_ulp_error": r.max_ulp_error,
                    "mismatches": r.mismatches,
                    "elements": r.elements,
                    "ok": r.ok,
                    "error": r.error,
                }
                for r in self.rows
            ],
        }


_SIGNED = {2: np.int16, 4: np.int32, 8: np.int64}


def _ordered(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Floats mapped to int64 so that neighbouring representable values differ by 1."""
    bits = values.view(_SIGNED[values.dtype.itemsize]).astype(np.int64)
    if values.dtype.itemsize == 8:
        low = np.iinfo(np.int64).min
        result: npt.NDArray[np.int64] = np.where(bits < 0, low - bits, bits)
    else:
        top = np.int64(1) << np.int64(8 * values.dtype.itemsize - 1)
        result = np.where(bits < 0, -top - bits, bits)
    return result


def _distance(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """|a - b| without overflow (modular uint64 arithmetic; exact below 2**63)."""
    forward = a.astype(np.uint64) - b.astype(np.uint64)
    backward = b.astype(np.uint64) - a.astype(np.uint64)
    result: npt.NDArray[np.uint64] = np.minimum(forward, backward)
    return result


def compare_arrays(
    reference: npt.NDArray[Any], got: npt.NDArray[Any], tolerance: Tolerance
) -> tuple[float, int | None, int, bool]:
    """(max abs error, max ulp error or None for integers, mismatch count, within tolerance)."""
    if reference.shape != got.shape or reference.dtype != got.dtype:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"cannot compare {got.dtype}{list(got.shape)} with the reference {reference.dtype}{list(reference.shape)}",
        )
    ref = reference.reshape(-1)
    out = got.reshape(-1)
    if np.issubdtype(ref.dtype, np.floating):
        both_nan = np.isnan(ref) & np.isnan(out)
        one_nan = np.isnan(ref) ^ np.isnan(out)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(ref.astype(np.float64) - out.astype(np.float64))
        diff[both_nan] = 0.0
        diff[one_nan] = np.inf
        ulps = _distance(_ordered(ref), _ordered(out))
        ulps[both_nan] = 0
        zero = (ref == 0) & (out == 0)
        ulps[zero] = 0
        max_ulp = min(int(ulps.max()), np.iinfo(np.int64).max) if ulps.size else 0
        if one_nan.any():
            max_ulp = np.iinfo(np.int64).max
        mismatches = int(np.count_nonzero(ulps))
        if tolerance.kind == "ulp":
            ok = max_ulp <= tolerance.value
        elif tolerance.kind == "abs":
            ok = bool((diff <= tolerance.value).all())
        else:
            scale = np.abs(ref.astype(np.float64))
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(diff == 0, 0.0, diff / scale)
            ok = bool((rel <= tolerance.value).all())
        return float(diff.max()) if diff.size else 0.0, max_ulp, mismatches, ok
    differ = ref != out
    with np.errstate(over="ignore"):
        diff_int = np.abs(ref.astype(np.float64) - out.astype(np.float64))
    mismatches = int(np.count_nonzero(differ))
    return float(diff_int.max()) if diff_int.size else 0.0, None, mismatches, mismatches == 0


def _module_provider(path: Path) -> set[str]:
    """Which providers can take the module (by content)."""
    from ..kernels.glsl import GLSL_SUFFIXES, looks_like_glsl
    from ..kernels.pack import detect_module_kind
    from ..kernels.package import ModuleKind
    from ..kernels.package_codec import MAGIC, parse_package
    from ..support.files import KERNEL_FILE_BYTES, read_file

    data = read_file(path, "kernel file", KERNEL_FILE_BYTES)
    if path.suffix.lower() in GLSL_SUFFIXES or looks_like_glsl(data):
        return {"vulkan"}
    kind = parse_package(data).module_kind if data.startswith(MAGIC[:4]) else detect_module_kind(data)
    return {"vulkan"} if kind is ModuleKind.SPIRV_VULKAN else {"opencl"}


def compare(
    kernel: str | Path,
    *args: object,
    devices: str | Sequence[str] | None = None,
    tolerance: Tolerance | str = "ulp:0",
    expect: Mapping[str, npt.NDArray[Any]] | None = None,
    kernel_options: Mapping[str, Any] | None = None,
    **kwargs: object,
) -> Comparison:
    """Run ``kernel`` with ``args``/``kwargs`` on every device ``devices`` selects (default: every device
    of a provider that takes the module) and compare the outputs (see the module docstring)."""
    from .device import devices as list_devices
    from .device import open

    path = Path(kernel)
    if not path.exists():  # one refusal, not a failed row per device
        raise MissingFileError(str(path))
    tol = Tolerance.parse(tolerance) if isinstance(tolerance, str) else tolerance
    if devices is None:
        providers = _module_provider(path)
        entries = [e for e in list_devices() if e.provider in providers]
    else:
        selectors = [s for s in (devices.split(",") if isinstance(devices, str) else devices) if s.strip()]
        entries = []
        for selector in selectors:
            for entry in list_devices(selector.strip()):
                if entry not in entries:
                    entries.append(entry)
    if not entries:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"no device to compare on (devices={devices!r})")
    results: dict[str, dict[str, npt.NDArray[Any]] | str] = {}
    for entry in entries:
        copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        named = {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        try:
            with open(entry.device_id) as dev:
                run = dev.kernel(path, **dict(kernel_options or {})).submit(*copies, **named)  # type: ignore[arg-type]
                run.wait()
                outputs = {name: value for name, value in run.outputs.items() if isinstance(value, np.ndarray)}
                results[entry.device_id] = outputs
        except BackendError as exc:
            results[entry.device_id] = str(exc)
    reference_name = "expected" if expect is not None else entries[0].device_id
    reference = dict(expect) if expect is not None else results[entries[0].device_id]
    comparison = Comparison(reference_name, tol)
    if isinstance(reference, str):
        for entry in entries:
            comparison.rows.append(ComparisonRow("*", entry.device_id, error=f"reference failed: {reference}"))
        return comparison
    for entry in entries:
        got = results[entry.device_id]
        if isinstance(got, str):
            comparison.rows.append(ComparisonRow("*", entry.device_id, error=got))
            continue
        for name, ref in reference.items():
            if name not in got:
                comparison.rows.append(ComparisonRow(name, entry.device_id, error="no such output"))
                continue
            try:
                max_abs, max_ulp, mismatches, ok = compare_arrays(np.asarray(ref), got[name], tol)
            except BackendError as exc:
                comparison.rows.append(ComparisonRow(name, entry.device_id, error=str(exc)))
                continue
            comparison.rows.append(
                ComparisonRow(name, entry.device_id, max_abs, max_ulp, mismatches, int(got[name].size), ok)
            )
    return comparison
