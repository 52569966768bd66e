"""Kernel signatures read from OpenCL C source: names, address spaces and types of the parameters.

Promise: a light, bounded parse, not a compiler. Comments are removed,
object-like ``#define NAME TYPE`` macros of the source, ``-D NAME=TYPE``
build options and plain ``typedef TYPE NAME;`` aliases of a type without
braces, pointers or arrays are substituted into parameter types (PolyBench's
``DATA_TYPE``, written either way; a name defined twice with different
types, as in an ``#ifdef DOUBLE`` / ``#else`` pair, stays unknown),
``unsigned int`` and friends are normalised, and each
parameter reports its name, address space (global, constant, local, private
for pointers; None by value), constness and — where it is a scalar or vector
type — its :class:`~accelcore.values.ValueType`. What cannot be read (a
struct, a typedef of one, ``size_t``) is reported with ``value_type`` None and the
type text, so a caller can refuse naming it. Linear in the source size: a macro expansion
that would grow past 4x its text plus 1 KiB (macros naming several others grow exponentially) is
abandoned and its names stay unknown.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass

from .values import OPENCL_NAMES, ScalarType, ValueType

__all__ = ["AggregateMember", "OpenCLKernel", "OpenCLParameter", "build_option_macros", "opencl_kernels"]


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
    """One kernel parameter as written in OpenCL C source.

    ``address_space``: global, constant, local or private (pointers), None
    for by-value; ``value_type`` of the pointee or value (None when it is not
    a scalar/vector type this parser knows); ``type_text`` the type as
    written after macro substitution; ``name`` the parameter name ('' if absent).
    ``aggregate``: the type is a struct or union (``struct S``, or a name the source
    typedefs to one); ``aggregate_bytes`` its OpenCL C size where every member is a
    scalar/vector (or an array of one) this parser knows, and ``aggregate_scalar`` the
    one scalar type of all its members (None when they differ); ``aggregate_members`` the members with
    their offsets (empty when the size is unknown).
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
        return self.aggregate_bytes if self.value_type is None else self.value_type.size

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


_COMMENT_START = re.compile(r"//|/\*")
_TOKENS = re.compile(
    r"(?P<kernel>\b(?:__kernel|kernel)\b)|(?P<void>\bvoid\s+(?P<name>[A-Za-z_]\w*)\s*\()|(?P<sep>[;{}])"
)
_MAX_PRE_CHARS = 4096
"""Attribute text between ``__kernel`` and ``void`` searched for ``reqd_work_group_size``."""
_REQD = re.compile(r"reqd_work_group_size\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n\\]*?)[ \t]*$", re.MULTILINE)
_TYPEDEF = re.compile(r"\btypedef[ \t]+((?:[A-Za-z_]\w*[ \t]+){1,4})([A-Za-z_]\w*)[ \t]*;")
"""``typedef unsigned int index_t;``: one to four words on one line (no struct body, pointer or array; bounded,
so linear); an alias naming a struct, union or enum stays unknown."""
_STRUCT_DEF = re.compile(
    r"\b(typedef\s+)?(struct|union)\b[ \t\n]*([A-Za-z_]\w*)?[ \t\n]*\{([^{}]*)\}[ \t\n]*([A-Za-z_]\w*)?[ \t\n]*;"
)
"""``struct Tag { ... };`` / ``typedef struct [Tag] { ... } Name;`` (no nested braces)."""
_MEMBER = re.compile(r"^(.*?)\b([A-Za-z_]\w*)[ \t]*(?:\[[ \t]*(\d+)[ \t]*\])?$")


@dataclass(frozen=True, slots=True)
class _Aggregate:
    size: int | None
    scalar: ValueType | None
    members: tuple[AggregateMember, ...] = ()


def _layout(kind: str, body: str, macros: dict[str, str]) -> _Aggregate:
    """OpenCL C layout of a struct/union body of scalar/vector members (each aligned to its size, 3-lane
    vectors as 4); size None when a member is anything else (a nested struct, a pointer, an attribute)."""
    offset = align = 0
    scalars: set[ScalarType] = set()
    members: list[AggregateMember] = []
    if "__attribute__" in body or "#" in body:
        return _Aggregate(None, None)
    for declaration in (d.strip() for d in _substitute(body, macros).split(";")):
        if not declaration:
            continue
        head, _, _ = declaration.partition(",")
        found = _MEMBER.match(" ".join(head.split()))
        if found is None or "," in declaration or "*" in declaration:
            return _Aggregate(None, None)
        words = [w for w in re.findall(r"[A-Za-z_]\w*", found.group(1)) if w not in _QUALIFIERS]
        vtype = _value_type(words)
        if vtype is None or vtype.scalar is ScalarType.BOOL:
            return _Aggregate(None, None)
        count = int(found.group(3) or 1)
        if count < 1:
            return _Aggregate(None, None)
        offset += -offset % vtype.size
        members.append(AggregateMember(found.group(2), vtype, 0 if kind == "union" else offset, count))
        size = vtype.size * count
        offset = max(offset, size) if kind == "union" else offset + size
        align = max(align, vtype.size)
        scalars.add(vtype.scalar)
    if align == 0:
        return _Aggregate(None, None)
    scalar = scalars.pop() if len(scalars) == 1 else None
    return _Aggregate(offset + (-offset % align), None if scalar is None else ValueType(scalar), tuple(members))


