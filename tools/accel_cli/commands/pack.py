"""``accel pack`` (raw module → kernel package) and ``accel compile`` (OpenCL C → device binary package)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from accelcore.contract.errors import BackendError, ErrorKind
from accelcore.contract.ports import MemorySource
from accelcore.contract.program import ArtifactRef
from accelcore.kernels.pack import argument_names
from accelcore.kernels.package import Coverage, KernelPackage, ModuleKind
from accelcore.kernels.package_codec import write_package
from accelcore.support.files import write_regular_file

from ..artifacts import ArtifactError, FileKind, classify, local_size_text, pack_raw, read_file
from ..failures import DeviceFailure, InputRejected, UsageProblem
from ..inventory import discover
from ..packing import pack_options, pack_options_from
from ..render import console, emit_json, error_boundary, hexuuid, set_json_mode
from .common import close_provider, require_device
from .inspect import _package_json

__all__ = ["compile_", "pack"]


def _write(path: Path, data: bytes) -> None:
    try:
        write_regular_file(path, data)
    except OSError as exc:
        raise UsageProblem(f"cannot write {path}: {exc.strerror or exc}", argument="--output") from None


def _pack_file(source: Path, packing: dict[str, Any], *, named: bool = False) -> tuple[KernelPackage, FileKind]:
    options = pack_options_from(packing)
    try:
        data = read_file(source, options.build_options, options.entry_point)  # GLSL: compiled with them
        if not data:
            raise ArtifactError(f"{source}: empty file")
        kind = classify(data)
        if kind in (FileKind.PACKAGE, FileKind.REFERENCE):
            raise ArtifactError(f"{source}: is already a {kind.value}; pack takes a raw .spv, .cl or device binary")
        return pack_raw(source, data, kind, options, named=named), kind
    except ArtifactError as exc:
        raise InputRejected(str(exc), argument="SOURCE", error_kind=exc.kind) from None


def _coverage_sources(pkg: KernelPackage, packing: dict[str, Any]) -> dict[str, list[int]]:
    """Which slots' known coverage the user stated (``--coverage``) and which the packer inferred."""
    stated = {slot for slot, _ in pack_options_from(packing).coverage}
    known = [b.slot for b in pkg.bindings if b.coverage is not Coverage.UNKNOWN]
    return {
        "stated": sorted(s for s in known if s in stated),
        "inferred": sorted(s for s in known if s not in stated),
    }


def _report(
    output: Path, pkg: KernelPackage, data: bytes, as_json: bool, extra: dict[str, Any], packing: dict[str, Any]
) -> None:
    sources = _coverage_sources(pkg, packing)
    document = {
        "schema": "accel-pack/1",
        "output": str(output),
        "bytes": len(data),
        **extra,
        "coverage": sources,
        "package": _package_json(pkg),
    }
    if as_json:
        emit_json(document)
        return
    rows = ", ".join(f"{b.slot}:{b.access.name}" for b in pkg.bindings)
    out = console()
    out.print(
        f"wrote {output}: {pkg.module_kind.name} package, {len(data)} bytes, entry {pkg.entry_point!r}, "
        f"local size {local_size_text(pkg)}, slots {rows}",
        markup=False,
    )
    words = {Coverage.PER_WORK_ITEM: "one per work-item", Coverage.EXACT: "exactly {n} elements"}
    stated_unknown = {slot for slot, value in pack_options_from(packing).coverage if value == "unknown"}
    for b in pkg.bindings:
        if b.coverage is not Coverage.UNKNOWN:
            how = "stated" if b.slot in sources["stated"] else "inferred"
            said = words[b.coverage].format(n=b.coverage_elements)
            out.print(f"coverage of slot {b.slot}: {said} ({how}); the engine refuses a shorter range", markup=False)
        elif b.slot in stated_unknown:
            out.print(f"coverage of slot {b.slot}: unknown (stated); not checked", markup=False)


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="The .kpkg file to write.")
@pack_options
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON (schema accel-pack/1).")
@error_boundary
def pack(source: Path, output: Path, as_json: bool, **packing: Any) -> None:
    """Wrap a raw SPIR-V module, OpenCL C source or OpenCL device binary SOURCE into a kernel package.

    Entry point, local size and the binding table come from the module where
    it says them (SPIR-V inspection, OpenCL C signatures); the dispatch rule
    (--grid-from SLOT or --groups) and, for device binaries, everything else
    must be given. Exit status 3 when the module is refused, with the reason.
    """
    set_json_mode(as_json)
    pkg, _ = _pack_file(source, packing)
    data = write_package(pkg)
    _write(output, data)
    _report(output, pkg, data, as_json, {"source": str(source)}, packing)


