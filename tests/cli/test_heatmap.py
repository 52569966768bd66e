"""The numerics heat map of ``accel conformance --html``: parsed back from the page and checked cell by cell
against the report it was rendered from.

The report is ``tests/cli/data/numerics-report.json``, written by a real run on this machine's devices
(regenerate: ``RUSTICL_ENABLE=swrast .venv/bin/accel conformance opencl:1 opencl:2 vulkan:0 --suite numerics
--case numerics.add.f32 --case numerics.exp.f32 --case numerics.asin.f32 --case numerics.sin.f32 --case
numerics.fmod.f32 --case numerics.denormals.f32 --case numerics.subgroup-reduce-add.u32 --json
tests/cli/data/numerics-report.json``; Intel CPU, rusticl, lavapipe on 2026-12-01, regenerated after
flushed results stopped counting as ulp errors). It has ratios from 0.00013 (lavapipe sin, an
absolute-error limit) through 0.25 (Intel exp), 0.29 (rusticl exp) and 0.93 (lavapipe asin) to 0.974
(lavapipe exp, 3.05 of its 3.13 ulp at that x), bit-exact cases, a GLSL-less skip and a not-claimed skip;
a failing cell is made from it by raising one worst error past its limit.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from accel_cli.heatmap import AMBER, GREEN, GREY, RED
from accel_cli.html_report import matrix_to_html
from accel_cli.main import main
from accel_cli.matrix import matrix_from_json
from click.testing import CliRunner

REPORT = Path(__file__).parent / "data" / "numerics-report.json"


@dataclass
class Cell:
    attrs: dict[str, str]
    text: str = ""


class HeatTable(HTMLParser):
    """The ``table.heatmap`` of a page: its column titles (``thead``) and, per row title, its cells."""

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[str] = []
        self.rows: dict[str, list[Cell]] = {}
        self._inside = False
        self._body = False
        self._row: str | None = None
        self._header: str | None = None
        self._cell: Cell | None = None
        self._small = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "table" and "heatmap" in values.get("class", "").split():
            self._inside = True
        elif self._inside and tag == "tbody":
            self._body = True
        elif self._inside and tag == "th":
            self._header = ""
        elif self._inside and tag == "td":
            self._cell = Cell(values)
        elif self._inside and tag == "small":
            self._small = True

    def handle_endtag(self, tag: str) -> None:
        if not self._inside:
            return
        if tag == "table":
            self._inside = False
        elif tag == "small":
            self._small = False
        elif tag == "th" and self._header is not None:
            if self._body:
                self._row = self._header
                self.rows[self._row] = []
            elif self._header != "function":
                self.columns.append(self._header)
            self._header = None
        elif tag == "td" and self._cell is not None and self._row is not None:
            self.rows[self._row].append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.text += data
        elif self._header is not None and not self._small:
            self._header += data


def _parse(page: str) -> HeatTable:
    table = HeatTable()
    table.feed(page)
    return table


def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(REPORT.read_text())
    return document


def _rgb(style: str) -> tuple[int, int, int]:
    colour = style.removeprefix("background:").strip().lstrip("#")
    return int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16)


def _expected_ratio(case: dict[str, Any]) -> float | None:
    metrics = case.get("metrics") or {}
    worst = metrics.get("worst")
    if case["verdict"] == "skip" or not worst or metrics.get("correctly_rounded"):
        return None
    return float(worst["ulp"]) / float(worst["limit_ulp"])


def test_every_cell_shows_its_ratio_colour_and_measured_text() -> None:
    document = _document()
    table = _parse(matrix_to_html(matrix_from_json(document, str(REPORT))))
    labels = [run["label"] for run in document["runs"]]
    assert table.columns == labels
    seen = 0
    for column, run in enumerate(document["runs"]):
        for case in run["cases"]:
            cell = table.rows[case["id"].removeprefix("numerics.")][column]
            metrics = case.get("metrics") or {}
            assert cell.text == metrics["cell"], case["id"]
            rgb = _rgb(cell.attrs["style"])
            ratio = _expected_ratio(case)
            if case["verdict"] == "skip":
                assert rgb == GREY and cell.attrs["class"] == "heat-skip", case["id"]
            elif ratio is None:
                assert rgb == GREEN and cell.attrs["data-kind"] == "exact", case["id"]
                assert "data-ratio" not in cell.attrs
            else:
                assert abs(float(cell.attrs["data-ratio"]) - ratio) < 1e-5, case["id"]
                # linear from green (0) to amber (1)
                want = tuple(round(g + (a - g) * ratio) for g, a in zip(GREEN, AMBER, strict=True))
                assert rgb == want, (case["id"], rgb, want)
                assert "worst input:" in cell.attrs["title"] and "expected:" in cell.attrs["title"]
                assert "got:" in cell.attrs["title"] and "section: " in cell.attrs["title"]
            seen += 1
    assert seen == sum(len(run["cases"]) for run in document["runs"])
    # what the real run measured: lavapipe's exp near its limit is amber, Intel's and rusticl's green-ish,
    # GLSL has no fmod
    exp = table.rows["exp.f32"]
    assert float(exp[labels.index("vulkan:0")].attrs["data-ratio"]) > 0.97
    assert _rgb(exp[labels.index("vulkan:0")].attrs["style"])[0] >= 250
    assert float(exp[labels.index("opencl:1")].attrs["data-ratio"]) < 0.3
    assert float(exp[labels.index("opencl:2")].attrs["data-ratio"]) < 0.3  # its flushed zeros are not errors
    assert table.rows["fmod.f32"][labels.index("vulkan:0")].text == "not in GLSL"
    assert table.rows["subgroup-reduce-add.u32"][labels.index("opencl:2")].text == "not claimed"
    assert table.rows["denormals.f32"][labels.index("opencl:2")].text.startswith("FTZ (fma")


def test_a_cell_over_its_limit_and_a_bit_exact_mismatch_are_red() -> None:
    document = _document()
    broken = copy.deepcopy(document)
    labels = [run["label"] for run in broken["runs"]]
    intel = broken["runs"][labels.index("opencl:1")]
    for case in intel["cases"]:
        if case["id"] == "numerics.exp.f32":
            case["metrics"]["worst"]["ulp"] = 4.5
            case["metrics"]["cell"] = "4.5 ulp > 3 (12 values)"
            case["status"], case["verdict"] = "failed", "fail"
        if case["id"] == "numerics.denormals.f32":
            case["metrics"]["failures"] = 1
            case["metrics"]["cell"] = "FTZ (mul; results) — must keep"
            case["status"], case["verdict"] = "failed", "fail"
    table = _parse(matrix_to_html(matrix_from_json(broken, "broken")))
    exp = table.rows["exp.f32"][labels.index("opencl:1")]
    assert _rgb(exp.attrs["style"]) == RED and exp.attrs["class"] == "heat-bad"
    assert float(exp.attrs["data-ratio"]) == 1.5 and exp.text == "4.5 ulp > 3 (12 values)"
    denormals = table.rows["denormals.f32"][labels.index("opencl:1")]
    assert _rgb(denormals.attrs["style"]) == RED and denormals.text == "FTZ (mul; results) — must keep"
    # the other devices' cells are untouched
    assert _rgb(table.rows["exp.f32"][labels.index("vulkan:0")].attrs["style"]) != RED


def test_merged_reports_from_two_hosts_have_one_column_per_host_and_device(tmp_path: Path) -> None:
    paths = []
    for host in ("alpha", "beta"):
        document = _document()
        for run in document["runs"]:
            run["host"] = host
        path = tmp_path / f"{host}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    page = tmp_path / "merged.html"
    result = CliRunner().invoke(main, ["conformance", "--merge", *paths, "--html", str(page)])
    assert result.exit_code == 0, result.output
    table = _parse(page.read_text())
    labels = [run["label"] for run in _document()["runs"]]
    assert table.columns == [f"{host}/{label}" for host in ("alpha", "beta") for label in labels]
    exp = table.rows["exp.f32"]
    assert len(exp) == 2 * len(labels)
    assert (
        exp[labels.index("opencl:2")].attrs["data-ratio"]
        == exp[len(labels) + labels.index("opencl:2")].attrs["data-ratio"]
    )
