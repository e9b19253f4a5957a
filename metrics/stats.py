"""Per-example statistics of one teacher-forced pass (spec §3.2).

Everything the output-level metrics need from a forward pass is reduced here, per example, so
the logits can be dropped right after each batch: Prob, Truth Ratio and the MIA LOSS/ZLib use
`avg_loss`; EM/ES use `preds`/`targets`; Min-K uses `logprobs`; Min-K++ uses `zscores`.

Conventions: logits at position p score the label at p + 1; label -100 marks ignored positions.
A = labelled tokens (answer + final eos); A⁻ = A without its last element.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from uds_core.logprobs import gather_targets

IGNORE = -100
MINKPP_VAR_FLOOR = 1e-6  # spec §4.3: sigma^2 = max(E[l^2] - mu^2, 1e-6)


@dataclass(frozen=True)
class TokenStats:
    """One example's statistics. Arrays over A⁻ have length `n_labels - 1` (0 when n_labels <= 1)."""
    avg_loss: float          # mean cross-entropy over A (nats, eos included)
    n_labels: int            # |A|
    preds: np.ndarray        # argmax token ids over A⁻ (int64)
    targets: np.ndarray      # label ids over A⁻ (int64)
    logprobs: np.ndarray     # log p(label) over A⁻ (float64, nats)
    zscores: np.ndarray      # Min-K++ z-scores over A⁻ (float64)


def minkpp_z(logprobs_full: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Min-K++ z per position: (lp_t - mu_t) / sigma_t, mu/sigma of the log-prob under the model's
    own next-token distribution. logprobs_full: (n, V) log-softmax rows; targets: (n,) ids."""
    lp = logprobs_full.float()  # fp32 as spec §4.3 asks, whatever the model dtype
    p = lp.exp()
    mu = (p * lp).sum(-1)
    var = ((p * lp.square()).sum(-1) - mu.square()).clamp_min(MINKPP_VAR_FLOOR)
    return (gather_targets(lp, targets) - mu) / var.sqrt()


def token_stats(logits: torch.Tensor, labels: torch.Tensor) -> TokenStats:
    """Statistics of one sequence. logits: (L, V); labels: (L,) aligned with the inputs."""
    shifted = labels[1:]
    pos = (shifted != IGNORE).nonzero().squeeze(-1)
    return label_stats(logits[:-1][pos], shifted[pos])


def label_stats(scoring_logits: torch.Tensor, targets: torch.Tensor) -> TokenStats:
    """Statistics of one sequence from the logits that score its labels. scoring_logits: (|A|, V),
    row t the logits of the position before label t; targets: (|A|,) the labels (A, eos last)."""
    logprobs_full = torch.log_softmax(scoring_logits.float(), dim=-1)  # (|A|, V)
    tok_lp = gather_targets(logprobs_full, targets)
    n = int(targets.numel())
    avg_loss = float(-tok_lp.mean()) if n else float("nan")
    head = slice(0, max(n - 1, 0))  # A⁻: drop the last labelled token (the eos)
    return TokenStats(
        avg_loss=avg_loss,
        n_labels=n,
        preds=logprobs_full[head].argmax(-1).cpu().numpy().astype(np.int64),
        targets=targets[head].cpu().numpy().astype(np.int64),
        logprobs=tok_lp[head].cpu().double().numpy(),
        zscores=minkpp_z(logprobs_full[head], targets[head]).cpu().double().numpy(),
    )


def batch_token_stats(logits: torch.Tensor, labels: torch.Tensor) -> list[TokenStats]:
    """`token_stats` for each row. logits: (B, L, V); labels: (B, L), -100 on prompt and padding."""
    # Reduced on the logits' device: only the small per-token arrays travel to the CPU.
    logits, labels = logits.detach(), labels.detach().to(logits.device)
    return [token_stats(logits[b], labels[b]) for b in range(labels.shape[0])]


def prob(stats: TokenStats) -> float:
    """exp(-avg_loss): the geometric-mean token probability of the labelled tokens (in (0, 1])."""
    return float(np.exp(-stats.avg_loss))
