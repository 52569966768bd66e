"""The numpy-first layer: open a device by selector, load a kernel from a file, call it on arrays.

::

    import numpy as np, accelcore as ac
    dev = ac.open("opencl:*pocl*")
    saxpy = dev.kernel("saxpy.cl")
    saxpy(a=np.float32(2.5), x=x, y=y, n=np.int32(x.size), global_size=x.size)   # y updated in place

Promise: everything goes through the command engine
(:class:`~accelcore.engine.CommandEngine`), so every host-side check of the
contract applies. Arguments are matched to the kernel's declarations by name
(or position: OpenCL parameter order, Vulkan descriptors in (set, binding)
order) before anything runs: scalars are typed from their declarations
(:mod:`accelcore.pack`), arrays must have the declared element dtype, be
C-contiguous, and be writable where the kernel writes — a mismatch raises
``BackendError(INVALID_ARGUMENT)`` naming the argument, the declaration and
what was given. Arrays the kernel writes are read back into the caller's
arrays (no intermediate copy) and returned. Scalars belong to the program
(docs/contract.md, trap 14): a call with new values loads the package again,
which the providers make cheap, and the loaded programs are remembered (a
few per kernel); a call with the same exact values and work size as an earlier
one packs nothing (its package is remembered too). :class:`DeviceArray` stays on the device: passing one binds
it without a transfer. Resources are released child before parent on
:meth:`Device.close` (also on errors; ``with ac.open(...) as dev:``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import os
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import numpy as np
import numpy.typing as npt

from .arguments import describe, spirv_value_type
from .buffers import BufferDesc, BufferRange
from .dispatch_extent import Extent, unknown_extents
from .engine import CommandEngine, EngineState, ResourcePolicy
from .environment import DEVICE_ENV, apply_defaults
from .errors import BackendError, ErrorKind, MissingFileError, SubmitIndeterminate, SubmitRejected
from .files import KERNEL_FILE_BYTES, read_file
from .flags import AccessMode, BufferUsage, Capabilities, MemoryDomain
from .glsl import GLSL_SUFFIXES, compile_glsl, glsl_with_includes, looks_like_glsl
from .inventory import discover
from .keywords import python_words, work_size
from .layouts import (
    CLSPV_GENERATOR,
    ElementLayout,
    LayoutField,
    block_layout,
    check_array,
    encode_layout,
    spirv_layout,
    with_stride,
)
from .opencl_includes import named_source, source_with_includes
from .opencl_signature import opencl_kernels
from .pack import binding_names, build_package, detect_module_kind, pack_module
from .package import Dispatch, DispatchKind, KernelPackage, ModuleKind, access_allows
from .package_codec import MAGIC, parse_package, write_package
from .ports import MemorySink, MemorySource
from .program import ArtifactRef
from .registry import DeviceEntry
from .spirv import SpirvType, inspect_spirv
from .submission import EventState, EventStatus, Timeout, timeout_seconds
from .values import ScalarType, ValueType

__all__ = [
    "Binding",
    "Device",
    "DeviceArray",
    "Kernel",
    "LocalMemory",
    "Parameter",
    "Progress",
    "Run",
    "RunCancelled",
    "TemporaryPool",
    "check_buffer_array",
    "choose_domain",
    "declared_elements",
    "devices",
    "local_memory",
    "open",
]

_DOMAINS = (MemoryDomain.DEVICE, MemoryDomain.SHARED, MemoryDomain.HOST)
_ALIGNMENT = 64
_PROGRAMS_PER_KERNEL = 8
_PACKAGES_PER_KERNEL = 64
_RESIDENT_BYTES = 64 << 20
_GUARD_MIN = 4096
"""The smallest guard tail (redzone) of a temporary buffer; larger arrays get an eighth of their bytes."""
PoolKey = tuple[int, int, int, int]
"""A temporary buffer's kind in :class:`TemporaryPool`: (array bytes, access, memory domain, extension: the
guard-pattern bytes between the array's end and the dispatch's extent, 0 for most)."""


def guard_bytes(nbytes: int, max_buffer_bytes: int) -> int:
    """The guard tail of a temporary buffer of ``nbytes``: max(4 KiB, nbytes / 8), rounded up to the
    alignment, less where the whole allocation would pass ``max_buffer_bytes`` (0 when nothing fits)."""
    guard = -(-max(_GUARD_MIN, nbytes // 8) // _ALIGNMENT) * _ALIGNMENT
    room = (max_buffer_bytes - nbytes) // _ALIGNMENT * _ALIGNMENT
    return max(0, min(guard, room))


_PATTERN_PERIOD = 1 << 16
"""The guard pattern repeats every this many bytes (so a guard sized to a large dispatch costs no more to make)."""
_PATTERN_CACHED = 1 << 20
"""Guard patterns (and their bytes) up to this size are remembered; larger ones are made when needed."""


@functools.lru_cache(maxsize=64)
def _pattern_bytes(nbytes: int) -> bytes:
    return guard_pattern(nbytes).tobytes()


@functools.lru_cache(maxsize=1)
def _pattern_period() -> npt.NDArray[np.uint8]:
    return np.random.default_rng(0x5EED_C0DE).integers(0, 256, _PATTERN_PERIOD, dtype=np.uint8)


def _made_pattern(nbytes: int) -> npt.NDArray[np.uint8]:
    pattern = np.resize(_pattern_period(), nbytes)
    pattern.flags.writeable = False
    return pattern


_cached_pattern = functools.lru_cache(maxsize=64)(_made_pattern)


def guard_pattern(nbytes: int) -> npt.NDArray[np.uint8]:
    """The known bytes a guard tail of ``nbytes`` holds (fixed pseudo-random, so neither zeros, small
    integers nor common floats repeat it; it repeats every 64 KiB, and a shorter pattern is the start of a
    longer one); read-only."""
    return _cached_pattern(nbytes) if nbytes <= _PATTERN_CACHED else _made_pattern(nbytes)


def _holds_pattern(seen: npt.NDArray[np.uint8]) -> bool:
    """Whether ``seen`` is exactly :func:`guard_pattern` of its length."""
    if seen.nbytes <= _PATTERN_CACHED:
        return seen.tobytes() == _pattern_bytes(seen.nbytes)
    return bool(np.array_equal(seen, guard_pattern(seen.nbytes)))


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, message)


def _bytes_view(array: npt.NDArray[Any]) -> memoryview:
    """A writable byte view of a C-contiguous array (the engine reads straight into it)."""
    return memoryview(array).cast("B")  # type: ignore[arg-type]


def _triple(size: Sequence[int]) -> tuple[int, int, int]:
    full = (*size, 1, 1)
    return (int(full[0]), int(full[1]), int(full[2]))


def _exact(value: object) -> Hashable:
    """A key equal only for values that pack to the same bits (``-0.0`` is not ``0.0``, ``np.float32(1)``
    is not ``1``); TypeError for anything else (such a call is packed afresh)."""
    if isinstance(value, (bool, int, str)) or value is None:
        return (type(value), value)
    if isinstance(value, float):
        return (float, struct.pack("<d", value))
    if isinstance(value, np.void):  # a struct: a view whose dtype.str ('|V48') hides its fields; packed afresh
        raise TypeError("numpy.void")
    if isinstance(value, np.generic):
        return (value.dtype.str, value.tobytes())
    if isinstance(value, LocalMemory):
        return (LocalMemory, value.nbytes)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_exact(v) for v in value))
    raise TypeError(type(value).__name__)


def _call_key(
    others: Mapping[str, object], global_size: int | Sequence[int] | None, groups: int | Sequence[int] | None
) -> Hashable | None:
    """What a call's package depends on besides the kernel itself; None when not exactly keyable."""
    try:
        return (
            tuple(sorted((name, _exact(value)) for name, value in others.items())),
            _exact(global_size if isinstance(global_size, (int, type(None))) else tuple(global_size)),
            _exact(groups if isinstance(groups, (int, type(None))) else tuple(groups)),
        )
    except TypeError:
        return None


# --------------------------------------------------------------------------- devices


def choose_domain(info: Any, requested: MemoryDomain | None = None) -> MemoryDomain:
    """``requested`` if the device offers it (else UNSUPPORTED naming what it offers); otherwise the first
    of Device, Shared, Host it offers."""
    offered = [d for d in MemoryDomain if info.capabilities & d.capability]
    if requested is not None:
        if requested not in offered:
            raise BackendError(
                ErrorKind.UNSUPPORTED,
                f"the device does not offer the {requested.name} memory domain "
                f"(offers: {', '.join(d.name for d in offered)})",
            )
        return requested
    for domain in _DOMAINS:
        if domain in offered:
            return domain
    raise BackendError(ErrorKind.UNSUPPORTED, "the device advertises no memory domain")


def devices(selector: str | None = None) -> list[DeviceEntry]:
    """Every device of every installed provider (or those ``selector`` matches, the CLI's grammar)."""
    inventory = discover()
    if selector is None:
        return list(inventory.devices)
    return inventory.select_many([selector])


