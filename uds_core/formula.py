"""The UDS formula (spec §2.5) as pure functions: numpy arrays in, numbers out.

Shapes: N examples, L layers. Scores are mean log-probs of the entity tokens (nats, <= 0);
deltas are `full - patched` (positive = the patch damaged the prediction).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

TAU = 0.05
RATIO_EPS = 1e-12  # below this |Δ_S1| the raw ratio is not reported (spec §2.10)


def layer_deltas(full_scores: np.ndarray, patched_scores: np.ndarray) -> np.ndarray:
    """Δ[i, l] = full[i] - patched[i, l]; full (N,), patched (N, L) -> (N, L) float64."""
    full = np.asarray(full_scores, dtype=np.float64)
    patched = np.asarray(patched_scores, dtype=np.float64)
    return full[:, None] - patched


def ke_mask(s1_deltas: np.ndarray, tau: float = TAU) -> np.ndarray:
    """Knowledge-encoding layers: Δ_S1 > tau, strictly. (N, L) or (L,) -> bool of the same shape."""
    return np.asarray(s1_deltas, dtype=np.float64) > tau


def raw_ratio(s2_deltas: np.ndarray, s1_deltas: np.ndarray) -> np.ndarray:
    """Δ_S2 / Δ_S1 where |Δ_S1| > 1e-12, NaN elsewhere (reporting only)."""
    d1 = np.asarray(s1_deltas, dtype=np.float64)
    d2 = np.asarray(s2_deltas, dtype=np.float64)
    ok = np.abs(d1) > RATIO_EPS
    out = np.full(np.broadcast(d1, d2).shape, np.nan)
    np.divide(d2, d1, out=out, where=ok)
    return out


def clipped_ratio(s2_deltas: np.ndarray, s1_deltas: np.ndarray) -> np.ndarray:
    """Layer erasure ratio clip(Δ_S2 / Δ_S1, 0, 1); NaN where |Δ_S1| <= 1e-12."""
    return np.clip(raw_ratio(s2_deltas, s1_deltas), 0.0, 1.0)


def example_uds(s1_deltas: Sequence[float], s2_deltas: Sequence[float], tau: float = TAU) -> float | None:
    """UDS of one example: Σ_KE Δ_S1·LER / Σ_KE Δ_S1 over its L layers; None if no KE layer."""
    d1 = np.asarray(s1_deltas, dtype=np.float64)
    d2 = np.asarray(s2_deltas, dtype=np.float64)
    ke = ke_mask(d1, tau)
    if not ke.any():
        return None
    # Δ_S1 > tau > 0 on KE layers, so the division below is always defined.
    ler = np.clip(d2[ke] / d1[ke], 0.0, 1.0)
    return float(np.sum(d1[ke] * ler) / np.sum(d1[ke]))


def per_example_uds(s1_deltas: np.ndarray, s2_deltas: np.ndarray, tau: float = TAU) -> list[float | None]:
    """`example_uds` for each row of (N, L) delta arrays."""
    d1 = np.asarray(s1_deltas, dtype=np.float64)
    d2 = np.asarray(s2_deltas, dtype=np.float64)
    return [example_uds(a, b, tau) for a, b in zip(d1, d2)]


def model_uds(values: Sequence[float | None]) -> float:
    """Mean over examples with a defined UDS; 0.0 when none is defined (spec §2.5)."""
    scored = [v for v in values if v is not None]
    return float(np.mean(scored)) if scored else 0.0


def bootstrap_ci(values: Sequence[float | None], n_boot: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean UDS, resampling scored examples with a fixed seed.

    None when no example is scored.
    """
    scored = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if scored.size == 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, scored.size, size=(n_boot, scored.size))
    means = scored[draws].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)
