"""Representation metrics (spec §4.5): CKA, Logit Lens and the three Fisher mask sizes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics.result import MetricResult
from metrics.spec import ERASURE, FULL, MODEL, RETAIN, MetricSpec, Use, register
from uds_core.defaults import FISHER_FRACTIONS

if TYPE_CHECKING:
    from metrics.context import EvalContext


def _cka(c: EvalContext) -> MetricResult:
    from metrics.representation import cka_score     # torch: imported when a metric runs, not when it registers

    return MetricResult(cka_score(c.cka_layers(FULL), c.cka_layers(MODEL)))


def _logit_lens(c: EvalContext) -> MetricResult:
    from metrics.representation import logit_lens_score

    value, per_item = logit_lens_score(c.lens(FULL), c.lens(RETAIN), c.lens(MODEL))
    return MetricResult(value, per_item)


def _fisher(c: EvalContext, p: float) -> MetricResult:
    from metrics.representation import fisher_masked_score

    return MetricResult(fisher_masked_score(c.fisher_masks(p), c.fisher(MODEL), model_dtype=c.settings.reference))


def _fisher_spec(p: float) -> MetricSpec:
    return MetricSpec(f"fisher_masked_{p:g}", "representation", ERASURE, (Use("fisher", (MODEL, FULL, RETAIN)),),
                      lambda c: _fisher(c, p),
                      f"Fisher erasure on the top {p:.2%} of max(F_ret - F_full, 0) per block, weighted",
                      label=f"Fisher {p * 100:g}%", variant_of="fisher_masked")


register([
    MetricSpec("cka", "representation", ERASURE, (Use("states", (MODEL, FULL, RETAIN)),), _cka,
               "per-layer CKA to the retain model, normalised by the full model's, weighted by 1 - c_l", label="CKA"),
    MetricSpec("logit_lens", "representation", ERASURE, (Use("states", (MODEL, FULL, RETAIN)),), _logit_lens,
               "entity log-prob of each layer decoded by the full model's head, retain-anchored erasure",
               label="Logit Lens"),
] + [_fisher_spec(p) for p in FISHER_FRACTIONS], rank=40)
