"""Flag sets and numbered enums: protocol numbers, from-number constructors, open values."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from accelcore import (
    AcceleratorClass,
    AccessMode,
    BackendError,
    BufferProperties,
    BufferUsage,
    Capabilities,
    ContextFlags,
    ErrorKind,
    MemoryDomain,
    QueueFlags,
)

if TYPE_CHECKING:
    from accelcore.testing.pytest_support import RaisesKind


def test_accelerator_class_numbers() -> None:
    assert [int(c) for c in (AcceleratorClass.OTHER, AcceleratorClass.NPU, AcceleratorClass.GPU)] == [0, 1, 2]
    assert int(AcceleratorClass.DSP) == 3
    assert AcceleratorClass(2) == AcceleratorClass.GPU
    assert str(AcceleratorClass.GPU) == "GPU"


@pytest.mark.parametrize("value", [4, 0x1234, 2**16 - 1])
def test_accelerator_class_unknown_values_stay_representable(value: int) -> None:
    cls = AcceleratorClass(value)
    assert cls.value == value
    assert cls.name == f"UNKNOWN({value})"
    assert cls != AcceleratorClass.OTHER


@pytest.mark.parametrize("value", [-1, 2**16, "2", 2.0, True])
def test_accelerator_class_is_a_16_bit_integer(value: object, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        AcceleratorClass(value)  # type: ignore[arg-type]


def test_capability_numbers_and_groups() -> None:
    assert Capabilities.HOST_VISIBLE_MEMORY == 1 << 0
    assert Capabilities.DEVICE_LOCAL_MEMORY == 1 << 1
    assert Capabilities.EVENT_CANCELLATION == 1 << 2
    assert Capabilities.EXTERNAL_MEMORY == 1 << 3
    assert Capabilities.SECURE_CONTEXTS == 1 << 4
    assert Capabilities.SHARED_MEMORY == 1 << 5
    assert int(Capabilities.memory_domains()) == 0b100011
    assert int(Capabilities.reserved()) == 0b011000


@pytest.mark.parametrize("bit", [6, 17, 40, 63])
def test_capabilities_tolerate_unknown_high_bits(bit: int) -> None:
    caps = Capabilities((1 << bit) | Capabilities.HOST_VISIBLE_MEMORY)
    assert int(caps) == (1 << bit) | 1
    assert Capabilities.HOST_VISIBLE_MEMORY in caps
    assert caps & Capabilities.reserved() == 0


@pytest.mark.parametrize(
    ("caps", "domain", "expected"),
    [
        (Capabilities.HOST_VISIBLE_MEMORY, MemoryDomain.HOST, True),
        (Capabilities.HOST_VISIBLE_MEMORY, MemoryDomain.DEVICE, False),
        (Capabilities.HOST_VISIBLE_MEMORY, MemoryDomain.SHARED, False),
        (Capabilities.DEVICE_LOCAL_MEMORY, MemoryDomain.DEVICE, True),
        (Capabilities.SHARED_MEMORY, MemoryDomain.SHARED, True),
        (Capabilities.SHARED_MEMORY, MemoryDomain.HOST, False),
        (Capabilities.HOST_VISIBLE_MEMORY | Capabilities.SHARED_MEMORY, MemoryDomain.SHARED, True),
    ],
)
def test_memory_domains_map_to_independent_capabilities(
    caps: Capabilities, domain: MemoryDomain, expected: bool
) -> None:
    assert caps.supports_memory_domain(domain) is expected


def test_intent_flag_numbers() -> None:
    assert ContextFlags.SECURE == 1
    assert QueueFlags.IN_ORDER == 1
    # unknown bits are representable so that validation can name them
    assert int(ContextFlags(1 << 31)) == 1 << 31
    assert int(QueueFlags(1 << 7)) == 1 << 7


def test_memory_domain_numbers() -> None:
    assert [int(d) for d in MemoryDomain] == [1, 2, 3]
    assert [MemoryDomain.from_number(n) for n in (1, 2, 3)] == [
        MemoryDomain.HOST,
        MemoryDomain.DEVICE,
        MemoryDomain.SHARED,
    ]


@pytest.mark.parametrize("number", [0, 4, 255, -1, 2**32, True, "1", 1.0, None])
def test_memory_domain_from_unknown_number_is_invalid_argument(number: object, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        MemoryDomain.from_number(number)
    assert repr(number) in info.value.message and "Shared" in info.value.message


def test_access_mode_numbers() -> None:
    assert [int(m) for m in AccessMode] == [1, 2, 3]
    assert [AccessMode.from_number(n) for n in (1, 2, 3)] == [AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE]


@pytest.mark.parametrize("number", [0, 4, 7, -1, False, "2", 2.0])
def test_access_mode_from_unknown_number_is_invalid_argument(number: object, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        AccessMode.from_number(number)
    assert repr(number) in info.value.message and "ReadWrite" in info.value.message


def test_buffer_usage_numbers() -> None:
    assert BufferUsage.TRANSFER_SOURCE == 1 << 0
    assert BufferUsage.TRANSFER_DESTINATION == 1 << 1
    assert BufferUsage.PROGRAM_INPUT == 1 << 2
    assert BufferUsage.PROGRAM_OUTPUT == 1 << 3
    assert BufferUsage.MUTABLE_STATE == 1 << 4
    assert int(BufferUsage.known()) == 0b11111
    assert int(BufferUsage.program_visible()) == 0b11100


def test_buffer_property_numbers() -> None:
    assert BufferProperties.HOST_VISIBLE == 1 << 0
    assert BufferProperties.DEVICE_LOCAL == 1 << 1
    assert BufferProperties.DIRECT_BINDING == 1 << 2
    assert int(BufferProperties.known()) == 0b111


def test_from_number_errors_are_backend_errors() -> None:
    with pytest.raises(BackendError):
        MemoryDomain.from_number(9)
