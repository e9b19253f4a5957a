"""Batching of token-id sequences: the one owner of padding, length masks, batch ranges and the pad id.

Every forward in the toolkit (UDS patching, teacher-forced metrics, entity states, training,
generation) builds its attention mask from the sequences' lengths, so the pad id never changes
a number; padding side is right except for generation (left).
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import PreTrainedTokenizerBase


def pad_token_id(tok: PreTrainedTokenizerBase) -> int:
    """The tokenizer's pad id, else its eos id (spec §2.6: pad = eos when a tokenizer has none),
    else 0: masks come from lengths, so any id serves for padding."""
    for candidate in (tok.pad_token_id, tok.eos_token_id):
        if candidate is not None:
            return candidate
    return 0


def batches(n: int, size: int) -> list[range]:
    """Consecutive index ranges of at most `size` covering range(n)."""
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def right_pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[list[list[int]], list[list[int]]]:
    """(padded ids, length masks) of right-padded rows; masks are 1 on real tokens only."""
    width = max(len(s) for s in seqs)
    ids = [list(s) + [pad_id] * (width - len(s)) for s in seqs]
    mask = [[1] * len(s) + [0] * (width - len(s)) for s in seqs]
    return ids, mask


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[list[list[int]], list[list[int]]]:
    """(padded ids, length masks) of left-padded rows (for generation)."""
    width = max(len(s) for s in seqs)
    ids = [[pad_id] * (width - len(s)) + list(s) for s in seqs]
    mask = [[0] * (width - len(s)) + [1] * len(s) for s in seqs]
    return ids, mask


def right_padded(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`right_pad` as (B, T) long tensors (ids, length mask)."""
    ids, mask = right_pad(seqs, pad_id)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)


def attention_mask(ids: torch.Tensor, lengths_mask: torch.Tensor, masked_id: int | None) -> torch.Tensor:
    """Length mask; with `masked_id`, also 0 wherever the id equals it. Open-Unlearning's mask is
    `input_ids != pad_id`: pass the pad id (rows padded with it) to reproduce it exactly, which
    masks every in-sequence pad token too (all `<|eot_id|>` when pad = eos, as on Llama-3)."""
    return lengths_mask if masked_id is None else lengths_mask * (ids != masked_id).long()
