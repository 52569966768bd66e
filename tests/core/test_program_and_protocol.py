"""ArtifactFormat, TargetIdentity, ArtifactRef and the Accelerator protocol's shape."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, get_type_hints

import pytest

import accelcore
from accelcore import (
    Accelerator,
    ArtifactFormat,
    ArtifactRef,
    BackendError,
    ErrorKind,
    MemorySource,
    TargetIdentity,
)

if TYPE_CHECKING:
    from accelcore.testing.pytest_support import RaisesKind


def test_artifact_format_is_a_nonzero_u32(raises_kind: RaisesKind) -> None:
    assert int(ArtifactFormat(1)) == 1
    assert ArtifactFormat(2**32 - 1).value == 2**32 - 1
    for bad in (0, -1, 2**32):
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            ArtifactFormat(bad)


def test_target_identity_is_twelve_u32_words(raises_kind: RaisesKind) -> None:
    assert TargetIdentity.any().words == (0,) * 12
    assert TargetIdentity(list(range(12))).words == tuple(range(12))  # type: ignore[arg-type]
    for words in [(0,) * 11, (0,) * 13, ()]:
        with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
            TargetIdentity(words)
        assert "12" in info.value.message
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        TargetIdentity((0,) * 11 + (2**32,))
    assert "word 11" in info.value.message


def test_artifact_ref_fields_and_nonzero_resident_bytes(raises_kind: RaisesKind) -> None:
    payload = MemorySource(b"abc", b"def")
    ref = ArtifactRef(ArtifactFormat(7), TargetIdentity.any(), payload, 4096)
    assert ref.payload is payload and ref.resident_bytes == 4096
    for bad in (0, -1, 2**64):
        with raises_kind(ErrorKind.INVALID_ARGUMENT):
            ArtifactRef(ArtifactFormat(7), TargetIdentity.any(), payload, bad)


def test_artifact_ref_wraps_a_plain_buffer_payload_without_copying() -> None:
    data = bytearray(b"module bytes")
    ref = ArtifactRef(ArtifactFormat(7), TargetIdentity.any(), data, 64)  # type: ignore[arg-type]
    data[0:6] = b"MODULE"  # the view sees the caller's memory: nothing was copied
    out = bytearray(ref.payload.len())
    ref.payload.read_at(0, memoryview(out))
    assert bytes(out) == b"MODULE bytes"


@pytest.mark.parametrize(
    ("field", "value"), [("format", 7), ("target", (0,) * 12), ("payload", "text"), ("payload", None)]
)
def test_artifact_ref_rejects_wrong_field_types(field: str, value: Any, raises_kind: RaisesKind) -> None:
    fields: dict[str, Any] = {
        "format": ArtifactFormat(7),
        "target": TargetIdentity.any(),
        "payload": b"x",
        "resident_bytes": 8,
    }
    fields[field] = value
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        ArtifactRef(**fields)


# --------------------------------------------------------------------------- Accelerator protocol

METHODS = [
    "device_info",
    "create_context",
    "destroy_context",
    "allocate_buffer",
    "write_buffer",
    "read_buffer",
    "free_buffer",
    "load_program",
    "unload_program",
    "create_queue",
    "destroy_queue",
    "submit",
    "poll_event",
    "destroy_event",
    "cancel_event",
]


def test_accelerator_protocol_has_exactly_the_trait_methods_each_documented() -> None:
    declared = [
        name for name, member in vars(Accelerator).items() if inspect.isfunction(member) and not name.startswith("_")
    ]
    assert sorted(declared) == sorted(METHODS)


@pytest.mark.parametrize("name", METHODS)
def test_every_method_states_its_four_promises(name: str) -> None:
    # The seed's four headings: ownership, progress, failure, copies.
    doc = inspect.getdoc(getattr(Accelerator, name)) or ""
    for heading in ("Ownership:", "Progress:", "Failure:", "Copies:"):
        assert heading in doc, f"Accelerator.{name} docstring lacks {heading!r}"


def test_accelerator_protocol_is_generic_over_five_handle_types() -> None:
    assert len(Accelerator.__parameters__) == 5


def test_submit_signature_matches_the_trait() -> None:
    hints = get_type_hints(Accelerator.submit, globalns=vars(accelcore.contract.accelerator))
    assert list(inspect.signature(Accelerator.submit).parameters) == ["self", "queue", "program", "bindings", "timeout"]
    assert hints["timeout"] is accelcore.Timeout
    assert getattr(hints["bindings"], "__origin__", None) is Sequence


def test_cancel_event_defaults_to_unsupported() -> None:
    class Minimal(Accelerator[int, int, int, int, int]):
        pass

    with pytest.raises(BackendError) as info:
        Minimal().cancel_event(1)
    assert info.value.kind is ErrorKind.UNSUPPORTED
