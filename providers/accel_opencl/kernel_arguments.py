"""Version-2 kernel packages on OpenCL: by-value and ``__local`` arguments, and the launch shape.

Promise: before any argument reaches ``clSetKernelArg`` the package's argument
list is checked against the kernel (every index 0..num_args-1 exactly once:
a buffer binding, the count argument or a package argument), against the
driver's argument info where the driver reports it (a VALUE must be a
by-value parameter of the declared type — a struct VALUE's raw bytes a by-value
parameter whose type is not a scalar/vector, of the size the OpenCL C source
declares and within ``CL_DEVICE_MAX_PARAMETER_SIZE`` — a LOCAL a ``__local`` pointer, a
binding a ``__global``/``__constant`` pointer, the count a by-value
parameter) and ``__local`` bytes against the local memory the kernel has
left. Both drivers here segfault on a by-value argument of pointer size set
at a buffer parameter and run a ``__local`` argument of pointer size set at a
buffer parameter as a NULL buffer (measured 2026-12-01), so these checks are
what keeps a wrong package from taking the process down. Values are then set
once per program object; the submit path sets buffers and the count only.

Launch shape (:class:`Launch`): the local size passed to
``clEnqueueNDRangeKernel`` — the package's, the kernel's
``reqd_work_group_size`` when the package lets the driver choose
(``ANY_LOCAL_SIZE``), or None (NULL, the driver chooses) — and whether the
program may run non-uniform work-groups (a global size that is not a
multiple of the local size): OpenCL 2.x devices always, 3.0 devices that
report ``CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT``, and only for programs
built with ``-cl-std=CL2.0`` or later (or from IL) without
``-cl-uniform-work-group-size``.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from accelcore import BackendError, ErrorKind
from accelcore.kernels.package import (
    NO_COUNT_ARGUMENT,
    ArgumentKind,
    KernelArgument,
    KernelPackage,
    ModuleKind,
)
from accelcore.kernels.values import ValueType, parse_value_type
from accelcore.support.recent import keep_recent

from .errors import error_from_status

__all__ = [
    "ArgumentInfo",
    "DeviceLaunchFacts",
    "Launch",
    "check_address_width",
    "check_aggregate_arguments",
    "check_argument_indices",
    "check_argument_info",
    "check_global_fits",
    "check_local_memory",
    "check_private_memory",
    "check_reflection",
    "non_uniform_refusal",
    "read_argument_info",
    "remember_argument_info",
    "remembered_argument_info",
    "set_arguments",
]

CL_KERNEL_ARG_INFO_NOT_AVAILABLE = -19
GLOBAL, LOCAL, CONSTANT, PRIVATE = 0x119B, 0x119C, 0x119D, 0x119E
"""``CL_KERNEL_ARG_ADDRESS_QUALIFIER`` values."""
_QUALIFIER_WORDS = {GLOBAL: "a __global pointer", LOCAL: "a __local pointer", CONSTANT: "a __constant pointer"}
_CL_STD = re.compile(r"(?:^|\s)-cl-std=CL(\d+)\.(\d+)(?=\s|$)")
_UNIFORM = re.compile(r"(?:^|\s)-cl-uniform-work-group-size(?=\s|$)")


@dataclass(frozen=True, slots=True)
class ArgumentInfo:
    """What the driver reports about one kernel parameter."""

    address_qualifier: int
    type_name: str

    @property
    def words(self) -> str:
        """``a __global pointer (float*)`` / ``by value (int)``."""
        kind = _QUALIFIER_WORDS.get(self.address_qualifier, "by value")
        return f"{kind} ({self.type_name})" if self.type_name else kind


@dataclass(frozen=True, slots=True)
class DeviceLaunchFacts:
    """Device facts the launch shape depends on (read once per device)."""

    version: tuple[int, int]
    """``CL_DEVICE_VERSION`` major, minor."""
    non_uniform: bool
    """Non-uniform work-groups: 2.x always, 3.0 ``CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT``, 1.x never."""
    local_mem_bytes: int
    """``CL_DEVICE_LOCAL_MEM_SIZE``."""
    max_parameter_bytes: int = 1024
    """``CL_DEVICE_MAX_PARAMETER_SIZE``: all of a kernel's arguments together (OpenCL's minimum is 1024)."""

    @classmethod
    def of(cls, cl: Any, device: Any) -> DeviceLaunchFacts:
        match = re.match(r"OpenCL (\d+)\.(\d+)", str(device.version))
        version = (int(match.group(1)), int(match.group(2))) if match else (1, 0)
        non_uniform = version[0] == 2
        if version[0] >= 3:
            try:
                non_uniform = bool(device.get_info(cl.device_info.NON_UNIFORM_WORK_GROUP_SUPPORT))
            except (cl.Error, AttributeError):
                non_uniform = False
        try:
            max_parameter = int(device.max_parameter_size)
        except (cl.Error, AttributeError):
            max_parameter = 1024
        return cls(version, non_uniform, int(device.local_mem_size), max_parameter)

    @property
    def support_words(self) -> str:
        major, minor = self.version
        if major >= 3:
            state = "true" if self.non_uniform else "false"
            return f"this OpenCL {major}.{minor} device reports CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT {state}"
        if major == 2:
            return f"this OpenCL {major}.{minor} device supports them"
        return f"this OpenCL {major}.{minor} device has none (they need OpenCL 2.0)"


@dataclass(frozen=True, slots=True)
class Launch:
    """How a loaded program is enqueued (see the module docstring)."""

    local: tuple[int, int, int] | None
    """``local_work_size``; None passes NULL (the driver chooses)."""
    non_uniform_refusal: str | None
    """None when this program may run a global size that is not a multiple of ``local``; else why not."""


def non_uniform_refusal(facts: DeviceLaunchFacts, kind: ModuleKind, options: str) -> str | None:
    """None when a program of ``kind`` built with ``options`` may run non-uniform work-groups here."""
    if not facts.non_uniform:
        return facts.support_words
    if _UNIFORM.search(options):
        return f"the build options {options!r} ask for uniform work-groups (-cl-uniform-work-group-size)"
    if kind is ModuleKind.SPIRV_OPENCL:
        return None
    found = _CL_STD.findall(options)
    if not found or int(found[-1][0]) < 2:
        return (
            f"{facts.support_words}, but the program must be built with -cl-std=CL2.0 or later "
            f"(build options {options!r})"
        )
    return None


def check_global_fits(entry_point: str, global_size: Sequence[int], launch: Launch, what: str = "global size") -> None:
    """INCOMPATIBLE unless ``global_size`` is a multiple of the launch's local size or non-uniform groups run."""
    local = launch.local
    if local is None or launch.non_uniform_refusal is None:
        return
    uneven = [axis for axis in range(3) if global_size[axis] % local[axis]]
    if uneven:
        axis = uneven[0]
        raise BackendError(
            ErrorKind.INCOMPATIBLE,
            f"kernel {entry_point!r}: {what} {tuple(global_size)} is not a multiple of the local size {local} "
            f"(axis {axis}: {global_size[axis]} % {local[axis]} = {global_size[axis] % local[axis]}); that needs "
            f"non-uniform work-groups and {launch.non_uniform_refusal}. Use a global size that is a multiple of "
            "the local size, or ANY_LOCAL_SIZE (the driver chooses a local size that divides it)",
        )


