"""Row layout of the fast engine's suffix passes: entity windows packed into rows.

A suffix pass runs only the patch windows (T_i tokens of example i, at positions a_i .. a_i+T_i-1)
through the blocks above the patch. Windows differ in length (1 to ~10 tokens), so one window per
row would pad every row to the longest and waste about half the work. Instead the windows of a
group of examples are packed first-fit-decreasing into rows of C >= max T_i slots (C chosen by
a cost estimate); several windows share a row and a block-diagonal mask keeps them apart.

Keys of a row: P prefix slots holding, for each example in the row, the target's cached
positions 0 .. a_i - 1 (unpatched, shared by that example's window), then the row's window
slots. The variants of every patched layer use the same packing, side by side in the same row
(one copy of the C slots per layer), so the prefix keys are stored once, not once per layer.
A query (example i, position p) may attend to example i's prefix slots and to its own copy of
its window at positions <= p, within the layer's sliding window if it has one: the same keys,
by position, as in the full-sequence pass. Padding slots attend only to themselves and hold a
copy of a real state, so they stay finite and invisible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import torch

_NO_KEY = -(1 << 30)  # segment id of padding prefix slots: equal to no query's segment


@dataclass(frozen=True)
class Packing:
    """G examples' windows in R rows of C slots (layout shared by every patched layer).

    Slot tensors are (R, C): `site` indexes the batch's flat site list (padding: a real site of
    the row), `real` marks window tokens, `pos` is the sequence position (padding: 0), `seg` the
    local example index 0..G-1 (padding: a negative id unique in its row). Prefix-key tensors
    are (R, P): `key_example` (batch index), `key_pos`, `key_seg` (padding: _NO_KEY).
    `segments` lists the local example of each window in row-major order.
    """
    examples: list[int]
    site: torch.Tensor
    real: torch.Tensor
    pos: torch.Tensor
    seg: torch.Tensor
    key_example: torch.Tensor
    key_pos: torch.Tensor
    key_seg: torch.Tensor
    segments: list[int]

    @property
    def rows(self) -> int:
        return self.site.shape[0]

    @property
    def width(self) -> int:
        return self.site.shape[1]

    @property
    def prefix(self) -> int:
        return self.key_pos.shape[1]


def first_fit_decreasing(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """Indices of `lengths` grouped into bins of at most `capacity`, longest first."""
    bins: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda k: (-lengths[k], k)):
        slot = next((b for b, r in enumerate(room) if r >= lengths[i]), None)
        if slot is None:
            bins.append([])
            room.append(capacity)
            slot = len(bins) - 1
        bins[slot].append(i)
        room[slot] -= lengths[i]
    return bins


def least_work(lengths: Sequence[int], capacities: Iterable[int],
               work: Callable[[list[list[int]], int], float]) -> tuple[int, list[list[int]]]:
    """(capacity, bins) of the first-fit-decreasing packing of `lengths` whose estimated
    `work(bins, capacity)` is least among `capacities` (the first of equals)."""
    best = None
    for capacity in capacities:
        bins = first_fit_decreasing(lengths, capacity)
        cost = work(bins, capacity)
        if best is None or cost < best[0]:
            best = (cost, capacity, bins)
    return best[1], best[2]


def choose_bins(lengths: Sequence[int], prefixes: Sequence[int], copies: int, key_cost: float
                ) -> tuple[int, list[list[int]]]:
    """(row width C, bins) with the least estimated work among C = max .. 2 max of `lengths`.

    Work of a layout ~ slots x (1 + key_cost x keys per query), with R rows of C slots per copy,
    on average (copies + 1) / 2 copies active and P = the longest row prefix (sum of `prefixes`
    of its windows). key_cost: attention multiply-adds per key over block multiply-adds per token.
    """
    active = (copies + 1) / 2

    def work(bins: list[list[int]], width: int) -> float:
        prefix = max(sum(prefixes[i] for i in row) for row in bins)
        return len(bins) * width * active * (1 + key_cost * (prefix + width * active))

    return least_work(lengths, range(max(lengths), 2 * max(lengths) + 1), work)


def pack_windows(starts: Sequence[int], lengths: Sequence[int], offsets: Sequence[int],
                 examples: Sequence[int], device: torch.device | str, copies: int = 1,
                 key_cost: float = 0.0) -> Packing:
    """Pack the windows of `examples` (batch indices; starts/lengths/offsets indexed by them)
    for `copies` patched layers (see `choose_bins`)."""
    local_len = [lengths[e] for e in examples]
    width, bins = choose_bins(local_len, [starts[e] for e in examples], copies, key_cost)
    slots = [_row_slots(row, examples, starts, lengths, offsets, width) for row in bins]
    keys = [_row_keys(row, examples, starts) for row in bins]
    prefix = max([len(k[0]) for k in keys] + [0])
    as_long = lambda rows: torch.tensor(rows, dtype=torch.long, device=device)  # noqa: E731
    site, pos, seg = (as_long([s[k] for s in slots]) for k in range(3))
    pad = lambda xs, fill: xs + [fill] * (prefix - len(xs))  # noqa: E731
    key_example = as_long([pad(k[0], examples[0]) for k in keys])
    key_pos = as_long([pad(k[1], 0) for k in keys])
    key_seg = as_long([pad(k[2], _NO_KEY) for k in keys])
    return Packing(list(examples), site, seg >= 0, pos, seg, key_example.reshape(len(bins), prefix),
                   key_pos.reshape(len(bins), prefix), key_seg.reshape(len(bins), prefix),
                   [g for row in bins for g in row])


def _row_slots(row: list[int], examples, starts, lengths, offsets, width: int) -> tuple[list, list, list]:
    """(site, position, segment) of one row's C slots."""
    site, pos, seg = [], [], []
    for g in row:
        e = examples[g]
        site += [offsets[e] + t for t in range(lengths[e])]
        pos += [starts[e] + t for t in range(lengths[e])]
        seg += [g] * lengths[e]
    n_pad = width - len(site)
    return site + [site[0]] * n_pad, pos + [0] * n_pad, seg + [-1 - j for j in range(n_pad)]


