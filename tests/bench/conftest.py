"""Fixtures of the benchmark tool's tests: ``tools/`` on sys.path and one shared quick run."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

os.environ.setdefault("RUSTICL_ENABLE", "swrast")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One ``--quick`` run over every device found: (document, JSON path). Shared by the structure tests."""
    from accel_bench import run

    out = tmp_path_factory.mktemp("bench")
    json_path = out / "results.json"
    lines: list[str] = []
    document = run(None, json_path, out / "plots", quick=True, log=lines.append)
    return document, json_path
