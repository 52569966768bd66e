"""Every ``console`` example in docs/cli.md and README.md runs and prints what the page says.

Rules (stated at the top of the page): the examples run in order in one scratch
directory holding the corpus as ``artifacts/``, with only the reference
provider visible and ``COLUMNS=120``; ``...`` stands for any number of lines;
``[exit N]`` is a non-zero exit status.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
_BLOCK = re.compile(r"^```console\n(.*?)^```", re.DOTALL | re.MULTILINE)
_EXIT = re.compile(r"^\[exit (\d+)\]$")


def _examples(doc: Path = DOC) -> list[tuple[str, list[str], int]]:
    examples = []
    for block in _BLOCK.findall(doc.read_text(encoding="utf-8")):
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


@pytest.mark.parametrize(("doc", "minimum"), [(DOC, 15), (ROOT / "README.md", 8)], ids=["docs-cli", "readme"])
def test_every_console_example(doc: Path, minimum: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``accel`` examples run in-process (click's runner, stdout and stderr interleaved); ``python`` ones as
    subprocesses. Conformance workers are real subprocesses either way."""
    from accel_cli.main import main
    from click.testing import CliRunner

    examples = _examples(doc)
    assert len(examples) >= minimum, f"{doc.name} lost its examples"
    (tmp_path / "artifacts").symlink_to(ROOT / "artifacts")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACCEL_DEVICE", raising=False)
    monkeypatch.delenv("ACCEL_EXTRA_PROVIDERS", raising=False)
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")
    monkeypatch.setenv("COLUMNS", "120")
    runner = CliRunner()
    for command, expected, code in examples:
        argv = shlex.split(command)
        if argv[0] == "accel":
            result = runner.invoke(main, argv[1:])
            output, status = result.output, result.exit_code
        elif argv[0] == "python":
            proc = subprocess.run(
                [sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
            )
            output, status = proc.stdout + proc.stderr, proc.returncode
        else:
            pytest.fail(f"{doc.name} example runs {argv[0]!r}; only accel and python are allowed")
        actual = [line.rstrip() for line in output.rstrip("\n").split("\n")] if output.strip() else []
        assert status == code, f"$ {command}\nexit {status}, doc says {code}\n{output}"
        assert _matches(expected, actual), f"$ {command}\n--- doc:\n" + "\n".join(expected) + "\n--- got:\n" + output
