"""Shared pieces of the training-callback tests: the `test` world's models, a short
unlearning run, and a scratch UDS_HOME that reuses the built world through symlinks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch
from transformers import LlamaForCausalLM

from checkpoints.catalogue import find_recipe
from checkpoints.methods.data import UnlearnSets
from checkpoints.methods.trainer import unlearn
from checkpoints.world.presets import get_preset
from checkpoints.world.store import ensure_tokenizer, load_world, model_dir
from checkpoints.world.train import Loop, TrainConfig

FULL, RETAIN = "tiny:test/full", "tiny:test/retain"
NPO = "npo_lr2e-4_b01_a1_ep5"   # the test preset's NPO recipe
SHORT = TrainConfig(lr=2e-3, epochs=2, batch_size=8, warmup_ratio=0.5, seed=3)


def full_model() -> LlamaForCausalLM:
    return LlamaForCausalLM.from_pretrained(model_dir("test", 0, "full"))


def short_unlearn(callbacks=(), n_forget: int = 8, cfg: TrainConfig = SHORT, model=None):
    """NPO on the first `n_forget` forget items (both forms: 2 steps an epoch at batch 8) from the
    test world's full model; returns (model, losses)."""
    world, tok = load_world("test"), ensure_tokenizer("test", 0)
    model = model if model is not None else full_model()
    losses = unlearn(model, tok, UnlearnSets(world.forget[:n_forget], world.retain, forms=get_preset("test").forms),
                     "npo", cfg, loop=Loop(progress=False), callbacks=callbacks)
    return model, losses


def recipe_unlearn(name: str = NPO, callbacks=(), epochs: int | None = None):
    """The test preset's recipe `name` trained as the builder trains it (optionally fewer epochs)."""
    r = find_recipe(get_preset("test"), name)
    world, tok = load_world("test"), ensure_tokenizer("test", 0)
    cfg = r.train if epochs is None else replace(r.train, epochs=epochs)
    model = full_model()
    losses = unlearn(model, tok, UnlearnSets(world.forget, world.retain, world.idk, forms=get_preset("test").forms),
                     r.method, cfg, r.hparams, Loop(progress=False), callbacks=callbacks)
    return model, losses


def weights_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def scratch_home(root: Path, source: Path) -> Path:
    """A UDS_HOME whose `test` world links the built data, tokenizer, base, full and retain of
    `source` (a home), so a build there trains only the unlearned model asked for."""
    src, dst = source / "world" / "test-0", root / "world" / "test-0"
    (dst / "models").mkdir(parents=True)
    for name in ("data", "tokenizer"):
        (dst / name).symlink_to(src / name)
    for name in ("base", "full", "retain"):
        (dst / "models" / name).symlink_to(src / "models" / name)
    return root
