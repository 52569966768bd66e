"""``submission.copy-path-diagnostics``: a provider that stages bindings through a bounce buffer is caught."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accelcore.conformance import CaseStatus, run
from accelcore.testing import ReferenceAccelerator, ReferenceHooks, reference_target
from accelcore.testing.reference import RefBuffer, RefEvent

CASE = "submission.copy-path-diagnostics"


def _case(factory: Any, hooks: Any = None) -> Any:
    report = run(factory, reference_target(), hooks or ReferenceHooks(), select=[CASE])
    (result,) = report.cases
    return result


def test_the_reference_binds_in_place() -> None:
    written = sum(len(f.initial) for f in reference_target().fixtures)  # the case fills every fixture once
    result = _case(ReferenceAccelerator)
    assert result.status is CaseStatus.PASSED, result.reason
    assert result.reason == f"direct 2, shared 2, staged 0, {written} transfer bytes"
    assert result.metrics["copy_path"] == {
        "direct": 2,
        "shared": 2,
        "staged": 0,
        "staged_bytes": 0,
        "transfer_bytes": written,
    }


class BounceBuffered(ReferenceAccelerator):
    """Copies every bound range into a staging buffer, runs there, copies the results back (correct bytes,
    hidden copies) - and reports it honestly."""

    def _copy_path(self, buffers: Sequence[RefBuffer]) -> dict[str, int]:
        return {"direct": 0, "shared": 0, "staged": len(buffers), "staged_bytes": sum(len(b.data) for b in buffers)}

    def _finish(self, event: RefEvent) -> None:
        staged = [buffer.data.copy() for buffer in event.buffers]
        originals = [buffer.data for buffer in event.buffers]
        for buffer, copy in zip(event.buffers, staged, strict=True):
            buffer.data = copy
        try:
            super()._finish(event)
        finally:
            for buffer, original, copy in zip(event.buffers, originals, staged, strict=True):
                original[:] = copy
                buffer.data = original


def test_a_bounce_buffer_provider_is_caught_though_its_bytes_are_right() -> None:
    result = _case(BounceBuffered)
    assert result.status is CaseStatus.FAILED
    assert "4 of 4 bindings were staged (copied through a bounce buffer" in result.reason
    # Every other standard case still passes: only this one sees the copies.
    report = run(BounceBuffered, reference_target(), ReferenceHooks())
    assert [c.id for c in report.cases if c.status is CaseStatus.FAILED] == [CASE]


class NoDirect(ReferenceAccelerator):
    def _copy_path(self, buffers: Sequence[RefBuffer]) -> dict[str, int]:
        return {"direct": 0, "shared": len(buffers), "staged": 0, "staged_bytes": 0}


def test_no_direct_binding_fails() -> None:
    result = _case(NoDirect)
    assert result.status is CaseStatus.FAILED and "no binding was direct" in result.reason


class UncountedWrites(ReferenceAccelerator):
    """Binds in place but its explicit-transfer count misses writes (diagnostics that lie)."""

    def write_buffer(self, buffer: RefBuffer, offset: int, data: Any) -> None:
        self._write(buffer, offset, data)


def test_transfer_bytes_that_miss_the_writes_fail() -> None:
    written = sum(len(f.initial) for f in reference_target().fixtures)
    result = _case(UncountedWrites)
    assert result.status is CaseStatus.FAILED
    assert f"the case wrote {written} bytes into the fixtures" in result.reason
    assert "counts 0 transfer bytes" in result.reason


class _NoCopyPathHooks:
    def __init__(self) -> None:
        self.inner = ReferenceHooks()

    def hold_submissions(self, provider: Any) -> None:
        self.inner.hold_submissions(provider)

    def complete_held(self, provider: Any, event: Any) -> None:
        self.inner.complete_held(provider, event)

    def live_resources(self, provider: Any) -> Any:
        return self.inner.live_resources(provider)


def test_without_the_hook_the_case_skips() -> None:
    result = _case(ReferenceAccelerator, _NoCopyPathHooks())
    assert result.status is CaseStatus.SKIPPED and "copy_paths" in result.reason


def test_the_reference_keeps_only_the_latest_copy_paths(monkeypatch: Any) -> None:
    """The reference records every submission from construction (always on), so its log is bounded too:
    five accepted submissions against a limit of 3 leave the latest 3, with their own transfer bytes."""
    import accelcore.testing.reference as reference_module
    from accelcore import (
        ArtifactRef,
        BindingRef,
        BufferDesc,
        BufferRange,
        ContextDesc,
        EventState,
        MemorySource,
        QueueDesc,
        Timeout,
    )
    from accelcore.contract.waiting import poll_until_terminal

    monkeypatch.setattr(reference_module, "COPY_PATH_LIMIT", 3)
    provider = ReferenceAccelerator()
    target = reference_target()
    context = provider.create_context(ContextDesc())
    made = [
        provider.allocate_buffer(context, BufferDesc(len(f.initial), f.alignment, f.domain, f.buffer_usage()))
        for f in target.fixtures
    ]
    artifact = ArtifactRef(target.format, target.target, MemorySource(target.artifact), target.resident_bytes)
    program = provider.load_program(context, artifact)
    queue = provider.create_queue(context, QueueDesc())
    for run_index in range(5):
        written = 0
        for fixture, allocated in zip(target.fixtures, made, strict=True):
            if run_index % 2 == 0 or fixture is target.fixtures[0]:  # alternate runs write one or every fixture
                provider.write_buffer(allocated.buffer, 0, MemorySource(fixture.initial))
                written += len(fixture.initial)
        bindings = [
            BindingRef(f.slot, m.buffer, BufferRange(0, len(f.initial)), f.access)
            for f, m in zip(target.fixtures, made, strict=True)
        ]
        event = provider.submit(queue, program, bindings, Timeout.INFINITE)
        assert poll_until_terminal(lambda e=event: provider.poll_event(e), 10.0) == EventState.COMPLETE
        provider.destroy_event(event)
        assert provider.copy_paths[-1]["transfer_bytes"] == written, run_index
    assert len(provider.copy_paths) == 3
    everything = sum(len(f.initial) for f in target.fixtures)
    first = len(target.fixtures[0].initial)
    assert [r["transfer_bytes"] for r in provider.copy_paths] == [everything, first, everything]  # runs 2, 3, 4


def test_a_full_bounded_log_still_yields_the_new_record(monkeypatch: Any) -> None:
    """A provider whose bounded log is already full when the case starts (limit 3, three records from
    earlier work) drops one record for the case's run: before and after have the same length, and the
    case finds the new record by ``seq`` (slicing by count would find none and fail a correct provider)."""
    import accelcore.testing.reference as reference_module

    monkeypatch.setattr(reference_module, "COPY_PATH_LIMIT", 3)

    def busy() -> ReferenceAccelerator:
        provider = ReferenceAccelerator()
        for _ in range(3):  # as if it had run three submissions before the suite asked
            provider.copy_paths.append(
                {
                    "direct": 0,
                    "shared": 1,
                    "staged": 0,
                    "staged_bytes": 0,
                    "transfer_bytes": 0,
                    "seq": provider._copy_path_seq,
                }
            )
            provider._copy_path_seq += 1
        return provider

    result = _case(busy)
    assert result.status is CaseStatus.PASSED, result.reason
    assert result.metrics["copy_path"]["direct"] == 2 and result.metrics["copy_path"]["staged"] == 0


def test_the_log_numbers_its_records_across_drops() -> None:
    from accelcore.conformance.target import CopyPathLog

    log = CopyPathLog(transferred=10, limit=2)
    for i in range(5):
        log.records.append((1, 0, 0, 0, 10 + 4 * (i + 1)))
    report = log.report()
    assert [r["seq"] for r in report] == [3, 4] and log.dropped == 3
    assert [r["transfer_bytes"] for r in report] == [4, 4]
