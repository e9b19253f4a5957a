"""Teacher-forced passes: one sweep over a list of encoded sequences -> per-example statistics.

Batches of `batch_size` sequences in input order, right-padded with the pad id, length masks
(reference behaviour); `mask_id` = the pad id additionally zeroes every position holding it,
which is exactly OU's `input_ids != pad_id` mask (spec §3.1; with pad = eos, as on Llama-3, that
masks every in-sequence eos). `fast` computes logits only where a label is scored (the LM head
is row-wise, so those rows are the same numbers); the straightforward pass computes every
position's logits.

Batches stay in input order: a row's numbers depend on the width it is padded to (the attention
kernel blocks its reductions by key count), so sorting by length, packing several sequences
into a row or sharing a prompt through a cache would change values in their last float32 bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from uds_core.arch import LOGITS_KWARGS, keyword_of, transformers_major
from uds_core.batching import attention_mask, batches, right_padded
from uds_core.progress import progress as track
from metrics.encoding import Encoded
from metrics.stats import IGNORE, TokenStats, batch_token_stats, label_stats


def collate(encs: Sequence[Encoded], pad_id: int, mask_id: int | None = None) -> dict[str, torch.Tensor]:
    """Right-padded (ids, mask) and labels (-100 on padding) for a list of encoded sequences."""
    ids, mask = right_padded([e.input_ids for e in encs], pad_id)
    labels, _ = right_padded([e.labels for e in encs], IGNORE)
    return {"input_ids": ids, "attention_mask": attention_mask(ids, mask, mask_id), "labels": labels}


@dataclass(frozen=True)
class PassOptions:
    """How batched teacher-forced passes run: `batch_size` sequences a forward, right-padded with
    `pad_id`, on `device`; `mask_id`, a token id also masked out of the attention wherever it
    occurs (Open-Unlearning masks its pad id; None: length masks only); the progress label `desc`
    and whether to show it."""
    batch_size: int
    pad_id: int
    device: str | torch.device = "cpu"
    mask_id: int | None = None
    desc: str = "forward"
    progress: bool = True


def teacher_forced_stats(model: torch.nn.Module, encs: Sequence[Encoded], opts: PassOptions, *,
                         fast: bool = True) -> list[TokenStats]:
    """Statistics of each sequence, in input order (module docstring)."""
    return padded_stats(model, encs, opts, labels_only=fast)


@torch.no_grad()
def padded_stats(model: torch.nn.Module, encs: Sequence[Encoded], opts: PassOptions, *,
                 labels_only: bool = False) -> list[TokenStats]:
    """One forward per batch of `opts.batch_size` sequences; statistics in input order.
    `labels_only`: logits only at the positions that score a label (where the forward can select
    them)."""
    keep_kw = keyword_of(type(model).forward, LOGITS_KWARGS) if labels_only and transformers_major() >= 5 else None
    out: list[TokenStats] = []
    device = opts.device
    for rows in track(batches(len(encs), opts.batch_size), desc=opts.desc, unit="batch", enabled=opts.progress):
        batch = collate([encs[i] for i in rows], opts.pad_id, opts.mask_id)
        inputs = {"input_ids": batch["input_ids"].to(device), "attention_mask": batch["attention_mask"].to(device)}
        if keep_kw is None:
            out.extend(batch_token_stats(model(**inputs, use_cache=False).logits, batch["labels"]))
            continue
        scoring = torch.zeros_like(batch["labels"], dtype=torch.bool)   # position t scores label t + 1
        scoring[:, :-1] = batch["labels"][:, 1:] != IGNORE
        logits = model(**inputs, use_cache=False, **{keep_kw: scoring.to(device)}).logits   # (n_scoring, V)
        start = 0
        for labels, n in zip(batch["labels"], scoring.sum(1).tolist()):
            targets = labels[1:][labels[1:] != IGNORE].to(logits.device)
            out.append(label_stats(logits[start:start + n], targets))
            start += n
    return out
