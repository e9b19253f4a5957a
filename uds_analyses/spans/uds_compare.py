"""UDS of the same models on the same examples, once with given spans and once with automatic ones.

One evaluation session holds the full and retain anchors (loaded once); each unlearned model is
loaded once and scored on both record lists (`EvalSession.score_uds(records=...)`), then dropped.
"""

from __future__ import annotations

from typing import Callable, Sequence

from scipy.stats import spearmanr

from uds_core.engine import EngineSettings
from uds_core.formula import TAU
from uds_core.report import summary_fields
from metrics.session import EvalSession

VARIANTS = ("given", "auto")


def _scores(session: EvalSession, model, records: Sequence[dict], settings: EngineSettings) -> dict:
    """Mean UDS, scored count and per-example UDS (idx -> value or None) of one model."""
    run, items, skipped = session.score_uds(settings, TAU, model=model, records=records)
    per = {it.idx: v for it, v in zip(items, run.result.uds)}
    per.update({sk.idx: None for sk in skipped})
    fields = summary_fields(run.result)
    return {"uds": fields["uds"], "n_scored": fields["n_scored"], "per_example": per}


def compare_models(session: EvalSession, models: Sequence[str], given: Sequence[dict], auto: Sequence[dict],
                   settings: EngineSettings = EngineSettings(), log: Callable[[str], None] = print) -> dict:
    """Model spec -> {"uds_given", "uds_auto", "abs_diff", "n_scored_given", "n_scored_auto",
    "per_example": {idx: [given, auto]}} over the idx both lists hold (the given list's order)."""
    shared = {r["idx"] for r in auto} & {r["idx"] for r in given}
    lists = {"given": [r for r in given if r["idx"] in shared], "auto": [r for r in auto if r["idx"] in shared]}
    anchors = {session.roles["full"], session.roles["retain"]}
    out = {}
    for spec in models:
        model = session.model(spec) if spec in anchors else session.load_uncached(spec)
        s = {v: _scores(session, model, lists[v], settings) for v in VARIANTS}
        del model
        out[spec] = {"uds_given": s["given"]["uds"], "uds_auto": s["auto"]["uds"],
                     "abs_diff": abs(s["given"]["uds"] - s["auto"]["uds"]),
                     "n_scored_given": s["given"]["n_scored"], "n_scored_auto": s["auto"]["n_scored"],
                     "per_example": {str(i): [s["given"]["per_example"].get(i), s["auto"]["per_example"].get(i)]
                                     for i in sorted(shared)}}
        log(f"{spec}: UDS given {out[spec]['uds_given']:.4f}, auto {out[spec]['uds_auto']:.4f}")
    return out


def rank_agreement(rows: dict, models: Sequence[str]) -> float | None:
    """Spearman's rho between the given-span and the automatic-span UDS over `models` (None for
    fewer than three)."""
    if len(models) < 3:
        return None
    rho = spearmanr([rows[m]["uds_given"] for m in models], [rows[m]["uds_auto"] for m in models]).statistic
    return float(rho)
