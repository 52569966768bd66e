"""Everything checked about a kernel package's SPIR-V before any driver sees it.

Promise: :func:`check_module` returns the inspected module only when (1) the
bytes are well-formed SPIR-V (:func:`accelcore.spirv.inspect_spirv`, then
``spirv-val --target-env vulkan1.2`` when that tool is installed, which also
catches bit flips the structural walk cannot) — else INVALID_ARGUMENT;
(2) it is Vulkan-flavoured, of a SPIR-V version Vulkan 1.2 accepts and needs
only capabilities the device enables — else UNSUPPORTED naming what is
missing; (3) it agrees with the package: the entry point exists with the
package's LocalSize, every descriptor is a single storage buffer in set 0
that the binding table describes, each table row names a descriptor whose
decorations allow the declared access, and push constants fit the
package's one 4-byte count — else INCOMPATIBLE. The validator runs in a
subprocess on a temporary copy of the module; nothing else is retained. Its
output is read as bytes and decoded with replacement (diagnostics echo the
module's own string literals, which need not be UTF-8).

:func:`check_module_remembered` runs the same checks once per (SHA-256 of
the module bytes, the package fields the checks read, the device's
capabilities, name and push-constant limit, the validator path): a key that
passed before passes again without re-walking the module or re-running the
validator. Only passes are remembered (a failing module is checked every
time), at most :data:`CHECKED_CAPACITY` keys (emptied when full). Bytes that
differ in any position have another digest, so they are always checked.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Collection
from functools import cache

from accelcore import BackendError, ErrorKind
from accelcore.package import NO_COUNT_ARGUMENT, KernelPackage, access_allows
from accelcore.spirv import Flavour, SpirvModule, check_capabilities, inspect_spirv

MAX_SPIRV_VERSION = (1, 5)
"""The newest SPIR-V a Vulkan 1.2 instance may consume."""

VALIDATOR_ENV = "ACCEL_VULKAN_SPIRV_VAL"
"""Path of ``spirv-val`` to use; ``off`` disables the external validator (structural checks still run)."""

VALIDATOR_TIMEOUT_S = 30.0


@cache
def validator_path() -> str | None:
    configured = os.environ.get(VALIDATOR_ENV, "").strip()
    if configured.lower() == "off":
        return None
    if configured:
        return configured
    return shutil.which("spirv-val")


_VALIDATED_CAPACITY = 256
_validated: set[tuple[str, bytes]] = set()
"""(validator path, sha256 of module) pairs that passed: a warm load skips the subprocess (~3 ms).
Only passes are remembered, and at most ``_VALIDATED_CAPACITY`` of them (the set is emptied when full)."""


def _run_validator(module: bytes) -> None:
    path = validator_path()
    if path is None:
        return
    key = (path, hashlib.sha256(module).digest())
    if key in _validated:
        return
    with tempfile.NamedTemporaryFile(suffix=".spv") as handle:
        handle.write(module)
        handle.flush()
        try:
            done = subprocess.run(
                [path, "--target-env", "vulkan1.2", handle.name],
                capture_output=True,
                timeout=VALIDATOR_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(
                ErrorKind.UNSUPPORTED, f"cannot run the SPIR-V validator {path} ({exc}); set {VALIDATOR_ENV}=off"
            ) from exc
    if done.returncode != 0:
        # Bytes, decoded leniently: diagnostics echo the module's string literals byte for byte,
        # and a module's bytes are not ours to trust (invalid UTF-8 there must stay a refusal).
        output = done.stderr or done.stdout
        detail = output.decode("utf-8", errors="replace").strip().splitlines()
        first = detail[0] if detail else f"exit status {done.returncode}"
        raise BackendError(ErrorKind.INVALID_ARGUMENT, f"SPIR-V module fails spirv-val (vulkan1.2): {first}")
    if len(_validated) >= _VALIDATED_CAPACITY:
        _validated.clear()
    _validated.add(key)


CHECKED_CAPACITY = 256
"""How many passing (module, package, device) keys :func:`check_module_remembered` keeps."""

_checked: set[tuple[object, ...]] = set()


def check_key(
    package: KernelPackage,
    digest: bytes,
    supported_capabilities: frozenset[str],
    device_name: str,
    max_push_bytes: int,
) -> tuple[object, ...]:
    """Everything :func:`check_module`'s verdict depends on; ``digest`` is the SHA-256 of ``package.module``."""
    return (
        digest,
        package.entry_point,
        tuple(package.local_size),
        tuple(package.bindings),
        package.dispatch.count_argument != NO_COUNT_ARGUMENT,
        supported_capabilities,
        device_name,
        max_push_bytes,
        validator_path(),
    )


