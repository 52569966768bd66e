"""docs/architecture.md matches the code: the layers it names exist, say their place in their docstring, and
no module imports a layer below it in the table (imports inside functions count; ``if TYPE_CHECKING:``
blocks do not). The old flat module paths are gone from code and docs, and modules stay readable in size."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

import accelcore

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "accelcore"
DOC = ROOT / "docs" / "architecture.md"
RECORDED = ("docs/benchmarks/", "docs/gpu/")
"""Recorded results keep the paths they were measured with."""
ENTRY_POINT_GROUP = "providers"
"""``accelcore.providers``: the entry-point group provider families register under (pyproject.toml), not a module."""

LINE_LIMIT = 700
LARGE = {
    # module (relative to accelcore/): why it may stay over LINE_LIMIT lines
    "kernels/package_codec.py": "one cohesive table: the package format's encoder and decoder, field by field",
}


def doc_layers() -> list[str]:
    """The layer names of the table in docs/architecture.md, in order."""
    rows = re.findall(r"^\| (\d+) \| `accelcore\.(\w+)` \|", DOC.read_text(encoding="utf-8"), re.M)
    assert [int(n) for n, _ in rows] == list(range(1, len(rows) + 1)), rows
    return [name for _, name in rows]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in ``path`` (the module ``module``, by default the one its place
    in the repository names) outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    module = module or _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names] if not node.module else [target]
            found += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def _layer(module: str, layers: list[str]) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "accelcore" and parts[1] in layers else None


def test_the_table_names_every_subpackage_and_only_those() -> None:
    layers = doc_layers()
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert sorted(layers) == packages, f"docs/architecture.md names {layers}; accelcore/ holds {packages}"
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert not top, f"modules outside any layer: {top} (docs/architecture.md)"


def test_each_layer_says_its_place_and_what_it_may_import() -> None:
    for name in doc_layers():
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert "May import" in doc and "docs/architecture.md" in doc, f"accelcore/{name}/__init__.py: {doc[:200]!r}"


def test_each_layer_names_its_modules() -> None:
    """A layer's docstring says what each of its modules (and subpackages) owns: a module it does not name is one
    a reader cannot place."""
    for name in doc_layers():
        folder = PACKAGE / name
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
        named = {word for group in re.findall(r"``(\w+)``|`(\w+)`|:mod:`\.(\w+)`", doc) for word in group if word}
        modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        modules |= {p.parent.name for p in folder.glob("*/__init__.py")}
        unnamed = sorted(modules - named)
        assert not unnamed, f"accelcore/{name}/__init__.py does not name {unnamed}"


def test_no_module_imports_a_later_layer() -> None:
    layers = doc_layers()
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue  # the package's face: it re-exports public names of every layer
        mine = _layer(_module_name(path), layers)
        assert mine is not None, path
        for line, target in _runtime_imports(path):
            theirs = _layer(target, layers)
            if theirs is not None and layers.index(theirs) > layers.index(mine):
                upward.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {target} ({theirs})")
    assert not upward, "imports against the order of docs/architecture.md:\n" + "\n".join(upward)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The check above can fail: a contract module importing the api layer is caught, inside a function too,
    and one under TYPE_CHECKING is not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..api import Device\n"
        "def f():\n    from ..api.device import open\n",
        encoding="utf-8",
    )
    imports = _runtime_imports(probe, "accelcore.contract.probe")
    assert imports == [(1, "typing"), (5, "accelcore.api.device")], imports


def _tracked(*patterns: str) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    here = Path(__file__).resolve()  # this file names what it looks for
    return [
        ROOT / name
        for name in listed
        if not name.startswith(RECORDED) and (ROOT / name).is_file() and ROOT / name != here
    ]


def test_references_name_modules_that_exist() -> None:
    """Every ``accelcore.NAME`` in code and docs is a layer or a public name of the package: the flat paths
    of before the layers (``accelcore.highlevel``, ``accelcore.spirv`` ...) are gone everywhere."""
    layers = set(doc_layers())
    stale = []
    for path in _tracked("*.py", "*.md", "*.toml", "Makefile"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in re.findall(r"\baccelcore\.([A-Za-z_]\w*)", line) + re.findall(r"\bac\.([a-z_]\w*)\.", line):
                if name not in layers and name != ENTRY_POINT_GROUP and not hasattr(accelcore, name):
                    stale.append(f"{path.relative_to(ROOT)}:{number}: accelcore.{name}")
            for name in re.findall(r"\baccelcore/([\w/]+\.py)\b", line):
                if not (PACKAGE / name).is_file():
                    stale.append(f"{path.relative_to(ROOT)}:{number}: accelcore/{name}")
    assert not stale, "references to modules that do not exist:\n" + "\n".join(stale)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_readable_in_size(path: Path) -> None:
    name = str(path.relative_to(PACKAGE))
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if name in LARGE:
        assert lines > LINE_LIMIT, f"{name} is {lines} lines now: take it off LARGE"
        return
    assert lines <= LINE_LIMIT, f"accelcore/{name}: {lines} lines (split it by responsibility, docs/architecture.md)"


def test_docs_and_comments_cite_documents_not_tracker_numbers() -> None:
    """ "issue 17 item 3" means nothing to a reader of the repository; a section of a document does. (A
    specification's own issue list, such as VK_KHR_shader_float_controls issue 1, is a document.)"""
    cited = []
    for path in _tracked("*.py", "*.md", "*.toml", "Makefile"):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"\b(?:issue|tracker)\b[ :#]*\d*", text, re.I):
            if "VK_KHR" in text[max(0, match.start() - 60) : match.start()] or not re.search(r"\d", match.group()):
                continue
            line = text.count("\n", 0, match.start()) + 1
            cited.append(f"{path.relative_to(ROOT)}:{line}: {match.group()}")
    assert not cited, "tracker numbers cited:\n" + "\n".join(cited)
