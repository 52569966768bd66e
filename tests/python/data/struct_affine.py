"""The by-value struct kernel the Python and CLI struct-argument tests share: its source
(``struct_affine.cl`` beside this file) and the struct's layout as OpenCL lays it out, written out
independently of accelcore's encoder so the tests check that encoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SOURCE = (Path(__file__).with_name("struct_affine.cl")).read_bytes()
PARAMS = np.dtype(
    {
        "names": ["scale", "n", "bias", "step", "tail"],
        "formats": ["<f4", "<i4", ("<f4", 4), "<i2", "<f4"],
        "offsets": [0, 4, 16, 32, 36],
        "itemsize": 48,
    }
)
