"""Summaries of the long-passage probe: rates per level, by passage position and by the
sentence a prefix-level continuation starts at, and the verbatim x semantic split.

Pure functions over the rows of `uds_analyses.probe.passage_run.probe_passages`; a rate is a mean over
rows (every sample counts). JSON keys of positions and starts are strings. The `prefix` level's
rates are those of the sentence-boundary cuts; the first-words cut (spec-probes §2.2's prefix) is
reported apart, as `first_words`.
"""

from __future__ import annotations

from typing import Sequence


def rate_by(rows: Sequence[dict], key: str, value: str = "verbatim") -> dict[str, dict]:
    """`key` value -> {rate, hits, n} of the boolean `value`, keys in ascending order."""
    acc: dict[int, list[int]] = {}
    for r in rows:
        got = acc.setdefault(r[key], [0, 0])
        got[0] += bool(r[value])
        got[1] += 1
    return {str(k): {"rate": h / n, "hits": h, "n": n} for k, (h, n) in sorted(acc.items())}


def _mean(vals: list[float]) -> float | None:
    return sum(vals) / len(vals) if vals else None


def level_stats(rows: Sequence[dict]) -> dict:
    """verbatim, refusal and misattribution rates, mean LCS (characters) and n of some rows."""
    return {"verbatim_rate": _mean([float(r["verbatim"]) for r in rows]),
            "refusal_rate": _mean([float(r["refusal"]) for r in rows]),
            "misattributed_rate": _mean([float(r["misattributed"]) for r in rows]),
            "mean_lcs": _mean([float(r["lcs"]) for r in rows]), "n": len(rows)}


def split_2x2(rows: Sequence[dict], qa_rows: Sequence[dict]) -> dict[str, int]:
    """Prefix-level target rows by (verbatim) x (semantic hit of the QA of the sentence the
    continuation starts with, same sample); rows whose sentence has no QA row are left out."""
    sem = {(q["passage"], q["sentence"], q["sample"]): q["semantic"] for q in qa_rows}
    out = {"verbatim_semantic": 0, "verbatim_only": 0, "semantic_only": 0, "neither": 0}
    for r in rows:
        hit = sem.get((r["passage"], r["start"], r["sample"]))
        if r["level"] != "prefix" or r["cut"] != "sentence" or not r["target"] or hit is None:
            continue
        name = {(True, True): "verbatim_semantic", (True, False): "verbatim_only",
                (False, True): "semantic_only", (False, False): "neither"}[(bool(r["verbatim"]), bool(hit))]
        out[name] += 1
    return out


def passages_summary(rows: Sequence[dict], qa_rows: Sequence[dict], levels: Sequence[str]) -> dict:
    """The per-model block of summary.json for the passage corpus."""
    is_words = [r["level"] == "prefix" and r["cut"] == "words" for r in rows]
    words = [r for r, w in zip(rows, is_words) if w]
    tgt = [r for r, w in zip(rows, is_words) if r["target"] and not w]
    dis = [r for r, w in zip(rows, is_words) if not r["target"] and not w]
    qa_t = [q for q in qa_rows if q["target"]]
    qa_d = [q for q in qa_rows if not q["target"]]
    return {"levels": {lv: level_stats([r for r in tgt if r["level"] == lv]) for lv in levels},
            "distractors": {lv: level_stats([r for r in dis if r["level"] == lv]) for lv in levels},
            "semantic_acc": _mean([float(q["semantic"]) for q in qa_t]),
            "distractor_semantic_acc": _mean([float(q["semantic"]) for q in qa_d]),
            "by_position": {"verbatim": {lv: rate_by([r for r in tgt if r["level"] == lv], "position")
                                         for lv in levels},
                            "semantic": rate_by(qa_t, "position", "semantic")},
            "by_start": rate_by([r for r in tgt if r["level"] == "prefix"], "start"),
            "first_words": level_stats([r for r in words if r["target"]]),
            "first_words_distractors": level_stats([r for r in words if not r["target"]]),
            "first_words_by_position": rate_by([r for r in words if r["target"]], "position"),
            "split_2x2_prefix": split_2x2(rows, qa_rows)}