def check_argument_indices(package: KernelPackage, num_args: int) -> None:
    """Bindings + count argument + package arguments must name each of 0..num_args-1 exactly once."""
    roles: dict[int, list[str]] = {}
    for row in package.bindings:
        roles.setdefault(row.native_index, []).append(f"slot {row.slot}'s buffer")
    if package.dispatch.count_argument != NO_COUNT_ARGUMENT:
        roles.setdefault(package.dispatch.count_argument, []).append("the count argument")
    for argument in package.arguments:
        roles.setdefault(argument.index, []).append(f"a {argument.kind.name} argument")
    last = num_args - 1
    problems = []
    missing = [index for index in range(num_args) if index not in roles]
    if missing:
        problems.append(
            f"nothing in the package sets argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(str, missing))} (no binding, count argument or package argument names "
            f"{'them' if len(missing) > 1 else 'it'})"
        )
    for index in sorted(roles):
        if index > last:
            problems.append(f"argument index {index} ({', '.join(roles[index])}) is past the kernel's last argument")
        elif len(roles[index]) > 1:
            problems.append(f"argument {index} is given {len(roles[index])} times ({', '.join(roles[index])})")
    if problems:
        range_words = f"0..{last}" if num_args else "none"
        raise BackendError(
            ErrorKind.INCOMPATIBLE,
            f"kernel {package.entry_point!r} takes {num_args} arguments ({range_words}), each set exactly once: "
            + "; ".join(problems),
        )


def read_argument_info(cl: Any, kernel: Any, num_args: int) -> list[ArgumentInfo] | None:
    """The driver's argument info, or None where it reports none (PoCL without ``-cl-kernel-arg-info``)."""
    info = cl.kernel_arg_info
    try:
        return [
            ArgumentInfo(
                int(kernel.get_arg_info(index, info.ADDRESS_QUALIFIER)),
                str(kernel.get_arg_info(index, info.TYPE_NAME)).rstrip("\0").strip(),
            )
            for index in range(num_args)
        ]
    except cl.Error:
        return None


