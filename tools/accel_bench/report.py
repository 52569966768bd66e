"""Markdown table and PNG plots, regenerated from a result JSON alone.

``regenerate(json_path, out_dir)`` needs nothing but the file: no driver, no
device. Plots use matplotlib's Agg backend. Ratios: transfers are GB/s ratios
(higher is better for ours); round trips are time ratios (lower is better).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .targets import TARGETS, verdicts

__all__ = ["load", "markdown_name", "regenerate", "render_markdown", "render_plots"]

MIB = 1 << 20


def load(json_path: str | Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(Path(json_path).read_text(encoding="utf-8"))
    if document.get("schema") != "accel-bench/1":
        raise ValueError(f"{json_path}: not an accel-bench/1 result file (schema {document.get('schema')!r})")
    return document


def _size(nbytes: int) -> str:
    if nbytes >= MIB:
        return f"{nbytes // MIB} MiB"
    return f"{nbytes // 1024} KiB"


def _gbps(stat: dict[str, Any] | None) -> str:
    if not stat:
        return "-"
    if "not_measured" in stat:
        return "n/m"
    return f"{stat['gbps']:.2f} ({stat['gbps_min']:.2f}-{stat['gbps_max']:.2f})"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _scaled(stat: dict[str, Any] | None, scale: float, digits: int) -> str:
    if not stat or "median_s" not in stat:
        return "n/m" if stat else "-"
    text = f"{stat['median_s'] * scale:.{digits}f}"
    if "min_s" in stat and "max_s" in stat:
        text += f" ({stat['min_s'] * scale:.{digits}f}-{stat['max_s'] * scale:.{digits}f})"
    return text


def _us(stat: dict[str, Any] | None) -> str:
    return _scaled(stat, 1e6, 1)


def _ms(stat: dict[str, Any] | None) -> str:
    return _scaled(stat, 1e3, 2)


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= MIB:
        return f"{value / MIB:.1f} MiB"
    if abs(value) >= 1024:
        return f"{value / 1024:.1f} KiB"
    return f"{value} B"


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _met(verdict: dict[str, Any]) -> str:
    if verdict["met"] is None:
        return "not measured"
    return "met" if verdict["met"] else "**missed**"


def _reload_section(reload: dict[str, Any]) -> list[str]:
    """Item 6: re-load with changed arguments (ms; raw per-call operations in µs)."""
    out = [
        "### Re-load with changed arguments (median and min-max; ours through the engine, fresh instance)",
        "",
        f"Kernel: {reload.get('kernel', '-')}.",
        "",
    ]
    for side, reason in reload.get("not_measured", {}).items():
        out += [f"{side} not measured: {reason}", ""]
    rows = []
    for side in ("ours", "raw"):
        for name, entry in reload.get(side, {}).items():
            counts = entry.get("counts")
            counted = ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else ""
            time_text = f"{_us(entry)} µs" if entry["median_s"] < 1e-4 else f"{_ms(entry)} ms"
            rows.append([side, name, time_text, counted, entry["what"]])
    if rows:
        out += _table(["side", "operation", "median (min-max)", "counted (timed and warm-up calls)", "what"], rows)
    ratios = reload.get("ratios", {})
    if ratios:
        out += _table(["ratio of medians", "value"], ([label, f"{value:.2f}"] for label, value in ratios.items()))
    return out


def _highlevel_section(result: dict[str, Any]) -> list[str]:
    """Item 7: the high-level call against the peer library's call (µs; time ratios of medians)."""
    peer = result.get("peer", "peer")
    out = [
        f"### High-level call against {peer} (µs, median and min-max; interleaved rounds)",
        "",
        f"Kernel: {result.get('kernel', '-')}; a = {result.get('scalar_a', '-')}, the same every call.",
        "",
    ]
    wgpu = result.get("wgpu")
    if wgpu:
        out += [f"wgpu adapter: {wgpu['adapter'].get('description', '')}; waits with {wgpu['wait_method']}", ""]
    rows = []
    for size, entry in result.get("sizes", {}).items():
        for variant in result.get("variants", []):
            ours, other = entry["ours"][variant], entry[peer][variant]
            verdict = next(
                (v for v in result.get("verdicts", []) if v["size"] == int(size) and v["variant"] == variant), None
            )
            rows.append(
                [
                    f"{int(size):,} f32",
                    variant,
                    _us(ours),
                    _us(other),
                    _ratio(entry["ratios"].get(f"ours / {peer}, {variant}")),
                    "-" if verdict is None else _met(verdict),
                    "yes" if ours.get("verified") and other.get("verified") else "**no**",
                ]
            )
    if rows:
        bound = next((v["target"] for v in result.get("verdicts", [])), "")
        out += [f"Target: {bound}.", ""]
        out += _table(["size", "variant", "ours", peer, f"ours / {peer}", "target", "results checked"], rows)
    repack = [
        [f"{int(size):,} f32", _us(entry["ours_repack"])]
        for size, entry in result.get("sizes", {}).items()
        if "ours_repack" in entry
    ]
    if repack:
        out += ["Per-call repack of ours (`pack_module` + `write_package`, timed alone, no profiler):", ""]
        out += _table(["size", "µs"], repack)
    profile = result.get("profile")
    if profile:
        out += [
            f"#### Where the high-level call's time goes (cProfile, {profile['elements']:,} f32; "
            "profiled times are inflated, compare the shares)",
            "",
        ]
        variants = [v for v in result.get("variants", []) if v in profile]
        spots = list(dict.fromkeys(label for v in variants for label in profile[v]["spots_us"]))
        header = ["part of the call"]
        for v in variants:
            header += [f"{v} µs", f"{v} share"]
        table_rows = []
        for label in spots:
            row = [label]
            for v in variants:
                us = profile[v]["spots_us"].get(label)
                share = profile[v]["spots_share"].get(label)
                row += ["-" if us is None else f"{us:.1f}", "-" if share is None else f"{share:.0%}"]
            table_rows.append(row)
        out += _table(header, table_rows)
    return out


