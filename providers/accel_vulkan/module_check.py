"""Everything checked about a kernel package's SPIR-V before any driver sees it.

Promise: :func:`check_module` returns the inspected module and its
:class:`Agreement` with the package only when

1. the bytes are well-formed SPIR-V (:func:`accelcore.kernels.spirv.inspect_spirv`,
   then ``spirv-val --target-env vulkan1.2`` with the block-layout options the
   device's enabled features allow — ``--scalar-block-layout`` with
   scalarBlockLayout, ``--uniform-buffer-standard-layout`` with
   uniformBufferStandardLayout — when that tool is installed, which also
   catches bit flips the structural walk cannot) — else INVALID_ARGUMENT;
2. it is Vulkan-flavoured, of a SPIR-V version Vulkan 1.2 accepts and needs
   only capabilities and block layouts the device enables — else UNSUPPORTED
   naming the capability and its Vulkan feature, or the layout feature (a
   module that fails the validator only without a layout option the device
   lacks is refused naming that feature, not as malformed);
3. it agrees with the package (:func:`check_agreement`) — else INCOMPATIBLE,
   or UNSUPPORTED where a device limit is what it exceeds:

   * the entry point exists; its effective local size — per axis the
     package's specialization value for that axis's ``local_size_*_id``
     SpecId, else the module's default — equals the package's local size and
     fits ``maxComputeWorkGroupSize`` / ``maxComputeWorkGroupInvocations``;
   * every package spec constant names a SpecId the module declares, with the
     same scalar type (kind, width, signedness);
   * every descriptor is a single storage or uniform buffer that the binding
     table describes with the same (set, binding) and descriptor type; each
     table row names a descriptor whose decorations allow the declared access;
     the sets used fit ``maxBoundDescriptorSets`` and the uniform rows
     ``maxPerStageDescriptorUniformBuffers`` (UNSUPPORTED naming the limit);
   * shared (Workgroup) memory, with the package's specialization constants applied
     (:func:`accelcore.kernels.spirv.specialize`), fits ``maxComputeSharedMemorySize`` (UNSUPPORTED naming both
     sizes; the defaults are checked before the validator runs) and no shared array has length 0;
   * push constants: with a package block, its size is the module's block
     size rounded up to 4 (both sizes named otherwise); without one, a count
     passes 4 bytes (format version 1) and the module's block is at most 4
     bytes; no count and no block: the module declares none. The range fits
     ``maxPushConstantsSize`` (UNSUPPORTED naming it).

The validator runs in a subprocess on a temporary copy of the module; nothing
else is retained. Its output is read as bytes and decoded with replacement
(diagnostics echo the module's own string literals, which need not be UTF-8).

:func:`check_module_remembered` splits the work in two memos: the module
checks (1, 2) run once per (SHA-256 of the module bytes, the device's
capabilities, features and name, the validator path) and remember the
inspected module; the agreement (3) runs once per (that, the package fields
it reads — entry point, local size, binding table, count, push-block *size*,
spec constants — and the device limits). So a load that differs only in
push-constant values redoes nothing, one that differs in spec constants
redoes only the agreement. Only passes are remembered (a failing module is
checked every time), at most :data:`CHECKED_CAPACITY` keys each (emptied when
full). Bytes that differ in any position have another digest, so they are
always checked. :data:`counters` counts the full module checks
(``modules``) and the agreement checks (``agreements``) that ran.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import cache

from accelcore import BackendError, ErrorKind
from accelcore.contract.flags import access_allows
from accelcore.kernels.package import NO_COUNT_ARGUMENT, DescriptorType, KernelPackage, SpecConstant
from accelcore.kernels.spirv import (
    VULKAN_FEATURE_CAPABILITIES,
    Flavour,
    SpirvModule,
    SpirvType,
    float_mode_property,
    inspect_spirv,
    missing_capabilities,
    specialize,
)
from accelcore.kernels.values import ScalarType

MAX_SPIRV_VERSION = (1, 5)
"""The newest SPIR-V a Vulkan 1.2 instance may consume."""

VALIDATOR_ENV = "ACCEL_VULKAN_SPIRV_VAL"
"""Path of ``spirv-val`` to use; ``off`` disables the external validator (structural checks still run)."""

VALIDATOR_TIMEOUT_S = 30.0

LAYOUT_OPTIONS = {
    "--scalar-block-layout": "scalarBlockLayout",
    "--uniform-buffer-standard-layout": "uniformBufferStandardLayout",
}
"""spirv-val block-layout options → the Vulkan feature that allows the layout (the context enables it when offered)."""

counters: Counter[str] = Counter()
"""``modules``: full module checks run (inspection + validator); ``agreements``: package-vs-module checks run."""


@dataclass(frozen=True, slots=True)
class DeviceTerms:
    """What the checks read about the device (every field is part of the memo keys)."""

    name: str
    capabilities: frozenset[str]
    """SPIR-V capabilities of the features the context enables."""
    features: frozenset[str]
    """The Vulkan features the context enables (block layouts: scalarBlockLayout, uniformBufferStandardLayout)."""
    float_controls: frozenset[str]
    """The VkPhysicalDeviceFloatControlsProperties booleans the device reports true."""
    max_push_constants_size: int
    max_bound_descriptor_sets: int
    """The device's ``maxBoundDescriptorSets``."""
    max_sets: int
    """Sets a program may use here (``maxBoundDescriptorSets``, at most the provider's policy)."""
    max_uniform_buffers: int
    """Uniform rows a program may have (per-stage and per-set uniform-buffer limits)."""
    max_workgroup_size: tuple[int, int, int]
    max_workgroup_invocations: int
    max_shared_memory: int = 1 << 62
    """``maxComputeSharedMemorySize``."""

    @property
    def validator_options(self) -> tuple[str, ...]:
        return tuple(option for option, feature in LAYOUT_OPTIONS.items() if feature in self.features)


