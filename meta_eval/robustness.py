"""Robustness of a metric to quantisation (Q) and relearning (R), spec §5.3-5.6.

All values are in the knowledge view (raw for knowledge metrics, `1 - value` for erasure
metrics; spec §5.4: the denominators are not invariant under m -> 1 - m, so the caller inverts
before calling). Q and R are unitless in [0, 1]; 1 = the perturbation moved the metric exactly as
it should (Q: not at all; R: as much as it moved the retain model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Sequence

import numpy as np

from metrics.aggregate import harmonic_mean
from uds_core.numbers import finite_or_none

EPS = 1e-12               # spec §5.4 / 11: the value is not published; 0/0 then gives 1
UTILITY_REL_MIN = 0.8     # spec §5.5 rule 1


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def q_symmetric(before, after, eps: float = EPS) -> np.ndarray:
    """1 - clip(|after - before| / (|before| + |after| + eps), 0, 1), elementwise."""
    b, a = _arr(before), _arr(after)
    return 1.0 - np.clip(np.abs(a - b) / (np.abs(b) + np.abs(a) + eps), 0.0, 1.0)


def r_symmetric(unl_before, unl_after, ret_before, ret_after, eps: float = EPS) -> np.ndarray:
    """1 - clip(|Δ_unl - Δ_ret| / (|Δ_unl| + |Δ_ret| + eps), 0, 1) with Δ = after - before."""
    du, dr = _arr(unl_after) - _arr(unl_before), _arr(ret_after) - _arr(ret_before)
    return 1.0 - np.clip(np.abs(du - dr) / (np.abs(du) + np.abs(dr) + eps), 0.0, 1.0)


def _capped_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """clip(num / den, 0, 1); a zero denominator (the unperturbed side did not move) gives 1.
    The lower clip is this toolkit's choice: the one-way forms leave it open (spec §5.4)."""
    out = np.ones(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return np.clip(out, 0.0, 1.0)


def q_oneway(before, after, eps: float = EPS) -> np.ndarray:
    """OU's one-directional Q = min(m_before / m_after, 1) as the reference's notes quote it
    (the orientation of this ratio is [unknown], spec §11)."""
    return _capped_ratio(_arr(before), _arr(after))


def r_oneway(unl_before, unl_after, ret_before, ret_after, eps: float = EPS) -> np.ndarray:
    """OU's one-directional R = min(Δ_ret / Δ_unl, 1) with Δ = m_before - m_after."""
    return _capped_ratio(_arr(ret_before) - _arr(ret_after), _arr(unl_before) - _arr(unl_after))


@dataclass(frozen=True)
class Form:
    q: Callable[..., np.ndarray]
    r: Callable[..., np.ndarray]


FormName = Literal["symmetric", "oneway"]   # the keys of FORMS
FORMS: dict[str, Form] = {"symmetric": Form(q_symmetric, r_symmetric), "oneway": Form(q_oneway, r_oneway)}


def hm_pair(a: float | None, b: float | None) -> float | None:
    """HM(a, b) = 2ab / (a + b) for scores in [0, 1]: None if either is missing, 0 if either is 0
    (the limit; the plain harmonic mean leaves it undefined)."""
    if a is None or b is None:
        return None
    return harmonic_mean([a, b]) if a > 0 and b > 0 else 0.0


def passes_utility(utility_rel: float | None, minimum: float = UTILITY_REL_MIN) -> bool:
    """Filter rule 1: utility_rel >= 0.8 (a model without utility_rel cannot pass)."""
    return utility_rel is not None and utility_rel >= minimum


@dataclass(frozen=True)
class Robustness:
    quantization: float | None    # mean Q over kept models (None: no model)
    relearning: float | None      # mean R over kept models (None: no model or no retain values)
    agg: float | None             # HM(quantization, relearning)
    n_quantization: int
    n_relearning: int

    def to_dict(self) -> dict:
        return {"quantization": self.quantization, "relearning": self.relearning, "agg": self.agg,
                "n_quantization": self.n_quantization, "n_relearning": self.n_relearning}


def _present(*values: float | None) -> bool:
    return all(finite_or_none(v) is not None for v in values)


def robustness(kept: Sequence[str], before: Mapping[str, float | None], quantized: Mapping[str, float | None],
               relearned: Mapping[str, float | None], retain_before: float | None, retain_after: float | None,
               *, form: FormName = "symmetric", eps: float = EPS) -> Robustness:
    """Mean Q and mean R over the kept models (knowledge-view values by model name), and their HM.
    A model enters Q (R) only if its before and quantised (relearned) values are present."""
    f = FORMS[form]
    q_names = [m for m in kept if _present(before.get(m), quantized.get(m))]
    r_names = [m for m in kept if _present(before.get(m), relearned.get(m))] \
        if _present(retain_before, retain_after) else []
    q = f.q([before[m] for m in q_names], [quantized[m] for m in q_names], eps)
    r = f.r([before[m] for m in r_names], [relearned[m] for m in r_names],
            retain_before if r_names else 0.0, retain_after if r_names else 0.0, eps)
    q_mean = float(q.mean()) if q_names else None
    r_mean = float(r.mean()) if r_names else None
    return Robustness(q_mean, r_mean, hm_pair(q_mean, r_mean), len(q_names), len(r_names))
