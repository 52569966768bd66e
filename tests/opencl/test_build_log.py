"""A long build log keeps its head: the first diagnostics name the cause (rusticl's log of a double-precision
build began mid-word, its first lines cut away, when only the last 4,000 characters were kept)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import accelcore as ac


def test_the_first_compile_error_survives_a_long_log(entry: Any, tmp_path: Any) -> None:
    body = "".join(f"    float v{i} = undeclared_{i} + 1.0f;\n" for i in range(400))
    (tmp_path / "broken.cl").write_text(f"__kernel void k(__global float *o) {{\n{body}    o[0] = 1.0f;\n}}\n")
    with ac.open(entry.device_id) as dev, pytest.raises(ac.BackendError) as info:
        dev.kernel(tmp_path / "broken.cl")(np.zeros(1, np.float32), global_size=1)
    message = str(info.value)
    assert "undeclared_0" in message, message[:600]
    assert len(message) < 6000
