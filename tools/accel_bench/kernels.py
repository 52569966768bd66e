"""The tiny benchmark kernel, in OpenCL C and GLSL compute (→ SPIR-V at bench time).

Ours, raw OpenCL, raw Vulkan and wgpu-py all run this one kernel: one
read-write storage buffer of ``ELEMENTS`` u32, one workgroup of ``LOCAL_SIZE``
invocations, each adding 1 to its element. Its run time is negligible, so a
round trip measures submission and completion machinery, not the kernel.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = [
    "CL_ENTRY",
    "CL_SOURCE",
    "ELEMENTS",
    "GLSL_SOURCE",
    "LOCAL_SIZE",
    "SPIRV_ENTRY",
    "BuildToolMissing",
    "nonce",
    "tiny_spirv",
    "unique_cl_source",
    "unique_spirv",
    "with_source_extension",
]

LOCAL_SIZE = 64
ELEMENTS = 64
CL_ENTRY = "bench_add_one"
SPIRV_ENTRY = "main"

CL_SOURCE = """\
__kernel void bench_add_one(__global uint *data)
{
    data[get_global_id(0)] += 1u;
}
"""

GLSL_SOURCE = """\
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint v[]; } data;
void main() { data.v[gl_GlobalInvocationID.x] += 1u; }
"""


class BuildToolMissing(RuntimeError):
    """glslangValidator is not installed (Debian: glslang-tools)."""


@functools.cache
def tiny_spirv() -> bytes:
    """SPIR-V of :data:`GLSL_SOURCE`, compiled once per process with glslangValidator."""
    tool = shutil.which("glslangValidator")
    if tool is None:
        raise BuildToolMissing("glslangValidator not found; install glslang-tools to benchmark Vulkan and wgpu")
    with tempfile.TemporaryDirectory(prefix="accel-bench-") as tmp:
        src = Path(tmp) / "bench.comp"
        out = Path(tmp) / "bench.spv"
        src.write_text(GLSL_SOURCE, encoding="utf-8")
        done = subprocess.run(
            [tool, "-V", "--target-env", "vulkan1.0", str(src), "-o", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"glslangValidator failed: {done.stdout}{done.stderr}")
        return out.read_bytes()


def unique_cl_source(nonce: str) -> str:
    """The kernel source with a comment that defeats every compile cache (cold loads)."""
    return f"/* accel-bench cold load {nonce} */\n{CL_SOURCE}"


_PREAMBLE_OPCODES = {17, 10, 11, 14, 15, 16, 331}
"""OpCapability, OpExtension, OpExtInstImport, OpMemoryModel, OpEntryPoint,
OpExecutionMode and OpExecutionModeId: the sections that precede debug
instructions in the logical layout."""


def unique_spirv(nonce: str) -> bytes:
    """:func:`tiny_spirv` with an ``OpSourceExtension "<nonce>"`` inserted at the start of
    the debug section, so pipeline caches keyed by module bytes miss (cold loads)."""
    return with_source_extension(tiny_spirv(), nonce)


def with_source_extension(module: bytes, nonce: str) -> bytes:
    """``module`` with an ``OpSourceExtension "accel-bench-<nonce>"`` inserted at the start of
    the debug section: the same shader, other bytes (every cache keyed by the module misses)."""
    words = [int.from_bytes(module[i : i + 4], "little") for i in range(0, len(module), 4)]
    position = 5
    while position < len(words):
        count, opcode = words[position] >> 16, words[position] & 0xFFFF
        if opcode not in _PREAMBLE_OPCODES:
            break
        position += count
    text = f"accel-bench-{nonce}".encode() + b"\0"
    text += b"\0" * (-len(text) % 4)
    literal = [int.from_bytes(text[i : i + 4], "little") for i in range(0, len(text), 4)]
    instruction = [((1 + len(literal)) << 16) | 4, *literal]
    words[position:position] = instruction
    return b"".join(word.to_bytes(4, "little") for word in words)


def nonce() -> str:
    """A fresh random tag for cold loads."""
    return hashlib.sha256(os.urandom(16)).hexdigest()[:16]
