"""Sanity checks of a UDS setup that need no unlearning method: the identities UDS(retain) = 1,
UDS(full) = 0, and a monotone curve along a full -> retain weight interpolation (spec §2.5, 2.9)."""

from __future__ import annotations

from typing import Sequence

from transformers import PreTrainedModel

from uds_core.engine import EngineSettings, UdsModels, compute_uds
from uds_core.prompts import Examples

ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)


def interpolate_weights(full: PreTrainedModel, retain: PreTrainedModel, alpha: float) -> PreTrainedModel:
    """A copy of `full` with weights (1 - alpha) * full + alpha * retain (same architecture)."""
    model = type(full)(full.config).to(next(full.parameters()).device).eval()
    r = retain.state_dict()
    model.load_state_dict({k: (1 - alpha) * v + alpha * r[k] for k, v in full.state_dict().items()})
    return model


def interpolation_curve(full: PreTrainedModel, retain: PreTrainedModel, examples: Examples,
                        settings: EngineSettings, alphas: Sequence[float] = ALPHAS) -> list[float]:
    """Mean UDS of each interpolated model (S1 computed once and reused)."""
    s1, curve = None, []
    for alpha in alphas:
        models = UdsModels(full, retain, interpolate_weights(full, retain, alpha))
        res = compute_uds(models, examples, settings, s1=s1)
        s1 = res.s1
        curve.append(res.mean)
    return curve
