"""Inferred coverage on every real device: a kernel packed from unguarded source gets one-per-work-item
coverage, so the engine refuses a short buffer (INVALID_ARGUMENT naming the slot, its length and what the
dispatch needs) before the driver runs a kernel that would read past it; full-length buffers still run and
give the right numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore.contract.errors import BackendError, ErrorKind
from accelcore.testing.pytest_support import real_device_params

# The one copy of the unguarded scale kernels (no bounds check on ``i``); tests/cli/test_inferred_coverage_cli.py
# reads them too.
DATA = Path(__file__).parent / "data"
OPENCL = (DATA / "unguarded_scale.cl").read_text()
GLSL = (DATA / "unguarded_scale.comp").read_text()
N = 256


@pytest.mark.parametrize(("family", "entry"), real_device_params())
def test_a_short_buffer_under_inferred_coverage_is_refused(family: Any, entry: Any, tmp_path: Path) -> None:
    vulkan = entry.device_id.startswith("vulkan")
    path = tmp_path / ("scale.comp" if vulkan else "scale.cl")
    path.write_text(GLSL if vulkan else OPENCL)
    scalars = {} if vulkan else {"a": np.float32(2.5)}
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(path)
        x = np.arange(N, dtype=np.float32)
        y = np.zeros(N, dtype=np.float32)
        kernel(x=x, y=y, global_size=N, **scalars)
        np.testing.assert_array_equal(y, 2.5 * x)

        short = np.arange(16, dtype=np.float32)
        with pytest.raises(BackendError) as info:
            kernel(x=short, y=np.zeros(N, dtype=np.float32), global_size=N, **scalars)
        assert info.value.kind is ErrorKind.INVALID_ARGUMENT
        message = str(info.value)
        assert "slot 0" in message and "64 bytes holds 16 elements" in message, message
        assert f"the dispatch needs {N}" in message, message

        out = np.zeros(8, dtype=np.float32)
        with pytest.raises(BackendError, match=f"slot 1: the bound range of 32 bytes holds 8 elements.*needs {N}"):
            kernel(x=x, y=out, global_size=N, **scalars)
        assert not out.any()  # nothing ran
