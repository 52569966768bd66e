"""A loaded kernel (:class:`Kernel`): its parameters, arguments matched to them by name or position and
typed from their declarations, the packages and programs it remembers, and its call.
"""

from __future__ import annotations

import dataclasses
import operator
import struct
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..contract.errors import BackendError
from ..contract.flags import AccessMode
from ..contract.ports import MemorySource
from ..contract.program import ArtifactRef
from ..kernels.pack import binding_names, build_package, detect_module_kind, pack_module
from ..kernels.package import Dispatch, DispatchKind, KernelPackage, ModuleKind
from ..kernels.package_codec import MAGIC, parse_package, write_package
from .keywords import _invalid, python_words, work_size
from .memory import DeviceArray
from .parameters import (
    Parameter,
    _check_entry,
    _checked_array,
    _entry_points,
    _fast_dtype,
    _opencl_parameters,
    _parse_slots,
    _Slot,
    _vulkan_parameters,
    _with_slots,
    declared_elements,
)
from .run import Binding, Run
from .serial import serialized

if TYPE_CHECKING:
    from .device import Device

__all__ = ["Kernel", "LocalMemory", "local_memory"]

_BINDINGS_PER_SLOT = 2
"""Bindings a kernel keeps per slot for reuse (see ``Kernel._bindings``)."""
_ROUTES_KEPT = 16
"""Keyword-name tuples a kernel keeps the routing of (see ``Kernel._routes``)."""
_PROGRAMS_PER_KERNEL = 8
_PACKAGES_PER_KERNEL = 64


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
        # A dropped kernel hands its programs back to the device (they stayed loaded: 1,024 calls of
        # dev.kernel(source)(...) ended in RESOURCE_LIMIT max_programs_per_context, the driver's memory growing).
        weakref.finalize(self, _hand_back, device, self._programs).atexit = False
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
        build log) instead of the first call: a package made to build it (:func:`accelcore.kernels.pack.build_package`:
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
        device = self.device
        device._unload_retired()
        ref = ArtifactRef(pkg.format, pkg.target, MemorySource(data), device.resident_bytes)
        program = device.engine.load_program(device.context, ref)
        self._programs[data] = (program, pkg)
        while len(self._programs) > _PROGRAMS_PER_KERNEL:
            _, (old, _) = self._programs.popitem(last=False)
            device._unload(old)  # a submitted run may still use it
        return program

    # -- calls ----------------------------------------------------------------

    @serialized
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
        (:func:`accelcore.api.keywords.work_size`; anything else is INVALID_ARGUMENT naming the keyword).

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

    @serialized
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


def _hand_back(device: Device, programs: Mapping[bytes, tuple[int, KernelPackage]]) -> None:
    """A dropped :class:`Kernel`'s finalizer: its programs go to the device's ``_retired`` (no engine call: this
    may run at any garbage collection, in any thread, in the middle of another call)."""
    if not device._closed:
        device._retired.extend(program for program, _ in programs.values())
