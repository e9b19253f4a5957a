"""Rank statistics of the toolkit, one of each: the ROC AUC (MIA attacks, faithfulness, the audit
link) and Spearman's rank correlation (mem_bits' TF-IDF diagnostic, the audit link). Plain
sequences in, numbers out.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score


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


def spearman(x: ArrayLike, y: ArrayLike) -> tuple[float | None, float | None]:
    """Spearman rank correlation (rho, two-sided p) of paired values, NaN pairs dropped;
    (None, None) with fewer than 3 pairs or a constant side."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None, None
    res = spearmanr(a, b)
    return float(res.statistic), float(res.pvalue)
