"""The shared tiny kernel: cold-load variants are valid, distinct modules; raw sides really run it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from accel_bench import kernels


def test_unique_spirv_is_valid_and_distinct(tmp_path: Path) -> None:
    base = kernels.tiny_spirv()
    one, two = kernels.unique_spirv("a"), kernels.unique_spirv("b")
    assert len({base, one, two}) == 3
    assert one[:4] == base[:4] == b"\x03\x02\x23\x07"
    validator = shutil.which("spirv-val")
    if validator is None:
        pytest.skip("spirv-val not installed (Debian: spirv-tools)")
    for index, module in enumerate((one, two)):
        path = tmp_path / f"m{index}.spv"
        path.write_bytes(module)
        done = subprocess.run([validator, str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_unique_cl_source_differs_only_by_comment() -> None:
    text = kernels.unique_cl_source("n1")
    assert text.endswith(kernels.CL_SOURCE) and text != kernels.CL_SOURCE


def test_raw_vulkan_transfer_and_dispatch_round_trip() -> None:
    from accel_bench import raw_vulkan

    raw = raw_vulkan.RawVulkan()
    try:
        buffer = raw.open_buffer(1 << 16, "host")
        data = np.arange(1 << 14, dtype=np.uint32).view(np.uint8)
        back = np.zeros_like(data)
        raw.writer(buffer, data)()
        raw.reader(buffer, back)()
        raw.close_buffer(buffer)
        assert np.array_equal(data, back)
        side = raw.dispatch_side()
        side.round_trip()
        side.sustained(50, 8)
        assert side.verify()
        side.close()
    finally:
        raw.close()


@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
def test_raw_opencl_dispatch_runs_kernel(gated: bool) -> None:
    from accel_bench import raw_opencl

    for _, _, device in raw_opencl.list_devices():
        side = raw_opencl.RawOpenCL(device).dispatch_side(gated=gated)
        side.round_trip()
        side.sustained(40, 8)
        assert side.verify()
        side.close()
