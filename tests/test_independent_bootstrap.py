"""The two bootstrap intervals (UDS mean: uds_core.formula.bootstrap_ci; faithfulness AUC:
meta_eval.faithfulness.bootstrap_auc_ci) against scipy.stats.bootstrap and a closed form.

scipy draws its resamples the way both functions do (one `integers(0, n, (n_boot, n))` call per
sample, in order, from a Generator seeded alike), so with the same seed the percentile intervals
must agree to rounding; the AUC statistic on scipy's side is sklearn's roc_auc_score, one call per
resample (and, for many resamples, the Mann-Whitney U / (n_pos n_neg) of scipy). The closed form:
for n normal draws the percentile interval of the mean approaches
mean +- z * s / sqrt(n) (s the plug-in standard deviation), so a wrong level (0.90 for 0.95, or
a one-sided quantile) misses it by many Monte Carlo standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from meta_eval.faithfulness import bootstrap_auc_ci
from uds_core.formula import bootstrap_ci


def _scipy_mean_ci(x: np.ndarray, n_boot: int, seed: int, level: float) -> tuple[float, float]:
    res = stats.bootstrap((x,), np.mean, n_resamples=n_boot, confidence_level=level, method="percentile",
                          rng=np.random.default_rng(seed), vectorized=True)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    return float(roc_auc_score(np.r_[np.ones(len(pos)), np.zeros(len(neg))], np.r_[pos, neg]))


@pytest.mark.parametrize("level", [0.95, 0.9, 0.5])
@pytest.mark.parametrize("seed", [0, 7])
def test_uds_ci_equals_scipy_percentile_bootstrap(level, seed):
    x = np.random.default_rng(100 + seed).beta(2.0, 5.0, size=41)   # UDS-like values in [0, 1]
    got = bootstrap_ci(list(x) + [None, None], n_boot=1500, seed=seed, level=level)  # None: unscored, dropped
    np.testing.assert_allclose(got, _scipy_mean_ci(x, 1500, seed, level), rtol=0, atol=1e-12)


def test_uds_ci_default_level_is_95_percent():
    x = np.random.default_rng(1).uniform(size=30)
    np.testing.assert_allclose(bootstrap_ci(list(x)), _scipy_mean_ci(x, 2000, 0, 0.95), rtol=0, atol=1e-12)


@pytest.mark.parametrize("level,z", [(0.95, 1.959964), (0.8, 1.281552)])
def test_uds_ci_matches_the_normal_closed_form(level, z):
    """n = 400 standard normal draws, 20000 resamples: Monte Carlo error of each bound ~1e-3;
    the 0.95 and 0.90 half-widths differ by 0.016."""
    x = np.random.default_rng(2).normal(size=400)
    half = z * x.std() / np.sqrt(x.size)
    lo, hi = bootstrap_ci(list(x), n_boot=20000, seed=3, level=level)
    assert abs(lo - (x.mean() - half)) < 4e-3 and abs(hi - (x.mean() + half)) < 4e-3


def _auc_rows(pos: np.ndarray, neg: np.ndarray, axis: int = -1) -> np.ndarray:
    """AUC of each resample as the Mann-Whitney U of the positives over n_pos * n_neg (scipy)."""
    u = stats.mannwhitneyu(pos, neg, axis=axis, method="asymptotic").statistic
    return u / (pos.shape[axis] * neg.shape[axis])


def _pools() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    return rng.normal(0.3, 1.0, size=9), rng.normal(0.0, 1.0, size=8)


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_auc_ci_equals_scipy_with_mann_whitney_auc(level):
    pos, neg = _pools()
    got = bootstrap_auc_ci(pos, neg, n_boot=2000, seed=5, level=level)
    res = stats.bootstrap((pos, neg), _auc_rows, n_resamples=2000, confidence_level=level, method="percentile",
                          rng=np.random.default_rng(5), vectorized=True, paired=False)
    expected = (res.confidence_interval.low, res.confidence_interval.high)
    assert 0.0 < expected[0] < expected[1] < 1.0   # an interior interval: the level decides both ends
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_auc_ci_equals_scipy_with_sklearn_auc():
    """The same with sklearn's roc_auc_score per resample (one call each: few resamples)."""
    pos, neg = _pools()
    res = stats.bootstrap((pos, neg), _auc, n_resamples=200, confidence_level=0.9, method="percentile",
                          rng=np.random.default_rng(5), vectorized=False, paired=False)
    np.testing.assert_allclose(bootstrap_auc_ci(pos, neg, n_boot=200, seed=5, level=0.9),
                               (res.confidence_interval.low, res.confidence_interval.high), rtol=0, atol=1e-12)
