"""Trainers of the core models: `pretrain` (base, from random initialisation, on the public
text and utility QA), `pretrained` (base = the preset's pretrained model, nothing trained) and
`finetune` (full and retain, from base, on QA with the preset's utility rehearsal)."""

from __future__ import annotations

import torch
from transformers import LlamaForCausalLM, PreTrainedModel

from checkpoints.world.encode import base_corpus, finetune_examples
from checkpoints.world.recipes import Recipe
from checkpoints.world.store import BuildContext, init_model, pretrained_folder
from checkpoints.world.train import train


def pretrain(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = init_model(ctx.preset, ctx.tok, ctx.seed).to(ctx.device)
    data = base_corpus(ctx.tok, ctx.world)
    train(model, data, r.train, ctx.collate, loop=ctx.loop(r.name))
    return model


def pretrained(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    """The preset's pretrained base as it is (float32), so that its world folder holds it too."""
    return LlamaForCausalLM.from_pretrained(pretrained_folder(ctx.preset), dtype=torch.float32).to(ctx.device)


def finetune(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = ctx.trainable(ctx.load(r.parent))   # a fresh LoRA adapter on the base in a LoRA world
    items = ctx.world.retain + (ctx.world.forget if r.kind == "full" else [])
    data = finetune_examples(ctx.tok, ctx.world, items, ctx.preset.forms, ctx.preset.rehearse_utility)
    train(model, data, r.train, ctx.collate, loop=ctx.loop(r.name))
    return model
