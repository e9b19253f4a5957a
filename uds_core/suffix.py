"""Fast patched passes: recompute only what a patch changes.

Patching layer l of one example at its entity window [a, a + T) (its eval positions) changes
nothing in blocks below l, nothing at positions before a, and, attention being causal, nothing
that positions after the window could pass back to the scored logits. So the fast engine runs:

1. per batch, one capture pass of the target (uds_core/capture.py): every layer's keys/values plus
   its own activations and final-norm states at the patch sites (the baseline score);
2. per batch and source, one capture pass in the same layout: its activations at the sites;
3. per group of examples and source, one suffix pass (this module): each (example, layer)
   variant is just its T window tokens. It enters at the first block it needs (l + 1 for a block
   patch, l for attn/mlp), attends to the target's cached keys/values of its prefix (positions
   < a, per layer) and to its own window, and ends with the final norm and the LM head at the
   scored positions. Windows are packed into rows and every patched layer's copy sits in the
   same rows (uds_core/packing.py), so block m runs once, on all variants of layers below m.

Only the families the architecture table marks fast (uds_core/arch.py) are supported;
`fast_path_problem` says why another model must use the straightforward algorithm.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import torch
import torch.nn as nn

from uds_core.arch import (FAST_FAMILIES, attention_implementation, component_module, decoder_layers, final_norm,
                      legacy_fast_problem, model_family, rotary_embedding)
from uds_core.capture import TargetRun, cache_kw, kernel_mask, key_cost, layer_window
from uds_core.hooks import activation_of, replace_slots
from uds_core.packing import Packing, pack_windows, packed_mask

FAST_ATTENTION = ("eager", "sdpa")  # kernels that take an explicit 4D mask
# At most this many logits (tokens x vocabulary) materialised at once. Each chunk reads the whole
# LM head, so a chunk must hold enough rows to be compute-bound: 2^25 logits (128 MB in float32)
# are 261 rows of a 128256-token vocabulary (2^21 gave 16, and the head ran 5x below the body's rate).
LOGITS_CHUNK = 1 << 25


def fast_path_problem(model: nn.Module, component: str) -> str | None:
    """Why `model` cannot take the fast path (None when it can)."""
    family = model_family(model)
    if family not in FAST_FAMILIES:
        return f"model family {family!r} is not one of {', '.join(FAST_FAMILIES)}"
    legacy = legacy_fast_problem(model)
    if legacy is not None:
        return legacy
    impl = attention_implementation(model)
    if impl not in FAST_ATTENTION:
        return f"attention implementation {impl!r} is not one of {', '.join(FAST_ATTENTION)}"
    if cache_kw(type(decoder_layers(model)[0]).forward) is None:
        return "its decoder layers take no cache argument"
    rope = getattr(rotary_embedding(model), "rope_type", "default")
    if rope in ("dynamic", "longrope"):  # frequencies depend on the longest position in the pass
        return f"RoPE type {rope!r} changes with the sequence length"
    if len({p.device for p in model.parameters()}) > 1:
        return "the model is split across devices"
    return None


# ---------------------------------------------------------------------------------------------
# Batch geometry


@dataclass(frozen=True)
class Windows:
    """Where the patch window of each of B examples lies in its sequence.

    Example i's window is positions [starts[i], starts[i] + lengths[i]) (its eval positions);
    its sites are entries offsets[i] .. offsets[i] + lengths[i] - 1 of the batch's flat (K,)
    site list, and targets[k] is the token scored at site k.
    """
    starts: torch.Tensor   # (B,) long
    lengths: torch.Tensor  # (B,) long
    offsets: torch.Tensor  # (B,) long
    targets: torch.Tensor  # (K,) long
    example: torch.Tensor  # (K,) long, example of each site


def windows_of(items: Sequence, device: torch.device | str) -> Windows:
    """Windows of prepared items in batch order (their eval positions are contiguous ranges)."""
    starts = [it.eval_positions.start for it in items]
    lengths = [len(it.eval_positions) for it in items]
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
    targets = [t for it in items for t in it.target_ids]
    example = [i for i, n in enumerate(lengths) for _ in range(n)]
    as_long = lambda xs: torch.tensor(xs, dtype=torch.long, device=device)  # noqa: E731
    return Windows(as_long(starts), as_long(lengths), as_long(offsets), as_long(targets), as_long(example))


# ---------------------------------------------------------------------------------------------
# Scoring at the sites


@torch.no_grad()
def site_scores(model: nn.Module, normed: torch.Tensor, targets: torch.Tensor, lengths: Sequence[int],
                logprob_dtype: str = "model") -> np.ndarray:
    """Mean log-prob of each run of tokens: normed (n, H) final-norm states, targets (n,), runs of
    `lengths` consecutive tokens -> (len(lengths),) float64 nats.

    The LM head runs only on these n rows, in chunks that bound the logits' memory; log-softmax
    and mean follow `entity_scores` ("model": in the logits' dtype).
    """
    head = model.get_output_embeddings()
    step = max(1, LOGITS_CHUNK // head.weight.shape[0])
    picked = []
    for i in range(0, normed.shape[0], step):
        logits = head(normed[i:i + step])
        if logprob_dtype == "float32":
            logits = logits.float()
        picked.append(torch.log_softmax(logits, dim=-1).gather(-1, targets[i:i + step, None]).squeeze(-1))
    values = torch.cat(picked) if picked else normed.new_zeros(0)
    return run_means(values, lengths)


def run_means(values: torch.Tensor, lengths: Sequence[int]) -> np.ndarray:
    """Mean of each run of consecutive values (n,) -> (len(lengths),) float64, computed in the
    values' dtype like `Tensor.mean`; runs of equal length are reduced together (one op each)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    out = np.empty(len(lengths), dtype=np.float64)
    for n in np.unique(lengths):
        which = np.flatnonzero(lengths == n)
        first = torch.as_tensor(starts[which], device=values.device)
        index = first[:, None] + torch.arange(int(n), device=values.device)
        out[which] = values[index].mean(dim=1).double().cpu().numpy()
    return out


@torch.no_grad()
def baseline_scores(model: nn.Module, run: TargetRun, win: Windows, logprob_dtype: str = "model") -> np.ndarray:
    """Unpatched entity scores (B,) from the target's capture pass."""
    return site_scores(model, run.final, win.targets, win.lengths.tolist(), logprob_dtype)


@torch.no_grad()
def noop_variants(values: Mapping[int, torch.Tensor], own: Mapping[int, torch.Tensor], win: Windows,
                  layers: Sequence[int]) -> np.ndarray:
    """(B, L) bool: the patch writes exactly the values already there, at every site of the example.

    Such a patched pass *is* the unpatched pass, so its score is the baseline score bit for bit
    (e.g. unlearned = full gives UDS 0 exactly, as the straightforward algorithm does).
    """
    n_ex = win.lengths.shape[0]
    diff = torch.stack([(values[l].to(own[l].dtype) != own[l]).any(-1) for l in layers], 1)  # (K, L)
    count = torch.zeros(n_ex, len(layers), device=diff.device).index_add_(0, win.example, diff.float())
    return (count == 0).cpu().numpy()


# ---------------------------------------------------------------------------------------------
# Suffix passes


@dataclass(frozen=True)
class Stack:
    """One suffix pass: the packed windows of a group of examples, one copy per patched layer.

    The R rows hold, side by side along the sequence, one copy of the C packed window slots per
    layer (ascending): copy k holds the variants of the k-th layer. A variant of layer l enters
    at block `entry(l)` (l + 1 for a block patch, l for attn/mlp), so the slots active at any
    block are a prefix of each row, and every copy attends to the same prefix keys.
    """
    packing: Packing
    layers: tuple[int, ...]
    component: str

    def entry(self, layer: int) -> int:
        return layer + 1 if self.component == "block" else layer

    def entered(self, block: int) -> int:
        """Number of layers whose variants have entered by block `block` (inclusive)."""
        return sum(self.entry(l) <= block for l in self.layers)


def make_stack(win: Windows, examples: Sequence[int], layers: Sequence[int], component: str,
               config=None) -> Stack:
    """The stack of `examples` x `layers`; with the model's `config`, packing weighs attention."""
    packing = pack_windows(win.starts.tolist(), win.lengths.tolist(), win.offsets.tolist(), list(examples),
                           win.starts.device, len(set(layers)), key_cost(config) if config is not None else 0.0)
    return Stack(packing, tuple(sorted(set(layers))), component)


class PrefixKV:
    """Stands in for a transformers cache in one suffix block call: `update` puts the rows' prefix
    keys/values (R, n_kv, P, d), from the target's capture, in front of the window's fresh ones."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        self.keys, self.values = keys, values

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        return torch.cat([self.keys, key_states], dim=2), torch.cat([self.values, value_states], dim=2)


@dataclass
class StackInputs:
    """Per-slot tensors shared by every block of one suffix pass (sliced to the active slots)."""
    positions: torch.Tensor                         # (R, k C) long
    rotary: tuple[torch.Tensor, torch.Tensor]       # cos, sin (R, k C, d)
    masks: dict[int | None, torch.Tensor]           # window size -> (R, 1, k C, P + k C)


def stack_inputs(target: nn.Module, stack: Stack, dtype: torch.dtype) -> StackInputs:
    p, copies = stack.packing, len(stack.layers)
    positions = p.pos.repeat(1, copies)
    dummy = torch.empty(0, dtype=dtype, device=positions.device)
    rotary = rotary_embedding(target)(dummy, positions)
    impl = attention_implementation(target)
    windows = {layer_window(target.config, m) for m in range(len(decoder_layers(target)))}
    masks = {w: kernel_mask(packed_mask(p, w, copies), impl, dtype) for w in windows}
    return StackInputs(positions, rotary, masks)


def _enter(x: torch.Tensor | None, layer: int, run: TargetRun, values: Mapping[int, torch.Tensor],
           stack: Stack, dtype: torch.dtype):
    """Append the copy of `layer`'s variants to the rows x (R, n, H) -> (R, n + C, H).

    A block patch enters after block `layer` as the source's states themselves (the whole window
    is patched); an attn/mlp patch enters block `layer` with the target's own input and a
    replacement (s0, (R, C, H) source values) for that block's component. Returns (x, replacement).
    """
    s0 = 0 if x is None else x.shape[1]
    site = stack.packing.site
    if stack.component == "block":
        new, patch = values[layer][site].to(dtype), None
    else:
        new, patch = run.block_input(layer)[site], (s0, values[layer][site])
    return (new if x is None else torch.cat([x, new], dim=1)), patch


@dataclass
class Plan:
    """What the suffix passes of every source over one group of examples share: the stack, its
    per-slot inputs, and per block the rows' prefix keys/values, gathered once."""
    stack: Stack
    inputs: StackInputs
    prefix_kv: dict[int, tuple[torch.Tensor, torch.Tensor]]  # block -> (R, n_kv, P, d) keys, values


