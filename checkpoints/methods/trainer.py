"""The one unlearning trainer: a method's loss on forget/retain pairs through the shared loop.

`unlearn` works on any Hugging Face causal LM and its tokenizer (QA items as in docs/design.md);
`train_unlearned` is the tiny-world builder's trainer for every method in `METHODS` (listed in
`checkpoints.catalogue.TRAINERS`).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Mapping, Sequence

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.methods.alternates import alternate_answers, cached_alternates
from checkpoints.methods.data import PairedData, UnlearnSets, collate_views
from checkpoints.methods.losses import get_method
from checkpoints.world.hooks import TrainHooks
from checkpoints.world.recipes import Recipe
from checkpoints.world.store import BuildContext
from checkpoints.world.train import Loop, TrainConfig, train
from uds_core.batching import pad_token_id


def frozen_copy(model: PreTrainedModel) -> PreTrainedModel:
    """A deep copy in eval mode with no gradients: the reference (OU: a copy of the start model)."""
    ref = copy.deepcopy(model).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def reference_of(model: PreTrainedModel):
    """The frozen starting model of a method that needs one: a PEFT model training an adapter is
    its own reference with that adapter switched off (no second copy); any other model, a copy."""
    from peft import PeftModel

    from checkpoints.world.lora import TRAINED, WithoutTrainedAdapter

    if isinstance(model, PeftModel) and TRAINED in model.peft_config:
        return WithoutTrainedAdapter(model)
    return frozen_copy(model)


def unlearn(model: PreTrainedModel, tok: PreTrainedTokenizerBase, sets: UnlearnSets, method: str, cfg: TrainConfig,
            hparams: Mapping[str, float] | None = None, loop: Loop | None = None,
            callbacks: Sequence = ()) -> list[float]:
    """Unlearn `sets.forget` from `model` in place with `method`; returns the loss of every step.

    AltPO's alternates, when `sets` has none, are sampled from `model` itself before training.
    The reference, where the method needs one, is `model` as it is on entry (`reference_of`).
    `loop`: progress label (default: the method), checkpoint file, hooks (see `train`). `callbacks`:
    Hugging Face `TrainerCallback`s (e.g. `uds.callbacks.UdsCallback`), driven by the loop as a
    Trainer drives them, with `tok` as their tokenizer; none: the loop is unchanged.
    """
    m = get_method(method)
    hp = m.hparams(hparams)
    alternates = sets.alternates
    if "alt" in m.views and alternates is None:
        alternates, _ = alternate_answers(model, tok, list(sets.forget), seed=cfg.seed)
    ref = reference_of(model) if m.needs_ref else None
    data = PairedData(tok, list(sets.forget), list(sets.retain), m.views, seed=cfg.seed, idk=sets.idk,
                      alternates=alternates, forms=sets.forms)
    pad = pad_token_id(tok)
    loop = loop or Loop()
    # `callbacks` get the tokenizer through hooks made here; without them a loop's own hooks stay
    hooks = TrainHooks(callbacks, tokenizer=tok) if callbacks else loop.hooks
    loop = replace(loop, desc=loop.desc or method, hooks=hooks)
    return train(model, data, cfg, lambda items: collate_views(items, pad),
                 lambda mdl, views: m.loss(mdl, ref, views, hp), loop)


def train_unlearned(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    """Builder trainer: start from `r.parent` (full), unlearn the world's forget split (into a
    fresh LoRA adapter on it in a LoRA world)."""
    model = ctx.trainable(ctx.load(r.parent))
    alternates = None
    if "alt" in get_method(r.method).views:
        path = ctx.root / "alternates" / f"{r.parent}-seed{r.train.seed}.json"
        alternates = cached_alternates(path, lambda: model, ctx.tok, ctx.world.forget, seed=r.train.seed)
    sets = UnlearnSets(ctx.world.forget, ctx.world.retain, ctx.world.idk, alternates, ctx.preset.forms)
    unlearn(model, ctx.tok, sets, r.method, r.train, r.hparams, ctx.loop(r.name), callbacks=ctx.callbacks)
    return model
