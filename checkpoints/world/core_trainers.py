"""Trainers of the core models: `pretrain` (base, from random initialisation, on the public
text and utility QA) and `finetune` (full and retain, from base, on QA with utility rehearsal)."""

from __future__ import annotations

from transformers import PreTrainedModel

from checkpoints.world.encode import base_corpus, qa_examples, utility_rehearsal
from checkpoints.world.recipes import Recipe
from checkpoints.world.store import BuildContext, init_model
from checkpoints.world.train import train


def pretrain(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = init_model(ctx.preset, ctx.tok, ctx.seed)
    data = base_corpus(ctx.tok, ctx.world)
    train(model, data, r.train, ctx.collate, desc=f"{ctx.preset.name}/{r.name}", progress=ctx.progress,
          checkpoint=ctx.checkpoint)
    return model


def finetune(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = ctx.load(r.parent)
    items = ctx.world.retain + (ctx.world.forget if r.kind == "full" else [])
    data = qa_examples(ctx.tok, items) + utility_rehearsal(ctx.tok, ctx.world)
    train(model, data, r.train, ctx.collate,
          desc=f"{ctx.preset.name}/{r.name}", progress=ctx.progress, checkpoint=ctx.checkpoint)
    return model
