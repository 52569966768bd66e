"""Every ``python`` example of docs/python.md and README.md runs, in order, in one namespace, in a scratch
folder holding the corpus as ``artifacts/``; a block marked ``<!-- doc-test: skip: REASON -->`` on the
line before its fence is left out (tests/cli/test_docs.py holds the rules and checks every marker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import accelcore as ac

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^(<!-- doc-test: skip: [^\n]+ -->\n)?```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks(doc: Path) -> list[str]:
    return [body for skipped, body in _BLOCK.findall(doc.read_text(encoding="utf-8")) if not skipped]


def _needs(providers: set[str]) -> None:
    have = {d.provider for d in ac.devices()}
    missing = providers - have
    if missing:
        pytest.skip(f"the examples need a device of {sorted(missing)}; found {sorted(have)}")


@pytest.mark.parametrize(("doc", "minimum"), [(ROOT / "docs" / "python.md", 7), (ROOT / "README.md", 1)])
def test_examples_run(doc: Path, minimum: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    blocks = _blocks(doc)
    assert len(blocks) >= minimum, f"{doc.name} lost its Python examples"
    _needs({"opencl", "vulkan"})
    (tmp_path / "artifacts").symlink_to(ROOT / "artifacts")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks):
        try:
            exec(compile(block, f"{doc.name} example {number + 1}", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"{doc.name} example {number + 1} failed: {type(exc).__name__}: {exc}\n{block}")
    if doc.name == "python.md":
        printed = capsys.readouterr().out
        assert printed.count("INVALID_ARGUMENT") == 3 and "float64" in printed and "int32" in printed