def open(selector: str | None = None, *, resident_bytes: int = _RESIDENT_BYTES) -> Device:
    """Open the one device ``selector`` names (default ``$ACCEL_DEVICE``); none or several → an error
    listing the candidates (:class:`~accelcore.selector.SelectorError`)."""
    apply_defaults()
    text = selector if selector is not None else os.environ.get(DEVICE_ENV)
    if not text:
        raise _invalid(f"name a device (e.g. 'opencl:0', 'vulkan:*llvmpipe*') or set {DEVICE_ENV}")
    inventory = discover()
    entry = inventory.select_one(text)
    family = inventory.family_of(entry)
    provider = family.open(entry)
    return Device(provider, entry, resident_bytes=resident_bytes, reopen=lambda: family.open(entry))


@dataclass(frozen=True, slots=True)
class LocalMemory:
    """``__local`` memory of ``nbytes`` for an OpenCL pointer argument (:func:`local_memory`)."""

    nbytes: int


_IMMUTABLE = frozenset({bool, int, float, str, type(None), LocalMemory})
"""Value types a call can be matched to the previous one by object identity (numpy scalars too)."""


def local_memory(nbytes: int) -> LocalMemory:
    """``__local`` memory of ``nbytes`` bytes for a kernel's ``__local`` pointer argument."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
        raise _invalid(f"local_memory({nbytes!r}): give a size in bytes >= 1")
    return LocalMemory(nbytes)


_CLOSE_WAIT_S = 60.0
"""How long :meth:`Device.close` waits for calls other threads are making on the device."""

_Method = TypeVar("_Method", bound=Callable[..., Any])

_this_process = os.getpid()
"""This process's id, renewed in a forked child (:func:`_after_fork`): a device compares it with the id it
was opened in at each public call, one int comparison and no system call."""


def _after_fork() -> None:
    global _this_process
    _this_process = os.getpid()


os.register_at_fork(after_in_child=_after_fork)


def _serialized(method: _Method) -> _Method:
    """Run ``method`` holding its device's lock (``self`` is a Device, or has ``.device``), after checking,
    under the lock, that the device is still open (a closed one: BackendError, never a crash)."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        device = self if isinstance(self, Device) else self.device
        if device._process != _this_process:  # before the lock: a parent's thread may hold it for ever here
            device._refuse_in_fork()
        with device._lock:
            device._check_open()
            return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


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
        self._process = _this_process
        """The process that opened the device: a forked child refuses every call (:meth:`_refuse_in_fork`)."""
        self._lock = threading.RLock()
        """Held by every call on the device (:func:`_serialized`), and by :meth:`close`."""
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
        self.context = 0
        self.queue = 0
        if start:
            self.start()

    def start(self) -> None:
        """Create the context and the queue (idempotent); on failure everything is released."""
        if self._process != _this_process:
            self._refuse_in_fork()
        if self.queue:
            return
        try:
            self.context = self.engine.create_context()
            self.queue = self.engine.create_queue(self.context)
        except BaseException:
            self.close()
            raise

    @_serialized
    def load_artifact(self, artifact: ArtifactRef) -> int:
        """Load a program (any artifact format the device takes) through the engine; its id."""
        self._check_open()
        self.start()
        return self.engine.load_program(self.context, artifact)

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
        if self._process != _this_process:
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

    @_serialized
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
        ``extent`` (the bytes the dispatch may reach, :mod:`accelcore.dispatch_extent`) where that is longer,
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

    @_serialized
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

    @_serialized
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

    @_serialized
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
        ``build_options`` (:func:`accelcore.opencl_includes.source_with_includes`); bytes are taken as they are.
        GLSL (a file or bytes) is compiled with ``build_options`` (``-D``, ``-U``; ``-I`` for a file's
        includes; any other option is refused) and ``entry`` as its entry point (:mod:`accelcore.glsl`).

        ``spec``: Vulkan specialization constants by SpecId or name (``"local_size_x"`` sets the
        work-group size constant); ``local_size``: the work-group size where the module fixes none (an int
        or a tuple of 1 to 3, :func:`accelcore.keywords.work_size`). ``slots``: what ``accel run --slot``
        says, by buffer name: ``"r"``, ``"w"`` or ``"rw"``, optionally ``":BYTES"`` (``{"out": "w"}``: the
        kernel only writes ``out``, so nothing is uploaded to it; ``{"x": "r:16"}``: 16-byte elements),
        never more access than the module declares.

        Refused here with ``BackendError(INVALID_ARGUMENT)``: an ``entry`` the module lacks, or none where it
        has several (the message lists them). OpenCL C source is built now, once: a compile error is raised
        here, its build log naming the file and its lines (a file's text gets ``#line 1 "path"``,
        :func:`accelcore.opencl_includes.named_source`).
        """
        self._check_open()
        if isinstance(source, bytes):
            data, name = source, "<bytes>"
        else:
            path = Path(source)
            try:
                data = read_file(path, "kernel file", KERNEL_FILE_BYTES)  # regular files only (accelcore.files)
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


class TemporaryPool:
    """Idle temporary buffers of one :class:`Device`, by :data:`PoolKey` (bytes, access, memory domain,
    extension), for reuse.

    A call on host arrays takes its buffers here and gives them back once its event has been
    destroyed after ending Complete, so no event the engine knows references them (the engine would
    refuse a write to a buffer bound to a pending event anyway). A run that ends otherwise —
    Cancelled, Failed, a wait that timed out, a submission whose acceptance is unknown, a discarded
    engine — gives nothing back: its buffers are freed, or left to the device's reset. Every call
    uploads every host array it binds before its submission, so a reused buffer never shows an
    earlier call's bytes. Each buffer holds a guard tail after its array's bytes (see
    :meth:`Device.guard_bytes`), intact in every idle buffer (one a kernel overwrote is freed, never
    given back). At most ``limit`` bytes (the arrays' bytes and extensions — a buffer sized to a dispatch
    longer than its array counts the dispatch's extent — guard tails not counted) stay idle (the oldest
    are freed first);
    :meth:`Device.close` empties it. ``taken`` / ``given`` count reuses and returns.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(0, int(limit))
        self.idle_bytes = 0
        self.taken = 0
        self.given = 0
        self._idle: OrderedDict[PoolKey, list[int]] = OrderedDict()

    def __len__(self) -> int:
        return sum(len(buffers) for buffers in self._idle.values())

    def take(self, key: PoolKey) -> int | None:
        buffers = self._idle.get(key)
        if not buffers:
            return None
        buffer = buffers.pop()
        if not buffers:
            del self._idle[key]
        self.idle_bytes -= key[0] + key[3]
        self.taken += 1
        return buffer

    def give(self, key: PoolKey, buffer: int) -> list[int]:
        """Keep ``buffer``; returns what no longer fits (``buffer`` itself when it alone is over the limit)."""
        counted = key[0] + key[3]
        if counted > self.limit:
            return [buffer]
        self._idle.setdefault(key, []).append(buffer)
        self._idle.move_to_end(key)
        self.idle_bytes += counted
        self.given += 1
        evicted = []
        while self.idle_bytes > self.limit:
            old_key, buffers = next(iter(self._idle.items()))
            evicted.append(buffers.pop(0))
            self.idle_bytes -= old_key[0] + old_key[3]
            if not buffers:
                del self._idle[old_key]
        return evicted

    def clear(self) -> list[int]:
        """Forget every idle buffer; returns them (the caller frees them, or a reset does)."""
        out = [buffer for buffers in self._idle.values() for buffer in buffers]
        self._idle.clear()
        self.idle_bytes = 0
        return out


@dataclass(frozen=True)
class DeviceArray:
    """An array that lives in a device buffer; bound to kernels without a transfer."""

    device: Device
    buffer: int
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @_serialized
    def numpy(self) -> npt.NDArray[Any]:
        """A host copy of the array."""
        out = np.empty(self.shape, self.dtype)
        self.device.engine.read_buffer_into(self.buffer, 0, _bytes_view(out))
        return out

    @_serialized
    def write(self, data: npt.ArrayLike) -> None:
        """Overwrite the whole array from ``data`` (same dtype and size)."""
        host = np.ascontiguousarray(data)
        if host.dtype != self.dtype or host.nbytes != self.nbytes:
            raise _invalid(f"write: expected {self.size} {self.dtype} elements, got {host.size} {host.dtype}")
        self.device.engine.write_buffer(self.buffer, 0, MemorySource(host.reshape(-1).view(np.uint8).data))

    @_serialized
    def free(self) -> None:
        self.device.engine.free_buffer(self.buffer)


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class Parameter:
    """One thing a call can pass: a ``buffer``, a by-value ``value``, a ``local`` pointer or a ``push`` member."""

    name: str
    role: str  # buffer, value, local, push
    index: int  # OpenCL argument index / Vulkan position in (set, binding) order / push member index
    element: ValueType | None = None
    access: AccessMode = AccessMode.READ
    uniform: bool = False
    set: int = 0
    binding: int = 0
    aliases: tuple[str, ...] = ()
    """Other names that denote it (a Vulkan descriptor's instance, block and only-member names)."""
    min_bytes: int = 0
    """A uniform block's size: a shorter array is refused before anything is uploaded."""
    layout: str = ""
    """A uniform block's members with their offsets (std140 surprises: a float[] member's 16-byte stride)."""
    element_layout: ElementLayout | None = None
    """A buffer's element (a uniform block: the whole block) as the module lays it out; None when unknown.
    Every array bound to it is checked against it (:func:`accelcore.layouts.check_array`)."""
    signedness_known: bool = True
    """False where the module cannot say int from uint (OpenCL SPIR-V, clspv): either is accepted."""


