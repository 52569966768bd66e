"""Every runnable block of README.md, docs/cli.md and docs/python.md runs in a test, or says why not.

Runnable blocks are the fenced ``console``, ``sh`` and ``python`` ones. The line just before a block's
fence may hold a marker comment:

- ``<!-- doc-test: skip: REASON -->``: not run, for REASON (required);
- ``<!-- doc-test: machine PROVIDER... -->`` (``console`` only): run on this machine's devices (skipped
  when a named provider offers none), each block in a scratch folder of its own, and compared loosely
  (below), since device names, driver versions and timings differ from machine to machine.

Unmarked ``console`` blocks run in order in one scratch directory holding the corpus as ``artifacts/``,
with only the reference provider visible and ``COLUMNS=120``, and print exactly what the page says:
``...`` stands for any number of lines; ``[exit N]`` is a non-zero exit status. ``sh`` blocks run in
bash from the repository root in a shell that has not activated ``.venv`` (a newcomer's); a ``make
TARGET`` line runs as ``make -n TARGET`` (a dry run: the machine is set up already). ``python`` blocks
run in tests/python/test_docs_python.py. A ``text`` (or other) block holding a command line (``$ ...``
or ``accel ...``) is an error: make it ``console`` or ``sh``.

Loose comparison (``machine`` blocks): the exit status is exact; the output is compared after dropping
blank lines and table borders, reducing each table row to its cells (padding ignored) and collapsing
spaces; a table cell holding only a number matches any such cell (timings, counts); ``...`` alone stands
for any number of lines and ``...`` within a line for any text (device names, driver versions).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
DOCS = (ROOT / "README.md", DOC, ROOT / "docs" / "python.md")
RUNNABLE = ("console", "sh", "python")
PYTHON_DOCS = ("README.md", "python.md")
"""The pages whose ``python`` blocks tests/python/test_docs_python.py runs."""

_FENCE = re.compile(
    r"^(?:<!-- doc-test: (?P<marker>[^\n]*?) -->\n)?```(?P<language>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
_MARKER = re.compile(r"^(?:skip: (?P<reason>\S.*)|machine(?P<providers>(?: [a-z]+)+))$")
_COMMAND = re.compile(r"^(?:\$ |accel )", re.MULTILINE)
_EXIT = re.compile(r"^\[exit (\d+)\]$")
_BORDER = re.compile(r"^[\s━─┏┓┗┛┡┩└┘┳┻┬┴├┤╇╈┼┯┷]+$")
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, body, marker comment (or None) and the line of its fence."""

    doc: Path
    language: str
    body: str
    marker: str | None
    line: int

    @property
    def where(self) -> str:
        return f"{self.doc.name}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        match = _MARKER.match(self.marker or "")
        return match.group("reason") if match else None

    @property
    def machine(self) -> tuple[str, ...] | None:
        """The providers a ``machine`` block needs, or None for any other block."""
        match = _MARKER.match(self.marker or "")
        return tuple(match.group("providers").split()) if match and match.group("providers") else None


def doc_blocks(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start("language")) + 1
        blocks.append(Block(doc, match.group("language"), match.group("body"), match.group("marker"), line))
    return blocks


def _examples(block_bodies: list[str]) -> list[tuple[str, list[str], int]]:
    examples = []
    for block in block_bodies:
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, *lines = chunk.rstrip("\n").split("\n")
            code = 0
            if lines and _EXIT.match(lines[-1]):
                code = int(_EXIT.match(lines[-1]).group(1))  # type: ignore[union-attr]
                lines = lines[:-1]
            examples.append((command, [line.rstrip() for line in lines], code))
    return examples


def _exact_console(doc: Path) -> list[str]:
    return [b.body for b in doc_blocks(doc) if b.language == "console" and b.marker is None]


def _matches(expected: list[str], actual: list[str], line_matches=str.__eq__) -> bool:
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[i:], line_matches) for i in range(len(actual) + 1))
    return bool(actual) and line_matches(expected[0], actual[0]) and _matches(expected[1:], actual[1:], line_matches)


def _loose(lines: list[str]) -> list[str]:
    """Lines without blank lines and table borders, each table row reduced to its cells, spaces collapsed."""
    out = []
    for line in lines:
        if not line.strip() or _BORDER.match(line):
            continue
        stripped = line.strip()
        if stripped[0] in "│┃":
            cells = [cell.strip() for cell in re.split(r"[│┃]", stripped)[1:-1]]
            stripped = " │ ".join("<number>" if _NUMBER.fullmatch(cell) else cell for cell in cells)
        out.append(" ".join(stripped.split()))
    return out


def _loose_line(expected: str, actual: str) -> bool:
    if "..." not in expected:
        return expected == actual
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def _output_lines(output: str) -> list[str]:
    return [line.rstrip() for line in output.rstrip("\n").split("\n")] if output.strip() else []