_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__", "__read_only", "__write_only"}
_SPACES = {
    "__global": "global",
    "global": "global",
    "__constant": "constant",
    "constant": "constant",
    "__local": "local",
    "local": "local",
    "__private": "private",
    "private": "private",
}
_UNSIGNED = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}
_MAX_MACRO_ROUNDS = 8
_MAX_EXPANSION = 1024
"""Characters a macro expansion may add beyond 4x its text (see ``_substitute``)."""
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


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


def _substitute(text: str, macros: dict[str, str]) -> str:
    """``text`` with the object-like macros expanded (at most ``_MAX_MACRO_ROUNDS`` rounds). An expansion
    that grows past ``_MAX_EXPANSION`` (4x the text plus 1 KiB: macros that each name several others grow
    it exponentially) is abandoned: the text comes back unexpanded, so its names stay unknown types."""
    if not macros:
        return text
    original = text
    limit = 4 * len(text) + _MAX_EXPANSION
    inserted = 0

    def expand(match: re.Match[str]) -> str:
        nonlocal inserted
        name = match.group(0)
        value = macros.get(name)
        if value is None:
            return name
        inserted += len(value)
        if inserted > limit:  # bounds one round's output too, not only the rounds' total
            raise _TooLong
        return value

    try:
        for _ in range(_MAX_MACRO_ROUNDS):
            inserted = 0
            replaced = _IDENTIFIER.sub(expand, text)
            if replaced == text:
                break
            if len(replaced) > limit:
                return original
            text = replaced
    except _TooLong:
        return original
    return text


class _TooLong(Exception):
    """A macro expansion went past its bound (see ``_substitute``)."""


def _value_type(names: list[str]) -> ValueType | None:
    """The scalar/vector type of the type words (qualifiers and spaces removed); None when unknown."""
    words = list(names)
    if words and words[0] in ("unsigned", "signed"):
        sign = words.pop(0)
        base = words[0] if words else "int"
        if len(words) > 1 and base in ("long", "short") and words[1] == "int":
            words = words[:1]  # "unsigned long int"
        if len(words) > 1:
            return None
        if sign == "unsigned":
            return ValueType(OPENCL_NAMES[_UNSIGNED[base]]) if base in _UNSIGNED else None
        return ValueType(OPENCL_NAMES[base]) if base in _UNSIGNED else None
    if len(words) == 2 and words[0] in ("long", "short") and words[1] == "int":
        words = words[:1]
    if len(words) != 1:
        return None
    match = re.fullmatch(r"([a-z]+?)(2|3|4|8|16)?", words[0])
    if match is None or match.group(1) not in OPENCL_NAMES:
        return None
    return ValueType(OPENCL_NAMES[match.group(1)], int(match.group(2) or 1))


