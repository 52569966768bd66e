"""The numerics heat map of the HTML report: numerics case by device, coloured by measured error ÷ limit.

Per cell (:func:`heat`): a case with a ulp limit (``metrics.worst.ulp`` over ``metrics.worst.limit_ulp``,
the worst value's error against its own limit, which the suite picks as the largest ratio) is coloured
on a scale from green (0) through amber (1, at the limit) and red beyond it; a correctly rounded or
otherwise bit-exact case (``correctly_rounded``: cr functions, fmod/fmin/fmax, the denormal report,
subgroups) is green when nothing mismatched, red otherwise; a skipped or not-claimed case is grey with
its text. A failed cell is red whatever its ratio. The text is the case's ``cell`` metric; the tooltip
has the ratio, the worst input, expected and got, and the section of the spec. Static HTML and CSS
(inline styles), no scripts. Columns are the matrix's runs, so a ``--merge`` of reports from several
machines is labelled ``host/device`` like the main table.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .matrix import CaseCell, Matrix

__all__ = ["AMBER", "GREEN", "GREY", "RED", "Heat", "colour_for", "heat", "numerics_heatmap"]

GREEN = (99, 190, 123)
AMBER = (255, 204, 77)
RED = (248, 105, 107)
GREY = (221, 221, 221)
NUMERICS_PREFIX = "numerics."

CSS = """
table.heatmap td{min-width:7rem;font-size:.8rem;color:#111}
table.heatmap td.heat-skip{color:#555}
.legend span{display:inline-block;padding:.1rem .5rem;margin-right:.3rem;border:1px solid #ccc;font-size:.8rem}
"""


@dataclass(frozen=True, slots=True)
class Heat:
    """One heat-map cell: ``kind`` ``ratio`` / ``exact`` / ``skip`` / ``fail``; ``ratio`` None unless measured."""

    kind: str
    ratio: float | None
    rgb: tuple[int, int, int]
    text: str
    tooltip: str

    @property
    def css_class(self) -> str:
        if self.kind == "skip":
            return "heat-skip"
        if self.rgb == RED:
            return "heat-bad"
        if self.ratio is not None and self.ratio > 0.5:
            return "heat-warn"
        return "heat-ok"

    @property
    def colour(self) -> str:
        return "#{:02x}{:02x}{:02x}".format(*self.rgb)


def colour_for(ratio: float) -> tuple[int, int, int]:
    """Green at 0, amber at 1 (linear between), red above 1 (and for NaN)."""
    if math.isnan(ratio) or ratio > 1.0:
        return RED
    t = max(0.0, ratio)
    return (
        round(GREEN[0] + (AMBER[0] - GREEN[0]) * t),
        round(GREEN[1] + (AMBER[1] - GREEN[1]) * t),
        round(GREEN[2] + (AMBER[2] - GREEN[2]) * t),
    )


def _number(value: Any) -> float | None:
    """A metric number (the suite writes non-finite values as strings ``inf`` / ``nan``)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _tooltip(cell: CaseCell, metrics: Mapping[str, Any], ratio: float | None) -> str:
    lines = [f"{cell.id}: {cell.verdict}"]
    worst = metrics.get("worst")
    if ratio is not None and isinstance(worst, Mapping):
        lines.append(f"error ÷ limit = {ratio:.3g} ({_number(worst.get('ulp'))} ulp / {worst.get('limit_ulp')} ulp)")
    if isinstance(worst, Mapping) and worst.get("inputs"):
        lines.append("worst input: " + ", ".join(str(x) for x in worst.get("inputs", [])))
        lines.append(f"expected: {worst.get('expected', '')}")
        lines.append(f"got: {worst.get('got', '')}")
    if metrics.get("limit"):
        lines.append(f"limit: {metrics['limit']}")
    if metrics.get("section"):
        lines.append(f"section: {metrics['section']}")
    if cell.verdict != "pass" and cell.reason.strip():
        lines.append(cell.reason.strip().splitlines()[0][:400])
    return "\n".join(lines)


def heat(cell: CaseCell) -> Heat:
    """The colour, ratio, text and tooltip of one numerics cell."""
    metrics = cell.metrics or {}
    text = cell.measured or cell.verdict
    if cell.verdict == "skip":
        return Heat("skip", None, GREY, text or "skip", _tooltip(cell, metrics, None))
    failed = cell.verdict in ("fail", "timeout", "crash", "xfail")
    worst = metrics.get("worst")
    ratio: float | None = None
    if isinstance(worst, Mapping) and not metrics.get("correctly_rounded"):
        error, limit = _number(worst.get("ulp")), _number(worst.get("limit_ulp"))
        if error is not None and limit is not None and limit > 0 and math.isfinite(limit):
            ratio = error / limit
    if ratio is not None:
        rgb = RED if failed else colour_for(ratio)
        return Heat("ratio", ratio, rgb, text, _tooltip(cell, metrics, ratio))
    if not metrics:
        return Heat("fail" if failed else "exact", None, RED if failed else GREEN, text, _tooltip(cell, metrics, None))
    mismatched = failed or bool(_number(metrics.get("failures")))
    return Heat("exact", None, RED if mismatched else GREEN, text, _tooltip(cell, metrics, None))


def numerics_heatmap(matrix: Matrix) -> str:
    """The heat-map section (a heading, a legend and a table), or '' when the matrix has no numerics case."""
    ids = [case_id for case_id in matrix.case_ids if case_id.startswith(NUMERICS_PREFIX)]
    if not ids:
        return ""
    runs = [run for run in matrix.runs if any(run.cell(case_id) for case_id in ids)]
    esc = html.escape
    legend = "".join(
        f'<span style="background:{"#{:02x}{:02x}{:02x}".format(*rgb)}">{esc(words)}</span>'
        for rgb, words in (
            (colour_for(0.0), "0"),
            (colour_for(0.5), "½ of the limit"),
            (colour_for(1.0), "at the limit"),
            (RED, "over it / mismatch"),
            (GREY, "skipped / not claimed"),
        )
    )
    parts = [
        '<h2 id="numerics-heatmap">Numerics heat map</h2>',
        "<p>Measured error ÷ the API's limit (bit-exact cases: green or red by mismatch); the text is the "
        f'measured cell, the tooltip the worst value and the spec section.</p><p class="legend">{legend}</p>',
        '<table class="heatmap"><thead><tr><th>function</th>',
    ]
    for run in runs:
        parts.append(
            f'<th title="{esc(run.device.name)} on {esc(run.host)}">{esc(run.label or run.device.device_id)}'
            f"<br><small>{esc(run.device.name)}</small></th>"
        )
    parts.append("</tr></thead><tbody>")
    for case_id in ids:
        parts.append(f'<tr><th class="case">{esc(case_id.removeprefix(NUMERICS_PREFIX))}</th>')
        for run in runs:
            cell = run.cell(case_id)
            if cell is None:
                parts.append('<td class="none" title="not run">—</td>')
                continue
            found = heat(cell)
            ratio = "" if found.ratio is None else f' data-ratio="{found.ratio:.6g}"'
            parts.append(
                f'<td class="{found.css_class}" style="background:{found.colour}" data-kind="{found.kind}"{ratio} '
                f'title="{esc(found.tooltip)}">{esc(found.text)}</td>'
            )
        parts.append("</tr>")
    parts.append("</tbody></table>")
    return "\n".join(parts)