def _device_section(device: dict[str, Any], device_verdicts: list[dict[str, Any]], partial: bool = False) -> list[str]:
    out = [f"## {device['device_id']} — {device['name']}", ""]
    driver = device.get("driver", {})
    if driver:
        out += [", ".join(f"{k}: {v}" for k, v in driver.items()), ""]
    if device.get("ours_status") != "measured":
        out += [f"Ours not measured: {device.get('ours_status')}", ""]
    for note in device.get("notes", []):
        out += [f"- {note}"]
    for error in device.get("errors", []):
        out += [f"- error: {error}"]
    out += [""]

    if any(v["met"] is not None for v in device_verdicts) or not partial:
        out += ["### Targets", ""]
        out += _table(
            ["target", "value", "verdict", "detail"],
            (
                [TARGETS[v["target"]], "-" if v["value"] is None else f"{v['value']:.2f}", _met(v), v["detail"]]
                for v in device_verdicts
            ),
        )

    rows = device.get("transfers", [])
    if rows:
        out += ["### Transfers (GB/s, median and min-max; ratios of medians)", ""]
        out += _table(
            ["domain", "direction", "size", "ours", "raw", "memcpy", "ours/raw", "ours/memcpy"],
            (
                [
                    r["domain"],
                    "host→buffer" if r["direction"] == "write" else "buffer→host",
                    _size(r["bytes"]),
                    _gbps(r.get("ours")),
                    _gbps(r.get("raw")),
                    _gbps(r.get("memcpy")),
                    _ratio(r.get("ratio_ours_raw")),
                    _ratio(r.get("ratio_ours_memcpy")),
                ]
                for r in rows
            ),
        )
        reasons = sorted(
            {
                f"{side}: {r[side]['not_measured']}"
                for r in rows
                for side in ("ours", "raw")
                if "not_measured" in r.get(side, {})
            }
        )
        out += [f"n/m = not measured - {reason}" for reason in reasons] + ([""] if reasons else [])

    trips = device.get("round_trip", {})
    if trips:
        ours = trips.get("ours", {}).get("median_s")
        out += ["### Dispatch round trip (µs, submit → terminal, tiny kernel)", ""]
        out += _table(
            ["side", "median (min-max)", "ours / side", "kernel ran every time"],
            (
                [
                    name,
                    _us(stat),
                    _ratio(ours / stat["median_s"]) if ours and stat.get("median_s") else "-",
                    {True: "yes", False: "**no**", None: "-"}[stat.get("verified")],
                ]
                for name, stat in trips.items()
            ),
        )
    sustained = device.get("sustained", {})
    if sustained:
        out += ["### Sustained submissions", ""]
        out += _table(
            ["side", "submits", "in flight ≤", "submits/s median (min-max)", "kernel ran every time"],
            (
                [
                    name,
                    str(s.get("submits", "-")),
                    str(s.get("window", "-")),
                    f"{s['per_s']:.0f} ({s['per_s_min']:.0f}-{s['per_s_max']:.0f})" if "per_s" in s else "n/m",
                    {True: "yes", False: "**no**", None: "-"}[s.get("verified")],
                ]
                for name, s in sustained.items()
            ),
        )
    groups = device.get("sustained_in_flight") or {}
    if groups:
        window = device.get("sustained_window") or {}
        out += [
            "### Sustained submissions by in-flight limit",
            "",
            f"provider window: {window.get('size', '-')} ({window.get('what', 'not recorded')})",
            "",
        ]
        others = ("raw", "raw-gated", "provider-direct")
        rows = []
        for limit, group in groups.items():
            ours_per_s = group.get("ours", {}).get("per_s")
            for name, s in group.items():
                rows.append(
                    [
                        limit,
                        name,
                        str(s.get("submits", "-")),
                        f"{s['per_s']:.0f} ({s['per_s_min']:.0f}-{s['per_s_max']:.0f})" if "per_s" in s else "n/m",
                        _ratio(ours_per_s / group[name]["per_s"])
                        if name in others and ours_per_s and group[name].get("per_s")
                        else "-",
                        {True: "yes", False: "**no**", None: "-"}[s.get("verified")],
                    ]
                )
        out += _table(
            ["in flight ≤", "side", "submits", "submits/s median (min-max)", "ours / side", "kernel ran every time"],
            rows,
        )
    overhead = device.get("overhead", {})
    if overhead:
        out += [
            "### Engine overhead (us per call)",
            "",
            "engine-own = engine time minus the time spent inside the provider in the same call, on the"
            " calling thread's CPU clock (the headline) and on the wall clock; engine / provider direct ="
            " the same call timed through the engine and on a second provider instance (cross-check).",
            "",
        ]
        if "not_measured" in overhead:
            out += [f"not measured: {overhead['not_measured']}", ""]
        else:
            table_rows = []
            for label, key, engine_key, provider_key, diff_key in (
                ("submit", "submit", "engine_submit", "provider_submit", "submit_vs_direct_us"),
                ("poll, pending event", "poll", "engine_poll", "provider_poll", "poll_vs_direct_us"),
                (
                    "poll, terminal event (engine answers from its cache)",
                    "poll_terminal",
                    "engine_poll_terminal",
                    "provider_poll_terminal",
                    "poll_terminal_vs_direct_us",
                ),
            ):
                table_rows.append(
                    [
                        label,
                        f"{overhead[key + '_us']:.2f}" if key + "_us" in overhead else "n/m",
                        f"{overhead[key + '_wall_us']:.2f}" if key + "_wall_us" in overhead else "n/m",
                        _us(overhead.get(engine_key)),
                        _us(overhead.get(provider_key)),
                        f"{overhead[diff_key]:.2f}" if diff_key in overhead else "n/m",
                    ]
                )
            out += _table(
                ["call", "engine-own CPU", "engine-own wall", "engine", "provider direct", "engine - direct"],
                table_rows,
            )
            if "proxy_cost_us" in overhead:
                out += [
                    f"The timing proxy's own cost ({overhead['proxy_cost_us']:.2f} us CPU,"
                    f" {overhead.get('proxy_cost_wall_us', 0.0):.2f} us wall per call) is included in engine-own.",
                    "",
                ]
    loads = device.get("program_load", {})
    if loads:
        out += ["### Program load (ms, cold = unique module, warm = same module again)", ""]
        table_rows = []
        for side, kinds in loads.items():
            for kind, entry in kinds.items():
                if "not_measured" in entry:
                    table_rows.append([side, kind, "n/m", "n/m", entry["not_measured"]])
                else:
                    table_rows.append(
                        [side, kind, _ms(entry.get("cold")), _ms(entry.get("warm")), _ratio(entry.get("speedup"))]
                    )
        out += _table(["side", "module", "cold", "warm", "cold / warm"], table_rows)
    reload = device.get("reload_arguments", {})
    if reload:
        out += _reload_section(reload)
    highlevel = device.get("highlevel", {})
    if highlevel:
        out += _highlevel_section(highlevel)
    copies = device.get("copy_freedom", {})
    if copies:
        out += ["### Copy-freedom (tracemalloc; bytes above the baseline)", ""]
        table_rows = []
        for name, entry in copies.items():
            if "not_measured" in entry:
                table_rows.append([name, "n/m", "n/m", "n/m", "n/m", entry["not_measured"]])
                continue
            table_rows.append(
                [
                    name,
                    _bytes(entry["peak_bytes"]),
                    _bytes(entry["live_bytes_after_gc"]),
                    str(entry["live_blocks_after_gc"]),
                    _bytes(entry.get("rss_peak_growth_bytes")),
                    entry.get("what", ""),
                ]
            )
        out += _table(["run", "traced peak", "live after", "live blocks after", "RSS peak growth", "what"], table_rows)
    return out