def _opencl_parameters(module: bytes, kind: ModuleKind, entry: str | None, options: str) -> list[Parameter]:
    out: list[Parameter] = []
    if kind is ModuleKind.OPENCL_SOURCE:
        kernels = opencl_kernels(module.decode("utf-8"), options)
        chosen = [k for k in kernels if entry is None or k.name == entry]
        if not chosen:
            return out
        for p in chosen[0].parameters:
            role = "buffer" if p.is_buffer else "local" if p.is_local else "value"
            access = AccessMode.READ if (p.is_const or p.address_space == "constant") else AccessMode.READ_WRITE
            element = p.value_type or p.aggregate_scalar  # struct { float4 pos; float4 vel; }: float32 arrays
            layout = p.layout if role == "buffer" else None
            out.append(Parameter(p.name or str(p.index), role, p.index, element, access, element_layout=layout))
        return out
    spirv = inspect_spirv(module)
    entries = [
        e for e in spirv.entry_points if e.execution_model_name == "Kernel" and (entry is None or e.name == entry)
    ]
    for kp in entries[0].parameters if entries else ():
        space = kp.storage_class
        role = "value" if space is None else "local" if space == 4 else "buffer"
        element = spirv_value_type(kp.type) if kp.type is not None else None
        access = AccessMode.READ if (kp.no_write or space == 0) else AccessMode.READ_WRITE
        layout = spirv_layout(kp.type) if role == "buffer" and kp.type is not None else None
        name = kp.name or str(kp.index)
        out.append(Parameter(name, role, kp.index, element, access, element_layout=layout, signedness_known=False))
    return out


def _vulkan_parameters(module: bytes) -> list[Parameter]:
    spirv = inspect_spirv(module)
    out: list[Parameter] = []
    for position, d in enumerate(spirv.descriptors):
        element = None
        element_layout = None
        members = d.type.members if d.type is not None else ()
        component = members[-1].type.component if members else None
        if members and members[-1].type.kind in ("runtime_array", "array") and component is not None:
            element = spirv_value_type(component) or _single_scalar(component)
            last = members[-1]
            element_layout = with_stride(
                spirv_layout(component, matrix_stride=last.matrix_stride, row_major=last.row_major), last.type.stride
            )
            if len(members) > 1 and d.type is not None:
                if last.type.kind == "runtime_array" and last.offset is not None and last.type.stride:
                    header = [
                        LayoutField(m.name or "", m.offset or 0, spirv_layout(m.type, matrix_stride=m.matrix_stride,
                                                                              row_major=m.row_major))
                        for m in members[:-1]
                    ]  # fmt: skip
                    element_layout = block_layout(
                        header, last.offset, element_layout, last.type.stride, last.name or ""
                    )
                else:
                    element_layout = spirv_layout(d.type)  # members then a fixed array: the block is one element
        if d.descriptor_type == "uniform_buffer" or (members and element_layout is None and d.type is not None):
            element_layout = spirv_layout(d.type) if d.type is not None else None  # the whole block is one element
        only_member = members[0].name if len(members) == 1 else None
        names = [n for n in (d.name, only_member, d.block_name) if n]
        label = names[0] if names else str(position)
        uniform = d.descriptor_type == "uniform_buffer"
        block_size = d.type.size if uniform and d.type is not None and d.type.size else 0
        layout = ", ".join(
            f"{m.name or n} {describe(m.type)}{f' (stride {m.type.stride})' if m.type.stride else ''} at {m.offset}"
            for n, m in enumerate(members)
        )
        out.append(
            Parameter(
                label,
                "buffer",
                position,
                element,
                d.access,
                uniform,
                d.set,
                d.binding,
                tuple(dict.fromkeys(n for n in names[1:] if n != label)),
                block_size,
                layout if uniform else "",
                element_layout,
                (spirv.generator >> 16) != CLSPV_GENERATOR,
            )
        )
    block = spirv.push_constant_block
    for number, member in enumerate(block.members if block is not None else ()):
        out.append(Parameter(member.name or str(number), "push", number, spirv_value_type(member.type)))
    taken = {p.name for p in out}
    whole = next((n for n in (block.variable_name, block.type_name) if n and n not in taken), None) if block else None
    if whole is not None:  # the whole block by its instance (or block) name: bytes, or a dict of members
        out.append(Parameter(whole, "push_block", -1))
    return out


def _single_scalar(t: SpirvType, depth: int = 0) -> ValueType | None:
    """The one scalar type every leaf of a struct/array/matrix element has (``struct { vec2 pos; vec2 vel; }``:
    f32), so a plain array of another dtype is refused; None when the leaves differ, or a bool or opaque type."""
    if depth > 16:
        return None
    if t.kind == "struct":
        found = {_single_scalar(m.type, depth + 1) for m in t.members}
    elif t.kind in ("array", "runtime_array", "matrix", "vector") and t.component is not None:
        found = {_single_scalar(t.component, depth + 1)}
    else:
        vtype = spirv_value_type(t)
        found = {vtype if vtype is not None and vtype.lanes == 1 and vtype.scalar is not ScalarType.BOOL else None}
    return found.pop() if len(found) == 1 else None


def _element_dtype(element: ValueType | None) -> np.dtype[Any] | None:
    return None if element is None else element.scalar.numpy_dtype


def declared_elements(pkg: KernelPackage) -> dict[int, Parameter]:
    """Slot → the buffer parameter the package's module declares there (its name, element type and layout)."""
    try:
        if pkg.module_kind is ModuleKind.SPIRV_VULKAN:
            params = _vulkan_parameters(pkg.module)
            by_native = {(p.set, p.binding): p for p in params if p.role == "buffer"}
            return {
                row.slot: by_native[(row.set, row.native_index)]
                for row in pkg.bindings
                if (row.set, row.native_index) in by_native
            }
        if pkg.module_kind in (ModuleKind.OPENCL_SOURCE, ModuleKind.SPIRV_OPENCL):
            by_index = {
                p.index: p
                for p in _opencl_parameters(pkg.module, pkg.module_kind, pkg.entry_point, pkg.build_options)
                if p.role == "buffer"
            }
            return {row.slot: by_index[row.native_index] for row in pkg.bindings if row.native_index in by_index}
        if pkg.module_kind is ModuleKind.OPENCL_BINARY:  # the element types `accel compile` recorded
            recorded = {n.index: n for n in pkg.argument_names}
            return {
                row.slot: Parameter(
                    recorded[row.native_index].name, "buffer", row.slot, recorded[row.native_index].element
                )
                for row in pkg.bindings
                if row.native_index in recorded and recorded[row.native_index].element is not None
            }
    except UnicodeDecodeError:
        pass  # not text: the provider refuses it at load
    return {}


def check_buffer_array(what: str, dtype: np.dtype[Any], shape: Sequence[int], declared: Parameter | None) -> None:
    """INVALID_ARGUMENT unless an array of ``dtype`` and ``shape`` holds the declared elements exactly
    (:func:`accelcore.layouts.check_array`: dtype, struct layout, vector lanes; never converted)."""
    if declared is None:
        return
    if declared.element_layout is not None:
        check_array(what, dtype, shape, declared.element_layout, signedness_known=declared.signedness_known)
        return
    wanted = _element_dtype(declared.element)
    if wanted is not None and (dtype.fields is not None or dtype.base != wanted):
        raise _invalid(
            f"{what} declares {declared.element} elements ({wanted}) but was given an array of {dtype}; "
            f"convert it first (e.g. x.astype(np.{wanted.name}))"
        )


# --------------------------------------------------------------------------- kernels


def _entry_points(name: str, module: bytes, kind: ModuleKind, build_options: str) -> list[str]:
    """The kernels ``module`` offers: OpenCL C ``__kernel`` functions, OpenCL SPIR-V Kernel or Vulkan GLCompute
    entry points."""
    if kind is ModuleKind.OPENCL_SOURCE:
        try:
            source = module.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _invalid(f"{name}: OpenCL C source is not UTF-8 text (byte {exc.start})") from None
        return [k.name for k in opencl_kernels(source, build_options)]
    model = "GLCompute" if kind is ModuleKind.SPIRV_VULKAN else "Kernel"
    return [e.name for e in inspect_spirv(module).entry_points if e.execution_model_name == model]


