"""Utility metrics (spec §4.6): Prob, ROUGE and Truth Ratio on the retain, real-author and
world-fact sets, their harmonic mean (model utility) and fluency."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from uds_core.parity import REFERENCE_EPS
from metrics import memorization as mem
from metrics.families.generation import rouge_of
from metrics.families.memorization import prob, truth_ratio_of
from metrics.result import MetricResult
from metrics.spec import (BASE, FULL, MODEL, UTILITY, MetricSpec, Use, gen_use, mean_of, per_item, register,
                          tf_use)
from metrics.utility import UTILITY_KEYS, model_utility, normalised_prob, proxy_fluency

if TYPE_CHECKING:
    from metrics.context import EvalContext

# prefix -> (split, variant that is "correct" in the truth ratio, whether Prob is normalised)
UTILITY_SETS = {"retain": ("retain_eval", "paraphrased", False),
                "ra": ("real_authors", "answer", True),
                "wf": ("world_facts", "answer", True)}
SET_LABELS = {"retain": "Retain", "ra": "Real Authors", "wf": "World Facts"}


def _utility_specs(prefix: str, split: str, correct: str, normalised: bool) -> list[MetricSpec]:
    def q_prob(c: EvalContext) -> MetricResult:
        st = c.teacher_forced(MODEL, split)
        if not normalised:
            return per_item([prob(s) for s in st.answers()])
        norm = partial(normalised_prob, eps=REFERENCE_EPS) if c.settings.reference else normalised_prob
        return per_item([norm(prob(a), [prob(w) for w in ws]) for a, ws in zip(st.answers(), st.perturbed)])

    def truth(c: EvalContext) -> MetricResult:
        st = c.teacher_forced(MODEL, split)
        ref = c.settings.reference   # the reference: probabilities floored at 1e-12, epsilon 1e-12
        variant = partial(mem.truth_ratio_true_better, eps=REFERENCE_EPS) if ref else mem.truth_ratio_true_better
        return per_item([truth_ratio_of(g, w, variant, ref) for g, w in zip(getattr(st, correct), st.perturbed)])

    prob_variants = ("answer", "perturbed") if normalised else ("answer",)
    return [
        MetricSpec(f"{prefix}_q_prob", "utility", UTILITY, (tf_use(split, *prob_variants),), q_prob,
                   f"{'normalised ' if normalised else ''}answer probability on {split}", group="utility",
                   label=f"{SET_LABELS[prefix]} Prob"),
        MetricSpec(f"{prefix}_q_rouge", "utility", UTILITY, (gen_use(split),),
                   lambda c: rouge_of(c, split, "plain"), f"ROUGE-L recall of greedy answers on {split}",
                   group="utility", label=f"{SET_LABELS[prefix]} ROUGE"),
        MetricSpec(f"{prefix}_truth_ratio", "utility", UTILITY, (tf_use(split, correct, "perturbed"),), truth,
                   f"max(0, 1 - p_wrong / p_{correct}) on {split} (OU true_better)", group="utility",
                   label=f"{SET_LABELS[prefix]} Truth Ratio"),
    ]


def _model_utility(c: EvalContext) -> MetricResult:
    return MetricResult(model_utility({k: c.results[k].value for k in UTILITY_KEYS}, c.settings.open_unlearning))


def _fluency(c: EvalContext) -> MetricResult:
    from metrics import fluency as fl     # transformers: imported when the metric runs, not when it registers

    gens = c.generations(MODEL, "forget", "plain")
    if c.fluency_classifier:
        vals = fl.classifier_clean_probs(c.fluency_classifier, [g.text for g in gens], c.settings.device)
        return MetricResult(mean_of(vals), vals, {"fluency_source": fl.classifier_source(c.fluency_classifier)})
    value, items = proxy_fluency(c.base_item_probs(MODEL), c.base_item_probs(FULL))
    return MetricResult(value, items, {"fluency_source": fl.PROXY_SOURCE})


register([s for prefix, args in UTILITY_SETS.items() for s in _utility_specs(prefix, *args)] + [
    MetricSpec("model_utility", "utility", UTILITY, (), _model_utility,
               "HM_eps of the nine retain / real-author / world-fact values (OU parity: scipy's hmean)",
               depends=UTILITY_KEYS, group="utility", label="Model Utility"),
    MetricSpec("fluency", "utility", UTILITY, (gen_use("forget", roles=(MODEL, FULL)), Use("base_score", (BASE,))),
               _fluency, "gibberish-classifier clean probability of forget generations, or the base-LM proxy",
               group="utility", label="Fluency"),
], rank=50)
