"""Kernel signatures of OpenCL C source, read by Clang's own front end (libclang).

Promise: :func:`opencl_kernels` preprocesses the source with the build options that matter to
types (``-D``, ``-U``, ``-cl-std``, the ``-cl-*`` options that define macros) and reads every
``__kernel``: each parameter's name, address space (global, constant, local, private for
pointers; None by value), constness, its type as a :class:`~accelcore.kernels.values.ValueType` where it
is a scalar or vector, and the exact :class:`~accelcore.kernels.layouts.ElementLayout` of its pointee or
value as Clang lays it out for the SPIR target of the device's address width (typedefs, vector
types, ``half``, ``bool``, ``size_t``, nested structs, arrays of structs, unions,
``packed``/``aligned``). Nothing is guessed: a parameter whose declaration, or a type it
reaches, holds a compile error is reported with ``unknown`` set to Clang's message, and callers
refuse it when a value or array must be checked against it.

Clang runs in a child process (``python accelcore/kernels/_clang_reflect.py``) under a wall-clock limit
(``ACCELCORE_REFLECT_TIMEOUT_S``, default 30 s) and an address-space limit (``ACCELCORE_REFLECT_MEMORY_MIB``,
default 2048 MiB): a source that makes the front end crash, loop or grow is a contained ``BackendError``,
never a stall or a crash of this process. Kernel bodies are read too (what a ``__local`` argument is
subscripted with); a body Clang's parser cannot take (a crash of the child) is read again without bodies, so
the declarations still come from Clang and nothing about the bodies is assumed. ``#include`` is not followed
there (the paths that turn a user's file into a package inline includes first:
:mod:`accelcore.kernels.opencl_includes`). Answers are remembered per (source, options, address width) in this
process. Without libclang (PyPI ``libclang``) or the OpenCL C headers of a Clang installation (Debian
``clang-15``; ``ACCELCORE_OPENCL_C_HEADERS`` names another folder) the call raises
``BackendError(UNSUPPORTED)`` saying which is missing.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..contract.errors import BackendError, ErrorKind
from ..support.child import child_environment, interpreter_flags
from ..support.limits import env_number
from ..support.recent import keep_recent
from .layouts import ElementLayout, layout_from_json
from .values import ValueType

__all__ = [
    "HEADERS_ENV",
    "MEMORY_ENV",
    "TIMEOUT_ENV",
    "AggregateMember",
    "OpenCLKernel",
    "OpenCLParameter",
    "build_option_macros",
    "clang_arguments",
    "opencl_kernels",
]

TIMEOUT_ENV = "ACCELCORE_REFLECT_TIMEOUT_S"
MEMORY_ENV = "ACCELCORE_REFLECT_MEMORY_MIB"
HEADERS_ENV = "ACCELCORE_OPENCL_C_HEADERS"
_DEFAULT_TIMEOUT_S = 30.0
_DEFAULT_MEMORY_MIB = 2048
_REMEMBERED = 128
_MAX_ANSWER_BYTES = 64 << 20
_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_clang_reflect.py")
"""Run as a script, not with ``-m``: the child imports only the standard library and libclang (no numpy)."""


@dataclass(frozen=True, slots=True)
class AggregateMember:
    """One member of a struct/union laid out by OpenCL C rules: ``float4 bias`` at ``offset`` (``count`` for
    an array member ``int k[3]``, 1 otherwise)."""

    name: str
    value_type: ValueType
    offset: int
    count: int = 1

    @property
    def text(self) -> str:
        """``float4 bias at 16`` / ``int k[3] at 8``: how messages name the member."""
        array = f"[{self.count}]" if self.count != 1 else ""
        return f"{self.value_type.opencl_name} {self.name}{array} at offset {self.offset}"


@dataclass(frozen=True, slots=True)
class OpenCLParameter:
    """One kernel parameter as Clang reads it.

    ``address_space``: global, constant, local or private (pointers), None for by-value;
    ``value_type`` of the pointee or value (None when it is not a scalar/vector type); ``layout``
    the pointee's or value's :class:`~accelcore.kernels.layouts.ElementLayout` (None when unknown);
    ``type_text`` the type as written (typedef names kept, qualifiers dropped); ``name`` the
    parameter name ('' if absent); ``unknown`` why the type cannot be trusted ('' when it can).
    ``aggregate``: a struct or union; ``aggregate_bytes`` its size, ``aggregate_scalar`` the one
    scalar type of all its members (None when they differ), ``aggregate_members`` its members
    with their offsets where every member is a scalar, vector or array of one (empty otherwise).
    """

    index: int
    text: str
    address_space: str | None
    is_const: bool
    value_type: ValueType | None
    name: str = ""
    type_text: str = ""
    aggregate: bool = False
    aggregate_bytes: int | None = None
    aggregate_scalar: ValueType | None = None
    aggregate_members: tuple[AggregateMember, ...] = ()
    layout: ElementLayout | None = field(default=None, compare=False)
    unknown: str = ""
    opaque: str = ""
    """image2d, sampler, ...: an argument this project cannot bind ('' for data)."""
    local_id_axes: tuple[int, ...] = ()
    """The axes D of the ``get_local_id(D)`` a ``__local`` pointer is subscripted with, exactly (``s[lid]`` with
    ``int lid = get_local_id(0);``): it needs as many elements as the work-group has on each."""

    @property
    def is_buffer(self) -> bool:
        return self.address_space in ("global", "constant")

    @property
    def is_local(self) -> bool:
        return self.address_space == "local"

    @property
    def by_value(self) -> bool:
        return self.address_space is None

    @property
    def element_bytes(self) -> int | None:
        if self.value_type is not None:
            return self.value_type.size
        if self.layout is not None and self.layout.checkable:
            return self.layout.size
        return None

    @property
    def label(self) -> str:
        """``argument 3 (const int n)``: how messages name the parameter."""
        return f"argument {self.index} ({self.text})"


@dataclass(frozen=True, slots=True)
class OpenCLKernel:
    name: str
    parameters: tuple[OpenCLParameter, ...]
    required_local_size: tuple[int, int, int] | None

    def parameter(self, name: str) -> OpenCLParameter | None:
        return next((p for p in self.parameters if p.name == name), None)


def build_option_macros(build_options: str) -> dict[str, str]:
    """``-D NAME=VALUE`` / ``-DNAME=VALUE`` / ``-D NAME`` (value 1) from OpenCL build options."""
    try:
        words = shlex.split(build_options)
    except ValueError:
        words = build_options.split()
    macros: dict[str, str] = {}
    position = 0
    while position < len(words):
        word = words[position]
        definition = None
        if word == "-D" and position + 1 < len(words):
            definition = words[position + 1]
            position += 1
        elif word.startswith("-D") and len(word) > 2:
            definition = word[2:]
        if definition is not None:
            name, _, value = definition.partition("=")
            if re.fullmatch(r"[A-Za-z_]\w*", name):
                macros[name] = value if value else "1"
        position += 1
    return macros


_PASSED_OPTIONS = frozenset(
    {
        "-cl-fast-relaxed-math",
        "-cl-finite-math-only",
        "-cl-single-precision-constant",
        "-cl-denorms-are-zero",
        "-cl-mad-enable",
        "-cl-no-signed-zeros",
        "-cl-unsafe-math-optimizations",
        "-cl-opt-disable",
    }
)
"""OpenCL build options that may change what the preprocessor sees (``__FAST_RELAXED_MATH__``), given to
Clang as they are; the rest (``-w``, ``-Werror``, ``-cl-kernel-arg-info``, vendor options) do not change
types and are left out."""
_STANDARDS = frozenset({"CL1.0", "CL1.1", "CL1.2", "CL2.0", "CL3.0"})


def clang_arguments(build_options: str, address_bits: int = 64, headers: str | None = None) -> list[str]:
    """Clang's arguments for reading a source built with ``build_options`` for a device of ``address_bits``."""
    try:
        words = shlex.split(build_options)
    except ValueError:
        words = build_options.split()
    standard = "CL3.0"
    kept: list[str] = []
    position = 0
    while position < len(words):
        word = words[position]
        if word in ("-D", "-U") and position + 1 < len(words):
            kept += [word + words[position + 1]]
            position += 1
        elif (word.startswith("-D") or word.startswith("-U")) and len(word) > 2:
            kept.append(word)
        elif word.startswith("-cl-std="):
            wanted = word.partition("=")[2].upper()
            standard = wanted if wanted in _STANDARDS else standard
        elif word in _PASSED_OPTIONS:
            kept.append(word)
        position += 1
    target = "spir64-unknown-unknown" if address_bits == 64 else "spir-unknown-unknown"
    arguments = ["-x", "cl", f"-cl-std={standard}", "-target", target, "-Xclang", "-finclude-default-header"]
    arguments += ["-nostdinc", "-isystem", headers or _header_dir(), "-ferror-limit=50", *kept]
    return arguments


