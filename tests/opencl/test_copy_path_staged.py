"""A real OpenCL provider that stages its bindings through bounce buffers is caught by
``submission.copy-path-diagnostics`` - by the provider's own recording of what reached ``clSetKernelArg``.

:class:`BounceStaged` is the real provider with one change below the recorder: every bound range is
copied (``clEnqueueCopyBuffer`` on the execution queue, ahead of the kernel) into a fresh buffer, the
kernel gets that buffer, and the results are copied back once the event is seen complete. The bytes are
right, so every other case passes; only the copy-path record shows the copies.
"""

from __future__ import annotations

from typing import Any

from accel_opencl.accelerator import OpenCLAccelerator, _LaunchPlan
from accel_opencl.discovery import find_device
from accel_opencl.family import OpenCLHooks
from accel_opencl.gating import OpenCLEvent, OpenCLQueue
from accel_opencl.handles import OpenCLProgram

from accelcore import EventState
from accelcore.conformance import CaseStatus, run
from accelcore.conformance.corpus import standard_target
from accelcore.devices.registry import DeviceEntry
from accelcore.kernels.package import ModuleKind

CASE = "submission.copy-path-diagnostics"


class BounceStaged(OpenCLAccelerator):
    """Binds a copy of every bound range instead of the buffer (see the module docstring).

    The staging sits in the plan every accepted submission is enqueued from (``_check_submission``), so it
    holds whichever enqueue path the provider takes (the whole-buffer fast path or the sub-buffer one)."""

    def __init__(self, native: Any) -> None:
        super().__init__(native)
        self.bounces: dict[OpenCLEvent, list[tuple[Any, Any]]] = {}
        self._pending: list[tuple[Any, Any]] = []

    def _check_submission(self, queue: OpenCLQueue, program: OpenCLProgram, bindings: Any) -> _LaunchPlan:
        plan = super()._check_submission(queue, program, bindings)
        cl = self._cl
        pairs = []
        for argument in plan.arguments:
            bounce = cl.Buffer(queue.context.native, cl.mem_flags.READ_WRITE, argument.bytes)
            cl.enqueue_copy(
                queue.native, bounce, argument.buffer.native, byte_count=argument.bytes, src_offset=argument.offset
            )
            pairs.append((bounce, argument))
        staged = _LaunchPlan(
            plan.key, plan.arguments, plan.buffers, plan.count_argument, plan.global_size, plan.local_size
        )
        staged.natives = tuple((argument.index, bounce) for bounce, argument in pairs)
        staged.ranged = ()
        staged.viewed = staged.natives
        self._pending = pairs
        return staged

    def submit(self, queue: OpenCLQueue, program: OpenCLProgram, bindings: Any, *args: Any, **kwargs: Any) -> Any:
        self._pending = []
        try:
            event = super().submit(queue, program, bindings, *args, **kwargs)
        except BaseException:
            for bounce, _ in self._pending:  # refused after staging: nothing will run on the copies
                bounce.release()
            raise
        self.bounces[event] = self._pending
        return event

    def poll_event(self, event: OpenCLEvent) -> EventState:
        state = super().poll_event(event)
        pairs = self.bounces.pop(event, None) if state == EventState.COMPLETE else None
        if pairs:
            native_queue = event.submission.queue.native
            for bounce, argument in pairs:
                self._cl.enqueue_copy(
                    native_queue, argument.buffer.native, bounce, byte_count=argument.bytes, dst_offset=argument.offset
                )
            native_queue.finish()
            for bounce, _ in pairs:
                bounce.release()
        return state

    def destroy_event(self, event: OpenCLEvent) -> None:
        super().destroy_event(event)
        for bounce, _ in self.bounces.pop(event, []):
            bounce.release()


def test_a_real_provider_that_stages_its_bindings_is_caught(entry: DeviceEntry) -> None:
    native = find_device(entry)
    target = standard_target(ModuleKind.OPENCL_SOURCE)
    made: list[BounceStaged] = []

    def factory() -> BounceStaged:
        made.append(BounceStaged(native))
        return made[-1]

    report = run(factory, target, OpenCLHooks(), select=[CASE, "submission.binding-validation"])
    results = {c.id: c for c in report.cases}
    # The bytes are right: the case that checks them passes, and the copy-path case got past its own
    # content check to fail on the record.
    assert results["submission.binding-validation"].status is CaseStatus.PASSED
    result = results[CASE]
    assert result.status is CaseStatus.FAILED
    assert "2 of 2 bindings were staged (copied through a bounce buffer, 8192 bound bytes)" in result.reason
    assert result.metrics["copy_path"] == {
        "direct": 0,
        "shared": 0,
        "staged": 2,
        "staged_bytes": sum(len(f.initial) for f in target.fixtures),
        "transfer_bytes": sum(len(f.initial) for f in target.fixtures),
    }
    assert all(not m.bounces for m in made)  # every bounce buffer was released


def test_the_unmodified_provider_passes_the_same_run(entry: DeviceEntry) -> None:
    native = find_device(entry)
    report = run(
        lambda: OpenCLAccelerator(native), standard_target(ModuleKind.OPENCL_SOURCE), OpenCLHooks(), select=[CASE]
    )
    (result,) = report.cases
    assert result.status is CaseStatus.PASSED, result.reason
    assert result.metrics["copy_path"]["staged"] == 0
