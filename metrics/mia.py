"""Membership-inference attacks (SPEC.md 4.3-4.4) and the toolkit's one ROC AUC (`roc_auc`).

Per-item statistics are loss-like (higher = "less likely a member"). The AUC uses labels
forget (members) = 0, holdout (non-members) = 1, so AUC -> 1 means the forget set is memorised.
The retain-normalised score s = clip(1 - |AUC - AUC_ret| / AUC_ret, 0, 1) is an erasure score.
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np
from sklearn.metrics import roc_auc_score

MIN_K = 0.4
AUC_RET_FLOOR = 1e-12


def loss_score(avg_loss: float) -> float:
    """LOSS attack: the mean cross-entropy of the answer (eos included)."""
    return float(avg_loss)


def zlib_score(avg_loss: float, text: str) -> float:
    """ZLib attack: avg_loss / zlib-compressed byte length of the answer text (guarded >= 1)."""
    return float(avg_loss) / max(len(zlib.compress(text.encode("utf-8"))), 1)


def min_k_count(n_tokens: int, k: float = MIN_K) -> int:
    """How many lowest values Min-K averages: max(1, floor(k * n)) (floor, not ceil)."""
    return max(1, math.floor(k * n_tokens))


def _neg_mean_lowest(values: np.ndarray, k: float) -> float:
    if len(values) == 0:
        return 0.0
    lowest = np.sort(np.asarray(values, dtype=float))[:min_k_count(len(values), k)]
    return float(-lowest.mean())


def min_k_score(logprobs: np.ndarray, k: float = MIN_K) -> float:
    """Min-K attack over the A⁻ token log-probs: -mean of the n lowest; 0 when empty."""
    return _neg_mean_lowest(logprobs, k)


def min_kpp_score(zscores: np.ndarray, k: float = MIN_K) -> float:
    """Min-K++ attack over the A⁻ z-scores (see `stats.minkpp_z`): -mean of the n lowest; 0 when empty."""
    return _neg_mean_lowest(zscores, k)


def roc_auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """ROC AUC of labels positive = 1, negative = 0 with the scores as the predictor: the probability
    that a random positive scores above a random negative, ties counting one half.

    The one AUC of the toolkit (MIA attacks here, faithfulness in meta_eval). Computed by
    sklearn's `roc_auc_score` on the scores' dense ranks (same order and ties, so ±inf is allowed),
    then put on the grid of values an AUC can take, multiples of 1/(2·n_pos·n_neg): sklearn's
    trapezoid sum can miss the exact fraction by a rounding error, the grid value cannot.
    """
    pos = np.asarray(positive, dtype=np.float64).ravel()
    neg = np.asarray(negative, dtype=np.float64).ravel()
    if pos.size == 0 or neg.size == 0:
        raise ValueError("AUC needs at least one positive and one negative score")
    scores = np.concatenate([pos, neg])
    if np.isnan(scores).any():
        raise ValueError("AUC scores contain NaN")
    labels = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    ranks = np.unique(scores, return_inverse=True)[1]
    grid = 2 * pos.size * neg.size
    return float(np.rint(roc_auc_score(labels, ranks) * grid) / grid)


def roc_auc_rows(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """`roc_auc` of each row pair at once: positive (B, n_pos), negative (B, n_neg) -> (B,).

    For the bootstrap's thousands of resamples, where one sklearn call per row would take about
    a millisecond each: the pair count P(pos > neg) + ½ P(tie) directly, which is exact (sums of
    halves) and so equals `roc_auc` bit for bit (tests/test_meta_eval_math.py checks it).
    """
    diff = np.asarray(positive, dtype=np.float64)[:, :, None] - np.asarray(negative, dtype=np.float64)[:, None, :]
    return np.mean((diff > 0) + 0.5 * (diff == 0), axis=(1, 2))


def mia_auc(member_scores: Sequence[float], nonmember_scores: Sequence[float]) -> float:
    """AUC with labels member = 0, non-member = 1 and the loss-like score as the predictor (`roc_auc`
    with the non-members as positives): P(a random non-member scores above a random member)."""
    if len(member_scores) == 0 or len(nonmember_scores) == 0:
        raise ValueError("AUC needs at least one member and one non-member score")
    return roc_auc(nonmember_scores, member_scores)


def retain_normalised(auc: float, auc_retain: float) -> float | None:
    """s = clip(1 - |AUC - AUC_ret| / AUC_ret, 0, 1); None when AUC_ret <= 1e-12.

    1 = indistinguishable from the retain model (erasure), 0 = far from it.
    """
    if auc_retain <= AUC_RET_FLOOR:
        return None
    return float(min(1.0, max(0.0, 1.0 - abs(auc - auc_retain) / auc_retain)))
