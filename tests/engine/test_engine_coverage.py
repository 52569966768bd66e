"""The engine's coverage check (docs/engine.md "Coverage"): a kernel package's stated coverage is
compared with every bound range at submit, before the provider is called.

The reference provider gets a thin test subclass that loads a package artifact as its built-in
``copy`` program (so the engine's bookkeeping is exercised without a driver); one test runs the
corpus ``conformance`` kernel on every real device (PoCL, rusticl, lavapipe).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from accelcore import (
    AccessMode,
    ArtifactRef,
    BackendError,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ErrorKind,
    EventState,
    MemoryDomain,
    MemorySource,
)
from accelcore.conformance.corpus import kernel_spec, load_module
from accelcore.contract.program import TargetIdentity
from accelcore.engine import CommandEngine
from accelcore.kernels.pack import pack_module
from accelcore.kernels.package import Coverage, Dispatch, DispatchKind, ModuleKind
from accelcore.kernels.package_codec import write_package
from accelcore.testing import REFERENCE_FORMAT, REFERENCE_TARGET, FaultAccelerator, ReferenceAccelerator, encode_program

from .conftest import real_devices

U = BufferUsage
IN = U.TRANSFER_DESTINATION | U.TRANSFER_SOURCE | U.PROGRAM_INPUT
OUT = U.TRANSFER_SOURCE | U.TRANSFER_DESTINATION | U.PROGRAM_OUTPUT
R, W = AccessMode.READ, AccessMode.WRITE


class _PackageReference(ReferenceAccelerator):
    """Loads any kernel-package artifact as the reference ``copy`` program (slot 0 → slot 1)."""

    def load_program(self, context: Any, artifact: ArtifactRef) -> Any:
        if artifact.format != REFERENCE_FORMAT:
            artifact = ArtifactRef(
                REFERENCE_FORMAT, REFERENCE_TARGET, MemorySource(encode_program("copy")), artifact.resident_bytes
            )
        return super().load_program(context, artifact)


def _package(kind: ModuleKind = ModuleKind.OPENCL_SOURCE, **options: Any) -> bytes:
    spec = kernel_spec("conformance")
    options.setdefault("dispatch", spec.dispatch)
    pkg = pack_module(
        load_module("conformance", kind),
        kind=kind,
        entry_point=spec.entry_point(kind),
        bindings=spec.bindings,
        local_size=spec.local_size,
        **options,
    )
    return write_package(pkg)


def _artifact(payload: bytes, kind: ModuleKind = ModuleKind.OPENCL_SOURCE) -> ArtifactRef:
    from accelcore.kernels.package import format_for

    return ArtifactRef(format_for(kind), TargetIdentity.any(), MemorySource(payload), 64 << 20)


class _Rig:
    def __init__(self, payload: bytes) -> None:
        self.faults = FaultAccelerator(_PackageReference())
        self.engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(self.faults)
        self.context = self.engine.create_context()
        self.program = self.engine.load_program(self.context, _artifact(payload))
        self.queue = self.engine.create_queue(self.context)

    def buffer(self, nbytes: int, usage: BufferUsage) -> int:
        return self.engine.allocate_buffer(self.context, BufferDesc(nbytes, 16, MemoryDomain.HOST, usage))

    def submits(self) -> int:
        return self.faults.calls["submit"]


@pytest.mark.parametrize("as_tuple", [True, False], ids=["tuples", "binding_refs"])
def test_per_work_item_coverage_refuses_a_short_input_before_the_provider(as_tuple: bool) -> None:
    from accelcore import BindingRef

    rig = _Rig(_package(coverage={0: Coverage.PER_WORK_ITEM}))
    short, out = rig.buffer(64, IN), rig.buffer(4096, OUT)
    specs: list[Any] = [(0, short, None, R), (1, out, None, W)]
    if not as_tuple:
        specs = [BindingRef(s, b, BufferRange(0, n), a) for (s, b, _, a), n in zip(specs, (64, 4096), strict=True)]
    with pytest.raises(BackendError) as refused:
        rig.engine.submit(rig.queue, rig.program, specs)
    assert refused.value.kind is ErrorKind.INVALID_ARGUMENT
    message = str(refused.value)
    assert "slot 0" in message and "16 elements" in message and "needs 1024" in message, message
    assert rig.submits() == 0 and not rig.engine.live_objects().get("event")


def test_per_work_item_coverage_counts_whole_elements_of_a_subrange() -> None:
    rig = _Rig(_package(coverage={0: Coverage.PER_WORK_ITEM}))
    src, out = rig.buffer(4096, IN), rig.buffer(4096, OUT)
    # 4095 bytes are 1023 whole u32 elements: one short of the 1024 the dispatch covers.
    with pytest.raises(BackendError, match=r"slot 0.*1023 elements.*needs 1024"):
        rig.engine.submit(rig.queue, rig.program, [(0, src, BufferRange(0, 4095), R), (1, out, None, W)])
    # The dispatch follows slot 1: a shorter output shrinks what slot 0 must hold.
    event = rig.engine.submit(
        rig.queue, rig.program, [(0, src, BufferRange(0, 2048), R), (1, out, BufferRange(0, 2048), W)]
    )
    assert rig.engine.wait(event, timeout_s=10) is EventState.COMPLETE
    rig.engine.destroy_event(event)
    event = rig.engine.submit(rig.queue, rig.program, [(0, src, None, R), (1, out, None, W)])
    assert rig.engine.wait(event, timeout_s=10) is EventState.COMPLETE
    assert rig.submits() == 2


def test_exact_coverage_needs_that_many_elements_whatever_the_dispatch() -> None:
    rig = _Rig(_package(coverage={0: 8}))
    src8, src7, out = rig.buffer(32, IN), rig.buffer(28, IN), rig.buffer(4096, OUT)
    with pytest.raises(BackendError, match=r"slot 0.*7 elements.*needs 8 \(exact"):
        rig.engine.submit(rig.queue, rig.program, [(0, src7, None, R), (1, out, None, W)])
    assert rig.submits() == 0
    event = rig.engine.submit(rig.queue, rig.program, [(0, src8, None, R), (1, out, BufferRange(0, 32), W)])
    rig.engine.wait(event, timeout_s=10)
    assert rig.submits() == 1


def test_fixed_and_global_dispatches_count_work_items() -> None:
    fixed = _Rig(
        _package(
            coverage={0: Coverage.PER_WORK_ITEM}, dispatch=Dispatch(DispatchKind.FIXED, (2, 1, 1)), arguments={2: 128}
        )
    )
    src, out = fixed.buffer(4 * 127, IN), fixed.buffer(4096, OUT)
    with pytest.raises(BackendError, match=r"slot 0.*127 elements.*needs 128"):
        fixed.engine.submit(fixed.queue, fixed.program, [(0, src, None, R), (1, out, None, W)])
    glob = _Rig(_package(coverage={1: Coverage.PER_WORK_ITEM}, global_size=100, dispatch=None, count_argument=2))
    src, out = glob.buffer(4096, IN), glob.buffer(4 * 99, OUT)
    with pytest.raises(BackendError, match=r"slot 1.*99 elements.*needs 100"):
        glob.engine.submit(glob.queue, glob.program, [(0, src, None, R), (1, out, None, W)])
    assert fixed.submits() == glob.submits() == 0


def test_unknown_coverage_and_reference_programs_are_not_checked() -> None:
    rig = _Rig(_package())
    assert rig.engine._program(rig.program).coverage is None
    short, out = rig.buffer(64, IN), rig.buffer(4096, OUT)
    event = rig.engine.submit(rig.queue, rig.program, [(0, short, None, R), (1, out, BufferRange(0, 64), W)])
    rig.engine.wait(event, timeout_s=10)
    assert rig.submits() == 1


def test_a_package_the_engine_cannot_decode_is_left_to_the_provider() -> None:
    faults = FaultAccelerator(ReferenceAccelerator())
    engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(faults)
    context = engine.create_context()
    with pytest.raises(BackendError) as refused:
        engine.load_program(context, _artifact(b"not a package"))
    assert refused.value.kind is ErrorKind.UNSUPPORTED  # the reference provider's refusal of the format


def _device_kind(family: Any) -> ModuleKind:
    return ModuleKind.SPIRV_VULKAN if family.name == "vulkan" else ModuleKind.OPENCL_SOURCE


@pytest.mark.parametrize(("family", "entry"), real_devices())
def test_coverage_refusal_on_a_real_device(family: Any, entry: Any) -> None:
    kind = _device_kind(family)
    inner = family.open(entry)
    faults = FaultAccelerator(inner)
    engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(faults)
    try:
        context = engine.create_context()
        program = engine.load_program(context, _artifact(_package(kind, coverage={0: Coverage.PER_WORK_ITEM}), kind))
        queue = engine.create_queue(context)
        domain = next(d for d in MemoryDomain if engine.info.capabilities.supports_memory_domain(d))
        short = engine.allocate_buffer(context, BufferDesc(64, 64, domain, IN))
        full = engine.allocate_buffer(context, BufferDesc(4096, 64, domain, IN))
        out = engine.allocate_buffer(context, BufferDesc(4096, 64, domain, OUT))
        engine.write_buffer(full, 0, np.arange(1024, dtype=np.uint32).tobytes())
        with pytest.raises(BackendError, match=r"slot 0.*16 elements.*needs 1024"):
            engine.submit(queue, program, [(0, short, None, R), (1, out, None, W)])
        assert faults.calls["submit"] == 0
        event = engine.submit(queue, program, [(0, full, None, R), (1, out, None, W)])
        assert engine.wait(event, timeout_s=30) is EventState.COMPLETE
        engine.destroy_event(event)
    finally:
        engine.reset()
        close = getattr(inner, "close", None)
        if callable(close):
            close()
