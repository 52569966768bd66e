"""``copy_paths`` on the real providers: the case passes on every device, and the records count what the
submissions really bound and what the explicit transfers really moved."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("RUSTICL_ENABLE", "swrast")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import pytest

from accelcore import (
    AccessMode,
    ArtifactRef,
    BindingRef,
    BufferDesc,
    BufferProperties,
    BufferRange,
    ContextDesc,
    EventState,
    MemoryDomain,
    MemorySink,
    MemorySource,
    QueueDesc,
    Timeout,
)
from accelcore.conformance import CaseStatus, run
from accelcore.contract.waiting import poll_until_terminal
from accelcore.testing.pytest_support import real_device_params

CASE = "submission.copy-path-diagnostics"
RUNS = 6
OFFSET = 4096
"""Where a ranged binding starts: a multiple of every device's sub-buffer / storage-offset alignment here."""

pytestmark = pytest.mark.parametrize(("family", "entry"), real_device_params())


def test_the_case_passes_and_counts_the_fixture_writes(family: Any, entry: Any) -> None:
    setup = family.conformance(entry)
    report = run(setup.factory, setup.target, setup.hooks, select=[CASE])
    (result,) = report.cases
    assert result.status is CaseStatus.PASSED, result.reason
    record = result.metrics["copy_path"]
    assert record["direct"] + record["shared"] == len(setup.target.fixtures)
    assert record["staged"] == 0 and record["staged_bytes"] == 0
    assert record["transfer_bytes"] == sum(len(f.initial) for f in setup.target.fixtures)


def _close(provider: Any) -> None:
    close = getattr(provider, "close", None)
    if callable(close):
        close()


class _Rig:
    """The target's program with its two fixtures in larger buffers (HOST input, DEVICE output)."""

    def __init__(self, provider: Any, target: Any) -> None:
        self.provider = provider
        self.source, self.sink = target.fixtures
        self.size = len(self.source.initial)
        assert len(self.sink.initial) == self.size
        self.context = provider.create_context(ContextDesc())
        self.made = [
            provider.allocate_buffer(
                self.context, BufferDesc(OFFSET + self.size, f.alignment, domain, f.buffer_usage())
            )
            for f, domain in ((self.source, MemoryDomain.HOST), (self.sink, MemoryDomain.DEVICE))
        ]
        artifact = ArtifactRef(target.format, target.target, MemorySource(target.artifact), target.resident_bytes)
        self.program = provider.load_program(self.context, artifact)
        self.queue = provider.create_queue(self.context, QueueDesc())

    def run(self, offset: int) -> None:
        """Write both fixtures at ``offset``, submit them bound there, wait, read the output back."""
        provider, (a, b) = self.provider, self.made
        provider.write_buffer(a.buffer, offset, MemorySource(self.source.initial))
        provider.write_buffer(b.buffer, offset, MemorySource(self.sink.initial))
        bindings = [
            BindingRef(self.source.slot, a.buffer, BufferRange(offset, self.size), AccessMode.READ),
            BindingRef(self.sink.slot, b.buffer, BufferRange(offset, self.size), AccessMode.WRITE),
        ]
        event = provider.submit(self.queue, self.program, bindings, Timeout.INFINITE)
        assert poll_until_terminal(lambda: provider.poll_event(event), 60.0) == EventState.COMPLETE
        provider.destroy_event(event)
        out = bytearray(self.size)
        provider.read_buffer(b.buffer, offset, MemorySink(out))
        assert bytes(out) == self.sink.expected, f"offset {offset}: wrong output"

    def release(self) -> None:
        provider = self.provider
        provider.unload_program(self.program)
        provider.destroy_queue(self.queue)
        for m in self.made:
            provider.free_buffer(m.buffer)
        provider.destroy_context(self.context)


def test_records_match_the_submissions_made(family: Any, entry: Any) -> None:
    """RUNS submissions binding whole ranges at 0 and ranges at OFFSET (a sub-buffer / a descriptor offset),
    alternately: one record each, both bindings in place (direct where the buffer is device-local), and
    the bytes each run's writes plus the previous run's read-back moved."""
    setup = family.conformance(entry)
    provider = setup.factory()
    try:
        assert setup.hooks.copy_paths(provider) == []  # recording starts here
        rig = _Rig(provider, setup.target)
        for index in range(RUNS):
            rig.run(0 if index % 2 == 0 else OFFSET)
        records = setup.hooks.copy_paths(provider)
        local = sum(1 for m in rig.made if m.info.properties & BufferProperties.DEVICE_LOCAL)
        size = rig.size
        assert len(records) == RUNS
        for index, record in enumerate(records):
            assert record == {
                "direct": local,
                "shared": 2 - local,
                "staged": 0,
                "staged_bytes": 0,
                "transfer_bytes": 2 * size + (size if index else 0),
                "seq": index,
            }, f"run {index}"
        assert setup.hooks.copy_paths(provider) == records  # reading them changes nothing
        rig.release()
    finally:
        _close(provider)


def test_nothing_is_recorded_until_asked(family: Any, entry: Any) -> None:
    """Until the first copy_paths call the submit path keeps no log (its cost there: one None test)."""
    setup = family.conformance(entry)
    provider = setup.factory()
    try:
        rig = _Rig(provider, setup.target)
        rig.run(0)
        assert provider.copy_log is None
        assert setup.hooks.copy_paths(provider) == []
        rig.run(OFFSET)
        (record,) = setup.hooks.copy_paths(provider)
        assert record["staged"] == 0 and record["direct"] + record["shared"] == 2
        assert record["transfer_bytes"] == 2 * rig.size  # this run's writes; the earlier read-back came before
        rig.release()
    finally:
        _close(provider)


def test_a_full_log_keeps_the_latest_records(family: Any, entry: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log is bounded (COPY_PATH_LIMIT records): past it the oldest go, ``dropped`` counts them, and the
    first kept record's transfer bytes are still those since the record before it."""
    from accelcore.conformance import target as target_module

    monkeypatch.setattr(target_module, "COPY_PATH_LIMIT", 2)
    setup = family.conformance(entry)
    provider = setup.factory()
    try:
        assert setup.hooks.copy_paths(provider) == []
        rig = _Rig(provider, setup.target)
        for index in range(5):
            rig.run(0 if index % 2 == 0 else OFFSET)
        records = setup.hooks.copy_paths(provider)
        assert len(records) == 2 and provider.copy_log.dropped == 3
        assert [r["transfer_bytes"] for r in records] == [3 * rig.size, 3 * rig.size]  # writes + previous read
        assert all(r["staged"] == 0 and r["direct"] + r["shared"] == 2 for r in records)
        rig.release()
    finally:
        _close(provider)
