"""TOFU utility metrics and fluency (spec §4.6, 12). Higher = more utility preserved.

Probabilities are exp(-avg_loss) of whole answers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from metrics.aggregate import harmonic_mean_eps, harmonic_mean_ou

NORM_EPS = 1e-10  # OU's epsilon in the normalised probability (the reference uses 1e-12)
UTILITY_KEYS = ("retain_q_prob", "retain_q_rouge", "retain_truth_ratio",
                "ra_q_prob", "ra_q_rouge", "ra_truth_ratio",
                "wf_q_prob", "wf_q_rouge", "wf_truth_ratio")


def normalised_prob(p_correct: float, p_wrong: Sequence[float], eps: float = NORM_EPS) -> float:
    """p_c / (p_c + sum_j p_w_j + 1e-10): the answer's share among the answer and its wrong options
    (the reference adds 1e-12)."""
    return p_correct / (p_correct + float(np.sum(p_wrong)) + eps)


def model_utility(values: dict[str, float | None], open_unlearning: bool = False) -> float | None:
    """HM_eps of the nine utility values, in `UTILITY_KEYS` order; None if one is missing.
    `open_unlearning`: OU's `scipy.stats.hmean` instead (no epsilon; a zero value gives 0)."""
    nine = [values.get(k) for k in UTILITY_KEYS]
    return harmonic_mean_ou(nine) if open_unlearning else harmonic_mean_eps(nine)


def mean_token_prob(logprobs: np.ndarray) -> float | None:
    """Arithmetic mean of the token probabilities exp(lp) (spec §12 proxy); None for no token."""
    if len(logprobs) == 0:
        return None
    return float(np.mean(np.exp(np.asarray(logprobs, dtype=float))))


def proxy_fluency(model_item_probs: Sequence[float | None],
                  full_item_probs: Sequence[float | None]) -> tuple[float | None, list[float | None]]:
    """Base-LM fluency proxy (spec §12): mean item probability of the model's generations divided by
    the same for the full model's, clipped to [0, 1].

    Items are the forget questions; an item value is the mean base-LM token probability of one
    generation (None for an empty generation, left out of the mean). Returns (score, per-item
    values divided by the full model's mean, unclipped) so that the score = clip(mean(per-item)).
    """
    full_vals = [v for v in full_item_probs if v is not None]
    model_vals = [v for v in model_item_probs if v is not None]
    if not full_vals or not model_vals or np.mean(full_vals) <= 0:
        return None, [None] * len(model_item_probs)
    denom = float(np.mean(full_vals))
    per_item = [None if v is None else v / denom for v in model_item_probs]
    return float(np.clip(np.mean(model_vals) / denom, 0.0, 1.0)), per_item


def clean_class_prob(logits: np.ndarray, clean_index: int = 0) -> np.ndarray:
    """Gibberish classifier: softmax probability of the "clean" class per row. logits: (N, C)."""
    z = np.asarray(logits, dtype=float)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p[:, clean_index] / p.sum(axis=1)
