"""The README's example runs, so it cannot rot.

Runs the first ```python block of README.md. A missing block is a failure, not a skip.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def first_python_block() -> tuple[Path, str]:
    readme = ROOT / "README.md"
    match = BLOCK.search(readme.read_text(encoding="utf-8"))
    assert match, "README.md has no ```python example"
    return readme, match.group(1)


def test_readme_example_runs() -> None:
    path, code = first_python_block()
    assert "accelcore" in code, f"the example in {path} does not use accelcore"
    # A fresh interpreter: the example must stand on its own imports.
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert completed.returncode == 0, f"the example in {path} failed:\n{completed.stderr}"
