"""Item 7: the high-level call (docs/benchmarks.md, "High-level call").

``accelcore.api`` (docs/python.md) against the call a user of the peer library writes, on
the same device, the same SAXPY (``y = a * x + y``, f32) and the same problem sizes, in one
rotation (every repeat runs every operation once, so drifting machine load hits them alike):

OpenCL devices: ours ``k(a=np.float32(a), x=..., y=..., n=np.int32(n), global_size=n)`` on
``artifacts/src/opencl/saxpy_args.cl``, against PyOpenCL's kernel call
``knl(queue, (n,), None, np.float32(a), x_buf, y_buf, np.int32(n))`` + ``wait()`` on the program
built from the same source.
Vulkan devices: ours on ``artifacts/src/glsl/saxpy_pc.comp`` (push constants ``a``, ``n``), against
wgpu-py on the same adapter with the same SPIR-V (compiled once from that GLSL): compute
pipeline, explicit layout with 8 bytes of immediates (push constants) and bind group made once;
per call a command encoder, one compute pass (pipeline, bind group, ``set_immediates``,
dispatch), submit, then the wait.

Two variants per size:
``host arrays``
    numpy arrays in and out: ours allocates, uploads x and y, submits, waits, reads y back into
    the caller's array and frees (what the layer does for host arrays); PyOpenCL
    ``enqueue_copy`` x and y in, the kernel call, ``enqueue_copy`` y out (blocking) on buffers
    made once; wgpu ``queue.write_buffer`` x and y, the dispatch, ``queue.read_buffer`` y copied
    into the array.
``device arrays``
    no transfers: ours on ``dev.array(...)`` arrays, PyOpenCL on its buffers kept on the device,
    wgpu on its storage buffers (submit + wait).

Targets: ours within 1.5x of PyOpenCL's kernel call on every OpenCL device, and
faster than wgpu-py on lavapipe. Every side's result is checked once against numpy before the
clock starts. Where a target is missed the high-level call is profiled (cProfile, device arrays,
smallest size): the functions of accelcore, the providers and the drivers' Python bindings by
cumulative time per call, plus the per-call repack (``pack_module`` + ``write_package``) timed
on its own without the profiler.
"""

from __future__ import annotations

import cProfile
import pstats
import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from accelcore.api import Device, Kernel
from accelcore.conformance import corpus
from accelcore.devices.registry import DeviceEntry, ProviderFamily
from accelcore.kernels.glsl import compile_glsl
from accelcore.kernels.pack import pack_module
from accelcore.kernels.package_codec import write_package

from .stats import Stat, measure_interleaved

__all__ = ["BOUNDS", "VARIANTS", "Settings", "measure_device", "settings_for"]

VARIANTS = ("host arrays", "device arrays")
A = 2.5
"""The scalar ``a`` of every call (the same value each call: what a loop over one kernel passes)."""
BOUNDS = {
    "opencl": ("pyopencl", 1.5, "ours within 1.5x of PyOpenCL's kernel call (time ratio <= 1.5)"),
    "vulkan": ("wgpu", 1.0, "ours faster than wgpu-py (time ratio < 1)"),
}
"""API → (peer side, bound on ours / peer median time, the target as the issue states it)."""
OPENCL_SOURCE = Path("src/opencl/saxpy_args.cl")
GLSL_SOURCE = Path("src/glsl/saxpy_pc.comp")
Array = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Settings:
    """Problem sizes (f32 elements) and repeat counts of the group."""

    sizes: tuple[int, ...]
    warmup: int
    repeats: int
    profile_calls: int
    """High-level calls under cProfile per variant (smallest size)."""
    profile_top: int = 25

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def settings_for(quick: bool) -> Settings:
    """4096 and 1 Mi f32 elements, 5 warm-up and 41 timed rounds (``--quick``: 4096 only, 1 + 3 rounds)."""
    if quick:
        return Settings(sizes=(4096,), warmup=1, repeats=3, profile_calls=5, profile_top=10)
    return Settings(sizes=(4096, 1 << 20), warmup=5, repeats=41, profile_calls=200)


