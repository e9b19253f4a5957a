"""Trainers of the core models: `pretrain` (base, from random initialisation, on the public
text and utility QA), `pretrained` (base = the preset's pretrained model, nothing trained) and
`finetune` (full and retain, from base, on QA with the preset's utility rehearsal); for a world of
untrained models (`Preset.random`), `random_init` (full) and `noise_copy` (its noisy copies)."""

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


def random_init(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    """The architecture's seeded random initialisation (transformers' own init: normal, std 0.02),
    drawn directly in the recipe's save dtype (a 1B model in bfloat16 needs 2.5 GB, not 5 + 2.5)."""
    from checkpoints.llama3 import check_vocab_matches, llama32_1b_config

    tok = ctx.tok
    config = llama32_1b_config(pad_token_id=tok.pad_token_id)
    torch.manual_seed(ctx.seed)
    with torch.device(ctx.device):
        model = LlamaForCausalLM._from_config(config, dtype=getattr(torch, r.hparams["save_dtype"]))
    check_vocab_matches(tok, model)
    return model.eval()


@torch.no_grad()
def noise_copy(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    """The parent with each parameter named by `moved` (suffixes) moved by N(0, 1) noise times
    `scale` times that tensor's standard deviation, drawn in float32 from a generator seeded by the
    world seed and the copy's `noise_seed`; tensor by tensor, so no second copy is held."""
    dtype = getattr(torch, r.hparams["save_dtype"])
    model = LlamaForCausalLM.from_pretrained(ctx.load_path(r.parent), dtype=dtype).to(ctx.device)
    gen = torch.Generator().manual_seed(1000 * ctx.seed + int(r.hparams["noise_seed"]))
    scale, moved = float(r.hparams["scale"]), tuple(r.hparams["moved"])
    for name, p in model.named_parameters():
        if name.endswith(moved):
            w = p.float()
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            p.copy_((w + noise.to(p.device) * (scale * w.std())).to(dtype))
    return model.eval()