_REMEMBERED: OrderedDict[Hashable, list[ArgumentInfo]] = OrderedDict()
_REMEMBERED_LOCK = threading.Lock()
REMEMBERED_ENTRIES = 256
"""Argument info of OpenCL C builds, per binary-cache key (source, options, entry point; target)."""


def remember_argument_info(key: Hashable, infos: Sequence[ArgumentInfo]) -> None:
    """Keep what a build of ``key`` reported: a later load from the cached binary of a driver that
    keeps no argument info in binaries (Intel's CPU runtime) then needs no twin compile."""
    with _REMEMBERED_LOCK:
        keep_recent(_REMEMBERED, key, list(infos), REMEMBERED_ENTRIES)


def remembered_argument_info(key: Hashable) -> list[ArgumentInfo] | None:
    with _REMEMBERED_LOCK:
        infos = _REMEMBERED.get(key)
        if infos is not None:
            _REMEMBERED.move_to_end(key)
        return infos


def _declared_type(info: ArgumentInfo) -> ValueType | None:
    try:
        return parse_value_type(info.type_name)
    except BackendError:
        return None  # a typedef, struct or size_t: only the driver's size check applies


def check_argument_info(package: KernelPackage, infos: Sequence[ArgumentInfo]) -> None:
    """Every role against what the driver says the parameter is (INCOMPATIBLE naming the index)."""
    entry = package.entry_point

    def refuse(index: int, gives: str, needs: str) -> BackendError:
        return BackendError(
            ErrorKind.INCOMPATIBLE,
            f"kernel {entry!r} argument {index} is {infos[index].words} but the package gives {gives} ({needs})",
        )

    for row in package.bindings:
        if infos[row.native_index].address_qualifier not in (GLOBAL, CONSTANT):
            raise refuse(row.native_index, f"slot {row.slot}'s buffer", "a buffer binds a __global/__constant pointer")
    count = package.dispatch.count_argument
    if count != NO_COUNT_ARGUMENT and infos[count].address_qualifier != PRIVATE:
        raise refuse(count, "the element count", "the count is a by-value uint")
    for argument in package.arguments:
        info = infos[argument.index]
        if argument.kind is ArgumentKind.LOCAL:
            if info.address_qualifier != LOCAL:
                raise refuse(
                    argument.index,
                    f"a __local allocation of {argument.local_bytes} bytes",
                    "LOCAL sizes a __local pointer",
                )
            continue
        if argument.value_type is None:  # a by-value struct's bytes: only a by-value non-scalar parameter
            given = f"a {len(argument.data)}-byte struct value"
            if info.address_qualifier != PRIVATE:
                raise refuse(argument.index, given, "a struct VALUE sets a by-value struct parameter")
            declared = _declared_type(info)
            if declared is not None:
                raise refuse(argument.index, given, f"the kernel declares {declared} ({declared.opencl_name})")
            continue
        given = f"a {argument.value_type} value ({len(argument.data)} bytes)"
        if info.address_qualifier != PRIVATE:
            raise refuse(argument.index, given, "a VALUE sets a by-value parameter")
        declared = _declared_type(info)
        if declared is not None and declared != argument.value_type:
            raise refuse(argument.index, given, f"the kernel declares {declared} ({declared.opencl_name})")


