"""One audit run: every variant x style x state on one model, written to an output folder."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from checkpoints.lmlm.db import FactDB
from checkpoints.lmlm.prompts import STYLES
from uds_analyses.audit.protocol import AuditSettings, FactResult, audit_rows
from uds_analyses.audit.published import side_by_side
from uds_analyses.audit.rates import attribution, cells, variant_summary
from uds_analyses.audit.report import plot_attribution, write_csv, write_jsonl
from uds_analyses.audit.sources import AuditSet

LOOKUP = "difflib.SequenceMatcher ratio, mean of subject and relation (casefolded), best candidate >= threshold"


@dataclass
class AuditRun:
    """What `run_audit` measured: per-fact results, lookup traces, {(variant, style): (prompt file,
    database file)} and the seconds it took."""
    facts: list[FactResult]
    traces: list[dict]
    files: dict
    seconds: float


def run_audit(model, tok, sets: list[AuditSet], dbs: list[FactDB], settings: AuditSettings) -> AuditRun:
    """Every prompt style of every set through the three states; `dbs`: each set's database,
    opened (`AuditSet.open_db`)."""
    t0 = time.time()
    facts: list[FactResult] = []
    traces: list[dict] = []
    files = {}
    for s, db in zip(sets, dbs):
        for style, rows in s.prompts.items():
            rows = spaced(rows, settings.limit)
            facts += audit_rows(model, tok, db, rows, s.variant, settings, traces)
            files[(s.variant, style)] = (s.prompt_dir / f"prompts_{STYLES[style]}.jsonl", s.db_path)
    return AuditRun(facts, traces, files, time.time() - t0)


def spaced(rows: list, limit: int | None) -> list:
    """`limit` rows spread evenly over `rows` (all when None): the published files list their
    base facts first and the noise / collision targets last, so a head would miss the latter."""
    if not limit or limit >= len(rows):
        return rows
    return [rows[i * len(rows) // limit] for i in range(limit)]


def write_outputs(out: Path, model_spec: str, db_arg: str, run: AuditRun, settings: AuditSettings,
                  published: Path | None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    facts, traces, files = run.facts, run.traces, run.files
    grid = cells(facts)
    summary = {"model": model_spec, "db": db_arg, "variants": variant_summary(facts), "cells": grid,
               "attribution": attribution(facts),
               "settings": {"threshold": settings.threshold, "lookup": LOOKUP, "limit": settings.limit,
                            "chat": settings.chat, "system_prompt": settings.system_prompt,
                            "max_new_tokens": settings.max_new_tokens, "batch_size": settings.batch_size},
               "seconds": round(run.seconds, 1), "n_traces": len(traces)}
    write_csv(out / "grid.csv", grid)
    write_jsonl(out / "traces.jsonl", traces)
    write_jsonl(out / "facts.jsonl", [f.row() for f in facts])
    plot_attribution(out / "attribution.png", summary["attribution"], f"{model_spec} on {Path(db_arg).name}",
                     {v: d["chance"] for v, d in summary["variants"].items()})
    if published is not None and published.is_file():
        rows = side_by_side(grid, files, published, published.with_name("cross_state_metrics.csv"))
        if rows:
            write_csv(out / "published_comparison.csv", rows)
            summary["published_cells"] = len(rows)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary
