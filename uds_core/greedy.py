"""Greedy decoding that keeps its batch full: finished sequences leave, waiting prompts join.

transformers' `generate` keeps every sequence of a batch in each step until the last one stops,
so one long answer makes the whole batch decode to `max_new_tokens` with a few rows, and on a CPU
a step costs about the same with 1 row as with 16 (it reads every weight once). Here a sequence
that emits a stop token leaves the batch and its key/value cache at once, and waiting prompts are
prefilled and join the running batch (their caches left-padded to the batch's length, or the
batch's to theirs), so the batch stays near `batch_size` rows until the queue is empty.

Each forward is the one `generate` makes (left-padded prompts, position ids from the length
mask, a growing 2D mask, a dynamic cache, the last position's logits, argmax in float32); only
the rows beside a sequence change, which padding masks out. Prompts are taken longest first, so
a prefill's rows need little padding.
"""

from __future__ import annotations

import inspect
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

import torch
import torch.nn as nn
from transformers import DynamicCache

from uds_core.arch import LOGITS_KWARGS, keyword_of
from uds_core.batching import left_pad
from uds_core.capture import cache_kw
from uds_core.gen_options import GenOptions
from uds_core.progress import progress as track
from uds_core.suffix import fast_path_problem

T = TypeVar("T")


def greedy_loop_problem(model: nn.Module) -> str | None:
    """Why `greedy_loop` cannot run `model` (None when it can): the families and kernels the fast
    engine runs, whose forward takes position ids, a 2D mask and a dynamic cache."""
    problem = fast_path_problem(model, "block")
    if problem is None and cache_kw(type(model).forward) is None:
        problem = "its forward takes no cache argument"
    return problem


def new_cache(model: nn.Module) -> DynamicCache:
    """An empty dynamic cache laid out for the model's layers (sliding windows included)."""
    if "config" in inspect.signature(DynamicCache.__init__).parameters:
        return DynamicCache(config=model.config)
    return DynamicCache()


# --- the cache's tensors (transformers 5: `layers[i].keys/values`; 4.x: `key_cache/value_cache`) ---

def _kv_lists(cache: DynamicCache) -> tuple[list[torch.Tensor], list[torch.Tensor]] | None:
    """(keys, values) per layer, each (B, H, L, D), when the cache is plain full-attention layers
    whose tensors can be padded and joined; None otherwise (sliding windows, other layouts)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        if any(type(l).__name__ != "DynamicLayer" for l in layers):
            return None
        return [l.keys for l in layers], [l.values for l in layers]
    if hasattr(cache, "key_cache"):
        return list(cache.key_cache), list(cache.value_cache)
    return None


def _set_kv(cache: DynamicCache, keys: list[torch.Tensor], values: list[torch.Tensor]) -> None:
    if getattr(cache, "layers", None) is not None:
        for layer, k, v in zip(cache.layers, keys, values):
            layer.keys, layer.values = k, v
    else:
        cache.key_cache[:], cache.value_cache[:] = keys, values


def _left_pad_kv(t: torch.Tensor, width: int) -> torch.Tensor:
    """(B, H, L, D) -> (B, H, width, D), zeros on the left."""
    pad = width - t.shape[2]
    return t if pad == 0 else torch.cat([t.new_zeros(t.shape[0], t.shape[1], pad, t.shape[3]), t], dim=2)


# --- a running batch ----------------------------------------------------------------------------

@dataclass
class Running:
    """Sequences being decoded together: `owners[r]` the prompt index of row r, `mask` (B, L)
    length mask of the cache, `position` (B, 1) the position of each row's last token, `logits`
    (B, V) each row's next-token logits, `new` the tokens generated so far by prompt index."""
    cache: DynamicCache
    mask: torch.Tensor
    position: torch.Tensor
    logits: torch.Tensor
    owners: list[int]

    def keep(self, rows: list[int]) -> None:
        index = torch.tensor(rows, dtype=torch.long, device=self.mask.device)
        self.cache.batch_select_indices(index)
        self.mask, self.position, self.logits = self.mask[index], self.position[index], self.logits[index]
        self.owners = [self.owners[r] for r in rows]

    def join(self, other: "Running") -> bool:
        """Append `other`'s rows (False, nothing changed, when the caches cannot be joined)."""
        mine, theirs = _kv_lists(self.cache), _kv_lists(other.cache)
        if mine is None or theirs is None:
            return False
        width = max(self.mask.shape[1], other.mask.shape[1])
        keys = [torch.cat([_left_pad_kv(a, width), _left_pad_kv(b, width)]) for a, b in zip(mine[0], theirs[0])]
        values = [torch.cat([_left_pad_kv(a, width), _left_pad_kv(b, width)]) for a, b in zip(mine[1], theirs[1])]
        _set_kv(self.cache, keys, values)
        pad = lambda m: torch.cat([m.new_zeros(m.shape[0], width - m.shape[1]), m], dim=1)  # noqa: E731
        self.mask = torch.cat([pad(self.mask), pad(other.mask)])
        self.position = torch.cat([self.position, other.position])
        self.logits = torch.cat([self.logits, other.logits])
        self.owners += other.owners
        return True