def check_aggregate_arguments(package: KernelPackage, max_parameter_bytes: int) -> None:
    """By-value struct arguments against the device and, for OpenCL C source, the declared layout.

    Each struct's bytes and all by-value bytes together must fit ``CL_DEVICE_MAX_PARAMETER_SIZE``
    (RESOURCE_LIMIT naming it); a struct whose size the source lets :mod:`accelcore.kernels.opencl_signature`
    compute must be exactly that size (INCOMPATIBLE naming the argument, the declaration and both sizes).
    """
    structs = [a for a in package.arguments if a.is_aggregate]
    if not structs:
        return
    entry = package.entry_point
    total = sum(len(a.data) for a in package.arguments if a.kind is ArgumentKind.VALUE)
    for argument in structs:
        if len(argument.data) > max_parameter_bytes or total > max_parameter_bytes:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"kernel {entry!r} argument {argument.index}: a {len(argument.data)}-byte struct value "
                f"({total} bytes of by-value arguments in all) exceeds this device's "
                f"CL_DEVICE_MAX_PARAMETER_SIZE of {max_parameter_bytes} bytes",
            )
    if package.module_kind is not ModuleKind.OPENCL_SOURCE:
        return  # IL and binaries: the driver's argument info (a by-value non-scalar parameter) is the check
    from accelcore.kernels.opencl_signature import opencl_kernels

    try:
        kernels = opencl_kernels(package.module.decode("utf-8"), package.build_options)
    except UnicodeDecodeError:
        return
    kernel = next((k for k in kernels if k.name == entry), None)
    if kernel is None:
        return
    for argument in structs:
        if argument.index >= len(kernel.parameters):
            continue
        param = kernel.parameters[argument.index]
        if param.by_value and param.value_type is not None:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"kernel {entry!r} {param.label} declares {param.value_type} but the package gives a "
                f"{len(argument.data)}-byte struct value",
            )
        if not param.by_value:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"kernel {entry!r} {param.label} is a pointer but the package gives a {len(argument.data)}-byte "
                "struct value (a struct VALUE sets a by-value struct parameter)",
            )
        if param.aggregate_bytes is not None and param.aggregate_bytes != len(argument.data):
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"kernel {entry!r} {param.label}: struct {param.type_text} is {param.aggregate_bytes} bytes in "
                f"OpenCL C layout but the package gives {len(argument.data)} bytes",
            )


def check_reflection(package: KernelPackage, infos: Sequence[ArgumentInfo], address_bits: int = 64) -> None:
    """The host's reading of an OpenCL C package (Clang's front end, :mod:`accelcore.kernels.opencl_signature`) against
    the driver's ``CL_KERNEL_ARG_ADDRESS_QUALIFIER`` / ``CL_KERNEL_ARG_TYPE_NAME``: where the driver names a
    scalar or vector type (not a typedef), it must be the type Clang read, and a pointer must be one for both
    (INCOMPATIBLE naming the argument and both readings): the arrays the host checked against Clang's layout
    are then the ones the kernel reads."""
    if package.module_kind is not ModuleKind.OPENCL_SOURCE:
        return
    from accelcore.kernels.opencl_signature import opencl_kernels

    try:
        kernels = opencl_kernels(package.module.decode("utf-8"), package.build_options, address_bits=address_bits)
    except (UnicodeDecodeError, BackendError):
        return  # the build succeeded where Clang could not read: the driver's own checks apply
    kernel = next((k for k in kernels if k.name == package.entry_point), None)
    if kernel is None or len(kernel.parameters) != len(infos):
        return
    for param, info in zip(kernel.parameters, infos, strict=True):
        pointer_driver = info.address_qualifier in (GLOBAL, CONSTANT, LOCAL)
        if pointer_driver != (param.address_space in ("global", "constant", "local")):
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"kernel {package.entry_point!r} {param.label}: the host read it as "
                f"{'a pointer' if param.address_space else 'a value'}, the driver builds {info.words}",
            )
        driver = _declared_type(ArgumentInfo(info.address_qualifier, info.type_name.rstrip("*").strip()))
        if driver is not None and param.value_type is not None and driver != param.value_type:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"kernel {package.entry_point!r} {param.label}: the host read {param.value_type} "
                f"({param.value_type.opencl_name}), the driver builds {info.words}; the two read the source "
                f"otherwise (build options {package.build_options!r}?)",
            )


def check_address_width(package: KernelPackage, address_bits: int) -> None:
    """On a device whose ``CL_DEVICE_ADDRESS_BITS`` is not 64, every by-value argument of an OpenCL C package must
    have the type Clang reads for that width (``size_t`` is 32 bits there; packages are made for SPIR64):
    INCOMPATIBLE naming the argument, the declaration and both types."""
    if address_bits == 64 or package.module_kind is not ModuleKind.OPENCL_SOURCE:
        return
    from accelcore.kernels.opencl_signature import opencl_kernels

    try:
        kernels = opencl_kernels(package.module.decode("utf-8"), package.build_options, address_bits=address_bits)
    except UnicodeDecodeError:
        return
    kernel = next((k for k in kernels if k.name == package.entry_point), None)
    if kernel is None:
        return
    for argument in package.arguments:
        if argument.kind is not ArgumentKind.VALUE or argument.index >= len(kernel.parameters):
            continue
        param = kernel.parameters[argument.index]
        declared = param.value_type
        size = declared.size if declared is not None else param.aggregate_bytes
        if (declared is not None and argument.value_type is not None and declared != argument.value_type) or (
            size is not None and size != len(argument.data)
        ):
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"kernel {package.entry_point!r} {param.label} is {declared or param.type_text} ({size} bytes) on this "
                f"{address_bits}-bit device, but the package gives {len(argument.data)} bytes "
                f"({argument.value_type or 'a struct'}); pack it for this device's address width",
            )