def _check_entry(name: str, entry: str | None, offered: Sequence[str]) -> None:
    """INVALID_ARGUMENT, listing ``offered``, unless ``entry=`` names one of them (or is None and there is one)."""
    listed = ", ".join(offered)
    if entry is not None and entry not in offered:
        has = f"its kernels: {listed}" if offered else "it has no kernel"
        raise _invalid(f"entry={entry!r}: {name} has no kernel {entry!r} ({has})")
    if not offered:
        raise _invalid(f"{name} has no kernel (no __kernel function or compute entry point)")
    if entry is None and len(offered) > 1:
        raise _invalid(f"{name} has {len(offered)} kernels ({listed}); pass entry= to choose one")


class Kernel:
    """A kernel of one module on one device; call it with arrays and scalars (see the module docstring)."""

    def __init__(
        self,
        device: Device,
        module: bytes,
        name: str,
        *,
        entry: str | None,
        spec: Mapping[str | int, object] | None,
        local_size: int | Sequence[int] | None,
        build_options: str,
        kind: ModuleKind | None,
        slots: Mapping[str, str] | None = None,
    ) -> None:
        self.device = device
        self._generation = device.generation
        self._slot_texts = dict(slots or {})
        self.name = name
        self._module = module
        self._entry = entry
        self._spec: dict[str | int, object] = dict(spec or {})
        self._local_size: tuple[int, ...] | None = None
        if local_size is not None:
            chosen = work_size("local_size", local_size)
            self._local_size = (chosen,) if isinstance(chosen, int) else chosen
        self._build_options = build_options
        self._programs: OrderedDict[bytes, tuple[int, KernelPackage]] = OrderedDict()
        self._packages: OrderedDict[Hashable, tuple[KernelPackage, bytes, tuple[_Slot, ...]]] = OrderedDict()
        """Packages (their bytes, the program cache key, and their buffer layout) by the exact scalar
        values and work size of the calls that made them: a repeated call packs nothing."""
        self._last_call: (
            tuple[tuple[KernelPackage, bytes, tuple[_Slot, ...]], tuple[str, ...], tuple[object, ...], object, object]
            | None
        ) = None
        """The previous call's result with its argument names, value objects, global size and groups."""
        self._bindings: dict[int, tuple[Binding, ...]] = {}
        """The last two (``_BINDINGS_PER_SLOT``, newest first) immutable Bindings made per slot: a call on
        one of those array objects reuses its Binding (also when calls alternate between a host array and
        a device array). They keep those arrays alive until replaced, as the one Binding per slot did."""
        self._routes: dict[tuple[str, ...], tuple[tuple[str, str, bool], ...]] = {}
        """Per tuple of keyword names of an all-keyword call that routed without error: (parameter name,
        keyword, is a buffer) in routing order, so the same names route again without re-checking."""
        self._last_run: tuple[tuple[str, ...], tuple[object, ...], object, object, bytes, int, Any] | None = None
        """The previous all-keyword call on device arrays and immutable values only: (names, the value objects,
        global size, groups, program cache key, program, its Run's ``prepared``). A call with the very same
        objects (nothing in them can change: a device array's buffer, shape and dtype are fixed) reuses the
        binding work; a freed array's buffer is refused by the engine as on any call."""
        self.package: KernelPackage | None = None
        if module.startswith(MAGIC[:4]):
            self.package = parse_package(module)
            self.kind = self.package.module_kind
            _check_entry(name, entry, [self.package.entry_point])
            self.parameters = self._package_parameters(self.package)
        else:
            self.kind = kind if kind is not None else detect_module_kind(module)
            if self.kind is ModuleKind.OPENCL_SOURCE:
                self._build_now()  # first: a compile error says more than any check of the source's text
            if self.kind is not ModuleKind.OPENCL_BINARY:
                _check_entry(name, entry, _entry_points(name, module, self.kind, build_options))
            if self.kind is ModuleKind.SPIRV_VULKAN:
                self.parameters = tuple(_vulkan_parameters(module))
                size = list(self._local_size or (1, 1, 1)) + [1] * (3 - len(self._local_size or ()))
                given = False
                for axis, key in enumerate(("local_size_x", "local_size_y", "local_size_z")):
                    value = self._spec.pop(key, None)
                    if value is None:
                        continue
                    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                        raise _invalid(f"spec {key}={value!r}: a work-group size is a positive integer")
                    size[axis], given = value, True
                if given:
                    self._local_size = (size[0], size[1], size[2])
            elif self.kind is ModuleKind.OPENCL_BINARY:
                raise _invalid(f"{name}: an OpenCL device binary says nothing about its arguments; load its .kpkg")
            else:
                self.parameters = tuple(_opencl_parameters(module, self.kind, entry, build_options))
        # What every call's routing needs, worked out once (the parameters never change).
        self._order = tuple(
            [p for p in self.parameters if p.role != "push"]
            if self.kind is not ModuleKind.SPIRV_VULKAN
            else [p for p in self.parameters if p.role == "buffer"]
        )
        self._by_name = {p.name: p for p in self.parameters}
        owners: dict[str, list[str]] = {}
        for p in self.parameters:
            for a in p.aliases:
                if a not in self._by_name:
                    owners.setdefault(a, []).append(p.name)
        self._alias = {a: names[0] for a, names in owners.items() if len(names) == 1}
        self._ambiguous = {a: names for a, names in owners.items() if len(names) > 1}
        """Names that denote several parameters (uVkCompute's ``InputA { vec4 x[]; }``, ``Output { vec4 x[]; }``):
        refused, naming the candidates, never bound to one of them."""
        self._buffer_names = frozenset(p.name for p in self.parameters if p.role == "buffer")
        self._slots = _parse_slots(self._slot_texts, self.parameters, self.package is not None)

    def _build_now(self) -> None:
        """Build OpenCL C source once, now, so that ``Device.kernel`` raises a compile error (the driver's
        build log) instead of the first call: a package made to build it (:func:`accelcore.pack.build_package`:
        placeholder values) is loaded and unloaded at once. The provider keeps the compiled binary (OpenCL:
        its binary cache), so the first call loads that instead of compiling. A load refused for any other
        reason is left to the checks that follow and to the first call, which reports it with its values."""
        probe = build_package(
            self._module,
            entry_point=self._entry,
            local_size=_triple(self._local_size) if self._local_size is not None else None,
            build_options=self._build_options,
        )
        if probe is None:
            return
        device = self.device
        ref = ArtifactRef(probe.format, probe.target, MemorySource(write_package(probe)), device.resident_bytes)
        try:
            program = device.load_artifact(ref)
        except BackendError as exc:
            if exc.native_call == "clBuildProgram":
                raise
            return
        device.engine.unload_program(program)

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}:{p.role}" for p in self.parameters)
        return f"<accelcore.Kernel {self.name} on {self.device.id} ({names})>"

    @staticmethod
    def _package_parameters(pkg: KernelPackage) -> tuple[Parameter, ...]:
        names = {slot: name for name, slot in binding_names(pkg).items()}
        declared = declared_elements(pkg)  # a package's arrays are checked like a raw module's
        out = []
        for row in sorted(pkg.bindings, key=lambda r: (r.set, r.native_index)):
            module = declared.get(row.slot)
            name = names.get(row.slot, str(row.slot))
            if module is None:
                out.append(Parameter(name, "buffer", row.slot, None, row.access, set=row.set))
                continue
            out.append(dataclasses.replace(module, name=name, index=row.slot, access=row.access, aliases=()))
        return tuple(out)

    # -- argument routing ------------------------------------------------------

    def _route(
        self, args: Sequence[object], kwargs: Mapping[str, object]
    ) -> tuple[dict[str, object], dict[str, object]]:
        """(buffers by parameter name, scalars/local/push by name)."""
        if not args:
            route = self._routes.get(tuple(kwargs))
            if route is not None:
                routed: dict[str, object] = {}
                rest: dict[str, object] = {}
                for name, key, is_buffer in route:
                    (routed if is_buffer else rest)[name] = kwargs[key]
                return routed, rest
        order = self._order
        if len(args) > len(order):
            raise _invalid(
                f"{self.name} takes {len(order)} positional arguments "
                f"({', '.join(p.name for p in order)}), got {len(args)}"
            )
        given: dict[str, object] = {}
        for param, value in zip(order, args, strict=False):
            given[param.name] = value
        by_name, alias = self._by_name, self._alias
        for key, value in kwargs.items():
            if key in self._ambiguous:
                raise _invalid(
                    f"{self.name}: {key!r} names several buffers ({', '.join(self._ambiguous[key])}: the member of "
                    "each block); pass them by these names"
                )
            key = alias.get(key, key)
            if key not in by_name:
                listed = ", ".join(f"{p.name} ({p.role})" for p in self.parameters)
                raise _invalid(f"{self.name} has no argument {key!r} (it has: {listed})")
            if key in given:
                raise _invalid(f"argument {key!r} is given twice (by position and by name)")
            given[key] = value
        buffers: dict[str, object] = {}
        others: dict[str, object] = {}
        buffer_names = self._buffer_names
        for key, value in given.items():
            if key in buffer_names:
                buffers[key] = value
            else:
                others[key] = value
        if len(buffers) != len(buffer_names):
            missing = [p.name for p in self.parameters if p.role == "buffer" and p.name not in buffers]
            raise _invalid(f"{self.name}: buffer argument(s) {', '.join(missing)} not given")
        if not args and len(self._routes) < _ROUTES_KEPT:
            self._routes[tuple(kwargs)] = tuple(
                (alias.get(key, key), key, alias.get(key, key) in buffer_names) for key in kwargs
            )
        return buffers, others

    def _pack(
        self,
        others: Mapping[str, object],
        global_size: int | Sequence[int] | None,
        groups: int | Sequence[int] | None,
    ) -> KernelPackage:
        if self.package is not None:
            if others:
                raise _invalid(
                    f"{self.name} is a kernel package: its arguments are recorded ({', '.join(others)} given); "
                    "load the source module to pass them per call"
                )
            return self.package
        by_name = {p.name: p for p in self.parameters}
        arguments: dict[str | int, object] = {k: v for k, v in others.items() if by_name[k].role == "value"}
        push: dict[str | int, object] | bytes = {k: v for k, v in others.items() if by_name[k].role == "push"}
        whole = [k for k in others if by_name[k].role == "push_block"]
        if whole:
            block = others[whole[0]]
            if push:
                raise _invalid(f"{whole[0]}= gives the whole push-constant block; do not also give its members")
            if isinstance(block, (bytes, bytearray, memoryview)):
                push = bytes(block)
            elif isinstance(block, Mapping):
                push = dict(block)
            else:
                raise _invalid(
                    f"{whole[0]}= is the push-constant block: give its exact bytes or a dict of its members, "
                    f"not {type(block).__name__}"
                )
        local: dict[str | int, int] = {}
        for key, value in others.items():
            if by_name[key].role == "local":
                if not isinstance(value, LocalMemory):
                    raise _invalid(
                        f"argument {key!r} is a __local pointer; pass ac.local_memory(NBYTES), not {value!r}"
                    )
                local[key] = value.nbytes
            elif isinstance(value, LocalMemory):
                raise _invalid(f"argument {key!r} is not a __local pointer; local_memory() fits __local arguments only")
        dispatch = None
        if groups is not None:
            if global_size is not None:
                raise _invalid("give global_size= or groups=, not both")
            dispatch = Dispatch(DispatchKind.FIXED, _triple((groups,) if isinstance(groups, int) else groups))
        elif global_size is None:
            raise _invalid(f"{self.name}: pass global_size= (work-items, 1-3 axes) or groups=")
        local_size = self._local_size
        try:
            packed = pack_module(
                self._module,
                kind=self.kind,
                entry_point=self._entry,
                dispatch=dispatch,
                global_size=None if dispatch is not None else global_size,
                local_size=_triple(local_size) if local_size is not None else None,
                build_options=self._build_options,
                arguments=arguments or None,
                local_memory=local or None,
                push_constants=push or None,
                spec_constants=self._spec or None,
            )
            return _with_slots(packed, self._slots, self.parameters, self.kind)
        except BackendError as exc:  # named as a Python caller writes it (entry=, not entry_point=)
            words = python_words(exc.message)
            if words == exc.message or exc.domain is not None:
                raise
            raise BackendError(exc.kind, words, native_call=exc.native_call, native_code=exc.native_code) from None

    def _packed(
        self,
        others: Mapping[str, object],
        global_size: int | Sequence[int] | None,
        groups: int | Sequence[int] | None,
    ) -> tuple[KernelPackage, bytes, tuple[_Slot, ...]]:
        """:meth:`_pack` + ``write_package`` + the package's buffer layout, remembered for calls with
        the same exact values (and, for a call with the very same immutable value objects as the
        previous one, found without building its key)."""
        last = self._last_call
        if (
            last is not None
            and last[1] == tuple(others)
            and all(map(operator.is_, last[2], others.values()))
            and (global_size is last[3] or (type(global_size) is int and global_size == last[3]))
            and (groups is last[4] or (type(groups) is int and groups == last[4]))
        ):
            return last[0]
        made = self._packed_by_key(others, global_size, groups)
        values = tuple(others.values())
        if (
            all(type(v) in _IMMUTABLE or (isinstance(v, np.generic) and not isinstance(v, np.void)) for v in values)
            and (
                global_size is None
                or type(global_size) is int
                or (type(global_size) is tuple and all(type(g) is int for g in global_size))
            )
            and (groups is None or type(groups) is int or type(groups) is tuple)
        ):
            self._last_call = (made, tuple(others), values, global_size, groups)
        else:
            self._last_call = None
        return made

    def _packed_by_key(
        self,
        others: Mapping[str, object],
        global_size: int | Sequence[int] | None,
        groups: int | Sequence[int] | None,
    ) -> tuple[KernelPackage, bytes, tuple[_Slot, ...]]:
        key = _call_key(others, global_size, groups)
        if key is not None:
            hit = self._packages.get(key)
            if hit is not None:
                self._packages.move_to_end(key)
                return hit
        pkg = self._pack(others, global_size, groups)
        made = (pkg, write_package(pkg), self._layout(pkg))
        if key is not None:
            self._packages[key] = made
            while len(self._packages) > _PACKAGES_PER_KERNEL:
                self._packages.popitem(last=False)
        return made

    def _program(self, pkg: KernelPackage, data: bytes | None = None) -> int:
        if data is None:
            data = write_package(pkg)
        cached = self._programs.get(data)
        if cached is not None:
            self._programs.move_to_end(data)
            return cached[0]
        engine = self.device.engine
        ref = ArtifactRef(pkg.format, pkg.target, MemorySource(data), self.device.resident_bytes)
        program = engine.load_program(self.device.context, ref)
        self._programs[data] = (program, pkg)
        while len(self._programs) > _PROGRAMS_PER_KERNEL:
            _, (old, _) = self._programs.popitem(last=False)
            engine.unload_program(old)
        return program

    # -- calls ----------------------------------------------------------------

    @_serialized
    def submit(
        self,
        *args: object,
        global_size: int | Sequence[int] | None = None,
        groups: int | Sequence[int] | None = None,
        timeout: float | None = None,
        allow_short_device_arrays: bool = False,
        **kwargs: object,
    ) -> Run:
        """Check, upload and submit; returns a :class:`Run` (``done()``, ``wait()``, ``cancel()``).

        ``global_size`` (work-items) or ``groups`` (work-groups): an int or a tuple of 1 to 3 ints
        (:func:`accelcore.keywords.work_size`; anything else is INVALID_ARGUMENT naming the keyword).

        ``allow_short_device_arrays``: bind a device array shorter than the work-items the call asks for
        where the kernel's coverage of it is unknown (refused by default: INVALID_ARGUMENT naming it); say
        so only for a kernel that checks its index (docs/python.md, "Short arrays")."""
        return self._submit(args, kwargs, global_size, groups, timeout, allow_short_device_arrays)

    def _submit(
        self,
        args: Sequence[object],
        kwargs: Mapping[str, object],
        global_size: int | Sequence[int] | None,
        groups: int | Sequence[int] | None,
        timeout: float | None,
        allow_short_device_arrays: bool = False,
    ) -> Run:
        self.device._check_open()
        if self._generation != self.device.generation:
            # The device was reset: its programs and the buffers of the last run are gone; load again.
            self._programs.clear()
            self._last_run = None
            self._generation = self.device.generation
        if global_size is not None and (type(global_size) is not int or global_size < 1):
            global_size = work_size("global_size", global_size)
        if groups is not None and (type(groups) is not int or groups < 1):
            groups = work_size("groups", groups)
        last = self._last_run
        if (
            last is not None
            and not args
            and last[0] == tuple(kwargs)
            and all(map(operator.is_, last[1], kwargs.values()))
            and (global_size is last[2] or (type(global_size) is int and global_size == last[2]))
            and (groups is last[3] or (type(groups) is int and groups == last[3]))
        ):
            loaded = self._programs.get(last[4])
            if loaded is not None and loaded[0] == last[5]:  # still loaded (a full cache unloads the oldest)
                self._programs.move_to_end(last[4])
                return Run(self.device, last[5], (), timeout, label=self.name, prepared=last[6])
        buffers, others = self._route(args, kwargs)
        pkg, data, layout = self._packed(others, global_size, groups)
        plan = []
        reuse = self._bindings
        for slot in layout:
            value = buffers[slot.param.name]
            # The common case is decided here; anything else gets the full check (and its error).
            bound: npt.NDArray[Any] | DeviceArray
            if type(value) is np.ndarray:  # (a subclass - np.ma's masked arrays - gets the full check)
                flags, nbytes, bound = value.flags, value.nbytes, value
                fits = (slot.unchecked and not value.dtype.hasobject) or (
                    slot.dtype is not None and value.dtype == slot.dtype
                )
                fits = fits and flags.c_contiguous
                fits = fits and (flags.writeable or not slot.writes)
            elif isinstance(value, DeviceArray):
                nbytes, bound = value.nbytes, value
                fits = slot.unchecked or (slot.dtype is not None and value.dtype == slot.dtype)
            else:
                fits, nbytes = False, 0
            if not (fits and nbytes and not nbytes % slot.element_size and nbytes >= slot.param.min_bytes):
                bound = _checked_array(slot.param, slot.row, value, pkg)
            recent = reuse.get(slot.slot, ())
            for made in recent:
                if made.value is bound and made.access is slot.access:
                    break
            else:
                made = Binding(slot.param.name, slot.slot, slot.access, bound)
                reuse[slot.slot] = (made, *recent[: _BINDINGS_PER_SLOT - 1])
            plan.append(made)
        program = self._program(pkg, data)
        run = Run(
            self.device,
            program,
            plan,
            timeout,
            label=self.name,
            package=pkg,
            allow_short_device_arrays=allow_short_device_arrays,
        )
        values = tuple(kwargs.values())
        if (
            run.prepared is not None
            and not args
            and all(
                type(v) is DeviceArray
                or type(v) in _IMMUTABLE
                or (isinstance(v, np.generic) and not isinstance(v, np.void))
                for v in values
            )
            and (
                global_size is None
                or type(global_size) is int
                or (type(global_size) is tuple and all(type(g) is int for g in global_size))
            )
            and (groups is None or type(groups) is int or type(groups) is tuple)
        ):
            self._last_run = (tuple(kwargs), values, global_size, groups, data, program, run.prepared)
        else:
            self._last_run = None
        return run

    def _layout(self, pkg: KernelPackage) -> tuple[_Slot, ...]:
        """Each buffer parameter's binding row in ``pkg`` and what its array is checked against."""
        rows = {(row.set, row.native_index): row for row in pkg.bindings}
        layout = []
        for param in self.parameters:
            if param.role != "buffer":
                continue
            if self.package is not None:
                row = next(r for r in pkg.bindings if r.slot == param.index)
            elif self.kind is ModuleKind.SPIRV_VULKAN:
                row = rows[(param.set, param.binding)]
            else:
                row = rows[(0, param.index)]
            access = AccessMode(row.access)
            layout.append(
                _Slot(
                    param,
                    row,
                    row.slot,
                    access,
                    bool(access & AccessMode.WRITE),
                    _fast_dtype(param),
                    row.element_size,
                    param.element_layout is None and param.element is None,
                )
            )
        return tuple(layout)

    @_serialized
    def __call__(
        self,
        *args: object,
        global_size: int | Sequence[int] | None = None,
        groups: int | Sequence[int] | None = None,
        timeout: float | None = None,
        allow_short_device_arrays: bool = False,
        **kwargs: object,
    ) -> Any:
        """``submit(...).wait()``: the arrays the kernel writes (one, or a tuple in parameter order)."""
        return self._submit(args, kwargs, global_size, groups, timeout, allow_short_device_arrays).wait()


