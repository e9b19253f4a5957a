"""How a generation call runs, apart from what it generates: one value that the greedy loop,
transformers' `generate` and the callers above them pass along unchanged."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from uds_core.defaults import MAX_NEW_TOKENS


@dataclass(frozen=True)
class GenOptions:
    """`batch_size`: prompts decoded together; `max_new_tokens`: the most tokens per answer;
    `device` the inputs go to; `mask_id`: a token id also masked out of the attention wherever it
    occurs (Open-Unlearning masks its pad id; None: length masks only); `desc`: the progress
    label (None: the function's own) and `progress`: whether to show it."""
    batch_size: int
    max_new_tokens: int = MAX_NEW_TOKENS
    device: str | torch.device = "cpu"
    mask_id: int | None = None
    desc: str | None = None
    progress: bool = True
