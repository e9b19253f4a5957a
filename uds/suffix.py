"""Fast patched passes (issue 6): recompute only what a patch changes.

Patching layer l of one example at its entity window [a, a + T) (its eval positions) changes
nothing in blocks below l, nothing at positions before a, and, attention being causal, nothing
that positions after the window could pass back to the scored logits. So, per batch:

1. one capture pass of the target, cut after the last window: its key/value cache of every
   layer plus its own activations and final-norm states at the patch sites (the baseline score);
2. one capture pass per source model, same cut: its activations at the patch sites;
3. suffix passes: each (example, layer) variant is only the T window rows of that example. It
   enters at the first block it needs (l + 1 for a block patch, l for attn/mlp), attends to the
   target's cached prefix keys/values (positions < a, per layer) and its own window, and ends
   with the final norm and the LM head at the scored positions. All variants of a batch are
   stacked along the batch dimension, so block m runs once, on the variants of layers below m.

Only families whose decoder layers take the standard transformers 5.x call (hidden states,
position embeddings, a 4D mask, a cache with `update`) are supported; `fast_path_problem`
says why another model must use the straightforward algorithm.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np
import torch
import torch.nn as nn
import transformers
from transformers import DynamicCache

from uds.arch import component_module, decoder_layers, final_norm, model_family
from uds.hooks import activation_of, at_positions, capture_outputs

FAST_FAMILIES = ("llama", "qwen2", "qwen3", "mistral")  # standard 5.x decoder-layer call, RoPE at model.rotary_emb
FAST_ATTENTION = ("eager", "sdpa")  # kernels that take an explicit 4D mask
LOGITS_CHUNK = 1 << 24  # at most this many logits (tokens x vocabulary) materialised at once


def fast_path_problem(model: nn.Module, component: str) -> str | None:
    """Why `model` cannot take the fast path (None when it can)."""
    if int(transformers.__version__.split(".")[0]) < 5:
        return f"transformers {transformers.__version__} (< 5) has another decoder-layer call"
    family = model_family(model)
    if family not in FAST_FAMILIES:
        return f"model family {family!r} is not one of {', '.join(FAST_FAMILIES)}"
    impl = getattr(model.config, "_attn_implementation", None)
    if impl not in FAST_ATTENTION:
        return f"attention implementation {impl!r} is not one of {', '.join(FAST_ATTENTION)}"
    if _cache_kw(type(decoder_layers(model)[0]).forward) is None:
        return "its decoder layers take no cache argument"
    return None


@lru_cache(maxsize=None)
def _cache_kw(fn) -> str | None:
    """Name of the cache argument of a forward (`cache` from 5.x, `past_key_values` before)."""
    params = inspect.signature(fn).parameters
    return next((name for name in ("cache", "past_key_values") if name in params), None)


# ---------------------------------------------------------------------------------------------
# Batch geometry


@dataclass(frozen=True)
class Windows:
    """Where each example's patch window lies in a right-padded batch of B examples.

    Example i's window is positions [starts[i], starts[i] + lengths[i]) (its eval positions);
    its sites are entries offsets[i] .. offsets[i] + lengths[i] - 1 of the batch's flat (K,)
    site list, and targets[k] is the token scored at site k.
    """
    starts: torch.Tensor   # (B,) long
    lengths: torch.Tensor  # (B,) long
    offsets: torch.Tensor  # (B,) long
    targets: torch.Tensor  # (K,) long
    example: torch.Tensor  # (K,) long, example of each site

    @property
    def width(self) -> int:
        """Positions any pass needs: nothing after the last window reaches a scored logit."""
        return int((self.starts + self.lengths).max())


def windows_of(items: Sequence, device: torch.device | str) -> Windows:
    """Windows of prepared items in batch order (their eval positions are contiguous ranges)."""
    starts = [it.eval_positions.start for it in items]
    lengths = [len(it.eval_positions) for it in items]
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
    targets = [t for it in items for t in it.target_ids]
    example = [i for i, n in enumerate(lengths) for _ in range(n)]
    as_long = lambda xs: torch.tensor(xs, dtype=torch.long, device=device)  # noqa: E731
    return Windows(as_long(starts), as_long(lengths), as_long(offsets), as_long(targets), as_long(example))


def site_grid(win: Windows, examples: torch.Tensor, span: int) -> torch.Tensor:
    """(G, span) site index of window slot t of each example; slots past a window repeat its
    last site (those rows come after every real one, so causality keeps them out of the scores)."""
    t = torch.arange(span, device=examples.device)
    last = (win.lengths[examples] - 1)[:, None]
    return win.offsets[examples][:, None] + torch.minimum(t[None, :], last)


# ---------------------------------------------------------------------------------------------
# Capture passes


@dataclass
class TargetRun:
    """What the target's one capture pass leaves for the suffix passes of every source.

    kv[m] = (keys, values), each (B, n_kv, W, head_dim) as block m's attention cached them (after
    RoPE); blocks[l], comps[l], final: (K, H) block-l output, attn/mlp output, final-norm output
    at the sites; inputs0: (K, H) input of block 0 at the sites (attn/mlp patches of layer 0).
    """
    kv: list[tuple[torch.Tensor, torch.Tensor]]
    blocks: dict[int, torch.Tensor]
    comps: dict[int, torch.Tensor]
    final: torch.Tensor
    inputs0: torch.Tensor | None

    def own(self, component: str) -> dict[int, torch.Tensor]:
        """The target's own values of the patched activation, layer -> (K, H)."""
        return self.blocks if component == "block" else self.comps

    def block_input(self, layer: int) -> torch.Tensor:
        """(K, H) input of block `layer` at the sites."""
        return self.inputs0 if layer == 0 else self.blocks[layer - 1]