@dataclass(frozen=True, slots=True)
class Agreement:
    """What a package that agrees with its module asks of the pipeline."""

    local_size: tuple[int, int, int]
    """The effective (specialised) local size, equal to the package's."""
    push_range: int
    """Bytes of the pipeline layout's push-constant range (0: none)."""
    set_count: int
    """Descriptor-set layouts in the pipeline layout: the highest set used + 1 (0 without bindings)."""
    uniform_bytes: tuple[tuple[int, int], ...]
    """(slot, uniform block bytes; 0 when not computable) for each uniform-buffer row."""


@cache
def validator_path() -> str | None:
    configured = os.environ.get(VALIDATOR_ENV, "").strip()
    if configured.lower() == "off":
        return None
    if configured:
        return configured
    return shutil.which("spirv-val")


_VALIDATED_CAPACITY = 256
_validated: set[tuple[str, tuple[str, ...], bytes]] = set()
"""(validator path, options, sha256 of module) triples that passed: a warm load skips the subprocess (~3 ms).
Only passes are remembered, and at most ``_VALIDATED_CAPACITY`` of them (the set is emptied when full)."""


def _validator_verdict(path: str, module: bytes, options: tuple[str, ...]) -> str | None:
    """None when ``spirv-val`` accepts ``module`` with ``options``, else its first diagnostic line."""
    with tempfile.NamedTemporaryFile(suffix=".spv") as handle:
        handle.write(module)
        handle.flush()
        try:
            done = subprocess.run(
                [path, "--target-env", "vulkan1.2", *options, handle.name],
                capture_output=True,
                timeout=VALIDATOR_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(
                ErrorKind.UNSUPPORTED, f"cannot run the SPIR-V validator {path} ({exc}); set {VALIDATOR_ENV}=off"
            ) from exc
    if done.returncode == 0:
        return None
    # Bytes, decoded leniently: diagnostics echo the module's string literals byte for byte,
    # and a module's bytes are not ours to trust (invalid UTF-8 there must stay a refusal).
    output = done.stderr or done.stdout
    detail = output.decode("utf-8", errors="replace").strip().splitlines()
    return detail[0] if detail else f"exit status {done.returncode}"


def _run_validator(module: bytes, options: tuple[str, ...] = (), device: str = "this device") -> None:
    path = validator_path()
    if path is None:
        return
    key = (path, options, hashlib.sha256(module).digest())
    if key in _validated:
        return
    problem = _validator_verdict(path, module, options)
    if problem is not None:
        absent = [option for option in LAYOUT_OPTIONS if option not in options]
        if absent and "layout" in problem and _validator_verdict(path, module, (*options, *absent)) is None:
            needed = [o for o in absent if _validator_verdict(path, module, (*options, o)) is None] or absent
            features = " and ".join(LAYOUT_OPTIONS[o] for o in needed)
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"the SPIR-V module's block layout needs the Vulkan feature {features} "
                f"(spirv-val {' '.join(needed)}), which {device} does not offer: {problem}",
            )
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"SPIR-V module fails spirv-val (vulkan1.2): {problem}")
    if len(_validated) >= _VALIDATED_CAPACITY:
        _validated.clear()
    _validated.add(key)


