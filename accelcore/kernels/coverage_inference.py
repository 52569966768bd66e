"""Coverage inference: which bindings a kernel provably touches at one element per work-item.

Promise: :func:`infer_coverage` says PER_WORK_ITEM for a binding only when inspection proves that
every access the kernel makes to it is at exactly the work-item's global id on axis 0, that every
such access happens unconditionally, and that the dispatch launches exactly as many work-items as
the engine's coverage check counts (1-D, no rounding up to whole work-groups). Anything it cannot
prove is left UNKNOWN, with the reason; a wrong "unknown" costs only a check, a wrong "per item"
would refuse a valid submission or trust a short buffer, so every doubt gives up.

OpenCL C: the entry's body has no conditional, loop or jump (``if for while do switch case
default goto return break continue ? && ||``), no block literal or ``enqueue_kernel``, no
unevaluated operand (``sizeof`` ...); no macro (from ``#define`` or ``-D``) is used in it; the
source has no preprocessor directive but ``#define``, ``#pragma`` and ``#line`` (a conditional
could hide another definition); the index is ``get_global_id(0)`` written in the subscript or a
local initialised from it and never assigned, incremented or addressed again; every use of the
buffer parameter is ``P[index]`` (not ``P + k``, ``*P``, ``&P[i]``, a call argument, vload/vstore).

SPIR-V (Vulkan and OpenCL): the entry function is one basic block ending in OpReturn with no
OpFunctionCall; each access chain on the buffer (a Vulkan block of one array member at offset 0,
or an OpenCL ``CrossWorkgroup``/``UniformConstant`` pointer parameter) indexes with a value traced
to GlobalInvocationId component 0 through OpLoad, OpCompositeExtract 0, OpBitcast, OpUConvert,
OpSConvert, OpCopyObject and Function variables (a load counts while the variable holds its one
stored value); the chain's result is used only as the pointer of loads, stores and atomics. The
index's width is not checked: a 32-bit index wraps past 2**31 (or 2**32) work-items, which the
check cannot cover.

Cost: one pass over the source tokens or the module's instructions (linear, with a size bound:
sources over :data:`MAX_SOURCE_CHARS` are not inspected).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..contract.errors import BackendError
from .opencl_signature import OpenCLKernel, build_option_macros, opencl_kernels
from .package import ANY_LOCAL_SIZE, Coverage, DescriptorType, DispatchKind, KernelPackage, ModuleKind
from .spirv import (
    KIND_ARRAY,
    KIND_MATRIX,
    KIND_RUNTIME_ARRAY,
    KIND_STRUCT,
    KIND_VECTOR,
    SpirvModule,
    SpirvType,
    inspect_spirv,
    instructions,
)

__all__ = ["MAX_SOURCE_CHARS", "CoverageInference", "infer_coverage"]

MAX_SOURCE_CHARS = 1 << 20
"""OpenCL C sources longer than this are not inspected (their coverage stays unknown)."""


@dataclass(frozen=True, slots=True)
class CoverageInference:
    """``per_work_item``: the slots proven one-per-work-item; ``reasons``: slot → why another slot is not
    (or ``None`` → a reason for the whole kernel in ``overall``)."""

    per_work_item: frozenset[int] = frozenset()
    overall: str = ""
    reasons: dict[int, str] = field(default_factory=dict)

    def coverage(self, slot: int) -> Coverage:
        return Coverage.PER_WORK_ITEM if slot in self.per_work_item else Coverage.UNKNOWN

    def describe(self) -> str:
        """One line: what was inferred and why the rest was not."""
        parts = []
        if self.per_work_item:
            parts.append(f"slots {', '.join(map(str, sorted(self.per_work_item)))}: one element per work-item")
        if self.overall:
            parts.append(f"not inferred: {self.overall}")
        parts.extend(f"slot {slot} not inferred: {why}" for slot, why in sorted(self.reasons.items()))
        return "; ".join(parts) or "nothing to infer"


class _GiveUp(Exception):
    """Inference of the whole kernel stops (the message says why)."""


def infer_coverage(
    package: KernelPackage, *, spirv: SpirvModule | None = None, kernel: OpenCLKernel | None = None
) -> CoverageInference:
    """What coverage inspection proves for ``package``'s storage-buffer rows (see the module docstring).

    ``spirv`` / ``kernel``: the module's :func:`~accelcore.kernels.spirv.inspect_spirv` result or the entry's
    :class:`~accelcore.kernels.opencl_signature.OpenCLKernel`, when the caller has it (saves parsing again).
    Never raises for a module :func:`accelcore.kernels.pack.pack_module` accepted: a module it cannot read
    gives no inference, with the reason.
    """
    rows = [b for b in package.bindings if b.descriptor_type is DescriptorType.STORAGE_BUFFER]
    if not rows:
        return CoverageInference(overall="no storage-buffer bindings")
    try:
        _check_dispatch(package)
        if package.module_kind is ModuleKind.OPENCL_SOURCE:
            touched = _opencl_source(package, kernel)
        elif package.module_kind in (ModuleKind.SPIRV_VULKAN, ModuleKind.SPIRV_OPENCL):
            touched = _spirv(package, spirv)
        else:
            raise _GiveUp("a device binary cannot be inspected")
    except _GiveUp as stop:
        return CoverageInference(overall=str(stop))
    except BackendError as exc:  # pragma: no cover - pack_module inspected the module already
        return CoverageInference(overall=f"the module cannot be inspected ({exc.message})")
    proven: set[int] = set()
    reasons: dict[int, str] = {}
    for row in rows:
        key = (row.set, row.native_index)
        verdict = touched.get(key)
        if verdict is None:
            reasons[row.slot] = "the kernel does not access it"
        elif isinstance(verdict, str):
            reasons[row.slot] = verdict
        elif verdict != row.element_size:
            reasons[row.slot] = f"its accesses step {verdict} bytes, the binding's element is {row.element_size}"
        else:
            proven.add(row.slot)
    return CoverageInference(frozenset(proven), "", reasons)


def _check_dispatch(package: KernelPackage) -> None:
    """Give up unless the launched work-items equal the element count the engine's check uses, on one axis."""
    dispatch, local = package.dispatch, tuple(package.local_size)
    vulkan = package.module_kind is ModuleKind.SPIRV_VULKAN
    any_local = local == ANY_LOCAL_SIZE
    if not any_local and local[1:] != (1, 1):
        raise _GiveUp(f"the work-group size {local} is not 1-D")
    if dispatch.kind is DispatchKind.GLOBAL:
        if dispatch.global_size[1:] != (1, 1):
            raise _GiveUp(f"the dispatch {dispatch.global_size} is not 1-D (the global id on axis 0 repeats)")
        if vulkan and dispatch.global_size[0] % local[0]:
            raise _GiveUp(
                f"Vulkan launches whole work-groups: {dispatch.global_size[0]} work-items round up to a multiple "
                f"of {local[0]}, which an unguarded kernel touches"
            )
    elif dispatch.kind is DispatchKind.FIXED:
        if dispatch.groups[1:] != (1, 1):
            raise _GiveUp(f"the dispatch of {dispatch.groups} work-groups is not 1-D")
    elif not (any_local or local[0] == 1):
        raise _GiveUp(
            f"a dispatch sized from a binding launches whole work-groups of {local[0]}, so an unguarded kernel "
            "touches past the slot's element count up to the next multiple"
        )


