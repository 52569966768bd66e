"""The conformance matrix as one self-contained HTML page (inline CSS, no scripts, no external assets)."""

from __future__ import annotations

import html

from .heatmap import CSS as HEATMAP_CSS
from .heatmap import numerics_heatmap
from .matrix import VERDICT_TEXT, Matrix

__all__ = ["matrix_to_html"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:center}
th.case{text-align:left;font-family:ui-monospace,monospace;font-weight:normal}
thead th{background:#f2f2f2;vertical-align:bottom}
.pass{background:#d4f7d4}.fail{background:#f9c0c0;font-weight:bold}.skip{background:#eee;color:#666}
.xfail{background:#fde8b0}.xpass{background:#c9e3ff;font-weight:bold}.none{color:#aaa}
.timeout,.crash{background:#f7a0a0;font-weight:bold}.flake{background:#ecd2f7}
.interrupted{background:#fff;color:#a11;font-style:italic}
dt{font-family:ui-monospace,monospace;margin-top:.6rem}dd{white-space:pre-wrap;margin-left:1.5rem}
.ok{color:#176f2c}.bad{color:#a11}
small.why{display:block;max-width:18rem;font-weight:normal;text-align:left}small.why a{color:#611}
"""

SLOWEST = 10
"""How many of the slowest cells the page lists."""
_FAILING = frozenset({"fail", "timeout", "crash", "xpass", "flake", "interrupted"})
"""Verdicts listed under "Failures", first, each with its reason shown in its cell."""
_CELL_REASON = 80
_SKIPS_LISTED = 12


def _headline(matrix: Matrix) -> str:
    if matrix.interrupted or matrix.interrupted_cells():
        return "INTERRUPTED (Ctrl-C): a partial run"
    return "UNEXPECTED RESULTS"


def matrix_to_html(matrix: Matrix, *, strict: bool = False, title: str = "accel conformance") -> str:
    esc = html.escape
    counts = matrix.counts()
    ok = matrix.ok(strict=strict)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title><style>{_CSS}{HEATMAP_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<p class="{"ok" if ok else "bad"}">{"OK" if ok else _headline(matrix)} — '
        + ", ".join(f"{v} {k}" for k, v in counts.items())
        + f" over {len(matrix.runs)} device(s)</p>",
        "<table><thead><tr><th>case</th>",
    ]
    for run in matrix.runs:
        driver = run.device.driver_version
        tip = f"{run.device.name}{f', driver {driver}' if driver else ''} on {run.host} ({run.outcome})"
        parts.append(
            f'<th title="{esc(tip)}">{esc(run.label or run.device.device_id)}'
            f"<br><small>{esc(run.device.name)}</small>"
            + (f"<br><small>driver {esc(driver)}</small>" if driver else "")
            + "</th>"
        )
    parts.append("</tr></thead><tbody>")
    failures: list[str] = []
    expected_notes: list[str] = []
    skips: dict[str, list[str]] = {}
    table_at = parts.index("<table><thead><tr><th>case</th>")
    for case_id in matrix.case_ids:
        parts.append(f'<tr><th class="case">{esc(case_id)}</th>')
        for run in matrix.runs:
            cell = run.cell(case_id)
            if cell is None:
                parts.append('<td class="none" title="not run">—</td>')
                continue
            reason = cell.reason
            if cell.expectation:
                expected = cell.expectation
                reason = f"expected failure ({expected.get('date', '')}): {expected.get('reason', '')}\n{reason}"
            measured = f"<br><small>{esc(cell.measured)}</small>" if cell.measured else ""
            for number, attempt in enumerate(cell.attempts, start=1):
                reason += f"\nattempt {number}: {attempt.get('status')} {attempt.get('reason', '')}".rstrip()
            anchor = f"r{len(failures) + len(expected_notes)}"
            shown = ""  # a failing cell says why in the cell itself, not only in a tooltip
            if cell.verdict in _FAILING and reason:
                first = reason.strip().splitlines()[0]
                short = first if len(first) <= _CELL_REASON else first[: _CELL_REASON - 1] + "…"
                shown = f'<br><small class="why"><a href="#{anchor}">{esc(short)}</a></small>'
            parts.append(
                f'<td class="{esc(cell.verdict)}" title="{esc(reason)}">'
                f"{VERDICT_TEXT.get(cell.verdict, esc(cell.verdict))}{measured}{shown}</td>"
            )
            if cell.verdict == "pass" or not reason:
                continue
            label = f"{esc(run.label)} · {esc(case_id)} · {esc(cell.verdict)}"
            if cell.verdict in _FAILING:
                failures.append(f'<dt id="{anchor}">{label}</dt><dd>{esc(reason)}</dd>')
            elif cell.verdict == "skip":
                skips.setdefault(reason.strip(), []).append(f"{run.label} · {case_id}")
            else:
                expected_notes.append(f'<dt id="{anchor}">{label}</dt><dd>{esc(reason)}</dd>')
        parts.append("</tr>")
    parts.append("</tbody></table>")
    if failures:  # what needs a look comes first, above the matrix
        parts.insert(table_at, "<h2>Failures</h2><dl>" + "".join(failures) + "</dl>")
    heatmap = numerics_heatmap(matrix)
    if heatmap:
        parts.append(heatmap)
    if expected_notes:
        parts.append("<h2>Expected failures and other outcomes</h2><dl>" + "".join(expected_notes) + "</dl>")
    if skips:
        parts.append("<h2>Skips, by reason</h2><dl>")
        for why, cells in sorted(skips.items(), key=lambda item: -len(item[1])):
            listed = ", ".join(esc(c) for c in cells[:_SKIPS_LISTED])
            more = f" and {len(cells) - _SKIPS_LISTED} more" if len(cells) > _SKIPS_LISTED else ""
            parts.append(f"<dt>{esc(why)} — {len(cells)} cell(s)</dt><dd>{listed}{more}</dd>")
        parts.append("</dl>")
    slowest = sorted(
        (
            (cell.duration_s, run.label or run.device.device_id, cell.id, cell.verdict)
            for run in matrix.runs
            for cell in run.cases
        ),
        key=lambda row: (-row[0], row[1], row[2]),
    )[:SLOWEST]
    if slowest:
        parts.append(
            '<h2>Slowest cases</h2><table class="slowest"><thead><tr><th>seconds</th><th>device</th>'
            "<th>case</th><th>verdict</th></tr></thead><tbody>"
        )
        for seconds, label, case_id, verdict in slowest:
            parts.append(
                f"<tr><td>{seconds:.3f}</td><td>{esc(label)}</td><td>{esc(case_id)}</td>"
                f'<td class="{esc(verdict)}">{esc(verdict)}</td></tr>'
            )
        parts.append("</tbody></table>")
    parts.append("<h2>Devices</h2><ul>")
    for run in matrix.runs:
        parts.append(
            f"<li><b>{esc(run.label)}</b>: {esc(run.device.name)}"
            + (f", driver {esc(run.device.driver_version)}" if run.device.driver_version else "")
            + f" (uuid {esc(run.device.uuid.hex())}) on "
            f"{esc(run.host)} — {esc(run.outcome)}{': ' + esc(run.detail) if run.detail else ''}</li>"
        )
    parts.append(f"</ul><p><small>generated {esc(matrix.generated)}</small></p></body></html>")
    return "\n".join(parts) + "\n"
