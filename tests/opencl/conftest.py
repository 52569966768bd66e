"""OpenCL provider tests: parametrized over every OpenCL device found.

rusticl shows its llvmpipe device only when ``RUSTICL_ENABLE=swrast`` is set
before the first enumeration, so it is set (if unset) before pyopencl is
imported. Narrow the run with ``ACCEL_DEVICES``: a comma list of globs matched
against the ids (``opencl:0-pocl``), e.g. ``ACCEL_DEVICES='*rusticl'``.
"""

from __future__ import annotations

import os

os.environ.setdefault("RUSTICL_ENABLE", "swrast")
# Keep the provider's on-disk binary cache out of the user's home during tests.
os.environ.setdefault("ACCELCORE_CACHE_DIR", __import__("tempfile").mkdtemp(prefix="accel-opencl-cache-"))

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from accelcore import (
    BindingRef,
    BufferDesc,
    BufferRange,
    BufferUsage,
    ContextDesc,
    EventState,
    MemoryDomain,
    MemorySink,
    MemorySource,
    QueueDesc,
    Timeout,
)
from accelcore.contract.waiting import poll_until_terminal
from accelcore.devices.registry import DeviceEntry
from accelcore.kernels.package import Dispatch, DispatchKind, KernelPackage, ModuleKind, PackageBinding
from accelcore.testing.pytest_support import parametrize_entry

RW_USAGE = BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION


def _discover() -> Any:
    from accel_opencl import provider_family

    return provider_family.discover()


pytest_generate_tests = parametrize_entry(_discover, "OpenCL")


@pytest.fixture
def accel(entry: DeviceEntry) -> Iterator[Any]:
    """A fresh OpenCLAccelerator; the test must leave no live native object behind."""
    from accel_opencl import provider_family

    instance = provider_family.open(entry)
    yield instance
    live = {k: v for k, v in instance.live_resources().items() if v}
    assert not live, f"test left live native objects: {live}"


def tag_of(entry: DeviceEntry) -> str:
    return entry.native.get("tag", "")


# --------------------------------------------------------------------------- helpers


DOUBLE_SOURCE = """
__kernel void twice(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i < count) { dst[i] = src[i] * 2u + 1u; }
}
"""


def twice_package(source: str = DOUBLE_SOURCE, entry: str = "twice", options: str = "") -> KernelPackage:
    """A small inline OpenCL C package: slot 0 READ, slot 1 WRITE, count at argument 2."""
    return KernelPackage(
        module_kind=ModuleKind.OPENCL_SOURCE,
        entry_point=entry,
        local_size=(16, 1, 1),
        bindings=(PackageBinding(0, 0, access_of("r")), PackageBinding(1, 1, access_of("w"))),
        dispatch=Dispatch(DispatchKind.FROM_BINDING, slot=1, count_argument=2),
        module=source.encode("utf-8"),
        build_options=options,
    )


def access_of(text: str) -> Any:
    from accelcore import AccessMode

    return {"r": AccessMode.READ, "w": AccessMode.WRITE, "rw": AccessMode.READ_WRITE}[text]


class Rig:
    """Context + queue + helpers on one instance; ``close()`` releases everything it made."""

    def __init__(self, accel: Any, domain: MemoryDomain = MemoryDomain.HOST) -> None:
        self.accel = accel
        self.domain = domain
        self.context = accel.create_context(ContextDesc())
        self.queue = accel.create_queue(self.context, QueueDesc())
        self.buffers: list[Any] = []
        self.programs: list[Any] = []
        self.events: list[Any] = []

    def buffer(self, data: bytes | np.ndarray, access: str) -> Any:
        raw = bytes(data) if isinstance(data, bytes) else data.tobytes()
        program = {
            "r": BufferUsage.PROGRAM_INPUT,
            "w": BufferUsage.PROGRAM_OUTPUT,
            "rw": BufferUsage.MUTABLE_STATE,
        }[access]
        desc = BufferDesc(len(raw), 16, self.domain, RW_USAGE | program)
        handle = self.accel.allocate_buffer(self.context, desc).buffer
        self.accel.write_buffer(handle, 0, MemorySource(raw))
        self.buffers.append(handle)
        return handle

    def read(self, buffer: Any) -> bytes:
        out = bytearray(buffer.info.desc.bytes)
        self.accel.read_buffer(buffer, 0, MemorySink(out))
        return bytes(out)

    def load(self, package: KernelPackage, resident_bytes: int = 64 << 20) -> Any:
        program = self.accel.load_package(self.context, package, resident_bytes)
        self.programs.append(program)
        return program

    def submit(self, program: Any, slots: dict[int, tuple[Any, str]], timeout: Timeout = Timeout.INFINITE) -> Any:
        bindings = [
            BindingRef(slot, buf, BufferRange(0, buf.info.desc.bytes), access_of(access))
            for slot, (buf, access) in sorted(slots.items())
        ]
        event = self.accel.submit(self.queue, program, bindings, timeout)
        self.events.append(event)
        return event

    def wait(self, event: Any, limit_s: float = 60.0) -> EventState:
        state = poll_until_terminal(lambda: self.accel.poll_event(event), limit_s)
        assert state is not None, f"event still pending after {limit_s}s"
        return state

    def run_corpus(self, program: Any, kernel: str, case: Any) -> None:
        """Run corpus kernel ``kernel`` as ``program`` on ``case`` (a buffer per binding, its initial bytes):
        it completes and every expected slot matches numpy (``accelcore.conformance.corpus.compare``)."""
        from accelcore.conformance.corpus import compare, kernel_spec

        slots = {}
        for row in kernel_spec(kernel).bindings:
            access = {1: "r", 2: "w", 3: "rw"}[int(row.access)]  # the letters of access_of
            slots[row.slot] = (self.buffer(case.initial[row.slot], access), access)
        assert str(self.wait(self.submit(program, slots))) == "Complete"
        for slot in case.expected:
            problem = compare(case, slot, self.read(slots[slot][0]))
            assert problem is None, problem

    def close(self) -> None:
        for event in self.events:
            self.wait(event)
            self.accel.destroy_event(event)
        for program in self.programs:
            self.accel.unload_program(program)
        for buffer in self.buffers:
            self.accel.free_buffer(buffer)
        self.accel.destroy_queue(self.queue)
        self.accel.destroy_context(self.context)


@pytest.fixture
def rig(accel: Any) -> Iterator[Rig]:
    r = Rig(accel)
    yield r
    if r.accel.hold.on:
        for event in r.events:
            r.accel.release_held(event)
    r.close()


@pytest.fixture
def make_package() -> Callable[..., KernelPackage]:
    """``make_package(source=..., entry=..., options=...)``: the inline ``twice`` package by default."""
    return twice_package


@pytest.fixture
def make_rig(accel: Any) -> Iterator[Callable[..., Rig]]:
    """Extra rigs on the same instance (e.g. another domain); all closed at teardown."""
    made: list[Rig] = []

    def factory(domain: MemoryDomain = MemoryDomain.HOST) -> Rig:
        r = Rig(accel, domain)
        made.append(r)
        return r

    yield factory
    for r in made:
        if accel.hold.on:
            for event in r.events:
                accel.release_held(event)
        r.close()