def render_markdown(document: dict[str, Any]) -> str:
    machine = document["machine"]
    lines = [
        "# Benchmark results",
        "",
        f"Generated from `{document.get('json_name', 'results.json')}` by `accel_bench.report` — do not edit by hand.",
        "",
        f"- date (UTC): {machine.get('date_utc')}",
        f"- CPU: {machine.get('cpu')}, {machine.get('cores')} cores, {_bytes(machine.get('memory_bytes'))} RAM",
        f"- OS: {machine.get('os')}; Python {machine.get('python')}",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in machine.get("packages", {}).items()),
        f"- load average at start: {machine.get('load_average_at_start')}",
        *([f"- load average at end: {document['load_average_at_end']}"] if "load_average_at_end" in document else []),
        f"- mode: {'quick' if document['config']['quick'] else 'full'}",
        *([f"- items (a partial run): {', '.join(document['items'])}"] if document.get("items") else []),
        "",
    ]
    for note in document.get("notes", []):
        lines.append(f"> {note}")
    if document.get("notes"):
        lines.append("")
    all_verdicts = verdicts(document)
    partial = bool(document.get("items"))
    measured = any(v["met"] is not None for found in all_verdicts.values() for v in found)
    if all_verdicts and (measured or not partial):
        header = ["target", *all_verdicts]
        names = list(TARGETS)
        rows = []
        for name in names:
            row = [TARGETS[name]]
            for device_verdicts in all_verdicts.values():
                match = [v for v in device_verdicts if v["target"] == name]
                if not match:
                    row.append("-")
                else:
                    v = match[0]
                    value = "" if v["value"] is None else f"{v['value']:.2f} "
                    row.append(f"{value}{_met(v)}")
            rows.append(row)
        lines += ["## Targets at a glance", "", *_table(header, rows)]
    for device in document.get("devices", []):
        lines += _device_section(device, all_verdicts.get(device["device_id"], []), partial)
    return "\n".join(lines).rstrip() + "\n"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def render_plots(document: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the PNGs; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    devices = document.get("devices", [])

    for device in devices:
        rows = device.get("transfers", [])
        if not rows:
            continue
        domains = sorted({r["domain"] for r in rows}, key=["host", "device", "shared"].index)
        fig, axes = plt.subplots(2, len(domains), figsize=(4.2 * len(domains), 6.5), squeeze=False, sharey=True)
        for col, domain in enumerate(domains):
            for row_index, direction in enumerate(("write", "read")):
                ax = axes[row_index][col]
                picked = sorted(
                    (r for r in rows if r["domain"] == domain and r["direction"] == direction), key=lambda r: r["bytes"]
                )
                sizes = [r["bytes"] for r in picked]
                for side, style in (("ours", "o-"), ("raw", "s--"), ("memcpy", "^:")):
                    points = [(s, r[side]) for s, r in zip(sizes, picked, strict=True) if "gbps" in r[side]]
                    if not points:
                        continue
                    xs = [p[0] for p in points]
                    ys = [p[1]["gbps"] for p in points]
                    low = [p[1]["gbps"] - p[1]["gbps_min"] for p in points]
                    high = [p[1]["gbps_max"] - p[1]["gbps"] for p in points]
                    ax.errorbar(xs, ys, yerr=[low, high], fmt=style, capsize=3, label=side)
                ax.set_xscale("log", base=2)
                ax.set_xticks(sizes, [_size(s) for s in sizes])
                ax.set_title(f"{domain}, {'host→buffer' if direction == 'write' else 'buffer→host'}")
                ax.grid(True, alpha=0.3)
                if col == 0:
                    ax.set_ylabel("GB/s")
                ax.legend(fontsize=8)
        fig.suptitle(f"Transfers — {device['device_id']} ({device['name']})")
        fig.tight_layout()
        path = out / f"transfers_{_safe(device['device_id'])}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)

    def bars(
        key: str,
        value_of: Callable[[dict[str, Any] | None], float | None],
        ylabel: str,
        title: str,
        filename: str,
        log: bool = False,
    ) -> None:
        labels = [d["device_id"] for d in devices if d.get(key)]
        if not labels:
            return
        sides = sorted({s for d in devices for s in d.get(key, {}) if value_of(d[key][s]) is not None})
        if not sides:
            return
        fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(labels) * max(1, len(sides)) / 2), 4.2))
        width = 0.8 / len(sides)
        for i, side in enumerate(sides):
            values = []
            for d in devices:
                if not d.get(key):
                    continue
                stat = d[key].get(side)
                values.append(value_of(stat) if stat else None)
            xs = [j + i * width for j, v in enumerate(values) if v is not None]
            ys = [v for v in values if v is not None]
            ax.bar(xs, ys, width=width, label=side)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))], labels)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / filename
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)

    bars(
        "round_trip",
        lambda s: s.get("median_s", 0) * 1e6 if s and "median_s" in s else None,
        "µs (median)",
        "Dispatch round trip, tiny kernel (lower is better)",
        "round_trip.png",
        log=True,
    )
    bars(
        "sustained",
        lambda s: s.get("per_s") if s else None,
        "submissions / s (median)",
        "Sustained submissions (higher is better)",
        "sustained.png",
        log=True,
    )

    overhead_devices = [d for d in devices if "submit_us" in d.get("overhead", {})]
    if overhead_devices:
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        calls = (("submit_us", "submit", 25.0), ("poll_us", "poll (pending)", 5.0))
        width = 0.8 / len(overhead_devices)
        for i, d in enumerate(overhead_devices):
            ys = [d["overhead"].get(key, 0.0) for key, _, _ in calls]
            ax.bar([j + i * width for j in range(len(calls))], ys, width=width, label=d["device_id"])
        for j, (_, _, bound) in enumerate(calls):
            ax.hlines(bound, j - width / 2, j + 0.8 - width / 2, colors="red", linestyles="dashed")
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(calls))], [label for _, label, _ in calls])
        ax.set_ylabel("engine-own us per call (median)")
        ax.set_title("Engine overhead, provider time subtracted (dashed: target)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / "engine_overhead.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)

    load_devices = [d for d in devices if d.get("program_load")]
    if load_devices:
        labels: list[str] = []
        cold: list[float] = []
        warm: list[float] = []
        for d in load_devices:
            for side, kinds in d["program_load"].items():
                for kind, entry in kinds.items():
                    if "cold" in entry and "warm" in entry:
                        labels.append(f"{d['device_id']}\n{side} {kind}")
                        cold.append(entry["cold"]["median_s"] * 1e3)
                        warm.append(entry["warm"]["median_s"] * 1e3)
        if labels:
            fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(labels)), 4.5))
            xs = list(range(len(labels)))
            ax.bar([x - 0.2 for x in xs], cold, width=0.4, label="cold")
            ax.bar([x + 0.2 for x in xs], warm, width=0.4, label="warm")
            ax.set_xticks(xs, labels, fontsize=7, rotation=30, ha="right")
            ax.set_yscale("log")
            ax.set_ylabel("ms (median)")
            ax.set_title("Program load, cold vs warm")
            ax.legend()
            fig.tight_layout()
            path = out / "program_load.png"
            fig.savefig(path, dpi=90)
            plt.close(fig)
            written.append(path)

    copy_devices = [d for d in devices if d.get("copy_freedom")]
    if copy_devices:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        names = sorted({n for d in copy_devices for n, e in d["copy_freedom"].items() if "peak_bytes" in e})
        width = 0.8 / max(1, len(copy_devices))
        for i, d in enumerate(copy_devices):
            values = [d["copy_freedom"].get(n, {}).get("peak_bytes") for n in names]
            xs = [j + i * width for j, v in enumerate(values) if v is not None]
            ys = [max(v, 1) / 1024 for v in values if v is not None]
            ax.bar(xs, ys, width=width, label=d["device_id"])
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))], names, rotation=20, fontsize=7, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("tracemalloc peak, KiB")
        ax.set_title("Copy-freedom: traced peak does not grow with size or count")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / "copy_freedom.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def markdown_name(document: dict[str, Any], json_path: str | Path) -> str:
    """``results.md`` for a full run; ``<json stem>.md`` for a partial one (``items`` recorded;
    ``results-partial.md`` when the JSON is itself called results.json), so a partial run never
    overwrites a full run's table."""
    if not document.get("items"):
        return "results.md"
    stem = Path(json_path).stem
    return "results-partial.md" if stem == "results" else f"{stem}.md"


def regenerate(json_path: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Rewrite the table (see :func:`markdown_name`) and the PNGs in ``out_dir`` (default: the JSON's
    folder) from the JSON alone. A partial run has no data for most plots; only those it has are drawn."""
    document = load(json_path)
    document.setdefault("json_name", Path(json_path).name)
    target = Path(out_dir) if out_dir is not None else Path(json_path).parent
    target.mkdir(parents=True, exist_ok=True)
    markdown = target / markdown_name(document, json_path)
    markdown.write_text(render_markdown(document), encoding="utf-8")
    return [markdown, *render_plots(document, target)]
