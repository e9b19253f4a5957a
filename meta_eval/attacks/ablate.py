"""`ablate`: directional ablation (as done against RMU: one activation direction projected out).

How the direction is chosen, on one half of the forget questions (the prompts alone, each in the
chat template, no answer): the mean residual state of every site (the embedding output and each
decoder block's output, over every prompt token) in the attacked model and in the full model; their
difference per site; the site where that difference is largest relative to the full model's mean
state norm there; the unit vector of the difference at that site. That one direction is then
projected out of the residual stream at every site (h <- h - scale (h.r) r, every position, the
generated tokens too) while the model answers the other half; then the halves swap. A model
whose states equal full's at every site has no direction: it answers as it is (the detail says so).
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Iterator, Sequence

import torch
import torch.nn as nn

from meta_eval.attacks.base import (Answered, AttackData, AttackSettings, AttackUnavailable, Target, by_halves,
                                    greedy, plain_prompts)
from uds_core.arch import decoder_layers
from uds_core.batching import batches, pad_token_id, right_padded
from uds_core.errors import UdsInputError
from uds_core.hooks import activation_of, capture_outputs, with_activation

name = "ablate"
summary = "project out the direction of the mean residual-state difference from full, at every layer"


def recipe(s: AttackSettings) -> dict:
    return {"direction": "mean residual state (embedding output and every block output, over prompt tokens) of "
                         "the model minus full's on one half's forget questions, at the site where it is largest "
                         "relative to full's mean state norm; unit length",
            "ablated": "at every site and position, while answering the other half; halves then swapped",
            "scale": s.ablate_scale}


def sites(model: nn.Module) -> list[nn.Module]:
    """The residual stream's sites: the embedding output, then each decoder block's output."""
    try:
        return [model.get_input_embeddings(), *decoder_layers(model)]
    except (UdsInputError, NotImplementedError, AttributeError) as exc:
        raise AttackUnavailable(f"no decoder blocks or embeddings found ({exc})") from exc


@torch.no_grad()
def mean_states(model: nn.Module, prompts: Sequence[Sequence[int]], pad_id: int,
                batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(means (S, H), mean token norms (S,)) of the residual states at every site over every real
    token of `prompts` (float64)."""
    named = {str(i): m for i, m in enumerate(sites(model))}
    sums, norms, count = None, None, 0
    for rows in batches(len(prompts), batch_size):
        ids, mask = right_padded([prompts[i] for i in rows], pad_id)
        with capture_outputs(named) as store:
            model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device))
        real = mask.bool()
        states = torch.stack([store[str(i)][real.to(store[str(i)].device)].double().cpu() for i in range(len(named))])
        sums = states.sum(1) if sums is None else sums + states.sum(1)
        n = states.norm(dim=-1).sum(1)
        norms = n if norms is None else norms + n
        count += int(real.sum())
    return sums / count, norms / count


def choose_direction(model_means: torch.Tensor, full_means: torch.Tensor,
                     full_norms: torch.Tensor) -> tuple[int, float, torch.Tensor] | None:
    """(site, relative size, unit vector) of the largest mean difference relative to full's mean
    state norm; None when the two are equal at every site."""
    diffs = model_means - full_means
    size = diffs.norm(dim=-1) / full_norms.clamp_min(1e-12)
    site = int(size.argmax())
    norm = diffs[site].norm()
    if float(norm) == 0.0:
        return None
    return site, float(size[site]), diffs[site] / norm


@contextmanager
def ablated(model: nn.Module, direction: torch.Tensor, scale: float) -> Iterator[None]:
    """While active, `scale` times the component along `direction` is removed at every site."""
    def hook(_module, _inputs, output):
        h = activation_of(output)
        r = direction.to(device=h.device, dtype=h.dtype)
        return with_activation(output, h - scale * (h @ r).unsqueeze(-1) * r)
    with ExitStack() as stack:
        for module in sites(model):
            stack.callback(module.register_forward_hook(hook).remove)
        yield


def answers(target: Target, data: AttackData, s: AttackSettings) -> Answered:
    model, full = target.load(target.spec), target.load(target.full)
    pad = pad_token_id(data.tok)

    def answer_half(fit: tuple[int, ...], held: tuple[int, ...]) -> Answered:
        prompts = plain_prompts(data.tok, [data.items[i] for i in fit])
        mine, _ = mean_states(model, prompts, pad, s.batch_size)
        theirs, norms = mean_states(full, prompts, pad, s.batch_size)
        chosen = choose_direction(mine, theirs, norms)
        ask = plain_prompts(data.tok, [data.items[i] for i in held])
        if chosen is None:
            return Answered(greedy(model, data.tok, ask, s), {"site": None, "relative_size": 0.0})
        site, size, r = chosen
        with ablated(model, r, s.ablate_scale):
            texts = greedy(model, data.tok, ask, s)
        return Answered(texts, {"site": site, "relative_size": size})
    return by_halves(data, answer_half)
