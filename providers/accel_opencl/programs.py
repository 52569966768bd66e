"""Load kernel packages into programs: OpenCL C source, device binaries, OpenCL SPIR-V.

Promise: every check that does not need the driver runs first - format and
kind, package structure (accelcore's codec), target identity, binary header
and trust (:mod:`.binaries`), IL capability, retained-size ceilings - so a
refused artifact never reaches the driver. After the build the kernel's
argument list must match the package's bindings, count argument and
by-value/``__local`` arguments, its work-group size and the launch shape must
fit (:mod:`.kernel_arguments`), and then the package's arguments are set once
on the program's kernel; anything retained (binary plus retained source or
IL) must fit ``resident_bytes`` (else RESOURCE_LIMIT). Build logs are part of
the error message. Nothing keeps a reference to the caller's payload.

OpenCL C: build options and includes are checked first (:mod:`.source_check`);
the first build of a (source, options, entry point, device) runs in a bounded
child (:mod:`.isolation`), whose verdict is remembered.

Binary cache (:mod:`.binary_cache`): a source build stores its binary under
(SHA-256 of source, build options, entry point and device UUID; device
TargetIdentity), in memory and on disk; a second load of the same source on the
same device builds from that binary instead of compiling again - after the
checks a given binary gets (header; its SHA-256 must be the one the verdict
recorded, else the probe). An entry that fails them is discarded and rebuilt.

Native programs: the last :data:`NATIVE_PROGRAMS_KEPT` programs built from a device binary or from SPIR-V
are kept per provider instance, by (context, the module's SHA-256, build options); a load of the same
module again - the same source with other by-value arguments, which the Python layer packs into a new
package, or a kernel loaded again - creates only a new kernel on it, with its own arguments. Why: each
native program a driver builds and releases keeps some memory for good (measured with the OpenCL calls
alone, ``tools/repro/opencl_program_memory.py``), so a load per call grew the process without bound;
a kernel created and released on a kept program keeps nothing. docs/opencl.md, "Program memory".
"""

from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelcore import ArtifactRef, BackendError, ErrorKind, TargetIdentity
from accelcore.kernels.package import ANY_LOCAL_SIZE, DispatchKind, KernelPackage, ModuleKind, module_kind_of_format
from accelcore.kernels.package_codec import parse_artifact
from accelcore.kernels.spirv import Flavour, check_capabilities, inspect_spirv, opencl_supported_capabilities

from . import binaries, binary_cache, isolation
from .errors import cl_call, error_from_status
from .il import create_program_with_il_khr
from .kernel_arguments import (
    ArgumentInfo,
    DeviceLaunchFacts,
    Launch,
    check_address_width,
    check_aggregate_arguments,
    check_argument_indices,
    check_argument_info,
    check_global_fits,
    check_local_memory,
    check_private_memory,
    check_reflection,
    non_uniform_refusal,
    read_argument_info,
    remember_argument_info,
    remembered_argument_info,
    set_arguments,
)
from .source_check import check_build_options, check_includes

__all__ = ["ACCEPTED_KINDS", "NATIVE_PROGRAMS_KEPT", "BuiltProgram", "ProgramLoader"]

NATIVE_PROGRAMS_KEPT = 16
"""Built native programs kept per provider instance for new kernels (the least recently loaded goes first)."""

ACCEPTED_KINDS = frozenset({ModuleKind.OPENCL_SOURCE, ModuleKind.OPENCL_BINARY, ModuleKind.SPIRV_OPENCL})
"""Every kind an OpenCL device can take; a device without IL takes all but SPIRV_OPENCL (``accepted_kinds``)."""
NO_IL = (
    "this device cannot ingest OpenCL SPIR-V: it reports no CL_DEVICE_IL_VERSION and no "
    "cl_khr_il_program extension (load the OPENCL_SOURCE package instead)"
)


