"""``OpenCLAccelerator``: the accelcore ``Accelerator`` contract over pyopencl.

One instance drives one device. Device-independent checks are accelcore's
validators; device facts come from discovery; the release policy of
submission gates lives in :mod:`.gating`, program loading in
:mod:`.programs`, memory decisions and transfers in :mod:`.memory`, and the
one CL-status table in :mod:`.errors`. Handles of another instance, or of
another context, are refused before any native call. The instance is not
thread-safe for concurrent contract calls (the contract does not ask for
it); gate callbacks from driver threads are synchronised internally.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from operator import is_
from typing import TYPE_CHECKING, Any

from accelcore import (
    AcceleratorClass,
    AllocatedBuffer,
    ArtifactFormat,
    ArtifactRef,
    BackendError,
    BindingRef,
    BufferDesc,
    BufferInfo,
    BufferProperties,
    ByteSink,
    ByteSource,
    Capabilities,
    ContextDesc,
    DeviceIdentity,
    DeviceInfo,
    DeviceLimits,
    ErrorKind,
    EventState,
    EventStatus,
    QueueDesc,
    ReleaseIndeterminate,
    ReleaseRejected,
    SubmitRejected,
    Timeout,
    validate_binding_ranges,
    validate_program_bindings,
    validate_transfer,
)
from accelcore.contract.refusals import (
    context_not_empty,
    event_still_pending,
    foreign_handle,
    limit_reached,
    other_context,
    released_handle,
    still_referenced,
    wrong_handle,
)
from accelcore.kernels.package import (
    ANY_LOCAL_SIZE,
    NO_COUNT_ARGUMENT,
    DispatchKind,
    KernelPackage,
    ModuleKind,
    format_for,
)

from .accounting import LiveObjects
from .cancellation import CancellationProof, gate_cancellation_proof
from .discovery import NativeDevice, entry_tag, load_pyopencl
from .errors import cl_call, cl_error, native_errors
from .gating import WINDOW, HoldSwitch, OpenCLEvent, OpenCLQueue, Phase, QueueGates, Submission
from .handles import OpenCLBuffer, OpenCLContext, OpenCLProgram
from .kernel_arguments import check_global_fits
from .memory import MemoryPlan, check_alignment, plan_memory, read_segments, write_segments
from .programs import ProgramLoader

if TYPE_CHECKING:
    from accelcore.conformance.target import CopyPathLog

__all__ = ["POLICY_LIMITS", "OpenCLAccelerator"]

U32_MAX = 0xFFFFFFFF

POLICY_LIMITS: Mapping[str, int] = {
    "max_contexts": 16,
    "max_buffers_per_context": 65536,
    "max_programs_per_context": 1024,
    "max_queues_per_context": 64,
    "max_events_per_context": 4096,
    "max_bindings_per_submission": 64,
    "max_artifact_bytes": 16 << 20,
}
"""Provider bookkeeping limits (OpenCL reports no such numbers); device answers cap them where it has any."""

_owner_ids = itertools.count(1)


_ENDED = Phase.ENDED
_PENDING_STATUS = EventStatus.PENDING
_PLANS_KEPT = 4
"""Launch plans remembered per program (see ``OpenCLAccelerator._check_submission``)."""
_NO_SUB_BUFFERS: tuple[Any, ...] = ()
"""The sub-buffers of a submission that binds whole buffers only (shared, never changed)."""


def _invalid(message: str) -> BackendError:
    return BackendError(ErrorKind.INVALID_ARGUMENT, message)


class _Argument:
    """One buffer argument of a launch plan: its kernel argument index and the bound range."""

    __slots__ = ("buffer", "bytes", "index", "offset", "slot", "whole")

    def __init__(self, index: int, buffer: OpenCLBuffer, slot: int, offset: int, size: int, whole: bool) -> None:
        self.index = index
        self.buffer = buffer
        self.slot = slot
        self.offset = offset
        self.bytes = size
        self.whole = whole
        """The range is the whole buffer: bound as it is, no sub-buffer."""


class _LaunchPlan:
    """What a checked binding list launches (immutable; cached on the program, see ``_check_submission``)."""

    __slots__ = (
        "arguments",
        "buffers",
        "count_argument",
        "global_size",
        "key",
        "local_size",
        "natives",
        "ranged",
        "viewed",
    )

    def __init__(
        self,
        key: tuple[BindingRef[OpenCLBuffer], ...],
        arguments: tuple[_Argument, ...],
        buffers: tuple[OpenCLBuffer, ...],
        count_argument: tuple[int, int] | None,
        global_size: tuple[int, int, int],
        local_size: tuple[int, int, int] | None,
    ) -> None:
        self.key = key
        self.arguments = arguments
        self.buffers = buffers
        self.count_argument = count_argument
        self.global_size = global_size
        self.local_size = local_size
        self.natives = tuple((a.index, a.buffer.native) for a in arguments if a.whole)
        """(argument index, native buffer) of the whole-buffer bindings: the same on every use (a
        buffer's native object is fixed while it is live, and a plan is used only for live buffers)."""
        self.ranged = tuple(a for a in arguments if not a.whole)
        """The partial-range bindings: bound through their buffer's kept sub-buffers (``OpenCLBuffer.views``)
        or sub-buffers of their own."""
        self.viewed: tuple[tuple[int, Any], ...] | None = None if self.ranged else self.natives
        """The whole argument list once every ranged binding has a kept sub-buffer (set by the first such
        submission; a kept view lives as long as its buffer, and a plan is used only for live buffers):
        then a submission binds as the whole-buffer case does, with no per-call sub-buffer work."""


class OpenCLAccelerator:
    """An ``Accelerator`` for one OpenCL device (see the module docstring)."""

    _VIEWS_KEPT = 4
    """Sub-buffers a buffer keeps (its first distinct bound ranges, see ``OpenCLBuffer.views``); a
    submission binding any other range makes its own, released with its event."""

    interruptible_wait = True
    """:meth:`wait_event` lets Ctrl-C reach the main thread at once: its ``clWaitForEvents`` runs on a helper
    thread there (:func:`.gating.wait_for_event`), so the engine calls it directly."""

    def __init__(self, native: NativeDevice) -> None:
        self._cl = load_pyopencl()
        self._native = native
        self._device = native.device
        self._owner = next(_owner_ids)
        self.live = LiveObjects()
        self._live_lock, self._live_counts = self.live.lock, self.live.counts
        self.hold = HoldSwitch()
        self.memory: MemoryPlan = plan_memory(self._cl, self._device)
        self.cancellation: CancellationProof = gate_cancellation_proof(native.key, self._device)
        self._info = self._describe()
        self._loader = ProgramLoader(
            self._cl,
            self._device,
            native.index,
            native.uuid,
            native.fingerprint.platform_name,
            native.fingerprint.target(),
            self._info.limits.max_bindings_per_submission,
            self._info.limits.max_artifact_bytes,
        )
        self._contexts = 0
        self._queues: list[OpenCLQueue] = []
        self.window = WINDOW
        """Driver window of queues created from now on (see :mod:`.gating`)."""
        self._status_blocks = entry_tag(native) == "rusticl"
        """rusticl holds a running kernel's event lock: status reads would wait for the kernel."""
        self.transferred = 0
        """Bytes moved by successful write_buffer/read_buffer calls (the copy-path diagnostics count them)."""
        self.copy_log: CopyPathLog | None = None
        """Copy-path records, once :meth:`copy_paths` turned them on (None: the submit path records nothing)."""

    def __repr__(self) -> str:
        return f"<OpenCLAccelerator #{self._owner} {self._native.name!r} live={self.live.total()}>"

    # -- metadata -------------------------------------------------------------

    def _describe(self) -> DeviceInfo:
        cl = self._cl
        device = self._device
        device_type = int(device.type)
        klass = AcceleratorClass.GPU if device_type & int(cl.device_type.GPU) else AcceleratorClass.OTHER
        identity = DeviceIdentity(
            uuid=self._native.uuid,
            class_=klass,
            vendor_id=int(device.vendor_id) & U32_MAX,
            device_id=0,
        )
        capabilities = self.memory.capabilities
        if self.cancellation.holds:
            capabilities |= Capabilities.EVENT_CANCELLATION
        pointer_bytes = max(4, int(device.address_bits) // 8)
        argument_slots = max(1, int(device.max_parameter_size) // pointer_bytes - 1)
        max_alloc = int(device.max_mem_alloc_size)
        limits = DeviceLimits(
            max_contexts=POLICY_LIMITS["max_contexts"],
            max_buffers_per_context=POLICY_LIMITS["max_buffers_per_context"],
            max_programs_per_context=POLICY_LIMITS["max_programs_per_context"],
            max_queues_per_context=POLICY_LIMITS["max_queues_per_context"],
            max_events_per_context=POLICY_LIMITS["max_events_per_context"],
            max_bindings_per_submission=min(POLICY_LIMITS["max_bindings_per_submission"], argument_slots),
            max_buffer_bytes=max_alloc,
            max_artifact_bytes=min(POLICY_LIMITS["max_artifact_bytes"], max_alloc),
            total_memory_bytes=int(device.global_mem_size) or None,
        )
        info = DeviceInfo(identity, capabilities, limits)
        info.validate()
        return info

    def device_info(self) -> DeviceInfo:
        """The DeviceInfo computed once at construction (stable for the instance)."""
        return self._info

    # -- handle checks ----------------------------------------------------------

    def _mine(self, handle: Any, kind: type, what: str) -> Any:
        if not isinstance(handle, kind):
            raise wrong_handle(what, kind.__name__, handle)
        if not getattr(handle, "live", False):
            raise released_handle(what)
        if getattr(handle, "owner", None) != self._owner:
            raise foreign_handle(what)
        return handle

    # -- contexts ---------------------------------------------------------------

    def create_context(self, desc: ContextDesc) -> OpenCLContext:
        self._info.validate_context_desc(desc)
        if self._contexts >= self._info.limits.max_contexts:
            raise limit_reached("max_contexts", self._info.limits.max_contexts)
        cl = self._cl
        with cl_call("clCreateContext", "creating a context"):
            native = cl.Context([self._device])
        with cl_call("clCreateCommandQueue", "creating the context's transfer queue"):
            transfer = cl.CommandQueue(native, self._device)
        self._contexts += 1
        self.live.add("contexts")
        self.live.add("command_queues")
        return OpenCLContext(self._owner, native, transfer)

    def destroy_context(self, context: OpenCLContext) -> None:
        try:
            self._mine(context, OpenCLContext, "context")
        except BackendError as error:
            raise ReleaseRejected(error, context) from None
        if context.children():
            raise ReleaseRejected(
                context_not_empty(context.buffers, context.programs, context.queues, context.events), context
            )
        context.live = False
        context.transfer_queue = None
        self._loader.forget_context(context.native)
        context.native = None
        self._contexts -= 1
        self.live.remove("command_queues")
        self.live.remove("contexts")

    # -- buffers ----------------------------------------------------------------

    def allocate_buffer(self, context: OpenCLContext, desc: BufferDesc) -> AllocatedBuffer[OpenCLBuffer]:
        self._mine(context, OpenCLContext, "context")
        self._info.validate_buffer_desc(desc)
        check_alignment(self.memory, desc)
        if context.buffers >= self._info.limits.max_buffers_per_context:
            raise limit_reached("max_buffers_per_context", self._info.limits.max_buffers_per_context)
        cl = self._cl
        with cl_call("clCreateBuffer", f"allocating {desc.bytes} bytes ({desc.domain.name})"):
            native = cl.Buffer(context.native, self.memory.flags[desc.domain], desc.bytes)
        try:
            with cl_call("clGetMemObjectInfo", "reading CL_MEM_SIZE"):
                size = int(native.get_info(cl.mem_info.SIZE))
            info = BufferInfo(desc, size, self.memory.base_alignment, self.memory.properties[desc.domain])
            self._info.validate_buffer_info(desc, info)
        except BackendError:
            native.release()
            raise
        context.buffers += 1
        self.live.add("buffers")
        return AllocatedBuffer(OpenCLBuffer(self._owner, context, native, info), info)

    def write_buffer(self, buffer: OpenCLBuffer, offset: int, data: ByteSource) -> None:
        if buffer.__class__ is not OpenCLBuffer or not buffer.live or buffer.owner != self._owner:
            self._mine(buffer, OpenCLBuffer, "buffer")
        size = data.len()
        validate_transfer(buffer.info.desc, offset, size, write=True)
        write_segments(self._cl, buffer.context.transfer_queue, buffer.native, offset, data)
        self.transferred += size

    def read_buffer(self, buffer: OpenCLBuffer, offset: int, data: ByteSink) -> None:
        if buffer.__class__ is not OpenCLBuffer or not buffer.live or buffer.owner != self._owner:
            self._mine(buffer, OpenCLBuffer, "buffer")
        size = data.len()
        validate_transfer(buffer.info.desc, offset, size, write=False)
        read_segments(self._cl, buffer.context.transfer_queue, buffer.native, offset, data)
        self.transferred += size

    def free_buffer(self, buffer: OpenCLBuffer) -> None:
        try:
            self._mine(buffer, OpenCLBuffer, "buffer")
        except BackendError as error:
            raise ReleaseRejected(error, buffer) from None
        if buffer.in_flight:
            raise ReleaseRejected(still_referenced("buffer", buffer.in_flight), buffer)
        failure: BackendError | None = None
        views = buffer.views
        if views:  # child before parent: the kept sub-buffers first
            for sub in views.values():
                try:
                    with cl_call("clReleaseMemObject", "releasing a sub-buffer of a freed buffer"):
                        sub.release()
                except BackendError as error:
                    failure = failure or error
                    self.live.add("indeterminate")  # one per object whose release failed
            self.live.remove("sub_buffers", len(views))
            views.clear()
        try:
            with cl_call("clReleaseMemObject", "releasing a buffer"):
                buffer.native.release()
        except BackendError as error:
            failure = failure or error
            self.live.add("indeterminate")
        self._forget_buffer(buffer)
        if failure is not None:
            # A native release was attempted: whether the object is gone is unknown, so the
            # handle cannot come back for a retry (as on every provider: indeterminate).
            raise ReleaseIndeterminate(failure) from None

    def _forget_buffer(self, buffer: OpenCLBuffer) -> None:
        buffer.live = False
        buffer.native = None
        buffer.context.buffers -= 1
        self.live.remove("buffers")

    # -- programs ---------------------------------------------------------------

    def load_program(self, context: OpenCLContext, artifact: ArtifactRef) -> OpenCLProgram:
        self._mine(context, OpenCLContext, "context")
        package = self._loader.parse(artifact)
        return self.load_package(context, package, artifact.resident_bytes)

    def load_package(self, context: OpenCLContext, package: KernelPackage, resident_bytes: int) -> OpenCLProgram:
        """Provider extra: load an already decoded package (``load_program`` minus the codec)."""
        self._mine(context, OpenCLContext, "context")
        if context.programs >= self._info.limits.max_programs_per_context:
            raise limit_reached("max_programs_per_context", self._info.limits.max_programs_per_context)
        built = self._loader.build(context.native, package, resident_bytes)
        assert built.launch is not None  # build() sets it after the kernel checks
        context.programs += 1
        self.live.add("programs")
        self.live.add("kernels")
        return OpenCLProgram(
            self._owner,
            context,
            built.native,
            built.kernel,
            package,
            built.resident_bytes,
            built.binary,
            built.from_cache,
            built.launch,
        )

    def program_binary(self, program: OpenCLProgram) -> bytes:
        """Provider extra: the device binary of a loaded program (for OPENCL_BINARY packages)."""
        self._mine(program, OpenCLProgram, "program")
        return program.binary

    @property
    def artifact_formats(self) -> tuple[ArtifactFormat, ...]:
        """Formats ``load_program`` accepts: OpenCL C and device-binary packages, plus OpenCL
        SPIR-V packages where the device reports an IL version or ``cl_khr_il_program``."""
        kinds = [ModuleKind.OPENCL_SOURCE, ModuleKind.OPENCL_BINARY]
        if self._loader.il_version or self._loader.il_khr:
            kinds.append(ModuleKind.SPIRV_OPENCL)
        return tuple(format_for(kind) for kind in kinds)

    @property
    def binary_target(self) -> Any:
        """Provider extra: the TargetIdentity this device's binaries carry."""
        return self._loader.target

    def unload_program(self, program: OpenCLProgram) -> None:
        try:
            self._mine(program, OpenCLProgram, "program")
        except BackendError as error:
            raise ReleaseRejected(error, program) from None
        if program.in_flight:
            raise ReleaseRejected(still_referenced("program", program.in_flight), program)
        program.live = False
        program.kernel = None
        program.native = None
        program.checked = []
        program.bound = {}
        program.context.programs -= 1
        self.live.remove("kernels")
        self.live.remove("programs")

    # -- queues -----------------------------------------------------------------

    def create_queue(self, context: OpenCLContext, desc: QueueDesc) -> OpenCLQueue:
        self._mine(context, OpenCLContext, "context")
        self._info.validate_queue_desc(desc)
        if context.queues >= self._info.limits.max_queues_per_context:
            raise limit_reached("max_queues_per_context", self._info.limits.max_queues_per_context)
        with cl_call("clCreateCommandQueue", "creating an execution queue"):
            native = self._cl.CommandQueue(context.native, self._device)
        context.queues += 1
        self.live.add("command_queues")
        gates = QueueGates(
            self._cl, context.native, native, self.hold, self.live, window=self.window, markers=self._status_blocks
        )
        return OpenCLQueue(self._owner, context, native, gates)

    def destroy_queue(self, queue: OpenCLQueue) -> None:
        try:
            self._mine(queue, OpenCLQueue, "queue")
        except BackendError as error:
            raise ReleaseRejected(error, queue) from None
        if queue.in_flight:
            raise ReleaseRejected(still_referenced("queue", queue.in_flight), queue)
        try:
            with cl_call("clFlush", "flushing a queue before release"):
                queue.native.flush()
        except BackendError as error:
            raise ReleaseRejected(error, queue) from None
        queue.live = False
        queue.native = None
        queue.context.queues -= 1
        self.live.remove("command_queues")

    # -- submission ---------------------------------------------------------------

    def submit(
        self,
        queue: OpenCLQueue,
        program: OpenCLProgram,
        bindings: Sequence[BindingRef[OpenCLBuffer]],
        timeout: Timeout,
    ) -> OpenCLEvent:
        ns = timeout.ns
        deadline = None if ns is None else time.monotonic_ns() + int(ns)
        try:
            plan = self._check_submission(queue, program, bindings)
        except BackendError as error:
            raise SubmitRejected(error) from None
        arguments = plan.viewed
        if arguments is None:
            return self._enqueue(queue, program, plan, deadline)
        # Whole-buffer bindings or kept views only (the common case): no sub-buffers of its own, the
        # plan's argument list as is.
        submission = Submission(
            queue,
            program,
            plan.buffers,
            _NO_SUB_BUFFERS,
            arguments,
            plan.count_argument,
            plan.global_size,
            plan.local_size,
            deadline,
        )
        try:
            queue.gates.admit(submission)
        except BackendError as error:
            raise SubmitRejected(error) from None
        if self.copy_log is not None:
            self._note_copy_path(plan, submission)
        queue.in_flight += 1
        queue.context.events += 1
        program.in_flight += 1
        for buffer in plan.buffers:
            buffer.in_flight += 1
        return OpenCLEvent(self._owner, submission)

    def _check_submission(
        self, queue: OpenCLQueue, program: OpenCLProgram, bindings: Sequence[BindingRef[OpenCLBuffer]]
    ) -> _LaunchPlan:
        """Every check before the driver; the plan of a binding list already checked for ``program``.

        Handle checks (live, this instance, this context) and the events limit run on every call.
        The value checks (accelcore's binding validators, sub-buffer alignment, the dispatch size)
        depend only on the BindingRef values, the buffers' immutable descriptions and the package,
        so their result is remembered per program for the last few (``_PLANS_KEPT``) lists of the very
        same (immutable) BindingRef objects — calls that alternate between binding lists all hit; a
        freed buffer is refused by the handle check first.
        """
        owner = self._owner
        if queue.__class__ is not OpenCLQueue or not queue.live or queue.owner != owner:
            self._mine(queue, OpenCLQueue, "queue")
        if program.__class__ is not OpenCLProgram or not program.live or program.owner != owner:
            self._mine(program, OpenCLProgram, "program")
        context = queue.context
        if program.context is not context:
            raise other_context("the program")
        for binding in bindings:
            buffer = binding.buffer
            if buffer.__class__ is not OpenCLBuffer or not buffer.live or buffer.owner != owner:
                self._mine(buffer, OpenCLBuffer, f"slot {binding.slot}: the buffer")
            if buffer.context is not context:
                raise other_context(f"slot {binding.slot}: the buffer")
        key = tuple(bindings)
        checked = program.checked
        for cached in checked:
            if len(cached.key) == len(key) and all(map(is_, cached.key, key)):
                plan: _LaunchPlan = cached
                break
        else:
            plan = self._plan_submission(program, key)
            checked.insert(0, plan)
            del checked[_PLANS_KEPT:]
        if context.events >= self._info.limits.max_events_per_context:
            raise limit_reached("max_events_per_context", self._info.limits.max_events_per_context)
        return plan

    def _plan_submission(self, program: OpenCLProgram, bindings: tuple[BindingRef[OpenCLBuffer], ...]) -> _LaunchPlan:
        """The value checks of a binding list (see ``_check_submission``) and its launch plan."""
        descs = [binding.buffer.info.desc for binding in bindings]
        BindingRef.validate_for_submit(bindings, descs, self._info.limits.max_bindings_per_submission)
        validate_binding_ranges(bindings, descs)
        package = program.package
        validate_program_bindings(bindings, program.access, package.entry_point)
        for binding in bindings:
            if binding.range.offset % self.memory.base_alignment:
                raise BackendError(
                    ErrorKind.INCOMPATIBLE,
                    f"slot {binding.slot}: range offset {binding.range.offset} cannot be bound directly; "
                    f"OpenCL sub-buffer origins must be multiples of {self.memory.base_alignment} bytes",
                )
        dispatch = package.dispatch
        range_bytes = 0
        element_size = 1
        if dispatch.kind is DispatchKind.FROM_BINDING:
            binding = next(b for b in bindings if b.slot == dispatch.slot)
            row = package.binding_for_slot(dispatch.slot)
            assert row is not None
            range_bytes, element_size = binding.range.bytes, max(1, row.element_size)
        launch = program.launch
        local = launch.local
        if local is not None and tuple(package.local_size) == ANY_LOCAL_SIZE:
            # "Driver chooses" for a kernel with reqd_work_group_size: the loader picked the required
            # size; FROM_BINDING still launches exactly the element count (GLOBAL was checked at load).
            elements, global_size = dispatch.work_items(ANY_LOCAL_SIZE, range_bytes, element_size)
            check_global_fits(package.entry_point, global_size, launch, "the element count as a global size")
        else:
            elements, global_size = dispatch.work_items(package.local_size, range_bytes, element_size)
        if elements > U32_MAX or any(size > U32_MAX for size in global_size):
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"dispatch of {elements} elements (global size {global_size}) exceeds the u32 range",
            )
        arguments = []
        for binding in bindings:
            row = package.binding_for_slot(binding.slot)
            assert row is not None
            rng = binding.range
            whole = rng.offset == 0 and rng.bytes == binding.buffer.info.desc.bytes
            arguments.append(_Argument(row.native_index, binding.buffer, binding.slot, rng.offset, rng.bytes, whole))
        count = dispatch.count_argument
        return _LaunchPlan(
            bindings,
            tuple(arguments),
            tuple(binding.buffer for binding in bindings),
            None if count == NO_COUNT_ARGUMENT else (count, elements),
            global_size,
            local,
        )

    def _enqueue(
        self, queue: OpenCLQueue, program: OpenCLProgram, plan: _LaunchPlan, deadline_ns: int | None
    ) -> OpenCLEvent:
        sub_buffers: list[Any] = []
        """Sub-buffers this submission owns (released with its event): ranges past a buffer's kept views."""
        arguments: list[tuple[int, Any]] = list(plan.natives)
        for argument in plan.ranged:
            buffer = argument.buffer
            views = buffer.views
            key = (argument.offset, argument.bytes)
            native = views.get(key)
            if native is None:
                try:
                    native = buffer.native.get_sub_region(argument.offset, argument.bytes)
                except native_errors() as exc:
                    for sub in sub_buffers:
                        sub.release()
                    error = cl_error(
                        exc,
                        "clCreateSubBuffer",
                        f"binding slot {argument.slot} range {argument.offset}+{argument.bytes}",
                    )
                    raise SubmitRejected(error) from None
                if len(views) < self._VIEWS_KEPT:
                    views[key] = native
                    self.live.add("sub_buffers")
                else:
                    sub_buffers.append(native)
            arguments.append((argument.index, native))
        if not sub_buffers:
            plan.viewed = tuple(arguments)  # every range has its kept view: later submissions take the fast path
        submission = Submission(
            queue,
            program,
            plan.buffers,
            sub_buffers,
            arguments,
            plan.count_argument,
            plan.global_size,
            plan.local_size,
            deadline_ns,
        )
        try:
            queue.gates.admit(submission)
        except BackendError as error:
            for sub in sub_buffers:
                sub.release()
            raise SubmitRejected(error) from None
        if self.copy_log is not None:
            self._note_copy_path(plan, submission)
        return self._account_admitted(submission)

    def _account_admitted(self, submission: Submission) -> OpenCLEvent:
        queue = submission.queue
        queue.in_flight += 1
        queue.context.events += 1
        submission.program.in_flight += 1
        for buffer in submission.buffers:
            buffer.in_flight += 1
        if submission.sub_buffers:
            self.live.add("sub_buffers", len(submission.sub_buffers))
        return OpenCLEvent(self._owner, submission)

    # -- events -----------------------------------------------------------------------

    def poll_event(self, event: OpenCLEvent) -> EventState:
        """Non-blocking: the recorded terminal state, or one clGetEventInfo (see gating)."""
        if event.__class__ is not OpenCLEvent or event.owner != self._owner or not event.live:
            self._mine(event, OpenCLEvent, "event")
        submission = event.submission
        if submission.phase is Phase.ENDED:
            return submission.state
        return submission.queue.gates.poll(submission)

    def wait_event(self, event: OpenCLEvent, timeout_ns: int | None) -> bool:
        """Optional blocking wait (:class:`accelcore.contract.waiting.EventWaiter`): ``clWaitForEvents`` on a
        released submission, only without a time bound (OpenCL has no timed wait): False otherwise."""
        if event.__class__ is not OpenCLEvent or event.owner != self._owner or not event.live:
            self._mine(event, OpenCLEvent, "event")
        if timeout_ns is not None:
            return False
        submission = event.submission
        return submission.queue.gates.wait(submission)

    def cancel_event(self, event: OpenCLEvent) -> None:
        self._mine(event, OpenCLEvent, "event")
        self._info.validate_event_cancellation()
        submission = event.submission
        submission.queue.gates.cancel(submission)

    def destroy_event(self, event: OpenCLEvent) -> None:
        try:
            if event.__class__ is not OpenCLEvent or event.owner != self._owner or not event.live:
                self._mine(event, OpenCLEvent, "event")
            submission = event.submission
            if submission.phase is not _ENDED:
                submission.queue.gates.poll(submission)
        except BackendError as error:
            raise ReleaseRejected(error, event) from None
        if submission.state.status is _PENDING_STATUS:
            raise ReleaseRejected(event_still_pending(), event)
        failure: BackendError | None = None
        if submission.sub_buffers:
            for sub in submission.sub_buffers:
                try:
                    with cl_call("clReleaseMemObject", "releasing a sub-buffer of a terminal event"):
                        sub.release()
                except BackendError as error:
                    failure = failure or error
                    self.live.add("indeterminate")
            self.live.remove("sub_buffers", len(submission.sub_buffers))
            submission.sub_buffers = _NO_SUB_BUFFERS
        self._forget_event(event)
        if failure is not None:
            # Native releases were attempted: what is left is unknown (discard the instance).
            raise ReleaseIndeterminate(failure)

    def _forget_event(self, event: OpenCLEvent) -> None:
        submission = event.submission
        for buffer in submission.buffers:
            buffer.in_flight -= 1
        submission.program.in_flight -= 1
        queue = submission.queue
        queue.in_flight -= 1
        queue.context.events -= 1
        event.live = False
        gate, marker = submission.gate, submission.marker
        if gate is None and marker is None:
            # The common case (released without a gate, no marker): one counter under the lock.
            if submission.kernel_event is not None:
                submission.kernel_event = None
                with self._live_lock:
                    self._live_counts["kernel_events"] -= 1
            submission.arguments = ()
            return
        if submission.kernel_event is not None:
            self.live.remove("kernel_events")
        if gate is not None:
            self.live.remove("user_events")
        if marker is not None:
            marker.users -= 1
            if marker.users == 0:
                marker.event = None
                self.live.remove("marker_events")
            submission.marker = None
        submission.gate = None
        submission.kernel_event = None
        submission.arguments = ()

    # -- test controls (the conformance hooks call these) --------------------------------

    def hold_submissions(self, hold: bool = True) -> None:
        """While held, gates of this instance open only through :meth:`release_held`.

        ``hold_submissions(False)`` returns to the release policy (gates open on the next
        provider call on each queue or on a driver callback).
        """
        self.hold.on = hold

    def release_held(self, event: OpenCLEvent) -> None:
        """Open ``event``'s gate now (hold mode); it then runs to completion."""
        self._mine(event, OpenCLEvent, "event")
        event.submission.queue.gates.release_held(event.submission)

    def live_resources(self) -> dict[str, int]:
        """Live native objects per kind (see :mod:`.accounting`)."""
        return self.live.snapshot()

    # -- copy-path diagnostics (ConformanceHooks.copy_paths) -------------------------------

    def copy_paths(self) -> list[dict[str, int]]:
        """One record per submission accepted since the first call (which turns recording on and answers ``[]``).

        Each counts how the submission's buffers reached ``clSetKernelArg`` (:meth:`_note_copy_path`)
        and the bytes write_buffer/read_buffer moved since the previous record.
        """
        if self.copy_log is None:
            from accelcore.conformance.target import CopyPathLog

            self.copy_log = CopyPathLog(self.transferred)
        return self.copy_log.report()

    def _note_copy_path(self, plan: _LaunchPlan, submission: Submission) -> None:
        """Record one accepted submission (diagnostics on): what each binding's kernel argument really is.

        In place: the argument is the binding's own ``cl_mem`` (a whole-buffer binding) or a sub-buffer
        whose ``CL_MEM_ASSOCIATED_MEMOBJECT`` is that ``cl_mem`` at the bound offset and size (a range);
        ``direct`` when the buffer is device-local (its BufferInfo, from the memory plan), ``shared``
        otherwise. Anything else handed to the kernel is a copy: ``staged``, with the bound range's bytes.
        """
        given = dict(submission.arguments)
        direct = shared = staged = staged_bytes = 0
        for argument in plan.arguments:
            if self._argument_in_place(given.get(argument.index), argument):
                if argument.buffer.info.properties & BufferProperties.DEVICE_LOCAL:
                    direct += 1
                else:
                    shared += 1
            else:
                staged += 1
                staged_bytes += argument.bytes
        assert self.copy_log is not None
        self.copy_log.records.append((direct, shared, staged, staged_bytes, self.transferred))

    def _argument_in_place(self, value: Any, argument: _Argument) -> bool:
        own = argument.buffer.native
        if value is None or own is None:
            return False
        if value is own:
            return True
        mem_info = self._cl.mem_info
        try:
            parent = value.get_info(mem_info.ASSOCIATED_MEMOBJECT)
            origin = int(value.get_info(mem_info.OFFSET))
            size = int(value.get_info(mem_info.SIZE))
        except native_errors():
            return False
        return (
            parent is not None
            and parent.int_ptr == own.int_ptr
            and origin == argument.offset
            and size == argument.bytes
        )