def _inputs(n: int, seed: int) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


def _expected(x: Array, y: Array) -> Array:
    return (np.float32(A) * x + y).astype(np.float32)


def _close(got: Array, want: Array) -> bool:
    return bool(np.allclose(got, want, rtol=1e-5, atol=1e-6))


class Side(Protocol):
    """One library's way to run the SAXPY: per size, a callable per variant and a check of its result."""

    name: str

    def ops(self, n: int) -> dict[str, Callable[[], object]]: ...

    def verified(self, n: int) -> dict[str, bool]: ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------------- ours


class Ours:
    """``accelcore.api.Device`` over a fresh provider instance; the kernel loaded once."""

    name = "ours"

    def __init__(self, family: ProviderFamily, entry: DeviceEntry, api: str) -> None:
        self.api = api
        self.device = Device(family.open(entry), entry)
        source = corpus.corpus_root() / (OPENCL_SOURCE if api == "opencl" else GLSL_SOURCE)
        self.kernel: Kernel = self.device.kernel(source)
        self.arrays: dict[int, tuple[Array, Array, Any, Any]] = {}

    def scalars(self, n: int) -> tuple[object, object]:
        """The scalars as the docs pass them: numpy scalars of the declared types (OpenCL), plain numbers
        for push-constant members (Vulkan)."""
        if self.api == "opencl":
            return np.float32(A), np.int32(n)
        return A, n

    def _arrays(self, n: int) -> tuple[Array, Array, Any, Any]:
        if n not in self.arrays:
            x, y = _inputs(n, 1)
            self.arrays[n] = (x, y, self.device.array(x), self.device.array(y))
        return self.arrays[n]

    def ops(self, n: int) -> dict[str, Callable[[], object]]:
        x, y, dx, dy = self._arrays(n)
        kernel, (a, count) = self.kernel, self.scalars(n)

        def host_arrays() -> object:
            return kernel(a=a, x=x, y=y, n=count, global_size=n)

        def device_arrays() -> object:
            return kernel(a=a, x=dx, y=dy, n=count, global_size=n)

        return {"host arrays": host_arrays, "device arrays": device_arrays}

    def verified(self, n: int) -> dict[str, bool]:
        x, y0 = _inputs(n, 2)
        y = y0.copy()
        a, count = self.scalars(n)
        self.kernel(a=a, x=x, y=y, n=count, global_size=n)
        host = _close(y, _expected(x, y0))
        dx, dy = self.device.array(x), self.device.array(y0)
        try:
            self.kernel(a=a, x=dx, y=dy, n=count, global_size=n)
            device = _close(dy.numpy(), _expected(x, y0))
        finally:
            dx.free()
            dy.free()
        return {"host arrays": host, "device arrays": device}

    def repack(self, n: int) -> Callable[[], object]:
        """What every call re-does for its scalars: ``pack_module`` + ``write_package`` (the program cache key)."""
        module, kind = self.kernel._module, self.kernel.kind
        if self.api == "opencl":
            arguments: dict[str | int, object] = {"a": np.float32(A), "n": np.int32(n)}

            def pack() -> object:
                return write_package(pack_module(module, kind=kind, global_size=n, arguments=arguments))

        else:
            push: dict[str | int, object] = {"a": A, "n": n}

            def pack() -> object:
                return write_package(pack_module(module, kind=kind, global_size=n, push_constants=push))

        return pack

    def close(self) -> None:
        self.device.close()


# ---------------------------------------------------------------------------------------------- PyOpenCL


