"""Harmonic means of SPEC.md 6.1 (reused by the benchmark aggregation in meta_eval).

- `harmonic_mean`: plain n / sum(1/v); undefined (None) if any v <= 0. Used by Mem and the
  leaderboard view without UDS.
- `harmonic_mean_eps`: n / sum(1/(v + 1e-12)); defined for v >= 0 (all zeros -> exactly 1e-12).
  Used by MIA privacy, privacy, model utility, utility and overall.
Either returns None when an input is None (an undefined component makes the aggregate undefined).
"""

from __future__ import annotations

from typing import Sequence

HM_EPS = 1e-12


def harmonic_mean(values: Sequence[float | None]) -> float | None:
    """Plain harmonic mean; None if empty, if any value is None or if any value is <= 0."""
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return len(values) / sum(1.0 / v for v in values)


def harmonic_mean_eps(values: Sequence[float | None], eps: float = HM_EPS) -> float | None:
    """n / sum(1/(v + eps)); None if empty or if any value is None."""
    if not values or any(v is None for v in values):
        return None
    return len(values) / sum(1.0 / (v + eps) for v in values)
