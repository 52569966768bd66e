"""Shared (Workgroup) memory is checked against ``maxComputeSharedMemorySize`` with the specialization
constants applied, before any driver sees the pipeline: lavapipe returned zeros for a 64 MiB ``shared``
array sized by a specialization constant and segfaulted on a length of 0 or 0xFFFFFFFF, with the
validation layer silent. Each call runs in a child process, so a regression is a failed test, not a dead
test run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelcore.kernels.spirv import inspect_spirv, specialize

SHADER = """#version 450
layout(local_size_x = 64) in;
layout(constant_id = 3) const uint TILE = 256;
shared float tile[TILE];
layout(std430, binding = 0) buffer Out { float outv[]; };
void main() {
    uint i = gl_LocalInvocationID.x;
    tile[i % TILE] = float(i);
    barrier();
    outv[gl_GlobalInvocationID.x] = tile[(i + 1) % TILE];
}
"""
TOO_BIG = SHADER.replace("const uint TILE = 256", "const uint TILE = 1048576")
CALL = """
import sys, json, numpy as np, accelcore as ac
spec = json.loads(sys.argv[3])
with ac.open(sys.argv[1]) as dev:
    out = np.zeros(64, np.float32)
    try:
        dev.kernel(sys.argv[2], spec={int(k): v for k, v in spec.items()} or None)(out, global_size=64)
    except ac.BackendError as exc:
        print("REFUSED", exc)
    else:
        print("RAN", out[:3].tolist())
"""


def _call(entry: Any, path: Path, spec: dict[int, int]) -> str:
    import json

    done = subprocess.run(
        [sys.executable, "-c", CALL, entry.device_id, str(path), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "ACCEL_VULKAN_VALIDATION": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, "RAN [1.0, 2.0, 3.0]"),
        ({3: 512}, "RAN [1.0, 2.0, 3.0]"),
        ({3: 0}, "REFUSED INCOMPATIBLE: package and module disagree: a shared (Workgroup) array has length 0"),
        ({3: 0xFFFFFFFF}, "REFUSED UNSUPPORTED: the module declares 17179869180 bytes of shared"),
        ({3: 1 << 24}, "REFUSED UNSUPPORTED: the module declares 67108864 bytes of shared"),
    ],
    ids=["default", "512", "zero", "u32-max", "64MiB"],
)
def test_shared_memory_as_specialised(entry: Any, tmp_path: Path, spec: dict[int, int], expected: str) -> None:
    (tmp_path / "shared.comp").write_text(SHADER)
    out = _call(entry, tmp_path / "shared.comp", spec)
    assert out.startswith(expected), out
    if "UNSUPPORTED" in out:
        assert "maxComputeSharedMemorySize" in out and "SpecId 3" in out


def test_a_module_past_the_limit_at_its_defaults_is_refused(entry: Any, tmp_path: Path) -> None:
    (tmp_path / "big.comp").write_text(TOO_BIG)
    out = _call(entry, tmp_path / "big.comp", {})
    assert out.startswith("REFUSED UNSUPPORTED: the module declares 4194304 bytes of shared"), out


def test_specialize_sets_the_defaults_inspection_reads(entry: Any) -> None:
    from accel_vulkan.argument_kernels import compile_glsl

    module = compile_glsl(SHADER)
    assert inspect_spirv(module).workgroup_bytes == 1024
    assert inspect_spirv(specialize(module, {3: (100).to_bytes(4, "little")})).workgroup_bytes == 400
    assert inspect_spirv(specialize(module, {7: (100).to_bytes(4, "little")})).workgroup_bytes == 1024