def _capture_pass(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  modules: Mapping[str, nn.Module], rows: torch.Tensor, positions: torch.Tensor,
                  with_input0: bool = False) -> tuple[dict[str, torch.Tensor], DynamicCache]:
    """One forward (logits of the last position only) recording `modules`' outputs at the sites.

    Targets and sources go through this same call, so a source with the target's weights gives
    bit-identical activations (which is what makes no-op patches exact, see `noop_variants`).
    """
    cache = DynamicCache()  # no config: plain layers that keep every position (no sliding eviction)
    kwargs = {_cache_kw(type(model).forward): cache, "use_cache": True, "logits_to_keep": 1}
    select = at_positions(rows, positions)
    with capture_outputs(modules, select) as store, _capture_input(model, select, with_input0) as first:
        model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    if with_input0:
        store["input0"] = first["input0"]
    return store, cache


class _capture_input:
    """Context recording the input hidden states of block 0 at the sites (when asked)."""

    def __init__(self, model: nn.Module, select, active: bool):
        self.block, self.select, self.active, self.store, self.handle = decoder_layers(model)[0], select, active, {}, None

    def __enter__(self) -> dict[str, torch.Tensor]:
        if self.active:
            def hook(_module, args, kwargs):
                hidden = args[0] if args else kwargs["hidden_states"]
                self.store["input0"] = self.select(hidden.detach()).clone()
            self.handle = self.block.register_forward_pre_hook(hook, with_kwargs=True)
        return self.store

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            self.handle.remove()


@torch.no_grad()
def capture_target(model: nn.Module, batch, win: Windows, layers: Sequence[int], component: str) -> TargetRun:
    """The target's capture pass over `batch` cut to `win.width` positions."""
    n = len(decoder_layers(model))
    modules = {f"block{l}": decoder_layers(model)[l] for l in range(n)}
    if component != "block":
        modules.update({f"comp{l}": component_module(model, l, component) for l in layers})
    modules["final"] = final_norm(model)
    width = win.width
    store, cache = _capture_pass(model, batch.input_ids[:, :width], batch.attention_mask[:, :width], modules,
                                 batch.rows, batch.positions, with_input0=component != "block" and 0 in layers)
    kv = [(cache.layers[m].keys, cache.layers[m].values) for m in range(n)]
    return TargetRun(kv, {l: store[f"block{l}"] for l in range(n)},
                     {l: store[f"comp{l}"] for l in layers if component != "block"}, store["final"],
                     store.get("input0"))


@torch.no_grad()
def capture_source(model: nn.Module, batch, win: Windows, layers: Sequence[int], component: str,
                   reference_last_layer: bool) -> dict[int, torch.Tensor]:
    """Source activations at the sites, layer -> (K, H), from one pass cut to `win.width`.

    With `reference_last_layer` the last layer's entry is the final norm's output (the
    reference's hidden_states[-1] quirk), as in the straightforward algorithm.
    """
    last = len(decoder_layers(model)) - 1
    modules = {f"l{l}": component_module(model, l, component) for l in layers}
    if reference_last_layer and component == "block" and last in layers:
        modules[f"l{last}"] = final_norm(model)
    width = win.width
    store, _ = _capture_pass(model, batch.input_ids[:, :width], batch.attention_mask[:, :width], modules,
                             batch.rows, batch.positions)
    return {l: store[f"l{l}"] for l in layers}


# ---------------------------------------------------------------------------------------------
# Scoring at the sites


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
    return np.array([run.mean().item() for run in torch.split(values, list(lengths))], dtype=np.float64)