def _forward_kwargs(model: nn.Module, cache: DynamicCache) -> dict:
    kwargs = {cache_kw(type(model).forward): cache, "use_cache": True}
    keep = keyword_of(type(model).forward, LOGITS_KWARGS)
    if keep:
        kwargs[keep] = 1
    return kwargs


def prefill(model: nn.Module, prompts: list[Sequence[int]], owners: list[int], pad_id: int, device) -> Running:
    """The prompts' forward, left-padded as `generate` pads them."""
    ids, mask = left_pad(prompts, pad_id)
    ids_t = torch.tensor(ids, dtype=torch.long, device=device)
    mask_t = torch.tensor(mask, dtype=torch.long, device=device)
    position = (mask_t.cumsum(-1) - 1).masked_fill(mask_t == 0, 0)
    cache = new_cache(model)
    logits = model(input_ids=ids_t, attention_mask=mask_t,
                   position_ids=position, **_forward_kwargs(model, cache)).logits
    return Running(cache, mask_t, position[:, -1:], logits[:, -1], list(owners))


def decode_step(model: nn.Module, run: Running, tokens: torch.Tensor) -> None:
    """Feed each row its next token (B,) and replace the logits."""
    run.mask = torch.cat([run.mask, run.mask.new_ones((run.mask.shape[0], 1))], dim=-1)
    run.position = run.position + 1
    run.logits = model(input_ids=tokens[:, None], attention_mask=run.mask, position_ids=run.position,
                       **_forward_kwargs(model, run.cache)).logits[:, -1]


@torch.no_grad()
def greedy_loop(model: nn.Module, prompts: Sequence[Sequence[int]], stops: Sequence[int], pad_id: int,
                opts: GenOptions, decode: Callable[[tuple[int, ...]], T]) -> list[T]:
    """`decode(new tokens before the first stop)` of each prompt's greedy continuation, in input
    order; at most `opts.batch_size` sequences decode together, new ones joining as others finish
    (`opts.mask_id` is not supported here: `greedy_generate` routes those calls elsewhere)."""
    batch_size, max_new_tokens, device = opts.batch_size, opts.max_new_tokens, opts.device
    if max_new_tokens < 1:
        return [decode(()) for _ in prompts]
    stop_set = set(stops)
    queue = deque(sorted(range(len(prompts)), key=lambda i: (-len(prompts[i]), i)))
    new: dict[int, list[int]] = {i: [] for i in range(len(prompts))}
    out: list[T | None] = [None] * len(prompts)
    run: Running | None = None
    joinable = True
    bar = track(total=len(prompts), desc=opts.desc or "generate", unit="prompt", enabled=opts.progress)
    while queue or run is not None:
        free = batch_size - (len(run.owners) if run else 0)
        if queue and (run is None or (joinable and free >= max(1, batch_size // 4))):
            take = [queue.popleft() for _ in range(min(free, len(queue)))]
            fresh = prefill(model, [prompts[i] for i in take], take, pad_id, device)
            if run is None:
                run = fresh
            elif not run.join(fresh):   # a cache that cannot be joined: static batches from here on
                joinable = False
                queue.extendleft(reversed(take))
        tokens = run.logits.to(dtype=torch.float32).argmax(-1).tolist()
        going = []
        for row, (owner, token) in enumerate(zip(run.owners, tokens)):
            if token not in stop_set:
                new[owner].append(token)
            if token in stop_set or len(new[owner]) >= max_new_tokens:
                out[owner] = decode(tuple(new.pop(owner)))
                bar.update(1)
            else:
                going.append(row)
        if not going:
            run = None
            continue
        if len(going) < len(run.owners):
            run.keep(going)
        decode_step(model, run, torch.tensor([tokens[r] for r in going], dtype=torch.long, device=device)
                    if len(going) < len(tokens) else torch.tensor(tokens, dtype=torch.long, device=device))
    bar.close()
    return out
