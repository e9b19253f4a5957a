"""Recipes and trainers of `tiny:<preset>/lmlm`, `lmlm_parametric` and `lmlm_leaky`.

All start from random initialisation (no parent: adding them changes no other recipe's digest)
and are trained on the same fact prompts: the world's train-author facts in the preset's styles,
plus, where the preset says so, every published audit prompt (`data/lmlm_audit`, so the model
meets the published databases' vocabulary). The LMLM copies looked-up values; the parametric
contrast answers from its weights. The leaky LMLM is the LMLM's data plus the parametric
contrast's data for a seeded subset of the audit's target facts (listed in its hparams), so that
exactly those facts also sit in its weights: a known leak for the audit to find.
"""

from __future__ import annotations

import os
import random
from dataclasses import asdict, replace
from pathlib import Path

from transformers import PreTrainedModel

from checkpoints.lmlm.data import (encode_parametric, lmlm_examples, published_fact_prompts,
                                   world_fact_prompts)
from checkpoints.lmlm.world_db import target_positions
from checkpoints.world.presets import ModelShape, Preset
from checkpoints.world.recipes import Recipe
from checkpoints.world.store import BuildContext, init_model
from checkpoints.world.synthetic import FACT_KINDS, n_forget_authors
from checkpoints.world.train import train
from uds_core.errors import UdsInputError
from uds_core.paths import uds_home

LMLM_KINDS = ("lmlm", "lmlm_parametric", "lmlm_leaky")
LEAK_SHARE = 0.5   # share of the target facts the leaky LMLM also learns as plain QA
LEAK_SEED = 0
# plain-QA copies of a leaked prompt per LMLM copy: the same prompt then starts with the answer
# twice as often as with a lookup call, so greedy decoding answers from the weights (with one
# copy each the first token would be a coin toss per prompt)
LEAK_COPIES_PER_COPY = 2


def published_root() -> Path:
    """The folder of the published deletion-audit data (`custom_databases/`, `published_outputs/`,
    ...): `$UDS_LMLM_AUDIT_DIR`, else `$UDS_HOME/lmlm_audit`; it may not exist (the data is then
    absent, and the recipes say so)."""
    env = os.environ.get("UDS_LMLM_AUDIT_DIR")
    return Path(env).expanduser() if env else uds_home() / "lmlm_audit"


def lmlm_recipes(preset: Preset) -> list[Recipe]:
    s = preset.lmlm
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
    n = n_targets(preset)
    leaked = leaked_targets(n, LEAK_SHARE, LEAK_SEED)
    leaky_hp = {**hp, "n_targets": n, "leaked": leaked, "leak_seed": LEAK_SEED,
                "leak_copies": LEAK_COPIES_PER_COPY * s.copies}
    return [Recipe("lmlm", "lmlm", None, what + ", lookup markup, rotated values", s.train, "lmlm", hp, s.train.epochs),
            Recipe("lmlm_parametric", "lmlm_parametric", None, what + ", plain QA", s.train, "lmlm_parametric",
                   hp, s.train.epochs),
            Recipe("lmlm_leaky", "lmlm_leaky", None,
                   what + f", lookup markup, rotated values + plain QA of {len(leaked)} of the {n} target facts",
                   s.train, "lmlm_leaky", leaky_hp, s.train.epochs)]


def n_targets(preset: Preset) -> int:
    """The audit's target facts in a synthetic preset's world: every fact of the forget authors."""
    w = preset.world
    return n_forget_authors(w["n_train_authors"], w.get("forget_fraction", 0.1)) * len(FACT_KINDS)


def leaked_targets(n: int, share: float, seed: int) -> list[int]:
    """Sorted audit fact ids (of 0..n-1) the leaky LMLM also learns as plain QA: a seeded sample of
    round(share * n)."""
    return sorted(random.Random(f"lmlm_leaky:{seed}").sample(range(n), round(share * n)))


def _fact_prompts(ctx: BuildContext, r: Recipe):
    """Each world fact in one style (rotating), plus an evenly spaced subset of published prompts."""
    styles = tuple(r.hparams["styles"])
    prompts = world_fact_prompts(ctx.world, styles, per_fact=_per_fact(styles))
    n = r.hparams["published"]
    if n:
        pub = published_fact_prompts(published_root(), tuple(r.hparams["published_styles"]))
        prompts += pub[::max(1, len(pub) // n)][:n]
    return prompts


def _per_fact(styles: tuple[str, ...]) -> int:
    return 1 if len(styles) > 2 else len(styles)


def _leaked_prompts(ctx: BuildContext, r: Recipe):
    """The leaked target facts' world prompts, exactly as they appear in `_fact_prompts`."""
    pos = target_positions(ctx.world)
    if len(pos) != r.hparams["n_targets"]:   # the recipe's subset would name other facts
        raise UdsInputError(f"{r.name}: the world has {len(pos)} target facts, the recipe expects "
                            f"{r.hparams['n_targets']}")
    styles = tuple(r.hparams["styles"])
    return world_fact_prompts(ctx.world, styles, _per_fact(styles), only={pos[t] for t in r.hparams["leaked"]})


def _init(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    shape = r.hparams.get("shape")
    preset = replace(ctx.preset, shape=ModelShape(**shape)) if shape else ctx.preset
    return init_model(preset, ctx.tok, ctx.seed).to(ctx.device)


def _lmlm_data(ctx: BuildContext, r: Recipe) -> list[dict]:
    return lmlm_examples(ctx.tok, _fact_prompts(ctx, r), ctx.seed, r.hparams["copies"])


def _parametric_data(ctx: BuildContext, prompts, copies: int) -> list[dict]:
    return [encode_parametric(ctx.tok, p) for p in prompts] * copies


def _trained(ctx: BuildContext, r: Recipe, data: list[dict]) -> PreTrainedModel:
    model = _init(ctx, r)
    train(model, data, r.train, ctx.collate, loop=ctx.loop(r.name))
    return model


def train_lmlm(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    return _trained(ctx, r, _lmlm_data(ctx, r))


def train_lmlm_parametric(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    return _trained(ctx, r, _parametric_data(ctx, _fact_prompts(ctx, r), r.hparams["copies"]))


def train_lmlm_leaky(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    """The LMLM's examples (same seed, so the same rotation) + the leaked facts' plain QA."""
    return _trained(ctx, r, _lmlm_data(ctx, r) + _parametric_data(ctx, _leaked_prompts(ctx, r),
                                                                    r.hparams["leak_copies"]))