def baseline_scores(model: nn.Module, run: TargetRun, win: Windows, logprob_dtype: str = "model") -> np.ndarray:
    """Unpatched entity scores (B,) from the target's capture pass."""
    return site_scores(model, run.final, win.targets, win.lengths.tolist(), logprob_dtype)


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
    """Row layout of one suffix pass: G examples x the patched layers (ascending).

    Row r is the variant (layers[r // G], examples[r % G]). A variant of layer l enters at
    block `entry(l)` (l + 1 for a block patch, l for attn/mlp), so with rows ordered by layer
    the rows active at any block are a prefix of the stack. Keys have `prefix` slots for the
    target's cached positions 0..prefix-1 (each row masks those >= its own window start)
    followed by `span` slots for the row's window.
    """
    examples: torch.Tensor  # (G,) long, indices into the batch
    layers: tuple[int, ...]
    component: str
    span: int               # Tw: longest window of the group
    prefix: int             # A: latest window start of the group

    def entry(self, layer: int) -> int:
        return layer + 1 if self.component == "block" else layer

    def active(self, block: int) -> int:
        """Number of rows that have entered by block `block` (inclusive)."""
        return len(self.examples) * sum(self.entry(l) <= block for l in self.layers)

    @property
    def row_examples(self) -> torch.Tensor:
        """(N,) batch example of each row."""
        return self.examples.repeat(len(self.layers))


def make_stack(win: Windows, examples: torch.Tensor, layers: Sequence[int], component: str) -> Stack:
    return Stack(examples, tuple(sorted(layers)), component, int(win.lengths[examples].max()),
                 int(win.starts[examples].max()))


class PrefixKV:
    """Stands in for a transformers cache in one suffix block call: `update` puts the target's
    cached prefix keys/values (N, n_kv, A, d) in front of the window's fresh ones (N, n_kv, Tw, d)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        self.keys, self.values = keys, values

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        return torch.cat([self.keys, key_states], dim=2), torch.cat([self.values, value_states], dim=2)


def layer_window(config, layer: int) -> int | None:
    """Sliding-window size of one layer's attention (None: full causal attention)."""
    window = getattr(config, "sliding_window", None)
    kinds = getattr(config, "layer_types", None)
    if window is None or kinds is None:
        return window
    return window if kinds[layer] == "sliding_attention" else None


def stack_mask(starts: torch.Tensor, span: int, prefix: int, window: int | None) -> torch.Tensor:
    """(N, 1, Tw, A + Tw) bool, True = may attend. Query t of a row sits at position s + t (s its
    window start); prefix slot j holds position j and is visible only if j < s (later cached
    positions are the unpatched ones); window slot u holds position s + u. Causal by position,
    then the sliding window by position, exactly as the full-sequence mask does."""
    t = torch.arange(span, device=starts.device)
    q = starts[:, None] + t                                                  # (N, Tw)
    j = torch.arange(prefix, device=starts.device).expand(len(starts), -1)   # (N, A)
    kpos = torch.cat([j, q], dim=1)                                          # (N, A + Tw)
    kvalid = torch.cat([j < starts[:, None], torch.ones_like(q, dtype=torch.bool)], dim=1)
    allowed = kvalid[:, None, :] & (kpos[:, None, :] <= q[:, :, None])
    if window is not None:
        allowed &= kpos[:, None, :] > q[:, :, None] - window
    return allowed[:, None]


def _as_kernel_mask(mask: torch.Tensor, impl: str, dtype: torch.dtype) -> torch.Tensor:
    """sdpa takes the boolean mask; eager adds 0 / dtype-min, as transformers' own masks do."""
    if impl == "sdpa":
        return mask
    return torch.where(mask, torch.zeros((), dtype=dtype, device=mask.device), torch.finfo(dtype).min)


@dataclass
class StackInputs:
    """Per-row tensors shared by every block of one suffix pass (sliced to the active rows)."""
    positions: torch.Tensor                         # (N, Tw) long
    rotary: tuple[torch.Tensor, torch.Tensor]       # cos, sin (N, Tw, d)
    masks: dict[int | None, torch.Tensor]           # window size -> (N, 1, Tw, A + Tw)


def stack_inputs(target: nn.Module, win: Windows, stack: Stack, dtype: torch.dtype) -> StackInputs:
    starts = win.starts[stack.row_examples]
    positions = starts[:, None] + torch.arange(stack.span, device=starts.device)
    dummy = torch.empty(0, dtype=dtype, device=starts.device)
    rotary = target.get_submodule("model.rotary_emb")(dummy, positions)
    impl = target.config._attn_implementation
    windows = {layer_window(target.config, m) for m in range(len(decoder_layers(target)))}
    masks = {w: _as_kernel_mask(stack_mask(starts, stack.span, stack.prefix, w), impl, dtype) for w in windows}
    return StackInputs(positions, rotary, masks)


