"""Device binaries: what is checked before a driver ever sees their bytes.

Both drivers here abort the whole process on a malformed binary (measured
2026-11-30: PoCL 3.1 trips ``assert``\\ s in ``pocl_binary_deserialize`` or
segfaults on a truncated ``poclbin``; rusticl panics with "unknown version"
and aborts on any header it does not expect). So a device binary reaches the
in-process driver only when it is *trusted*:

1. its package records this device's exact ``TargetIdentity`` (else INCOMPATIBLE);
2. its header passes the structural check of the driver family (PoCL:
   ``poclbin`` magic; rusticl: version-1 header whose length field matches
   and whose payload is SPIR-V) - else INCOMPATIBLE; a rusticl SPIR-V body
   that accelcore's inspector finds malformed is INVALID_ARGUMENT;
3. its SHA-256 is one this process produced itself (a source build) or one
   that already loaded cleanly in an isolated probe process
   (``python -m accel_opencl.binary_probe``); a binary that crashes the
   probe is refused with INVALID_ARGUMENT, and this process survives.

Trust is per process (a set of digests); the probe costs one interpreter
start plus driver initialisation, once per new binary.
"""

from __future__ import annotations

import hashlib
import json
import signal
import struct
import subprocess
import threading

from accelcore import BackendError, ErrorKind
from accelcore._child import child_environment, python_module_command
from accelcore.spirv import inspect_spirv

from .errors import error_from_status

__all__ = ["check_binary_header", "ensure_trusted", "trust"]

PROBE_TIMEOUT_S = 120.0

_trusted: set[bytes] = set()
_lock = threading.Lock()

_RUSTICL_HEADER = struct.Struct("<III")
_RUSTICL_BINARY_TYPES = (1, 2, 4)  # COMPILED_OBJECT, LIBRARY, EXECUTABLE
_SPIRV_MAGIC = 0x07230203


def digest(binary: bytes) -> bytes:
    return hashlib.sha256(binary).digest()


def trust(binary: bytes) -> None:
    """Record ``binary`` as produced or verified by this process."""
    with _lock:
        _trusted.add(digest(binary))


def is_trusted(binary: bytes) -> bool:
    with _lock:
        return digest(binary) in _trusted


def driver_family(platform_name: str) -> str:
    name = platform_name.lower()
    if "portable computing language" in name or "pocl" in name:
        return "pocl"
    if "rusticl" in name:
        return "rusticl"
    return "other"


def _incompatible(message: str) -> BackendError:
    return BackendError(ErrorKind.INCOMPATIBLE, f"device binary refused before the driver saw it: {message}")


def check_binary_header(family: str, binary: bytes) -> None:
    """The structural check of step 2; INCOMPATIBLE naming what is wrong."""
    if not binary:
        raise _incompatible("it is empty")
    if family == "pocl":
        if not binary.startswith(b"poclbin\0") or len(binary) < 64:
            raise _incompatible(f"a PoCL binary starts with b'poclbin\\0' and has a header; got {binary[:8]!r}")
    elif family == "rusticl":
        if len(binary) < _RUSTICL_HEADER.size + 20:
            raise _incompatible(f"a rusticl binary has a 12-byte header and a SPIR-V body; got {len(binary)} bytes")
        version, body, binary_type = _RUSTICL_HEADER.unpack_from(binary)
        if version != 1:
            raise _incompatible(f"rusticl binary version {version} is not 1")
        if body != len(binary) - _RUSTICL_HEADER.size:
            raise _incompatible(f"rusticl header says {body} body bytes but {len(binary) - 12} follow")
        if binary_type not in _RUSTICL_BINARY_TYPES:
            raise _incompatible(f"rusticl binary type {binary_type} is not one of {_RUSTICL_BINARY_TYPES}")
        (magic,) = struct.unpack_from("<I", binary, _RUSTICL_HEADER.size)
        if magic != _SPIRV_MAGIC or body % 4:
            raise _incompatible("the rusticl binary body is not SPIR-V")
        try:
            inspect_spirv(binary[_RUSTICL_HEADER.size :])
        except BackendError as exc:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"device binary refused: its SPIR-V body is malformed ({exc.message})"
            ) from None


def ensure_trusted(binary: bytes, device_index: int, device_uuid: bytes, build_options: str, entry_point: str) -> None:
    """Step 3: return when ``binary`` is trusted; else probe it in a child process."""
    if is_trusted(binary):
        return
    command = python_module_command(
        "accel_opencl.binary_probe", str(device_index), device_uuid.hex(), entry_point, build_options
    )
    try:
        done = subprocess.run(
            command, input=binary, capture_output=True, timeout=PROBE_TIMEOUT_S, env=child_environment(), check=False
        )
    except subprocess.TimeoutExpired:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"device binary refused: loading it in an isolated probe process took over {PROBE_TIMEOUT_S:.0f}s",
        ) from None
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"device binary refused: the driver crashed ({name}) loading it in an isolated probe process",
        )
    try:
        answer = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = done.stderr.decode("utf-8", "replace")[-300:]
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"device binary refused: the probe process exited with {done.returncode} without an answer ({tail!r})",
        ) from None
    if not answer.get("ok"):
        status = answer.get("status")
        message = f"device binary refused by the driver in a probe process: {answer.get('message', '')}"
        if isinstance(status, int):
            raise error_from_status(status, str(answer.get("call", "clBuildProgram")), message)
        raise BackendError(ErrorKind.INVALID_ARGUMENT, message)
    trust(binary)
