""":func:`build_package`: a package of an OpenCL C source made only to be loaded once, so that the
program builds (and a compile error shows, with the driver's build log) before any call; never run."""

from __future__ import annotations

from ...contract.errors import BackendError
from ...contract.flags import AccessMode
from ..arguments import ArgumentKey
from ..opencl_signature import OpenCLKernel, opencl_kernels
from ..package import ANY_LOCAL_SIZE, Dispatch, KernelPackage, ModuleKind, PackageBinding
from .wrap import pack_module


def build_package(
    data: bytes,
    *,
    entry_point: str | None = None,
    local_size: tuple[int, int, int] | None = None,
    build_options: str = "",
) -> KernelPackage | None:
    """A package of the OpenCL C source ``data`` made to be loaded once, only to build the program (so a
    compile error shows before any call, with the driver's build log); never run it.

    Where the kernel (``entry_point``, else the first) and its parameters can be read, every by-value
    argument is zero of its declared type (a struct: its bytes, all zero), every ``__local`` pointer 1 byte,
    and the dispatch one work-group of work-items (``local_size``, else the kernel's
    ``reqd_work_group_size``, else one): it loads. Otherwise (no such kernel, a type the source does not say,
    often because the source does not compile) it is the source with one made-up buffer row and no values:
    its load builds the program, then fails the provider's argument checks. None when ``data`` is not UTF-8.
    """
    try:
        source = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        kernels: tuple[OpenCLKernel, ...] = tuple(opencl_kernels(source, build_options))
    except BackendError:
        kernels = ()
    name = entry_point if entry_point is not None else (kernels[0].name if kernels else "")
    kernel = next((k for k in kernels if k.name == name), None)
    loadable = _placeholder_package(data, kernel, local_size, build_options) if kernel is not None else None
    if loadable is not None:
        return loadable
    try:
        return KernelPackage(
            module_kind=ModuleKind.OPENCL_SOURCE,
            entry_point=name or "_",
            local_size=local_size or ANY_LOCAL_SIZE,
            bindings=(PackageBinding(0, 0, AccessMode.READ_WRITE, 1),),
            dispatch=Dispatch.global_items(*(local_size or (1,))),
            module=bytes(data),
            build_options=build_options,
        )
    except BackendError:
        return None


def _placeholder_package(
    data: bytes, kernel: OpenCLKernel, local_size: tuple[int, int, int] | None, build_options: str
) -> KernelPackage | None:
    """:func:`build_package`'s package of placeholder values; None where a value cannot be made up."""
    values: dict[ArgumentKey, object] = {}
    local: dict[ArgumentKey, int] = {}
    size = local_size or kernel.required_local_size or (1, 1, 1)
    for param in kernel.parameters:
        if param.address_space == "local":  # enough for a scratch indexed by get_local_id
            local[param.index] = max(1, size[0] * size[1] * size[2] * (param.element_bytes or 1))
        elif param.address_space is not None:
            if param.address_space not in ("global", "constant"):
                return None
        elif param.value_type is not None:
            lanes = param.value_type.lanes
            values[param.index] = 0 if lanes == 1 else [0] * lanes
        elif param.aggregate and param.aggregate_bytes:
            values[param.index] = bytes(param.aggregate_bytes)
        else:
            return None
    try:
        return pack_module(
            data,
            kind=ModuleKind.OPENCL_SOURCE,
            entry_point=kernel.name,
            local_size=local_size,
            build_options=build_options,
            arguments=values or None,
            local_memory=local or None,
            global_size=tuple(size),
            infer_coverage=False,
        )
    except BackendError:
        return None
