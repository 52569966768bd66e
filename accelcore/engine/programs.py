"""Program and queue calls of the engine: loading programs against the policy, creating queues, releases."""

from __future__ import annotations

from ..contract.device import QueueDesc
from ..contract.errors import BackendError, ErrorKind
from ..contract.program import ArtifactRef
from .base import B, C, E, EngineBase, P, Q
from .coverage import coverage_rule
from .entries import _Program, _Queue


class ProgramCalls(EngineBase[C, B, P, Q, E]):
    """Load and unload programs, create and destroy queues (mixed into :class:`~.core.CommandEngine`)."""

    def load_program(self, context_id: int, artifact: ArtifactRef) -> int:
        """Load a program; ``artifact.resident_bytes`` is charged to the policy before the load."""
        self._admitting()
        ctx = self._context(context_id)
        limit = self._info.limits.max_programs_per_context
        if len(ctx.programs) >= limit:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_programs_per_context {limit} reached")
        size = artifact.payload.len()
        if size > self._info.limits.max_artifact_bytes:
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"artifact of {size} bytes exceeds max_artifact_bytes {self._info.limits.max_artifact_bytes}",
            )
        self.usage.check_resident(self.policy, artifact.resident_bytes, "program")
        rule = coverage_rule(artifact, self._info.limits.max_artifact_bytes)
        self.usage.resident_bytes += artifact.resident_bytes
        try:
            handle = self._provider.load_program(ctx.handle, artifact)
        except BackendError as exc:
            self.usage.resident_bytes -= artifact.resident_bytes
            self._watch(exc, "load_program")
            raise
        except BaseException:
            self.usage.resident_bytes -= artifact.resident_bytes
            raise
        program_id = self._programs.insert(_Program(handle, context_id, artifact.resident_bytes, ctx, coverage=rule))
        ctx.programs.add(program_id)
        return program_id

    def unload_program(self, program_id: int) -> None:
        self._usable()
        entry = self._program(program_id)
        self._not_referenced(program_id, entry.events)
        self._release(self._programs, program_id, entry, self._provider.unload_program)

    def create_queue(self, context_id: int, desc: QueueDesc | None = None) -> int:
        self._admitting()
        ctx = self._context(context_id)
        desc = desc if desc is not None else QueueDesc()
        self._info.validate_queue_desc(desc)
        limit = self._info.limits.max_queues_per_context
        if len(ctx.queues) >= limit:
            raise BackendError(ErrorKind.RESOURCE_LIMIT, f"max_queues_per_context {limit} reached")
        try:
            handle = self._provider.create_queue(ctx.handle, desc)
        except BackendError as exc:
            self._watch(exc, "create_queue")
            raise
        queue_id = self._queues.insert(_Queue(handle, context_id, ctx))
        ctx.queues.add(queue_id)
        return queue_id

    def destroy_queue(self, queue_id: int) -> None:
        self._usable()
        entry = self._queue(queue_id)
        self._not_referenced(queue_id, entry.events)
        self._release(self._queues, queue_id, entry, self._provider.destroy_queue)
