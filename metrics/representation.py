"""Representation-level erasure scores (spec §4.5): CKA, Logit Lens, Fisher Masked.

All three are anchored on the full and retain models and oriented as erasure scores:
full -> 0, retain -> 1 (Logit Lens: 0.99999998 because of EPS), None when no layer/item qualifies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

EPS = 1e-8
LENS_TAU = 0.05            # a layer counts for an item when d_ret > 0.05 nats (strict)


# --- CKA -----------------------------------------------------------------------------------------

def linear_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Linear CKA of two (N, D) row-aligned matrices, columns centred, computed in fp32.

    ||YᵀX||_F² / (||XᵀX||_F · ||YᵀY||_F); 0 when the denominator is below EPS. When N < D the
    equal N×N Gram form (trace identities) is used; it is cheaper and gives the same number.
    """
    x = x.float() - x.float().mean(0, keepdim=True)
    y = y.float() - y.float().mean(0, keepdim=True)
    if x.shape[0] < x.shape[1]:
        kx, ky = x @ x.T, y @ y.T
        num, dx, dy = (kx * ky).sum(), kx.norm(), ky.norm()
    else:
        num, dx, dy = (y.T @ x).square().sum(), (x.T @ x).norm(), (y.T @ y).norm()
    denom = float(dx * dy)
    return float(num) / denom if denom >= EPS else 0.0


def cka_score(full_vs_retain: Sequence[float], model_vs_retain: Sequence[float]) -> float | None:
    """Weighted per-layer CKA erasure.

    c_l = CKA(H_full, H_ret), u_l = CKA(H_model, H_ret);
    erasure_l = clip((u_l - c_l) / (1 - c_l + EPS), 0, 1), w_l = max(1 - c_l, 0);
    score = sum w·erasure / sum w over layers with w_l > EPS (None if none).
    """
    num = den = 0.0
    for c, u in zip(full_vs_retain, model_vs_retain):
        w = max(1.0 - c, 0.0)
        if w > EPS:
            num += w * min(1.0, max(0.0, (u - c) / (1.0 - c + EPS)))
            den += w
    return num / den if den > 0 else None


# --- Logit Lens ----------------------------------------------------------------------------------

def logit_lens_item(k_full: np.ndarray, k_retain: np.ndarray, k_model: np.ndarray) -> float | None:
    """One item's Logit Lens erasure from per-layer entity log-probs k (shape (L,), nats).

    d_ret = k_full - k_ret, d_model = k_full - k_model; over layers with d_ret > 0.05:
    sum d_ret·clip(d_model/(d_ret + EPS), 0, 1) / sum d_ret; None (item skipped) if that sum <= EPS.
    """
    d_ret = np.asarray(k_full, float) - np.asarray(k_retain, float)
    d_model = np.asarray(k_full, float) - np.asarray(k_model, float)
    keep = d_ret > LENS_TAU
    den = float(d_ret[keep].sum())
    if den <= EPS:
        return None
    ratio = np.clip(d_model[keep] / (d_ret[keep] + EPS), 0.0, 1.0)
    return float((d_ret[keep] * ratio).sum() / den)


def logit_lens_score(k_full: np.ndarray, k_retain: np.ndarray,
                     k_model: np.ndarray) -> tuple[float | None, list[float | None]]:
    """Mean of `logit_lens_item` over items with a value. k_*: (L, N) layer × item log-probs.

    Returns (score or None, per-item values with None for skipped items).
    """
    per_item = [logit_lens_item(k_full[:, i], k_retain[:, i], k_model[:, i]) for i in range(k_full.shape[1])]
    vals = [v for v in per_item if v is not None]
    return (float(np.mean(vals)) if vals else None), per_item


# --- Fisher Masked -------------------------------------------------------------------------------

@dataclass(frozen=True)
class FisherMask:
    """One block's mask for one fraction p, with the anchor means over it."""
    indices: torch.Tensor   # (m,) positions in the block's flattened parameter vector
    mean_retain: float      # mean F_ret over the mask
    mean_full: float        # mean F_full over the mask

    @property
    def excess_full(self) -> float:
        return self.mean_retain - self.mean_full


def mask_size(n_params: int, fraction: float) -> int:
    """max(1, floor(p · n)) entries per block."""
    return max(1, math.floor(fraction * n_params))


def _arith(t: torch.Tensor, model_dtype: bool) -> torch.Tensor:
    """The tensor Fisher arithmetic runs on: fp32 by default, as stored (the model dtype, e.g. bf16)
    under parity `reference`."""
    return t if model_dtype else t.float()


def fisher_mask(f_retain: torch.Tensor, f_full: torch.Tensor, fraction: float,
                model_dtype: bool = False) -> FisherMask:
    """Top entries of a = max(F_ret - F_full, 0) for one block (flattened diagonal Fishers).
    `model_dtype`: the difference, the top-k and the two means in the Fishers' own dtype, as the
    reference computes them (bf16 Fishers of a bf16 model)."""
    f_ret, f_ful = _arith(f_retain, model_dtype), _arith(f_full, model_dtype)
    a = (f_ret - f_ful).clamp_min(0)
    idx = torch.topk(a, mask_size(a.numel(), fraction)).indices
    return FisherMask(idx, float(f_ret[idx].mean()), float(f_ful[idx].mean()))


def fisher_masked_score(masks: Sequence[FisherMask], f_model: Sequence[torch.Tensor],
                        model_dtype: bool = False) -> float | None:
    """Weighted Fisher erasure over blocks (one mask and one flattened Fisher per block).

    excess_model_l = mean F_ret[M_l] - mean F_model[M_l];
    erasure_l = 1 - clip(excess_model_l / (excess_full_l + EPS), 0, 1) (1 if excess_full_l <= EPS);
    weight excess_full_l; mean over blocks with weight > EPS (None if none). `model_dtype`: the
    mean of F_model over the mask in its own dtype (the reference's).
    """
    num = den = 0.0
    for mask, f in zip(masks, f_model):
        w = mask.excess_full
        if w <= EPS:
            continue  # such a block has no weight, so its erasure (1 by the rule) cannot matter
        excess_model = mask.mean_retain - float(_arith(f, model_dtype)[mask.indices].mean())
        num += w * (1.0 - min(1.0, max(0.0, excess_model / (w + EPS))))
        den += w
    return num / den if den > 0 else None