def _header_dir() -> str:
    """The folder with ``opencl-c.h`` and ``opencl-c-base.h`` (the libclang wheel ships none)."""
    named = os.environ.get(HEADERS_ENV, "").strip()
    candidates = [named] if named else []
    if not named:
        found = glob.glob("/usr/lib/llvm-*/lib/clang/*/include/opencl-c-base.h")
        found += glob.glob("/usr/lib/clang/*/include/opencl-c-base.h")

        def version(path: str) -> tuple[int, ...]:
            return tuple(int(n) for n in re.findall(r"\d+", path))

        candidates = [os.path.dirname(p) for p in sorted(found, key=version, reverse=True)]
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, "opencl-c-base.h")) and os.path.isfile(
            os.path.join(folder, "opencl-c.h")
        ):
            return folder
    where = f"{HEADERS_ENV}={named!r} holds no opencl-c.h / opencl-c-base.h" if named else "none was found"
    raise BackendError(
        ErrorKind.UNSUPPORTED,
        f"reading OpenCL C needs the OpenCL C headers of a Clang installation ({where}); "
        f"install Debian's clang-15 (make setup does) or set {HEADERS_ENV} to the folder holding opencl-c.h",
    )


_answers: OrderedDict[bytes, dict[str, Any]] = OrderedDict()


