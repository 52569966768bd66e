"""Buffer descriptions, verified allocation info and byte ranges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from ._checks import U64_MAX, check_u32, check_u64, is_power_of_two
from .errors import BackendError, ErrorKind
from .flags import AccessMode, BufferProperties, BufferUsage, MemoryDomain

__all__ = ["AllocatedBuffer", "BufferDesc", "BufferInfo", "BufferRange", "validate_transfer"]

B = TypeVar("B")

_ACCESS_NEEDS = {
    AccessMode.READ: BufferUsage.PROGRAM_INPUT | BufferUsage.MUTABLE_STATE,
    AccessMode.WRITE: BufferUsage.PROGRAM_OUTPUT | BufferUsage.MUTABLE_STATE,
    AccessMode.READ_WRITE: BufferUsage.MUTABLE_STATE,
}

_DOMAIN_NEEDS = {
    MemoryDomain.HOST: BufferProperties.HOST_VISIBLE,
    MemoryDomain.DEVICE: BufferProperties.DEVICE_LOCAL,
    MemoryDomain.SHARED: BufferProperties.HOST_VISIBLE | BufferProperties.DIRECT_BINDING,
}


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, message)


@dataclass(frozen=True, slots=True)
class BufferDesc:
    """A requested buffer: ``bytes`` (nonzero u64), ``alignment`` (power of two),
    ``domain`` and ``usage`` (non-empty, known bits only). Invalid → INVALID_ARGUMENT."""

    bytes: int
    alignment: int
    domain: MemoryDomain
    usage: BufferUsage

    def __post_init__(self) -> None:
        check_u64("BufferDesc.bytes", self.bytes)
        check_u64("BufferDesc.alignment", self.alignment)
        if self.bytes == 0:
            raise _invalid("BufferDesc.bytes must be nonzero")
        if not is_power_of_two(self.alignment):
            raise _invalid(f"BufferDesc.alignment = {self.alignment} is not a nonzero power of two")
        object.__setattr__(self, "domain", MemoryDomain.from_number(self.domain))
        usage = check_u32("BufferDesc.usage", self.usage)
        if usage == 0:
            raise _invalid("BufferDesc.usage is empty; name at least one BufferUsage bit")
        unknown = usage & ~int(BufferUsage.known())
        if unknown:
            raise _invalid(f"BufferDesc.usage has unknown bits {unknown:#x} (known: {int(BufferUsage.known()):#x})")
        object.__setattr__(self, "usage", BufferUsage(usage))

    def allows_access(self, mode: AccessMode) -> bool:
        """Whether the usage permits a program binding with ``mode``."""
        return bool(self.usage & _ACCESS_NEEDS[AccessMode.from_number(mode)])

    def is_program_visible(self) -> bool:
        """Whether a program may bind it: any of PROGRAM_INPUT, PROGRAM_OUTPUT, MUTABLE_STATE."""
        return bool(self.usage & BufferUsage.program_visible())


@dataclass(frozen=True, slots=True)
class BufferInfo:
    """Verified properties of one provider allocation for ``desc``.

    Zero ``allocation_bytes`` / ``alignment`` or unknown property bits →
    INVALID_ARGUMENT; a backing smaller than requested, a non-power-of-two or
    weaker alignment, missing domain properties (an empty property set included)
    or a program-visible buffer without DIRECT_BINDING → INCOMPATIBLE.
    """

    desc: BufferDesc
    allocation_bytes: int
    alignment: int
    properties: BufferProperties

    def __post_init__(self) -> None:
        if not isinstance(self.desc, BufferDesc):
            raise _invalid(f"BufferInfo.desc must be a BufferDesc, got {type(self.desc).__name__}")
        check_u64("BufferInfo.allocation_bytes", self.allocation_bytes)
        check_u64("BufferInfo.alignment", self.alignment)
        props = check_u32("BufferInfo.properties", self.properties)
        if self.allocation_bytes == 0:
            raise _invalid("BufferInfo.allocation_bytes must be nonzero")
        if self.alignment == 0:
            raise _invalid("BufferInfo.alignment must be nonzero")
        unknown = props & ~int(BufferProperties.known())
        if unknown:
            raise _invalid(
                f"BufferInfo.properties has unknown bits {unknown:#x} (known: {int(BufferProperties.known()):#x})"
            )
        object.__setattr__(self, "properties", BufferProperties(props))
        desc = self.desc
        if self.allocation_bytes < desc.bytes:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"allocation of {self.allocation_bytes} bytes is smaller than the requested {desc.bytes}",
            )
        if not is_power_of_two(self.alignment):
            raise BackendError(ErrorKind.INCOMPATIBLE, f"allocation alignment {self.alignment} is not a power of two")
        if self.alignment < desc.alignment:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"allocation alignment {self.alignment} is weaker than the requested {desc.alignment}",
            )
        needed = _DOMAIN_NEEDS[desc.domain]
        if props & needed != needed:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                f"{desc.domain.name} buffer needs properties {needed!r}, backing has {self.properties!r}",
            )
        if desc.is_program_visible() and not props & BufferProperties.DIRECT_BINDING:
            raise BackendError(
                ErrorKind.INCOMPATIBLE,
                "a program-visible buffer must be directly bindable (DIRECT_BINDING missing)",
            )


@dataclass(frozen=True, slots=True)
class AllocatedBuffer(Generic[B]):
    """A newly allocated native buffer handle and its verified backing properties."""

    buffer: B
    info: BufferInfo


@dataclass(frozen=True, slots=True)
class BufferRange:
    """``bytes`` bytes starting at ``offset``. Zero bytes → INVALID_ARGUMENT; end past u64 → OUT_OF_BOUNDS."""

    offset: int
    bytes: int

    def __post_init__(self) -> None:
        check_u64("BufferRange.offset", self.offset)
        check_u64("BufferRange.bytes", self.bytes)
        if self.bytes == 0:
            raise _invalid("BufferRange.bytes must be nonzero")
        if self.offset + self.bytes > U64_MAX:
            raise BackendError(
                ErrorKind.OUT_OF_BOUNDS,
                f"BufferRange offset {self.offset} + bytes {self.bytes} overflows u64",
            )

    def end(self) -> int:
        """One past the last byte."""
        return self.offset + self.bytes

    @classmethod
    def whole(cls, desc: BufferDesc | BufferInfo) -> BufferRange:
        size = desc.desc.bytes if isinstance(desc, BufferInfo) else desc.bytes
        return cls(0, size)


_SOURCE, _DESTINATION = int(BufferUsage.TRANSFER_SOURCE), int(BufferUsage.TRANSFER_DESTINATION)


def validate_transfer(desc: BufferDesc, offset: object, length: int, *, write: bool) -> int:
    """The device-independent checks of one ``write_buffer`` / ``read_buffer``; returns ``offset``.

    ``offset`` not a u64 → INVALID_ARGUMENT; a write without TRANSFER_DESTINATION or a read without
    TRANSFER_SOURCE → PERMISSION_DENIED; a transfer that does not start inside the buffer or ends
    past it → OUT_OF_BOUNDS. Every provider and the engine call this one check, so the same
    condition gives the same kind and wording everywhere.
    """
    size = desc.bytes
    if type(offset) is int and 0 <= offset < size and offset + length <= size:
        # The common case in one pass of plain ints (an IntFlag ``&`` builds a flag object).
        if int.__and__(desc.usage, _DESTINATION if write else _SOURCE):
            return offset
    verb = "write_buffer" if write else "read_buffer"
    start = check_u64(f"{verb} offset", offset)
    needed = BufferUsage.TRANSFER_DESTINATION if write else BufferUsage.TRANSFER_SOURCE
    if not desc.usage & needed:
        raise BackendError(
            ErrorKind.PERMISSION_DENIED,
            f"{verb} needs buffer usage {needed.name}; the buffer's usage is {desc.usage!r}",
        )
    if start >= desc.bytes or start + length > desc.bytes:
        raise BackendError(
            ErrorKind.OUT_OF_BOUNDS,
            f"{verb} of {length} bytes at offset {start} is outside the buffer's {desc.bytes} bytes "
            f"(valid: offset < {desc.bytes} and offset + length <= {desc.bytes})",
        )
    return start
