"""The P/N pools by variant (spec §5.1 / 12): which variants each metric separates and which it
confuses, and how much forget knowledge each pool member actually carries (its knowledge check).

A pool member's variant is the `checkpoints.methods.pools.POOL_VARIANTS` name its model name
starts with (`pos_bio_lr1e-4_ep5` -> `pos_bio`). Per metric: the raw mean of each variant, and the
faithfulness AUC (`faithfulness.faithfulness`, the same orientation and pool-size rule as the
whole pools) of each P variant against each N variant. An AUC near 0.5 (or below) marks a pair the
metric confuses.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from checkpoints.methods.pools import POOL_VARIANTS
from meta_eval.faithfulness import MIN_POOL, faithfulness, finite
from meta_eval.perturb import ORIG
from meta_eval.population import FULL, POOL, RETAIN, Member
from metrics.registry import REGISTRY

Values = Mapping[tuple[str, str], Mapping[str, float | None]]
P_VARIANTS = tuple(v for v, pv in POOL_VARIANTS.items() if pv.sign == "P")
N_VARIANTS = tuple(v for v, pv in POOL_VARIANTS.items() if pv.sign == "N")


def variant_of(name: str) -> str | None:
    """The pool variant a member's name starts with (the longest such name), else None."""
    found = [v for v in POOL_VARIANTS if name.startswith(f"{v}_")]
    return max(found, key=len) if found else None


def by_variant(members: Sequence[Member]) -> dict[str, list[str]]:
    """Variant -> names of its pool members, every variant listed (P variants first)."""
    out: dict[str, list[str]] = {v: [] for v in P_VARIANTS + N_VARIANTS}
    for m in members:
        v = variant_of(m.name) if m.kind == POOL else None
        if v is not None:
            out[v].append(m.name)
    return out


def _raw(values: Values, names: Sequence[str], key: str) -> list[float | None]:
    return [values.get((ORIG, n), {}).get(key) for n in names]


def variant_means(members: Sequence[Member], values: Values, key: str) -> dict[str, dict]:
    """Variant -> {"mean": raw mean of the key over its measured members (None: none), "n"}."""
    out = {}
    for variant, names in by_variant(members).items():
        present = finite(_raw(values, names, key))
        out[variant] = {"mean": float(present.mean()) if present.size else None, "n": int(present.size)}
    return out


def variant_aucs(members: Sequence[Member], values: Values, key: str) -> dict[str, dict]:
    """"<P variant>|<N variant>" -> {"auc_roc", "n_p", "n_n", "needs"} for every pair. `needs` says
    how many more members of each side the AUC needs (MIN_POOL each, as the whole pools), else None."""
    groups = by_variant(members)
    invert = REGISTRY[key].orientation == "erasure"
    out = {}
    for pv in P_VARIANTS:
        for nv in N_VARIANTS:
            f = faithfulness(_raw(values, groups[pv], key), _raw(values, groups[nv], key), invert, n_boot=1)
            out[f"{pv}|{nv}"] = {"auc_roc": f.auc_roc, "n_p": f.n_p, "n_n": f.n_n,
                                 "needs": pool_needs(f.n_p, f.n_n, pv, nv)}
    return out


def pool_needs(n_p: int, n_n: int, p_label: str = "P", n_label: str = "N") -> str | None:
    """"needs 2 more P and 1 more N" while a side has fewer than MIN_POOL members, else None."""
    parts = [f"{MIN_POOL - n} more {label}" for n, label in ((n_p, p_label), (n_n, n_label)) if n < MIN_POOL]
    return f"needs {' and '.join(parts)}" if parts else None


def confused_pairs(aucs: Mapping[str, Mapping]) -> list[str]:
    """The variant pairs the metric confuses most: every pair at the lowest AUC, in name order,
    when that AUC is below 1. Empty when every pair with an AUC is separated perfectly (naming one
    of several tied perfect pairs would say the metric confuses something it does not) or when
    none has an AUC yet."""
    scored = {pair: a["auc_roc"] for pair, a in aucs.items() if a["auc_roc"] is not None}
    if not scored or min(scored.values()) >= 1.0:
        return []
    low = min(scored.values())
    return sorted(pair for pair, auc in scored.items() if auc == low)


KNOWLEDGE_FIELDS = ("forget_questions", "paraphrased_questions")


def knowledge_rows(members: Sequence[Member], builds: Mapping[str, dict], measured: set[str]) -> list[dict]:
    """One row per built pool member (and full / retain for reference): its knowledge check (greedy
    answer accuracy on the forget questions and on their paraphrases, fractions in [0, 1])."""
    rows = []
    for m in members:
        build = builds.get(m.name)
        if m.kind not in (POOL, FULL, RETAIN) or build is None or not isinstance(build.get("knowledge"), dict):
            continue
        train = (build.get("recipe") or {}).get("train") or {}
        k = build["knowledge"]
        rows.append({"model": m.name, "kind": m.kind, "pool": m.pool, "variant": variant_of(m.name) or m.kind,
                     "lr": train.get("lr"), "epochs": train.get("epochs"), "measured": m.name in measured,
                     **{f: k.get(f) for f in KNOWLEDGE_FIELDS}, "n_questions": k.get("n_forget_questions")})
    return rows


def knowledge_by_variant(rows: Sequence[dict], members: Sequence[Member]) -> dict[str, dict]:
    """Variant -> {"n" built of "of" in the zoo, mean / min / max forget-question accuracy,
    mean paraphrased-question accuracy} over the built pool members. A P variant also gets
    "above_n": how many of its members answer more forget questions than every built N member
    (None while no N member is built), the reference "n_max", per member the margin over it in
    questions ("margins", sorted) and the number of forget questions ("n_questions", None if the
    members were checked on different numbers)."""
    total = {v: len(n) for v, n in by_variant(members).items()}
    n_acc = [r["forget_questions"] for r in rows if r["pool"] == "N" and r["forget_questions"] is not None]
    n_max = max(n_acc, default=None)
    out = {}
    for variant, of in total.items():
        acc = [r["forget_questions"] for r in rows if r["variant"] == variant and r["forget_questions"] is not None]
        para = [r["paraphrased_questions"] for r in rows
                if r["variant"] == variant and r["paraphrased_questions"] is not None]
        out[variant] = {"n": len(acc), "of": of, "mean": sum(acc) / len(acc) if acc else None,
                        "min": min(acc, default=None), "max": max(acc, default=None),
                        "paraphrased_mean": sum(para) / len(para) if para else None,
                        "pool": POOL_VARIANTS[variant].sign}
        if POOL_VARIANTS[variant].sign == "P":
            out[variant].update(_above_n(rows, variant, n_max))
    return out


def _above_n(rows: Sequence[dict], variant: str, n_max: float | None) -> dict:
    """How far the variant's built members sit above the best N member, in forget questions."""
    built = [r for r in rows if r["variant"] == variant and r["forget_questions"] is not None]
    if n_max is None:
        return {"above_n": None, "n_max": None, "margins": [], "n_questions": None}
    margins = sorted(round((r["forget_questions"] - n_max) * r["n_questions"]) for r in built
                     if r.get("n_questions"))
    questions = sorted({r["n_questions"] for r in built if r.get("n_questions")})
    return {"above_n": sum(r["forget_questions"] > n_max for r in built), "n_max": n_max, "margins": margins,
            "n_questions": questions[0] if len(questions) == 1 else None}
