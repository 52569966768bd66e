"""Every ``console`` example in docs/cli.md runs and prints what the page says.

Rules (stated at the top of the page): the examples run in order in one scratch
directory holding the corpus as ``artifacts/``, with only the reference
provider visible and ``COLUMNS=120``; ``...`` stands for any number of lines;
``[exit N]`` is a non-zero exit status.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
PLUGINS = Path(__file__).parent / "plugins"
_BLOCK = re.compile(r"^```console\n(.*?)^```", re.DOTALL | re.MULTILINE)
_EXIT = re.compile(r"^\[exit (\d+)\]$")


def _examples() -> list[tuple[str, list[str], int]]:
    examples = []
    for block in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, *lines = chunk.rstrip("\n").split("\n")
            code = 0
            if lines and _EXIT.match(lines[-1]):
                code = int(_EXIT.match(lines[-1]).group(1))  # type: ignore[union-attr]
                lines = lines[:-1]
            examples.append((command, [line.rstrip() for line in lines], code))
    return examples


def _matches(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and _matches(expected[1:], actual[1:])


def test_every_console_example(tmp_path: Path) -> None:
    examples = _examples()
    assert len(examples) >= 15, "docs/cli.md lost its examples"
    (tmp_path / "artifacts").symlink_to(ROOT / "artifacts")
    env = dict(os.environ)
    env.pop("ACCEL_DEVICE", None)
    env.update(
        {
            "ACCEL_PROVIDERS": "reference",
            "COLUMNS": "120",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(p for p in (str(PLUGINS), env.get("PYTHONPATH", "")) if p),
        }
    )
    for command, expected, code in examples:
        argv = shlex.split(command)
        program = {"accel": [sys.executable, "-m", "accel_cli"], "python": [sys.executable]}.get(argv[0])
        if program is None:
            pytest.fail(f"docs/cli.md example runs {argv[0]!r}; only accel and python are allowed")
        proc = subprocess.run(
            [*program, *argv[1:]],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            check=False,
        )
        actual = [line.rstrip() for line in proc.stdout.rstrip("\n").split("\n")] if proc.stdout.strip() else []
        assert proc.returncode == code, f"$ {command}\nexit {proc.returncode}, doc says {code}\n{proc.stdout}"
        assert _matches(expected, actual), (
            f"$ {command}\n--- doc:\n" + "\n".join(expected) + "\n--- got:\n" + proc.stdout
        )