def _log_excerpt(log: str) -> str:
    """A build log for a message: whole up to 4,000 characters, else its head (the first diagnostics name the
    cause) and its tail."""
    return log if len(log) <= 4000 else f"{log[:3000]}\n[... {len(log) - 4000} characters ...]\n{log[-1000:]}"


@dataclass(slots=True)
class BuiltProgram:
    """A built native program and its kernel, before the handle wraps them."""

    native: Any
    kernel: Any
    binary: bytes
    resident_bytes: int
    from_cache: bool
    launch: Launch | None = None
    """How the program is enqueued (set by ``ProgramLoader.build`` after the kernel checks)."""


def _resource_limit(what: str, size: int, limit: int) -> BackendError:
    return BackendError(
        ErrorKind.RESOURCE_LIMIT, f"{what} of {size} bytes exceeds the authorised resident_bytes {limit}"
    )


class ProgramLoader:
    """Program loading for one device (shared by every context of an instance)."""

    def __init__(
        self,
        cl: Any,
        device: Any,
        device_index: int,
        device_uuid: bytes,
        platform_name: str,
        target: TargetIdentity,
        max_bindings: int,
        max_artifact_bytes: int,
    ) -> None:
        self._cl = cl
        self._device = device
        self._device_index = device_index
        self._device_uuid = device_uuid
        self._family = binaries.driver_family(platform_name)
        self.target = target
        self._max_bindings = max_bindings
        self._max_artifact_bytes = max_artifact_bytes
        self._address_bits = int(device.address_bits)
        il_version = str(getattr(device, "il_version", "") or "").strip()
        extensions = str(device.extensions).split()
        self.il_version = il_version
        self.il_khr = "cl_khr_il_program" in extensions
        self.accepted_kinds = (
            ACCEPTED_KINDS if il_version or self.il_khr else ACCEPTED_KINDS - {ModuleKind.SPIRV_OPENCL}
        )
        """What this device's ``load_program`` takes (SPIRV_OPENCL only with IL)."""
        self._platform = device.platform
        self._device_name = str(device.name)
        c_version = str(device.opencl_c_version)  # "OpenCL C 1.2 ..."
        major = int(c_version.split()[2].split(".")[0]) if len(c_version.split()) > 2 else 1
        self._spirv_capabilities = opencl_supported_capabilities(
            extensions, images=bool(device.image_support), opencl_c_major=major
        )
        self._max_work_item_sizes = tuple(int(v) for v in device.max_work_item_sizes)
        self._max_work_group_size = int(device.max_work_group_size)
        self._natives: OrderedDict[tuple[int, str, bytes, str], tuple[Any, Any]] = OrderedDict()
        """(context pointer, module kind, module SHA-256, build options) → (the context, its built native
        program): see the module docstring. The context is held so its pointer names it while kept."""

    def forget_context(self, context: Any) -> None:
        """Drop the native programs kept for ``context`` (it is being destroyed)."""
        for key in [key for key, (owner, _) in self._natives.items() if owner is context]:
            del self._natives[key]

    @property
    def native_programs_kept(self) -> int:
        return len(self._natives)

    # -- entry points -------------------------------------------------------------

    def parse(self, artifact: ArtifactRef) -> KernelPackage:
        """Decode and check ``artifact`` without touching the driver."""
        try:
            kind: ModuleKind | None = module_kind_of_format(artifact.format)
        except BackendError:
            kind = None  # not a package format: parse_artifact says so
        if kind is not None and kind not in ACCEPTED_KINDS:
            # Name what this device really takes (SPIRV_OPENCL only with IL). A SPIRV_OPENCL package is
            # still parsed and inspected on a device without IL, so bad bytes stay INVALID_ARGUMENT.
            takes = ", ".join(sorted(k.name for k in self.accepted_kinds))
            raise BackendError(
                ErrorKind.UNSUPPORTED, f"this device does not take {kind.name} packages (it takes {takes})"
            )
        return parse_artifact(
            artifact,
            max_bindings=self._max_bindings,
            max_bytes=self._max_artifact_bytes,
            accepted_kinds=ACCEPTED_KINDS,
            device_target=self.target,
        )

    def build(self, context: Any, package: KernelPackage, resident_limit: int) -> BuiltProgram:
        """Build ``package`` in ``context``; the program and kernel are released on any failure."""
        check_build_options(package.build_options)  # every kind: clBuildProgram takes them
        kind = package.module_kind
        if kind is ModuleKind.OPENCL_SOURCE:
            built = self._from_source(context, package, resident_limit)
        elif kind is ModuleKind.OPENCL_BINARY:
            built = self._from_binary(context, package, resident_limit)
        elif kind is ModuleKind.SPIRV_OPENCL:
            built = self._from_il(context, package, resident_limit)
        else:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"an OpenCL device cannot load {kind.name} packages "
                "(it takes OPENCL_SOURCE, OPENCL_BINARY and, where IL is reported, SPIRV_OPENCL)",
            )
        built.launch, infos = self._check_kernel(built.kernel, package, context, built.binary)
        set_arguments(self._cl, built.kernel, package, infos)  # once per program object; submit never resets them
        if built.resident_bytes > resident_limit:
            raise _resource_limit("the built program (binary + retained module)", built.resident_bytes, resident_limit)
        return built

    # -- module kinds -------------------------------------------------------------

    def _source_key(self, package: KernelPackage) -> tuple[bytes, tuple[int, ...]]:
        """(SHA-256 of source, options, entry point, device UUID and included headers; target words)."""
        h = hashlib.sha256()
        parts = (package.module, package.build_options.encode("utf-8"), package.entry_point.encode("utf-8"))
        # The headers a source includes are part of what it builds to (already checked: see _from_source).
        headers = check_includes(package.module.decode("utf-8", "replace"), check_build_options(package.build_options))
        for part in (*parts, self._device_uuid, headers):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
        return h.digest(), self.target.words

    def _from_cache(
        self, context: Any, package: KernelPackage, key: binary_cache.CacheKey, verdict: isolation.Verdict | None
    ) -> BuiltProgram | None:
        """The cached binary for ``key`` with a given binary's checks; None (entry discarded) if any fails."""
        cached = binary_cache.get(key)
        if cached is None:
            return None
        try:
            if verdict is not None and not verdict.ok:
                raise verdict.error()  # a binary cached for a source refused since: not ours
            if verdict is None or verdict.binary_sha256 is None:
                # Nothing records what this key builds to, so the file could be any valid binary (another
                # kernel's computes something else without a word): rebuild instead of trusting it.
                raise BackendError(ErrorKind.INCOMPATIBLE, "no verdict records the binary this key builds to")
            binaries.check_binary_header(self._family, cached)
            if binaries.digest(cached) != verdict.binary_sha256:
                raise BackendError(ErrorKind.INCOMPATIBLE, "not the binary the isolated build made for this key")
            binaries.trust(cached)
            native = self._program_from_binary(context, cached, package.build_options)
            kernel = self._kernel(native, package)
        except BackendError:
            binary_cache.discard(key)
            return None
        return BuiltProgram(native, kernel, cached, len(cached), True)

    def _from_source(self, context: Any, package: KernelPackage, resident_limit: int) -> BuiltProgram:
        try:
            source = package.module.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"OpenCL C source is not valid UTF-8 (byte {exc.start})"
            ) from None
        if "\0" in source:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"OpenCL C source has a NUL byte at {source.index(chr(0))}")
        check_includes(source, check_build_options(package.build_options))
        key = self._source_key(package)
        limits = isolation.build_limits()
        verdict = isolation.remembered(key, limits)
        built = self._from_cache(context, package, key, verdict)
        if built is not None:
            return built
        if len(package.module) > resident_limit:
            raise _resource_limit("the retained OpenCL C source", len(package.module), resident_limit)
        # The first build of this (source, options, entry point, device) runs in a bounded child: a
        # driver crash or hang there is a verdict, not the end of this process (isolation.py).
        built_binary = None
        if verdict is None:
            verdict, built_binary = isolation.isolated_build(
                self._device_index,
                self._device_uuid,
                package.module,
                package.build_options,
                package.entry_point,
                limits,
                key,
            )
            isolation.check_belongs(key, verdict)  # the answer to this request, or nothing is kept or used
            if not verdict.ok:
                isolation.remember(key, verdict)
        if not verdict.ok:
            raise verdict.error()
        if built_binary is not None:
            try:
                binaries.check_binary_header(self._family, built_binary)
            except BackendError:
                built_binary = None  # the verdict stands; build here instead
        if built_binary is not None:
            binaries.trust(built_binary)  # built and loaded cleanly in the child
            native = self._program_from_binary(context, built_binary, package.build_options)
            binary = built_binary
        else:  # a remembered verdict: this source builds without crashing here
            cl = self._cl
            with cl_call("clCreateProgramWithSource", "creating a program from OpenCL C source"):
                native = cl._cl._Program(context, source)
            self._build_native(native, package.build_options, "OpenCL C source")
            binary = self._binary_of(native)
        binaries.trust(binary)
        binary_cache.put(key, binary)
        if verdict.binary_sha256 != binaries.digest(binary):
            isolation.remember(key, isolation.with_binary(verdict, binary))
        return BuiltProgram(native, self._kernel(native, package), binary, len(binary) + len(package.module), False)

    def _from_binary(self, context: Any, package: KernelPackage, resident_limit: int) -> BuiltProgram:
        if not any(package.target.words) or package.target.words != self.target.words:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                "a device binary must record the TargetIdentity of this device "
                f"(recorded {list(package.target.words)}, device {list(self.target.words)})",
            )
        binary = package.module
        if len(binary) > resident_limit:
            raise _resource_limit("the device binary", len(binary), resident_limit)
        binaries.check_binary_header(self._family, binary)
        binaries.ensure_trusted(
            binary, self._device_index, self._device_uuid, package.build_options, package.entry_point
        )
        native = self._program_from_binary(context, binary, package.build_options)
        return BuiltProgram(native, self._kernel(native, package), binary, len(binary), False)

    def _from_il(self, context: Any, package: KernelPackage, resident_limit: int) -> BuiltProgram:
        module = package.module
        inspected = inspect_spirv(module)  # structure: INVALID_ARGUMENT on malformed words
        if inspected.flavour is not Flavour.OPENCL:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                f"an OpenCL SPIR-V package holds a {inspected.flavour.value} module (Shader/GLCompute, not Kernel)",
            )
        inspected.entry_point(package.entry_point)
        if inspected.recursive_functions:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                "OpenCL SPIR-V refused before the driver saw it: it calls functions recursively (function ids "
                f"{list(inspected.recursive_functions[:8])}), which OpenCL C forbids and on which drivers crash",
            )
        if not self.il_version and not self.il_khr:
            raise BackendError(ErrorKind.UNSUPPORTED, NO_IL)
        check_capabilities(inspected, self._spirv_capabilities, device=f"OpenCL device {self._device_name!r}")
        if len(module) > resident_limit:
            raise _resource_limit("the retained SPIR-V module", len(module), resident_limit)

        def build() -> Any:
            if self.il_version:
                with cl_call("clCreateProgramWithIL", "creating a program from OpenCL SPIR-V"):
                    native = self._cl._cl._create_program_with_il(context, module)
            else:
                native = create_program_with_il_khr(self._cl, context, self._platform, module)
            self._build_native(native, package.build_options, "OpenCL SPIR-V")
            return native

        native = self._kept(context, "il", module, package.build_options, build)
        binary = self._binary_of(native)
        return BuiltProgram(native, self._kernel(native, package), binary, len(binary) + len(module), False)

    # -- native helpers -------------------------------------------------------------

    def _kept(self, context: Any, kind: str, module: bytes, options: str, build: Callable[[], Any]) -> Any:
        """The native program kept for this module and options in ``context``, else ``build()`` kept."""
        key = (int(context.int_ptr), kind, hashlib.sha256(module).digest(), options)
        kept = self._natives.get(key)
        if kept is not None:
            self._natives.move_to_end(key)
            return kept[1]
        native = build()
        self._natives[key] = (context, native)
        while len(self._natives) > NATIVE_PROGRAMS_KEPT:
            self._natives.popitem(last=False)  # its kernels keep it alive (the driver's reference) while used
        return native

    def _program_from_binary(self, context: Any, binary: bytes, options: str) -> Any:
        def build() -> Any:
            with cl_call("clCreateProgramWithBinary", "creating a program from a device binary"):
                native = self._cl._cl._Program(context, [self._device], [binary])
            self._build_native(native, options, "device binary")
            return native

        return self._kept(context, "binary", binary, options, build)

    def _build_native(self, native: Any, options: str, what: str) -> None:
        cl = self._cl
        try:
            native._build(options=options.encode("utf-8"), devices=[self._device])
        except cl.Error as exc:
            try:
                log = str(native.get_build_info(self._device, cl.program_build_info.LOG)).strip()
            except cl.Error:
                log = "(no build log)"
            raise error_from_status(
                int(exc.code),
                "clBuildProgram",
                f"building the {what} failed with options {options!r}; build log:\n{_log_excerpt(log)}",
            ) from None

    def _binary_of(self, native: Any) -> bytes:
        with cl_call("clGetProgramInfo", "reading the program binary"):
            blobs = native.get_info(self._cl.program_info.BINARIES)
        return bytes(blobs[0])

    def _kernel(self, native: Any, package: KernelPackage) -> Any:
        cl = self._cl
        try:
            return cl._cl.Kernel(native, package.entry_point)
        except cl.Error as exc:
            try:
                names = str(native.get_info(cl.program_info.KERNEL_NAMES))
            except cl.Error:
                names = "?"
            raise error_from_status(
                int(exc.code),
                "clCreateKernel",
                f"entry point {package.entry_point!r} is not a kernel of the module (kernels: {names})",
            ) from None

    @functools.cached_property
    def launch_facts(self) -> DeviceLaunchFacts:
        """Device version, non-uniform work-group support and local memory (read once)."""
        return DeviceLaunchFacts.of(self._cl, self._device)

    def _argument_info(
        self, kernel: Any, num_args: int, package: KernelPackage, context: Any, binary: bytes
    ) -> list[ArgumentInfo] | None:
        """The driver's argument info; where the kernel has none (PoCL builds without
        ``-cl-kernel-arg-info``) and the package sets arguments, from a second program object
        built from the same binary with ``-cl-kernel-arg-info`` added — a build from a binary
        (~2 ms on PoCL, no compile), so the user's program and the cached binary stay as they are."""
        source_key = self._source_key(package) if package.module_kind is ModuleKind.OPENCL_SOURCE else None
        infos = read_argument_info(self._cl, kernel, num_args)
        if infos is not None or not package.arguments or context is None or not binary:
            if infos is not None and source_key is not None:
                remember_argument_info(source_key, infos)  # a source build: a later cached load needs no twin
            return infos
        if source_key is not None:
            known = remembered_argument_info(source_key)
            if known is not None and len(known) == num_args:
                return known  # same source, options and entry point: the same parameters
        cl = self._cl
        options = f"{package.build_options} -cl-kernel-arg-info".strip()
        try:
            native = cl._cl._Program(context, [self._device], [binary])
            native._build(options=options.encode("utf-8"), devices=[self._device])
            infos = read_argument_info(cl, cl._cl.Kernel(native, package.entry_point), num_args)
        except cl.Error:
            infos = None
        if infos is None and package.module_kind is ModuleKind.OPENCL_SOURCE:
            # Intel's CPU runtime 2026.2 keeps no argument info in any program built from a binary, with
            # or without -cl-kernel-arg-info (measured 2026-12-01): a cached load compiles a twin from the
            # source (~80 ms there) so the checks still run.
            try:
                native = cl._cl._Program(context, package.module.decode("utf-8"))
                native._build(options=options.encode("utf-8"), devices=[self._device])
                infos = read_argument_info(cl, cl._cl.Kernel(native, package.entry_point), num_args)
            except (cl.Error, UnicodeDecodeError):
                infos = None
        if infos is not None and source_key is not None:
            remember_argument_info(source_key, infos)
        return infos  # None: no argument info at all, only the driver's size checks apply

    def _check_kernel(
        self, kernel: Any, package: KernelPackage, context: Any = None, binary: bytes = b""
    ) -> tuple[Launch, list[ArgumentInfo] | None]:
        """Arguments, work-group size and launch shape against the built kernel; nothing is set here."""
        cl = self._cl
        entry = package.entry_point
        with cl_call("clGetKernelInfo", "reading the kernel's argument count"):
            num_args = int(kernel.num_args)
        check_argument_indices(package, num_args)
        check_aggregate_arguments(package, self.launch_facts.max_parameter_bytes)
        check_address_width(package, self._address_bits)
        with cl_call("clGetKernelArgInfo", "reading the kernel's argument info"):
            infos = self._argument_info(kernel, num_args, package, context, binary)
        if infos is not None:
            check_argument_info(package, infos)
            check_reflection(package, infos, self._address_bits)
        given = tuple(package.local_size)
        info = cl.kernel_work_group_info
        with cl_call("clGetKernelWorkGroupInfo", "reading the kernel's work-group sizes"):
            limit = int(kernel.get_work_group_info(info.WORK_GROUP_SIZE, self._device))
            required = tuple(int(v) for v in kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, self._device))
            kernel_local = int(kernel.get_work_group_info(info.LOCAL_MEM_SIZE, self._device))
            kernel_private = int(kernel.get_work_group_info(info.PRIVATE_MEM_SIZE, self._device))
        check_private_memory(entry, kernel_private)
        local: tuple[int, ...] | None = given
        if given == ANY_LOCAL_SIZE:
            # "Driver chooses" and a kernel that fixes its size: enqueue the required size (PoCL refuses
            # a NULL local size for such a kernel with CL_INVALID_WORK_GROUP_SIZE; rusticl takes it).
            local = required if any(required) else None
            if local is None and package.dispatch.kind is DispatchKind.FIXED:
                raise BackendError(
                    ErrorKind.INVALID_ARGUMENT,
                    f"kernel {entry!r}: a FIXED dispatch counts work-groups, so it needs a local size "
                    "(ANY_LOCAL_SIZE is for GLOBAL and FROM_BINDING dispatches)",
                )
        elif any(required) and required != given:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"kernel {entry!r} requires work-group size {required} but the package says {given}",
            )
        if local is not None:
            if self._family == "rusticl":
                # Quirk (Mesa 22.3 rusticl, measured 2026-11-30): CL_KERNEL_WORK_GROUP_SIZE reports the
                # SIMD width (32) while kernels run correctly with up to CL_DEVICE_MAX_WORK_GROUP_SIZE.
                limit = self._max_work_group_size
            total = local[0] * local[1] * local[2]
            if total > limit or any(size > most for size, most in zip(local, self._max_work_item_sizes, strict=False)):
                raise BackendError(
                    ErrorKind.INCOMPATIBLE,
                    f"local size {local} ({total} items) does not fit this kernel on this device "
                    f"(work-group limit {limit}, CL_DEVICE_MAX_WORK_ITEM_SIZES {self._max_work_item_sizes})",
                )
        facts = self.launch_facts
        check_local_memory(package, facts.local_mem_bytes, kernel_local)
        launch = Launch(
            None if local is None else (local[0], local[1], local[2]),
            non_uniform_refusal(facts, package.module_kind, package.build_options),
        )
        if package.dispatch.kind is DispatchKind.GLOBAL:
            check_global_fits(entry, package.dispatch.global_size, launch)
        return launch, infos