CHECKED_CAPACITY = 256
"""How many passing keys each of :func:`check_module_remembered`'s two memos keeps."""

_inspected: dict[tuple[object, ...], SpirvModule] = {}
"""Module key → the inspected module that passed the module checks (1, 2)."""
_checked: dict[tuple[object, ...], Agreement] = {}
"""Agreement key → the agreement of a package with its module that passed (3)."""


def module_key(digest: bytes, terms: DeviceTerms) -> tuple[object, ...]:
    """Everything the module checks' verdict depends on; ``digest`` is the SHA-256 of the module."""
    return (digest, terms.capabilities, terms.features, terms.name, validator_path())


def check_key(package: KernelPackage, digest: bytes, terms: DeviceTerms) -> tuple[object, ...]:
    """Everything :func:`check_module`'s verdict depends on (push-constant *values* are not part of it)."""
    return (
        module_key(digest, terms),
        terms,
        package.entry_point,
        tuple(package.local_size),
        tuple(package.bindings),
        package.dispatch.count_argument != NO_COUNT_ARGUMENT,
        len(package.push_constants),
        tuple(package.spec_constants),
    )


def _remember(memo: dict[tuple[object, ...], object], key: tuple[object, ...], value: object) -> None:
    if len(memo) >= CHECKED_CAPACITY:
        memo.clear()
    memo[key] = value


def check_module_remembered(package: KernelPackage, digest: bytes, terms: DeviceTerms) -> Agreement:
    """:func:`check_module`, or only :func:`check_agreement`, or nothing, by what passed before."""
    key = check_key(package, digest, terms)
    agreed = _checked.get(key)
    if agreed is not None:
        return agreed
    inspected_key = key[0]
    assert isinstance(inspected_key, tuple)
    module = _inspected.get(inspected_key)
    if module is None:
        module, agreed = check_module(package, terms)
        _remember(_inspected, inspected_key, module)  # type: ignore[arg-type]
    else:
        agreed = check_agreement(package, module, terms)
    _remember(_checked, key, agreed)  # type: ignore[arg-type]
    return agreed


def _incompatible(message: str) -> BackendError:
    return BackendError(ErrorKind.INCOMPATIBLE, f"package and module disagree: {message}")


def check_capabilities(module: SpirvModule, terms: DeviceTerms) -> None:
    """UNSUPPORTED naming the first capability (and the Vulkan feature that would enable it) the device lacks."""
    missing = missing_capabilities(module, terms.capabilities)
    if not missing:
        return

    def named(capability: str) -> str:
        features = VULKAN_FEATURE_CAPABILITIES.get(capability)
        if not features:
            return capability
        return f"{capability} (Vulkan feature {' or '.join(features)})"

    others = f" (and {', '.join(named(c) for c in missing[1:])})" if missing[1:] else ""
    raise BackendError(
        ErrorKind.UNSUPPORTED,
        f"SPIR-V module needs capability {named(missing[0])}{others}, which {terms.name} does not support",
    )


def check_float_modes(module: SpirvModule, terms: DeviceTerms) -> None:
    """UNSUPPORTED naming the first float-controls execution mode (e.g. DenormPreserve 64) whose width the
    device does not report in VkPhysicalDeviceFloatControlsProperties (the capability alone allows some width)."""
    for mode, width in module.float_modes:
        needed = float_mode_property(mode, width)
        if needed not in terms.float_controls:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"SPIR-V module declares execution mode {mode} {width}, which needs {needed} "
                f"(VkPhysicalDeviceFloatControlsProperties); {terms.name} does not report it",
            )