def _parameter(
    index: int, text: str, macros: dict[str, str], aggregates: dict[str, _Aggregate] | None = None
) -> OpenCLParameter:
    written = " ".join(text.split())
    expanded = _substitute(written, macros)
    pointer = "*" in expanded
    if pointer:
        before, _, after = expanded.rpartition("*")
        names_after = re.findall(r"[A-Za-z_]\w*", after)
        name = next((w for w in names_after if w not in _QUALIFIERS), "")
        tokens = re.findall(r"[A-Za-z_]\w*", before.replace("*", " "))
    else:
        tokens = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[.*", "", expanded))
        name = tokens.pop() if len(tokens) > 1 else ""
    space = next((_SPACES[t] for t in tokens if t in _SPACES), None)
    if pointer and space is None:
        space = "private"
    type_words = [t for t in tokens if t not in _QUALIFIERS and t not in _SPACES]
    value_type = _value_type(type_words)
    aggregates = aggregates or {}
    if len(type_words) == 2 and type_words[0] in ("struct", "union"):
        aggregate: _Aggregate | None = aggregates.get(" ".join(type_words), _Aggregate(None, None))
    else:
        aggregate = aggregates.get(type_words[0]) if len(type_words) == 1 else None
    return OpenCLParameter(
        index,
        written,
        space,
        "const" in tokens,
        value_type,
        name,
        " ".join(type_words),
        aggregate is not None or "struct" in type_words or "union" in type_words,
        None if aggregate is None else aggregate.size,
        None if aggregate is None else aggregate.scalar,
        () if aggregate is None else aggregate.members,
    )


def opencl_kernels(source: str, build_options: str = "") -> tuple[OpenCLKernel, ...]:
    """Every ``__kernel`` function in ``source``, with its parameters (see the module docstring)."""
    text = _strip_comments(source)
    definitions = [(name, value) for name, value in _DEFINE.findall(text) if not value.startswith("(")]
    aliases: dict[str, str] = {}  # typedef struct Tag Name;
    for value, name in _TYPEDEF.findall(text):
        words = value.split()
        if "struct" not in words and "union" not in words and "enum" not in words:
            definitions.append((name, " ".join(words)))
        elif len(words) == 2 and words[0] in ("struct", "union"):
            aliases[name] = " ".join(words)
    bodies: dict[str, tuple[str, str]] = {}  # laid out once the macros are known
    struct_names: list[str] = []
    for typedef, kind, tag, body, alias in _STRUCT_DEF.findall(text):
        names = [f"{kind} {tag}"] if tag else []
        names += [alias] if typedef and alias else []
        struct_names += names
        bodies.update((struct_name, (kind, body)) for struct_name in names)
    macros: dict[str, str] = {}
    conflicting: set[str] = set()
    for name, value in definitions:
        if macros.setdefault(name, value) != value:
            conflicting.add(name)  # #ifdef DOUBLE / #else: which one holds is the preprocessor's to say
    for name in conflicting:
        macros[name] = name
    macros.update(build_option_macros(build_options))
    twice = {n for n, seen in Counter(struct_names).items() if seen > 1}  # an #ifdef pair: not guessed
    aggregates = {
        n: _Aggregate(None, None) if n in twice else _layout(kind, body, macros) for n, (kind, body) in bodies.items()
    }
    for alias, tagged in aliases.items():
        aggregates.setdefault(alias, aggregates.get(tagged, _Aggregate(None, None)))
    kernels = []
    pending: int | None = None  # end of a __kernel keyword not yet followed by its void NAME(
    resume = 0  # a signature's parameter list is not searched for further tokens
    for match in _TOKENS.finditer(text):
        if match.start() < resume:
            continue
        if match.group("kernel"):
            pending = match.end()
        elif match.group("sep"):
            pending = None
        elif pending is not None:
            stop = _next_boundary(text, match.end())
            close = text.find(")", match.end(), stop)
            pending_end, pending = pending, None
            if close < 0:
                continue  # no parameter list closes before the next statement or kernel: not a signature
            params_text = text[match.end() : close].strip()
            pieces = [] if params_text in ("", "void") else [p.strip() for p in params_text.split(",")]
            pre = text[max(pending_end, match.start() - _MAX_PRE_CHARS) : match.start()]
            reqd = _REQD.search(_substitute(pre, macros))
            size = (int(reqd.group(1)), int(reqd.group(2)), int(reqd.group(3))) if reqd else None
            parameters = tuple(_parameter(i, p, macros, aggregates) for i, p in enumerate(pieces))
            kernels.append(OpenCLKernel(match.group("name"), parameters, size))
            resume = close + 1
    return tuple(kernels)


_BOUNDARY = re.compile(r"[;{}]|\b(?:__kernel|kernel)\b")


def _next_boundary(text: str, start: int) -> int:
    """Where the statement or the next kernel signature after ``start`` begins (len(text) if none)."""
    found = _BOUNDARY.search(text, start)
    return len(text) if found is None else found.start()


def _strip_comments(source: str) -> str:
    """``//`` and ``/* */`` comments replaced by a space, in one pass (an unclosed ``/*`` ends the text)."""
    out: list[str] = []
    position = 0
    while True:
        found = _COMMENT_START.search(source, position)
        if found is None:
            out.append(source[position:])
            break
        out.append(source[position : found.start()])
        out.append(" ")
        if found.group() == "//":
            end = source.find("\n", found.end())
            position = len(source) if end < 0 else end
        else:
            end = source.find("*/", found.end())
            if end < 0:
                break
            position = end + 2
    return "".join(out)
