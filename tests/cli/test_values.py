"""Option values: --bind / --out specs and --timeout durations."""

from __future__ import annotations

from pathlib import Path

import pytest
from accel_cli.bindspec import parse_bind, parse_out
from accel_cli.duration import parse_duration

from accelcore import AccessMode, Timeout


@pytest.mark.parametrize(
    ("text", "slot", "path", "access"),
    [
        ("0=in.npy", 0, "in.npy", None),
        ("1=out.npy:w", 1, "out.npy", AccessMode.WRITE),
        ("2=dir/state.npy:rw", 2, "dir/state.npy", AccessMode.READ_WRITE),
        ("3=x.npy:R", 3, "x.npy", AccessMode.READ),
        ("4=/abs/a:b.npy", 4, "/abs/a:b.npy", None),
    ],
)
def test_parse_bind(text: str, slot: int, path: str, access: AccessMode | None) -> None:
    spec = parse_bind(text)
    assert (spec.slot, spec.path, spec.access) == (slot, Path(path), access)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("in.npy", r"is not of the form SLOT\|NAME=FILE.npy"),
        ("x-y=in.npy", "slot 'x-y' is not a slot number or a name"),
        ("-1=in.npy", "slot '-1' is not a slot number or a name"),
        ("0=", "is not of the form"),
        ("0=in.npy:rx", "access 'rx' is not one of r, w, rw"),
        ("0=:w", "names no file"),
        ("4294967296=a.npy", "larger than a u32"),
    ],
)
def test_parse_bind_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_bind(text)


def test_parse_out() -> None:
    spec = parse_out("1=result.npy")
    assert (spec.slot, spec.path) == (1, Path("result.npy"))
    with pytest.raises(ValueError, match=r"SLOT\|NAME=FILE\.npy"):
        parse_out("result.npy")
    named = parse_out("y=result.npy")
    assert (named.name, named.path) == ("y", Path("result.npy"))


def test_names_resolve_to_slots_and_unknown_names_are_refused() -> None:
    from accel_cli.bindspec import resolve_names

    specs = [parse_bind("x=a.npy"), parse_bind("2=b.npy:rw")]
    resolved = resolve_names("--bind", specs, {"x": 1, "y": 2})
    assert [(s.slot, s.name) for s in resolved] == [(1, "x"), (2, None)]
    with pytest.raises(ValueError, match=r"no buffer called 'x' \(y \(slot 2\)\)"):
        resolve_names("--bind", specs[:1], {"y": 2})


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("250ms", 250_000_000),
        ("2s", 2_000_000_000),
        ("1.5s", 1_500_000_000),
        ("100us", 100_000),
        ("7ns", 7),
        ("1m", 60_000_000_000),
        ("3", 3_000_000_000),
    ],
)
def test_durations(text: str, ns: int) -> None:
    assert parse_duration(text) == Timeout.after_ns(ns)


def test_infinite_duration() -> None:
    assert parse_duration("inf") is Timeout.INFINITE
    assert parse_duration("none").is_infinite


@pytest.mark.parametrize(("text", "message"), [("0s", "zero"), ("fast", "not a duration"), ("-1s", "not a duration")])
def test_bad_durations(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_duration(text)


def test_an_indeterminate_submission_is_a_device_failure_never_an_input_refusal() -> None:
    """SubmitIndeterminate carrying INVALID_ARGUMENT must not read as "the device refused the bindings"."""
    import numpy as np
    from accel_cli.artifacts import Artifact, FileKind
    from accel_cli.bindings import BoundSlot
    from accel_cli.commands.run import _failure
    from accel_cli.execute import RunFailure, run_once
    from accel_cli.failures import DeviceFailure

    from accelcore import BackendError, ErrorKind, SubmitIndeterminate
    from accelcore.testing import ReferenceAccelerator, reference_target

    class AcceptanceUnknown(ReferenceAccelerator):
        def submit(self, queue: object, program: object, bindings: object, timeout: object) -> object:
            event = super().submit(queue, program, bindings, timeout)  # type: ignore[arg-type]
            raise SubmitIndeterminate(BackendError(ErrorKind.INVALID_ARGUMENT, "binding fault mid-submit"), event)

    target = reference_target()
    artifact = Artifact(FileKind.REFERENCE, target.format, target.target, target.artifact, ())
    slots = [
        BoundSlot(f.slot, Path(f"slot{f.slot}.npy"), np.frombuffer(f.initial, np.uint8).copy(), f.access, f.access)
        for f in target.fixtures
    ]
    with pytest.raises(RunFailure) as info:
        run_once(AcceptanceUnknown(), artifact, slots, timeout=Timeout.INFINITE, wait_limit_s=10)
    assert info.value.indeterminate and info.value.phase == "submit"
    failure = _failure(info.value)
    assert isinstance(failure, DeviceFailure), failure
    assert "acceptance unknown" in str(failure) and "indeterminate" in str(failure)
