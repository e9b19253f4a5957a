"""Capture passes of the fast engine: one forward per model and batch, recording what the
suffix passes need (activations at the patch sites; for the target also every layer's keys and
values).

A capture needs each example's tokens only up to its last patched position (nothing after it
reaches a scored logit), so the batch's sequences, cut there, are packed first-fit-decreasing
into rows (several short sequences share a row) instead of being right-padded to the longest:
each token keeps its own position id, and a block-diagonal causal mask (with the layer's
sliding window, by position) keeps the sequences apart. The target and every source use the
same layout, so a source with the target's weights yields bit-identical activations.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

import torch
import torch.nn as nn
from transformers import DynamicCache

from uds_core.arch import (CACHE_KWARGS, LOGITS_KWARGS, attention_implementation, component_module, decoder_layers,
                      final_norm, keyword_of)
from uds_core.hooks import at_flat, capture_inputs, capture_outputs, on_rows_only
from uds_core.packing import least_work


@lru_cache(maxsize=None)
def cache_kw(fn) -> str | None:
    """Name of the cache argument of a forward (`cache`, `past_key_values`; 4.x layers: `past_key_value`)."""
    return keyword_of(fn, CACHE_KWARGS)


def layer_window(config, layer: int) -> int | None:
    """Sliding-window size of one layer's attention (None: full causal attention)."""
    window = getattr(config, "sliding_window", None)
    kinds = getattr(config, "layer_types", None)
    if window is None or kinds is None:
        return window
    return window if kinds[layer] == "sliding_attention" else None


def kernel_mask(allowed: torch.Tensor, impl: str, dtype: torch.dtype) -> torch.Tensor:
    """A boolean (.., q, k) mask in the attention kernel's format: additive 0 / dtype-min for
    eager, as transformers builds it; 0 / -inf for sdpa, which is what sdpa turns a boolean mask
    into on every call (done once here instead)."""
    blocked = torch.finfo(dtype).min if impl == "eager" else float("-inf")
    return torch.where(allowed, torch.zeros((), dtype=dtype, device=allowed.device),
                       torch.full((), blocked, dtype=dtype, device=allowed.device))


# ---------------------------------------------------------------------------------------------
# Layout


@dataclass
class CaptureLayout:
    """A batch's sequences (cut after their last patched position) packed into R rows of C slots.

    Example e occupies slots row[e], slot[e] .. slot[e] + length - 1 with positions 0, 1, ...;
    `flat` maps each patch site (example-major, as `Windows`) to its row-major index in R x C.
    """
    input_ids: torch.Tensor      # (R, C) long, pad id in unused slots
    position_ids: torch.Tensor   # (R, C) long
    mask: torch.Tensor | dict    # (R, 1, C, C) kernel mask, or {layer type: mask} for mixed windows
    flat: torch.Tensor           # (K,) long
    row: torch.Tensor            # (B,) long
    slot: torch.Tensor           # (B,) long


def capture_layout(items: Sequence, pad_id: int, model: nn.Module, device: torch.device | str) -> CaptureLayout:
    """Pack `items` (prepared items; each needs input ids up to its last eval position)."""
    lengths = [it.eval_positions.stop for it in items]
    bins = _choose_capacity(lengths, model.config)
    width = max(sum(lengths[i] for i in row) for row in bins)
    ids, pos, seq = [], [], []
    row_of, slot_of = [0] * len(items), [0] * len(items)
    for r, row in enumerate(bins):
        r_ids, r_pos, r_seq = [], [], []
        for i in row:
            row_of[i], slot_of[i] = r, len(r_ids)
            r_ids += list(items[i].input_ids[:lengths[i]])
            r_pos += list(range(lengths[i]))
            r_seq += [i] * lengths[i]
        n_pad = width - len(r_ids)
        ids.append(r_ids + [pad_id] * n_pad)
        pos.append(r_pos + [0] * n_pad)
        seq.append(r_seq + [-1 - j for j in range(n_pad)])  # padding: unique ids, attends to itself
    as_long = lambda xs: torch.tensor(xs, dtype=torch.long, device=device)  # noqa: E731
    flat = [row_of[i] * width + slot_of[i] + p for i, it in enumerate(items) for p in it.eval_positions]
    position_ids, sequence = as_long(pos), as_long(seq)
    return CaptureLayout(as_long(ids), position_ids, _layout_mask(position_ids, sequence, model), as_long(flat),
                         as_long(row_of), as_long(slot_of))


