"""Opening devices (:func:`devices`, :func:`open`) and :class:`Device`: one command engine over a provider
instance, one context and one queue, with its buffer pool, device arrays and kernels; :meth:`Device.close`
releases them child before parent. The promise of the whole layer is in :mod:`accelcore.api`.
"""

from __future__ import annotations

import math
import os
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from ..contract.buffers import BufferDesc, BufferRange
from ..contract.errors import BackendError, ErrorKind, MissingFileError
from ..contract.flags import AccessMode, BufferUsage, Capabilities, MemoryDomain
from ..contract.ports import MemorySink, MemorySource
from ..contract.program import ArtifactRef
from ..devices.environment import DEVICE_ENV, apply_defaults
from ..devices.inventory import discover
from ..devices.registry import DeviceEntry
from ..engine import CommandEngine, EngineState, ResourcePolicy
from ..kernels.glsl import GLSL_SUFFIXES, compile_glsl, glsl_with_includes, looks_like_glsl
from ..kernels.opencl_includes import named_source, source_with_includes
from ..kernels.package import ModuleKind
from ..kernels.package_codec import MAGIC
from ..support.files import KERNEL_FILE_BYTES, read_file
from .kernel import Kernel
from .keywords import _invalid
from .memory import (
    _ALIGNMENT,
    _RESIDENT_BYTES,
    DeviceArray,
    PoolKey,
    TemporaryPool,
    choose_domain,
    guard_bytes,
    guard_pattern,
)
from .run import _SPECS_KEPT
from .serial import process_id, serialized_device

__all__ = ["Device", "devices", "open"]


def devices(selector: str | None = None) -> list[DeviceEntry]:
    """Every device of every installed provider (or those ``selector`` matches, the CLI's grammar)."""
    inventory = discover()
    if selector is None:
        return list(inventory.devices)
    return inventory.select_many([selector])


def open(selector: str | None = None, *, resident_bytes: int = _RESIDENT_BYTES) -> Device:
    """Open the one device ``selector`` names (default ``$ACCEL_DEVICE``); none or several → an error
    listing the candidates (:class:`~accelcore.devices.selector.SelectorError`)."""
    apply_defaults()
    text = selector if selector is not None else os.environ.get(DEVICE_ENV)
    if not text:
        raise _invalid(f"name a device (e.g. 'opencl:0', 'vulkan:*llvmpipe*') or set {DEVICE_ENV}")
    inventory = discover()
    entry = inventory.select_one(text)
    family = inventory.family_of(entry)
    provider = family.open(entry)
    return Device(provider, entry, resident_bytes=resident_bytes, reopen=lambda: family.open(entry))


_CLOSE_WAIT_S = 60.0
"""How long :meth:`Device.close` waits for calls other threads are making on the device."""