# --------------------------------------------------------------------------- OpenCL C

_TOKEN = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*|\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*"
    r"|<<=|>>=|\.\.\.|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|[][(){}.,;:?~!+\-*/%&|^<>=#@$`]"
)
_SPLICE = re.compile(r"\\[ \t]*\r?\n")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*([A-Za-z_]*)[ \t]*([A-Za-z_][A-Za-z0-9_]*)?", re.MULTILINE)
_ALLOWED_DIRECTIVES = frozenset({"define", "pragma", "line"})
_FORBIDDEN = frozenset(
    {
        "if", "for", "while", "do", "switch", "case", "default", "goto", "return", "break", "continue",
        "?", "&&", "||", "^", "^=", "#", "asm", "__asm__", "__asm", "sizeof", "_Alignof", "__alignof__",
        "vec_step", "typeof", "__typeof__", "enqueue_kernel", "enqueue_marker", "_Generic", "@", "$", "`",
    }
)  # fmt: skip
_INDEX_TYPES = frozenset({"size_t", "uint", "int", "ulong", "long", "unsigned", "ptrdiff_t", "intptr_t", "uintptr_t"})
_ASSIGNING = frozenset({"=", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_IDENT = re.compile(r"[A-Za-z_]\w*")
_OPTION_WORD = re.compile(r"-D\S*|-I\S*|-w|-Werror|-g|-cl-\S+")


_COMMENT_OR_LITERAL = re.compile(r"/\*|//|\"|'")
_LITERAL_REST = {q: re.compile(rf"(?:[^{q}\\\n]|\\.)*{q}") for q in ('"', "'")}
_UNREAD = re.compile(r"[^\x09-\x0d\x20-\x7e]|\\")


def _tokens(text: str) -> list[str]:
    """The tokens of ``text``: comments removed, each string or character literal one ``0`` token (one pass
    over the text: comment and literal ends are found with ``str.find`` and a linear regex)."""
    out: list[str] = []
    position, end = 0, len(text)
    while True:
        found = _COMMENT_OR_LITERAL.search(text, position)
        if found is None:
            out.append(text[position:])
            break
        out.append(text[position : found.start()])
        mark = found.group()
        if mark == "//":
            newline = text.find("\n", found.end())
            position = end if newline < 0 else newline
            out.append(" ")
        elif mark == "/*":
            close = text.find("*/", found.end())
            if close < 0:
                raise _GiveUp("the source has an unclosed comment")
            position = close + 2
            out.append(" ")
        else:
            rest = _LITERAL_REST[mark].match(text, found.end())
            if rest is None:
                raise _GiveUp("the source has an unterminated literal")
            position = rest.end()
            out.append(" 0 ")
    clean = "".join(out)
    odd = _UNREAD.search(clean)
    if odd is not None:
        raise _GiveUp(f"the source has a character the inference does not read ({odd.group()!r})")
    return _TOKEN.findall(clean)


def _matching(tokens: list[str], start: int, opening: str, closing: str) -> int:
    depth = 0
    for position in range(start, len(tokens)):
        if tokens[position] == opening:
            depth += 1
        elif tokens[position] == closing:
            depth -= 1
            if depth == 0:
                return position
    raise _GiveUp(f"an unbalanced {opening!r}")


def _opencl_source(package: KernelPackage, kernel: OpenCLKernel | None) -> dict[tuple[int, int], int | str]:
    source = package.module.decode("utf-8")
    if len(source) > MAX_SOURCE_CHARS:
        raise _GiveUp(f"the source is longer than {MAX_SOURCE_CHARS} characters")
    if "??" in source:
        raise _GiveUp("the source contains '??' (a trigraph would change what the compiler reads)")
    if any(d in source for d in ("<:", ":>", "<%", "%>", "%:")):
        raise _GiveUp("the source contains a digraph")
    if "c++" in package.build_options.lower():
        raise _GiveUp("C++ for OpenCL (references and lambdas escape these rules) is not inspected")
    for word in package.build_options.split():
        if not _OPTION_WORD.fullmatch(word):
            raise _GiveUp(f"the build option {word!r} is not one the inference understands")
    text = _SPLICE.sub("", source)
    macros = set(build_option_macros(package.build_options))
    for match in _DIRECTIVE.finditer(text):
        directive = match.group(1)
        if directive not in _ALLOWED_DIRECTIVES:
            raise _GiveUp(f"the source has a #{directive or '?'} directive (conditional or included code)")
        if directive == "define" and match.group(2):
            macros.add(match.group(2))
    tokens = _tokens(_blank_directive_lines(text))
    if "#" in tokens:
        raise _GiveUp("the source has a '#' the inference cannot place (a directive after a comment?)")
    if kernel is None or kernel.name != package.entry_point:
        kernel = next(k for k in opencl_kernels(source, package.build_options) if k.name == package.entry_point)
    start, stop, functions = _kernel_body(tokens, package.entry_point)
    body = tokens[start + 1 : stop]
    for position, token in enumerate(body[:-1]):
        if token in functions and body[position + 1] == "(":
            raise _GiveUp(f"the kernel body calls {token}, which the source defines")
    names = {p.name for p in kernel.parameters}
    for token in body:
        if token in _FORBIDDEN:
            raise _GiveUp(f"the kernel body has {token!r} (control flow or an unevaluated operand)")
        if token in macros:
            raise _GiveUp(f"the kernel body uses the macro {token!r}")
    if package.entry_point in macros or names & macros:
        raise _GiveUp("a macro renames the kernel or a parameter")
    where = _positions(body)
    indices = _index_names(body, where)
    touched: dict[tuple[int, int], int | str] = {}
    for param in kernel.parameters:
        if param.address_space not in ("global", "constant") or not param.name:
            continue
        verdict = _buffer_uses(body, param.name, where.get(param.name, []), indices)
        if verdict is True and param.value_type is not None:
            touched[(0, param.index)] = param.value_type.size
        elif isinstance(verdict, str):
            touched[(0, param.index)] = verdict
    return touched


def _blank_directive_lines(text: str) -> str:
    """Directive lines emptied (their newlines kept)."""
    return re.sub(r"^[ \t]*#[^\n]*", "", text, flags=re.MULTILINE)


def _kernel_body(tokens: list[str], entry: str) -> tuple[int, int, set[str]]:
    """(index of ``{``, index of its ``}``) of the one definition of ``entry``, and the names of the functions
    the source defines; give up on anything else."""
    depth = 0
    found: list[tuple[int, int]] = []
    functions: set[str] = set()
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
        elif depth == 0 and token == "get_global_id":
            raise _GiveUp("get_global_id is declared or used outside a function")
        elif depth == 0 and position + 1 < len(tokens) and tokens[position + 1] == "(" and _IDENT.fullmatch(token):
            close = _matching(tokens, position + 1, "(", ")")
            if close + 1 < len(tokens) and tokens[close + 1] == "{":
                end = _matching(tokens, close + 1, "{", "}")
                functions.add(token)
                if token == entry:
                    found.append((close + 1, end))
                position = end + 1
                continue
            position = close
        position += 1
    if len(found) != 1:
        raise _GiveUp(f"the source has {len(found)} definitions of {entry!r}")
    return found[0][0], found[0][1], functions


def _is_gid_call(body: list[str], at: int) -> bool:
    return body[at : at + 4] == ["get_global_id", "(", "0", ")"]


def _positions(body: list[str]) -> dict[str, list[int]]:
    """Where each identifier occurs in ``body`` (one pass, so each later question is linear in total)."""
    found: dict[str, list[int]] = {}
    for position, token in enumerate(body):
        if _IDENT.fullmatch(token):
            found.setdefault(token, []).append(position)
    return found


_MAX_TYPE_WORDS = 4
"""A declaration ``const unsigned long i = ...`` has at most this many words before its name."""


def _index_names(body: list[str], where: dict[str, list[int]]) -> set[str]:
    """Locals of the body's outer block initialised from ``get_global_id(0)`` and never changed after."""
    depth = 0
    declared_at: dict[str, int] = {}
    for position, token in enumerate(body):
        if token in ("{", "("):
            depth += 1
        elif token in ("}", ")"):
            depth -= 1
        if token != "=" or depth != 0 or position < 2:
            continue
        name = body[position - 1]
        if not _IDENT.fullmatch(name) or name in declared_at:
            continue
        words: list[str] = []
        back = position - 2
        while back >= 0 and body[back] not in (";", "{", "}") and len(words) <= _MAX_TYPE_WORDS:
            words.append(body[back])
            back -= 1
        type_words = [w for w in words if w != "const"]
        if not type_words or len(words) > _MAX_TYPE_WORDS or not all(w in _INDEX_TYPES for w in type_words):
            continue
        value = position + 1
        if body[value : value + 1] == ["("] and body[value + 2 : value + 3] == [")"]:
            if body[value + 1] not in _INDEX_TYPES:
                continue
            value += 3
        if _is_gid_call(body, value) and body[value + 4 : value + 5] == [";"]:
            declared_at[name] = position - 1
    return {name for name, declared in declared_at.items() if _index_stays(body, where[name], declared)}


def _index_stays(body: list[str], occurrences: list[int], declared: int) -> bool:
    for position in occurrences:
        if position == declared:
            continue
        if position < declared:
            return False
        before = body[position - 1] if position else ""
        after = body[position + 1] if position + 1 < len(body) else ""
        if before in (".", "->"):
            continue  # a member of that name
        if before in ("&", "++", "--") or _IDENT.fullmatch(before):
            return False
        if after in _ASSIGNING:
            return False
    return True


def _buffer_uses(body: list[str], name: str, occurrences: list[int], indices: set[str]) -> bool | str | None:
    """True when every use of ``name`` is ``name[index]``; a reason when one is not; None when it is unused."""
    used = False
    for position in occurrences:
        before = body[position - 1] if position else ""
        if before in (".", "->"):
            continue  # a member of that name, not the parameter
        if before in ("&", "++", "--") or _IDENT.fullmatch(before):
            return f"{before}{name}[...] is not a plain subscript"
        if body[position + 1 : position + 2] != ["["]:
            return f"{name} is used other than as {name}[global id] (a pointer expression or call argument)"
        inside = body[position + 2 : position + 3]
        plain = bool(inside) and inside[0] in indices and body[position + 3 : position + 4] == ["]"]
        if not plain and not (_is_gid_call(body, position + 2) and body[position + 6 : position + 7] == ["]"]):
            return f"{name} is indexed with something other than the global id"
        # what follows (y[i]++, y[i] += 1, y[i].x) stays in the element
        used = True
    return True if used else None


# --------------------------------------------------------------------------- SPIR-V

_OP_EXT_INST = 12
_OP_FUNCTION = 54
_OP_FUNCTION_PARAMETER = 55
_OP_FUNCTION_END = 56
_OP_FUNCTION_CALL = 57
_OP_VARIABLE = 59
_OP_LOAD = 61
_OP_STORE = 62
_OP_ACCESS_CHAIN = 65
_OP_IN_BOUNDS_ACCESS_CHAIN = 66
_OP_PTR_ACCESS_CHAIN = 67
_OP_ARRAY_LENGTH = 68
_OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70
_OP_DECORATE = 71
_OP_CONSTANT = 43
_OP_COMPOSITE_EXTRACT = 81
_OP_COPY_OBJECT = 83
_OP_UCONVERT = 113
_OP_SCONVERT = 114
_OP_BITCAST = 124
_OP_LABEL = 248
_OP_RETURN = 253
_OP_LINE = 8
_OP_NO_LINE = 317
_OP_NOP = 0
_ATOMIC_WITH_RESULT = frozenset({227, *range(229, 243), 318, 5614, 5615, 6035})
_OP_ATOMIC_STORE = 228
_OP_ATOMIC_FLAG_CLEAR = 319
_DEC_BUILTIN = 11
_BUILTIN_GLOBAL_INVOCATION_ID = 28
_SC_FUNCTION = 7

_GID, _GID_VECTOR, _GID_POINTER, _GID_VARIABLE = "gid", "gid-vector", "gid-pointer", "gid-variable"


@dataclass(slots=True)
class _Flow:
    """The abstract values of one single-block function: id → tag (``"gid"``, ``("buffer", key)``, ...)."""

    values: dict[int, object]
    constants: dict[int, int]
    variables: dict[int, object]
    """Function variables: their one stored tag, ``_UNSET`` before any store, ``_DIRTY`` after a second."""
    verdicts: dict[tuple[int, int], int | str]
    strides: dict[tuple[int, int], int]
    elements: dict[tuple[int, int], SpirvType | None]
    """The element type of each buffer (what indices after the global id may step into)."""

    def bad(self, key: tuple[int, int], why: str) -> None:
        self.verdicts[key] = why

    def good(self, key: tuple[int, int]) -> None:
        if key not in self.verdicts:
            self.verdicts[key] = self.strides[key]


_UNSET, _DIRTY = object(), object()


def _spirv(package: KernelPackage, module: SpirvModule | None) -> dict[tuple[int, int], int | str]:
    if module is None:
        module = inspect_spirv(package.module)
    entry = module.entry_point(package.entry_point)
    vulkan = package.module_kind is ModuleKind.SPIRV_VULKAN
    values: dict[int, object] = {}
    strides: dict[tuple[int, int], int] = {}
    elements: dict[tuple[int, int], SpirvType | None] = {}
    why_not: dict[tuple[int, int], str] = {}
    if vulkan:
        keys = Counter((d.set, d.binding) for d in module.descriptors)
        for d in module.descriptors:
            key = (d.set, d.binding)
            if keys[key] > 1:
                why_not[key] = "several variables alias its binding"
                continue
            block = d.type
            member = block.members[0] if block is not None and block.kind == KIND_STRUCT and block.members else None
            if (
                d.descriptor_type != "storage_buffer"
                or d.count != 1
                or block is None
                or len(block.members) != 1
                or member is None
                or member.offset != 0
                or member.type.kind not in (KIND_ARRAY, KIND_RUNTIME_ARRAY)
                or not member.type.stride
            ):
                why_not[key] = "it is not a block of one array at offset 0"
                continue
            values[d.variable_id] = ("buffer", key)
            strides[key] = member.type.stride
            elements[key] = member.type.component
    else:
        for p in entry.parameters:
            if p.is_global_buffer and p.value_bytes:
                values[p.id] = ("element-base", (0, p.index))
                strides[(0, p.index)] = p.value_bytes
                elements[(0, p.index)] = p.type
    flow = _Flow(values, {}, {}, dict(why_not), strides, elements)
    builtins: set[int] = set()
    function: list[tuple[int, object]] = []
    inside = False
    for opcode, ops in instructions(package.module):
        if (
            opcode == _OP_DECORATE
            and len(ops) >= 3
            and ops[1] == _DEC_BUILTIN
            and ops[2] == _BUILTIN_GLOBAL_INVOCATION_ID
        ):
            builtins.add(ops[0])
        elif opcode == _OP_CONSTANT and len(ops) == 3:  # 32-bit constants only (wider ones take more words)
            flow.constants[ops[1]] = ops[2]
        elif opcode == _OP_FUNCTION and len(ops) >= 2:
            inside = ops[1] == entry.id
        elif opcode == _OP_FUNCTION_END:
            inside = False
        elif inside:
            function.append((opcode, ops))
    for builtin in builtins:
        flow.values[builtin] = _GID_VARIABLE
    _run_block(flow, function)
    return flow.verdicts


def _inside_element(element: SpirvType | None, indices: list[int], constants: dict[int, int]) -> bool:
    """Whether constant ``indices`` into one ``element`` stay inside it (struct members, vector lanes, matrix
    columns and sized arrays, each index below its count)."""
    current = element
    for index in indices:
        value = constants.get(index)
        if value is None or current is None:
            return False
        if current.kind == KIND_STRUCT:
            if value >= len(current.members):
                return False
            current = current.members[value].type
        elif current.kind in (KIND_VECTOR, KIND_MATRIX, KIND_ARRAY):
            if current.count is None or value >= current.count:
                return False
            current = current.component
        else:
            return False
    return True


def _tag_key(tag: object) -> tuple[int, int] | None:
    if isinstance(tag, tuple) and len(tag) == 2 and isinstance(tag[1], tuple):
        return tag[1]
    return None


def _run_block(flow: _Flow, function: list[tuple[int, object]]) -> None:
    labels = 0
    ended = False
    for opcode, raw in function:
        ops = list(raw)  # type: ignore[call-overload]
        if ended:
            raise _GiveUp("the entry function has more than one basic block")
        if opcode == _OP_LABEL:
            labels += 1
            if labels > 1:
                raise _GiveUp("the entry function has more than one basic block (branches)")
            continue
        if opcode == _OP_FUNCTION_PARAMETER or opcode in (_OP_LINE, _OP_NO_LINE, _OP_NOP):
            continue
        if opcode == _OP_FUNCTION_CALL:
            raise _GiveUp("the entry function calls another function")
        if opcode == _OP_RETURN:
            ended = True
            continue
        _step(flow, opcode, ops)
    if not ended:
        raise _GiveUp("the entry function does not end in a plain return")


def _escape(flow: _Flow, operands: Iterable[int]) -> None:
    """Any other use of a tracked id: a buffer pointer escapes (give that buffer up), a variable's later loads
    stop counting."""
    for word in operands:
        tag = flow.values.get(word)
        if tag in (_GID_POINTER, _GID_VARIABLE):
            raise _GiveUp("the global id variable is used other than by loads")
        key = _tag_key(tag)
        if key is not None:
            flow.bad(key, "a pointer into it is used other than to load, store or update one element")
        if word in flow.variables:
            flow.variables[word] = _DIRTY


def _step(flow: _Flow, opcode: int, ops: list[int]) -> None:
    values = flow.values
    if opcode == _OP_VARIABLE and len(ops) >= 3 and ops[2] == _SC_FUNCTION:
        flow.variables[ops[1]] = _UNSET
        if len(ops) >= 4:
            flow.variables[ops[1]] = _DIRTY
            _escape(flow, ops[3:4])
        return
    if opcode == _OP_LOAD and len(ops) >= 3:
        result, pointer = ops[1], ops[2]
        if pointer in flow.variables:
            held = flow.variables[pointer]
            if held is not _UNSET and held is not _DIRTY and held is not None:
                values[result] = held
            return
        tag = values.get(pointer)
        if tag == _GID_POINTER:
            values[result] = _GID
        elif tag == _GID_VARIABLE:
            values[result] = _GID_VECTOR
        elif isinstance(tag, tuple) and tag[0] == "element":
            flow.good(tag[1])
        elif _tag_key(tag) is not None:
            _escape(flow, [pointer])
        return
    if opcode == _OP_STORE and len(ops) >= 2:
        pointer, stored = ops[0], ops[1]
        if pointer in flow.variables:
            if flow.variables[pointer] is _UNSET:
                flow.variables[pointer] = values.get(stored)
            else:
                flow.variables[pointer] = _DIRTY
            return
        tag = values.get(pointer)
        if isinstance(tag, tuple) and tag[0] == "element":
            flow.good(tag[1])
            _escape(flow, [stored])
        else:
            _escape(flow, [pointer, stored])
        return
    if opcode in (_OP_ACCESS_CHAIN, _OP_IN_BOUNDS_ACCESS_CHAIN, _OP_PTR_ACCESS_CHAIN, _OP_IN_BOUNDS_PTR_ACCESS_CHAIN):
        if len(ops) < 3:
            return
        result, base, indices = ops[1], ops[2], ops[3:]
        pointer_chain = opcode in (_OP_PTR_ACCESS_CHAIN, _OP_IN_BOUNDS_PTR_ACCESS_CHAIN)
        tag = values.get(base)
        if tag == _GID_VARIABLE and not pointer_chain:
            if len(indices) == 1 and flow.constants.get(indices[0]) == 0:
                values[result] = _GID_POINTER
            return
        key = _tag_key(tag)
        if key is None:
            _escape(flow, [base, *indices])
            return
        kind = tag[0]  # type: ignore[index]
        rest: list[int]
        if kind == "buffer" and not pointer_chain and len(indices) >= 2 and flow.constants.get(indices[0]) == 0:
            index, rest = indices[1], indices[2:]
        elif kind == "element-base" and pointer_chain and indices:
            index, rest = indices[0], indices[1:]
        else:
            flow.bad(key, "an access chain on it is not base[global id]")
            return
        if values.get(index) != _GID:
            flow.bad(key, "it is indexed with something other than the global id")
            return
        if not _inside_element(flow.elements.get(key), rest, flow.constants):
            flow.bad(key, "an access chain steps past its element (a computed or out-of-range index)")
            return
        _escape(flow, rest)
        values[result] = ("element", key)
        return
    if opcode == _OP_COMPOSITE_EXTRACT and len(ops) >= 3:
        if values.get(ops[2]) == _GID_VECTOR and list(ops[3:]) == [0]:
            values[ops[1]] = _GID
        else:
            _escape(flow, ops[2:3])
        return
    if opcode in (_OP_BITCAST, _OP_UCONVERT, _OP_SCONVERT, _OP_COPY_OBJECT) and len(ops) >= 3:
        if values.get(ops[2]) == _GID:
            values[ops[1]] = _GID
        else:
            _escape(flow, ops[2:3])
        return
    if opcode == _OP_ARRAY_LENGTH:
        return  # reads the bound size, touches no element
    if opcode in _ATOMIC_WITH_RESULT and len(ops) >= 3:
        tag = values.get(ops[2])
        if isinstance(tag, tuple) and tag[0] == "element":
            flow.good(tag[1])
            _escape(flow, ops[3:])
        else:
            _escape(flow, ops[2:])
        return
    if opcode in (_OP_ATOMIC_STORE, _OP_ATOMIC_FLAG_CLEAR) and ops:
        tag = values.get(ops[0])
        if isinstance(tag, tuple) and tag[0] == "element":
            flow.good(tag[1])
            _escape(flow, ops[1:])
        else:
            _escape(flow, ops)
        return
    if opcode == _OP_EXT_INST:
        _escape(flow, ops[2:])
        return
    _escape(flow, ops)
