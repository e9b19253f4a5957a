"""Fits of the capacity experiment (spec-probes §1.2): numbers in, constants out.

- capacity = alpha * params: least squares through the origin, and with a free intercept; R^2.
- loss-threshold membership inference: F1 at the best threshold.
- the source's law F1 = 1/2 (1 + c1 * sigmoid(c2 * capacity / |D| + c3)), fitted afresh.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import curve_fit
from scipy.special import expit
from scipy.stats import linregress, t as student_t
from sklearn.metrics import precision_recall_curve

PRINTED_LAW = (1.34, -0.034, -33.14)   # c1, c2, c3 as the source prints them


@dataclass(frozen=True)
class LinearFit:
    alpha: float            # slope through the origin (bits per parameter)
    r2_origin: float        # 1 - SS_res / SS_tot (centred) of the through-origin line
    slope: float            # free-intercept fit
    intercept: float
    r2: float               # R^2 of the free-intercept fit

    def to_dict(self) -> dict:
        return asdict(self)


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - pred) ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")


def fit_capacity(params: ArrayLike, capacity: ArrayLike) -> LinearFit:
    """capacity (bits) against params, both shape (k,), k >= 2 distinct params."""
    x, y = np.asarray(params, dtype=np.float64), np.asarray(capacity, dtype=np.float64)
    alpha = float((x * y).sum() / (x * x).sum())
    lr = linregress(x, y)
    return LinearFit(alpha, _r2(y, alpha * x), float(lr.slope), float(lr.intercept), float(lr.rvalue ** 2))


@dataclass(frozen=True)
class SlopeCI:
    alpha: float      # slope through the origin (bits per parameter)
    se: float         # its least-squares standard error, sqrt(SS_res / (k - 1) / sum(params^2))
    low: float        # alpha -/+ t(level, k - 1) * se
    high: float
    df: int           # k - 1 residual degrees of freedom (k model sizes)

    def to_dict(self) -> dict:
        return asdict(self)


def fit_alpha_ci(params: ArrayLike, capacity: ArrayLike, level: float = 0.95) -> SlopeCI:
    """Through-origin slope of capacity (bits) on params, shape (k,), k >= 2, with its Student-t
    interval from the least-squares standard error: it measures how far the sizes scatter about
    one line, not the seed-to-seed spread of each size's capacity (one seed per run)."""
    x, y = np.asarray(params, dtype=np.float64), np.asarray(capacity, dtype=np.float64)
    sxx = float((x * x).sum())
    alpha = float((x * y).sum()) / sxx
    df = len(x) - 1
    se = float(np.sqrt(((y - alpha * x) ** 2).sum() / df / sxx))
    half = float(student_t.ppf(0.5 + level / 2, df)) * se
    return SlopeCI(alpha, se, alpha - half, alpha + half, df)


def best_threshold_f1(member_nll: ArrayLike, fresh_nll: ArrayLike) -> tuple[float, float]:
    """(best F1, its NLL threshold) of the attack "member if NLL <= threshold", members positive."""
    m, f = np.asarray(member_nll, dtype=np.float64), np.asarray(fresh_nll, dtype=np.float64)
    labels = np.r_[np.ones(len(m)), np.zeros(len(f))]
    precision, recall, thresholds = precision_recall_curve(labels, -np.r_[m, f])
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)[:-1]
    i = int(np.argmax(f1))
    return float(f1[i]), float(-thresholds[i])


def sigmoid_law(ratio: ArrayLike, c1: float, c2: float, c3: float) -> np.ndarray:
    """F1 = 1/2 (1 + c1 * sigmoid(c2 * ratio + c3)), ratio = capacity (bits) / |D| (sequences)."""
    return 0.5 * (1.0 + c1 * expit(c2 * np.asarray(ratio, dtype=np.float64) + c3))


@dataclass(frozen=True)
class LawFit:
    c1: float
    c2: float
    c3: float
    rmse: float
    rmse_printed: float     # the source's printed constants on the same points
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def fit_sigmoid_law(ratio: ArrayLike, f1: ArrayLike) -> LawFit:
    """Nonlinear least squares of `sigmoid_law` to (ratio, F1) points, shape (k,), k >= 3."""
    r, y = np.asarray(ratio, dtype=np.float64), np.asarray(f1, dtype=np.float64)
    scale = 1.0 / float(np.median(r))        # start where the sigmoid turns inside the data
    (c1, c2, c3), _ = curve_fit(sigmoid_law, r, y, p0=(1.0, scale, -1.0), maxfev=20000)
    rmse = float(np.sqrt(np.mean((sigmoid_law(r, c1, c2, c3) - y) ** 2)))
    printed = float(np.sqrt(np.mean((sigmoid_law(r, *PRINTED_LAW) - y) ** 2)))
    return LawFit(float(c1), float(c2), float(c3), rmse, printed, len(r))
