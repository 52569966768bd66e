"""``accel inspect FILE``: what an artifact is, its entry points, local size and bindings with access."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table

from accelcore.contract.errors import BackendError
from accelcore.kernels.arguments import describe
from accelcore.kernels.pack import POCL_BINARY_PREFIX, opencl_kernels
from accelcore.kernels.package import (
    NO_COUNT_ARGUMENT,
    ArgumentKind,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    format_for,
)
from accelcore.kernels.spirv import SpirvModule, SpirvType, inspect_spirv
from accelcore.kernels.values import decode_value

from ..artifacts import ACCEPTED_FORMATS, ArtifactError, FileKind, parse_package_file, read_file, recognise
from ..failures import InputRejected
from ..render import console, emit_json, error_boundary, set_json_mode

__all__ = ["describe_file", "inspect"]


def _spirv_json(module: SpirvModule) -> dict[str, Any]:
    return {
        "flavour": module.flavour.value,
        "version": f"{module.version[0]}.{module.version[1]}",
        "bound": module.bound,
        "big_endian": module.big_endian,
        "capabilities": list(module.capabilities),
        "extensions": list(module.extensions),
        "entry_points": [
            {
                "name": e.name,
                "execution_model": e.execution_model_name,
                "local_size": list(e.local_size) if e.local_size else None,
                "local_size_spec_ids": list(e.local_size_spec_ids),
                "parameters": [
                    {
                        "index": p.index,
                        "name": p.name,
                        "type": describe(p.type) if p.type is not None else None,
                        "storage_class": p.storage_class,
                        "value_bytes": p.value_bytes,
                        "read_only": p.no_write,
                    }
                    for p in e.parameters
                ],
            }
            for e in module.entry_points
        ],
        "push_constant_members": [
            {"name": m.name, "offset": m.offset, "type": describe(m.type)}
            for m in (module.push_constant_block.members if module.push_constant_block is not None else ())
        ],
        "spec_constants": [
            {"spec_id": c.spec_id, "name": c.name, "type": describe(c.type), "default": c.value}
            for c in module.spec_constants
        ],
        "descriptors": [
            {
                "set": d.set,
                "binding": d.binding,
                "name": d.name,
                "block_name": d.block_name,
                "storage_class": d.storage_class_name,
                "type": d.descriptor_type,
                "access": d.access.name,
                "element_bytes": d.array_stride,
                "block_bytes": d.type.size if d.type is not None else None,
            }
            for d in module.descriptors
        ],
        "push_constant_bytes": module.push_constant_bytes,
    }


def _source_json(text: str, build_options: str = "") -> dict[str, Any]:
    return {
        "kernels": [
            {
                "name": k.name,
                "required_local_size": list(k.required_local_size) if k.required_local_size else None,
                "parameters": [
                    {
                        "index": p.index,
                        "name": p.name,
                        "declaration": p.text,
                        "type": p.value_type.name if p.value_type is not None else None,
                        "address_space": p.address_space,
                        "read_only": p.is_const,
                        "element_bytes": p.element_bytes,
                    }
                    for p in k.parameters
                ],
            }
            for k in opencl_kernels(text, build_options)
        ]
    }


def _module_json(kind: ModuleKind, module: bytes, build_options: str = "") -> dict[str, Any]:
    if kind in (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL):
        return {"spirv": _spirv_json(inspect_spirv(module))}
    if kind is ModuleKind.OPENCL_SOURCE:
        return {"opencl_source": _source_json(module.decode("utf-8"), build_options)}
    return {"opencl_binary": {"bytes": len(module), "pocl": module.startswith(POCL_BINARY_PREFIX)}}


def _parameter_names(pkg: KernelPackage) -> dict[int, tuple[str, str]]:
    """OpenCL argument index → (name, declaration) from the module, where it says."""
    try:
        if pkg.module_kind is ModuleKind.OPENCL_SOURCE:
            kernels = opencl_kernels(pkg.module.decode("utf-8"), pkg.build_options)
            kernel = next((k for k in kernels if k.name == pkg.entry_point), None)
            return {p.index: (p.name, p.text) for p in (kernel.parameters if kernel else ())}
        if pkg.module_kind is ModuleKind.SPIRV_OPENCL:
            entry = inspect_spirv(pkg.module).entry_point(pkg.entry_point)
            return {p.index: (p.name or "", describe(p.type) if p.type else "") for p in entry.parameters}
    except (BackendError, UnicodeDecodeError):
        pass
    return {}


def _decoded(t: SpirvType, data: bytes) -> object:
    from accelcore.kernels.layouts import spirv_value_type

    vtype = spirv_value_type(t)
    if vtype is None or len(data) < vtype.scalar.bytes * vtype.lanes:
        return data.hex()
    padded = data[: vtype.scalar.bytes * vtype.lanes] + bytes(vtype.size - vtype.scalar.bytes * vtype.lanes)
    return decode_value(vtype, padded)


def _arguments_json(pkg: KernelPackage) -> dict[str, Any]:
    """Every argument the package sets, with its value; Vulkan spec constants also the defaults kept."""
    names = _parameter_names(pkg)
    arguments = []
    for a in pkg.arguments:
        name, declaration = names.get(a.index, ("", ""))
        entry: dict[str, Any] = {"index": a.index, "name": name, "declaration": declaration, "kind": a.kind.name}
        if a.kind is ArgumentKind.VALUE and a.value_type is not None:
            entry.update(type=a.value_type.name, value=decode_value(a.value_type, a.data))
        elif a.kind is ArgumentKind.VALUE:  # a by-value struct: its raw bytes in the OpenCL C layout
            entry.update(type="bytes", bytes=len(a.data), value=a.data.hex())
        else:
            entry.update(type=None, local_bytes=a.local_bytes)
        arguments.append(entry)
    push: list[dict[str, Any]] = []
    specs: list[dict[str, Any]] = []
    if pkg.module_kind is ModuleKind.SPIRV_VULKAN:
        try:
            module = inspect_spirv(pkg.module)
        except BackendError:
            module = None
        block = module.push_constant_block if module is not None else None
        counted = pkg.dispatch.count_argument != NO_COUNT_ARGUMENT
        for m in block.members if block is not None else ():
            offset = m.offset or 0
            size = m.type.size or 0
            if counted and offset == 0:
                value: object = "(the element count)"
            elif pkg.push_constants:
                value = _decoded(m.type, pkg.push_constants[offset : offset + size])
            else:
                value = None
            push.append({"name": m.name, "offset": m.offset, "type": describe(m.type), "value": value})
        given = {c.spec_id: c for c in pkg.spec_constants}
        for c in module.spec_constants if module is not None else ():
            chosen = given.get(c.spec_id)
            if chosen is not None:
                shown: object = _decoded(c.type, chosen.data)
                if c.type.kind == "bool":
                    shown = chosen.data != bytes(4)
            else:
                shown = c.value
            specs.append(
                {
                    "spec_id": c.spec_id,
                    "name": c.name,
                    "type": describe(c.type),
                    "value": shown,
                    "source": "package" if chosen is not None else "module default",
                }
            )
    return {"arguments": arguments, "push_constants": push, "spec_constants": specs}


def _package_json(pkg: KernelPackage) -> dict[str, Any]:
    dispatch = pkg.dispatch
    return {
        "version": pkg.version,
        "module_kind": pkg.module_kind.name,
        "format": f"{int(format_for(pkg.module_kind)):#010x}",
        "entry_point": pkg.entry_point,
        "local_size": list(pkg.local_size),
        "bindings": [
            {
                "slot": b.slot,
                "native_index": b.native_index,
                "access": b.access.name,
                "element_size": b.element_size,
                "set": b.set,
                "descriptor_type": b.descriptor_type.name,
                "coverage": b.coverage.name,
                "coverage_elements": b.coverage_elements,
            }
            for b in pkg.bindings
        ],
        "dispatch": {
            "kind": dispatch.kind.name,
            "groups": list(dispatch.groups),
            "global_size": list(dispatch.global_size) if dispatch.kind is DispatchKind.GLOBAL else None,
            "slot": dispatch.slot,
            "count_argument": None if dispatch.count_argument == NO_COUNT_ARGUMENT else dispatch.count_argument,
        },
        **_arguments_json(pkg),
        "build_options": pkg.build_options,
        "target": [f"{w:#010x}" for w in pkg.target.words] if any(pkg.target.words) else None,
        "module_bytes": len(pkg.module),
        "module": _module_json(pkg.module_kind, pkg.module, pkg.build_options),
        "coverage_inference": _inference_json(pkg),
    }


def _inference_json(pkg: KernelPackage) -> dict[str, Any]:
    """What :func:`accelcore.kernels.coverage_inference.infer_coverage` proves of the package's module and dispatch
    (the coverage column says what the package records; the format does not say who stated it)."""
    from accelcore.kernels.coverage_inference import infer_coverage

    found = infer_coverage(pkg)
    return {"per_work_item": sorted(found.per_work_item), "summary": found.describe()}


def describe_file(path: Path) -> dict[str, Any]:
    """The ``accel inspect --json`` document for ``path``; ArtifactError when it is malformed."""
    data = read_file(path)
    if not data:
        raise ArtifactError(f"{path}: empty file")
    kind = recognise(data)
    if kind is None:
        raise ArtifactError(
            f"{path}: not a recognised artifact ({data[:8]!r}...); accel inspect takes {ACCEPTED_FORMATS}"
        )
    document: dict[str, Any] = {"schema": "accel-inspect/1", "path": str(path), "bytes": len(data), "kind": kind.value}
    try:
        if kind is FileKind.PACKAGE:
            document["package"] = _package_json(parse_package_file(path, data))
        elif kind is FileKind.REFERENCE:
            from accelcore.contract.ports import MemorySource
            from accelcore.testing.programs import BUILTIN_PROGRAMS, parse_program

            program = BUILTIN_PROGRAMS[parse_program(MemorySource(data)).name]
            document["reference"] = {
                "program": program.name,
                "slots": [{"slot": s, "access": a.name} for s, a in sorted(program.slots.items())],
            }
        elif kind is FileKind.SPIRV:
            document["spirv"] = _spirv_json(inspect_spirv(data))
        elif kind is FileKind.OPENCL_SOURCE:
            document["opencl_source"] = _source_json(data.decode("utf-8"))
        else:
            document["opencl_binary"] = {"bytes": len(data), "pocl": data.startswith(POCL_BINARY_PREFIX)}
    except BackendError as exc:
        raise ArtifactError(f"{path}: {exc}", exc.kind.name) from None
    return document


def _print(document: dict[str, Any]) -> None:
    out = console()
    out.print(f"[bold]{document['path']}[/bold]: {document['kind']}, {document['bytes']} bytes")
    if "package" in document:
        pkg = document["package"]
        d = pkg["dispatch"]
        local = "driver chooses" if pkg["local_size"] == [0, 0, 0] else str(tuple(pkg["local_size"]))
        if d["kind"] == "GLOBAL":
            rule = f"GLOBAL {tuple(d['global_size'])} work-items"
        elif d["kind"] == "FIXED":
            rule = f"FIXED {tuple(d['groups'])} groups"
        else:
            rule = f"FROM_BINDING slot {d['slot']}"
        out.print(
            f"package v{pkg['version']}: {pkg['module_kind']} (format {pkg['format']}), entry {pkg['entry_point']!r}, "
            f"local size {local}, dispatch {rule}, count argument {d['count_argument']}",
            markup=False,
        )
        if pkg["build_options"]:
            out.print(f"build options: {pkg['build_options']}")
        if pkg["target"]:
            out.print(f"target: {' '.join(pkg['target'])}")
        table = Table(
            "slot",
            "set",
            "native",
            "type",
            "access",
            "element bytes",
            "coverage",
            title="bindings",
            title_justify="left",
        )
        for b in pkg["bindings"]:
            cover = {"UNKNOWN": "-", "PER_WORK_ITEM": "per item"}.get(b["coverage"], str(b["coverage_elements"]))
            kind = "uniform" if b["descriptor_type"] == "UNIFORM_BUFFER" else "storage"
            table.add_row(
                str(b["slot"]), str(b["set"]), str(b["native_index"]), kind, b["access"], str(b["element_size"]), cover
            )
        out.print(table)
        out.print(f"coverage inference: {pkg['coverage_inference']['summary']}", markup=False)
        _print_arguments(pkg)
        _print_module(pkg["module"])
    else:
        _print_module(document)


def _print_arguments(pkg: dict[str, Any]) -> None:
    out = console()
    if pkg["arguments"]:
        table = Table("arg", "name", "declaration", "type", "value", title="kernel arguments", title_justify="left")
        for a in pkg["arguments"]:
            value = a["value"] if a["kind"] == "VALUE" else f"__local {a['local_bytes']} bytes"
            table.add_row(str(a["index"]), a["name"], a["declaration"], a["type"] or "-", str(value))
        out.print(table)
    if pkg["push_constants"]:
        table = Table("member", "offset", "type", "value", title="push constants", title_justify="left")
        for m in pkg["push_constants"]:
            table.add_row(m["name"] or "?", str(m["offset"]), m["type"], str(m["value"]))
        out.print(table)
    if pkg["spec_constants"]:
        table = Table("SpecId", "name", "type", "value", "from", title="specialization constants", title_justify="left")
        for c in pkg["spec_constants"]:
            table.add_row(str(c["spec_id"]), c["name"] or "", c["type"], str(c["value"]), c["source"])
        out.print(table)


def _element_bytes(descriptor: dict[str, Any]) -> str:
    """A descriptor's element size as the table shows it: the trailing array's stride, a block without one as
    a whole (a uniform block is one element), or ``-`` when the module says neither."""
    if descriptor["element_bytes"] is not None:
        return str(descriptor["element_bytes"])
    if descriptor.get("block_bytes"):
        return f"{descriptor['block_bytes']} (the whole block)"
    return "-"


def _print_module(section: dict[str, Any]) -> None:
    out = console()
    if "spirv" in section:
        spirv = section["spirv"]
        out.print(
            f"SPIR-V {spirv['version']} ({spirv['flavour']}), bound {spirv['bound']}, "
            f"capabilities: {', '.join(spirv['capabilities'])}"
        )
        for e in spirv["entry_points"]:
            size = tuple(e["local_size"]) if e["local_size"] else "not fixed"
            out.print(f"entry point {e['name']!r} ({e['execution_model']}), local size {size}")
            for p in e["parameters"]:
                where = f"storage class {p['storage_class']}" if p["storage_class"] is not None else "by value"
                out.print(f"  param {p['index']}: {where}, bytes {p['value_bytes']}")
        if spirv["descriptors"]:
            table = Table("set", "binding", "name", "type", "access", "element bytes", title="descriptors")
            for d in spirv["descriptors"]:
                table.add_row(
                    str(d["set"]), str(d["binding"]), d["name"] or "", d["type"], d["access"], _element_bytes(d)
                )
            out.print(table)
        if spirv["push_constant_bytes"]:
            out.print(f"push constants: {spirv['push_constant_bytes']} bytes")
    if "opencl_source" in section:
        for k in section["opencl_source"]["kernels"]:
            size = tuple(k["required_local_size"]) if k["required_local_size"] else "not fixed"
            out.print(f"__kernel {k['name']} (required local size {size})", markup=False)
            for p in k["parameters"]:
                access = "READ" if p["read_only"] else "READ_WRITE"
                kind = p["address_space"] or "value"
                shown = access if kind == "global" else "-"
                out.print(f"  arg {p['index']}: {p['declaration']}  [{kind}, {shown}]", markup=False)
    if "opencl_binary" in section:
        binary = section["opencl_binary"]
        note = "PoCL binary" if binary["pocl"] else "device binary (driver-specific)"
        out.print(f"OpenCL {note}, {binary['bytes']} bytes; entry point and bindings live in its package")
    if "reference" in section:
        ref = section["reference"]
        out.print(
            f"reference program {ref['program']!r}; slots: "
            + ", ".join(f"{s['slot']}:{s['access']}" for s in ref["slots"])
        )


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON (schema accel-inspect/1).")
@error_boundary
def inspect(file: Path, as_json: bool) -> None:
    """Describe an artifact FILE: a kernel package, SPIR-V module, OpenCL C source or OpenCL binary.

    Shows the flavour, entry points, local size, and the bindings with the
    access each allows. A file is recognised only by what proves its format
    (a header or magic; OpenCL C: text with a __kernel function); anything
    else, and malformed input, is refused with the precise reason (exit status 3).
    """
    set_json_mode(as_json)
    try:
        document = describe_file(file)
    except ArtifactError as exc:
        raise InputRejected(str(exc), argument="FILE", error_kind=exc.kind) from None
    if as_json:
        emit_json(document)
    else:
        _print(document)