_SLOT_ACCESS = {"r": AccessMode.READ, "w": AccessMode.WRITE, "rw": AccessMode.READ_WRITE}


def _parse_slots(
    texts: Mapping[str, str], parameters: Sequence[Parameter], is_package: bool
) -> dict[str, tuple[AccessMode, int | None]]:
    """``slots=`` of :meth:`Device.kernel`: buffer name → (access, element bytes or None); INVALID_ARGUMENT naming
    a name that is no buffer, a malformed value or access the module does not declare."""
    if not texts:
        return {}
    if is_package:
        raise _invalid("slots=: a kernel package records its binding table; give slots= with the source module")
    buffers = {p.name: p for p in parameters if p.role == "buffer"}
    out: dict[str, tuple[AccessMode, int | None]] = {}
    for name, text in texts.items():
        param = buffers.get(name)
        if param is None:
            raise _invalid(f"slots={{{name!r}: ...}}: the kernel has no buffer {name!r} (it has: {', '.join(buffers)})")
        access_text, _, size_text = str(text).partition(":")
        access = _SLOT_ACCESS.get(access_text.strip().lower())
        element: int | None = None
        if size_text:
            element = int(size_text) if size_text.strip().isdecimal() else 0
        if access is None or element == 0:
            raise _invalid(f"slots={{{name!r}: {text!r}}} is not r, w or rw, optionally :BYTES (e.g. 'w', 'r:16')")
        if not access_allows(param.access, access):
            raise _invalid(
                f"slots={{{name!r}: {text!r}}} asks for {access.name} but the module declares {name} "
                f"{param.access.name} (a const or read-only buffer cannot be written)"
            )
        out[name] = (access, element)
    return out