def inspect_module(code: bytes, terms: DeviceTerms) -> SpirvModule:
    """The module checks (1, 2): well-formed, Vulkan-flavoured, a usable version, capabilities and layouts."""
    counters["modules"] += 1
    module = inspect_spirv(code)
    if module.flavour is not Flavour.VULKAN:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            "SPIR-V module is OpenCL-flavoured (Kernel capability / physical addressing); "
            "Vulkan needs a Shader-capability module with a GLCompute entry point",
        )
    if module.version > MAX_SPIRV_VERSION:
        major, minor = module.version
        raise BackendError(
            ErrorKind.UNSUPPORTED, f"SPIR-V {major}.{minor} is newer than Vulkan 1.2 accepts (at most 1.5)"
        )
    check_capabilities(module, terms)
    check_float_modes(module, terms)
    check_shared_memory(module, terms, "")  # at the defaults: before the validator, which may take seconds
    _run_validator(code, terms.validator_options, terms.name)
    return module


def check_module(package: KernelPackage, terms: DeviceTerms) -> tuple[SpirvModule, Agreement]:
    """Every check (see the module docstring), nothing remembered."""
    module = inspect_module(package.module, terms)
    return module, check_agreement(package, module, terms)


_SCALAR_OF = {
    ("int", 8, True): ScalarType.I8,
    ("int", 8, False): ScalarType.U8,
    ("int", 16, True): ScalarType.I16,
    ("int", 16, False): ScalarType.U16,
    ("int", 32, True): ScalarType.I32,
    ("int", 32, False): ScalarType.U32,
    ("int", 64, True): ScalarType.I64,
    ("int", 64, False): ScalarType.U64,
    ("float", 16, False): ScalarType.F16,
    ("float", 32, False): ScalarType.F32,
    ("float", 64, False): ScalarType.F64,
}


def _scalar_of(spirv_type: SpirvType) -> ScalarType | None:
    if spirv_type.kind == "bool":
        return ScalarType.BOOL
    return _SCALAR_OF.get((spirv_type.kind, spirv_type.width, spirv_type.signed))


def _spec_values(package: KernelPackage, module: SpirvModule) -> dict[int, SpecConstant]:
    declared = {
        constant.spec_id: module.spec_constant(constant.spec_id) or constant for constant in module.spec_constants
    }
    for spec in package.spec_constants:
        found = declared.get(spec.spec_id)
        twins = {_scalar_of(c.type) for c in module.spec_constants if c.spec_id == spec.spec_id}
        if found is not None and spec.value_type.scalar in twins:
            continue  # one SpecId, several constants (a named one and glslang's local-size twin): same bytes
        if found is None:
            listed = ", ".join(str(i) for i in sorted(declared)) or "none"
            raise _incompatible(
                f"the package sets specialization constant SpecId {spec.spec_id}, which the module does not declare "
                f"(declared SpecIds: {listed})"
            )
        expected = _scalar_of(found.type)
        if expected is not spec.value_type.scalar:
            name = f" ({found.name})" if found.name else ""
            shown = expected.short if expected is not None else repr(found.type)
            raise _incompatible(
                f"specialization constant SpecId {spec.spec_id}{name} is {shown} in the module, "
                f"the package gives {spec.value_type}"
            )
    return {spec.spec_id: spec for spec in package.spec_constants}


def effective_local_size(package: KernelPackage, module: SpirvModule) -> tuple[int, int, int]:
    """The local size the pipeline really gets: spec values for the local-size SpecIds, else the defaults."""
    entry = module.entry_point(package.entry_point)
    if entry.local_size is None:
        raise _incompatible(f"entry point {entry.name!r} fixes no LocalSize; the package says {package.local_size}")
    values = {spec.spec_id: spec for spec in package.spec_constants}
    size = list(entry.local_size)
    for axis, spec_id in enumerate(entry.local_size_spec_ids):
        if spec_id is not None and spec_id in values:
            size[axis] = int.from_bytes(values[spec_id].data, "little")
    return (size[0], size[1], size[2])