@click.command(name="compile")
@click.argument("args", nargs=-1, required=True, metavar="[DEVICE] SOURCE.cl")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="The .kpkg file to write.")
@pack_options
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON (schema accel-pack/1).")
@error_boundary
def compile_(args: tuple[str, ...], output: Path, as_json: bool, **packing: Any) -> None:
    """Build OpenCL C SOURCE.cl for DEVICE and write an OpenCL device-binary package.

    The package records the device's TargetIdentity (platform, device, driver
    version), so any other device refuses it as INCOMPATIBLE before its driver
    sees the bytes. DEVICE (default $ACCEL_DEVICE) must be an OpenCL device.
    The packing options work as for `accel pack` (--grid-from, --count-arg, ...).
    """
    import os

    set_json_mode(as_json)
    if len(args) == 2:
        device_text, source_text = args
    elif len(args) == 1:
        device_text, source_text = require_device(os.environ.get("ACCEL_DEVICE")), args[0]
    else:
        raise UsageProblem("give [DEVICE] SOURCE.cl", argument="ARGS")
    inventory = discover()
    entry = inventory.select_one(device_text)
    provider = inventory.family_of(entry).open(entry)
    try:
        # The device first: packing errors are moot when DEVICE cannot build OpenCL at all.
        program_binary = getattr(provider, "program_binary", None)
        if not callable(program_binary):
            raise UsageProblem(
                f"{entry.device_id} ({entry.name}) is not an OpenCL device; compile builds OpenCL device binaries "
                "(for Vulkan use `accel pack` on SPIR-V)",
                argument="DEVICE",
            )
        # Only built, never written: a compile error's log names the file (named=True: #line 1 "SOURCE").
        source_pkg, _ = _pack_file(Path(source_text), {**packing, "pack_kind": "opencl-source"}, named=True)
        binary, target = _build(provider, source_pkg)
    except BackendError as exc:
        failure = InputRejected if exc.kind in (ErrorKind.INVALID_ARGUMENT, ErrorKind.UNSUPPORTED) else DeviceFailure
        raise failure(f"building {source_text} on {entry.device_id}: {exc}", error_kind=exc.kind.name) from None
    finally:
        close_provider(provider)
    # The binary says nothing about its arguments: keep the source's names (and element types), so
    # `accel run --bind NAME=...` and Python's dev.kernel(...) still take them.
    names = argument_names(source_pkg)
    pkg = replace(source_pkg, module_kind=ModuleKind.OPENCL_BINARY, module=binary, target=target, argument_names=names)
    data = write_package(pkg)
    _write(output, data)
    extra = {"source": source_text, "device": {"id": entry.device_id, "name": entry.name, "uuid": hexuuid(entry.uuid)}}
    _report(output, pkg, data, as_json, extra, packing)


def _build(provider: Any, source_pkg: KernelPackage) -> tuple[bytes, Any]:
    """Load the source package once and take the device binary and target from the provider."""
    context = provider.create_context(__import__("accelcore").ContextDesc())
    try:
        data = write_package(source_pkg)
        ref = ArtifactRef(source_pkg.format, source_pkg.target, MemorySource(data), 64 << 20)
        program = provider.load_program(context, ref)
        try:
            binary = bytes(provider.program_binary(program))
            target = provider.binary_target
        finally:
            provider.unload_program(program)
    finally:
        provider.destroy_context(context)
    if not binary:
        raise BackendError(ErrorKind.UNSUPPORTED, "the driver returned an empty program binary")
    return binary, target