def _with_slots(
    pkg: KernelPackage,
    slots: Mapping[str, tuple[AccessMode, int | None]],
    parameters: Sequence[Parameter],
    kind: ModuleKind,
) -> KernelPackage:
    """``pkg`` with the binding rows ``slots=`` names set to its access and element size."""
    if not slots:
        return pkg
    by_name = {p.name: p for p in parameters}
    rows = []
    for row in pkg.bindings:
        for name, (access, element) in slots.items():
            param = by_name[name]
            native = (param.set, param.binding) if kind is ModuleKind.SPIRV_VULKAN else (0, param.index)
            if (row.set, row.native_index) == native:
                row = dataclasses.replace(row, access=access, element_size=element or row.element_size)
        rows.append(row)
    return dataclasses.replace(pkg, bindings=tuple(rows))


def _checked_array(param: Parameter, row: Any, value: object, pkg: KernelPackage) -> npt.NDArray[Any] | DeviceArray:
    """The array for a buffer parameter, checked against the declaration (never converted)."""
    what = f"argument {param.name}"
    writes = bool(int(row.access) & int(AccessMode.WRITE))
    if isinstance(value, DeviceArray):
        dtype, nbytes = value.dtype, value.nbytes
    elif isinstance(value, Mapping) and param.uniform and param.element_layout is not None:
        return np.frombuffer(encode_layout(param.element_layout, value, what), np.uint8)  # laid out here
    elif isinstance(value, np.ndarray):
        dtype, nbytes = value.dtype, value.nbytes
        if isinstance(value, np.ma.MaskedArray):
            raise _invalid(f"{what} is a masked array (np.ma); a kernel sees no mask: pass .filled(VALUE) or .data")
        if not value.flags.c_contiguous:
            order = "Fortran-ordered (column-major)" if value.flags.f_contiguous else "not contiguous"
            raise _invalid(
                f"{what} is {order}; a kernel sees flat memory in C order: pass np.ascontiguousarray(x) to keep its "
                "values (the kernel then reads them row-major), or x.T when the kernel reads column-major data "
                "(the same bytes, C-ordered)"
            )
        if writes and not value.flags.writeable:
            raise _invalid(f"{what} is read-only, but the kernel writes it ({row.access.name})")
    else:
        raise _invalid(f"{what} is a buffer; pass a numpy array or a device array, not {type(value).__name__}")
    check_buffer_array(what, dtype, value.shape, param)
    if dtype.hasobject:  # (a declared element type says so above, naming it)
        raise _invalid(f"{what} is an array of {dtype}, which holds Python objects; a buffer takes plain data")
    if nbytes == 0:
        raise _invalid(f"{what} is empty; a buffer needs at least one element")
    block = param.element_layout is not None and param.element_layout.kind == "block"
    if block and param.element_layout is not None and (param.element_layout.size or 0) > nbytes:
        raise _invalid(f"{what} holds {nbytes} bytes, less than the {param.element_layout.size} of its block's members")
    if nbytes % row.element_size and not block:  # a block's members come before its elements
        raise _invalid(
            f"{what}: {nbytes} bytes are not a whole number of the kernel's {row.element_size}-byte elements"
        )
    if nbytes < param.min_bytes:
        raise _invalid(
            f"{what} is a uniform block of {param.min_bytes} bytes ({param.layout}) but was given {nbytes} bytes"
        )
    return value  # stated coverage is the engine's to check at submit


@dataclass(frozen=True, slots=True)
class _Slot:
    """One buffer parameter of a package, worked out once per package: its row, slot and access,
    whether the kernel writes it, the element dtype an array of any shape may have without the full
    check (:func:`_fast_dtype`) and the row's element size."""

    param: Parameter
    row: Any
    slot: int
    access: AccessMode
    writes: bool
    dtype: np.dtype[Any] | None
    element_size: int
    unchecked: bool = False
    """Nothing is known of the element: any dtype passes (a byte-size check still applies)."""


def _fast_dtype(param: Parameter) -> np.dtype[Any] | None:
    """The dtype whose arrays of any shape match ``param`` without the full check (a scalar element);
    None when every array needs :func:`check_buffer_array` (vectors, structs, blocks) or nothing is known."""
    layout = param.element_layout
    if layout is not None:
        return layout.scalar.numpy_dtype if layout.kind == "scalar" and layout.scalar is not None else None
    return _element_dtype(param.element) if param.element is not None and param.element.lanes == 1 else None


