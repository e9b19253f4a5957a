"""Recipes and trainers of `tiny:<preset>/lmlm` and `tiny:<preset>/lmlm_parametric`.

Both start from random initialisation (no parent: adding them changes no other recipe's digest)
and are trained on the same fact prompts: the world's train-author facts in the preset's styles,
plus, where the preset says so, every published audit prompt (`data/lmlm_audit`, so the model
meets the published databases' vocabulary). The LMLM copies looked-up values; the parametric
contrast answers from its weights.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from transformers import PreTrainedModel

from checkpoints.lmlm.data import (encode_parametric, lmlm_examples, published_fact_prompts,
                                   world_fact_prompts)
from checkpoints.world.presets import ModelShape, Preset
from checkpoints.world.recipes import Recipe
from checkpoints.world.store import BuildContext, init_model
from checkpoints.world.train import TrainConfig, train

ALL_STYLES = ("direct", "paraphrased", "contextual", "cloze", "continuation", "fewshot")


@dataclass(frozen=True)
class LmlmSetting:
    train: TrainConfig
    styles: tuple[str, ...]
    published: int       # how many published audit prompts to add (0: none; every k-th, deterministic)
    copies: int = 1      # rotated LMLM examples per fact prompt
    shape: ModelShape | None = None   # None: the preset's shape
    published_styles: tuple[str, ...] = ALL_STYLES


SETTINGS: dict[str, LmlmSetting] = {
    "test": LmlmSetting(TrainConfig(lr=3e-3, epochs=6, batch_size=32), ("direct", "cloze"), 0),
    # sized for 2 CPU cores shared by several jobs: two layers of 64, the three shortest styles,
    # 300 published direct questions, two rotated copies per prompt, ~3,900 steps of 16
    "small": LmlmSetting(TrainConfig(lr=3e-3, epochs=24, batch_size=16), ("direct", "cloze", "continuation"), 300,
                         copies=2, shape=ModelShape(64, 2, 4, 2, 256), published_styles=("direct",)),
}
LMLM_KINDS = ("lmlm", "lmlm_parametric")


def published_root() -> Path:
    """`$UDS_LMLM_AUDIT_DIR`, else ../shared/data/lmlm_audit next to the repository."""
    env = os.environ.get("UDS_LMLM_AUDIT_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data" / "lmlm_audit"


def lmlm_recipes(preset: Preset) -> list[Recipe]:
    s = SETTINGS.get(preset.name)
    if s is None:
        return []
    if s.published and not (published_root() / "custom_databases").is_dir():
        # without the published data the model is trained on the world alone; the recipe says so,
        # so its digest differs from the one trained with them
        s = replace(s, published=0)
    what = f"world train-author facts ({', '.join(s.styles)})" + (
        f" + {s.published} published audit prompts" if s.published else "")
    hp = {"styles": list(s.styles), "published": s.published, "copies": s.copies,
          "shape": asdict(s.shape) if s.shape else None, "published_styles": list(s.published_styles)}
    return [Recipe("lmlm", "lmlm", None, what + ", lookup markup, rotated values", s.train, "lmlm", hp, s.train.epochs),
            Recipe("lmlm_parametric", "lmlm_parametric", None, what + ", plain QA", s.train, "lmlm_parametric",
                   hp, s.train.epochs)]


def _fact_prompts(ctx: BuildContext, r: Recipe):
    """Each world fact in one style (rotating), plus an evenly spaced subset of published prompts."""
    styles = tuple(r.hparams["styles"])
    prompts = world_fact_prompts(ctx.world, styles, per_fact=1 if len(styles) > 2 else len(styles))
    n = r.hparams["published"]
    if n:
        pub = published_fact_prompts(published_root(), tuple(r.hparams["published_styles"]))
        prompts += pub[::max(1, len(pub) // n)][:n]
    return prompts


def _init(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    shape = r.hparams.get("shape")
    preset = replace(ctx.preset, shape=ModelShape(**shape)) if shape else ctx.preset
    return init_model(preset, ctx.tok, ctx.seed).to(ctx.device)


def train_lmlm(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = _init(ctx, r)
    data = lmlm_examples(ctx.tok, _fact_prompts(ctx, r), ctx.seed, r.hparams["copies"])
    train(model, data, r.train, ctx.collate, desc=f"{ctx.preset.name}/{r.name}", progress=ctx.progress,
          checkpoint=ctx.checkpoint)
    return model


def train_lmlm_parametric(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = _init(ctx, r)
    data = [encode_parametric(ctx.tok, p) for p in _fact_prompts(ctx, r)] * r.hparams["copies"]
    train(model, data, r.train, ctx.collate, desc=f"{ctx.preset.name}/{r.name}", progress=ctx.progress,
          checkpoint=ctx.checkpoint)
    return model
