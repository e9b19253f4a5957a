"""Representation metrics (spec §4.5): CKA, Logit Lens and the three Fisher mask sizes."""

from __future__ import annotations

from metrics.context import EvalContext
from metrics.representation import FISHER_FRACTIONS, cka_score, fisher_masked_score, logit_lens_score
from metrics.result import MetricResult
from metrics.spec import ERASURE, FULL, MODEL, RETAIN, MetricSpec, Use, register


def _cka(c: EvalContext) -> MetricResult:
    return MetricResult(cka_score(c.cka_layers(FULL), c.cka_layers(MODEL)))


def _logit_lens(c: EvalContext) -> MetricResult:
    value, per_item = logit_lens_score(c.lens(FULL), c.lens(RETAIN), c.lens(MODEL))
    return MetricResult(value, per_item)


def _fisher_spec(p: float) -> MetricSpec:
    return MetricSpec(f"fisher_masked_{p:g}", "representation", ERASURE, (Use("fisher", (MODEL, FULL, RETAIN)),),
                      lambda c: MetricResult(fisher_masked_score(c.fisher_masks(p), c.fisher(MODEL),
                                                                 model_dtype=c.settings.reference)),
                      f"Fisher erasure on the top {p:.2%} of max(F_ret - F_full, 0) per block, weighted")


register([
    MetricSpec("cka", "representation", ERASURE, (Use("states", (MODEL, FULL, RETAIN)),), _cka,
               "per-layer CKA to the retain model, normalised by the full model's, weighted by 1 - c_l"),
    MetricSpec("logit_lens", "representation", ERASURE, (Use("states", (MODEL, FULL, RETAIN)),), _logit_lens,
               "entity log-prob of each layer decoded by the full model's head, retain-anchored erasure"),
] + [_fisher_spec(p) for p in FISHER_FRACTIONS], rank=40)
