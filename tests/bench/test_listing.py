"""``accel_bench.listing``: the document and table of the ``accel devices`` / ``clinfo -l`` timing (structure only;
no time is asserted, docs/benchmarks.md "Listing devices")."""

from __future__ import annotations

import json
from pathlib import Path

from accel_bench import listing


def test_one_round_gives_every_installed_command_its_numbers_and_the_ratios(tmp_path: Path) -> None:
    out, table = tmp_path / "listing.json", tmp_path / "listing.md"
    assert listing.main(["--repeats", "1", "--warmup", "0", "--json", str(out), "--markdown", str(table)]) == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["schema"] == listing.SCHEMA
    assert set(document["results"]) | set(document["missing"]) == set(listing.COMMANDS)
    assert {"accel devices", "accel devices --json", "python -c pass"} <= set(document["results"])
    for result in document["results"].values():
        assert result["repeats"] == 1 and 0 < result["min_s"] <= result["median_s"] <= result["max_s"]
    ratio = document["ratios"]["accel devices / clinfo -l"]
    if "clinfo -l" in document["missing"]:
        assert ratio is None and document["target"]["met"] is None
    else:
        assert ratio == document["results"]["accel devices"]["median_s"] / document["results"]["clinfo -l"]["median_s"]
        assert document["target"]["met"] == (ratio <= listing.TARGET_RATIO)
    text = table.read_text(encoding="utf-8")
    for name in document["results"]:
        assert f"| `{name}` |" in text
    assert "target (accel devices / clinfo -l <= 1.5x)" in text
