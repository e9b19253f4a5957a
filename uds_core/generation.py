"""Greedy generation for the ROUGE metrics and fluency (spec §3.3); seeded sampling for the probe.

Left-padded batches, greedy decoding, `max_new_tokens` (default 200), pad = eos, KV cache on, no
stop strings. The new tokens are cut at the first stop token and decoded without special tokens.

Greedy whatever the checkpoint ships: transformers merges the model's own generation config into
the one passed to `generate` (4.50-4.57 replace passed values that equal the global defaults, such
as do_sample=False, by the model's; 5.x fill unset ones, such as num_beams or repetition_penalty),
and Llama-3 Instruct ships do_sample=True, temperature 0.6. The model's generation config is
therefore swapped for a blank one while generating, so nothing is merged in any version.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from contextlib import contextmanager
from typing import Iterable, Iterator, Sequence

import torch
from transformers import GenerationConfig, PreTrainedTokenizerBase

from uds_core.progress import progress as track
from uds_core.batching import attention_mask, batches, left_pad, pad_token_id
from uds_core.gen_options import GenOptions
from uds_core.greedy import greedy_loop, greedy_loop_problem


@dataclass(frozen=True)
class Generation:
    ids: tuple[int, ...]   # new tokens before the first stop token
    text: str              # decoded (special tokens skipped, spaces cleaned) and stripped


def stop_token_ids(model: torch.nn.Module, tok: PreTrainedTokenizerBase) -> tuple[int, ...]:
    """The tokenizer's eos plus any eos ids of the model's generation config (Llama-3 lists three)."""
    ids = [tok.eos_token_id]
    cfg_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids += list(cfg_eos) if isinstance(cfg_eos, (list, tuple)) else ([cfg_eos] if cfg_eos is not None else [])
    return tuple(dict.fromkeys(i for i in ids if i is not None))


def cut_at_stop(ids: Iterable[int], stop_ids: Sequence[int]) -> tuple[int, ...]:
    """Tokens before the first stop token (all of them when none occurs)."""
    out = []
    for t in ids:
        if t in stop_ids:
            break
        out.append(int(t))
    return tuple(out)


@contextmanager
def blank_generation_config(model: torch.nn.Module) -> Iterator[None]:
    """While active, `model.generation_config` is a default GenerationConfig (restored after)."""
    own = model.generation_config
    model.generation_config = GenerationConfig()
    try:
        yield
    finally:
        model.generation_config = own


@torch.no_grad()
def greedy_generate(model: torch.nn.Module, tok: PreTrainedTokenizerBase, prompts: Sequence[Sequence[int]],
                    opts: GenOptions, *, fast: bool = True) -> list[Generation]:
    """Greedy continuations of token-id prompts, in input order.

    `fast` (where the model allows it, see `uds_core.greedy`): prompts batched by length and each
    sequence leaving its batch at its first stop token; else transformers' `generate`, which runs
    every sequence of a batch until the last one stops. The same greedy tokens either way."""
    stops = stop_token_ids(model, tok)
    opts = replace(opts, desc=opts.desc or "generate")
    if fast and prompts and opts.mask_id is None and greedy_loop_problem(model) is None:
        return greedy_loop(model, prompts, stops, pad_token_id(tok), opts, decode=lambda ids: _decoded(tok, ids))
    config = GenerationConfig(do_sample=False, max_new_tokens=opts.max_new_tokens, pad_token_id=tok.eos_token_id,
                              eos_token_id=list(stops), use_cache=True)
    rows = _generate(model, tok, prompts, config, stops, opts)
    return [g for group in rows for g in group]


def _decoded(tok: PreTrainedTokenizerBase, new: tuple[int, ...]) -> Generation:
    text = tok.decode(list(new), skip_special_tokens=True, clean_up_tokenization_spaces=True).strip()
    return Generation(new, text)


@torch.no_grad()
def sampled_generate(model: torch.nn.Module, tok: PreTrainedTokenizerBase, prompts: Sequence[Sequence[int]],
                     opts: GenOptions, *, num_samples: int, temperature: float, seed: int) -> list[list[Generation]]:
    """`num_samples` temperature-sampled continuations per prompt ([prompt][sample], input order).
    Seeded per batch (`seed` + batch number), so a rerun with the same batch size repeats exactly."""
    stops = stop_token_ids(model, tok)
    config = GenerationConfig(do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                              num_return_sequences=num_samples, max_new_tokens=opts.max_new_tokens,
                              pad_token_id=tok.eos_token_id, eos_token_id=list(stops), use_cache=True)
    return _generate(model, tok, prompts, config, stops, replace(opts, desc=opts.desc or "sample"), seed=seed)


def _generate(model: torch.nn.Module, tok: PreTrainedTokenizerBase, prompts: Sequence[Sequence[int]],
              config: GenerationConfig, stops: Sequence[int], opts: GenOptions,
              seed: int | None = None) -> list[list[Generation]]:
    """Left-padded batched `generate`; [prompt][returned sequence] decoded generations."""
    pad_id = pad_token_id(tok)
    per = config.num_return_sequences or 1
    out: list[list[Generation]] = []
    bar = track(batches(len(prompts), opts.batch_size), desc=opts.desc, unit="batch", enabled=opts.progress)
    for b, rows in enumerate(bar):
        ids, mask = left_pad([prompts[i] for i in rows], pad_id)
        ids_t = torch.tensor(ids, dtype=torch.long)
        mask_t = attention_mask(ids_t, torch.tensor(mask), opts.mask_id)
        if seed is not None:
            torch.manual_seed(seed + b)
        with blank_generation_config(model):
            seqs = model.generate(input_ids=ids_t.to(opts.device), attention_mask=mask_t.to(opts.device),
                                  generation_config=config)
        gens = [_decoded(tok, cut_at_stop(row, stops)) for row in seqs[:, ids_t.shape[1]:].tolist()]
        out += [gens[i * per:(i + 1) * per] for i in range(len(rows))]
    return out