def _run(command: str, cwd: Path) -> tuple[str, int]:
    """One example command, in-process (``accel``, click's runner, stdout and stderr interleaved) or as a
    subprocess (``python``)."""
    from accel_cli.main import main
    from click.testing import CliRunner

    argv = shlex.split(command)
    if argv[0] == "accel":
        result = CliRunner().invoke(main, argv[1:])
        return result.output, result.exit_code
    if argv[0] == "python":
        proc = subprocess.run(
            [sys.executable, *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
        )
        return proc.stdout + proc.stderr, proc.returncode
    pytest.fail(f"an example runs {argv[0]!r}; only accel and python are allowed")


def _scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    (tmp_path / "artifacts").symlink_to(ROOT / "artifacts")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACCEL_DEVICE", raising=False)
    monkeypatch.delenv("ACCEL_EXTRA_PROVIDERS", raising=False)
    monkeypatch.setenv("COLUMNS", columns)


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_runnable_block_is_run_or_says_why_not(doc: Path) -> None:
    """The inventory: markers are well-formed, every command sits in a block that runs, python blocks only on the
    pages whose python blocks run."""
    problems = []
    for block in doc_blocks(doc):
        if block.marker is not None and not _MARKER.match(block.marker):
            problems.append(f"{block.where}: marker {block.marker!r} is neither 'skip: REASON' nor 'machine PROVIDER'")
        if block.language not in RUNNABLE:
            if block.marker is not None:
                problems.append(f"{block.where}: a doc-test marker on a ```{block.language} block, which never runs")
            if _COMMAND.search(block.body):
                problems.append(
                    f"{block.where}: a ```{block.language} block holds a command line; make it console (or sh) so it "
                    "runs, or mark it <!-- doc-test: skip: REASON -->"
                )
            continue
        if block.machine is not None and block.language != "console":
            problems.append(f"{block.where}: 'machine' is for console blocks, not ```{block.language}")
        if block.language == "python" and doc.name not in PYTHON_DOCS and block.skip_reason is None:
            problems.append(f"{block.where}: no test runs the python blocks of {doc.name}")
        if block.language == "console" and block.skip_reason is None and not _examples([block.body]):
            problems.append(f"{block.where}: a console block without a '$ ' command")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("doc", "minimum"), [(DOC, 15), (ROOT / "README.md", 8)], ids=["docs-cli", "readme"])
def test_every_console_example(doc: Path, minimum: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unmarked console blocks, in order, exactly, with only the reference provider. Conformance workers are
    real subprocesses."""
    examples = _examples(_exact_console(doc))
    assert len(examples) >= minimum, f"{doc.name} lost its examples"
    _scratch(tmp_path, monkeypatch, "120")
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")
    for command, expected, code in examples:
        output, status = _run(command, tmp_path)
        actual = _output_lines(output)
        assert status == code, f"$ {command}\nexit {status}, doc says {code}\n{output}"
        assert _matches(expected, actual), f"$ {command}\n--- doc:\n" + "\n".join(expected) + "\n--- got:\n" + output


def _machine_blocks() -> list[Any]:
    params = []
    for doc in DOCS:
        for block in doc_blocks(doc):
            needs = block.machine
            if needs is None:
                continue
            marks = [getattr(pytest.mark, p) for p in needs if p in ("opencl", "vulkan")]
            params.append(pytest.param(block, id=block.where, marks=marks))
    return params


@pytest.mark.parametrize("block", _machine_blocks())
def test_machine_examples_run_on_this_machine(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``machine`` blocks: every device visible, each block in its own scratch folder, compared loosely."""
    import accelcore as ac

    monkeypatch.delenv("ACCEL_PROVIDERS", raising=False)
    have = {d.provider for d in ac.devices()}
    missing = sorted(set(block.machine or ()) - have)
    if missing:
        pytest.skip(f"{block.where} needs a device of {missing}; this machine has {sorted(have)}")
    _scratch(tmp_path, monkeypatch, "250")
    for command, expected, code in _examples([block.body]):
        output, status = _run(command, tmp_path)
        assert status == code, f"{block.where}: $ {command}\nexit {status}, doc says {code}\n{output}"
        expected_loose, actual_loose = _loose(expected), _loose(_output_lines(output))
        assert _matches(expected_loose, actual_loose, _loose_line), (
            f"{block.where}: $ {command}\n--- doc (loose):\n"
            + "\n".join(expected_loose)
            + "\n--- got (loose):\n"
            + "\n".join(actual_loose)
        )


def _sh_blocks() -> list[Any]:
    return [
        pytest.param(block, id=block.where)
        for doc in DOCS
        for block in doc_blocks(doc)
        if block.language == "sh" and block.skip_reason is None
    ]


def _newcomer_environment() -> dict[str, str]:
    """This environment as a shell that has not activated .venv sees it."""
    venv_bin = str(ROOT / ".venv" / "bin")
    env = {k: v for k, v in make_environment().items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    return env


def make_environment() -> dict[str, str]:
    """This environment without what an enclosing ``make`` exports (``make test`` runs pytest from a
    recipe): a nested make would otherwise print "Entering directory" lines, as no user's shell does."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


def sh_script(body: str) -> str:
    """A sh block as the test runs it: ``make TARGET`` lines as dry runs, stopping at the first failure."""
    lines = ["set -e"]
    for line in body.splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] == ["make"]:
            line = f"make -n {' '.join(words[1:])} > /dev/null"
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("block", _sh_blocks())
def test_sh_blocks_run_from_a_fresh_shell(block: Block) -> None:
    proc = subprocess.run(
        ["bash", "-c", sh_script(block.body)],
        cwd=ROOT,
        env=_newcomer_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{block.where}:\n{block.body}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}"
