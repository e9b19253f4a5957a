"""Memorisation metrics (spec §4.1): ES, EM, Prob, ParaProb, Truth Ratio on the forget split."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from metrics import memorization as mem
from metrics.result import MetricResult
from metrics.spec import KNOWLEDGE, MODEL, MetricSpec, per_item, register, tf_use

if TYPE_CHECKING:
    from metrics.context import EvalContext, SplitStats
    from metrics.stats import TokenStats


def prob(s: TokenStats) -> float:
    """exp(-mean answer loss) of one teacher-forced answer (`metrics.stats.prob`)."""
    from metrics.stats import prob as stats_prob     # torch: imported when a metric runs, not when it registers

    return stats_prob(s)


def forget_stats(ctx: EvalContext) -> SplitStats:
    return ctx.teacher_forced(MODEL, "forget")


def p_correct(group: Sequence[TokenStats], floor: bool = False) -> float:
    """Probability of the correct answer(s); `floor` (parity reference): each floored at 1e-12."""
    probs = [prob(s) for s in group]
    return mem.floored_gm(probs) if floor else mem.combined_prob(probs)


def p_wrong(group: Sequence[TokenStats], floor: bool = False) -> float:
    """Geometric-mean probability of the wrong answers; `floor`: each floored at 1e-12 first."""
    return mem.floored_gm([prob(s) for s in group]) if floor else mem.wrong_prob([s.avg_loss for s in group])


def truth_ratio_of(group_c: Sequence[TokenStats], group_w: Sequence[TokenStats], variant: Callable,
                   floor: bool = False) -> float | None:
    """One item's truth ratio under `variant` (None when either answer group is empty)."""
    if not group_c or not group_w:
        return None
    return variant(p_correct(group_c, floor), p_wrong(group_w, floor))


def _paraprob(c: EvalContext) -> MetricResult:
    floor = c.settings.reference
    return per_item([p_correct(g, floor) if g else None for g in forget_stats(c).paraphrased])


def _forget_truth_ratio(c: EvalContext) -> MetricResult:
    floor = c.settings.reference
    return per_item([truth_ratio_of(p, w, mem.truth_ratio_prob_mean, floor)
                     for p, w in zip(forget_stats(c).paraphrased, forget_stats(c).perturbed)])


register([
    MetricSpec("es", "memorization", KNOWLEDGE, (tf_use("forget", "answer"),),
               lambda c: per_item([mem.extraction_strength(s.preds, s.targets) for s in forget_stats(c).answers()]),
               "extraction strength of the greedy predictions over the answer (eos dropped)", label="ES"),
    MetricSpec("em", "memorization", KNOWLEDGE, (tf_use("forget", "answer"),),
               lambda c: per_item([mem.exact_memorization(s.preds, s.targets) for s in forget_stats(c).answers()]),
               "exact memorization: token accuracy of greedy predictions over the answer (eos dropped)", label="EM"),
    MetricSpec("prob", "memorization", KNOWLEDGE, (tf_use("forget", "answer"),),
               lambda c: per_item([prob(s) for s in forget_stats(c).answers()]),
               "exp(-mean answer loss) of (question, answer), eos included", label="Prob"),
    MetricSpec("paraprob", "memorization", KNOWLEDGE, (tf_use("forget", "paraphrased"),), _paraprob,
               "exp(-mean answer loss) of (question, paraphrased answer)", label="ParaProb"),
    MetricSpec("truth_ratio", "memorization", KNOWLEDGE, (tf_use("forget", "paraphrased", "perturbed"),),
               _forget_truth_ratio, "p_para / (p_para + geometric-mean p_perturbed): the Mem / meta-eval variant",
               label="Truth Ratio"),
], rank=10)