def _short_device_array(name: str, array: DeviceArray, extent: Extent) -> BackendError:
    """The refusal of a device array shorter than the work-items a dispatch asks for (coverage unknown)."""
    items = extent.requested_bytes // extent.element_size
    return _invalid(
        f"argument {name} is a device array of {array.nbytes} bytes ({array.nbytes // extent.element_size} "
        f"elements of {extent.element_size} bytes), but the dispatch asks for {items} work-items and the "
        f"kernel's coverage of it is unknown: indexed by work-item it would be read or written {items} elements "
        "long, past its end (a device array has no guard); give a device array as long as the dispatch, state "
        "the coverage, or pass allow_short_device_arrays=True if the kernel checks its index"
    )


class RunCancelled(Exception):
    """:meth:`Run.wait` on a run whose event ended Cancelled (the kernel never ran)."""


@dataclass(frozen=True, slots=True)
class Binding:
    """One bound buffer of a run: ``value`` goes to ``slot`` with ``access``; ``readback`` copies what the
    kernel wrote back into ``value`` (a host array) after a Complete run."""

    name: str
    slot: int
    access: AccessMode
    value: npt.NDArray[Any] | DeviceArray
    readback: bool = True
    source: MemorySource | None = field(default=None, init=False, compare=False)
    """A host array's bytes as the engine's write takes them, made once (a view: no copy)."""

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, np.ndarray) and value.flags.c_contiguous and value.nbytes:
            object.__setattr__(self, "source", MemorySource(value.reshape(-1).view(np.uint8).data))


@dataclass
class Progress:
    """Where a run is (``phase``: allocate, write, submit, execute, read, done) and how long each part took
    (``timings``: allocate_s, transfer_in_s, execute_s, transfer_out_s); ``on_phase`` hears ``"submit"`` just
    before the submission and ``"executed"`` once the event is terminal."""

    phase: str = "allocate"
    timings: dict[str, float] = field(default_factory=dict)
    on_phase: Callable[[str], None] | None = None
    raw_submit_errors: bool = False
    """Let ``SubmitRejected`` through as it is (the CLI maps it); otherwise it is raised as its BackendError.
    ``SubmitIndeterminate`` (acceptance unknown) always comes through as it is."""


_WRITING = frozenset(mode for mode in AccessMode if mode & AccessMode.WRITE)
_SPECS_KEPT = 256
_BINDINGS_PER_SLOT = 2
"""Bindings a kernel keeps per slot for reuse (see ``Kernel._bindings``)."""
_ROUTES_KEPT = 16
"""Keyword-name tuples a kernel keeps the routing of (see ``Kernel._routes``)."""
_STAGED_READ_BYTES = 256 << 10
"""Arrays up to this size are read back together with their guard tail (one transfer, then a host copy);
larger ones are read straight into the caller's array and their guard alone."""