def _check_local_size(package: KernelPackage, module: SpirvModule, terms: DeviceTerms) -> tuple[int, int, int]:
    try:
        entry = module.entry_point(package.entry_point)
    except BackendError as exc:
        raise _incompatible(exc.message) from None
    local = effective_local_size(package, module)
    stated = tuple(package.local_size)
    if local != stated:
        ids = entry.local_size_spec_ids
        spec_note = ""
        if any(i is not None for i in ids):
            spelled = ", ".join(f"{axis}: SpecId {i}" for axis, i in zip("xyz", ids, strict=True) if i is not None)
            spec_note = f" (specialised: {spelled}; defaults {entry.local_size})"
        raise _incompatible(f"entry point {entry.name!r} has LocalSize {local}{spec_note}, the package says {stated}")
    invocations = local[0] * local[1] * local[2]
    if any(a > b for a, b in zip(local, terms.max_workgroup_size, strict=True)) or (
        invocations > terms.max_workgroup_invocations
    ):
        raise BackendError(
            ErrorKind.INCOMPATIBLE,
            f"local size {local} ({invocations} invocations) does not fit {terms.name} "
            f"(maxComputeWorkGroupSize {terms.max_workgroup_size}, "
            f"maxComputeWorkGroupInvocations {terms.max_workgroup_invocations})",
        )
    return local


_DESCRIPTOR_NAMES = {DescriptorType.STORAGE_BUFFER: "storage_buffer", DescriptorType.UNIFORM_BUFFER: "uniform_buffer"}


def _check_descriptors(package: KernelPackage, module: SpirvModule, terms: DeviceTerms) -> tuple[int, ...]:
    """Returns the uniform rows' block sizes in row order."""
    rows = {(row.set, row.native_index): row for row in package.bindings}
    for descriptor in module.descriptors:
        where = f"descriptor set {descriptor.set} binding {descriptor.binding}"
        if descriptor.descriptor_type not in _DESCRIPTOR_NAMES.values() or descriptor.count != 1:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"{where} is a {descriptor.descriptor_type} (count {descriptor.count}); "
                "this provider binds single storage and uniform buffers only",
            )
        if (descriptor.set, descriptor.binding) not in rows:
            listed = ", ".join(f"set {s} binding {b}" for s, b in sorted(rows)) or "none"
            raise _incompatible(f"{where} is not in the package's binding table ({listed})")
    sizes = []
    for row in package.bindings:
        found = module.descriptor(row.native_index, row.set)
        where = f"set {row.set} binding {row.native_index}"
        if found is None:
            raise _incompatible(f"slot {row.slot} names {where}, which the module does not declare")
        wanted = _DESCRIPTOR_NAMES[DescriptorType(row.descriptor_type)]
        if found.descriptor_type != wanted:
            raise _incompatible(
                f"slot {row.slot} is a {DescriptorType(row.descriptor_type).name} row but {where} is a "
                f"{found.descriptor_type} in the module"
            )
        if not access_allows(found.access, row.access):
            raise _incompatible(
                f"slot {row.slot} declares {row.access.name} but {where} allows only "
                f"{found.access.name} (NonWritable/NonReadable decorations)"
            )
        if row.descriptor_type == DescriptorType.UNIFORM_BUFFER:
            size = found.type.size if found.type is not None else None
            sizes.append(size or 0)
    sets = {row.set for row in package.bindings}
    if sets and max(sets) + 1 > terms.max_sets:
        policy = (
            ""
            if terms.max_sets == terms.max_bound_descriptor_sets
            else f", this provider uses at most {terms.max_sets}"
        )
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"the binding table uses descriptor set {max(sets)}; {terms.name} binds sets 0 to "
            f"{terms.max_sets - 1} (maxBoundDescriptorSets {terms.max_bound_descriptor_sets}{policy})",
        )
    uniforms = len(sizes)
    if uniforms > terms.max_uniform_buffers:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"the binding table has {uniforms} uniform buffers; {terms.name} allows {terms.max_uniform_buffers} "
            "(maxPerStageDescriptorUniformBuffers / maxDescriptorSetUniformBuffers)",
        )
    return tuple(sizes)


