"""The suite can fail: each deliberately broken reference variant fails exactly its case, saying why."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from accelcore import (
    AllocatedBuffer,
    BackendError,
    BufferDesc,
    BufferInfo,
    BufferUsage,
    ErrorKind,
    EventState,
    MemoryDomain,
    validate_transfer,
)
from accelcore.conformance import CaseStatus, run
from accelcore.testing import ReferenceAccelerator, ReferenceHooks, reference_target
from accelcore.testing.reference import RefBuffer, RefContext, RefEvent


class RegressingPoll(ReferenceAccelerator):
    """A rejected destroy corrupts the event: after completion, poll flips back to Pending."""

    def __init__(self) -> None:
        super().__init__()
        self.corrupt: dict[int, int] = {}

    def destroy_event(self, event: RefEvent) -> None:
        if event.state is EventState.PENDING:
            self.corrupt[event.serial] = 0
        super().destroy_event(event)

    def poll_event(self, event: RefEvent) -> EventState:
        state = super().poll_event(event)
        if event.serial in self.corrupt and state is EventState.COMPLETE:
            self.corrupt[event.serial] += 1
            if self.corrupt[event.serial] >= 2:
                return EventState.PENDING
        return state


class DestroyPendingSucceeds(ReferenceAccelerator):
    def destroy_event(self, event: RefEvent) -> None:
        if event.state is EventState.PENDING:
            event.state = EventState.CANCELLED  # silently drops the work
        super().destroy_event(event)


class ShrunkSharedAllocation(ReferenceAccelerator):
    """Shared allocations report a desc (and size) one byte smaller than requested."""

    def allocate_buffer(self, context: RefContext, desc: BufferDesc) -> AllocatedBuffer[RefBuffer]:
        allocated = super().allocate_buffer(context, desc)
        if desc.domain is not MemoryDomain.SHARED:
            return allocated
        info = allocated.info
        smaller = BufferDesc(desc.bytes - 1, desc.alignment, desc.domain, desc.usage)
        return AllocatedBuffer(allocated.buffer, BufferInfo(smaller, desc.bytes - 1, info.alignment, info.properties))


class DuplicateSlotAccepted(ReferenceAccelerator):
    def _validate_bindings(self, bindings: Any) -> None:
        if not bindings or len(bindings) > self.device_info().limits.max_bindings_per_submission:
            super()._validate_bindings(bindings)


class CancelSucceedsAfterCompletion(ReferenceAccelerator):
    def cancel_event(self, event: RefEvent) -> None:
        if event.state.is_terminal:
            return  # claims success although completion won
        super().cancel_event(event)


class LeakyFree(ReferenceAccelerator):
    """free_buffer detaches the buffer from its context but keeps the backing."""

    def free_buffer(self, buffer: RefBuffer) -> None:
        super().free_buffer(buffer)
        self._buffers.append(buffer)


class UnstableMetadata(ReferenceAccelerator):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def device_info(self) -> Any:
        self.calls += 1
        info = super().device_info()
        if self.calls < 3:
            return info
        identity = type(info.identity)(info.identity.uuid, info.identity.class_, info.identity.vendor_id, 2)
        return type(info)(identity, info.capabilities, info.limits)


class ReservedFlagsAccepted(ReferenceAccelerator):
    def create_context(self, desc: Any) -> RefContext:
        return super().create_context(type(desc)())


class TailWriteIgnored(ReferenceAccelerator):
    def write_buffer(self, buffer: RefBuffer, offset: int, data: Any) -> None:
        if offset == buffer.desc.bytes:
            return  # "nothing to write" instead of OUT_OF_BOUNDS
        super().write_buffer(buffer, offset, data)


class PermissionsIgnored(ReferenceAccelerator):
    def _check_transfer(self, buffer: RefBuffer, offset: int, length: int, *, write: bool) -> None:
        every = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
        validate_transfer(
            dataclasses.replace(buffer.desc, usage=buffer.desc.usage | every), offset, length, write=write
        )


class ArtifactLimitIgnored(ReferenceAccelerator):
    def load_program(self, context: RefContext, artifact: Any) -> Any:
        if artifact.payload.len() > self.device_info().limits.max_artifact_bytes:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, "artifact does not parse")
        return super().load_program(context, artifact)


class CrossContextAccepted(ReferenceAccelerator):
    def _same_context(self, a: RefContext, b: RefContext) -> bool:
        return True


class DeadlineWrongKind(ReferenceAccelerator):
    def submit(self, queue: Any, program: Any, bindings: Any, timeout: Any) -> RefEvent:
        event = super().submit(queue, program, bindings, timeout)
        if event.state is not EventState.PENDING and event.state.error is not None:
            event.state = EventState.failed(BackendError(ErrorKind.DEVICE_LOST, "timer fired"))
        return event


BROKEN = [
    pytest.param(RegressingPoll, "event.pending-release-terminal-stability", "changed to Pending", id="poll-regresses"),
    pytest.param(
        DestroyPendingSucceeds,
        "event.pending-release-terminal-stability",
        "destroying a pending event succeeded",
        id="destroy-pending",
    ),
    pytest.param(ShrunkSharedAllocation, "memory.shared", "dishonest BufferInfo", id="allocation-smaller"),
    pytest.param(DuplicateSlotAccepted, "submission.binding-validation", "twice", id="duplicate-slot"),
    pytest.param(
        CancelSucceedsAfterCompletion, "event.cancellation-races", "cancel after completion", id="cancel-after-complete"
    ),
    pytest.param(LeakyFree, "accounting.resource-lifecycle", "'buffer'", id="leak"),
    pytest.param(UnstableMetadata, "metadata.stable-valid", "identity.device_id 1 -> 2", id="metadata-unstable"),
    pytest.param(ReservedFlagsAccepted, "intent.reserved-flags", "SECURE", id="reserved-flags"),
    pytest.param(TailWriteIgnored, "buffer.segmented-transfer-bounds", "offset = size", id="tail-write"),
    pytest.param(PermissionsIgnored, "buffer.transfer-permissions", "PERMISSION_DENIED", id="permissions"),
    pytest.param(ArtifactLimitIgnored, "program.segmented-artifact-bounds", "RESOURCE_LIMIT", id="artifact-limit"),
    pytest.param(CrossContextAccepted, "submission.context-isolation", "another context", id="cross-context"),
    pytest.param(DeadlineWrongKind, "timeout.finite-admission", "DEVICE_LOST", id="deadline-kind"),
]


@pytest.mark.parametrize(("variant", "case_id", "phrase"), BROKEN)
def test_broken_variant_fails_exactly_its_case(variant: type[ReferenceAccelerator], case_id: str, phrase: str) -> None:
    report = run(variant, reference_target(), ReferenceHooks(), wait_limit_s=1.0)
    failed = {case.id: case.reason for case in report.cases if case.status is CaseStatus.FAILED}
    assert list(failed) == [case_id], failed
    assert phrase in failed[case_id], failed[case_id]


def test_reference_passes_every_case() -> None:
    report = run(ReferenceAccelerator, reference_target(), ReferenceHooks())
    assert [c.id for c in report.cases if c.status is not CaseStatus.PASSED] == []
    assert report.passed
