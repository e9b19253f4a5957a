"""Batched greedy generation with the lookup splice (spec-probes §3.1).

Rows advance one token per step in lockstep over one KV cache (left-padded prompts, positions
from the length mask). When a row's text ends in an open call `[dblookup('s', 'r') ->`, the
row's `lookup(row, s, r)` is asked for a value, and the value tokens plus `]` are queued: the
row is fed them as forced tokens on the next steps instead of its argmax, so the splice needs no
re-encoding and every row keeps one cache. `greedy_generate` (uds_core.generation) is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
from transformers import PreTrainedTokenizerBase

from uds_core.progress import progress as track
from checkpoints.lmlm.markup import pending_call, strip_markup, value_text
from uds_core.batching import batches, left_pad, pad_token_id
from uds_core.capture import cache_kw
from uds_core.gen_options import GenOptions
from uds_core.generation import stop_token_ids

Lookup = Callable[[int, str, str], str]   # (row index in the input, subject, relation) -> value


@dataclass
class SpliceOutput:
    text: str                       # everything generated, markup included
    answer: str                     # the text with the lookup markup removed
    calls: list[tuple[str, str, str]] = field(default_factory=list)   # (subject, relation, value)


@torch.no_grad()
def splice_generate(model: torch.nn.Module, tok: PreTrainedTokenizerBase, prompts: Sequence[Sequence[int]],
                    lookup: Lookup, opts: GenOptions = GenOptions(32, 64), *, max_calls: int = 2) -> list[SpliceOutput]:
    """Greedy continuations of token-id prompts with lookups answered by `lookup`, in input order
    (`opts.mask_id` is not supported: length masks only)."""
    stops = set(stop_token_ids(model, tok))
    kw = cache_kw(type(model).forward) or "past_key_values"   # `cache` in transformers >= 5.2x
    out: list[SpliceOutput] = []
    bar = track(batches(len(prompts), opts.batch_size), desc=opts.desc or "generate", unit="batch",
                enabled=opts.progress)
    for rows in bar:
        out.extend(_batch(model, tok, [prompts[i] for i in rows], list(rows), lookup, opts.max_new_tokens,
                          max_calls, opts.device, stops, kw))
    return out


def _batch(model, tok, prompts, row_ids, lookup, max_new_tokens, max_calls, device, stops: set[int],
           kw: str) -> list[SpliceOutput]:
    ids, mask = left_pad(prompts, pad_token_id(tok))
    ids_t, mask_t = torch.tensor(ids, device=device), torch.tensor(mask, device=device)
    pos = (mask_t.cumsum(-1) - 1).clamp(min=0)
    res = model(input_ids=ids_t, attention_mask=mask_t, position_ids=pos, use_cache=True)
    past, logits = _cache_of(res), res.logits[:, -1]
    n = len(prompts)
    new: list[list[int]] = [[] for _ in range(n)]
    queue: list[list[int]] = [[] for _ in range(n)]
    outs = [SpliceOutput("", "") for _ in range(n)]
    done = [False] * n
    last_pos = pos[:, -1]
    for _ in range(max_new_tokens):
        greedy = logits.argmax(-1).tolist()
        step = []
        for b in range(n):
            t = queue[b].pop(0) if queue[b] else (tok.eos_token_id if done[b] else greedy[b])
            if not done[b]:
                if t in stops and not queue[b]:
                    done[b] = True
                else:
                    new[b].append(t)
                    _maybe_call(tok, b, row_ids[b], new[b], queue[b], outs[b], lookup, max_calls)
            step.append(t)
        if all(done):
            break
        mask_t = torch.cat([mask_t, torch.ones(n, 1, dtype=mask_t.dtype, device=device)], -1)
        last_pos = last_pos + 1
        res = model(input_ids=torch.tensor(step, device=device)[:, None], attention_mask=mask_t,
                    position_ids=last_pos[:, None], use_cache=True, **{kw: past})
        past, logits = _cache_of(res), res.logits[:, -1]
    for b in range(n):
        text = tok.decode(new[b], skip_special_tokens=True).strip()
        outs[b].text, outs[b].answer = text, strip_markup(text)
    return outs


def _cache_of(res):
    cache = getattr(res, "cache", None)
    return cache if cache is not None else res.past_key_values


def _maybe_call(tok, b: int, row: int, new: list[int], queue: list[int], out: SpliceOutput, lookup: Lookup,
                max_calls: int) -> None:
    """Queue the value of a call the row has just finished writing (when it has calls left)."""
    if queue or len(out.calls) >= max_calls:
        return
    text = tok.decode(new, skip_special_tokens=True)
    call = pending_call(text)
    if call is None:
        return
    value = lookup(row, *call)
    out.calls.append((*call, value))
    queue.extend(tok.encode(value_text(value), add_special_tokens=False))