def check_local_memory(package: KernelPackage, device_bytes: int, kernel_bytes: int) -> None:
    """The kernel's own ``__local`` variables (``CL_KERNEL_LOCAL_MEM_SIZE``) must fit the device's local memory,
    and the ``__local`` arguments together what is left (RESOURCE_LIMIT naming the sizes): PoCL aborts the process
    and rusticl runs past its 32 KiB when they do not (measured 2026-12-04)."""
    if kernel_bytes > device_bytes:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"kernel {package.entry_point!r} declares {kernel_bytes} bytes of __local variables "
            f"(CL_KERNEL_LOCAL_MEM_SIZE), more than this device's {device_bytes} (CL_DEVICE_LOCAL_MEM_SIZE)",
        )
    left = device_bytes - kernel_bytes
    total = 0
    for argument in package.arguments:
        if argument.kind is not ArgumentKind.LOCAL:
            continue
        total += argument.local_bytes
        if total > left:
            others = total - argument.local_bytes
            also = f" (after {others} bytes of earlier __local arguments)" if others else ""
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"kernel {package.entry_point!r} argument {argument.index}: a __local allocation of "
                f"{argument.local_bytes} bytes{also} exceeds the {left} bytes of local memory the kernel has left "
                f"(CL_DEVICE_LOCAL_MEM_SIZE {device_bytes} - CL_KERNEL_LOCAL_MEM_SIZE {kernel_bytes})",
            )


PRIVATE_LIMIT_ENV = "ACCELCORE_OPENCL_PRIVATE_BYTES"
DEFAULT_PRIVATE_LIMIT = 4 << 20
"""Private memory one work-item may declare (``CL_KERNEL_PRIVATE_MEM_SIZE``) before a load is refused: the CPU
drivers here keep it on a worker thread's stack, and rusticl segfaults running a kernel with a 16 MiB private
array (PoCL too, though it reports 1 KiB for it; Intel's runtime ran 272 MiB - measured 2026-12-04). OpenCL sets
no such limit, so this one is ours, and ``ACCELCORE_OPENCL_PRIVATE_BYTES`` raises or lowers it."""


def check_private_memory(entry: str, private_bytes: int) -> None:
    """RESOURCE_LIMIT when the kernel's private memory per work-item passes :data:`DEFAULT_PRIVATE_LIMIT`
    (or ``ACCELCORE_OPENCL_PRIVATE_BYTES``; INVALID_ARGUMENT naming the variable when it is not a byte count)."""
    import os

    text = os.environ.get(PRIVATE_LIMIT_ENV, "").strip()
    limit = DEFAULT_PRIVATE_LIMIT
    if text:
        if not text.isdecimal() or int(text) < 1:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"{PRIVATE_LIMIT_ENV}={text!r} is not a positive byte count (unset: {DEFAULT_PRIVATE_LIMIT})",
            )
        limit = int(text)
    if private_bytes > limit:
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"kernel {entry!r} declares {private_bytes} bytes of private memory per work-item "
            f"(CL_KERNEL_PRIVATE_MEM_SIZE), more than the {limit} this project allows ({PRIVATE_LIMIT_ENV}; "
            "a CPU driver keeps it on a thread's stack and may crash the process)",
        )


def set_arguments(cl: Any, kernel: Any, package: KernelPackage, infos: Sequence[ArgumentInfo] | None) -> None:
    """``clSetKernelArg`` once per VALUE (its exact bytes) and LOCAL (``cl.LocalMemory``) argument."""
    for argument in package.arguments:
        try:
            if argument.kind is ArgumentKind.LOCAL:
                kernel.set_arg(argument.index, cl.LocalMemory(argument.local_bytes))
            else:
                kernel.set_arg(argument.index, bytes(argument.data))
        except cl.Error as exc:
            raise _set_failed(package, argument, infos, int(exc.code)) from None


def _set_failed(
    package: KernelPackage, argument: KernelArgument, infos: Sequence[ArgumentInfo] | None, status: int
) -> BackendError:
    declared = f" (the kernel's parameter is {infos[argument.index].words})" if infos is not None else ""
    if argument.kind is ArgumentKind.LOCAL:
        gives = f"a __local allocation of {argument.local_bytes} bytes"
    elif argument.value_type is None:
        gives = f"a {len(argument.data)}-byte struct value"
    else:
        gives = f"a {argument.value_type} value of {len(argument.data)} bytes"
    return error_from_status(
        status,
        "clSetKernelArg",
        f"kernel {package.entry_point!r} argument {argument.index}: the driver refused {gives}{declared}",
    )
