"""The child side of OpenCL C reflection: Clang's front end (libclang) reads one source, prints JSON.

Run as a script (standard library and libclang only) by :mod:`accelcore.kernels.opencl_signature`, which bounds its
time and memory; never imported by the parent. Reads one JSON request on stdin
(``{"source": str, "args": [clang arguments], "memory_mib": int}``) and writes one JSON answer on
stdout: ``{"kernels": [...], "errors": [...]}``, or ``{"failure": message}`` when libclang is
missing or cannot parse at all. What a kernel, a parameter and a layout look like in the answer is
read back by ``opencl_signature._kernel_from_json`` and ``accelcore.kernels.layouts.layout_from_json``.

Every layout comes from the compiler: sizes, alignments and field offsets are what Clang lays out
for the SPIR target named in the arguments. A parameter whose declaration (or a type it reaches)
holds a compile error is reported with ``"unknown"`` set to that error: Clang's error recovery
types an unknown type name as ``int``, which must never be believed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
from typing import Any

_ADDRESS_SPACES = {1: "global", 2: "local", 3: "constant", 4: "private", 5: "generic"}
"""libclang's ``clang_getAddressSpace`` numbers for OpenCL (Clang's LangAS order; checked by the tests)."""
_MAX_DEPTH = 32
_MAX_NODES = 20_000
"""Type nodes one answer may describe (arrays are one node with a count, so this bounds the JSON)."""


_LEGALITY = (
    "cannot be used as the type of a kernel parameter",
    "declaring function parameter of type",
)
"""Errors about whether a parameter type is allowed (``size_t``, ``bool``, ``half`` by value), not about what it is."""


class _TooDeep(Exception):
    pass


def _scalar_name(kind: Any, ci: Any) -> str | None:
    kinds = ci.TypeKind
    return {
        kinds.BOOL: "bool",
        kinds.CHAR_S: "char",
        kinds.SCHAR: "char",
        kinds.CHAR_U: "uchar",
        kinds.UCHAR: "uchar",
        kinds.SHORT: "short",
        kinds.USHORT: "ushort",
        kinds.INT: "int",
        kinds.UINT: "uint",
        kinds.LONG: "long",
        kinds.ULONG: "ulong",
        kinds.HALF: "half",
        kinds.FLOAT: "float",
        kinds.DOUBLE: "double",
    }.get(kind)


class _Describer:
    def __init__(self, ci: Any) -> None:
        self.ci = ci
        self.nodes = 0
        self.reached: list[Any] = []  # declarations a type reaches (their extents are checked for errors)

    def describe(self, t: Any, depth: int = 0) -> dict[str, Any]:
        ci = self.ci
        kinds = ci.TypeKind
        self.nodes += 1
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            raise _TooDeep
        declaration = t.get_declaration()
        if declaration is not None and declaration.kind != ci.CursorKind.NO_DECL_FOUND:
            self.reached.append(declaration)
        c = t.get_canonical()
        size, align = c.get_size(), c.get_align()
        text = t.spelling
        scalar = _scalar_name(c.kind, ci)
        if scalar is not None:
            return {"kind": "scalar", "scalar": scalar, "size": size, "align": align, "text": text}
        if c.kind == kinds.ENUM:
            underlying = c.get_declaration().enum_type.get_canonical()
            return {
                "kind": "scalar",
                "scalar": _scalar_name(underlying.kind, ci) or "uint",
                "size": size,
                "align": align,
                "text": text,
            }
        if c.kind in (kinds.EXTVECTOR, kinds.VECTOR):
            component = _scalar_name(c.element_type.get_canonical().kind, ci)
            return {
                "kind": "vector" if component else "opaque",
                "scalar": component,
                "lanes": c.element_count,
                "size": size,
                "align": align,
                "text": text,
            }
        if c.kind == kinds.CONSTANTARRAY:
            return {
                "kind": "array",
                "count": c.element_count,
                "element": self.describe(c.element_type, depth + 1),
                "size": size,
                "align": align,
                "text": text,
            }
        if c.kind == kinds.RECORD:
            record = c.get_declaration()
            if size < 0:  # incomplete (declared, never defined) or dependent
                return {"kind": "opaque", "size": None, "text": text, "why": f"{text} is never defined"}
            fields = []
            for f in c.get_fields():
                if f.is_bitfield():
                    return {
                        "kind": "opaque",
                        "size": size,
                        "text": text,
                        "why": f"{text} has a bit-field ({f.spelling})",
                    }
                offset_bits = c.get_offset(f.spelling) if f.spelling else f.get_field_offsetof()
                if offset_bits is None or offset_bits < 0 or offset_bits % 8:
                    return {"kind": "opaque", "size": size, "text": text, "why": f"no byte offset for {f.spelling!r}"}
                fields.append(
                    {"name": f.spelling, "offset": offset_bits // 8, "type": self.describe(f.type, depth + 1)}
                )
            kind = "union" if record.kind == ci.CursorKind.UNION_DECL else "struct"
            return {"kind": kind, "size": size, "align": align, "text": text, "fields": fields}
        if c.kind == kinds.POINTER:
            return {"kind": "pointer", "size": size, "align": align, "text": text}
        return {"kind": "opaque", "size": size if size > 0 else None, "text": text, "why": f"{text} is not a data type"}


def _inside(extent: Any, diagnostic: Any) -> bool:
    location = diagnostic.location
    if location.file is None or extent.start.file is None or location.file.name != extent.start.file.name:
        return False
    start = (extent.start.line, extent.start.column)
    end = (extent.end.line, extent.end.column)
    return start <= (location.line, location.column) <= end


_MAX_BODY_NODES = 200_000


def _plain(ci: Any, node: Any) -> Any:
    """``node`` without the implicit casts and parentheses around it."""
    while node.kind in (ci.CursorKind.UNEXPOSED_EXPR, ci.CursorKind.PAREN_EXPR, ci.CursorKind.CSTYLE_CAST_EXPR):
        children = [c for c in node.get_children() if c.kind != ci.CursorKind.TYPE_REF]
        if len(children) != 1:
            break
        node = children[0]
    return node


def _local_id_axis(ci: Any, node: Any, axes: dict[str, int]) -> int | None:
    """The axis D when ``node`` is exactly ``get_local_id(D)`` (a literal D) or a variable set exactly to it."""
    node = _plain(ci, node)
    if node.kind == ci.CursorKind.CALL_EXPR and node.spelling == "get_local_id":
        arguments = list(node.get_arguments())
        if len(arguments) == 1:
            literal = _plain(ci, arguments[0])
            if literal.kind == ci.CursorKind.INTEGER_LITERAL:
                tokens = [t.spelling for t in literal.get_tokens()]
                text = tokens[0].rstrip("uUlL") if tokens else ""
                if text.isdecimal() and int(text) < 3:
                    return int(text)
        return None
    if node.kind == ci.CursorKind.DECL_REF_EXPR and node.referenced is not None:
        return axes.get(node.referenced.get_usr())
    return None


def _indexed_by_local_id(ci: Any, kernel: Any) -> dict[int, list[int]]:
    """The ``__local`` pointer parameters the body subscripts with exactly a work-item's local id on an axis
    (``scratch[get_local_id(0)]``, or ``scratch[lid]`` with ``int lid = get_local_id(0);``), with those axes:
    such a buffer needs as many elements as the work-group has on that axis. A subscript computed otherwise
    (``s[ly * 16 + lx]``, ``s[lid / 32]``) says nothing. Bounded by :data:`_MAX_BODY_NODES`."""
    parameters = {a.get_usr(): number for number, a in enumerate(kernel.get_arguments())}
    axes: dict[str, int] = {}
    found: dict[int, list[int]] = {}
    budget = _MAX_BODY_NODES
    for node in kernel.walk_preorder():
        budget -= 1
        if budget < 0:
            break
        if node.kind == ci.CursorKind.VAR_DECL:
            initial = [c for c in node.get_children() if c.kind != ci.CursorKind.TYPE_REF]
            if len(initial) == 1:
                axis = _local_id_axis(ci, initial[0], axes)
                if axis is not None:
                    axes[node.get_usr()] = axis
        elif node.kind == ci.CursorKind.ARRAY_SUBSCRIPT_EXPR:
            children = list(node.get_children())
            if len(children) != 2:
                continue
            base = _plain(ci, children[0])
            if base.kind != ci.CursorKind.DECL_REF_EXPR or base.referenced is None:
                continue
            number = parameters.get(base.referenced.get_usr())
            axis = _local_id_axis(ci, children[1], axes)
            if number is not None and axis is not None:
                found.setdefault(number, [])
                if axis not in found[number]:
                    found[number].append(axis)
    return found


def _written(argument: Any, source: bytes, main_name: str) -> str:
    """The parameter as written (white space collapsed); its tokens when it comes from a macro."""
    extent = argument.extent
    start, end = extent.start, extent.end
    if (
        start.file is not None
        and start.file.name == main_name
        and end.file is not None
        and 0 <= start.offset < end.offset
    ):
        text = source[start.offset : end.offset].decode("utf-8", "replace")
        if text.strip():
            return " ".join(text.split())
    return " ".join(tok.spelling for tok in argument.get_tokens())


def _attribute(cursor: Any) -> tuple[str, list[str]]:
    tokens = [t.spelling for t in cursor.get_tokens()]
    return (tokens[0] if tokens else ""), tokens


def _reflect(request: dict[str, Any]) -> dict[str, Any]:
    try:
        import clang.cindex as ci  # type: ignore[import-untyped]
    except ImportError as exc:
        return {
            "failure": f"libclang is not installed ({exc}); pip install libclang (make setup does)",
            "missing": True,
        }
    main_name = request.get("name") or "/nonexistent/accelcore-kernel.cl"
    source = request["source"].encode("utf-8", "surrogatepass")
    try:
        index = ci.Index.create()
        tu = index.parse(
            main_name,
            args=list(request["args"]),
            unsaved_files=[(main_name, source)],
            options=0 if request.get("bodies") else ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES,
        )
    except ci.TranslationUnitLoadError as exc:
        limit = request.get("memory_mib")
        return {"failure": f"Clang's front end gave up on the source ({exc}; it may have run out of its {limit} MiB)"}
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    answer_errors = [
        {
            "line": d.location.line,
            "column": d.location.column,
            "file": d.location.file.name if d.location.file else "",
            "message": d.spelling,
        }
        for d in errors[:50]
    ]
    kernels = []
    for cursor in tu.cursor.get_children():
        if cursor.kind != ci.CursorKind.FUNCTION_DECL or cursor.location.file is None:
            continue
        if cursor.location.file.name != main_name:
            continue
        attributes = [_attribute(a) for a in cursor.get_children() if a.kind == ci.CursorKind.UNEXPOSED_ATTR]
        if not any(name in ("__kernel", "kernel") for name, _ in attributes):
            continue
        required = None
        for name, tokens in attributes:
            if name == "reqd_work_group_size":
                numbers = [t for t in tokens[1:] if t not in "(),"]
                try:
                    required = [int(n, 0) for n in numbers][:3]
                except ValueError:
                    required = None
        parameters = []
        for index_, argument in enumerate(cursor.get_arguments()):
            describer = _Describer(ci)
            t = argument.type
            c = t.get_canonical()
            entry: dict[str, Any] = {
                "index": index_,
                "name": argument.spelling,
                "text": _written(argument, source, main_name),
                "address_space": None,
                "const": False,
                "access": None,
            }
            try:
                if c.kind == ci.TypeKind.POINTER:
                    pointee = c.get_pointee()
                    entry["address_space"] = _ADDRESS_SPACES.get(pointee.get_address_space(), "private")
                    entry["const"] = pointee.is_const_qualified()
                    # the written pointee keeps its typedef name (Pt rather than struct <anonymous>)
                    named = t.get_pointee() if t.kind == ci.TypeKind.POINTER else pointee
                    entry["layout"] = describer.describe(named)
                elif c.kind.name.startswith("OCLIMAGE") or c.kind.name in ("OCLSAMPLER", "OCLEVENT", "OCLQUEUE"):
                    entry["opaque"] = c.kind.name.lower().removeprefix("ocl")
                    spelled = " ".join(tok.spelling for tok in argument.get_tokens())
                    for qualifier in ("read_write", "write_only", "read_only"):
                        if qualifier in spelled:
                            entry["access"] = qualifier
                else:
                    entry["const"] = c.is_const_qualified()
                    entry["layout"] = describer.describe(t)
            except _TooDeep:
                entry["unknown"] = f"its type nests deeper than {_MAX_DEPTH} levels or has over {_MAX_NODES} parts"
            extents = [argument.extent] + [d.extent for d in describer.reached]
            for diagnostic in errors:
                if any(words in diagnostic.spelling for words in _LEGALITY):
                    continue  # the type is known exactly; whether the device takes it is the driver's to say
                if any(_inside(extent, diagnostic) for extent in extents):
                    where = f"line {diagnostic.location.line}, column {diagnostic.location.column}"
                    entry["unknown"] = f"{diagnostic.spelling} ({where})"
                    break
            parameters.append(entry)
        if request.get("bodies") and any(p["address_space"] == "local" for p in parameters):
            for index_, axes in _indexed_by_local_id(ci, cursor).items():
                parameters[index_]["local_id_axes"] = sorted(axes)
        kernels.append({"name": cursor.spelling, "parameters": parameters, "required_local_size": required})
    return {"kernels": kernels, "errors": answer_errors}


def _die_with_parent() -> None:
    """accelcore.support.child.die_with_parent, loaded by path (this script imports no accelcore package)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "child.py")
    spec = importlib.util.spec_from_file_location("_accel_child", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.die_with_parent()


def main() -> None:
    _die_with_parent()  # never outlives the process that asked
    request = json.loads(sys.stdin.buffer.read())
    memory = int(request.get("memory_mib") or 0)
    if memory > 0:
        limit = memory << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    timeout = float(request.get("timeout_s") or 0)
    if timeout > 0:
        seconds = int(timeout) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    try:
        answer = _reflect(request)
    except MemoryError:
        answer = {"failure": f"Clang ran out of its {memory} MiB reading the source"}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
