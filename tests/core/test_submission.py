"""Timeout, BindingRef, validate_bindings / validate_for_submit, EventState."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest

from accelcore import (
    AccessMode,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ErrorKind,
    EventState,
    EventStatus,
    MemoryDomain,
    Timeout,
    validate_binding_ranges,
    validate_bindings,
    validate_program_bindings,
)

if TYPE_CHECKING:
    from accelcore.testing.pytest_support import RaisesKind

U64_MAX = 2**64 - 1
R, W, RW = AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE


def bind(
    slot: int, access: AccessMode = R, buffer: object = "buf", offset: int = 0, size: int = 16
) -> BindingRef[object]:
    return BindingRef(slot, buffer, BufferRange(offset, size), access)


def bdesc(usage: BufferUsage, size: int = 64) -> BufferDesc:
    return BufferDesc(size, 16, MemoryDomain.HOST, usage)


# --------------------------------------------------------------------------- Timeout


def test_timeout_infinite_and_after_ns() -> None:
    assert Timeout.INFINITE.is_infinite
    assert Timeout.INFINITE.ns is None
    five = Timeout.after_ns(5)
    assert not five.is_infinite and five.ns == 5


def test_timeout_after_zero_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        Timeout.after_ns(0)
    assert "INFINITE" in info.value.message


@pytest.mark.parametrize("ns", [-1, 2**64])
def test_timeout_is_a_u64(ns: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        Timeout.after_ns(ns)
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        Timeout.from_wire(ns)


def test_timeout_wire_zero_is_infinite_both_ways() -> None:
    assert Timeout.from_wire(0) == Timeout.INFINITE
    assert Timeout.from_wire(0).is_infinite
    assert Timeout.INFINITE.to_wire() == 0


@pytest.mark.parametrize("ns", [1, 42, 10**9, U64_MAX])
def test_timeout_wire_nonzero_is_after_ns(ns: int) -> None:
    assert Timeout.from_wire(ns) == Timeout.after_ns(ns)
    assert Timeout.after_ns(ns).to_wire() == ns


# --------------------------------------------------------------------------- BindingRef


def test_binding_ref_fields() -> None:
    buffer = object()
    b = BindingRef(3, buffer, BufferRange(8, 8), AccessMode.WRITE)
    assert (b.slot, b.buffer, b.range, b.access) == (3, buffer, BufferRange(8, 8), AccessMode.WRITE)


def test_binding_ref_normalises_a_numeric_access() -> None:
    assert BindingRef(0, None, BufferRange(0, 1), 3).access is AccessMode.READ_WRITE  # type: ignore[arg-type]


@pytest.mark.parametrize("access", [0, 4])
def test_binding_ref_unknown_access_is_invalid_argument(access: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        BindingRef(0, None, BufferRange(0, 1), access)  # type: ignore[arg-type]


@pytest.mark.parametrize("slot", [-1, 2**32])
def test_binding_ref_slot_is_u32(slot: int, raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        bind(slot)
    assert bind(2**32 - 1).slot == 2**32 - 1


# --------------------------------------------------------------------------- validate_bindings


def test_validate_bindings_accepts_unique_slots_up_to_max() -> None:
    validate_bindings([bind(0)], 1)
    validate_bindings([bind(5), bind(2), bind(9)], 3)


def test_validate_bindings_empty_is_resource_limit(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        validate_bindings([], 8)


def test_validate_bindings_more_than_max_is_resource_limit(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.RESOURCE_LIMIT) as info:
        validate_bindings([bind(0), bind(1), bind(2)], 2)
    assert "3" in info.value.message and "2" in info.value.message


def test_validate_bindings_repeated_slot_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        validate_bindings([bind(3, R), bind(4), bind(3, W)], 8)
    assert "slot 3" in info.value.message


def test_validate_bindings_counts_before_slots(raises_kind: RaisesKind) -> None:
    # Too many bindings is reported as RESOURCE_LIMIT even when slots also repeat.
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        validate_bindings([bind(1), bind(1), bind(1)], 2)


def test_validate_bindings_order_has_no_meaning() -> None:
    bindings = [bind(7), bind(0), bind(3)]
    validate_bindings(bindings, 3)
    validate_bindings(list(reversed(bindings)), 3)


# --------------------------------------------------------------------------- validate_for_submit


def test_validate_for_submit_accepts_allowed_accesses() -> None:
    BindingRef.validate_for_submit(
        [bind(0, R), bind(1, W), bind(2, RW)],
        [bdesc(BufferUsage.PROGRAM_INPUT), bdesc(BufferUsage.PROGRAM_OUTPUT), bdesc(BufferUsage.MUTABLE_STATE)],
        3,
    )


def test_validate_for_submit_runs_validate_bindings_first(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.RESOURCE_LIMIT):
        BindingRef.validate_for_submit([], [], 4)
    with raises_kind(ErrorKind.RESOURCE_LIMIT):  # also a length mismatch and a denied access
        BindingRef.validate_for_submit([bind(0, W), bind(1)], [bdesc(BufferUsage.PROGRAM_INPUT)], 1)
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:  # duplicate slot beats the denied access
        BindingRef.validate_for_submit(
            [bind(0, W), bind(0, W)], [bdesc(BufferUsage.PROGRAM_INPUT), bdesc(BufferUsage.PROGRAM_INPUT)], 2
        )
    assert "more than once" in info.value.message


def test_validate_for_submit_length_mismatch_is_invalid_argument(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INVALID_ARGUMENT) as info:
        BindingRef.validate_for_submit([bind(0, W)], [], 4)  # also a denied access: length wins
    assert "1 bindings but 0" in info.value.message
    with raises_kind(ErrorKind.INVALID_ARGUMENT):
        BindingRef.validate_for_submit([bind(0)], [bdesc(BufferUsage.PROGRAM_INPUT)] * 2, 4)


@pytest.mark.parametrize(
    ("usage", "access"),
    [
        (BufferUsage.PROGRAM_INPUT, W),
        (BufferUsage.PROGRAM_INPUT, RW),
        (BufferUsage.PROGRAM_OUTPUT, R),
        (BufferUsage.PROGRAM_OUTPUT, RW),
        (BufferUsage.PROGRAM_INPUT | BufferUsage.PROGRAM_OUTPUT, RW),
        (BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION, R),
    ],
)
def test_validate_for_submit_access_not_allowed_is_permission_denied(
    usage: BufferUsage, access: AccessMode, raises_kind: RaisesKind
) -> None:
    with raises_kind(ErrorKind.PERMISSION_DENIED) as info:
        BindingRef.validate_for_submit(
            [bind(0, R), bind(6, access)], [bdesc(BufferUsage.MUTABLE_STATE), bdesc(usage)], 2
        )
    assert "slot 6" in info.value.message and access.name in info.value.message


def test_validate_binding_ranges(raises_kind: RaisesKind) -> None:
    validate_binding_ranges([bind(0, offset=48, size=16)], [bdesc(BufferUsage.PROGRAM_INPUT, 64)])
    with raises_kind(ErrorKind.OUT_OF_BOUNDS) as info:
        validate_binding_ranges([bind(2, offset=49, size=16)], [bdesc(BufferUsage.PROGRAM_INPUT, 64)])
    assert "slot 2" in info.value.message and "64" in info.value.message


# --------------------------------------------------------------------------- EventState


def test_event_state_shapes() -> None:
    assert EventState.PENDING.status is EventStatus.PENDING and not EventState.PENDING.is_terminal
    assert EventState.COMPLETE.is_terminal and EventState.CANCELLED.is_terminal
    failed = EventState.failed(BackendError(ErrorKind.DEADLINE_EXPIRED, "late"))
    assert failed.is_terminal and failed.status is EventStatus.FAILED
    assert failed.error is not None and failed.error.kind is ErrorKind.DEADLINE_EXPIRED
    assert str(failed) == "Failed(DEADLINE_EXPIRED)"
    assert [str(s) for s in (EventState.PENDING, EventState.COMPLETE, EventState.CANCELLED)] == [
        "Pending",
        "Complete",
        "Cancelled",
    ]


def test_event_state_is_immutable_so_an_observed_terminal_state_cannot_change() -> None:
    observed = EventState.COMPLETE
    with pytest.raises(dataclasses.FrozenInstanceError):
        observed.status = EventStatus.PENDING  # type: ignore[misc]
    assert observed == EventState(EventStatus.COMPLETE)


def test_event_state_error_exactly_when_failed() -> None:
    with pytest.raises(ValueError):
        EventState(EventStatus.FAILED)
    with pytest.raises(ValueError):
        EventState(EventStatus.COMPLETE, BackendError(ErrorKind.BUSY, "x"))


def test_failed_states_compare_by_error_kind() -> None:
    a = EventState.failed(BackendError(ErrorKind.DEVICE_LOST, "a"))
    b = EventState.failed(BackendError(ErrorKind.DEVICE_LOST, "b"))
    c = EventState.failed(BackendError(ErrorKind.DEADLINE_EXPIRED, "a"))
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert a != EventState.COMPLETE and EventState.COMPLETE != EventState.CANCELLED
    assert len({EventState.PENDING, EventState.COMPLETE, EventState.CANCELLED, a, b, c}) == 5


def _bound(*pairs: tuple[int, AccessMode]) -> list[BindingRef[object]]:
    return [BindingRef(slot, object(), BufferRange(0, 4), access) for slot, access in pairs]


def test_validate_program_bindings_accepts_the_declared_table_in_any_order() -> None:
    validate_program_bindings(_bound((1, W), (0, R)), {0: R, 1: RW}, "k")


def test_validate_program_bindings_undeclared_slot_is_incompatible(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        validate_program_bindings(_bound((0, R), (5, W)), {0: R, 1: W}, "k")
    assert "slot 5" in info.value.message and "[0, 1]" in info.value.message and "'k'" in info.value.message


def test_validate_program_bindings_wider_access_is_incompatible(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        validate_program_bindings(_bound((0, RW)), {0: R}, "k")
    assert "declares READ" in info.value.message and "READ_WRITE" in info.value.message


def test_validate_program_bindings_unbound_slot_is_incompatible(raises_kind: RaisesKind) -> None:
    with raises_kind(ErrorKind.INCOMPATIBLE) as info:
        validate_program_bindings(_bound((0, R)), {0: R, 2: W, 1: W}, "k")
    assert "[1, 2]" in info.value.message
