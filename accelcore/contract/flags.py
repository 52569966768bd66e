"""Flag sets and numbered enums of the contract, with their protocol numbers."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from ._checks import U16_MAX, check_uint
from .errors import BackendError, ErrorKind

__all__ = [
    "AcceleratorClass",
    "AccessMode",
    "BufferProperties",
    "BufferUsage",
    "Capabilities",
    "ContextFlags",
    "MemoryDomain",
    "QueueFlags",
    "access_allows",
]


@dataclass(frozen=True, slots=True)
class AcceleratorClass:
    """Extensible 16-bit accelerator class; unknown values stay representable."""

    value: int

    OTHER: ClassVar[AcceleratorClass]
    NPU: ClassVar[AcceleratorClass]
    GPU: ClassVar[AcceleratorClass]
    DSP: ClassVar[AcceleratorClass]

    def __post_init__(self) -> None:
        check_uint("AcceleratorClass", self.value, U16_MAX)

    @property
    def name(self) -> str:
        return _CLASS_NAMES.get(self.value, f"UNKNOWN({self.value})")

    def __str__(self) -> str:
        return self.name

    def __int__(self) -> int:
        return self.value


AcceleratorClass.OTHER = AcceleratorClass(0)
AcceleratorClass.NPU = AcceleratorClass(1)
AcceleratorClass.GPU = AcceleratorClass(2)
AcceleratorClass.DSP = AcceleratorClass(3)
_CLASS_NAMES = {0: "OTHER", 1: "NPU", 2: "GPU", 3: "DSP"}


class Capabilities(enum.IntFlag, boundary=enum.KEEP):
    """Semantic capabilities of a backend (64-bit); unknown high bits are tolerated."""

    HOST_VISIBLE_MEMORY = 1 << 0
    DEVICE_LOCAL_MEMORY = 1 << 1
    EVENT_CANCELLATION = 1 << 2
    EXTERNAL_MEMORY = 1 << 3
    """Reserved: a valid DeviceInfo never sets it."""
    SECURE_CONTEXTS = 1 << 4
    """Reserved: a valid DeviceInfo never sets it."""
    SHARED_MEMORY = 1 << 5

    @classmethod
    def memory_domains(cls) -> Capabilities:
        return cls.HOST_VISIBLE_MEMORY | cls.DEVICE_LOCAL_MEMORY | cls.SHARED_MEMORY

    @classmethod
    def reserved(cls) -> Capabilities:
        return cls.EXTERNAL_MEMORY | cls.SECURE_CONTEXTS

    def supports_memory_domain(self, domain: MemoryDomain) -> bool:
        """Whether these capabilities offer allocations in ``domain``."""
        needed = MemoryDomain.from_number(domain).capability
        return self & needed == needed


class ContextFlags(enum.IntFlag, boundary=enum.KEEP):
    """Context intent flags (u32). Only the empty set is supported."""

    SECURE = 1 << 0
    """Reserved."""


class QueueFlags(enum.IntFlag, boundary=enum.KEEP):
    """Execution-queue intent flags (u32). Only the empty set is supported."""

    IN_ORDER = 1 << 0
    """Reserved."""


_Numbered = TypeVar("_Numbered", bound=enum.IntEnum)


def _numbered(kind: type[_Numbered], numbers: frozenset[int], number: object, what: str) -> _Numbered:
    """The member of ``kind`` numbered ``number`` (an int, not a bool, among ``numbers``); anything else is
    INVALID_ARGUMENT listing numbers and names: "access mode 7 is not one of 1 (Read), 2 (Write), 3 (ReadWrite)"."""
    if isinstance(number, int) and not isinstance(number, bool) and number in numbers:
        return kind(number)
    choices = ", ".join(f"{int(member)} ({member.name.title().replace('_', '')})" for member in kind)
    raise BackendError(ErrorKind.INVALID_ARGUMENT, f"{what} {number!r} is not one of {choices}")


class MemoryDomain(enum.IntEnum):
    """Where a buffer lives. ``SHARED`` is one allocation both host-visible and directly bindable."""

    HOST = 1
    DEVICE = 2
    SHARED = 3

    @classmethod
    def from_number(cls, number: object) -> MemoryDomain:
        """The domain numbered ``number``; anything but 1, 2 or 3 → INVALID_ARGUMENT."""
        return _numbered(cls, _DOMAIN_NUMBERS, number, "memory domain")

    @property
    def capability(self) -> Capabilities:
        """The capability bit a device must advertise to offer this domain."""
        return _DOMAIN_CAPABILITY[self]


_DOMAIN_NUMBERS = frozenset(int(d) for d in MemoryDomain)
_DOMAIN_CAPABILITY = {
    MemoryDomain.HOST: Capabilities.HOST_VISIBLE_MEMORY,
    MemoryDomain.DEVICE: Capabilities.DEVICE_LOCAL_MEMORY,
    MemoryDomain.SHARED: Capabilities.SHARED_MEMORY,
}


class AccessMode(enum.IntEnum):
    """How a program uses a bound buffer range."""

    READ = 1
    WRITE = 2
    READ_WRITE = 3

    @classmethod
    def from_number(cls, number: object) -> AccessMode:
        """The mode numbered ``number``; anything but 1, 2 or 3 → INVALID_ARGUMENT."""
        return _numbered(cls, _ACCESS_NUMBERS, number, "access mode")


_ACCESS_NUMBERS = frozenset(int(m) for m in AccessMode)


def access_allows(declared: AccessMode, requested: AccessMode) -> bool:
    """Whether a kernel that declares ``declared`` accepts a binding with ``requested``.

    Access modes are bit sets (READ=1, WRITE=2, READ_WRITE=3): requested ⊆ declared.
    """
    return int(requested) & ~int(declared) == 0


class BufferUsage(enum.IntFlag, boundary=enum.KEEP):
    """What a buffer may be used for."""

    TRANSFER_SOURCE = 1 << 0
    """May be read by read_buffer."""
    TRANSFER_DESTINATION = 1 << 1
    """May be written by write_buffer."""
    PROGRAM_INPUT = 1 << 2
    PROGRAM_OUTPUT = 1 << 3
    MUTABLE_STATE = 1 << 4

    @classmethod
    def known(cls) -> BufferUsage:
        return cls(0b11111)

    @classmethod
    def program_visible(cls) -> BufferUsage:
        return cls.PROGRAM_INPUT | cls.PROGRAM_OUTPUT | cls.MUTABLE_STATE

    @classmethod
    def for_access(cls, access: AccessMode) -> BufferUsage:
        """The one program usage bit that allows a binding with ``access``:
        READ → PROGRAM_INPUT, WRITE → PROGRAM_OUTPUT, READ_WRITE → MUTABLE_STATE."""
        mode = AccessMode.from_number(int(access))
        if mode is AccessMode.READ:
            return cls.PROGRAM_INPUT
        if mode is AccessMode.WRITE:
            return cls.PROGRAM_OUTPUT
        return cls.MUTABLE_STATE


class BufferProperties(enum.IntFlag, boundary=enum.KEEP):
    """Properties of the real backing of an allocation."""

    HOST_VISIBLE = 1 << 0
    DEVICE_LOCAL = 1 << 1
    DIRECT_BINDING = 1 << 2

    @classmethod
    def known(cls) -> BufferProperties:
        return cls(0b111)
