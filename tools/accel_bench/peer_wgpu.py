"""The peer: wgpu-py (wgpu-native) compute on the same Vulkan device.

A round trip encodes one compute pass (WebGPU command buffers are single-use,
so encoding is part of every submission there), submits it and waits with
``queue.on_submitted_work_done_sync()`` — or, where that call is broken (wgpu-py
0.32.0 passes a callback of the wrong C type to its wgpu-native), with
``wgpuDevicePoll(wait=True)`` through ``device._poll_wait()``; ``wait_method``
records which. The shader is the same SPIR-V as the
raw Vulkan baseline, fed through wgpu's SPIR-V front end.

Typing: wgpu-py ships no type information, so ``wgpu.*`` is ``Any``; the few
wgpu objects this module keeps are annotated with the small Protocols below
(only the calls used here). Annotations cost nothing at run time: the timed
``round_trip`` makes exactly the wgpu calls it always made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import wgpu  # type: ignore[import-untyped]

from . import kernels

__all__ = ["WgpuPeer"]


class _Buffer(Protocol):
    @property
    def size(self) -> int: ...
    def destroy(self) -> None: ...


class _ComputePass(Protocol):
    def set_pipeline(self, pipeline: object) -> None: ...
    def set_bind_group(self, index: int, bind_group: object) -> None: ...
    def dispatch_workgroups(self, x: int, y: int, z: int) -> None: ...
    def end(self) -> None: ...


class _CommandEncoder(Protocol):
    def begin_compute_pass(self) -> _ComputePass: ...
    def finish(self) -> object: ...


class _Queue(Protocol):
    def submit(self, command_buffers: Sequence[object]) -> None: ...
    def on_submitted_work_done_sync(self) -> None: ...
    def read_buffer(self, buffer: _Buffer) -> memoryview: ...


class _Device(Protocol):
    @property
    def queue(self) -> _Queue: ...
    def create_command_encoder(self) -> _CommandEncoder: ...
    def _poll_wait(self) -> None: ...
    def destroy(self) -> None: ...


class WgpuPeer:
    """One wgpu device on the Vulkan adapter whose name matches ``device_name`` (first Vulkan adapter if None)."""

    def __init__(self, device_name: str | None = None) -> None:
        adapter = None
        for candidate in wgpu.gpu.enumerate_adapters_sync():
            info = candidate.info
            if info.get("backend_type") != "Vulkan":
                continue
            if device_name is None or info.get("device") == device_name:
                adapter = candidate
                break
        if adapter is None:
            raise LookupError(f"wgpu finds no Vulkan adapter named {device_name!r}")
        self.adapter_info = {key: str(value) for key, value in dict(adapter.info).items()}
        device = adapter.request_device_sync()
        self.device: _Device = device
        self.buffer: _Buffer = device.create_buffer_with_data(
            data=np.zeros(kernels.ELEMENTS, dtype=np.uint32),
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC,
        )
        shader = device.create_shader_module(code=kernels.tiny_spirv())
        pipeline = device.create_compute_pipeline(
            layout="auto", compute={"module": shader, "entry_point": kernels.SPIRV_ENTRY}
        )
        self.pipeline: object = pipeline
        self.bind_group: object = device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": {"buffer": self.buffer, "offset": 0, "size": self.buffer.size}}],
        )
        self.wait_method = "queue.on_submitted_work_done_sync"
        try:
            self.device.queue.on_submitted_work_done_sync()
        except TypeError:
            self.wait_method = "wgpuDevicePoll(wait=True) via device._poll_wait"

    def round_trip(self) -> None:
        encoder = self.device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.bind_group)
        compute.dispatch_workgroups(kernels.ELEMENTS // kernels.LOCAL_SIZE, 1, 1)
        compute.end()
        self.device.queue.submit([encoder.finish()])
        if self.wait_method == "queue.on_submitted_work_done_sync":
            self.device.queue.on_submitted_work_done_sync()
        else:
            self.device._poll_wait()

    def values(self) -> np.ndarray:
        data = self.device.queue.read_buffer(self.buffer)
        return np.frombuffer(data, dtype=np.uint32).copy()

    def close(self) -> None:
        self.buffer.destroy()
        self.device.destroy()
