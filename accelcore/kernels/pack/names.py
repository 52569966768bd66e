"""The names a caller may use for a package's arguments and slots: :func:`argument_names` (what
``accel compile`` records in a device binary's package) and :func:`binding_names` (``accel run --bind
NAME=...``, the Python layer's keywords)."""

from __future__ import annotations

from ...contract.errors import BackendError
from ..layouts import spirv_value_type
from ..opencl_signature import opencl_kernels
from ..package import ArgumentName, KernelPackage, ModuleKind
from ..spirv import inspect_spirv


def argument_names(package: KernelPackage) -> tuple[ArgumentName, ...]:
    """The names of the kernel's arguments in an OpenCL C or OpenCL SPIR-V package's module, with each
    buffer's declared element type (a by-value argument's type; None when unknown): what the OPENCL_BINARY
    package built from it records (``accel compile``), since a device binary names nothing. Arguments
    without a name are left out; () where the module cannot be read."""
    out: list[ArgumentName] = []
    try:
        if package.module_kind is ModuleKind.OPENCL_SOURCE:
            source = package.module.decode("utf-8")
            kernel = next(
                (k for k in opencl_kernels(source, package.build_options) if k.name == package.entry_point), None
            )
            for param in kernel.parameters if kernel is not None else ():
                if param.name:
                    out.append(ArgumentName(param.index, param.name, param.value_type or param.aggregate_scalar))
        elif package.module_kind is ModuleKind.SPIRV_OPENCL:
            entry = inspect_spirv(package.module).entry_point(package.entry_point)
            for kparam in entry.parameters:
                if kparam.name:
                    element = spirv_value_type(kparam.type) if kparam.type is not None else None
                    out.append(ArgumentName(kparam.index, kparam.name, element))
    except (BackendError, UnicodeDecodeError):
        return ()
    return tuple(sorted(out, key=lambda n: n.index))


def binding_names(package: KernelPackage) -> dict[str, int]:
    """Names a caller may use for the package's slots: OpenCL parameter names, Vulkan descriptor instance
    and block names (and the only member of a single-member block, GLSL's ``buffer X { float x[]; }``).

    A name that would denote two slots is left out; a device binary has the names its package records
    (:attr:`~accelcore.kernels.package.KernelPackage.argument_names`, written by ``accel compile``), else none.
    """
    candidates: dict[str, set[int]] = {}

    def add(name: str | None, slot: int) -> None:
        if name:
            candidates.setdefault(name, set()).add(slot)

    by_native = {(row.set, row.native_index): row.slot for row in package.bindings}
    kind = package.module_kind
    try:
        if kind is ModuleKind.OPENCL_BINARY:  # the names the source gave, recorded by accel compile
            for recorded in package.argument_names:
                if (0, recorded.index) in by_native:
                    add(recorded.name, by_native[(0, recorded.index)])
        elif kind is ModuleKind.OPENCL_SOURCE:
            source = package.module.decode("utf-8")
            kernel = next(
                (k for k in opencl_kernels(source, package.build_options) if k.name == package.entry_point), None
            )
            for param in kernel.parameters if kernel is not None else ():
                if (0, param.index) in by_native:
                    add(param.name, by_native[(0, param.index)])
        elif kind in (ModuleKind.SPIRV_OPENCL, ModuleKind.SPIRV_VULKAN):
            spirv = inspect_spirv(package.module)
            if kind is ModuleKind.SPIRV_OPENCL:
                entry = spirv.entry_point(package.entry_point)
                for kparam in entry.parameters:
                    if (0, kparam.index) in by_native:
                        add(kparam.name, by_native[(0, kparam.index)])
            else:
                for d in spirv.descriptors:
                    slot = by_native.get((d.set, d.binding))
                    if slot is None:
                        continue
                    add(d.name, slot)
                    add(d.block_name, slot)
                    members = d.type.members if d.type is not None else ()
                    if len(members) == 1:
                        add(members[0].name, slot)
    except (BackendError, UnicodeDecodeError):
        return {}
    return {name: next(iter(slots)) for name, slots in candidates.items() if len(slots) == 1}
