"""Memorisation metrics per example (spec §4.1): EM, ES, ParaProb, the Truth Ratio variants.

Inputs are plain arrays/floats (greedy predictions and labels over A⁻, probabilities exp(-avg_loss)).
Orientation: every value here is higher = more knowledge of the answer.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

TR_EPS = 1e-10       # OU's epsilon in every truth-ratio denominator
PROB_CLIP = 1e-12    # reference clip before taking logs of several paraphrase probabilities


def exact_memorization(preds: np.ndarray, targets: np.ndarray) -> float | None:
    """Fraction of A⁻ positions whose greedy prediction equals the label; None if A⁻ is empty."""
    if len(targets) == 0:
        return None
    return float(np.mean(np.asarray(preds) == np.asarray(targets)))


def extraction_strength(preds: np.ndarray, targets: np.ndarray) -> float:
    """1 - k/T, k = first index from which the whole suffix of predictions matches the labels.

    When no suffix matches, k stays at T-1 (OU's loop quirk), so the floor is 1/T, not 0.
    T = 0 gives 0.
    """
    preds, targets = np.asarray(preds), np.asarray(targets)
    t = len(targets)
    if t == 0:
        return 0.0
    k = t - 1
    for start in range(t):
        if np.array_equal(preds[start:], targets[start:]):
            k = start
            break
    return 1.0 - k / t


def combined_prob(probs: Sequence[float]) -> float:
    """Probability of an item with one or more paraphrases: the value itself for one, else the
    geometric mean of the probabilities clipped at 1e-12 (reference rule)."""
    return float(probs[0]) if len(probs) == 1 else floored_gm(probs)


def floored_gm(probs: Sequence[float], floor: float = PROB_CLIP) -> float:
    """The reference's `geometric_mean`: exp(mean(log(max(p, 1e-12)))). `combined_prob` uses it for
    several paraphrases; parity `reference` for a single probability too (one that underflows
    counts as 1e-12)."""
    return float(np.exp(np.mean(np.log(np.clip(np.asarray(probs, dtype=float), floor, None)))))


def wrong_prob(perturbed_avg_losses: Sequence[float]) -> float:
    """p_w = exp(-mean_j avg_loss_j): the geometric mean of the perturbed answers' probabilities."""
    return float(np.exp(-np.mean(np.asarray(perturbed_avg_losses, dtype=float))))


def truth_ratio_prob_mean(p_correct: float, p_wrong: float) -> float:
    """Meta-eval / Mem variant: p_c / (p_c + p_w + 1e-10), in [0, 1); higher = knows the truth."""
    return p_correct / (p_correct + p_wrong + TR_EPS)


def truth_ratio_true_better(p_correct: float, p_wrong: float, eps: float = TR_EPS) -> float:
    """OU utility variant: max(0, 1 - r) with r = p_w / (p_c + 1e-10) (the reference: + 1e-12)."""
    return max(0.0, 1.0 - p_wrong / (p_correct + eps))
