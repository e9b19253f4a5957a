"""Teacher-forced passes: one sweep over a list of encoded sequences -> per-example statistics.

Batches are right-padded with the pad id and length masks (reference behaviour); `mask_id` = the
pad id additionally zeroes every position holding it, which is exactly OU's `input_ids != pad_id`
mask (SPEC 3.1; with pad = eos, as on Llama-3, that masks every in-sequence eos).
"""

from __future__ import annotations

from typing import Sequence

import torch

from core.progress import progress as track
from metrics.encoding import Encoded
from metrics.stats import IGNORE, TokenStats, batch_token_stats
from core.batching import attention_mask, batches, right_padded


def collate(encs: Sequence[Encoded], pad_id: int, mask_id: int | None = None) -> dict[str, torch.Tensor]:
    """Right-padded (ids, mask) and labels (-100 on padding) for a list of encoded sequences."""
    ids, mask = right_padded([e.input_ids for e in encs], pad_id)
    labels, _ = right_padded([e.labels for e in encs], IGNORE)
    return {"input_ids": ids, "attention_mask": attention_mask(ids, mask, mask_id), "labels": labels}


@torch.no_grad()
def teacher_forced_stats(model: torch.nn.Module, encs: Sequence[Encoded], *, batch_size: int, pad_id: int,
                         device: str | torch.device = "cpu", mask_id: int | None = None,
                         desc: str = "forward", progress: bool = True) -> list[TokenStats]:
    """One forward per batch of `batch_size` sequences; statistics in input order."""
    out: list[TokenStats] = []
    for rows in track(batches(len(encs), batch_size), desc=desc, unit="batch", enabled=progress):
        batch = collate([encs[i] for i in rows], pad_id, mask_id)
        logits = model(input_ids=batch["input_ids"].to(device),
                       attention_mask=batch["attention_mask"].to(device), use_cache=False).logits
        out.extend(batch_token_stats(logits, batch["labels"]))
    return out
