"""The reference provider's artifact format and its deterministic built-in programs.

Artifact layout (little-endian), format ``REFERENCE_FORMAT`` ("ACRP")::

    b"ACRP" | u16 version=1 | u16 name_len | name (UTF-8) | u32 pad_len | pad | u32 crc32(all before)

The loader streams the payload segment by segment (bounded chunks), checks the
CRC incrementally and keeps only the program's name: nothing artifact-sized
is ever coalesced.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..contract.errors import BackendError, ErrorKind
from ..contract.flags import AccessMode
from ..contract.ports import ByteSource
from ..contract.program import ArtifactFormat, TargetIdentity

__all__ = [
    "BUILTIN_PROGRAMS",
    "REFERENCE_FORMAT",
    "REFERENCE_TARGET",
    "ReferenceProgram",
    "encode_program",
    "parse_program",
]

REFERENCE_FORMAT = ArtifactFormat(0x50524341)  # b"ACRP" little-endian
REFERENCE_TARGET = TargetIdentity((0x52454631,) + (0,) * 11)  # "REF1"
_MAGIC = b"ACRP"
_VERSION = 1
_CHUNK = 4096
PROGRAM_RESIDENT_BYTES = 256
"""What a loaded reference program retains (its name and slot table), charged against resident_bytes."""

Arrays = Mapping[int, npt.NDArray[np.uint8]]


@dataclass(frozen=True, slots=True)
class ReferenceProgram:
    """A built-in program: its slot table (slot → declared access) and its effect on bound byte views."""

    name: str
    slots: Mapping[int, AccessMode]
    run: Callable[[Arrays], None]
    element_bytes: int = 4


def _u32(view: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]:
    usable = view.nbytes - view.nbytes % 4
    return view[:usable].view(np.uint32)


def _add_u32(arrays: Arrays) -> None:
    a, b, out = _u32(arrays[0]), _u32(arrays[1]), _u32(arrays[2])
    n = min(a.size, b.size, out.size)
    np.add(a[:n], b[:n], out=out[:n])


def _add_and_count(arrays: Arrays) -> None:
    _add_u32(arrays)
    state = _u32(arrays[3])
    state += np.uint32(1)


def _copy(arrays: Arrays) -> None:
    src, dst = arrays[0], arrays[1]
    n = min(src.size, dst.size)
    dst[:n] = src[:n]


def _increment_u32(arrays: Arrays) -> None:
    state = _u32(arrays[0])
    state += np.uint32(1)


def _fill_index_u32(arrays: Arrays) -> None:
    out = _u32(arrays[0])
    out[:] = np.arange(out.size, dtype=np.uint32)


_R, _W, _RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE

BUILTIN_PROGRAMS: Mapping[str, ReferenceProgram] = {
    p.name: p
    for p in (
        ReferenceProgram("add_u32", {0: _R, 1: _R, 2: _W}, _add_u32),
        ReferenceProgram("add_and_count_u32", {0: _R, 1: _R, 2: _W, 3: _RW}, _add_and_count),
        ReferenceProgram("copy", {0: _R, 1: _W}, _copy, element_bytes=1),
        ReferenceProgram("increment_u32", {0: _RW}, _increment_u32),
        ReferenceProgram("fill_index_u32", {0: _W}, _fill_index_u32),
    )
}


def encode_program(name: str, *, padding: int = 0) -> bytes:
    """The artifact bytes of built-in program ``name`` (``padding`` filler bytes make it larger)."""
    if name not in BUILTIN_PROGRAMS:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT, f"unknown reference program {name!r}; built-in: {sorted(BUILTIN_PROGRAMS)}"
        )
    raw = name.encode()
    body = _MAGIC + struct.pack("<HH", _VERSION, len(raw)) + raw + struct.pack("<I", padding) + bytes(padding)
    return body + struct.pack("<I", zlib.crc32(body))


def _bad(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, f"reference artifact: {message}")


def parse_program(payload: ByteSource) -> ReferenceProgram:
    """Stream ``payload`` (bounded chunks, no coalescing), verify it and return the program it names."""
    total = payload.len()
    if total < 16:
        raise _bad(f"{total} bytes is shorter than the 16-byte minimum")
    head = bytearray(8)
    payload.read_at(0, memoryview(head))
    if bytes(head[:4]) != _MAGIC:
        raise _bad(f"magic {bytes(head[:4])!r} is not {_MAGIC!r}")
    version, name_len = struct.unpack_from("<HH", head, 4)
    if version != _VERSION:
        raise BackendError(ErrorKind.INCOMPATIBLE, f"reference artifact version {version} (supported: {_VERSION})")
    if 8 + name_len + 8 > total:
        raise _bad(f"name length {name_len} runs past the {total}-byte artifact")
    name_bytes = bytearray(name_len + 4)
    payload.read_at(8, memoryview(name_bytes))
    (pad_len,) = struct.unpack_from("<I", name_bytes, name_len)
    if 8 + name_len + 4 + pad_len + 4 != total:
        raise _bad(f"declared sizes (name {name_len}, padding {pad_len}) do not add up to {total} bytes")
    crc = 0
    chunk = memoryview(bytearray(min(_CHUNK, total)))
    position = 0
    body = total - 4
    while position < body:
        take = min(chunk.nbytes, body - position)
        payload.read_at(position, chunk[:take])
        crc = zlib.crc32(chunk[:take], crc)
        position += take
    trailer = bytearray(4)
    payload.read_at(body, memoryview(trailer))
    if struct.unpack("<I", trailer)[0] != crc:
        raise _bad("CRC32 mismatch (corrupted artifact)")
    name = bytes(name_bytes[:name_len]).decode(errors="replace")
    program = BUILTIN_PROGRAMS.get(name)
    if program is None:
        raise BackendError(
            ErrorKind.UNSUPPORTED,
            f"reference artifact names unknown program {name!r}; built-in: {sorted(BUILTIN_PROGRAMS)}",
        )
    return program
