"""Membership inference (spec §4.3-4.4): four attacks, raw AUC and retain-normalised."""

from __future__ import annotations

from typing import Callable

from metrics import mia
from metrics.context import EvalContext
from metrics.result import MetricResult
from metrics.spec import ERASURE, KNOWLEDGE, MODEL, RETAIN, MetricSpec, register, tf_use
from metrics.stats import TokenStats

ATTACKS: dict[str, Callable[[TokenStats, str], float]] = {
    "loss": lambda s, text: mia.loss_score(s.avg_loss),
    "zlib": lambda s, text: mia.zlib_score(s.avg_loss, text),
    "min_k": lambda s, text: mia.min_k_score(s.logprobs),
    "min_kpp": lambda s, text: mia.min_kpp_score(s.zscores),
}


def attack_scores(ctx: EvalContext, role: str, split: str, attack: str) -> list[float]:
    """Per-item statistic of one attack on one split (higher = less likely a member)."""
    stats = ctx.teacher_forced(role, split).answers()
    return [ATTACKS[attack](s, t) for s, t in zip(stats, ctx.answer_texts(split))]


def attack_auc(ctx: EvalContext, role: str, attack: str) -> float:
    """AUC of forget (members, label 0) vs holdout (non-members, label 1) for the role's model."""
    return mia.mia_auc(attack_scores(ctx, role, "forget", attack), attack_scores(ctx, role, "holdout", attack))


def _mia_specs(attack: str) -> tuple[MetricSpec, MetricSpec]:
    def raw(c: EvalContext) -> MetricResult:
        return MetricResult(attack_auc(c, MODEL, attack))

    def normalised(c: EvalContext) -> MetricResult:
        return MetricResult(mia.retain_normalised(attack_auc(c, MODEL, attack), attack_auc(c, RETAIN, attack)))

    uses = (tf_use("forget", "answer"), tf_use("holdout", "answer"))
    ref_uses = tuple(tf_use(u.split, *u.detail, roles=(MODEL, RETAIN)) for u in uses)
    return (
        MetricSpec(f"mia_{attack}", "mia", KNOWLEDGE, uses, raw,
                   f"AUC of the {attack} attack, forget (label 0) vs holdout (label 1); 1 = memorised"),
        MetricSpec(f"s_mia_{attack}", "mia_normalised", ERASURE, ref_uses, normalised,
                   f"clip(1 - |AUC - AUC_retain| / AUC_retain, 0, 1) of the {attack} attack"),
    )


_PAIRS = [_mia_specs(a) for a in ATTACKS]
register([raw for raw, _ in _PAIRS] + [norm for _, norm in _PAIRS], rank=30)   # docs/design.md key order
