"""How long ``accel devices`` takes to list the devices, against ``clinfo -l`` (and ``vulkaninfo --summary``).

Each command is a fresh process, as a user runs it, stdout to /dev/null. The commands take turns
(one run of each per round, after ``warmup`` untimed rounds), so a change in the machine's load
hits all of them alike; the result is the median, min and max wall time of each over ``repeats``
rounds, and the ratios of medians. Python's bytecode caches are allowed (``PYTHONDONTWRITEBYTECODE``
is removed from the children's environment: an installed package has its ``.pyc`` files; the
warm-up rounds write them). The environment defaults ``accel`` sets for itself
(``RUSTICL_ENABLE=swrast``, ``OCL_ICD_VENDORS`` naming the checkout's vendors folder) are given to every command, so
``clinfo -l`` lists the same devices.

``python -m accel_bench.listing [--repeats N] [--json FILE] [--markdown FILE]`` times the ``accel_cli`` this
interpreter imports (the installed package, or what ``PYTHONPATH`` names), each command started in an empty
folder; no timed assertion anywhere (docs/benchmarks.md, "Listing devices").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelcore.devices.environment import apply_defaults

from .machine import machine_facts

__all__ = ["COMMANDS", "main", "measure", "render_markdown"]

SCHEMA = "accel-bench-listing/1"
TARGET_RATIO = 1.5
"""The tracker's target: ``accel devices`` within 1.5x ``clinfo -l``'s time (a documented number, not a test)."""

_OPENCL_ONLY = """
import pyopencl as cl
for platform in cl.get_platforms():
    try:
        platform.get_devices()
    except cl.Error:
        pass
"""
_VULKAN_ONLY = """
import vulkan as vk
app = vk.VkApplicationInfo(apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
for physical in vk.vkEnumeratePhysicalDevices(instance):
    vk.vkGetPhysicalDeviceProperties(physical)
vk.vkDestroyInstance(instance, None)
"""

COMMANDS: dict[str, list[str]] = {
    "accel devices": [sys.executable, "-m", "accel_cli", "devices"],
    "accel devices --json": [sys.executable, "-m", "accel_cli", "devices", "--json"],
    "clinfo -l": ["clinfo", "-l"],
    "vulkaninfo --summary": ["vulkaninfo", "--summary"],
    "python -c pass": [sys.executable, "-c", "pass"],
    "python: pyopencl enumeration only": [sys.executable, "-c", _OPENCL_ONLY],
    "python: pyopencl + vulkan enumeration only": [sys.executable, "-c", _OPENCL_ONLY + _VULKAN_ONLY],
}
"""What is timed; a command whose program is not installed is left out and named in ``missing``. The last two are
the floor of any Python listing over these bindings: the interpreter, numpy (pyopencl imports it), pyopencl and the
ICDs' own start-up, and the vulkan binding with one instance; nothing of accelcore."""


def _environment() -> dict[str, str]:
    apply_defaults()  # RUSTICL_ENABLE, and OCL_ICD_VENDORS naming the checkout's vendors folder: clinfo sees Intel too
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["COLUMNS"] = "160"
    return env


def _once(argv: Sequence[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return elapsed


def measure(repeats: int = 15, warmup: int = 2) -> dict[str, Any]:
    """The result document: per command the median/min/max seconds, and the ratios of medians."""
    env = _environment()
    machine = machine_facts()
    commands = {name: argv for name, argv in COMMANDS.items() if shutil.which(argv[0])}
    times: dict[str, list[float]] = {name: [] for name in commands}
    # An empty folder as the working directory: `python -m` puts it first on sys.path, so a checkout there would
    # shadow the accel_cli / accelcore this interpreter imports (PYTHONPATH or the installed package).
    with tempfile.TemporaryDirectory(prefix="accel-listing-") as cwd:
        for round_index in range(warmup + repeats):
            for name, argv in commands.items():
                elapsed = _once(argv, env, cwd)
                if round_index >= warmup:
                    times[name].append(elapsed)
    results = {
        name: {
            "median_s": statistics.median(values),
            "min_s": min(values),
            "max_s": max(values),
            "repeats": repeats,
            "warmup": warmup,
        }
        for name, values in times.items()
    }
    ratios: dict[str, float | None] = {}
    clinfo = results.get("clinfo -l", {}).get("median_s")
    for name in ("accel devices", "accel devices --json"):
        ours = results.get(name, {}).get("median_s")
        ratios[f"{name} / clinfo -l"] = ours / clinfo if ours and clinfo else None
    vulkaninfo = results.get("vulkaninfo --summary", {}).get("median_s")
    both = clinfo + vulkaninfo if clinfo and vulkaninfo else None
    ours = results.get("accel devices", {}).get("median_s")
    ratios["accel devices / (clinfo -l + vulkaninfo --summary)"] = ours / both if ours and both else None
    floor = results.get("python: pyopencl + vulkan enumeration only", {}).get("median_s")
    ratios["floor (pyopencl + vulkan enumeration only) / clinfo -l"] = floor / clinfo if floor and clinfo else None
    machine["load_average_at_end"] = list(os.getloadavg())
    return {
        "schema": SCHEMA,
        "machine": machine,
        "commands": {name: " ".join(argv) for name, argv in commands.items()},
        "missing": sorted(set(COMMANDS) - set(commands)),
        "results": results,
        "ratios": ratios,
        "target": {"ratio": TARGET_RATIO, "of": "accel devices / clinfo -l", "met": _met(ratios)},
    }


def _met(ratios: dict[str, float | None]) -> bool | None:
    ratio = ratios.get("accel devices / clinfo -l")
    return None if ratio is None else ratio <= TARGET_RATIO


def render_markdown(document: dict[str, Any]) -> str:
    """A table of the result document (what docs/benchmarks.md quotes)."""
    machine = document["machine"]
    repeats = next(iter(document["results"].values()))["repeats"] if document["results"] else 0
    lines = [
        f"Measured {machine['date_utc']} on {machine['cpu']} ({machine['cores']} cores), Python {machine['python']}, "
        f"load average {machine['load_average_at_start'][0]:.2f} at start and "
        f"{machine['load_average_at_end'][0]:.2f} at end; {repeats} rounds, commands taking turns.",
        "",
        "| command | median | min | max |",
        "|---|---:|---:|---:|",
    ]
    for name, result in document["results"].items():
        lines.append(
            f"| `{name}` | {result['median_s'] * 1000:.0f} ms | {result['min_s'] * 1000:.0f} ms | "
            f"{result['max_s'] * 1000:.0f} ms |"
        )
    lines.append("")
    for name, ratio in document["ratios"].items():
        lines.append(f"- {name}: " + ("not measured" if ratio is None else f"{ratio:.2f}x"))
    target = document["target"]
    verdict = {True: "met", False: "not met", None: "not measured"}[target["met"]]
    lines.append(f"- target ({target['of']} <= {target['ratio']}x): {verdict}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first (default 2)")
    parser.add_argument("--json", type=Path, default=None, help="write the result document here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the table here")
    args = parser.parse_args(argv)
    document = measure(args.repeats, args.warmup)
    if args.json is not None:
        args.json.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    table = render_markdown(document)
    if args.markdown is not None:
        args.markdown.write_text(table, encoding="utf-8")
    print(table, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
