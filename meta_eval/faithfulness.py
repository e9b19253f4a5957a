"""Faithfulness (spec §5.2) and the faithfulness-threshold filter (spec §5.5, rule 2).

Every function here takes scores already in the "higher = more knowledge" orientation (the
knowledge view: raw for knowledge metrics, `1 - value` for erasure metrics), except
`faithfulness`, which orients raw values itself and reports the pool means raw. AUC is unitless
in [0, 1]; 1 = every knowledge-present (P) model scores above every knowledge-absent (N) one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from metrics.ranking import roc_auc, roc_auc_rows
from uds_core.numbers import finite_or_none

MIN_POOL = 2          # models per pool below which the AUC is N/A (spec §5.2)
N_BOOT = 2000
CI_LEVEL = 0.95


def finite(values: Sequence[float | None]) -> np.ndarray:
    """The values that are present and finite, as float64 (missing models are dropped)."""
    return np.array([f for f in map(finite_or_none, values) if f is not None], dtype=np.float64)


def bootstrap_auc_ci(pos: np.ndarray, neg: np.ndarray, n_boot: int = N_BOOT, seed: int = 0,
                     level: float = CI_LEVEL) -> tuple[float, float]:
    """Percentile interval of the AUC, resampling each pool with replacement (pool sizes kept)."""
    rng = np.random.default_rng(seed)
    p = np.asarray(pos, dtype=np.float64)[rng.integers(0, len(pos), size=(n_boot, len(pos)))]
    n = np.asarray(neg, dtype=np.float64)[rng.integers(0, len(neg), size=(n_boot, len(neg)))]
    aucs = roc_auc_rows(p, n)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(aucs, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def knowledge_threshold(pos: np.ndarray, neg: np.ndarray) -> float | None:
    """The t of the rule "P iff score >= t" with the best pool accuracy (spec §5.5).

    Candidates are the midpoints of consecutive distinct pooled values; the first maximum in
    increasing t wins. None when fewer than two distinct values exist (no candidate).
    """
    pos, neg = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)
    values = np.unique(np.concatenate([pos, neg]))
    if len(values) < 2:
        return None
    candidates = (values[:-1] + values[1:]) / 2.0
    correct = (pos[None, :] >= candidates[:, None]).sum(axis=1) + (neg[None, :] < candidates[:, None]).sum(axis=1)
    return float(candidates[int(np.argmax(correct))])  # argmax: first of equal maxima


def classified_absent(knowledge_value: float, threshold: float | None) -> bool:
    """Filter rule 2: keep a model whose knowledge-view value is <= t (the rule calls it N).
    Without a threshold (degenerate pools) the filter keeps everything."""
    return threshold is None or knowledge_value <= threshold


@dataclass(frozen=True)
class Faithfulness:
    auc_roc: float | None               # None: fewer than MIN_POOL models in a pool
    p_mean: float | None                # raw (un-oriented) mean over the P pool
    n_mean: float | None                # raw mean over the N pool
    ci95: tuple[float, float] | None    # bootstrap interval of auc_roc
    n_p: int
    n_n: int
    threshold: float | None             # knowledge-view threshold of the filter

    def to_dict(self) -> dict:
        return {"auc_roc": self.auc_roc, "p_mean": self.p_mean, "n_mean": self.n_mean,
                "ci95": list(self.ci95) if self.ci95 else None, "n_p": self.n_p, "n_n": self.n_n,
                "threshold": self.threshold}


def faithfulness(p_raw: Sequence[float | None], n_raw: Sequence[float | None], invert: bool,
                 n_boot: int = N_BOOT, seed: int = 0) -> Faithfulness:
    """AUC of P vs N on the knowledge view (`1 - value` when `invert`), raw pool means, a bootstrap
    interval and the filter threshold. Missing values are dropped before anything is computed."""
    p, n = finite(p_raw), finite(n_raw)
    kp, kn = (1.0 - p, 1.0 - n) if invert else (p, n)
    mean = lambda a: float(a.mean()) if a.size else None  # noqa: E731
    enough = p.size >= MIN_POOL and n.size >= MIN_POOL
    return Faithfulness(
        auc_roc=roc_auc(kp, kn) if enough else None, p_mean=mean(p), n_mean=mean(n),
        ci95=bootstrap_auc_ci(kp, kn, n_boot, seed) if enough else None, n_p=int(p.size), n_n=int(n.size),
        threshold=knowledge_threshold(kp, kn) if p.size and n.size else None)
