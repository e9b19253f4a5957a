"""Membership-inference attacks (spec §4.3-4.4); the AUC itself is `metrics.ranking.roc_auc`.

Per-item statistics are loss-like (higher = "less likely a member"). The AUC uses labels
forget (members) = 0, holdout (non-members) = 1, so AUC -> 1 means the forget set is memorised.
The retain-normalised score s = clip(1 - |AUC - AUC_ret| / AUC_ret, 0, 1) is an erasure score.
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np

from metrics.ranking import roc_auc

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
