"""The leaky LMLM's audit beside `lmlm` and `lmlm_parametric`: compact per-fact rows
with the leaked-subset flag, and leakage on the leaked subset vs on the other target facts."""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from pathlib import Path
from statistics import fmean

FIELDS = ("model", "variant", "style", "fact_id", "leaked", "em_FULL", "em_DEL-ON", "em_DEL-OFF", "L", "R",
          "artefact", "evidence", "del_on_calls")


def compact_rows(model: str, facts: list[dict], traces: list[dict], leaked: set[int]) -> list[dict]:
    """One row per (variant, style, fact) of `uds audit`'s facts.jsonl: the three EMs, L, R, the
    artefact and evidence flags, whether the fact is in `leaked`, and how many DEL-ON lookups the
    model issued (0: it answered without retrieval)."""
    calls = Counter((t["variant"], t["style"], t["fact_id"]) for t in traces if t["state"] == "DEL-ON")
    out = []
    for f in facts:
        key = (f["variant"], f["style"], f["fact_id"])
        out.append({"model": model, "variant": f["variant"], "style": f["style"], "fact_id": f["fact_id"],
                    "leaked": int(f["fact_id"] in leaked),
                    **{k: int(f[k]) for k in ("em_FULL", "em_DEL-ON", "em_DEL-OFF", "L", "R", "artefact",
                                              "evidence")},
                    "del_on_calls": calls[key]})
    return out


def write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)


def read_rows(path: Path) -> list[dict]:
    """`write_rows`' file back, with integer columns as ints."""
    with open(path, newline="") as fh:
        return [{k: (v if k in ("model", "variant", "style") else int(v)) for k, v in r.items()}
                for r in csv.DictReader(fh)]


def leak_split(rows: list[dict]) -> dict[tuple[str, str], tuple[float, float]]:
    """(model, variant) -> (mean L over the leaked subset's prompts, mean L over the others')."""
    by: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for r in rows:
        by[(r["model"], r["variant"], r["leaked"])].append(r["L"])
    keys = dict.fromkeys((m, v) for m, v, _ in by)
    return {k: (fmean(by[(*k, 1)]) if by[(*k, 1)] else float("nan"),
                fmean(by[(*k, 0)]) if by[(*k, 0)] else float("nan")) for k in keys}
