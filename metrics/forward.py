"""Teacher-forced passes: one sweep over a list of encoded sequences -> per-example statistics.

Two paths give the same statistics (the tests hold them to each other):
- padded (`padded_stats`, the straightforward reference): batches of `batch_size` sequences in
  input order, right-padded with the pad id, length masks (reference behaviour), every
  position's logits; `mask_id` = the pad id additionally zeroes every position holding it, which
  is exactly OU's `input_ids != pad_id` mask (SPEC 3.1; with pad = eos, as on Llama-3, that masks
  every in-sequence eos);
- packed (`packed_stats`, the default where the model allows it): the sequences of one prompt
  share one computation of that prompt, groups are packed into rows without padding, and logits
  are computed only where a label is scored (`core.prefix_pack`).
"""

from __future__ import annotations

from typing import Sequence

import torch

from core.arch import LOGITS_KWARGS, keyword_of, transformers_major
from core.batching import attention_mask, batches, right_padded
from core.prefix_pack import choose_rows, group_by_prompt, pack_groups, packed_logits
from core.progress import progress as track
from core.suffix import fast_path_problem
from metrics.encoding import Encoded
from metrics.stats import IGNORE, TokenStats, batch_token_stats, label_stats

KEPT_PER_SEQUENCE = 64   # kept logits per forward = batch_size x this (bounds the logits' memory)


def collate(encs: Sequence[Encoded], pad_id: int, mask_id: int | None = None) -> dict[str, torch.Tensor]:
    """Right-padded (ids, mask) and labels (-100 on padding) for a list of encoded sequences."""
    ids, mask = right_padded([e.input_ids for e in encs], pad_id)
    labels, _ = right_padded([e.labels for e in encs], IGNORE)
    return {"input_ids": ids, "attention_mask": attention_mask(ids, mask, mask_id), "labels": labels}


def teacher_forced_stats(model: torch.nn.Module, encs: Sequence[Encoded], *, batch_size: int, pad_id: int,
                         device: str | torch.device = "cpu", mask_id: int | None = None,
                         desc: str = "forward", progress: bool = True, fast: bool = True) -> list[TokenStats]:
    """Statistics of each sequence, in input order: the packed path when `fast` and the model and
    inputs allow it (no `mask_id`, a family and attention kernel that take packed rows, labels
    that are one block at the end of each sequence), else the padded path."""
    if fast and encs and mask_id is None and packable(encs) and fast_path_problem(model, "block") is None:
        return packed_stats(model, encs, batch_size=batch_size, pad_id=pad_id, device=device, desc=desc,
                            progress=progress)
    return padded_stats(model, encs, batch_size=batch_size, pad_id=pad_id, device=device, mask_id=mask_id,
                        desc=desc, progress=progress)


@torch.no_grad()
def padded_stats(model: torch.nn.Module, encs: Sequence[Encoded], *, batch_size: int, pad_id: int,
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


def prompt_length(enc: Encoded) -> int:
    """Tokens before the first label (the prompt); len(input_ids) when nothing is labelled."""
    return next((t for t, y in enumerate(enc.labels) if y != IGNORE), len(enc.input_ids))


def packable(encs: Sequence[Encoded]) -> bool:
    """Whether each sequence's labels are its own tokens from the first label to the end (what
    the packed path assumes), after a prompt of at least one token."""
    for e in encs:
        p = prompt_length(e)
        if p < 1 or tuple(e.labels[p:]) != tuple(e.input_ids[p:]):
            return False
    return True


@torch.no_grad()
def packed_stats(model: torch.nn.Module, encs: Sequence[Encoded], *, batch_size: int, pad_id: int,
                 device: str | torch.device = "cpu", desc: str = "forward",
                 progress: bool = True) -> list[TokenStats]:
    """The packed path (module docstring); statistics in input order."""
    groups = group_by_prompt([e.input_ids for e in encs], [prompt_length(e) for e in encs])
    rows = choose_rows([g.length for g in groups], model.config)
    logits_kw = keyword_of(type(model).forward, LOGITS_KWARGS) if transformers_major() >= 5 else None
    out: dict[int, TokenStats] = {}
    for chunk in track(_forwards(rows, groups, batch_size), desc=desc, unit="batch", enabled=progress):
        packed = pack_groups(groups, chunk, pad_id)
        logits = packed_logits(model, packed, logits_kw, device)
        for member, scored in packed.scored.items():
            targets = torch.tensor(encs[member].labels[prompt_length(encs[member]):], dtype=torch.long)
            out[member] = label_stats(logits[scored.to(logits.device)], targets.to(logits.device))
    return [out[i] for i in range(len(encs))]


def _forwards(rows: list[list[int]], groups, batch_size: int) -> list[list[list[int]]]:
    """The packed rows split into forwards of at most `batch_size` x KEPT_PER_SEQUENCE scored
    positions each (one row at least), rows in the order given."""
    budget = batch_size * KEPT_PER_SEQUENCE
    out: list[list[list[int]]] = []
    used = budget
    for row in rows:
        kept = sum(sum(len(c) for c in groups[g].continuations) for g in row)
        if used + kept > budget:
            out.append([])
            used = 0
        out[-1].append(row)
        used += kept
    return out
