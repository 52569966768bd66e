"""One submitted call (:class:`Run`): allocate and upload, submit, wait, read back, release; the one
implementation of "run a kernel on arrays" that the Python layer and ``accel run`` both use.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..contract.buffers import BufferRange
from ..contract.errors import BackendError, ErrorKind, SubmitIndeterminate, SubmitRejected
from ..contract.flags import AccessMode
from ..contract.ports import MemorySource
from ..contract.submission import EventState, EventStatus, Timeout, timeout_seconds
from ..engine import EngineState
from ..kernels.dispatch_extent import unknown_extents
from ..kernels.package import KernelPackage
from .keywords import _invalid
from .memory import DeviceArray, PoolKey, _bytes_view, _holds_pattern, guard_pattern
from .parameters import _short_device_array
from .serial import serialized

if TYPE_CHECKING:
    from .device import Device

__all__ = ["Binding", "Progress", "Run", "RunCancelled"]


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
        the dispatch (:mod:`accelcore.kernels.dispatch_extent`): a host array's temporary buffer is sized to what
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

    @serialized
    def done(self) -> bool:
        """Whether the run has ended (Complete, Failed or Cancelled)."""
        if self._state is not None:
            return True
        return self._engine.poll(self.event).status in (EventStatus.COMPLETE, EventStatus.FAILED, EventStatus.CANCELLED)

    @serialized
    def cancel(self) -> None:
        """Cancel a run that has not started (UNSUPPORTED where the device cannot prove cancellation)."""
        if not self.device.can_cancel:
            raise BackendError(ErrorKind.UNSUPPORTED, f"{self.device.id} does not advertise EVENT_CANCELLATION")
        self._engine.cancel(self.event)

    @serialized
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
