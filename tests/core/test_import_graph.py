"""accelcore, the provider packages and the CLI import without circles.

The graph is read from the source with :mod:`ast` (nothing is imported): an edge for every import of a
module of the same packages, at module level or inside a function alike, except under
``if TYPE_CHECKING:`` (annotations only, never run). An import of ``pkg.sub`` is an edge to ``pkg.sub``
alone: Python runs a parent package's ``__init__`` first in any case, so counting it would make every
package whose ``__init__`` re-exports a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "accel_opencl": ROOT / "providers" / "accel_opencl",
    "accel_vulkan": ROOT / "providers" / "accel_vulkan",
    "accel_cli": ROOT / "tools" / "accel_cli",
    "accelcore": ROOT / "accelcore",
}


def modules() -> dict[str, Path]:
    """Dotted module name → source file, for every module of :data:`PACKAGES`."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` still runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for other in child.orelse:
                yield other
                yield from _run_time_nodes(other)
            continue
        yield child
        yield from _run_time_nodes(child)


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` (source ``path``) imports at run time."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in _run_time_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            submodules = {f"{module}.{alias.name}" for alias in node.names} & known.keys()
            targets.update(submodules)
            if len(submodules) < len(node.names):  # names defined in ``module`` itself
                targets.add(module)
    return (targets & known.keys()) - {name}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None (depth-first, in sorted order: stable)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def test_the_graph_sees_every_package_and_its_imports() -> None:
    graph = import_graph()
    for package in PACKAGES:
        assert package in graph
    assert "accel_opencl.gating" in graph["accel_opencl.accelerator"]  # from .gating import ... (module level)
    assert "accel_opencl.handles" in graph["accel_opencl.gating"]
    assert "accel_vulkan.argument_kernels" in graph["accel_vulkan.layout_case"]  # from . import argument_kernels
    assert "accel_cli.packing" in graph["accel_cli.artifacts"]


def test_function_level_imports_count_and_type_checking_imports_do_not(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .a import A\nelse:\n    from . import b\n"
        "def late():\n    from .c import C\n    import pkg.d\n",
        encoding="utf-8",
    )
    known = {f"pkg.{name}": source for name in ("a", "b", "c", "d")}
    assert imported("pkg.probe", source, known) == {"pkg.b", "pkg.c", "pkg.d"}


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ],
)
def test_find_cycle_names_the_circle(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_no_import_cycle_in_the_providers_and_the_cli() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
