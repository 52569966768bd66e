"""``accel run`` of a kernel that writes a few elements past a ``--bind`` array (coverage unknown, so nothing
refuses it before the run): the guard tail of the temporary buffer catches it (docs/python.md "Writes past the
end of an array"); exit 3 naming the overrun, and no ``--out`` file is written — never exit 0 with the results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accelcore.testing.pytest_support import real_device_params

OPENCL = """
kernel void fill(global float* out) {
    size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);
    out[i] = (float)i;
}
"""


OPENCL_DEVICES = [p for p in real_device_params() if str(p.id).startswith("opencl")]
"""Every OpenCL device (lavapipe discards stores past a descriptor's range, so nothing reaches its guard)."""


@pytest.mark.parametrize(("family", "entry"), OPENCL_DEVICES)
def test_run_of_a_kernel_writing_past_a_short_array_exits_3_and_writes_no_output(
    family: Any, entry: Any, accel, tmp_path: Path
) -> None:
    source = tmp_path / "fill.cl"
    source.write_text(OPENCL)
    np.save(tmp_path / "full.npy", np.zeros(16, dtype=np.float32))
    np.save(tmp_path / "short.npy", np.zeros(10, dtype=np.float32))
    args = ["run", entry.device_id, source, "--global", "4,4"]
    providers = ["opencl"]
    proc = accel(
        [*args, "--bind", f"out={tmp_path / 'full.npy'}", "--out", f"out={tmp_path / 'ok.npy'}"], providers=providers
    )
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "ok.npy"), np.arange(16, dtype=np.float32))
    proc = accel(
        [*args, "--bind", f"out={tmp_path / 'short.npy'}", "--out", f"out={tmp_path / 'bad.npy'}"], providers=providers
    )
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "OUT_OF_BOUNDS" in proc.stderr and "wrote past the end" in proc.stderr
    assert not (tmp_path / "bad.npy").exists()
