"""How well automatic spans agree with given (hand or generated) ones, record by record.

Exact match: the same entity string (so the same span: both begin the continuation). Token F1:
ROUGE-1 F-measure of the two entity strings (rouge_score's tokeniser: lower case, alphanumeric
words), the unigram-overlap F1 of extractive QA. Where they differ, the relation of the two
character spans in the answer says how: the automatic span inside the given one (shorter), around
it (longer), overlapping it, or disjoint before or after it.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Sequence

RELATIONS = ("exact", "inside", "around", "overlap", "before", "after", "none")


@lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)


def token_f1(predicted: str, given: str) -> float:
    """Unigram-overlap F1 of two strings (ROUGE-1 F), in [0, 1]."""
    return float(_scorer().score(given, predicted)["rouge1"].fmeasure)


def char_span(record: dict) -> tuple[int, int]:
    """[c0, c1) of the record's entity in its answer: after the prefix (the first occurrence)."""
    answer, entity = record["answer"], record["entity"]
    at = answer.find(entity, len(record["prefix"]))
    start = at if at >= 0 else answer.find(entity)
    return start, start + len(entity)


def relation(auto: dict | None, given: dict) -> str:
    """How the automatic span relates to the given one (RELATIONS)."""
    if auto is None:
        return "none"
    (a0, a1), (g0, g1) = char_span(auto), char_span(given)
    if (a0, a1) == (g0, g1):
        return "exact"
    if g0 <= a0 and a1 <= g1:
        return "inside"
    if a0 <= g0 and g1 <= a1:
        return "around"
    if a0 < g1 and g0 < a1:
        return "overlap"
    return "before" if a1 <= g0 else "after"


def agreement(auto: Sequence[dict], given: Sequence[dict]) -> dict:
    """Agreement over the given records (matched by idx); a given record without an automatic
    span counts as F1 0. Returns counts, rates, mean F1, per-method and per-relation breakdowns,
    and one row per record."""
    by_idx = {r["idx"]: r for r in auto}
    rows = []
    for g in given:
        a = by_idx.get(g["idx"])
        rows.append({"idx": g["idx"], "method": a["span_method"] if a else None, "given": g["entity"],
                     "auto": a["entity"] if a else None, "f1": token_f1(a["entity"], g["entity"]) if a else 0.0,
                     "relation": relation(a, g)})
    return {**_summary(rows), "by_method": {m: _summary([r for r in rows if r["method"] == m])
                                            for m in sorted({r["method"] for r in rows if r["method"]})},
            "relations": dict(Counter(r["relation"] for r in rows)), "records": rows}


def _summary(rows: list[dict]) -> dict:
    n = len(rows)
    exact = sum(r["relation"] == "exact" for r in rows)
    return {"n": n, "exact": exact, "exact_rate": exact / n if n else None,
            "token_f1": sum(r["f1"] for r in rows) / n if n else None}
