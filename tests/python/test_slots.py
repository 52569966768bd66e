"""What ``accel run --slot`` says can be said in Python: ``dev.kernel(..., slots={"out": "w", "x": "r:16"})``
sets a buffer's access (never more than the module declares) and element size, on every device."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore.devices.environment import apply_defaults
from accelcore.testing.pytest_support import provider_device_params

apply_defaults()

ENTRIES, IDS = provider_device_params()
SOURCE = """__kernel void square(__global const float *x, __global float *out) {
    int i = get_global_id(0);
    out[i] = x[i] * x[i];
}
"""
SHADER = """#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Out { float out_[]; };
void main() { uint i = gl_GlobalInvocationID.x; out_[i] = x[i] * x[i]; }
"""


def _kernel_file(entry: Any, tmp_path: Path) -> tuple[Path, str]:
    if entry.provider == "opencl":
        (tmp_path / "square.cl").write_text(SOURCE)
        return tmp_path / "square.cl", "out"
    (tmp_path / "square.comp").write_text(SHADER)
    return tmp_path / "square.comp", "out_"


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_slots_set_access_and_refuse_more_than_declared(entry: Any, tmp_path: Path) -> None:
    path, out_name = _kernel_file(entry, tmp_path)
    x = np.arange(64, dtype=np.float32)
    with ac.open(entry.device_id) as dev:
        square = dev.kernel(path, slots={out_name: "w"})
        writes = {p.name: p.access for p in square.parameters if p.role == "buffer"}
        assert writes[out_name] is ac.AccessMode.READ_WRITE  # the module's declaration
        out = np.full(64, np.nan, np.float32)
        square(x, out, global_size=64)
        np.testing.assert_array_equal(out, x * x)
        (package, _, _) = next(iter(square._packages.values()))  # the package the call ran
        assert sorted(int(row.access) for row in package.bindings) == [
            int(ac.AccessMode.READ),
            int(ac.AccessMode.WRITE),
        ]
        for slots, words in (
            ({"x": "w"}, "asks for WRITE but the module declares x READ"),
            ({"nope": "r"}, "has no buffer 'nope'"),
            ({out_name: "rx"}, "is not r, w or rw"),
            ({out_name: "w:0"}, "is not r, w or rw"),
        ):
            with pytest.raises(ac.BackendError, match=words):
                dev.kernel(path, slots=slots)
