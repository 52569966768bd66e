"""``accel run`` of a kernel that writes a few elements past a ``--bind`` array (coverage unknown, so nothing
refuses it before the run): the guard tail of the temporary buffer catches it (docs/python.md "Writes past the
end of an array"); exit 3 naming the overrun, and no ``--out`` file is written — never exit 0 with the results.
A --bind far shorter than the dispatch gets a temporary buffer as long as the dispatch (docs/python.md, "Short
arrays"): a store far past it is the same exit 3, a load past it reads the guard pattern, the same every run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accelcore.api import guard_pattern
from accelcore.conformance.corpus import corpus_root
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


SAXPY = corpus_root() / "src" / "opencl" / "saxpy_args.cl"
"""``if (i < n) y[i] = a * x[i] + y[i]``: coverage unknown, so a short --bind reaches the device."""
COPY = """
kernel void copy(global const uint* in, global uint* out, const uint n) {
    uint i = get_global_id(0);
    if (i < n) out[i] = in[i];
}
"""


@pytest.mark.parametrize(("family", "entry"), OPENCL_DEVICES)
def test_run_of_saxpy_far_past_short_binds_exits_3_naming_the_argument(
    family: Any, entry: Any, accel, tmp_path: Path
) -> None:
    # 5,000 work-items store 16,000 bytes past a 1,000-element y (four times the guard tail): the temporary
    # buffer is as long as the dispatch, so the stores land in guard bytes (before: the worker crashed).
    np.save(tmp_path / "x.npy", np.arange(1000, dtype=np.float32))
    np.save(tmp_path / "y.npy", np.ones(1000, dtype=np.float32))
    proc = accel(
        [
            *("run", entry.device_id, SAXPY, "--arg", "a=2", "--arg", "n=5000", "--global", "5000"),
            *("--bind", f"x={tmp_path / 'x.npy'}", "--bind", f"y={tmp_path / 'y.npy'}:rw"),
            *("--out", f"y={tmp_path / 'out.npy'}"),
        ],
        providers=["opencl"],
    )
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    # named as the kernel names it (y), not by its slot (2)
    assert "OUT_OF_BOUNDS" in proc.stderr and "wrote past the end of argument y (4000 bytes given;" in proc.stderr
    assert "argument x" not in proc.stderr  # x is read past its end, never written
    assert not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize(("family", "entry"), OPENCL_DEVICES)
def test_run_reading_past_a_short_bind_reads_the_guard_pattern(family: Any, entry: Any, accel, tmp_path: Path) -> None:
    # A 16-element input under a dispatch taken from a 1,048,576-element output: exit 0 with the length
    # warning, and every run copies the same bytes past the input (the guard pattern, not other memory).
    source = tmp_path / "copy.cl"
    source.write_text(COPY)
    np.save(tmp_path / "in.npy", np.arange(1, 17, dtype=np.uint32))
    np.save(tmp_path / "out.npy", np.zeros(1 << 20, dtype=np.uint32))
    outputs = []
    for run in range(2):
        proc = accel(
            [
                *("run", entry.device_id, source, "--grid-from", "1", "--count-arg", "n"),
                *("--bind", f"in={tmp_path / 'in.npy'}", "--bind", f"out={tmp_path / 'out.npy'}:w"),
                *("--out", f"out={tmp_path / f'copy{run}.npy'}"),
            ],
            providers=["opencl"],
        )
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        assert "slot 0 holds 16 elements" in proc.stderr
        outputs.append(np.load(tmp_path / f"copy{run}.npy"))
    assert np.array_equal(outputs[0], outputs[1])
    assert np.array_equal(outputs[0][:16], np.arange(1, 17, dtype=np.uint32))
    past = outputs[0].view(np.uint8)[64:]
    assert np.array_equal(past, guard_pattern(past.size))
