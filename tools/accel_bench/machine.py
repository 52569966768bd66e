"""Machine and driver facts recorded with every result file."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from typing import Any

__all__ = ["machine_facts"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _version(module: str) -> str | None:
    try:
        from importlib import metadata

        return metadata.version(module)
    except Exception:
        return None


def _tool_version(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0] if text else None


def _load_average() -> list[float] | None:
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def machine_facts() -> dict[str, Any]:
    """CPU, cores, memory, OS, Python and binding versions, date (UTC), load average at start."""
    return {
        "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": _mem_total_bytes(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_average_at_start": _load_average(),
        "packages": {
            name: _version(name) for name in ("accelcore", "numpy", "pyopencl", "vulkan", "wgpu", "matplotlib")
        },
        "tools": {"glslangValidator": _tool_version(["glslangValidator", "--version"])},
        "env": {
            key: os.environ[key]
            for key in ("RUSTICL_ENABLE", "VK_ICD_FILENAMES", "OCL_ICD_VENDORS")
            if key in os.environ
        },
    }
