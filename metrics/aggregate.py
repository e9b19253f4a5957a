"""Harmonic means of spec §6.1 (reused by the benchmark aggregation in meta_eval).

- `harmonic_mean`: plain n / sum(1/v); undefined (None) if any v <= 0. Used by the leaderboard
  view without UDS.
- `harmonic_mean_limit`: the plain HM continued to its limit: 0 when a value is 0 (spec §6.1 as
  amended: Mem is 0, not undefined, when ES = 1 or any other term is 0); None if any v < 0.
  Used by Mem.
- `harmonic_mean_eps`: n / sum(1/(v + 1e-12)); defined for v >= 0 (all zeros -> exactly 1e-12).
  Used by MIA privacy, privacy, model utility, utility and overall.
- `harmonic_mean_ou`: Open-Unlearning's `scipy.stats.hmean`, 1 / mean(1/v) (a zero gives 0);
  model utility under `--parity open-unlearning`.
Each returns None when an input is None (an undefined component makes the aggregate undefined).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

HM_EPS = 1e-12


def harmonic_mean(values: Sequence[float | None]) -> float | None:
    """Plain harmonic mean; None if empty, if any value is None or if any value is <= 0."""
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return len(values) / sum(1.0 / v for v in values)


def harmonic_mean_limit(values: Sequence[float | None]) -> float | None:
    """Plain harmonic mean, 0.0 when a value is 0 (its limit); None if empty, if any value is
    None or negative. Equals `harmonic_mean` whenever every value is positive."""
    if not values or any(v is None or v < 0 for v in values):
        return None
    if any(v == 0 for v in values):
        return 0.0
    return harmonic_mean(values)


def harmonic_mean_eps(values: Sequence[float | None], eps: float = HM_EPS) -> float | None:
    """n / sum(1/(v + eps)); None if empty or if any value is None."""
    if not values or any(v is None for v in values):
        return None
    return len(values) / sum(1.0 / (v + eps) for v in values)


def harmonic_mean_ou(values: Sequence[float | None]) -> float | None:
    """`scipy.stats.hmean` as Open-Unlearning aggregates model utility: 1 / mean(1 / v), 0.0 when
    a value is 0; None if empty, if any value is None or negative (scipy: NaN)."""
    if not values or any(v is None or v < 0 for v in values):
        return None
    with np.errstate(divide="ignore"):
        return float(1.0 / np.mean(1.0 / np.asarray(values, dtype=float)))
