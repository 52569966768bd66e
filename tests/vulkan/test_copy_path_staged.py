"""A real Vulkan provider that stages its bindings through bounce buffers is caught by
``submission.copy-path-diagnostics`` - by the provider's own recording of what its descriptor writes name.

:class:`BounceStaged` is the real provider with the staging put below the recorder: the recording function
(``submission._record``) is wrapped so that every binding's descriptor names a fresh bounce ``VkBuffer``
of the bound range's size; the bound bytes are copied into it (host copy through both persistent
mappings) just before the batch is handed to the device, and back once the event is seen complete. The
bytes are right; only the copy-path record shows the copies.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from accel_vulkan import submission
from accel_vulkan.accelerator import VulkanAccelerator
from accel_vulkan.accounting import Ledger
from accel_vulkan.family import VulkanHooks
from accel_vulkan.memory import allocate
from accel_vulkan.memory import release as release_buffer

from accelcore import BindingRef, BufferDesc, BufferRange, EventState
from accelcore.conformance import CaseStatus, run
from accelcore.conformance.corpus import standard_target
from accelcore.devices.registry import DeviceEntry
from accelcore.kernels.package import ModuleKind

from .conftest import VALIDATION, assert_clean

CASE = "submission.copy-path-diagnostics"


BOUNCES = Ledger()
"""The bounce buffers' own ledger (the provider's accounts only what it made itself)."""


class BounceStaged(VulkanAccelerator):
    """Copies in / out around each run (see the module docstring); the recordings carry their bounces."""

    def poll_event(self, event: Any) -> EventState:
        state = super().poll_event(event)
        recording = event.recording
        if state == EventState.COMPLETE and recording is not None and getattr(recording, "pending_copy_back", False):
            for bounce, ref in recording.bounces:
                offset, size = ref.range.offset, ref.range.bytes
                ref.buffer.mapped[offset : offset + size] = bounce.mapped[0:size]
            recording.pending_copy_back = False
        return state

    def destroy_event(self, event: Any) -> None:
        bounces = list(getattr(event.recording, "bounces", ()))
        super().destroy_event(event)  # frees the recording (it is never cached), so the bounces are unused
        for bounce, _ in bounces:
            release_buffer(bounce, BOUNCES)


@pytest.fixture
def staged(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[BounceStaged]]:
    made: list[BounceStaged] = []
    real_record, real_hand_over = submission._record, submission.hand_over

    def record(context: Any, program: Any, bindings: Any, key: Any, push: Any, groups: Any, ledger: Any) -> Any:
        description = made[-1].description
        bounces = []
        for ref in bindings:
            desc = BufferDesc(ref.range.bytes, ref.buffer.desc.alignment, ref.buffer.desc.domain, ref.buffer.desc.usage)
            bounce = allocate(context, description, desc, BOUNCES)
            if bounce.mapped is None or ref.buffer.mapped is None or not (bounce.coherent and ref.buffer.coherent):
                pytest.skip("this bounce variant copies through coherent persistent mappings; the device has none")
            bounces.append((bounce, ref))
        staged_refs = [
            BindingRef(ref.slot, bounce, BufferRange(0, ref.range.bytes), ref.access) for bounce, ref in bounces
        ]
        recording = real_record(context, program, staged_refs, key, push, groups, ledger)
        recording.buffers = tuple(ref.buffer for ref in bindings)  # the event holds the caller's buffers
        recording.reusable = False  # freed with its event, before its bounces go
        recording.bounces = bounces
        return recording

    def hand_over(event: Any) -> None:
        recording = event.recording
        for bounce, ref in getattr(recording, "bounces", ()):
            offset, size = ref.range.offset, ref.range.bytes
            bounce.mapped[0:size] = ref.buffer.mapped[offset : offset + size]
        if hasattr(recording, "bounces"):
            recording.pending_copy_back = True
        real_hand_over(event)

    monkeypatch.setattr(submission, "_record", record)
    monkeypatch.setattr(submission, "hand_over", hand_over)
    yield made


def test_a_real_provider_that_stages_its_bindings_is_caught(entry: DeviceEntry, staged: list[BounceStaged]) -> None:
    target = standard_target(ModuleKind.SPIRV_VULKAN)

    def factory() -> BounceStaged:
        staged.append(BounceStaged(entry.uuid, validation=VALIDATION))
        return staged[-1]

    report = run(factory, target, VulkanHooks(), select=[CASE, "submission.binding-validation"])
    results = {c.id: c for c in report.cases}
    # The bytes are right: the case that checks them passes, and the copy-path case got past its own
    # content check to fail on the record.
    assert results["submission.binding-validation"].status is CaseStatus.PASSED, results[
        "submission.binding-validation"
    ].reason
    result = results[CASE]
    assert result.status is CaseStatus.FAILED, result.reason
    assert "2 of 2 bindings were staged (copied through a bounce buffer, 8192 bound bytes)" in result.reason
    written = sum(len(f.initial) for f in target.fixtures)
    assert result.metrics["copy_path"] == {
        "direct": 0,
        "shared": 0,
        "staged": 2,
        "staged_bytes": written,
        "transfer_bytes": written,
    }
    for instance in staged:
        assert_clean(instance)
    assert not any(BOUNCES.snapshot().values()), BOUNCES.snapshot()  # every bounce buffer was released
