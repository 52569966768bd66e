"""An interrupted isolated build leaves no answer behind for the next one, nor anything in the cache.

Before the fix (hostile-input issue, third round): Ctrl-C while ``dev.kernel(slow_source)`` waited
for its isolated build left the build worker registered with that answer pending; the next,
different kernel read it as its own, ran the slow kernel's binary, and ``remember`` stored that
binary and verdict under the new kernel's key, so a fresh process with the same cache ran it too
(seen on Intel's runtime and rusticl). The interrupted sequence runs in a child of the test
(``isolated_load.py``), so a KeyboardInterrupt that lands late cannot stop pytest.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_opencl import binary_cache, isolation

from accelcore import ErrorKind

from .isolated_load import load_isolated

OWN = """
__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i < count) { dst[i] = src[i] + 42u; }
}
"""
OWN_EXPECTED = [v * 3 + 42 for v in range(64)]  # isolated_load runs it over src = 3 * arange(64)


def slow_source(entry: Any) -> str:
    """A kernel that takes seconds to build (and create) in the isolated build child on this driver."""
    doublings = 10 if entry.native["tag"] == "rusticl" else 16  # rusticl: clCreateKernel ~16 s at 2^10
    defines = "#define A0 x = x * 3u + 1u;\n" + "".join(
        f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, doublings + 1)
    )
    return defines + (
        "__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {\n"
        f"    uint x = src[0];\n    A{doublings}\n    dst[get_global_id(0)] = x;\n}}\n"
    )


def test_a_build_interrupted_by_ctrl_c_never_answers_the_next_one(entry: Any, tmp_path: Path) -> None:
    stamp = time.monotonic_ns()
    env = {"ACCELCORE_CACHE_DIR": str(tmp_path)}
    own_options = f"-DINTERRUPTED_NEXT={stamp}"
    slow = {"source": slow_source(entry), "options": f"-DINTERRUPTED_SLOW={stamp}", "after_s": 0.3}
    first = load_isolated(
        entry.index, env=env, source=OWN, options=own_options, run=True, interrupted=slow, timeout=200
    )
    assert first["interrupted"] is True, "the slow build finished before the interrupt: make it slower"
    answer = first["loads"][0]
    assert answer["kind"] is None, answer
    assert answer["output"] == OWN_EXPECTED, "the next kernel ran the interrupted kernel's binary"
    assert first["processes"] == 2, first  # the interrupted worker was stopped, never asked again
    # A fresh process with the same cache: whatever was kept belongs to this kernel.
    fresh = load_isolated(entry.index, env=env, source=OWN, options=own_options, run=True)
    answer = fresh["loads"][0]
    assert answer["kind"] is None and answer["output"] == OWN_EXPECTED, answer
    assert answer["from_cache"] is True and fresh["children"] == 0, fresh


def test_an_answer_to_another_request_is_never_taken(rig: Any, make_package: Any) -> None:
    """A worker that still owes an answer (here: to a request written to it directly) is replaced."""
    stamp = time.monotonic_ns()
    rig.load(make_package(options=f"-DSTRAY_WARM={stamp}"))  # a warm worker
    limits = isolation.build_limits()
    worker = isolation._workers[limits.memory_mib]
    other = make_package(source=OWN, options=f"-DSTRAY_OTHER={stamp}")
    native = rig.accel._native  # the device this worker builds for
    stray = {"id": -1, "index": native.index, "uuid": native.uuid.hex(), "entry": "twice"}
    stray |= {"options": other.build_options, "size": len(other.module), "cpu_s": 60}
    assert worker.proc.stdin is not None
    worker.proc.stdin.write(json.dumps(stray).encode() + b"\n" + other.module)
    worker.proc.stdin.flush()
    before = isolation.processes_started()
    program = rig.load(make_package(options=f"-DSTRAY_MINE={stamp}"))  # the ``twice`` kernel: src * 2 + 1
    assert isolation.processes_started() == before + 1  # the stray answer was refused; a fresh worker built it
    src = np.arange(16, dtype=np.uint32)
    a, b = rig.buffer(src, "r"), rig.buffer(np.zeros(16, np.uint32), "w")
    assert str(rig.wait(rig.submit(program, {0: (a, "r"), 1: (b, "w")}))) == "Complete"
    assert np.array_equal(np.frombuffer(rig.read(b), dtype=np.uint32), src * 2 + 1)


def test_a_verdict_is_kept_only_under_the_key_it_was_made_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELCORE_CACHE_DIR", str(tmp_path))
    mine: binary_cache.CacheKey = (b"\x01" * 32, (1, 2))
    other: binary_cache.CacheKey = (b"\x02" * 32, (1, 2))
    verdict = isolation.Verdict(True, lasting=True, key=binary_cache.key_digest(other))
    for check in (isolation.check_belongs, isolation.remember):
        with pytest.raises(isolation.BackendError) as info:
            check(mine, verdict)
        assert info.value.kind is ErrorKind.INCOMPATIBLE
    assert isolation.remembered(mine, isolation.build_limits()) is None
    assert not (tmp_path / "opencl" / "verdicts").exists()
