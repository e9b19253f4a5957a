"""Link of the deletion audit to UDS and mem_bits (spec-probes §3.7): on models whose facts live in
their weights, does DEL-OFF correctness agree with what UDS and mem_bits say about the same facts?

Inputs are plain per-fact values of one model: DEL-OFF correctness `L` in [0, 1] (mean over the
prompt styles audited), per-example UDS (None where the example was skipped, e.g. no layer of S1
passed tau) and per-example `mem_bits` (bits, >= 0). Orientation: high `L`, low UDS and high
mem_bits all mean "the model still holds the fact".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metrics.ranking import roc_auc, spearman


def fact_rows(model: str, golds: Sequence[str], leak: Sequence[float], uds: Sequence[float | None],
              mem_bits: Sequence[float]) -> list[dict]:
    """One row per fact of one model (all inputs indexed by fact, same length)."""
    if not len(golds) == len(leak) == len(uds) == len(mem_bits):
        raise ValueError(f"per-fact inputs differ in length: {len(golds)}, {len(leak)}, {len(uds)}, {len(mem_bits)}")
    return [{"model": model, "fact": i, "gold": g, "L": float(lv), "uds": None if u is None else float(u),
             "mem_bits": float(m)} for i, (g, lv, u, m) in enumerate(zip(golds, leak, uds, mem_bits))]


def model_summary(rows: list[dict]) -> dict:
    """Per-model means: DEL-OFF correctness, UDS over the scored facts, mem_bits, and the two
    disagreements: facts the model no longer answers while UDS says they are intact (< 0.5: held
    but hidden), and facts it answers while UDS says they are erased (>= 0.5)."""
    scored = [r for r in rows if r["uds"] is not None]
    return {"n_facts": len(rows), "n_uds_scored": len(scored),
            "del_off_correct": float(np.mean([r["L"] for r in rows])),
            "uds": float(np.mean([r["uds"] for r in scored])) if scored else None,
            "mem_bits": float(np.mean([r["mem_bits"] for r in rows])),
            "hidden": sum(r["L"] < 0.5 and r["uds"] < 0.5 for r in scored),
            "answered_but_erased": sum(r["L"] >= 0.5 and r["uds"] >= 0.5 for r in scored)}


def agreement(rows: list[dict]) -> dict:
    """Pooled over (model, fact): how well 1 - UDS and mem_bits each rank facts the model still
    answers (L >= 0.5) above those it does not (ROC AUC; None when one class is empty), and the
    Spearman correlation over models of mean DEL-OFF correctness with mean 1 - UDS and mem_bits."""
    scored = [r for r in rows if r["uds"] is not None]
    answered = [r for r in scored if r["L"] >= 0.5]
    silent = [r for r in scored if r["L"] < 0.5]
    two = bool(answered and silent)

    def auc(value) -> float | None:
        return roc_auc([value(r) for r in answered], [value(r) for r in silent]) if two else None
    out = {"n": len(scored), "answered": len(answered),
           "auc_one_minus_uds": auc(lambda r: 1 - r["uds"]), "auc_mem_bits": auc(lambda r: r["mem_bits"])}
    models = list(dict.fromkeys(r["model"] for r in rows))
    if len(models) >= 3:
        per = [model_summary([r for r in rows if r["model"] == m]) for m in models]
        keep = [p for p in per if p["uds"] is not None]
        leak = [p["del_off_correct"] for p in keep]
        out["spearman_models_one_minus_uds"] = spearman(leak, [1 - p["uds"] for p in keep])[0]
        out["spearman_models_mem_bits"] = spearman(leak, [p["mem_bits"] for p in keep])[0]
    return out