class Run:
    """One submitted call: ``done()``, ``wait(timeout=None)`` (returns the written arrays), ``cancel()``.

    The one implementation of "run a kernel on arrays": the Python layer and ``accel run`` both use it.
    """

    # Defaults at class level: a run on device arrays only sets what it uses (see :meth:`_bind`).
    _temporary: list[tuple[int, PoolKey]] | tuple[()] = ()
    """(buffer, pool key) of each temporary buffer (see :class:`TemporaryPool`)."""
    _guards: list[tuple[str, int, int, int, bool]] | tuple[()] = ()
    """(argument name, buffer, array bytes, guard bytes, read back) of each temporary buffer the kernel may
    write that has a guard tail: checked after a Complete run."""
    _broken: set[int] | frozenset[int] = frozenset()
    """Temporary buffers whose guard a kernel overwrote: freed, never given back to the pool."""
    _readback: list[tuple[int, npt.NDArray[Any]]] | tuple[()] = ()
    _short_allowed = False
    """A device array shorter than the dispatch was bound because ``allow_short_device_arrays`` said so."""
    _overrun: BackendError | None = None
    _state: EventState | None = None
    _started = 0.0

    def __init__(
        self,
        device: Device,
        program: int,
        plan: Sequence[Binding],
        timeout: float | Timeout | None,
        *,
        label: str = "kernel",
        progress: Progress | None = None,
        prepared: tuple[tuple[Any, ...], tuple[Any, ...], dict[str, Any]] | None = None,
        package: KernelPackage | None = None,
        allow_short_device_arrays: bool = False,
    ) -> None:
        """``package``: the loaded program's package, so each buffer of unknown coverage is measured against
        the dispatch (:mod:`accelcore.dispatch_extent`): a host array's temporary buffer is sized to what
        the dispatch may reach, the bytes past the array holding the guard pattern; a device array
        shorter than the work-items the call asks for is refused (INVALID_ARGUMENT naming it) unless
        ``allow_short_device_arrays``. Without it (None) buffers are not measured: only the guard tail
        stands (docs/python.md, "Short arrays")."""
        self.device = device
        self.label = label
        engine = device.engine
        self._engine = engine
        self.progress = progress
        """Phases and timings (see :class:`Progress`), kept only when one is given (``accel run`` does)."""
        self.prepared = prepared
        """(engine binding specs, written arrays, outputs) of a run that bound device arrays only: what a
        later run with the very same arguments passes as ``prepared`` to skip the binding work."""
        self._results: list[npt.NDArray[Any] | DeviceArray] | tuple[Any, ...]
        self.outputs: dict[str, npt.NDArray[Any] | DeviceArray]
        """What the kernel writes, by parameter name (read back by :meth:`wait`)."""
        try:
            if prepared is None:
                bindings: Sequence[Any] = self._bind(plan, progress, package, allow_short_device_arrays)
                if not self._temporary and not self._short_allowed:
                    # (A run that needed the opt-out is not repeated without the check.)
                    self.prepared = (tuple(bindings), tuple(self._results), dict(self.outputs))
            else:  # the outputs dict is copied: nothing a caller does to one run's outputs reaches the next
                bindings, self._results, outputs = prepared
                self.outputs = dict(outputs)
            if timeout is None:
                deadline = Timeout.INFINITE
            elif isinstance(timeout, Timeout):
                deadline = timeout
            else:
                deadline = Timeout.after_ns(max(1, int(timeout_seconds(timeout) * 1e9)))  # else INVALID_ARGUMENT
            if progress is not None:
                progress.phase = "submit"
                if progress.on_phase is not None:
                    progress.on_phase("submit")
                self._started = time.perf_counter()
            try:
                self.event = engine.submit(device.queue, program, bindings, deadline)
            except SubmitIndeterminate as exc:
                # Acceptance unknown: the event exists and may pin the buffers; the device's reset settles
                # them. Nothing is released here (a free of a pinned buffer would hide the real outcome).
                self.event = exc.event
                self._temporary = []
                raise
            except SubmitRejected as exc:
                if progress is None or not progress.raw_submit_errors:
                    raise exc.error from exc  # the contract's refusal, as a BackendError
                raise
            if progress is not None:
                progress.phase = "execute"
        except BaseException:
            self._release()
            raise

    def _bind(
        self,
        plan: Sequence[Binding],
        progress: Progress | None,
        package: KernelPackage | None = None,
        allow_short_device_arrays: bool = False,
    ) -> list[Any]:
        """Allocate (temporaries for host arrays, each as long as the dispatch may reach where ``package``
        tells), upload the host arrays and build the engine's binding specs of ``plan``; what it allocated
        is in ``_temporary`` (released by the caller on failure). A device array shorter than the dispatch
        (coverage unknown) is refused here unless ``allow_short_device_arrays``."""
        device, engine = self.device, self._engine
        extents = (
            unknown_extents(package, lambda slot: next((b.value.nbytes for b in plan if b.slot == slot), None))
            if package is not None
            else None
        )
        temporary: list[tuple[int, PoolKey]] = []
        guards: list[tuple[str, int, int, int, bool]] = []
        readback: list[tuple[int, npt.NDArray[Any]]] = []
        results: list[npt.NDArray[Any] | DeviceArray] = []
        outputs: dict[str, npt.NDArray[Any] | DeviceArray] = {}
        self._temporary, self._guards, self._readback, self._results, self.outputs = (
            temporary,
            guards,
            readback,
            results,
            outputs,
        )
        bindings: list[Any] = []
        if progress is not None:
            progress.phase = "allocate"
            started = time.perf_counter()
        buffers: list[int] = []
        ranges: list[BufferRange | None] = []
        for bound in plan:
            extent = extents.get(bound.slot) if extents else None
            if isinstance(bound.value, DeviceArray):
                if bound.value.device is not device:
                    raise _invalid(f"argument {bound.name} lives on {bound.value.device.id}, not {device.id}")
                if extent is not None and extent.requested_bytes > bound.value.nbytes:
                    if not allow_short_device_arrays:
                        raise _short_device_array(bound.name, bound.value, extent)
                    self._short_allowed = True
                buffers.append(bound.value.buffer)
                ranges.append(None)  # the user's own allocation: bound whole, no guard
            else:
                nbytes = bound.value.nbytes
                # Only the array's bytes are bound (at offset 0): the guard pattern follows them in the
                # same allocation, up to what the dispatch may reach and a guard tail beyond, where a
                # kernel reading or writing past the end of the argument lands.
                reach = extent.launched_bytes if extent is not None else 0
                try:
                    buffer, key, guard, rng = device._take_temporary(nbytes, bound.access, reach)
                except BackendError as exc:
                    if extent is None or reach <= nbytes or exc.kind is not ErrorKind.RESOURCE_LIMIT:
                        raise
                    raise BackendError(
                        ErrorKind.RESOURCE_LIMIT,
                        f"argument {bound.name} ({nbytes} bytes given) is shorter than the dispatch may reach "
                        f"({reach} bytes: {reach // extent.element_size} work-items of {extent.element_size}-byte "
                        f"elements, coverage unknown), and a buffer that long cannot be allocated ({exc.message}); "
                        "nothing ran (give an array as long as the dispatch, or a smaller dispatch)",
                    ) from exc
                temporary.append((buffer, key))
                buffers.append(buffer)
                ranges.append(rng)
                if guard and bound.access in _WRITING:
                    guards.append((bound.name, buffer, nbytes, guard, bound.readback))
        if progress is not None:
            now = time.perf_counter()
            progress.timings["allocate_s"] = now - started
            progress.phase = "write"
            started = now
        specs = device._specs
        for bound, buffer, rng in zip(plan, buffers, ranges, strict=True):
            writes = bound.access in _WRITING
            if isinstance(bound.value, np.ndarray):
                # Write-only buffers are uploaded too: elements the kernel leaves alone come back as
                # they were, never as whatever the device memory held.
                source = bound.source
                if source is None or source.len() != bound.value.nbytes:
                    # (A resize(refcheck=False) moves the data and changes the size: a fresh view.)
                    source = MemorySource(bound.value.reshape(-1).view(np.uint8).data)
                engine.write_buffer(buffer, 0, source)
                if writes and bound.readback:
                    readback.append((buffer, bound.value))
            if writes:
                results.append(bound.value)
                outputs[bound.name] = bound.value
            spec_key = (bound.slot, buffer, bound.access)
            spec = specs.get(spec_key)
            if spec is None:
                if len(specs) >= _SPECS_KEPT:
                    specs.clear()
                spec = specs[spec_key] = (bound.slot, buffer, rng, bound.access)
            bindings.append(spec)
        if progress is not None:
            progress.timings["transfer_in_s"] = time.perf_counter() - started
        return bindings

    def _release(self, reuse: bool = False) -> None:
        """Free the temporary buffers, or (``reuse``: the event ended Complete and was destroyed) give
        them back to the device's pool."""
        temporary, self._temporary = self._temporary, []
        for position, (buffer, key) in enumerate(temporary):
            try:
                if reuse and buffer not in self._broken:
                    self.device._give_temporary(key, buffer)
                else:
                    self.device._free_temporary(buffer)
            except BaseException:
                # What is left (a refused free keeps its buffer) stays for a later release or the reset.
                self._temporary = list(temporary[position + 1 if reuse else position :])
                raise

    def _check_guards(self, staged: dict[int, npt.NDArray[np.uint8]]) -> BackendError | None:
        """Read back the guard tail of every temporary buffer the kernel may write and compare it with
        :func:`guard_pattern`; the error naming each argument whose guard changed, or None.

        A buffer to be read back of at most ``_STAGED_READ_BYTES`` is read whole with its guard, in one
        transfer, into a scratch array left in ``staged`` (by buffer) for the caller's copy; any other
        buffer's guard is read alone (one small read)."""
        problems = []
        broken = self._broken = set(self._broken)
        for name, buffer, nbytes, guard, readback in self._guards:
            broken.add(buffer)  # until its guard is read back unchanged
            if readback and nbytes <= _STAGED_READ_BYTES:
                whole, sink = self.device._staging(buffer, nbytes + guard)
                self._engine.read_buffer_into(buffer, 0, sink)
                staged[buffer] = whole
                seen = whole[nbytes:]
            else:
                seen = np.empty(guard, dtype=np.uint8)
                self._engine.read_buffer_into(buffer, nbytes, seen.data)
            if _holds_pattern(seen):
                broken.discard(buffer)
            else:
                changed = seen != guard_pattern(guard)
                last = int(np.flatnonzero(changed)[-1]) + 1
                problems.append(
                    f"argument {name} ({nbytes} bytes given; {int(changed.sum())} bytes beyond it changed, "
                    f"up to {last} bytes past its end)"
                )
        if not problems:
            return None
        who = self.label if self.label.startswith("the ") else f"kernel {self.label}"
        return BackendError(
            ErrorKind.OUT_OF_BOUNDS,
            f"{who} wrote past the end of " + "; ".join(problems) + "; the results are not returned "
            "(give arrays as long as the kernel writes, or guard its index)",
        )

    @_serialized
    def done(self) -> bool:
        """Whether the run has ended (Complete, Failed or Cancelled)."""
        if self._state is not None:
            return True
        return self._engine.poll(self.event).status in (EventStatus.COMPLETE, EventStatus.FAILED, EventStatus.CANCELLED)

    @_serialized
    def cancel(self) -> None:
        """Cancel a run that has not started (UNSUPPORTED where the device cannot prove cancellation)."""
        if not self.device.can_cancel:
            raise BackendError(ErrorKind.UNSUPPORTED, f"{self.device.id} does not advertise EVENT_CANCELLATION")
        self._engine.cancel(self.event)

    @_serialized
    def state(self, timeout: float | None = None) -> EventState:
        """Wait for the end (``timeout`` bounds the host's wait: DEADLINE_EXPIRED if it is still pending);
        after a Complete run, check every temporary buffer's guard tail and read back what the kernel wrote
        into the caller's arrays. Returns the state.

        A kernel that wrote past the end of a host array (into its guard tail: up to :meth:`Device.guard_bytes`
        beyond it) raises ``BackendError(OUT_OF_BOUNDS)`` naming the argument, here and on every later call;
        nothing is read back into any of the caller's arrays, and the overwritten buffers are freed. A read-back
        that fails (or is interrupted) raises here and, as a BackendError, on every later call: the caller's
        arrays may then be partly written, never returned as results."""
        if self._overrun is not None:
            raise self._overrun
        if self._state is None:
            state = self._engine.wait(self.event, timeout)
            self._state = state
            progress = self.progress
            if progress is not None:
                progress.timings["execute_s"] = time.perf_counter() - self._started
                if progress.on_phase is not None:
                    progress.on_phase("executed")
            try:
                if state.status is EventStatus.COMPLETE:
                    if progress is not None:
                        progress.phase = "read"
                        started = time.perf_counter()
                    staged: dict[int, npt.NDArray[np.uint8]] = {}
                    if self._guards:
                        self._overrun = self._check_guards(staged)
                        if self._overrun is not None:
                            raise self._overrun
                    for buffer, array in self._readback:
                        whole = staged.get(buffer)
                        if whole is None:
                            self._engine.read_buffer_into(buffer, 0, _bytes_view(array))
                        else:
                            _bytes_view(array)[:] = whole.data[: array.nbytes]
                    if progress is not None:
                        progress.timings["transfer_out_s"] = time.perf_counter() - started
                if progress is not None:
                    progress.phase = "done"
            except BaseException as exc:
                # The state is recorded, so a later call would return it as if the caller's arrays held
                # the results: every later call raises this instead (arrays may be partly written).
                if self._overrun is None:
                    self._overrun = (
                        exc
                        if isinstance(exc, BackendError)
                        else BackendError(
                            ErrorKind.INVALID_ARGUMENT,
                            f"the read-back of {self.label} was interrupted ({type(exc).__name__}); its results "
                            "were not returned (run it again)",
                        )
                    )
                raise
            finally:
                try:
                    self._engine.destroy_event(self.event)
                    if self._temporary:
                        self._release(reuse=state.status is EventStatus.COMPLETE)
                except BackendError:
                    # A discarded engine (a kernel that overran its deadline, DEVICE_LOST) refuses every
                    # call; its reset at close releases the event and buffers. Anything else is real.
                    if self._engine.state is not EngineState.NEEDS_DISCARD:
                        raise
        return self._state

    def wait(self, timeout: float | None = None) -> Any:
        """:meth:`state`, then the written arrays (one, or a tuple in parameter order); a Failed run raises
        its BackendError, a Cancelled one :class:`RunCancelled`."""
        state = self.state(timeout)
        if state.status is EventStatus.FAILED:
            assert state.error is not None
            raise state.error
        if state.status is EventStatus.CANCELLED:
            raise RunCancelled(f"{self.label} was cancelled before it ran")
        if not self._results:
            return None
        return self._results[0] if len(self._results) == 1 else tuple(self._results)
