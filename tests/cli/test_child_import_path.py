"""``accel conformance`` run in a folder holding ``json.py`` / ``numpy.py``: its workers do not import them.

The console script ``accel`` itself never has the current folder on ``sys.path`` (its
``sys.path[0]`` is the script's folder); a ``python -m`` child would, unless started with ``-P``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HOSTILE = """\
import os, sys
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "IMPORTED-%d" % os.getpid()), "w").close()
sys.exit(86)
"""


def _console_script() -> Path:
    script = Path(sys.executable).parent / "accel"
    if not script.is_file():
        pytest.fail(f"no accel console script beside {sys.executable} (make setup installs the project editable)")
    return script


def test_conformance_workers_ignore_modules_in_the_current_folder(tmp_path: Path) -> None:
    for name in ("json", "numpy"):
        (tmp_path / f"{name}.py").write_text(HOSTILE)
    env = dict(os.environ)
    env.pop("ACCEL_DEVICE", None)
    env.pop("ACCEL_EXTRA_PROVIDERS", None)
    env["ACCEL_PROVIDERS"] = "reference"
    done = subprocess.run(
        [str(_console_script()), "conformance", "reference:0", "--json", "report.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.glob("IMPORTED-*")) == [], output
    assert done.returncode == 0, output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["ok"] is True
    assert [run["outcome"] for run in report["runs"]] == ["completed"]
    assert report["runs"][0]["cases"] and all(case["verdict"] == "pass" for case in report["runs"][0]["cases"])