def _ask_clang(source: str, arguments: list[str], bodies: bool = True) -> dict[str, Any]:
    """Clang's answer for ``source`` (remembered); BackendError when the child fails or passes a limit."""
    key = hashlib.sha256(json.dumps([source, arguments, bodies]).encode("utf-8", "surrogatepass")).digest()
    remembered = _answers.get(key)
    if remembered is not None:
        _answers.move_to_end(key)
        return remembered
    timeout = env_number(TIMEOUT_ENV, _DEFAULT_TIMEOUT_S, 0.5, 3600.0)
    memory = int(env_number(MEMORY_ENV, _DEFAULT_MEMORY_MIB, 256, float(1 << 20)))
    request = json.dumps(
        {"source": source, "args": arguments, "memory_mib": memory, "timeout_s": timeout, "bodies": bodies}
    )
    try:
        child = subprocess.Popen(
            [sys.executable, *interpreter_flags(), _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_environment(),
            start_new_session=True,
        )
    except OSError as exc:
        raise BackendError(ErrorKind.UNSUPPORTED, f"cannot start the OpenCL C reader ({exc.strerror})") from None
    try:
        out, err = child.communicate(request.encode("utf-8", "surrogatepass"), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(child)
        raise BackendError(
            ErrorKind.RESOURCE_LIMIT,
            f"reading the OpenCL C source took over {timeout:g} s in Clang's front end ({TIMEOUT_ENV})",
        ) from None
    except BaseException:
        _kill(child)
        raise
    if child.returncode != 0 or len(out) > _MAX_ANSWER_BYTES:
        if child.returncode < 0:
            try:
                how = signal.Signals(-child.returncode).name
            except ValueError:
                how = f"signal {-child.returncode}"
        else:
            how = f"exit status {child.returncode}"
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        if any(word in tail[0] for word in ("MemoryError", "bad_alloc", "out of memory")) or how == "SIGXCPU":
            raise BackendError(
                ErrorKind.RESOURCE_LIMIT,
                f"Clang's front end passed its limits reading the OpenCL C source ({how}; {MEMORY_ENV}, {TIMEOUT_ENV})",
            )
        raise BackendError(
            ErrorKind.INVALID_ARGUMENT,
            f"Clang's front end failed reading the OpenCL C source ({how}{': ' + tail[0] if tail[0] else ''})",
        )
    try:
        answer = json.loads(out)
    except ValueError:
        raise BackendError(ErrorKind.INVALID_ARGUMENT, "the OpenCL C reader's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise BackendError(ErrorKind.INVALID_ARGUMENT, "the OpenCL C reader's answer is not an object")
    if "failure" in answer:
        kind = ErrorKind.UNSUPPORTED if answer.get("missing") else ErrorKind.INVALID_ARGUMENT
        raise BackendError(kind, f"cannot read the OpenCL C source: {answer['failure']}")
    keep_recent(_answers, key, answer, _REMEMBERED)
    return answer


def _kill(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    child.communicate()  # reaps it and closes its pipes


def _members(layout: ElementLayout) -> tuple[AggregateMember, ...]:
    """The members of a struct/union whose members are all scalars, vectors or arrays of one (else ())."""
    members = []
    for f in layout.fields:
        inner, count = f.layout, 1
        if inner.kind == "array" and inner.element is not None:
            inner, count = inner.element, inner.count
        vtype = inner.value_type
        if vtype is None or not f.name or count < 1:
            return ()
        members.append(AggregateMember(f.name, vtype, f.offset, count))
    return tuple(members)


def _parameter(node: dict[str, Any]) -> OpenCLParameter:
    index = int(node.get("index", 0))
    text = str(node.get("text", ""))
    name = str(node.get("name", ""))
    space = node.get("address_space")
    unknown = str(node.get("unknown", ""))
    opaque = str(node.get("opaque", ""))
    layout = None if unknown or "layout" not in node else layout_from_json(node["layout"])
    if layout is not None and layout.kind == "opaque" and not unknown:
        unknown = layout.why
    value_type = None if layout is None else layout.value_type
    aggregate = layout is not None and layout.kind in ("struct", "union")
    words = [w for w in re.findall(r"[A-Za-z_]\w*|\*|\[|\]|\d+", text) if w != name]
    type_text = layout.name if layout is not None else " ".join(w for w in words if w not in ("*", "[", "]"))
    single = layout.single_scalar() if aggregate and layout is not None else None
    return OpenCLParameter(
        index,
        text,
        None if space is None else str(space),
        bool(node.get("const")),
        value_type,
        name,
        type_text,
        aggregate,
        layout.size if aggregate and layout is not None else None,
        None if single is None else ValueType(single),
        _members(layout) if aggregate and layout is not None else (),
        layout,
        unknown,
        opaque,
        tuple(int(a) for a in node.get("local_id_axes") or () if isinstance(a, int) and 0 <= a < 3),
    )


def opencl_kernels(source: str, build_options: str = "", *, address_bits: int = 64) -> tuple[OpenCLKernel, ...]:
    """Every ``__kernel`` function in ``source``, with its parameters (see the module docstring)."""
    arguments = clang_arguments(build_options, address_bits)
    try:
        answer = _ask_clang(source, arguments)
    except BackendError as exc:
        if exc.kind is not ErrorKind.INVALID_ARGUMENT or "failed reading" not in exc.message:
            raise
        # A body Clang's parser cannot take (40,000 nested assignments overflow its stack): the declarations
        # alone, without what the bodies tell (the __local subscripts), so nothing is guessed from them.
        answer = _ask_clang(source, arguments, bodies=False)
    kernels = []
    for node in answer.get("kernels") or ():
        required = node.get("required_local_size")
        size = (
            (int(required[0]), int(required[1]), int(required[2]))
            if isinstance(required, list) and len(required) == 3
            else None
        )
        parameters = tuple(_parameter(p) for p in node.get("parameters") or ())
        kernels.append(OpenCLKernel(str(node.get("name", "")), parameters, size))
    return tuple(kernels)