def _check_push(package: KernelPackage, module: SpirvModule, terms: DeviceTerms) -> int:
    """The push-constant range in bytes (0: none)."""
    declared = module.push_constant_bytes
    if declared is None:
        raise BackendError(
            ErrorKind.UNSUPPORTED, "the module's push-constant block has a size this provider cannot compute"
        )
    has_count = package.dispatch.count_argument != NO_COUNT_ARGUMENT
    block = len(package.push_constants)
    padded = -(-declared // 4) * 4
    if block:
        if declared == 0:
            raise _incompatible(f"the package carries a {block}-byte push-constant block but the module declares none")
        if block != padded:
            shown = f"{declared} bytes" + (f" ({padded} as a Vulkan range)" if padded != declared else "")
            raise _incompatible(f"the module's push-constant block is {shown}, the package's is {block} bytes")
        needed = block
    elif has_count:
        if declared > 4:
            raise _incompatible(
                f"the module's push constants are {declared} bytes; the package passes only the 4-byte count "
                "(carry the whole block: format version 2)"
            )
        needed = 4
    else:
        if declared:
            raise _incompatible(
                f"the module uses {declared} bytes of push constants but the package passes neither a block nor a count"
            )
        needed = 0
    if needed > terms.max_push_constants_size:
        what = "block" if block else "count"
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"the push-constant {what} takes {needed} bytes; {terms.name} allows "
            f"{terms.max_push_constants_size} (maxPushConstantsSize)",
        )
    return needed


def _zero_length(t: SpirvType, depth: int = 0) -> bool:
    if depth > 32:
        return False
    if t.kind == "array" and t.count == 0:
        return True
    if t.component is not None and t.kind in ("array", "matrix", "vector"):
        return _zero_length(t.component, depth + 1)
    return any(_zero_length(m.type, depth + 1) for m in t.members) if t.kind == "struct" else False


def check_shared_memory(module: SpirvModule, terms: DeviceTerms, specialised: str) -> None:
    """The module's ``shared`` (Workgroup) storage, as specialised, within ``maxComputeSharedMemorySize``
    (UNSUPPORTED naming both sizes) and without an array of length 0 (INCOMPATIBLE): lavapipe returned zeros
    for 64 MiB of it and segfaulted on a length of 0 or 0xFFFFFFFF set by a specialization constant, with the
    validation layer silent (measured 2026-12-04). A size the module does not let us compute (a struct
    without offsets, an ``OpSpecConstantOp`` length) is left to the driver."""
    if any(_zero_length(t) for t in module.workgroup_types):
        raise _incompatible(f"a shared (Workgroup) array has length 0{specialised}")
    total = module.workgroup_bytes
    if total is not None and total > terms.max_shared_memory:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"the module declares {total} bytes of shared (Workgroup) memory{specialised}; {terms.name} allows "
            f"{terms.max_shared_memory} (maxComputeSharedMemorySize)",
        )


def _check_specialised_shared_memory(package: KernelPackage, module: SpirvModule, terms: DeviceTerms) -> None:
    values = {spec.spec_id: spec.data for spec in package.spec_constants}
    if not values or not module.workgroup_types:
        return  # the defaults were checked with the module
    shown = ", ".join(f"SpecId {spec.spec_id} = {spec.value_type}:{int.from_bytes(spec.data, 'little')}"
                      for spec in package.spec_constants if spec.value_type.scalar is not ScalarType.BOOL)  # fmt: skip
    try:
        specialised = inspect_spirv(specialize(package.module, values))
    except BackendError as exc:
        raise _incompatible(f"with the package's specialization constants ({shown}) {exc.message}") from None
    check_shared_memory(specialised, terms, f" with the package's specialization constants ({shown})")


def check_agreement(package: KernelPackage, module: SpirvModule, terms: DeviceTerms) -> Agreement:
    """The package-vs-module checks (3) on an inspected module."""
    counters["agreements"] += 1
    _spec_values(package, module)
    _check_specialised_shared_memory(package, module, terms)
    local = _check_local_size(package, module, terms)
    uniform_sizes = _check_descriptors(package, module, terms)
    push_range = _check_push(package, module, terms)
    uniform_rows = [row for row in package.bindings if row.descriptor_type == DescriptorType.UNIFORM_BUFFER]
    sets = {row.set for row in package.bindings}
    return Agreement(
        local_size=local,
        push_range=push_range,
        set_count=max(sets) + 1 if sets else 0,
        uniform_bytes=tuple((row.slot, size) for row, size in zip(uniform_rows, uniform_sizes, strict=True)),
    )
