from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from accelcore import AccessMode, ArtifactRef, BufferDesc, BufferUsage, MemoryDomain, MemorySource
from accelcore.engine import CommandEngine, ResourcePolicy
from accelcore.testing import REFERENCE_FORMAT, REFERENCE_TARGET, FaultAccelerator, ReferenceAccelerator, encode_program
from accelcore.testing.pytest_support import real_device_params

U = BufferUsage
IN = U.TRANSFER_DESTINATION | U.TRANSFER_SOURCE | U.PROGRAM_INPUT
OUT = U.TRANSFER_SOURCE | U.TRANSFER_DESTINATION | U.PROGRAM_OUTPUT
N = 16


def add_artifact(resident_bytes: int = 4096) -> ArtifactRef:
    return ArtifactRef(REFERENCE_FORMAT, REFERENCE_TARGET, MemorySource(encode_program("add_u32")), resident_bytes)


@dataclass
class Rig:
    """An engine over FaultAccelerator(ReferenceAccelerator) with one ready add_u32 set-up."""

    reference: ReferenceAccelerator
    faults: FaultAccelerator
    engine: CommandEngine[object, object, object, object, object]
    context: int
    a: int
    b: int
    out: int
    program: int
    queue: int

    def bindings(self) -> list[tuple[int, int, None, AccessMode]]:
        return [
            (0, self.a, None, AccessMode.READ),
            (1, self.b, None, AccessMode.READ),
            (2, self.out, None, AccessMode.WRITE),
        ]

    def run_and_check(self) -> None:
        """A full submission through the engine produces a + b."""
        event = self.engine.submit(self.queue, self.program, self.bindings())
        self.engine.wait(event, timeout_s=10)
        got = np.frombuffer(self.engine.read_buffer(self.out), np.uint32)
        assert got.tolist() == [i + 100 for i in range(N)]
        self.engine.destroy_event(event)


def make_rig(policy: ResourcePolicy | None = None, reference: ReferenceAccelerator | None = None) -> Rig:
    reference = reference or ReferenceAccelerator()
    faults = FaultAccelerator(reference)
    engine: CommandEngine[object, object, object, object, object] = CommandEngine(faults, policy)
    return populate(engine, reference, faults)


def populate(
    engine: CommandEngine[object, object, object, object, object],
    reference: ReferenceAccelerator,
    faults: FaultAccelerator,
) -> Rig:
    context = engine.create_context()
    a = engine.allocate_buffer(context, BufferDesc(4 * N, 16, MemoryDomain.HOST, IN))
    b = engine.allocate_buffer(context, BufferDesc(4 * N, 16, MemoryDomain.DEVICE, IN))
    out = engine.allocate_buffer(context, BufferDesc(4 * N, 16, MemoryDomain.SHARED, OUT))
    engine.write_buffer(a, 0, np.arange(N, dtype=np.uint32))
    engine.write_buffer(b, 0, np.full(N, 100, dtype=np.uint32).tobytes())
    program = engine.load_program(context, add_artifact())
    queue = engine.create_queue(context)
    return Rig(reference, faults, engine, context, a, b, out, program, queue)


@pytest.fixture
def rig() -> Rig:
    return make_rig()


@pytest.fixture
def make() -> object:
    """The rig factory: ``make(policy=None, reference=None) -> Rig``."""
    return make_rig


def real_devices() -> list[Any]:
    """``(family, entry)`` params of every wanted real device (ACCEL_DEVICES); a missing family is a skip."""
    return real_device_params()


def load_target(
    engine: CommandEngine[Any, Any, Any, Any, Any], target: Any
) -> tuple[int, list[tuple[Any, int]], int, int]:
    """A conformance ``target`` set up through ``engine``: (context, [(fixture, buffer written with its initial
    bytes)], program, queue)."""
    context = engine.create_context()
    buffers = []
    for fixture in target.fixtures:
        desc = BufferDesc(len(fixture.initial), fixture.alignment, fixture.domain, fixture.buffer_usage())
        buffer = engine.allocate_buffer(context, desc)
        engine.write_buffer(buffer, 0, fixture.initial)
        buffers.append((fixture, buffer))
    artifact = ArtifactRef(target.format, target.target, MemorySource(target.artifact), target.resident_bytes)
    return context, buffers, engine.load_program(context, artifact), engine.create_queue(context)
