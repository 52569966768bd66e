"""Device binaries: what is checked before a driver ever sees their bytes.

Both drivers here abort the whole process on a malformed binary (measured
2026-11-30: PoCL 3.1 trips ``assert``\\ s in ``pocl_binary_deserialize`` or
segfaults on a truncated ``poclbin``; rusticl panics with "unknown version"
and aborts on any header it does not expect). So a device binary reaches the
in-process driver only when it is *trusted*:

1. its package records this device's exact ``TargetIdentity`` (else INCOMPATIBLE);
2. its header passes the structural check of the driver family (PoCL:
   ``poclbin`` magic; rusticl: version-1 header whose length field matches
   and whose payload is SPIR-V; Intel's CPU runtime: the ELF container below)
   - else INCOMPATIBLE; a rusticl SPIR-V body that accelcore's inspector
   finds malformed, or whose functions call each other in a cycle (rusticl
   segfaults on those in clCreateKernel), is INVALID_ARGUMENT; other families get no header check
   and rely on step 3;
3. its SHA-256 is one this process produced itself (a source build) or one
   that already loaded cleanly in an isolated probe process
   (``python -m accel_opencl.binary_probe``); a binary that crashes the
   probe is refused with INVALID_ARGUMENT, and this process survives.

Trust is per process (a set of digests); the probe costs one interpreter
start plus driver initialisation, once per new binary.

Intel's oneAPI CPU runtime (platform "Intel(R) OpenCL", measured 2026-12-01 on
2026.2): a binary is a little-endian ELF64 without program headers, e_type
0xff04 (executable, e_machine x86-64) or 0xff02 / 0xff03 (compiled object /
library, e_machine 0), sections ``.ocl.ir`` (LLVM bitcode, always),
``.ocl.meta``, ``.ocl.obj``, ``.ocl.ver`` (executables) and a string table.
The runtime answers CL_INVALID_BINARY for a truncated or out-of-range
container and a build failure for a damaged ``.ocl.obj``, but segfaults on a
damaged ``.ocl.meta`` - which only step 3 catches.
"""

from __future__ import annotations

import hashlib
import json
import signal
import struct
import subprocess
import threading

from accelcore import BackendError, ErrorKind
from accelcore.kernels.spirv import inspect_spirv
from accelcore.support.child import child_environment, python_module_command

from .errors import error_from_status

__all__ = ["check_binary_header", "ensure_trusted", "trust"]

PROBE_TIMEOUT_S = 120.0

_trusted: set[bytes] = set()
_lock = threading.Lock()

_RUSTICL_HEADER = struct.Struct("<III")
_RUSTICL_BINARY_TYPES = (1, 2, 4)  # COMPILED_OBJECT, LIBRARY, EXECUTABLE
_SPIRV_MAGIC = 0x07230203

_ELF64_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_ELF64_SECTION = struct.Struct("<IIQQQQIIQQ")
_INTEL_ELF_TYPES = {0xFF02: 0, 0xFF03: 0, 0xFF04: 62}  # e_type -> e_machine (object, library: 0; executable: x86-64)
_INTEL_MAX_SECTIONS = 64
_SHT_NOBITS = 8
_LLVM_BITCODE_MAGIC = b"BC\xc0\xde"


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
    if name.strip() == "intel(r) opencl":  # the oneAPI CPU runtime ("... Graphics" is the GPU runtime: not this format)
        return "intel-cpu"
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
            module = inspect_spirv(binary[_RUSTICL_HEADER.size :])
        except BackendError as exc:
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT, f"device binary refused: its SPIR-V body is malformed ({exc.message})"
            ) from None
        if module.recursive_functions:
            # Mesa 22.3.6 rusticl segfaults in clCreateKernel on a call cycle (measured 2026-12-01).
            raise BackendError(
                ErrorKind.INVALID_ARGUMENT,
                "device binary refused before the driver saw it: its SPIR-V calls functions recursively "
                f"(function ids {list(module.recursive_functions[:8])}), which OpenCL C forbids and on which "
                "rusticl crashes",
            )
    elif family == "intel-cpu":
        _check_intel_cpu_elf(binary)


def _check_intel_cpu_elf(binary: bytes) -> None:
    """The ELF container of Intel's CPU runtime: header, section table and every section in bounds."""
    if len(binary) < _ELF64_HEADER.size or not binary.startswith(b"\x7fELF\x02\x01"):
        raise _incompatible(f"an Intel CPU binary is a little-endian ELF64 file; got {binary[:8]!r}")
    fields = _ELF64_HEADER.unpack_from(binary)
    e_type, e_machine, shoff, shentsize, shnum, shstrndx = fields[1], fields[2], fields[6], *fields[11:14]
    if _INTEL_ELF_TYPES.get(e_type) != e_machine:
        raise _incompatible(f"ELF type {e_type:#x} / machine {e_machine} is not an Intel CPU OpenCL binary")
    if shentsize != _ELF64_SECTION.size or not 1 < shnum <= _INTEL_MAX_SECTIONS or shstrndx >= shnum:
        raise _incompatible(f"ELF section table shape ({shnum} x {shentsize} bytes, names in {shstrndx}) is not valid")
    if shoff < _ELF64_HEADER.size or shoff + shnum * shentsize > len(binary):
        raise _incompatible(f"ELF section table at {shoff} runs past the {len(binary)}-byte binary")
    sections = [_ELF64_SECTION.unpack_from(binary, shoff + i * shentsize) for i in range(shnum)]
    for index, (_, kind, _, _, offset, size, *_rest) in enumerate(sections):
        if kind != _SHT_NOBITS and offset + size > len(binary):
            raise _incompatible(f"ELF section {index} ({offset}+{size}) runs past the {len(binary)}-byte binary")
    names_offset, names_size = sections[shstrndx][4], sections[shstrndx][5]
    names = binary[names_offset : names_offset + names_size]
    found: dict[str, tuple[int, int]] = {}
    for name_at, _, _, _, offset, size, *_rest in sections:
        end = names.find(b"\0", name_at)
        if name_at >= len(names) or end < 0:
            raise _incompatible(f"an ELF section name at {name_at} lies outside the string table")
        found[names[name_at:end].decode("latin-1")] = (offset, size)
    ir = found.get(".ocl.ir")
    if ir is None or not binary[ir[0] : ir[0] + ir[1]].startswith(_LLVM_BITCODE_MAGIC):
        raise _incompatible("an Intel CPU binary carries LLVM bitcode in an .ocl.ir section; this one does not")


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
