"""Summaries of probe rows (spec-probes §2.6): per level, per document, the 2x2 split, refusals.

Pure functions over the row dicts of `uds_analyses.probe.run.probe_model`. Rates are means over rows
(one row = one passage x level x sample), so every sample counts, not just one draw. Re-probe rows
enter only the "refused at L, verbatim at a stronger level" count.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from uds_analyses.probe.ladder import LEVELS


def _rate(values: Iterable[bool | None]) -> float | None:
    vals = [bool(v) for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def level_stats(rows: Sequence[dict]) -> dict:
    """verbatim_rate, semantic_acc, refusal_rate, misattributed_rate, mean LCS, n of some rows."""
    return {"verbatim_rate": _rate(r["verbatim"] for r in rows),
            "semantic_acc": _rate(r["semantic"] for r in rows),
            "refusal_rate": _rate(r["refusal"] for r in rows),
            "misattributed_rate": _rate(r["misattributed"] for r in rows),
            "mean_lcs": float(np.mean([r["lcs"] for r in rows])) if rows else None,
            "n": len(rows)}


def by_level(rows: Sequence[dict], levels: Sequence[str], target: bool) -> dict[str, dict]:
    """Level -> `level_stats` of the first-pass rows of target (or distractor) passages."""
    return {lv: level_stats([r for r in rows if r["level"] == lv and r["target"] == target and not r["reprobe"]])
            for lv in levels}


def by_group(rows: Sequence[dict], levels: Sequence[str]) -> dict[str, dict[str, dict]]:
    """Passage group -> level -> `level_stats` (first-pass rows)."""
    groups = dict.fromkeys(r["group"] for r in rows)
    return {g: {lv: level_stats([r for r in rows if r["level"] == lv and r["group"] == g and not r["reprobe"]])
                for lv in levels} for g in groups}


def masked_by_refusal(rows: Sequence[dict]) -> tuple[float | None, dict[str, int]]:
    """(share of target (passage, sample) pairs refused at some level and verbatim at a stronger
    one, level -> number of such pairs by the refusing level)."""
    pairs: dict[tuple[int, int], dict[str, tuple[bool, bool]]] = {}
    for r in rows:
        if r["target"]:
            got = pairs.setdefault((r["passage"], r["sample"]), {})
            old = got.get(r["level"], (False, False))
            got[r["level"]] = (old[0] or r["refusal"], old[1] or r["verbatim"])
    counts = {lv: 0 for lv in LEVELS}
    masked = 0
    for got in pairs.values():
        refused = [lv for lv in LEVELS if got.get(lv, (False, False))[0]]
        hit_above = [lv for lv in refused if any(got.get(up, (False, False))[1]
                                                   for up in LEVELS[LEVELS.index(lv) + 1:])]
        if hit_above:
            counts[hit_above[0]] += 1
            masked += 1
    return (masked / len(pairs) if pairs else None), {k: v for k, v in counts.items() if v}


def split_2x2(rows: Sequence[dict], level: str) -> dict[str, int]:
    """Counts of target rows at `level` by (verbatim yes/no) x (semantic yes/no); rows without QA
    are left out."""
    sel = [r for r in rows if r["level"] == level and r["target"] and not r["reprobe"] and r["semantic"] is not None]
    cell = {(True, True): "verbatim_semantic", (True, False): "verbatim_only",
            (False, True): "semantic_only", (False, False): "neither"}
    out = {name: 0 for name in cell.values()}
    for r in sel:
        out[cell[(bool(r["verbatim"]), bool(r["semantic"]))]] += 1
    return out


def documents(rows: Sequence[dict], levels: Sequence[str]) -> dict[str, dict]:
    """doc_id -> {target, verbatim rate per level, semantic_acc, refusal_rate} (first-pass rows)."""
    out: dict[str, dict] = {}
    first = [r for r in rows if not r["reprobe"]]
    for doc in dict.fromkeys(r["doc_id"] for r in first):
        mine = [r for r in first if r["doc_id"] == doc]
        out[doc] = {"target": mine[0]["target"],
                    "verbatim_rate": {lv: _rate(r["verbatim"] for r in mine if r["level"] == lv) for lv in levels},
                    "semantic_acc": _rate(r["semantic"] for r in mine),
                    "refusal_rate": _rate(r["refusal"] for r in mine)}
    return out


def heat(rows: Sequence[dict], level: str) -> tuple[list[str], list[int], np.ndarray]:
    """(documents, positions, (D, P) verbatim hit rate at `level`, NaN where a position is absent)."""
    sel = [r for r in rows if r["level"] == level and not r["reprobe"]]
    docs = list(dict.fromkeys(r["doc_id"] for r in sel))
    pos = sorted({r["position"] for r in sel})
    acc = np.zeros((len(docs), len(pos)))
    cnt = np.zeros_like(acc)
    for r in sel:
        d, p = docs.index(r["doc_id"]), pos.index(r["position"])
        acc[d, p] += bool(r["verbatim"])
        cnt[d, p] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return docs, pos, np.where(cnt > 0, acc / np.maximum(cnt, 1), np.nan)


def model_summary(rows: Sequence[dict], levels: Sequence[str]) -> dict:
    """The per-model block of summary.json."""
    share, counts = masked_by_refusal(rows)
    return {"levels": by_level(rows, levels, True),
            "distractors": by_level(rows, levels, False),
            "groups": by_group(rows, levels),
            "masked_by_refusal": share,
            "refused_then_verbatim": counts,
            "split_2x2": {lv: split_2x2(rows, lv) for lv in levels},
            "documents": documents(rows, levels)}
