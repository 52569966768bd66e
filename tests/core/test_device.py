"""DeviceIdentity, DeviceLimits, DeviceInfo.validate and the metadata validators."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from accelcore import (
    AcceleratorClass,
    BufferDesc,
    BufferInfo,
    BufferProperties,
    BufferUsage,
    Capabilities,
    ContextDesc,
    ContextFlags,
    DeviceIdentity,
    DeviceInfo,
    DeviceInfoError,
    DeviceInfoErrorKind,
    DeviceLimits,
    ErrorKind,
    MemoryDomain,
    QueueDesc,
    QueueFlags,
)

if TYPE_CHECKING:
    from accelcore.testing.pytest_support import RaisesKind

LIMIT_FIELDS = [f.name for f in dataclasses.fields(DeviceLimits)]
U64_LIMITS = {"max_buffer_bytes", "max_artifact_bytes", "total_memory_bytes"}


def limits(**overrides: int) -> DeviceLimits:
    values: dict[str, int] = {
        "max_contexts": 4,
        "max_buffers_per_context": 64,
        "max_programs_per_context": 8,
        "max_queues_per_context": 2,
        "max_events_per_context": 16,
        "max_bindings_per_submission": 8,
        "max_buffer_bytes": 1 << 20,
        "max_artifact_bytes": 1 << 16,
    }
    values.update(overrides)
    return DeviceLimits(**values)


IDENTITY = DeviceIdentity(bytes(range(16)), AcceleratorClass.GPU, 0x10005, 7)
HOST = Capabilities.HOST_VISIBLE_MEMORY


def device(caps: int = HOST, **limit_overrides: int) -> DeviceInfo:
    return DeviceInfo(IDENTITY, Capabilities(caps), limits(**limit_overrides))


def reason_of(info: DeviceInfo) -> DeviceInfoErrorKind:
    with pytest.raises(DeviceInfoError) as error:
        info.validate()
    return error.value.reason


# --------------------------------------------------------------------------- identity and limits


def test_device_identity_fields() -> None:
    assert IDENTITY.uuid == bytes(range(16))
    assert IDENTITY.class_ == AcceleratorClass.GPU
    assert (IDENTITY.vendor_id, IDENTITY.device_id) == (0x10005, 7)
    assert IDENTITY.uuid_hex == "00010203-0405-0607-0809-0a0b0c0d0e0f"


@pytest.mark.parametrize("uuid", [b"", bytes(15), bytes(17), "0" * 16, None])
def test_device_identity_uuid_must_be_16_bytes(uuid: Any, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        DeviceIdentity(uuid, AcceleratorClass.OTHER, 0, 0)
    assert "16 bytes" in info.value.message


def test_device_identity_accepts_bytes_like_uuid_and_numeric_class() -> None:
    identity = DeviceIdentity(bytearray(16), 0x77, 1, 2)  # type: ignore[arg-type]
    assert identity.uuid == bytes(16) and isinstance(identity.uuid, bytes)
    assert identity.class_ == AcceleratorClass(0x77)


@pytest.mark.parametrize(("vendor", "device_id"), [(-1, 0), (2**32, 0), (0, -1), (0, 2**32)])
def test_device_identity_ids_are_u32(vendor: int, device_id: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        DeviceIdentity(bytes(16), AcceleratorClass.OTHER, vendor, device_id)


@pytest.mark.parametrize("field", LIMIT_FIELDS)
def test_device_limit_width(field: str, raises_kind: RaisesKind) -> None:
    maximum = 2**64 - 1 if field in U64_LIMITS else 2**32 - 1
    assert getattr(limits(**{field: maximum}), field) == maximum
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        limits(**{field: maximum + 1})
    assert field in info.value.message
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        limits(**{field: -1})


# --------------------------------------------------------------------------- DeviceInfo.validate


def test_valid_device_info_validates() -> None:
    device().validate()
    device(Capabilities.DEVICE_LOCAL_MEMORY | Capabilities.EVENT_CANCELLATION).validate()
    device(Capabilities.SHARED_MEMORY).validate()


@pytest.mark.parametrize("reserved", [Capabilities.EXTERNAL_MEMORY, Capabilities.SECURE_CONTEXTS])
def test_reserved_capabilities_are_rejected(reserved: Capabilities) -> None:
    assert reason_of(device(HOST | reserved)) is DeviceInfoErrorKind.RESERVED_CAPABILITIES


def test_missing_memory_domain_is_rejected() -> None:
    assert reason_of(device(Capabilities.EVENT_CANCELLATION)) is DeviceInfoErrorKind.MISSING_MEMORY_DOMAIN
    assert reason_of(device(0)) is DeviceInfoErrorKind.MISSING_MEMORY_DOMAIN


@pytest.mark.parametrize("field", LIMIT_FIELDS)
def test_any_zero_limit_is_rejected_and_named(field: str) -> None:
    with pytest.raises(DeviceInfoError) as error:
        device(**{field: 0}).validate()
    assert error.value.reason is DeviceInfoErrorKind.ZERO_LIMIT
    assert error.value.field == field
    assert field in str(error.value)


def test_unknown_high_capability_bits_do_not_invalidate_metadata() -> None:
    info = device(HOST | (1 << 40) | (1 << 63))
    info.validate()
    assert int(info.capabilities) == 1 | (1 << 40) | (1 << 63)


@pytest.mark.parametrize("caps", [-1, 2**64])
def test_capabilities_are_a_u64(caps: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        DeviceInfo(IDENTITY, caps, limits())  # type: ignore[arg-type]


def test_device_info_parts_must_have_their_types(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        DeviceInfo(IDENTITY, HOST, limits().as_dict())  # type: ignore[arg-type]
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        DeviceInfo(None, HOST, limits())  # type: ignore[arg-type]


def test_device_info_is_immutable_and_comparable() -> None:
    assert device() == device()
    with pytest.raises(dataclasses.FrozenInstanceError):
        device().capabilities = Capabilities(0)  # type: ignore[misc]


def test_has() -> None:
    info = device(HOST | Capabilities.EVENT_CANCELLATION)
    assert info.has(Capabilities.EVENT_CANCELLATION)
    assert not info.has(Capabilities.SHARED_MEMORY)


# --------------------------------------------------------------------------- intent descriptors


def test_empty_context_and_queue_descs_are_supported() -> None:
    device().validate_context_desc(ContextDesc())
    device().validate_queue_desc(QueueDesc())
    assert ContextDesc().flags == 0 and QueueDesc().flags == 0


@pytest.mark.parametrize("flags", [ContextFlags.SECURE, ContextFlags(1 << 9), ContextFlags(2**32 - 1)])
def test_non_empty_context_flags_are_unsupported(flags: ContextFlags, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        device().validate_context_desc(ContextDesc(flags))
    assert f"{int(flags):#x}" in info.value.message


@pytest.mark.parametrize("flags", [QueueFlags.IN_ORDER, QueueFlags(1 << 3)])
def test_non_empty_queue_flags_are_unsupported(flags: QueueFlags, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        device().validate_queue_desc(QueueDesc(flags))
    assert f"{int(flags):#x}" in info.value.message


@pytest.mark.parametrize("flags", [-1, 2**32, "1"])
def test_intent_flags_are_u32(flags: Any, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        ContextDesc(flags)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        QueueDesc(flags)


# --------------------------------------------------------------------------- buffers against the device


def bdesc(bytes_: int = 64, domain: MemoryDomain = MemoryDomain.HOST) -> BufferDesc:
    return BufferDesc(bytes_, 16, domain, BufferUsage.TRANSFER_SOURCE)


def test_validate_buffer_desc_accepts_up_to_max_buffer_bytes() -> None:
    device(max_buffer_bytes=4096).validate_buffer_desc(bdesc(4096))


def test_validate_buffer_desc_too_large_is_resource_limit(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as info:
        device(max_buffer_bytes=4096).validate_buffer_desc(bdesc(4097))
    assert "4097" in info.value.message and "4096" in info.value.message


@pytest.mark.parametrize(
    ("caps", "domain"),
    [
        (Capabilities.HOST_VISIBLE_MEMORY, MemoryDomain.DEVICE),
        (Capabilities.HOST_VISIBLE_MEMORY, MemoryDomain.SHARED),
        (Capabilities.DEVICE_LOCAL_MEMORY, MemoryDomain.HOST),
        (Capabilities.SHARED_MEMORY, MemoryDomain.HOST),
    ],
)
def test_validate_buffer_desc_unadvertised_domain_is_unsupported(
    caps: Capabilities, domain: MemoryDomain, raises_kind: RaisesKind
) -> None:
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        device(caps).validate_buffer_desc(bdesc(domain=domain))
    assert domain.name in info.value.message


def test_validate_buffer_desc_checks_size_before_domain(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        device(Capabilities.HOST_VISIBLE_MEMORY, max_buffer_bytes=8).validate_buffer_desc(
            bdesc(64, MemoryDomain.DEVICE)
        )


def test_validate_buffer_info_accepts_the_requested_desc() -> None:
    d = bdesc()
    device().validate_buffer_info(d, BufferInfo(d, 4096, 4096, BufferProperties.HOST_VISIBLE))


def test_validate_buffer_info_other_desc_is_incompatible(raises_kind: RaisesKind) -> None:
    requested = bdesc(64)
    actual = BufferInfo(bdesc(128), 128, 16, BufferProperties.HOST_VISIBLE)
    with raises_kind(ErrorKind.INCOMPATIBLE):
        device().validate_buffer_info(requested, actual)


def test_validate_buffer_info_runs_the_buffer_check_first(raises_kind: RaisesKind) -> None:
    requested = bdesc(64, MemoryDomain.DEVICE)
    actual = BufferInfo(bdesc(64), 64, 16, BufferProperties.HOST_VISIBLE)  # also a desc mismatch
    with raises_kind(ErrorKind.UNSUPPORTED):
        device(Capabilities.HOST_VISIBLE_MEMORY).validate_buffer_info(requested, actual)
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        device(max_buffer_bytes=32).validate_buffer_info(bdesc(64), actual)


def test_validate_event_cancellation(raises_kind: RaisesKind) -> None:
    device(HOST | Capabilities.EVENT_CANCELLATION).validate_event_cancellation()
    with raises_kind(ErrorKind.UNSUPPORTED) as info:
        device(HOST).validate_event_cancellation()
    assert "EVENT_CANCELLATION" in info.value.message


def test_validate_reports_reserved_bits_then_missing_domain_then_zero_limit() -> None:
    everything_wrong = device(Capabilities.SECURE_CONTEXTS, max_contexts=0)
    assert reason_of(everything_wrong) is DeviceInfoErrorKind.RESERVED_CAPABILITIES
    assert reason_of(device(0, max_contexts=0)) is DeviceInfoErrorKind.MISSING_MEMORY_DOMAIN
