"""The suite checks its ConformanceTarget before any case runs, and read-only inputs byte for byte."""

from __future__ import annotations

import dataclasses

from accelcore import AccessMode
from accelcore.conformance import CaseStatus, run
from accelcore.testing import ReferenceAccelerator, ReferenceHooks, reference_target
from accelcore.testing.reference import RefEvent


def test_reference_target_is_valid() -> None:
    assert reference_target().problems() == []


def test_an_invalid_target_fails_every_case_before_any_runs() -> None:
    target = reference_target()
    first, second, *rest = target.fixtures
    broken = dataclasses.replace(
        target,
        fixtures=(
            first,
            dataclasses.replace(second, slot=first.slot, alignment=48),
            dataclasses.replace(rest[0], expected=b"\x00"),
            *rest[1:],
        ),
    )
    problems = broken.problems()
    assert f"slot {first.slot} has 2 fixtures" in problems
    assert any("alignment 48 is not a power of two" in p for p in problems)
    assert any("1 expected bytes for" in p for p in problems)
    made: list[int] = []

    def factory() -> ReferenceAccelerator:
        made.append(1)
        return ReferenceAccelerator()

    started: list[str] = []
    report = run(factory, broken, ReferenceHooks(), on_start=started.append)
    assert report.cases and all(c.status is CaseStatus.FAILED for c in report.cases)
    assert all("is invalid, so no case ran" in c.reason and "has 2 fixtures" in c.reason for c in report.cases)
    assert started == [c.id for c in report.cases]
    assert len(made) == 1  # only the metadata probe: no case opened the provider


def test_a_read_only_input_with_other_expected_bytes_is_refused() -> None:
    target = reference_target()
    index = next(i for i, f in enumerate(target.fixtures) if f.access is AccessMode.READ)
    fixture = target.fixtures[index]
    changed = dataclasses.replace(fixture, expected=bytes(b ^ 1 for b in fixture.initial))
    fixtures = list(target.fixtures)
    fixtures[index] = changed
    problems = dataclasses.replace(target, fixtures=tuple(fixtures)).problems()
    assert problems == [
        f"fixture for slot {fixture.slot}: a read-only input whose expected bytes differ from its initial bytes"
    ]


class WritesReadOnlyInput(ReferenceAccelerator):
    """Runs the program, then scribbles on the first byte of every read-only binding."""

    def _finish(self, event: RefEvent) -> None:
        super()._finish(event)
        read_only = {f.slot for f in reference_target().fixtures if f.access is AccessMode.READ}
        for (slot, offset, _end), buffer in zip(event.bindings, event.buffers, strict=True):
            if slot in read_only:
                buffer.data[offset] ^= 0xFF


def test_a_provider_writing_a_read_only_input_is_caught_even_without_expected_bytes() -> None:
    target = reference_target()
    fixtures = tuple(
        dataclasses.replace(f, expected=None) if f.access is AccessMode.READ else f for f in target.fixtures
    )
    unchecked = dataclasses.replace(target, fixtures=fixtures)
    assert unchecked.problems() == []
    clean = run(ReferenceAccelerator, unchecked, ReferenceHooks())
    assert clean.passed, [c for c in clean.cases if c.status is CaseStatus.FAILED]
    report = run(WritesReadOnlyInput, unchecked, ReferenceHooks())
    failed = [c for c in report.cases if c.status is CaseStatus.FAILED]
    assert failed and any("does not hold expected output: first difference at byte 0" in c.reason for c in failed)
