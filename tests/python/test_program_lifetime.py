"""A program lives as long as a kernel may use it (docs/python.md, "What a call costs").

Before: a dropped Kernel's programs stayed loaded for good (``dev.kernel(source)(...)`` in a loop reached
``max_programs_per_context`` 1,024 at call 1,025, the driver's memory growing all along), and a kernel whose
cache of 8 programs was full unloaded the oldest even while a submitted run still used it (BUSY escaped the
ninth ``submit`` with its own value). Now a dropped kernel's programs are unloaded at the device's next load,
and one a run still uses once that run has ended.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accelcore as ac
from accelcore.devices.environment import apply_defaults
from accelcore.kernels.glsl import compile_glsl
from accelcore.testing.pytest_support import device_params

from .test_threads import SAXPY_CL, SAXPY_GLSL

apply_defaults()

ALL, ALL_IDS = device_params(lambda: [e for e in ac.devices() if e.provider in ("opencl", "vulkan")], "devices")
_PROGRAMS_PER_KERNEL = 8


def _module(entry: Any) -> bytes:
    return SAXPY_CL.read_bytes() if entry.provider == "opencl" else compile_glsl(SAXPY_GLSL.read_bytes())


def _saxpy(kernel: ac.Kernel, a: float, y: Any) -> Any:
    return kernel.submit(a=np.float32(a), x=np.ones(64, np.float32), y=y, n=64, global_size=64)


def _programs(dev: ac.Device) -> int:
    return dev.engine.live_objects()["program"]


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_a_dropped_kernel_leaves_no_program_loaded(entry: Any) -> None:
    module = _module(entry)
    with ac.open(entry.device_id) as dev:
        for call in range(40):
            y = np.zeros(64, np.float32)
            _saxpy(dev.kernel(module), call, y).wait()
            assert (y == call).all()
        gc.collect()
        kept = dev.kernel(module)
        _saxpy(kept, 1.0, np.zeros(64, np.float32)).wait()  # the next load unloads what the dropped ones held
        assert _programs(dev) == 1, f"{_programs(dev)} programs loaded for one live kernel"


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_more_runs_in_flight_than_a_kernel_keeps_programs_each_get_their_value(entry: Any) -> None:
    with ac.open(entry.device_id) as dev:
        kernel = dev.kernel(_module(entry))
        outputs = [np.zeros(64, np.float32) for _ in range(_PROGRAMS_PER_KERNEL + 4)]
        runs = [_saxpy(kernel, value, y) for value, y in enumerate(outputs)]  # a new package (value) each
        for run in runs:
            run.wait()
        assert [float(y[0]) for y in outputs] == [float(v) for v in range(len(outputs))]
        _saxpy(kernel, 99.0, np.zeros(64, np.float32)).wait()  # the evicted ones are unloaded by now
        assert _programs(dev) <= _PROGRAMS_PER_KERNEL


@pytest.mark.parametrize("entry", ALL, ids=ALL_IDS)
def test_a_kernel_dropped_after_a_reset_is_forgotten(entry: Any, tmp_path: Path) -> None:
    module = _module(entry)
    with ac.open(entry.device_id) as dev:
        old = dev.kernel(module)
        _saxpy(old, 1.0, np.zeros(64, np.float32)).wait()
        dev.reset()
        del old  # its program went with the reset: nothing is left to unload, and nothing fails
        gc.collect()
        y = np.zeros(64, np.float32)
        _saxpy(dev.kernel(module), 2.0, y).wait()
        assert (y == 2.0).all() and _programs(dev) == 1
