"""Cross-device comparison: the error measures, the tolerance rules, and a real run on every OpenCL device."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import accelcore as ac
from accelcore import BackendError
from accelcore.api.compare import Tolerance, compare_arrays
from accelcore.conformance.corpus import corpus_root

SAXPY_CL = corpus_root() / "src" / "opencl" / "saxpy_args.cl"


def test_ulp_distance_counts_representable_values() -> None:
    ref = np.array([1.0, -1.0, 0.0, 1e-45, np.inf, np.nan], np.float32)
    got = ref.copy()
    got[0] = np.nextafter(np.float32(1), np.float32(2))
    got[1] = np.nextafter(np.nextafter(np.float32(-1), np.float32(-2)), np.float32(-2))
    got[2] = np.float32(-0.0)  # +0 and -0 match
    _, max_ulp, mismatches, ok = compare_arrays(ref, got, Tolerance("ulp", 2))
    assert (max_ulp, mismatches, ok) == (2, 2, True)
    assert compare_arrays(ref, got, Tolerance("ulp", 1))[3] is False
    across_zero = compare_arrays(np.array([1e-45], np.float32), np.array([-1e-45], np.float32), Tolerance())
    assert across_zero[1] == 2  # the two smallest subnormals are two steps apart through zero


def test_nan_matches_only_nan_and_integers_compare_exactly() -> None:
    nan = compare_arrays(np.array([np.nan], np.float32), np.array([1.0], np.float32), Tolerance("abs", 1e9))
    assert nan[3] is False and nan[0] == np.inf
    ints = compare_arrays(np.arange(5, dtype=np.uint32), np.array([0, 1, 2, 3, 5], np.uint32), Tolerance("ulp", 9))
    assert (ints[1], ints[2], ints[3]) == (None, 1, False)
    rel = compare_arrays(np.array([100.0], np.float64), np.array([100.5], np.float64), Tolerance("rel", 0.01))
    assert rel[3] is True
    with pytest.raises(BackendError, match="cannot compare"):
        compare_arrays(np.zeros(3, np.float32), np.zeros(3, np.float64), Tolerance())


@pytest.mark.parametrize("text", ["ulp", "ulp:-1", "ulp:1.5", "lol:3"])
def test_bad_tolerances(text: str) -> None:
    with pytest.raises(BackendError, match="tolerance"):
        Tolerance.parse(text)


def test_compare_runs_on_every_opencl_device(tmp_path: Path) -> None:
    opencl = [d.device_id for d in ac.devices() if d.provider == "opencl"]
    if len(opencl) < 2:
        pytest.skip(f"a comparison needs two OpenCL devices; found {opencl}")
    shutil.copyfile(SAXPY_CL, tmp_path / "saxpy.cl")
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    y = np.linspace(1, 2, 1000, dtype=np.float32)
    before = y.copy()
    result = ac.compare(
        tmp_path / "saxpy.cl", a=np.float32(2.5), x=x, y=y, n=np.int32(1000), global_size=1000, tolerance="ulp:1"
    )
    assert np.array_equal(y, before)  # the caller's arrays are not touched
    assert [r.device for r in result.rows] == opencl and result.reference == opencl[0]
    assert result.ok and all(r.max_ulp_error is not None and r.max_ulp_error <= 1 for r in result.rows)
    expected = {"y": np.float32(2.5) * x + y}
    against = ac.compare(
        tmp_path / "saxpy.cl", a=2.5, x=x, y=y, n=1000, global_size=1000, tolerance="ulp:0", expect=expected
    )
    assert against.reference == "expected"
    assert all(r.max_ulp_error is not None and r.max_ulp_error <= 1 for r in against.rows)
    wrong = ac.compare(tmp_path / "saxpy.cl", a=2.5, x=x, y=y, n=1000, global_size=1000, expect={"y": before})
    assert not wrong.ok and all(r.mismatches == 999 for r in wrong.rows)  # x[0] == 0 leaves y[0] alone
    failing = ac.compare(tmp_path / "saxpy.cl", a="i32:2", x=x, y=y, n=1000, global_size=1000)
    assert not failing.ok and all("declares f32" in (r.error or "") for r in failing.rows)