class _replace_rows:
    """While active, rows [r0, r1) of `module`'s activation are replaced by `values` (R, Tw, H)."""

    def __init__(self, module: nn.Module | None, r0: int, values: torch.Tensor | None):
        self.module, self.r0, self.values, self.handle = module, r0, values, None

    def __enter__(self) -> None:
        if self.module is None:
            return

        def hook(_module, _inputs, output):
            act = activation_of(output).clone()  # the block may still hold the original
            act[self.r0:self.r0 + len(self.values)] = self.values.to(act.dtype)
            return (act, *output[1:]) if isinstance(output, tuple) else act
        self.handle = self.module.register_forward_hook(hook)

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            self.handle.remove()


def _enter(x: torch.Tensor | None, layer: int, run: TargetRun, values: Mapping[int, torch.Tensor],
           grid: torch.Tensor, component: str, dtype: torch.dtype):
    """Append the G rows of `layer`'s variants to the stack x (N, Tw, H).

    A block patch enters after block `layer` as the source's states themselves (the whole window
    is patched); an attn/mlp patch enters block `layer` with the target's own input and a
    replacement (r0, (G, Tw, H) source values) for that block's component. Returns (x, replacement).
    """
    r0 = 0 if x is None else x.shape[0]
    if component == "block":
        new, patch = values[layer][grid].to(dtype), None
    else:
        new, patch = run.block_input(layer)[grid], (r0, values[layer][grid])
    return (new if x is None else torch.cat([x, new])), patch


def _run_block(target: nn.Module, block: int, x: torch.Tensor, run: TargetRun, stack: Stack,
               inputs: StackInputs, patch) -> torch.Tensor:
    """Block `block` on the active rows x (n, Tw, H), each attending to its example's cached prefix."""
    n = x.shape[0]
    rows = stack.row_examples[:n]
    keys, values = run.kv[block]
    layer = decoder_layers(target)[block]
    kwargs = {_cache_kw(type(layer).forward): PrefixKV(keys[rows, :, :stack.prefix], values[rows, :, :stack.prefix]),
              "use_cache": True, "position_ids": inputs.positions[:n],
              "attention_mask": inputs.masks[layer_window(target.config, block)][:n],
              "position_embeddings": (inputs.rotary[0][:n], inputs.rotary[1][:n])}
    module = component_module(target, block, stack.component) if patch is not None else None
    with _replace_rows(module, *(patch or (0, None))):
        return activation_of(layer(x, **kwargs))


def _stack_scores(target: nn.Module, x: torch.Tensor, win: Windows, stack: Stack, grid: torch.Tensor,
                  logprob_dtype: str) -> np.ndarray:
    """(L, G) scores of the finished stack x (N, Tw, H): final norm and LM head on real window slots."""
    rows = stack.row_examples
    lengths = win.lengths[rows]
    real = torch.arange(stack.span, device=x.device)[None, :] < lengths[:, None]
    normed = final_norm(target)(x[real])
    targets = win.targets[grid.repeat(len(stack.layers), 1)[real]]
    scores = site_scores(target, normed, targets, lengths.tolist(), logprob_dtype)
    return scores.reshape(len(stack.layers), len(stack.examples))


def _run_stack(target: nn.Module, run: TargetRun, win: Windows, values: Mapping[int, torch.Tensor],
               stack: Stack, logprob_dtype: str) -> np.ndarray:
    """(L, G) patched scores of one stack: each block runs once on every variant that needs it."""
    n_blocks = len(decoder_layers(target))
    dtype = run.final.dtype
    grid = site_grid(win, stack.examples, stack.span)
    inputs = stack_inputs(target, win, stack, dtype)
    entering = {stack.entry(l): l for l in stack.layers}
    x = None
    for block in range(min(entering), n_blocks):
        patch = None
        if block in entering:
            x, patch = _enter(x, entering[block], run, values, grid, stack.component, dtype)
        x = _run_block(target, block, x, run, stack, inputs, patch)
    if n_blocks in entering:  # a block patch of the last layer: only the final norm and head remain
        x, _ = _enter(x, entering[n_blocks], run, values, grid, stack.component, dtype)
    return _stack_scores(target, x, win, stack, grid, logprob_dtype)


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
        examples = torch.arange(g0, min(n_ex, g0 + per_group), device=win.starts.device)
        stack = make_stack(win, examples, uniq, component)
        scores[g0:g0 + len(examples)] = _run_stack(target, run, win, values, stack, logprob_dtype).T
    return scores[:, [uniq.index(l) for l in layers]]
