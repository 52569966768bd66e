""":func:`pack_module`: the kind, what the module says and the options checked against it
(:mod:`.options`, :mod:`.opencl`, :mod:`.vulkan`), coverage inferred, the package validated (the promise is
in the package docstring)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ...contract.errors import BackendError
from ...contract.program import TargetIdentity
from ..arguments import ArgumentKey
from ..opencl_signature import OpenCLKernel, opencl_kernels
from ..package import (
    ANY_LOCAL_SIZE,
    Coverage,
    Dispatch,
    DispatchKind,
    KernelArgument,
    KernelPackage,
    ModuleKind,
    PackageBinding,
    SpecConstant,
)
from ..package_codec import validate_package
from ..spirv import Flavour, SpirvModule, inspect_spirv
from .module_kind import detect_module_kind
from .opencl import (
    _check_local_id_scratch,
    _opencl,
    _opencl_binary_arguments,
    _plain_index,
    _source_params,
    _spirv_params,
)
from .options import _apply_coverage, _dispatch_rule, _invalid, _local, _pick
from .vulkan import _is_offset_zero_member, _push_block, _push_requirement, _specializations, _vulkan_rows


def pack_module(
    data: bytes,
    *,
    kind: ModuleKind | None = None,
    entry_point: str | None = None,
    bindings: Sequence[PackageBinding] | None = None,
    dispatch: Dispatch | None = None,
    local_size: tuple[int, int, int] | None = None,
    build_options: str = "",
    target: TargetIdentity | None = None,
    arguments: Mapping[ArgumentKey, object] | None = None,
    local_memory: Mapping[ArgumentKey, int] | None = None,
    push_constants: Mapping[ArgumentKey, object] | bytes | None = None,
    spec_constants: Mapping[ArgumentKey, object] | None = None,
    global_size: int | Sequence[int] | None = None,
    count_argument: ArgumentKey | None = None,
    coverage: Mapping[int, Coverage | int] | None = None,
    infer_coverage: bool = True,
) -> KernelPackage:
    """Wrap ``data`` into a :class:`KernelPackage` (see the package docstring).

    ``arguments``: OpenCL by-value arguments by name or index → value (typed from the declaration;
    text such as ``"2.5"`` or ``"f32:2.5"``, a number, a sequence for a vector, a numpy scalar of the
    declared dtype, or :class:`TypedValue`). ``local_memory``: ``__local`` arguments → bytes.
    ``push_constants``: Vulkan push-constant members by name or index → value, or the whole block
    as bytes. ``spec_constants``: SpecId or name → value (unset ones keep the module's default; a
    ``local_size=`` on a ``local_size_x_id`` shader sets its constant). ``global_size``: a GLOBAL
    dispatch of that many work-items (instead of ``dispatch=``). ``count_argument``: the argument
    (name or index) that receives the element count. ``coverage``: slot → ``Coverage.PER_WORK_ITEM``,
    ``Coverage.UNKNOWN`` or an exact element count. ``infer_coverage``: a slot ``coverage`` does not
    name gets ``PER_WORK_ITEM`` where :func:`accelcore.kernels.coverage_inference.infer_coverage` proves the
    kernel touches exactly its element at the global id, unconditionally (False: no inference).
    """
    module = bytes(data)
    found_kind = detect_module_kind(module) if kind is None else ModuleKind(kind)
    spirv: SpirvModule | None = None
    kernel: OpenCLKernel | None = None
    push = b""
    specs: tuple[SpecConstant, ...] = ()
    records: tuple[KernelArgument, ...] = ()
    vulkan_only = {"push_constants=": push_constants, "spec_constants=": spec_constants}
    opencl_only = {"arguments=": arguments, "local_memory=": local_memory}
    wrong = vulkan_only if found_kind is not ModuleKind.SPIRV_VULKAN else opencl_only
    for option, value in wrong.items():
        if value:
            api = "OpenCL" if option in opencl_only else "Vulkan"
            raise _invalid(f"{option} is for {api} modules; this one is {found_kind.name}")
    if found_kind is ModuleKind.SPIRV_VULKAN or found_kind is ModuleKind.SPIRV_OPENCL:
        spirv = inspect_spirv(module)
        flavour = Flavour.VULKAN if found_kind is ModuleKind.SPIRV_VULKAN else Flavour.OPENCL
        if spirv.flavour is not flavour:
            raise _invalid(f"kind={found_kind.name} but the module is {spirv.flavour.value}-flavoured SPIR-V")
        if found_kind is ModuleKind.SPIRV_VULKAN:
            entries = [e for e in spirv.entry_points if e.execution_model_name == "GLCompute"]
            name = _pick([e.name for e in entries], entry_point, "GLCompute entry point")
            entry = next(e for e in entries if e.name == name)
            specs, size = _specializations(spirv, entry, spec_constants, local_size)
            rows = _vulkan_rows(spirv, bindings)
            # Vulkan: any count argument means "a u32 at push offset 0" (version 1); an index is kept as given,
            # a name must be the member at offset 0.
            count_index: int | None = None
            if count_argument is not None:
                text = str(count_argument).strip()
                if text.isdecimal():
                    count_index = int(text)
                elif _is_offset_zero_member(spirv, count_argument):
                    count_index = 0
                else:
                    raise _invalid(
                        f"count_argument={count_argument!r}: on Vulkan the count is the push-constant member at "
                        "offset 0; name that member or give an index"
                    )
            try:
                rule = _dispatch_rule(dispatch, global_size, count_index)
            except BackendError as exc:
                needs = "" if push_constants else _push_requirement(spirv, count_index is not None)
                if not needs or (count_index is not None and "=VALUE" not in needs):
                    raise
                raise _invalid(f"{exc.message.removeprefix('pack: ')}; also, {needs}") from None
            push = _push_block(spirv, rule, push_constants)
        else:
            kernels = [e for e in spirv.entry_points if e.execution_model_name == "Kernel"]
            name = _pick([e.name for e in kernels], entry_point, "Kernel entry point")
            entry = next(e for e in kernels if e.name == name)
            if entry.local_size is not None:
                size = _local(entry.local_size, local_size)
            else:
                size = (local_size[0], local_size[1], local_size[2]) if local_size is not None else ANY_LOCAL_SIZE
            fallback = {p.index: p.value_bytes for p in entry.parameters}
            rows, rule, records = _opencl(
                _spirv_params(entry), fallback, bindings, dispatch, global_size, count_argument, arguments, local_memory
            )
    elif found_kind is ModuleKind.OPENCL_SOURCE:
        try:
            source = module.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid("kind=OPENCL_SOURCE but the module is not UTF-8 text") from None
        kernels_cl = opencl_kernels(source, build_options)
        name = _pick([k.name for k in kernels_cl], entry_point, "__kernel function")
        kernel = next(k for k in kernels_cl if k.name == name)
        if kernel.required_local_size is not None:
            size = _local(kernel.required_local_size, local_size)
        else:
            size = (local_size[0], local_size[1], local_size[2]) if local_size is not None else ANY_LOCAL_SIZE
        rows, rule, records = _opencl(
            _source_params(kernel),
            {p.index: p.element_bytes for p in kernel.parameters},
            bindings,
            dispatch,
            global_size,
            count_argument,
            arguments,
            local_memory,
        )
        _check_local_id_scratch(kernel, size, records)
    else:
        missing = [
            option
            for option, value in (
                ("entry_point=", entry_point),
                ("bindings=", bindings),
                ("dispatch= or global_size=", dispatch if global_size is None else global_size),
            )
            if value is None
        ]
        if missing:
            raise _invalid(f"an OpenCL device binary says nothing about itself; pass {', '.join(missing)}")
        assert entry_point is not None and bindings is not None
        count_index = None if count_argument is None else _plain_index(count_argument, "count_argument=")
        name, rows = entry_point, tuple(bindings)
        rule = _dispatch_rule(dispatch, global_size, count_index)
        size = (local_size[0], local_size[1], local_size[2]) if local_size is not None else ANY_LOCAL_SIZE
        records = _opencl_binary_arguments(arguments, local_memory)
    if size == ANY_LOCAL_SIZE and rule.kind is DispatchKind.FIXED:
        raise _invalid("local_size= is required: a fixed dispatch counts workgroups and the module fixes no size")
    package = KernelPackage(
        module_kind=found_kind,
        entry_point=name,
        local_size=size,
        bindings=_apply_coverage(rows, coverage),
        dispatch=rule,
        module=module,
        build_options=build_options,
        target=target if target is not None else TargetIdentity.any(),
        arguments=records,
        push_constants=push,
        spec_constants=specs,
    )
    if infer_coverage:
        package = _with_inferred_coverage(package, set(coverage or ()), spirv, kernel)
    validate_package(package)
    return package


def _with_inferred_coverage(
    package: KernelPackage, stated: set[int], spirv: SpirvModule | None, kernel: OpenCLKernel | None
) -> KernelPackage:
    """``package`` with PER_WORK_ITEM on the rows inference proves, except the slots the caller stated."""
    from ..coverage_inference import infer_coverage

    open_rows = [b for b in package.bindings if b.slot not in stated and b.coverage is Coverage.UNKNOWN]
    if not open_rows:
        return package
    proven = infer_coverage(package, spirv=spirv, kernel=kernel).per_work_item
    if not proven & {b.slot for b in open_rows}:
        return package
    rows = tuple(
        dataclasses.replace(b, coverage=Coverage.PER_WORK_ITEM)
        if b.slot in proven and b.slot not in stated and b.coverage is Coverage.UNKNOWN
        else b
        for b in package.bindings
    )
    return dataclasses.replace(package, bindings=rows)
