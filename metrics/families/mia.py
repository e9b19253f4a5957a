"""Membership inference (spec §4.3-4.4): four attacks, raw AUC and retain-normalised."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics.result import MetricResult
from metrics.spec import ERASURE, KNOWLEDGE, MODEL, RETAIN, MetricSpec, register, tf_use

if TYPE_CHECKING:
    from metrics.context import EvalContext
    from metrics.stats import TokenStats

# attack -> its name as tables print it
ATTACKS: dict[str, str] = {"loss": "loss", "zlib": "zlib", "min_k": "min-k", "min_kpp": "min-k++"}


def attack_statistic(attack: str, s: TokenStats, text: str) -> float:
    """One item's statistic of one attack (higher = less likely a member)."""
    from metrics import mia    # scipy and scikit-learn: imported when a metric runs, not when it registers

    if attack == "loss":
        return mia.loss_score(s.avg_loss)
    if attack == "zlib":
        return mia.zlib_score(s.avg_loss, text)
    if attack == "min_k":
        return mia.min_k_score(s.logprobs)
    return mia.min_kpp_score(s.zscores)


def attack_scores(ctx: EvalContext, role: str, split: str, attack: str) -> list[float]:
    """Per-item statistic of one attack on one split (higher = less likely a member)."""
    stats = ctx.teacher_forced(role, split).answers()
    return [attack_statistic(attack, s, t) for s, t in zip(stats, ctx.answer_texts(split))]


def attack_auc(ctx: EvalContext, role: str, attack: str) -> float:
    """AUC of forget (members, label 0) vs holdout (non-members, label 1) for the role's model."""
    from metrics import mia

    return mia.mia_auc(attack_scores(ctx, role, "forget", attack), attack_scores(ctx, role, "holdout", attack))


def _mia_specs(attack: str) -> tuple[MetricSpec, MetricSpec]:
    def raw(c: EvalContext) -> MetricResult:
        return MetricResult(attack_auc(c, MODEL, attack))

    def normalised(c: EvalContext) -> MetricResult:
        from metrics import mia

        return MetricResult(mia.retain_normalised(attack_auc(c, MODEL, attack), attack_auc(c, RETAIN, attack)))

    uses = (tf_use("forget", "answer"), tf_use("holdout", "answer"))
    ref_uses = tuple(tf_use(u.split, *u.detail, roles=(MODEL, RETAIN)) for u in uses)
    name = ATTACKS[attack]
    return (
        MetricSpec(f"mia_{attack}", "mia", KNOWLEDGE, uses, raw,
                   f"AUC of the {attack} attack, forget (label 0) vs holdout (label 1); 1 = memorised",
                   label=f"MIA {name}"),
        MetricSpec(f"s_mia_{attack}", "mia_normalised", ERASURE, ref_uses, normalised,
                   f"clip(1 - |AUC - AUC_retain| / AUC_retain, 0, 1) of the {attack} attack",
                   label=f"S-MIA {name}"),
    )


_PAIRS = [_mia_specs(a) for a in ATTACKS]
register([raw for raw, _ in _PAIRS] + [norm for _, norm in _PAIRS], rank=30)   # docs/design.md key order