def _row_keys(row: list[int], examples, starts) -> tuple[list, list, list]:
    """(batch example, position, segment) of one row's prefix key slots."""
    ex, pos, seg = [], [], []
    for g in row:
        e = examples[g]
        ex += [e] * starts[e]
        pos += list(range(starts[e]))
        seg += [g] * starts[e]
    return ex, pos, seg


def packed_mask(p: Packing, window: int | None, groups: int = 1) -> torch.Tensor:
    """(R, 1, k C, P + k C) bool, True = may attend, for rows holding `groups` copies of the packed
    windows side by side (one per patched layer, see `fold`); the mask of the first j groups is
    the top-left [:, :, :j C, :P + j C] corner."""
    q_pos, q_seg, q_example = fold(p, groups)
    to_prefix = p.key_seg[:, None, :] == q_example[:, :, None]
    to_window = (q_seg[:, None, :] == q_seg[:, :, None]) & (q_pos[:, None, :] <= q_pos[:, :, None])
    if window is not None:
        to_prefix &= p.key_pos[:, None, :] > q_pos[:, :, None] - window
        to_window &= q_pos[:, None, :] > q_pos[:, :, None] - window
    return torch.cat([to_prefix, to_window], dim=2)[:, None]


def fold(p: Packing, groups: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(position, segment, local example) of each slot of rows holding `groups` copies of the
    packed windows, each (R, groups C). Segments differ between copies (a variant never sees
    another layer's variant of the same example); padding slots get unique negative ids."""
    width = p.width
    pos = p.pos.repeat(1, groups)
    copy = torch.arange(groups, device=pos.device).repeat_interleave(width)[None, :]
    slot = torch.arange(groups * width, device=pos.device)[None, :]
    seg = torch.where(p.real.repeat(1, groups), p.seg.repeat(1, groups) + copy * len(p.examples), -1 - slot)
    example = torch.where(p.real.repeat(1, groups), p.seg.repeat(1, groups), -1 - slot)
    return pos, seg, example
