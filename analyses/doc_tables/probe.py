"""docs/probe.md's generated tables from `benchmarks/probe_ladder.py`'s ladder.json."""

from __future__ import annotations

import json
from pathlib import Path

from analyses.doc_tables.markdown import table


def _rate(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def ladder_table(path: Path) -> str:
    """One row per model: verbatim rate per level on the targets, on holdout authors at the last
    level, semantic accuracy and refusal rates, probe rows per second."""
    d = json.loads(path.read_text())
    s, counts = d["summary"], d["rows_per_model"]
    levels, first, last = s["settings"]["levels"], s["settings"]["levels"][0], s["settings"]["levels"][-1]
    rows = []
    for spec, m in s["models"].items():
        lv = m["levels"]
        hold = m["groups"].get("holdout", {}).get(last, {}).get("verbatim_rate")
        rows.append([spec.rsplit("/", 1)[-1], *(_rate(lv[x]["verbatim_rate"]) for x in levels), _rate(hold),
                     _rate(lv[last]["semantic_acc"]), _rate(lv[first]["refusal_rate"]), _rate(lv[last]["refusal_rate"]),
                     f"{counts[spec] / s['settings']['seconds'][spec]:.0f}"])
    return table(["model", *levels, f"holdout {last}", "semantic acc", f"refusal {first}", f"refusal {last}",
                  "rows/s"], rows)