def check_module_remembered(
    package: KernelPackage,
    digest: bytes,
    supported_capabilities: frozenset[str],
    device_name: str,
    max_push_bytes: int,
) -> None:
    """:func:`check_module`, skipped when the same key passed before (``digest``: SHA-256 of ``package.module``)."""
    key = check_key(package, digest, supported_capabilities, device_name, max_push_bytes)
    if key in _checked:
        return
    check_module(package, supported_capabilities, device_name, max_push_bytes)
    if len(_checked) >= CHECKED_CAPACITY:
        _checked.clear()
    _checked.add(key)


def _incompatible(message: str) -> BackendError:
    return BackendError(ErrorKind.INCOMPATIBLE, f"package and module disagree: {message}")


def check_module(
    package: KernelPackage, supported_capabilities: Collection[str], device_name: str, max_push_bytes: int
) -> SpirvModule:
    module = inspect_spirv(package.module)
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
    check_capabilities(module, supported_capabilities, device=device_name)
    _run_validator(package.module)
    try:
        entry = module.entry_point(package.entry_point)
    except BackendError as exc:
        raise _incompatible(exc.message) from None
    if entry.local_size is None:
        raise _incompatible(f"entry point {entry.name!r} fixes no LocalSize; the package says {package.local_size}")
    if entry.local_size != tuple(package.local_size):
        raise _incompatible(
            f"entry point {entry.name!r} has LocalSize {entry.local_size}, the package says {tuple(package.local_size)}"
        )
    rows = {row.native_index: row for row in package.bindings}
    for descriptor in module.descriptors:
        where = f"descriptor set {descriptor.set} binding {descriptor.binding}"
        if descriptor.set != 0:
            raise _incompatible(f"{where} is outside set 0, the only set a package's binding table describes")
        if descriptor.descriptor_type != "storage_buffer" or descriptor.count != 1:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"{where} is a {descriptor.descriptor_type} (count {descriptor.count}); "
                "this provider binds single storage buffers only",
            )
        if descriptor.binding not in rows:
            raise _incompatible(f"{where} is not in the package's binding table (native indices {sorted(rows)})")
    for row in package.bindings:
        found = module.descriptor(row.native_index, 0)
        if found is None:
            raise _incompatible(f"slot {row.slot} names binding {row.native_index}, which the module does not declare")
        if not access_allows(found.access, row.access):
            raise _incompatible(
                f"slot {row.slot} declares {row.access.name} but binding {row.native_index} allows only "
                f"{found.access.name} (NonWritable/NonReadable decorations)"
            )
    push = module.push_constant_bytes
    if push is None:
        raise BackendError(
            ErrorKind.UNSUPPORTED, "the module's push-constant block has a size this provider cannot compute"
        )
    has_count = package.dispatch.count_argument != NO_COUNT_ARGUMENT
    if push and not has_count:
        raise _incompatible(f"the module uses {push} bytes of push constants but the package passes no count")
    if push > 4:
        raise _incompatible(f"the module's push constants are {push} bytes; a package passes one 4-byte count")
    if has_count and max_push_bytes < 4:
        raise BackendError(
            ErrorKind.UNSUPPORTED, f"device allows {max_push_bytes} push-constant bytes, the count needs 4"
        )
    return module