def plan(target: nn.Module, run: TargetRun, win: Windows, examples: Sequence[int], layers: Sequence[int],
         component: str) -> Plan:
    """The plan of `examples` x `layers`, built on first use and kept in `run`."""
    key = (tuple(examples), tuple(sorted(set(layers))), component)
    if key not in run.plans:
        stack = make_stack(win, examples, layers, component, target.config)
        first = min(stack.entry(l) for l in stack.layers)
        p = stack.packing
        where = run.start[p.key_example] + p.key_pos  # (R, P) flat slots of the prefix keys
        prefix_kv = {m: tuple(c[where].permute(0, 2, 1, 3).contiguous() for c in run.kv[m])
                     for m in range(first, len(run.kv))}
        run.plans[key] = Plan(stack, stack_inputs(target, stack, run.final.dtype), prefix_kv)
    return run.plans[key]


def _run_block(target: nn.Module, block: int, x: torch.Tensor, plan_: Plan, patch) -> torch.Tensor:
    """Block `block` on the active slots x (R, n, H), attending to the rows' cached prefixes."""
    stack, inputs = plan_.stack, plan_.inputs
    n, prefix = x.shape[1], stack.packing.prefix
    layer = decoder_layers(target)[block]
    kwargs = {cache_kw(type(layer).forward): PrefixKV(*plan_.prefix_kv[block]), "use_cache": True,
              "position_ids": inputs.positions[:, :n],
              "attention_mask": inputs.masks[layer_window(target.config, block)][:, :, :n, :prefix + n],
              "position_embeddings": (inputs.rotary[0][:, :n], inputs.rotary[1][:, :n])}
    replaced = (replace_slots(component_module(target, block, stack.component), *patch) if patch is not None
                else nullcontext())
    with replaced:
        return activation_of(layer(x, **kwargs))