class Device:
    """One open device: an engine over a provider instance, one context and one queue.

    Threads: a Device, its kernels, device arrays and runs may be used from any number of threads;
    every call on them (array, empty, kernel, load_artifact, reset, a kernel's call or submit, a run's
    wait/state/done/cancel, a device array's numpy/write/free) holds the device's lock for its whole
    length, so calls on one device run one at a time (a kernel call includes its wait: concurrent calls
    on one device are safe, not parallel; open one device per thread for parallel work). :meth:`close`
    waits up to ``_CLOSE_WAIT_S`` for the call in progress; a call that comes after the close is
    ``BackendError(INVALID_ARGUMENT)`` "device ... is closed". See docs/python.md, "Threads".
    """

    def __init__(
        self,
        provider: Any,
        entry: DeviceEntry | None = None,
        *,
        resident_bytes: int = _RESIDENT_BYTES,
        domain: MemoryDomain | None = None,
        policy: ResourcePolicy | None = None,
        owns_provider: bool = True,
        start: bool = True,
        pool_bytes: int | None = None,
        reopen: Callable[[], Any] | None = None,
    ) -> None:
        """An engine over ``provider``; ``start`` creates the context and queue now (else :meth:`start`).

        ``domain``: the memory domain of every buffer (default: device, else shared, else host;
        one the device lacks → UNSUPPORTED). ``owns_provider``: :meth:`close` closes the provider too.
        ``pool_bytes``: most bytes of idle temporary buffers kept for reuse (default ``resident_bytes``;
        0 keeps none; see :class:`TemporaryPool`). ``reopen``: makes a fresh provider instance of the same
        device, for :meth:`reset` (:func:`open` passes the family's ``open``).
        """
        self.entry = entry
        self._provider = provider
        self._owns_provider = owns_provider
        self._reopen = reopen
        self.generation = 0
        """How many times :meth:`reset` started the device again (kernels reload their programs after one)."""
        self._closed = False
        self._process = process_id()
        """The process that opened the device: a forked child refuses every call (:meth:`_refuse_in_fork`)."""
        self._lock = threading.RLock()
        """Held by every call on the device (:func:`~accelcore.api.serial.serialized_device`), and by :meth:`close`."""
        self.quarantined: list[Any] = []
        """What the final reset could not prove released (filled by :meth:`close`)."""
        self.engine: CommandEngine[Any, Any, Any, Any, Any] = CommandEngine(
            provider, policy if policy is not None else ResourcePolicy()
        )
        self.resident_bytes = resident_bytes
        self.pool = TemporaryPool(resident_bytes if pool_bytes is None else pool_bytes)
        self._specs: dict[tuple[int, int, AccessMode], tuple[int, int, BufferRange | None, AccessMode]] = {}
        """The engine binding spec of each (slot, buffer ID, access) a run bound lately: the same (immutable)
        tuple object every time, so the engine's per-program memo of recent binding lists applies (at most
        ``_SPECS_KEPT``; cleared when full; a spec naming a freed buffer is refused by the engine as stale)."""
        """Idle temporary buffers of finished calls on host arrays, reused by later calls."""
        self.domain = choose_domain(self.engine.info, domain)
        self._domain_number = int(self.domain)
        self._tails: dict[tuple[int, int, AccessMode], tuple[PoolKey, int, BufferRange | None]] = {}
        """Per (array bytes, dispatch extent, access) of a host array: its pool key, guard bytes and the range
        bound (the array's bytes at offset 0; None without a guard): worked out once per size (at most
        ``_SPECS_KEPT``; cleared when full)."""
        self._scratch: dict[int, tuple[npt.NDArray[np.uint8], MemorySink]] = {}
        """Per temporary buffer (by ID) read back whole with its guard (see ``_STAGED_READ_BYTES``): the host
        array that read lands in, made once. A temporary belongs to one run at a time and the run copies
        out of it before it ends, so one per buffer suffices; dropped when the buffer is freed."""
        self._retired: deque[int] = deque()
        """Programs no kernel uses any more - a dropped :class:`~accelcore.api.kernel.Kernel`'s (handed over by its
        finalizer, which may run at any garbage collection, so it only appends here) or one a kernel's full cache
        evicted while a run still used it: unloaded by :meth:`_unload_retired` at the next program load, a program a
        live run still refers to (BUSY) at a later one."""
        self.context = 0
        self.queue = 0
        if start:
            self.start()

    def start(self) -> None:
        """Create the context and the queue (idempotent); on failure everything is released."""
        if self._process != process_id():
            self._refuse_in_fork()
        if self.queue:
            return
        try:
            self.context = self.engine.create_context()
            self.queue = self.engine.create_queue(self.context)
        except BaseException:
            self.close()
            raise

    @serialized_device
    def load_artifact(self, artifact: ArtifactRef) -> int:
        """Load a program (any artifact format the device takes) through the engine; its id."""
        self._check_open()
        self.start()
        self._unload_retired()
        return self.engine.load_program(self.context, artifact)

    def _unload(self, program: int) -> None:
        """Unload ``program`` now, or (a live run still refers to it: BUSY) once that run has ended."""
        try:
            self.engine.unload_program(program)
        except BackendError as exc:
            if exc.kind is not ErrorKind.BUSY:
                raise
            self._retired.append(program)

    def _unload_retired(self) -> None:
        """Unload the programs of :attr:`_retired` (called holding the device's lock, before a load): one a run
        still refers to waits for a later load; one that is already gone (a reset since) is forgotten."""
        retired = self._retired  # a finalizer may append meanwhile (deque: no lock needed, nothing lost)
        for _ in range(len(retired)):
            program = retired.popleft()
            try:
                self.engine.unload_program(program)
            except BackendError as exc:
                if exc.kind is ErrorKind.BUSY:
                    retired.append(program)

    @property
    def id(self) -> str:
        return self.entry.device_id if self.entry is not None else "device"

    @property
    def name(self) -> str:
        return self.entry.name if self.entry is not None else ""

    @property
    def can_cancel(self) -> bool:
        return bool(self.engine.info.capabilities & Capabilities.EVENT_CANCELLATION)

    def __repr__(self) -> str:
        return f"<accelcore.Device {self.id} {self.name!r}{' closed' if self._closed else ''}>"

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release everything (events, programs, buffers, queue, context) child before parent; idempotent.

        Threads: waits up to ``_CLOSE_WAIT_S`` for a call another thread is making on the device (every
        call holds the device's lock), then closes; calls after it are BackendError(INVALID_ARGUMENT).
        A call still running after that wait → BackendError(BUSY), and the device stays open.
        In a child forked after the device was opened it releases nothing (the parent's objects) and only marks
        the device closed; every other call there is BackendError(INVALID_ARGUMENT) (docs/python.md)."""
        if self._closed:
            return
        if self._process != process_id():
            # A forked child: the native objects are the parent's (and a driver's threads did not follow the
            # fork); releasing them here would hang or free what the parent still uses. Forget them.
            self._closed = True
            return
        if not self._lock.acquire(timeout=_CLOSE_WAIT_S):
            raise BackendError(
                ErrorKind.BUSY,
                f"device {self.id}: another thread's call still runs after {_CLOSE_WAIT_S:g} s; close again later",
            )
        try:
            if self._closed:
                return
            self._closed = True
            self.pool.clear()  # the reset below releases them with everything else
            self._scratch.clear()
            try:
                self.quarantined = self.engine.reset()
            finally:
                close = getattr(self._provider, "close", None)
                if self._owns_provider and callable(close):
                    close()
        finally:
            self._lock.release()

    @serialized_device
    def reset(self) -> list[Any]:
        """Start again on this device, e.g. after a kernel ran past its ``timeout=`` and the device could not
        stop it (``DEADLINE_EXPIRED``; every later call is ``DEVICE_LOST`` "... call reset()") or after a lost
        device. Returns the engine's quarantine: what could not be released yet (also :attr:`quarantined`;
        with a fresh provider instance that list starts empty and the old one's is ``engine.discarded``).

        Ownership: everything made on the device is released, child before parent (runs, device arrays,
        loaded programs, the idle temporaries, the queue and the context); a device array or run made before
        is then unknown (STALE_OBJECT), and a :class:`Kernel` loads its program again on its next call. What a
        kernel that still runs holds (its event, queue, buffers, program, context) cannot be released: it is
        quarantined, and a later reset releases it once the kernel has ended. Progress: never waits for a
        running kernel; returns within seconds. Where the engine needs a discard (an overrun, DEVICE_LOST, an
        indeterminate release) and the device came from :func:`open`, the device gets a fresh provider
        instance and the old one is closed: OpenCL leaves its queue to the driver, a Vulkan context whose
        kernel still runs is abandoned (docs/python.md, "Kernels that run away"). A CPU device keeps running
        the old kernel on its cores until it ends: PoCL runs what comes next only after it. Failure: a
        device that cannot be opened again raises that error and nothing is reset; a device handed an
        instance it does not own (``reopen`` None) whose instance failed during the reset is DEVICE_LOST.
        """
        self._check_open()
        fresh = None
        if self.engine.state is EngineState.NEEDS_DISCARD and self._reopen is not None:
            fresh = self._reopen()  # first: a device that cannot be opened again changes nothing
        self.pool.clear()  # the engine's reset releases them with everything else
        self._scratch.clear()
        self._specs.clear()
        self.context = self.queue = 0
        self.generation += 1
        quarantined = self.engine.reset(fresh)
        if fresh is None and self.engine.state is EngineState.NEEDS_DISCARD and self._reopen is not None:
            fresh = self._reopen()  # the instance itself failed during the teardown
            quarantined = self.engine.reset(fresh)
        if fresh is not None:
            old, self._provider, self._owns_provider = self._provider, fresh, True
            close = getattr(old, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # a discarded instance: what it held is quarantined already
                    pass
        self.quarantined = quarantined
        if self.engine.state is EngineState.NEEDS_DISCARD:
            raise BackendError(
                ErrorKind.DEVICE_LOST,
                f"{self.id}: the provider instance failed during the reset ({self.engine.state_reason}); "
                "close the device and open it again",
            )
        self.start()
        return quarantined

    def _refuse_in_fork(self) -> NoReturn:
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"device {self.id}: this device was opened in process {self._process}; a forked child must open its "
            "own (its native objects do not survive a fork: os.fork() after closing it, or open one in the child)",
        )

    def _check_open(self) -> None:
        if self._closed:
            raise BackendError(ErrorKind.INVALID_ARGUMENT, f"device {self.id} is closed")

    # -- arrays -------------------------------------------------------------

    def _allocate(self, nbytes: int, access: AccessMode) -> int:
        usage = BufferUsage.for_access(access) | BufferUsage.TRANSFER_SOURCE | BufferUsage.TRANSFER_DESTINATION
        return self.engine.allocate_buffer(self.context, BufferDesc(nbytes, _ALIGNMENT, self.domain, usage))

    def guard_bytes(self, nbytes: int) -> int:
        """The guard tail (redzone) a temporary buffer for a host array of ``nbytes`` gets (:func:`guard_bytes`)."""
        return guard_bytes(nbytes, self.engine.info.limits.max_buffer_bytes)

    def _allocate_guarded(self, nbytes: int, guard: int, access: AccessMode) -> int:
        """A buffer of ``nbytes`` followed by ``guard`` bytes of :func:`guard_pattern`."""
        buffer = self._allocate(nbytes + guard, access)
        if guard:
            try:
                self.engine.write_buffer(buffer, nbytes, MemorySource(guard_pattern(guard).data))
            except BaseException:
                self.engine.free_buffer(buffer)
                raise
        return buffer

    def _take_temporary(
        self, nbytes: int, access: AccessMode, extent: int = 0
    ) -> tuple[int, PoolKey, int, BufferRange | None]:
        """A buffer for one call on a host array, its pool key, guard bytes and the range to bind (see
        ``_tails``): an idle one of the same size, extent, access
        and domain from the pool, else a new one (when the allocation hits a limit, the idle ones are
        freed first). Its first ``nbytes`` are the array's; :func:`guard_pattern` follows them up to
        ``extent`` (the bytes the dispatch may reach, :mod:`accelcore.kernels.dispatch_extent`) where that is longer,
        then a guard tail of :meth:`guard_bytes` (a pooled buffer's guard is intact: a run gives back only
        buffers whose guard it read back unchanged). A buffer as long as ``extent`` that the device cannot
        allocate is ``RESOURCE_LIMIT``, never a shorter one."""
        key, guard, rng = self._tail(nbytes, access, extent)
        found = self.pool.take(key)
        if found is not None:
            return found, key, guard, rng
        try:
            return self._allocate_guarded(nbytes, guard, access), key, guard, rng
        except BackendError as exc:
            if exc.kind is not ErrorKind.RESOURCE_LIMIT or not self.pool.idle_bytes:
                raise
        self._free_all(self.pool.clear())
        return self._allocate_guarded(nbytes, guard, access), key, guard, rng

    def _tail(self, nbytes: int, access: AccessMode, extent: int = 0) -> tuple[PoolKey, int, BufferRange | None]:
        """(pool key, guard bytes, bound range) of a temporary buffer for a host array (see ``_tails``).

        Where ``extent`` passes ``nbytes``, the guard is the bytes up to ``extent`` (rounded up to the
        alignment: the key's extension) followed by the guard tail of a buffer that long; an extent past
        the device's ``max_buffer_bytes`` is RESOURCE_LIMIT."""
        if extent <= nbytes:
            extent = 0  # the array holds it: one memo entry, the ordinary guard
        known = self._tails.get((nbytes, extent, access))
        if known is None:
            if len(self._tails) >= _SPECS_KEPT:
                self._tails.clear()
            extension = 0
            if extent > nbytes:
                extension = -(-extent // _ALIGNMENT) * _ALIGNMENT - nbytes
                limit = self.engine.info.limits.max_buffer_bytes
                if nbytes + extension > limit:
                    raise BackendError(
                        ErrorKind.RESOURCE_LIMIT,
                        f"a buffer of {nbytes + extension} bytes passes the device's max_buffer_bytes {limit}",
                    )
            guard = extension + self.guard_bytes(nbytes + extension)
            key = (nbytes, int(access), self._domain_number, extension)
            known = key, guard, BufferRange(0, nbytes) if guard else None
            self._tails[nbytes, extent, access] = known
        return known

    def _give_temporary(self, key: PoolKey, buffer: int) -> None:
        """Back into the pool under the key it was taken with (its event destroyed: no event references
        it); what that pushes over the bound is freed, oldest first."""
        if self._closed:
            return  # close() reset the engine: the buffer is gone with everything else
        self._free_all(self.pool.give(key, buffer))

    def _free_all(self, buffers: Sequence[int]) -> None:
        for buffer in buffers:
            self._free_temporary(buffer)

    def _free_temporary(self, buffer: int) -> None:
        self._scratch.pop(buffer, None)
        self.engine.free_buffer(buffer)

    def _staging(self, buffer: int, nbytes: int) -> tuple[npt.NDArray[np.uint8], MemorySink]:
        """The scratch array (and a sink over it) a temporary buffer of ``nbytes`` in all is read into."""
        known = self._scratch.get(buffer)
        if known is None or known[0].nbytes != nbytes:
            if len(self._scratch) >= _SPECS_KEPT:
                self._scratch.clear()
            whole = np.empty(nbytes, dtype=np.uint8)
            known = self._scratch[buffer] = (whole, MemorySink(whole.data))
        return known

    @serialized_device
    def array(self, data: npt.ArrayLike) -> DeviceArray:
        """A device-resident copy of ``data`` (readable and writable by kernels). Plain data only: a masked
        array (``np.ma``), Python objects (an object dtype, or a structured one with an object field) and
        what numpy cannot make one array of are ``BackendError(INVALID_ARGUMENT)``."""
        self._check_open()
        if isinstance(data, np.ma.MaskedArray):
            raise _invalid("array(): a masked array (np.ma) has no device form; pass data.filled(VALUE) or data.data")
        try:
            host = np.ascontiguousarray(data)
        except (ValueError, TypeError) as exc:
            raise _invalid(f"array(): numpy cannot make one array of {type(data).__name__} ({exc})") from None
        if host.dtype.hasobject:
            raise _invalid(f"array(): an array of {host.dtype} holds Python objects, which have no device form")
        if host.nbytes == 0:
            raise _invalid("a device array needs at least one element")
        buffer = self._allocate(host.nbytes, AccessMode.READ_WRITE)
        try:
            self.engine.write_buffer(buffer, 0, MemorySource(host.reshape(-1).view(np.uint8).data))
        except BaseException:
            self.engine.free_buffer(buffer)
            raise
        return DeviceArray(self, buffer, host.shape, host.dtype)

    @serialized_device
    def empty(self, shape: int | Sequence[int], dtype: npt.DTypeLike) -> DeviceArray:
        """An uninitialised device-resident array. A shape of anything but integers from 0, a size numpy could
        not hold, no element, or a dtype of Python objects is ``BackendError(INVALID_ARGUMENT)``."""
        self._check_open()
        try:
            given: tuple[object, ...] = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            kind = np.dtype(dtype)
        except TypeError as exc:
            raise _invalid(f"empty({shape!r}, {dtype!r}): {exc}") from None
        dims: list[int] = []
        for axis in given:
            if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or axis < 0:
                raise _invalid(f"empty({shape!r}, {kind}): a shape is integers from 0 (one per axis)")
            dims.append(int(axis))
        if kind.hasobject:
            raise _invalid(f"empty({shape!r}, {kind}): Python objects have no device form; give a plain dtype")
        nbytes = math.prod(dims) * kind.itemsize  # Python ints: no wrap-around
        if nbytes <= 0:
            raise _invalid(f"empty({shape!r}, {kind}): a device array needs at least one element")
        if nbytes > np.iinfo(np.intp).max:
            raise _invalid(f"empty({shape!r}, {kind}): {nbytes} bytes, more than any array can hold")
        return DeviceArray(self, self._allocate(nbytes, AccessMode.READ_WRITE), tuple(dims), kind)

    # -- kernels ------------------------------------------------------------

    @serialized_device
    def kernel(
        self,
        source: str | Path | bytes,
        *,
        entry: str | None = None,
        spec: Mapping[str | int, object] | None = None,
        local_size: int | Sequence[int] | None = None,
        build_options: str = "",
        kind: ModuleKind | None = None,
        slots: Mapping[str, str] | None = None,
    ) -> Kernel:
        """A kernel from a file (``.cl``, ``.spv``, ``.comp``/``.glsl``, an OpenCL binary, ``.kpkg``) or bytes.

        An OpenCL C file's ``#include`` s are inlined from its folder and the ``-I`` folders of
        ``build_options`` (:func:`accelcore.kernels.opencl_includes.source_with_includes`); bytes are taken as they are.
        GLSL (a file or bytes) is compiled with ``build_options`` (``-D``, ``-U``; ``-I`` for a file's
        includes; any other option is refused) and ``entry`` as its entry point (:mod:`accelcore.kernels.glsl`).

        ``spec``: Vulkan specialization constants by SpecId or name (``"local_size_x"`` sets the
        work-group size constant); ``local_size``: the work-group size where the module fixes none (an int
        or a tuple of 1 to 3, :func:`accelcore.api.keywords.work_size`). ``slots``: what ``accel run --slot``
        says, by buffer name: ``"r"``, ``"w"`` or ``"rw"``, optionally ``":BYTES"`` (``{"out": "w"}``: the
        kernel only writes ``out``, so nothing is uploaded to it; ``{"x": "r:16"}``: 16-byte elements),
        never more access than the module declares.

        Refused here with ``BackendError(INVALID_ARGUMENT)``: an ``entry`` the module lacks, or none where it
        has several (the message lists them). OpenCL C source is built now, once: a compile error is raised
        here, its build log naming the file and its lines (a file's text gets ``#line 1 "path"``,
        :func:`accelcore.kernels.opencl_includes.named_source`).
        """
        self._check_open()
        if isinstance(source, bytes):
            data, name = source, "<bytes>"
        else:
            path = Path(source)
            try:
                data = read_file(path, "kernel file", KERNEL_FILE_BYTES)  # regular files only (accelcore.support.files)
            except FileNotFoundError:
                raise MissingFileError(str(path)) from None  # also a FileNotFoundError (docs/python.md)
            except OSError as exc:
                raise _invalid(f"{path}: cannot read ({exc.strerror})") from None
            name = str(path)
            if path.suffix.lower() in GLSL_SUFFIXES:
                data = compile_glsl(  # includes next to the file and in -I folders
                    glsl_with_includes(path, data, build_options),
                    name=path.name,
                    build_options=build_options,
                    entry=entry,
                )
            else:  # OpenCL C: quoted includes next to the file (and in -I folders) are inlined, checked
                data = source_with_includes(path, data, build_options)
                if not looks_like_glsl(data):  # compiler messages name the file, not the driver's copy of it
                    data = named_source(path, data)
        if not data.startswith(MAGIC[:4]) and looks_like_glsl(data):
            data = compile_glsl(data, name=name, build_options=build_options, entry=entry)
        return Kernel(
            self,
            data,
            name,
            entry=entry,
            spec=spec,
            local_size=local_size,
            build_options=build_options,
            kind=kind,
            slots=slots,
        )