class PyOpenCL:
    """PyOpenCL the way its examples write it: one context and queue, the program built from the same source."""

    name = "pyopencl"

    def __init__(self, cl_device: Any) -> None:
        import pyopencl as cl

        self.cl = cl
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context, cl_device)
        source = (corpus.corpus_root() / OPENCL_SOURCE).read_text(encoding="utf-8")
        self.kernel = cl.Program(self.context, source).build().saxpy
        self.buffers: dict[tuple[int, str], tuple[Array, Array, Any, Any]] = {}

    def _buffers(self, n: int, variant: str) -> tuple[Array, Array, Any, Any]:
        """Buffers of one variant: each variant has its own, as ours has (temporaries for host arrays,
        ``dev.array``s for device arrays), so one variant never finds the other's data in the caches."""
        if (n, variant) not in self.buffers:
            cl = self.cl
            x, y = _inputs(n, 3)
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
            self.buffers[n, variant] = (
                x,
                y,
                cl.Buffer(self.context, flags, hostbuf=x),
                cl.Buffer(self.context, flags, hostbuf=y),
            )
        return self.buffers[n, variant]

    def ops(self, n: int) -> dict[str, Callable[[], object]]:
        cl, queue, knl = self.cl, self.queue, self.kernel
        x, y, x_buf, y_buf = self._buffers(n, "host arrays")
        _, _, dx_buf, dy_buf = self._buffers(n, "device arrays")
        size = (n,)

        def host_arrays() -> object:
            cl.enqueue_copy(queue, x_buf, x)
            cl.enqueue_copy(queue, y_buf, y)
            knl(queue, size, None, np.float32(A), x_buf, y_buf, np.int32(n))
            return cl.enqueue_copy(queue, y, y_buf)  # blocking: waits for the kernel too (in-order queue)

        def device_arrays() -> object:
            event = knl(queue, size, None, np.float32(A), dx_buf, dy_buf, np.int32(n))
            event.wait()
            return event

        return {"host arrays": host_arrays, "device arrays": device_arrays}

    def verified(self, n: int) -> dict[str, bool]:
        cl, queue, knl = self.cl, self.queue, self.kernel
        x, y0 = _inputs(n, 4)
        want = _expected(x, y0)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        x_buf, y_buf = cl.Buffer(self.context, flags, hostbuf=x), cl.Buffer(self.context, flags, hostbuf=y0)
        try:
            knl(queue, (n,), None, np.float32(A), x_buf, y_buf, np.int32(n)).wait()
            got = np.empty_like(y0)
            cl.enqueue_copy(queue, got, y_buf)
        finally:
            x_buf.release()
            y_buf.release()
        ok = _close(got, want)
        return {"host arrays": ok, "device arrays": ok}

    def close(self) -> None:
        for _, _, x_buf, y_buf in self.buffers.values():
            x_buf.release()
            y_buf.release()
        self.buffers.clear()
        self.queue.finish()


# ---------------------------------------------------------------------------------------------- wgpu-py


