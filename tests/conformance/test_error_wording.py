"""One error vocabulary: the same condition gives the same kind and the same message on every provider.

Device-independent checks live in accelcore (``validate_transfer``, ``validate_program_bindings``),
bookkeeping refusals are worded by ``accelcore.contract.refusals``;
each provider (reference, and every real OpenCL / Vulkan device found, narrowed by
``ACCEL_DEVICES``) is driven directly and its message compared with the one accelcore words.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from accelcore import (
    ArtifactRef,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    Capabilities,
    ContextDesc,
    ErrorKind,
    EventState,
    MemorySink,
    MemorySource,
    QueueDesc,
    ReleaseRejected,
    SubmitRejected,
    Timeout,
    validate_transfer,
)
from accelcore.contract import refusals
from accelcore.testing.pytest_support import real_device_params


def _message(kind: ErrorKind, call: Any, *args: Any, **keywords: Any) -> str:
    with pytest.raises(BackendError) as info:
        call(*args, **keywords)
    assert info.value.kind is kind, info.value
    return info.value.message


@pytest.mark.parametrize(("family", "entry"), real_device_params(reference=True))
def test_same_condition_same_words(family: Any, entry: Any) -> None:
    setup = family.conformance(entry)
    provider = setup.factory()
    target = setup.target
    try:
        context = provider.create_context(ContextDesc())
        domain = target.fixtures[0].domain
        source_only = provider.allocate_buffer(context, BufferDesc(64, 16, domain, BufferUsage.TRANSFER_SOURCE))
        both = provider.allocate_buffer(
            context, BufferDesc(64, 16, domain, BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION)
        )

        said = _message(ErrorKind.PERMISSION_DENIED, provider.write_buffer, source_only.buffer, 0, MemorySource(b"x"))
        words = _message(ErrorKind.PERMISSION_DENIED, validate_transfer, source_only.info.desc, 0, 1, write=True)
        assert said == words

        said = _message(ErrorKind.OUT_OF_BOUNDS, provider.read_buffer, both.buffer, 64, MemorySink(bytearray(1)))
        words = _message(ErrorKind.OUT_OF_BOUNDS, validate_transfer, both.info.desc, 64, 1, write=False)
        assert said == words

        said = _message(ErrorKind.OUT_OF_BOUNDS, provider.write_buffer, both.buffer, 60, MemorySource(b"12345"))
        words = _message(ErrorKind.OUT_OF_BOUNDS, validate_transfer, both.info.desc, 60, 5, write=True)
        assert said == words

        # A program slot left unbound: accelcore's validate_program_bindings wording on every provider.
        artifact = ArtifactRef(target.format, target.target, MemorySource(target.artifact), target.resident_bytes)
        program = provider.load_program(context, artifact)
        queue = provider.create_queue(context, QueueDesc())
        allocated = []
        for fixture in target.fixtures:
            desc = BufferDesc(len(fixture.initial), fixture.alignment, fixture.domain, fixture.buffer_usage())
            allocated.append((fixture, provider.allocate_buffer(context, desc)))
        left_out, _ = allocated[-1]
        bindings = [
            BindingRef(f.slot, a.buffer, BufferRange(0, len(f.initial)), f.access) for f, a in allocated[:-1]
        ] or [BindingRef(left_out.slot + 1, allocated[0][1].buffer, BufferRange(0, 4), left_out.access)]
        with pytest.raises(SubmitRejected) as rejected:
            provider.submit(queue, program, bindings, Timeout.INFINITE)
        assert rejected.value.error.kind is ErrorKind.INCOMPATIBLE, rejected.value.error
        if len(allocated) > 1:
            pattern = rf"program '[^']*' needs slots \[{left_out.slot}\] bound as well"
        else:
            pattern = rf"slot {left_out.slot + 1} is not a binding of program '[^']*' \(its slots: \[\d+\]\)"
        assert re.fullmatch(pattern, rejected.value.error.message), rejected.value.error.message

        # Bookkeeping refusals (accelcore.contract.refusals): a held event pins its objects; cancel after completion.
        full = [BindingRef(f.slot, a.buffer, BufferRange(0, len(f.initial)), f.access) for f, a in allocated]
        other = provider.create_context(ContextDesc())
        foreign = provider.allocate_buffer(other, allocated[0][1].info.desc)
        crossed = [BindingRef(full[0].slot, foreign.buffer, full[0].range, full[0].access), *full[1:]]
        with pytest.raises(SubmitRejected) as rejected:
            provider.submit(queue, program, crossed, Timeout.INFINITE)
        assert str(rejected.value.error) == str(refusals.other_context(f"slot {full[0].slot}: the buffer"))
        provider.free_buffer(foreign.buffer)
        provider.destroy_context(other)

        setup.hooks.hold_submissions(provider)
        if provider.device_info().capabilities & Capabilities.EVENT_CANCELLATION:
            # Same outcome for the same condition: a second cancel of a Cancelled event succeeds on every provider.
            cancelled = provider.submit(queue, program, full, Timeout.INFINITE)
            provider.cancel_event(cancelled)
            provider.cancel_event(cancelled)
            assert provider.poll_event(cancelled) == EventState.CANCELLED
            provider.destroy_event(cancelled)
        event = provider.submit(queue, program, full, Timeout.INFINITE)
        expected = {
            "destroy_event": refusals.event_still_pending(),
            "free_buffer": refusals.still_referenced("buffer", 1),
            "unload_program": refusals.still_referenced("program", 1),
            "destroy_queue": refusals.still_referenced("queue", 1),
        }
        for call, handle in (
            ("destroy_event", event),
            ("free_buffer", allocated[0][1].buffer),
            ("unload_program", program),
            ("destroy_queue", queue),
        ):
            with pytest.raises(ReleaseRejected) as refused:
                getattr(provider, call)(handle)
            assert refused.value.resource is handle
            assert str(refused.value.error) == str(expected[call]), call
        with pytest.raises(ReleaseRejected) as refused:
            provider.destroy_context(context)
        assert str(refused.value.error) == str(refusals.context_not_empty(len(allocated) + 2, 1, 1, 1))
        setup.hooks.complete_held(provider, event)
        give_up = time.monotonic() + 60
        while not provider.poll_event(event).is_terminal and time.monotonic() < give_up:
            time.sleep(0.001)
        assert provider.poll_event(event).is_terminal
        if provider.device_info().capabilities & Capabilities.EVENT_CANCELLATION:
            said = _message(ErrorKind.BUSY, provider.cancel_event, event)
            assert said == refusals.cancellation_lost().message
        provider.destroy_event(event)

        provider.destroy_queue(queue)
        provider.unload_program(program)
        for _, a in allocated:
            provider.free_buffer(a.buffer)
        provider.free_buffer(source_only.buffer)
        provider.free_buffer(both.buffer)
        said = _message(ErrorKind.INVALID_ARGUMENT, provider.write_buffer, both.buffer, 0, MemorySource(b"x"))
        assert said == refusals.released_handle("buffer").message
        said = _message(ErrorKind.INVALID_ARGUMENT, provider.read_buffer, b"not a buffer", 0, MemorySink(bytearray(1)))
        assert re.fullmatch(r"buffer must be a \w+, got bytes", said), said
        second = setup.factory()
        try:
            elsewhere = second.create_context(ContextDesc())
            theirs = second.allocate_buffer(elsewhere, both.info.desc)
            said = _message(ErrorKind.INVALID_ARGUMENT, provider.write_buffer, theirs.buffer, 0, MemorySource(b"x"))
            assert said == refusals.foreign_handle("buffer").message
            second.free_buffer(theirs.buffer)
            second.destroy_context(elsewhere)
        finally:
            if hasattr(second, "close"):
                second.close()
        provider.destroy_context(context)
    finally:
        close = getattr(provider, "close", None)
        if close is not None:
            close()
