"""Token log-probabilities: the one place where logits become log p(target).

Teacher-forced metrics, the unlearning losses, the capacity experiment's code lengths, the
engine's entity scores and the logit lens all read log p(y_t | y_<t) through these two functions,
so a change of numerics (dtype, masking) has one home. No dtype is changed here: callers that
want float32 cast the logits first.
"""

from __future__ import annotations

import torch


def gather_targets(logprobs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p of each target id: `logprobs` (..., V) log-softmax rows, `targets` (...) int ids ->
    (...) log-probs (nats, the dtype of `logprobs`)."""
    return logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log-softmax of `logits` (..., V) read at `targets` (...): (...) log-probs in nats."""
    return gather_targets(torch.log_softmax(logits, dim=-1), targets)
