"""How values appear in messages and reasons.

Promise: :func:`plain` writes a number as a reader types it: ``2776852650``, ``1.5``, ``nan``,
never numpy's ``repr`` (``np.uint32(2776852650)``, ``np.float32(1.5)``). Anything that is not a
numpy scalar or 0-d array keeps its ``repr``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plain"]


def plain(value: object) -> str:
    """``value`` for a message: a numpy scalar (or 0-d array) as its plain number, else ``repr``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        return str(value)  # numpy's str is the shortest text that reads back in the scalar's own precision
    return repr(value)