class Wgpu:
    """wgpu-py on the Vulkan adapter named ``device_name``: the same SPIR-V, push constants as immediates."""

    name = "wgpu"

    def __init__(self, device_name: str, spirv: bytes) -> None:
        import wgpu  # type: ignore[import-untyped]

        self.wgpu = wgpu
        adapter = None
        for candidate in wgpu.gpu.enumerate_adapters_sync():
            info = candidate.info
            if info.get("backend_type") == "Vulkan" and info.get("device") == device_name:
                adapter = candidate
                break
        if adapter is None:
            raise LookupError(f"wgpu finds no Vulkan adapter named {device_name!r}")
        self.adapter_info = {key: str(value) for key, value in dict(adapter.info).items()}
        self.device = adapter.request_device_sync(required_features=["immediates"])
        compute = wgpu.ShaderStage.COMPUTE
        self.layout = self.device.create_bind_group_layout(
            entries=[
                # naga reads both SPIR-V blocks as read-write storage (it ignores the member's NonWritable).
                {"binding": i, "visibility": compute, "buffer": {"type": wgpu.BufferBindingType.storage}}
                for i in range(2)
            ]
        )
        pipeline_layout = self.device.create_pipeline_layout(bind_group_layouts=[self.layout], immediate_size=8)
        shader = self.device.create_shader_module(code=spirv)
        self.pipeline = self.device.create_compute_pipeline(
            layout=pipeline_layout, compute={"module": shader, "entry_point": "main"}
        )
        self.buffers: dict[tuple[int, str], tuple[Array, Array, Any, Any, Any]] = {}
        """Per (size, variant): each variant has its own buffers (see ``PyOpenCL._buffers``)."""
        self.wait_method = "queue.on_submitted_work_done_sync"
        try:
            self.device.queue.on_submitted_work_done_sync()
        except TypeError:  # wgpu-py 0.32.0 hands wgpu-native a callback of the wrong C type
            self.wait_method = "wgpuDevicePoll(wait=True) via device._poll_wait"

    def _buffers(self, n: int, seed: int = 5) -> tuple[Array, Array, Any, Any, Any]:
        usage = self.wgpu.BufferUsage.STORAGE | self.wgpu.BufferUsage.COPY_DST | self.wgpu.BufferUsage.COPY_SRC
        x, y = _inputs(n, seed)
        x_buf = self.device.create_buffer_with_data(data=x, usage=usage)
        y_buf = self.device.create_buffer_with_data(data=y, usage=usage)
        bind_group = self.device.create_bind_group(
            layout=self.layout,
            entries=[
                {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
                for i, b in enumerate((x_buf, y_buf))
            ],
        )
        return x, y, x_buf, y_buf, bind_group

    def _dispatch(self, n: int, bind_group: Any) -> Callable[[], None]:
        """Encode + submit, then wait for the queue."""
        device, queue = self.device, self.device.queue
        submit = self._encode_submit(n, bind_group)
        polled = self.wait_method != "queue.on_submitted_work_done_sync"

        def dispatch() -> None:
            submit()
            if polled:
                device._poll_wait()
            else:
                queue.on_submitted_work_done_sync()

        return dispatch

    def ops(self, n: int) -> dict[str, Callable[[], object]]:
        for variant in VARIANTS:
            if (n, variant) not in self.buffers:
                self.buffers[n, variant] = self._buffers(n)
        x, y, x_buf, y_buf, bind_group = self.buffers[n, "host arrays"]
        queue = self.device.queue
        dispatch = self._dispatch(n, self.buffers[n, "device arrays"][4])
        submit = self._encode_submit(n, bind_group)

        def host_arrays() -> object:
            queue.write_buffer(x_buf, 0, x)
            queue.write_buffer(y_buf, 0, y)
            submit()
            y[:] = np.frombuffer(queue.read_buffer(y_buf), dtype=np.float32)  # maps: waits for the dispatch
            return y

        def device_arrays() -> object:
            dispatch()
            return None

        return {"host arrays": host_arrays, "device arrays": device_arrays}

    def _encode_submit(self, n: int, bind_group: Any) -> Callable[[], None]:
        device, pipeline, queue = self.device, self.pipeline, self.device.queue
        immediates = struct.pack("<fI", A, n)
        groups = -(-n // 64)

        def submit() -> None:
            encoder = device.create_command_encoder()
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.set_immediates(0, immediates, 0, 8)
            compute.dispatch_workgroups(groups, 1, 1)
            compute.end()
            queue.submit([encoder.finish()])

        return submit

    def verified(self, n: int) -> dict[str, bool]:
        x, y0, x_buf, y_buf, bind_group = self._buffers(n, seed=6)
        try:
            self._dispatch(n, bind_group)()
            got = np.frombuffer(self.device.queue.read_buffer(y_buf), dtype=np.float32).copy()
        finally:
            x_buf.destroy()
            y_buf.destroy()
        ok = _close(got, _expected(x, y0))
        return {"host arrays": ok, "device arrays": ok}

    def close(self) -> None:
        for _, _, x_buf, y_buf, _ in self.buffers.values():
            x_buf.destroy()
            y_buf.destroy()
        self.buffers.clear()
        self.device.destroy()


# ---------------------------------------------------------------------------------------------- profile


_PROFILED_PACKAGES = ("accelcore", "accel_opencl", "accel_vulkan", "pyopencl", "vulkan", "numpy")
_SPOTS = {
    "Kernel.__call__ (the whole call)": ("kernel.py", "__call__"),
    "Kernel.submit": ("kernel.py", "submit"),
    "Kernel._route (arguments to parameters)": ("kernel.py", "_route"),
    "Kernel._pack (pack_module per call)": ("kernel.py", "_pack"),
    "pack_module": ("wrap.py", "pack_module"),
    "opencl_kernels (source parsed again)": ("opencl_signature.py", "opencl_kernels"),
    "Kernel._program (write_package = cache key)": ("kernel.py", "_program"),
    "write_package": ("package_codec.py", "write_package"),
    "_checked_array": ("parameters.py", "_checked_array"),
    "Run.__init__ (allocate, upload, submit)": ("run.py", "__init__"),
    "engine submit": ("submission.py", "submit"),
    "Run.state (wait, read back, release)": ("run.py", "state"),
    "engine wait": ("events.py", "wait"),
}
"""Named places of the call: (file name, function name) in pstats' keys."""


def _label(key: tuple[str, int, str]) -> str:
    filename, line, function = key
    parts = Path(filename).parts
    for package in _PROFILED_PACKAGES:
        if package in parts:
            return f"{'/'.join(parts[parts.index(package) :])}:{line}({function})"
    return f"{Path(filename).name}:{line}({function})" if filename != "~" else function


def profile_call(call: Callable[[], object], calls: int, top: int) -> dict[str, Any]:
    """cProfile over ``calls`` calls: the ``top`` functions by cumulative time and the named spots, in µs per call."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for _, _, tt, _, _ in raw.values())
    rows = sorted(raw.items(), key=lambda item: item[1][3], reverse=True)
    per_call = 1e6 / calls
    table = [
        {
            "function": _label(key),
            "calls_per_call": nc / calls,
            "tottime_us": tt * per_call,
            "cumtime_us": ct * per_call,
        }
        for key, (_, nc, tt, ct, _) in rows
        if key[0] != "~" or key[2].startswith("<method") or key[2].startswith("<built-in")
    ][:top]
    spots: dict[str, float] = {}
    whole = 0.0
    for label, (file_name, function) in _SPOTS.items():
        matched = [
            value[3]
            for key, value in raw.items()
            if Path(key[0]).name == file_name and key[2] == function and _spot_owner(key, label)
        ]
        if matched:
            spots[label] = max(matched) * per_call
            if label.startswith("Kernel.__call__"):
                whole = spots[label]
    return {
        "calls": calls,
        "profiled_us_per_call": total * per_call,
        "top": table,
        "spots_us": spots,
        "spots_share": {label: value / whole for label, value in spots.items()} if whole else {},
    }


def _spot_owner(key: tuple[str, int, str], label: str) -> bool:
    """``__init__`` and ``submit`` have several owners: keep the one the label names (by path)."""
    if label.startswith("Run.__init__"):
        return Path(key[0]).parts[-2:] == ("api", "run.py")
    if label == "engine submit" or label == "engine wait":
        return "engine" in Path(key[0]).parts
    return True


# ---------------------------------------------------------------------------------------------- the group


def _stat(stat: Stat) -> dict[str, Any]:
    return stat.as_dict()


def _verdicts(api: str, sizes: dict[str, Any]) -> list[dict[str, Any]]:
    peer, bound, text = BOUNDS[api]
    out = []
    for size, result in sizes.items():
        for variant in VARIANTS:
            ratio = result.get("ratios", {}).get(f"ours / {peer}, {variant}")
            met = None if ratio is None else (ratio <= bound if api == "opencl" else ratio < bound)
            out.append(
                {"size": int(size), "variant": variant, "ratio": ratio, "bound": bound, "met": met, "target": text}
            )
    return out


def measure_device(
    api: str | None,
    family: ProviderFamily | None,
    entry: DeviceEntry | None,
    native: Any,
    settings: Settings,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """The group for one device. ``native``: the ``pyopencl.Device`` (OpenCL) or the adapter name wgpu
    is matched by (Vulkan). Ours on a fresh provider instance of ``family``/``entry``."""
    if api not in BOUNDS:
        raise LookupError(f"no high-level call comparison for API {api!r}")
    if family is None or entry is None:
        raise LookupError("no provider family for this device: ours cannot be opened")
    peer_name = BOUNDS[api][0]
    sides: dict[str, Side] = {}
    result: dict[str, Any] = {"peer": peer_name, "variants": list(VARIANTS), "scalar_a": A}
    try:
        ours = Ours(family, entry, api)
        sides["ours"] = ours
        if api == "opencl":
            sides["pyopencl"] = PyOpenCL(native)
            result["kernel"] = f"artifacts/{OPENCL_SOURCE} (a, n by value)"
        else:
            spirv = compile_glsl((corpus.corpus_root() / GLSL_SOURCE).read_bytes(), name=GLSL_SOURCE.name)
            peer = Wgpu(str(native), spirv)
            sides["wgpu"] = peer
            result["kernel"] = f"artifacts/{GLSL_SOURCE} (push constants a, n)"
            result["wgpu"] = {"adapter": peer.adapter_info, "wait_method": peer.wait_method}
        sizes: dict[str, Any] = {}
        for n in settings.sizes:
            checks = {name: side.verified(n) for name, side in sides.items()}
            ops = {f"{name}\0{variant}": fn for name, side in sides.items() for variant, fn in side.ops(n).items()}
            stats = measure_interleaved(ops, warmup=settings.warmup, repeats=settings.repeats)
            entry_n: dict[str, Any] = {"elements": n, "bytes_per_array": 4 * n}
            for name in sides:
                entry_n[name] = {
                    variant: {**_stat(stats[f"{name}\0{variant}"]), "verified": checks[name][variant]}
                    for variant in VARIANTS
                }
            entry_n["ratios"] = {
                f"ours / {peer_name}, {variant}": entry_n["ours"][variant]["median_s"]
                / entry_n[peer_name][variant]["median_s"]
                for variant in VARIANTS
            }
            repack = measure_interleaved({"repack": ours.repack(n)}, warmup=settings.warmup, repeats=settings.repeats)
            entry_n["ours_repack"] = {
                **_stat(repack["repack"]),
                "what": "pack_module + write_package with the call's scalars (what every call re-does)",
            }
            for variant in VARIANTS:
                ours_us = entry_n["ours"][variant]["median_s"] * 1e6
                peer_us = entry_n[peer_name][variant]["median_s"] * 1e6
                log(
                    f"  high-level {n:>8} {variant:<14} ours {ours_us:9.1f} us  {peer_name} {peer_us:9.1f} us  "
                    f"ratio {ours_us / peer_us:6.2f}"
                )
            sizes[str(n)] = entry_n
        result["sizes"] = sizes
        result["verdicts"] = _verdicts(api, sizes)
        if any(v["met"] is False for v in result["verdicts"]):
            smallest = min(settings.sizes)
            ops_small = ours.ops(smallest)
            result["profile"] = {
                "elements": smallest,
                "what": "cProfile of the high-level call (times inflated by the profiler; compare shares)",
                **{
                    variant: profile_call(ops_small[variant], settings.profile_calls, settings.profile_top)
                    for variant in VARIANTS
                },
            }
    finally:
        for side in reversed(list(sides.values())):
            side.close()
    return result
