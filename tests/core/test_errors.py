"""The error vocabulary: kinds and numbers, EXTERNAL, release and submit failure shapes."""

from __future__ import annotations

import pickle

import pytest

from accelcore import (
    BackendError,
    DeviceInfoError,
    DeviceInfoErrorKind,
    ErrorKind,
    ReleaseFailure,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitFailure,
    SubmitIndeterminate,
    SubmitRejected,
)

PROTOCOL_NUMBERS = {
    "UNSUPPORTED": 1,
    "INCOMPATIBLE": 2,
    "INVALID_ARGUMENT": 3,
    "OUT_OF_BOUNDS": 4,
    "BUSY": 5,
    "OUT_OF_MEMORY": 6,
    "RESOURCE_LIMIT": 7,
    "DEADLINE_EXPIRED": 8,
    "DEVICE_LOST": 9,
    "PERMISSION_DENIED": 10,
    "STALE_OBJECT": 11,
    "EXTERNAL": 65535,
}


def test_error_kinds_are_exactly_the_protocol_set_with_their_numbers() -> None:
    assert {kind.name: int(kind) for kind in ErrorKind} == PROTOCOL_NUMBERS


@pytest.mark.parametrize("kind", [k for k in ErrorKind if k is not ErrorKind.EXTERNAL], ids=lambda k: k.name)
def test_backend_error_keeps_kind_message_and_status(kind: ErrorKind) -> None:
    error = BackendError(kind, "what went wrong")
    assert error.kind is kind
    assert error.message == "what went wrong"
    assert error.status == PROTOCOL_NUMBERS[kind.name]
    assert kind.name in str(error) and "what went wrong" in str(error)
    assert error.domain is None and error.code is None


def test_backend_error_accepts_a_plain_status_number() -> None:
    assert BackendError(4, "x").kind is ErrorKind.OUT_OF_BOUNDS  # type: ignore[arg-type]


def test_external_error_carries_domain_and_code_and_reports_internal_error() -> None:
    error = BackendError.external(0xDEAD, -42, "provider specific")
    assert error.kind is ErrorKind.EXTERNAL
    assert (error.domain, error.code) == (0xDEAD, -42)
    assert error.status == 65535
    assert "domain 57005" in str(error) and "code -42" in str(error)


@pytest.mark.parametrize(
    ("domain", "code"),
    [(None, 1), (1, None), (-1, 0), (2**32, 0), (0, 2**63), (0, -(2**63) - 1)],
)
def test_external_error_rejects_missing_or_out_of_range_domain_and_code(domain: int | None, code: int | None) -> None:
    with pytest.raises(ValueError):
        BackendError(ErrorKind.EXTERNAL, "bad", domain=domain, code=code)


def test_external_error_extremes_are_representable() -> None:
    assert BackendError.external(2**32 - 1, 2**63 - 1, "max").code == 2**63 - 1
    assert BackendError.external(0, -(2**63), "min").code == -(2**63)


def test_only_external_errors_carry_domain_and_code() -> None:
    with pytest.raises(ValueError):
        BackendError(ErrorKind.BUSY, "busy", domain=1, code=2)


def test_native_call_and_code_are_kept_and_shown() -> None:
    error = BackendError(ErrorKind.OUT_OF_MEMORY, "no memory", native_call="clCreateBuffer", native_code=-4)
    assert (error.native_call, error.native_code) == ("clCreateBuffer", -4)
    assert "clCreateBuffer -> -4" in str(error)


def test_backend_error_survives_pickling() -> None:
    original = BackendError(ErrorKind.EXTERNAL, "x", domain=7, code=-9, native_call="vkFoo", native_code=-3)
    copy = pickle.loads(pickle.dumps(original))
    assert (copy.kind, copy.message, copy.domain, copy.code) == (ErrorKind.EXTERNAL, "x", 7, -9)
    assert (copy.native_call, copy.native_code) == ("vkFoo", -3)


# --------------------------------------------------------------------------- release / submit shapes


@pytest.mark.parametrize(
    "failure_type", [ReleaseFailure, ReleaseRejected, ReleaseIndeterminate, SubmitFailure, SubmitRejected]
)
def test_release_and_submit_failures_are_not_backend_errors(failure_type: type[Exception]) -> None:
    # An indeterminate outcome must never be caught as an ordinary error.
    assert not issubclass(failure_type, BackendError)
    assert not issubclass(SubmitIndeterminate, BackendError)


def test_release_rejected_returns_the_live_handle() -> None:
    handle = object()
    failure: ReleaseFailure[object] = ReleaseRejected(BackendError(ErrorKind.BUSY, "pending"), handle)
    assert isinstance(failure, ReleaseFailure)
    assert failure.resource is handle
    assert failure.kind is ErrorKind.BUSY
    assert not failure.indeterminate
    assert "rejected" in str(failure)


def test_release_indeterminate_carries_no_handle_and_says_discard() -> None:
    failure: ReleaseFailure[object] = ReleaseIndeterminate(BackendError(ErrorKind.DEVICE_LOST, "gone"))
    assert failure.indeterminate
    assert not hasattr(failure, "resource")
    assert failure.kind is ErrorKind.DEVICE_LOST
    assert "discard" in str(failure)


def test_release_failure_variant_aliases_mirror_the_seed() -> None:
    assert ReleaseFailure.Rejected is ReleaseRejected
    assert ReleaseFailure.Indeterminate is ReleaseIndeterminate
    assert SubmitFailure.Rejected is SubmitRejected
    assert SubmitFailure.Indeterminate is SubmitIndeterminate


def test_submit_rejected_carries_only_the_error() -> None:
    failure: SubmitFailure[object] = SubmitRejected(BackendError(ErrorKind.DEADLINE_EXPIRED, "late"))
    assert failure.kind is ErrorKind.DEADLINE_EXPIRED
    assert not failure.indeterminate
    assert not hasattr(failure, "event")


def test_submit_indeterminate_carries_the_event() -> None:
    event = object()
    failure: SubmitFailure[object] = SubmitIndeterminate(BackendError(ErrorKind.DEVICE_LOST, "?"), event)
    assert failure.indeterminate
    assert failure.event is event
    assert failure.error.kind is ErrorKind.DEVICE_LOST


def test_catching_backend_error_does_not_swallow_an_indeterminate_submission() -> None:
    event = object()
    with pytest.raises(SubmitIndeterminate) as info:
        try:
            raise SubmitIndeterminate(BackendError(ErrorKind.BUSY, "unknown"), event)
        except BackendError:  # pragma: no cover - must not be taken
            pytest.fail("an indeterminate submission was caught as an ordinary error")
    assert info.value.event is event


# --------------------------------------------------------------------------- DeviceInfoError


def test_device_info_error_names_its_reason() -> None:
    error = DeviceInfoError(DeviceInfoErrorKind.ZERO_LIMIT, "limit max_contexts is 0", field="max_contexts")
    assert error.reason is DeviceInfoErrorKind.ZERO_LIMIT
    assert error.field == "max_contexts"
    assert str(error).startswith("ZeroLimit")
    assert not isinstance(error, BackendError)
    assert {r.value for r in DeviceInfoErrorKind} == {"ReservedCapabilities", "MissingMemoryDomain", "ZeroLimit"}