def _stack_scores(target: nn.Module, x: torch.Tensor, win: Windows, stack: Stack, logprob_dtype: str) -> np.ndarray:
    """(L, G) scores of the finished rows x (R, L C, H): final norm and LM head on real slots only."""
    p, copies = stack.packing, len(stack.layers)
    by_copy = x.reshape(p.rows, copies, p.width, -1).transpose(0, 1)  # (L, R, C, H)
    real = p.real.expand(copies, -1, -1)
    normed = final_norm(target)(by_copy[real])
    targets = win.targets[p.site.expand(copies, -1, -1)[real]]
    lengths = win.lengths[p.examples].tolist()
    scores = site_scores(target, normed, targets, [lengths[g] for g in p.segments] * copies, logprob_dtype)
    out = np.empty((copies, len(p.examples)))
    out[:, p.segments] = scores.reshape(copies, len(p.segments))
    return out


def _run_stack(target: nn.Module, run: TargetRun, win: Windows, values: Mapping[int, torch.Tensor],
               plan_: Plan, logprob_dtype: str) -> np.ndarray:
    """(L, G) patched scores of one stack: each block runs once on every variant that needs it."""
    stack, n_blocks, dtype = plan_.stack, len(decoder_layers(target)), run.final.dtype
    entering = {stack.entry(l): l for l in stack.layers}
    x = None
    for block in range(min(entering), n_blocks):
        patch = None
        if block in entering:
            x, patch = _enter(x, entering[block], run, values, stack, dtype)
        x = _run_block(target, block, x, plan_, patch)
    if n_blocks in entering:  # a block patch of the last layer: only the final norm and head remain
        x, _ = _enter(x, entering[n_blocks], run, values, stack, dtype)
    return _stack_scores(target, x, win, stack, logprob_dtype)


@torch.no_grad()
def suffix_scores(target: nn.Module, run: TargetRun, win: Windows, values: Mapping[int, torch.Tensor],
                  layers: Sequence[int], component: str = "block", logprob_dtype: str = "model",
                  max_rows: int = 256) -> np.ndarray:
    """Patched entity scores (B, L), columns in `layers` order.

    Examples go in groups of max_rows // L so that one stack holds at most `max_rows` variants.
    """
    uniq = sorted(set(layers))
    n_ex = len(win.lengths)
    per_group = max(1, max_rows // len(uniq))
    scores = np.empty((n_ex, len(uniq)))
    for g0 in range(0, n_ex, per_group):
        examples = list(range(g0, min(n_ex, g0 + per_group)))
        plan_ = plan(target, run, win, examples, uniq, component)
        scores[g0:g0 + len(examples)] = _run_stack(target, run, win, values, plan_, logprob_dtype).T
    return scores[:, [uniq.index(l) for l in layers]]