def _choose_capacity(lengths: Sequence[int], config) -> list[list[int]]:
    """Bins of the sequences with the least estimated work among a few row capacities: slots x
    (1 + attention cost of a row's keys relative to a token's projections and MLP)."""
    per_key = key_cost(config)
    longest = max(lengths)

    def work(bins: list[list[int]], _capacity: int) -> float:
        width = max(sum(lengths[i] for i in row) for row in bins)
        return len(bins) * width * (1 + per_key * width)

    step = max(1, longest // 32)  # at most ~33 candidates: cheap for any batch size
    return least_work(lengths, range(longest, 2 * longest + 1, step), work)[1]


def key_cost(config) -> float:
    """Attention multiply-adds per (query, key) over a block's multiply-adds per token."""
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    hidden = config.hidden_size
    per_token = hidden * (2 * heads + 2 * kv_heads) * head_dim + 3 * hidden * config.intermediate_size
    return 2 * heads * head_dim / per_token


def _layout_mask(position: torch.Tensor, sequence: torch.Tensor, model: nn.Module) -> torch.Tensor | dict:
    """Block-diagonal causal masks for the packed rows: one mask when every layer has the same
    sliding window (or none); else a mapping layer type -> mask, which the families with mixed
    layers (`config.layer_types`, e.g. Qwen2/Qwen3) take in place of a 2D mask."""
    config, impl = model.config, attention_implementation(model)
    dtype = next(model.parameters()).dtype

    def mask(window: int | None) -> torch.Tensor:
        allowed = (sequence[:, None, :] == sequence[:, :, None]) & (position[:, None, :] <= position[:, :, None])
        if window is not None:
            allowed &= position[:, None, :] > position[:, :, None] - window
        return kernel_mask(allowed[:, None], impl, dtype)

    n_layers = len(decoder_layers(model))
    windows = {layer_window(config, m) for m in range(n_layers)}
    if len(windows) == 1:  # one window for every layer: one mask, whatever the family
        return mask(windows.pop())
    kinds = config.layer_types
    return {kind: mask(layer_window(config, kinds.index(kind))) for kind in set(kinds)}


# ---------------------------------------------------------------------------------------------
# Passes


@dataclass
class TargetRun:
    """What the target's capture pass leaves for the suffix passes of every source.

    kv[m] = (keys, values), each (R C, n_kv, head_dim): block m's attention keys/values (after
    RoPE) of every slot of the capture layout, row-major; start: (B,) the flat slot of each
    example's position 0 (its position p is at start + p).
    blocks[l], comps[l], final: (K, H) block-l output, attn/mlp output, final-norm output at the
    sites; inputs0: (K, H) input of block 0 at the sites (attn/mlp patches of layer 0).
    """
    kv: list[tuple[torch.Tensor, torch.Tensor]]
    start: torch.Tensor
    blocks: dict[int, torch.Tensor]
    comps: dict[int, torch.Tensor]
    final: torch.Tensor
    inputs0: torch.Tensor | None
    plans: dict = field(default_factory=dict)  # suffix layouts shared by every source (uds_core.suffix.plan)

    def own(self, component: str) -> dict[int, torch.Tensor]:
        """The target's own values of the patched activation, layer -> (K, H)."""
        return self.blocks if component == "block" else self.comps

    def block_input(self, layer: int) -> torch.Tensor:
        """(K, H) input of block `layer` at the sites."""
        return self.inputs0 if layer == 0 else self.blocks[layer - 1]


class KeyRecorder(DynamicCache):
    """A cache that only records: `update` keeps each layer's keys/values (after RoPE) and hands
    the same tensors back, so attention computes exactly what it computes without a cache (no
    concatenation copies, no layout change), while the mask sees an empty cache as in a fresh pass."""

    def __init__(self) -> None:
        super().__init__()
        self.kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        self.kv[layer_idx] = (key_states, value_states)
        return key_states, value_states


def _capture_pass(model: nn.Module, layout: CaptureLayout, modules: Mapping[str, nn.Module], keep_kv: bool,
                  with_input0: bool = False, sites_only_mlp: bool = False
                  ) -> tuple[dict[str, torch.Tensor], KeyRecorder | None]:
    """One forward over the packed rows (logits of the last slot only) recording `modules`'
    activations at the sites, (K, H) each, with `with_input0` block 0's input as "input0", and
    with `keep_kv` every layer's keys/values. `sites_only_mlp`: the last block's MLP runs at the
    sites only (valid when nothing recorded but the last block's and final norm's outputs at the
    sites depends on it)."""
    cache = KeyRecorder() if keep_kv else None
    kwargs = {cache_kw(type(model).forward): cache, "use_cache": keep_kv,
              keyword_of(type(model).forward, LOGITS_KWARGS): 1}
    sites = at_flat(layout.flat)
    first = {"input0": decoder_layers(model)[0]} if with_input0 else {}
    with ExitStack() as stack:
        outputs = stack.enter_context(capture_outputs(modules, sites))
        inputs = stack.enter_context(capture_inputs(first, sites))
        if sites_only_mlp:
            stack.enter_context(on_rows_only(component_module(model, len(decoder_layers(model)) - 1, "mlp"),
                                             layout.flat))
        model(input_ids=layout.input_ids, position_ids=layout.position_ids, attention_mask=layout.mask, **kwargs)
    return {**outputs, **inputs}, cache


@torch.no_grad()
def capture_target(model: nn.Module, layout: CaptureLayout, layers: Sequence[int], component: str) -> TargetRun:
    """The target's capture pass: keys/values of every layer and its own activations at the sites."""
    n = len(decoder_layers(model))
    modules = {f"block{l}": decoder_layers(model)[l] for l in range(n)}
    if component != "block":
        modules.update({f"comp{l}": component_module(model, l, component) for l in layers})
    modules["final"] = final_norm(model)
    store, cache = _capture_pass(model, layout, modules, keep_kv=True, with_input0=component != "block" and 0 in layers,
                                 sites_only_mlp=component == "block")
    width = layout.input_ids.shape[1]
    return TargetRun([tuple(_slot_major(t) for t in cache.kv[m]) for m in range(n)], layout.row * width + layout.slot,
                     {l: store[f"block{l}"] for l in range(n)},
                     {l: store[f"comp{l}"] for l in layers if component != "block"}, store["final"],
                     store.get("input0"))


@torch.no_grad()
def capture_source(model: nn.Module, layout: CaptureLayout, layers: Sequence[int], component: str,
                   reference_last_layer: bool) -> dict[int, torch.Tensor]:
    """Source activations at the sites, layer -> (K, H), from one pass in the target's layout.

    With `reference_last_layer` the last layer's entry is the final norm's output (the
    reference's hidden_states[-1] quirk), as in the straightforward algorithm.
    """
    last = len(decoder_layers(model)) - 1
    modules = {f"l{l}": component_module(model, l, component) for l in layers}
    if reference_last_layer and component == "block" and last in layers:
        modules[f"l{last}"] = final_norm(model)
    store, _ = _capture_pass(model, layout, modules, keep_kv=False, sites_only_mlp=component == "block")
    return {l: store[f"l{l}"] for l in layers}


def _slot_major(t: torch.Tensor) -> torch.Tensor:
    """(R, n_kv, C, d) keys or values -> (R C, n_kv, d); free when attention produced them from a
    (R, C, n_kv, d) projection, as the supported families do."""
    return t.transpose(1, 2).reshape(-1, t.shape[1], t.shape[3])


def merge_runs(runs: Sequence[TargetRun]) -> TargetRun:
    """One run over the batches of `runs` in order, so that one suffix pass can stack examples
    of several capture batches: sites, slots and key/value caches concatenated."""
    if len(runs) == 1:
        return runs[0]
    kv = [tuple(torch.cat([r.kv[m][j] for r in runs]) for j in (0, 1)) for m in range(len(runs[0].kv))]
    shifts = torch.tensor([0] + [r.kv[0][0].shape[0] for r in runs[:-1]]).cumsum(0).tolist()
    start = torch.cat([r.start + shift for r, shift in zip(runs, shifts)])
    cat = lambda name: {l: torch.cat([getattr(r, name)[l] for r in runs]) for l in getattr(runs[0], name)}  # noqa: E731
    inputs0 = torch.cat([r.inputs0 for r in runs]) if runs[0].inputs0 is not None else None
    return TargetRun(kv, start, cat("blocks"), cat("comps"), torch.cat([r.final for r in runs]), inputs0)


def merge_values(parts: Sequence[Mapping[int, torch.Tensor]]) -> dict[int, torch.Tensor]:
    """Source activations of consecutive batches as one: layer -> (sum K, H)."""
    return dict(parts[0]) if len(parts) == 1 else {l: torch.cat([p[l] for p in parts]) for l in parts[0]}
