"""Teacher-forced passes over sequences that share prompts: each distinct prompt computed once.

The sequences of one prompt (an item's answer, its paraphrases and perturbed answers) form a
group: the prompt's tokens once, then each continuation. A tree-shaped causal mask lets a
continuation token see its group's prompt and the earlier tokens of its own continuation, each at
the position it has in its own sequence, so every token attends to the keys of its own full pass.
Groups are packed first-fit-decreasing into rows (several groups to a row, kept apart by the
mask), and logits are kept only where a label is scored: the prompt's last token (the first
label of every continuation of the group) and each continuation token but its last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn as nn

from core.capture import key_cost, layout_mask
from core.packing import least_work


@dataclass(frozen=True)
class Group:
    """One prompt and the continuations that follow it; `members[j]` is the index, in the caller's
    list, of the sequence prompt + continuations[j]."""
    prompt: tuple[int, ...]
    continuations: tuple[tuple[int, ...], ...]
    members: tuple[int, ...]

    @property
    def length(self) -> int:
        return len(self.prompt) + sum(len(c) for c in self.continuations)


def group_by_prompt(sequences: Sequence[Sequence[int]], prompt_lengths: Sequence[int]) -> list[Group]:
    """Groups of the sequences whose first `prompt_lengths[i]` tokens are equal, in order of
    first appearance. Every prompt must hold at least one token."""
    order: dict[tuple[int, ...], list[int]] = {}
    for i, (seq, n) in enumerate(zip(sequences, prompt_lengths)):
        if n < 1:
            raise ValueError(f"sequence {i} has an empty prompt")
        order.setdefault(tuple(seq[:n]), []).append(i)
    return [Group(prompt, tuple(tuple(sequences[i][len(prompt):]) for i in idx), tuple(idx))
            for prompt, idx in order.items()]


@dataclass(frozen=True)
class PackedRows:
    """Groups laid out in R rows of C slots.

    input_ids, position_ids, group, branch: (R, C) long (branch 0 = the prompt, j + 1 = the j-th
    continuation; padding slots get a negative group unique in the row); keep: (R, C) bool, the
    slots whose logits are needed; scored[m]: for member sequence m, the indices into the kept
    slots (row-major order) of the logits that score its labels, in label order.
    """
    input_ids: torch.Tensor
    position_ids: torch.Tensor
    group: torch.Tensor
    branch: torch.Tensor
    keep: torch.Tensor
    scored: dict[int, torch.Tensor]

    def visible(self) -> torch.Tensor:
        """(R, C, C) [row, query, key]: same group, and the key is on the prompt or on the
        query's own continuation (positions are compared by `layout_mask`)."""
        same = self.group[:, None, :] == self.group[:, :, None]
        own = (self.branch[:, None, :] == 0) | (self.branch[:, None, :] == self.branch[:, :, None])
        return same & own


def choose_rows(lengths: Sequence[int], config) -> list[list[int]]:
    """Bins of groups with the least estimated work (slots x (1 + attention cost of a row's
    keys)) among row capacities from the longest group to twice it."""
    per_key = key_cost(config)
    longest = max(lengths)

    def work(bins: list[list[int]], _capacity: int) -> float:
        width = max(sum(lengths[i] for i in row) for row in bins)
        return len(bins) * width * (1 + per_key * width)

    step = max(1, longest // 16)
    return least_work(lengths, range(longest, 2 * longest + 1, step), work)[1]


def pack_groups(groups: Sequence[Group], rows: Sequence[Sequence[int]], pad_id: int) -> PackedRows:
    """Lay out `groups` (indices into it per row, as `choose_rows` gives) into rows."""
    width = max(sum(groups[g].length for g in row) for row in rows)
    cols: dict[str, list[list[int]]] = {k: [] for k in ("ids", "pos", "group", "branch", "keep")}
    where: dict[int, list[tuple[int, int]]] = {}   # member -> (row, slot) of its scoring logits
    for r, row in enumerate(rows):
        ids, pos, grp, br, keep = [], [], [], [], []
        for g in row:
            group, base = groups[g], len(ids)
            p = len(group.prompt)
            ids += group.prompt
            pos += range(p)
            grp += [g] * p
            br += [0] * p
            keep += [0] * p
            for j, (cont, member) in enumerate(zip(group.continuations, group.members)):
                start = len(ids)
                ids += cont
                pos += range(p, p + len(cont))
                grp += [g] * len(cont)
                br += [j + 1] * len(cont)
                keep += [1] * max(len(cont) - 1, 0) + [0] * min(len(cont), 1)
                where[member] = [(r, base + p - 1)] * bool(cont) + [(r, start + t) for t in range(len(cont) - 1)]
            if any(group.continuations):
                keep[base + p - 1] = 1
        n_pad = width - len(ids)
        cols["ids"].append(ids + [pad_id] * n_pad)
        cols["pos"].append(pos + [0] * n_pad)
        cols["group"].append(grp + [-1 - j for j in range(n_pad)])   # padding attends to itself only
        cols["branch"].append(br + [0] * n_pad)
        cols["keep"].append(keep + [0] * n_pad)
    as_long = lambda xs: torch.tensor(xs, dtype=torch.long)  # noqa: E731
    keep = as_long(cols["keep"]).bool()
    kept_index = torch.cumsum(keep.flatten().long(), 0) - 1   # flat slot -> index among kept slots
    scored = {m: kept_index[torch.tensor([r * width + s for r, s in slots], dtype=torch.long)]
              if slots else torch.zeros(0, dtype=torch.long) for m, slots in where.items()}
    return PackedRows(as_long(cols["ids"]), as_long(cols["pos"]), as_long(cols["group"]), as_long(cols["branch"]),
                      keep, scored)


def packed_logits(model: nn.Module, rows: PackedRows, logits_kw: str | None, device) -> torch.Tensor:
    """(n_kept, V) logits of the kept slots, row-major, from one forward of the packed rows.
    `logits_kw`: the forward's `logits_to_keep` argument when it takes a boolean (R, C) mask
    (transformers 5); None computes every slot's logits and selects."""
    mask = layout_mask(model, rows.position_ids.to(device), rows.visible().to(device))
    kwargs = {logits_kw: rows.keep.to(device)} if logits_kw else {}
    logits = model(input_ids=rows.input_ids.to(device), position_ids=rows.position_ids.to(device),
                   attention_mask=mask, use_cache=False, **kwargs).logits
    return logits if logits_kw else logits[rows.keep.to(device)]
