"""The tiny world's catalogue: every recipe of a preset and the trainer of every recipe method.

Recipes, in zoo order: base, full and retain (`world.recipes`), then the unlearned grids, the
P/N pools and the suppressed pool (`methods.zoo_recipes`). Trainers: a recipe's `method` -> the
function that trains its model. The builder (`world.build`) reads both from here; nothing
registers itself on import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from transformers import PreTrainedModel

from checkpoints.methods.losses import METHODS
from checkpoints.methods.pools import POOL_VARIANTS, train_pool
from checkpoints.methods.trainer import train_unlearned
from checkpoints.lmlm.recipes import lmlm_recipes, train_lmlm, train_lmlm_leaky, train_lmlm_parametric
from checkpoints.methods.zoo_recipes import pool_recipes, suppressed_recipes, unlearned_recipes
from checkpoints.world.core_trainers import finetune, noise_copy, pretrain, pretrained, random_init
from checkpoints.world.presets import Preset
from checkpoints.world.recipes import Recipe, core_recipes, random_recipes
from checkpoints.world.store import BuildContext
from uds_core.errors import UdsInputError


@dataclass(frozen=True)
class Trainer:
    """How the models of one recipe method are trained. Its code enters every recipe digest of the
    method as the digest of the source its module reaches (`checkpoints.world.recipe_digest`), so
    a change to what trains a model makes that model and its descendants stale without anyone
    remembering to say so. `module`: the module whose code that is (None: `fn`'s own; a test that
    wraps `fn` names the wrapped one). `legacy_version`: the hand-set version that recipe digests of
    scheme 1 recorded instead (kept to check campaign folders fixed under that scheme)."""
    fn: Callable[[BuildContext, Recipe], PreTrainedModel]
    legacy_version: int = 1
    module: str | None = None

    @property
    def code_module(self) -> str:
        return self.module or self.fn.__module__


UNKNOWN_TRAINER_VERSION = 1   # the scheme-1 version of a method with no trainer here

# Legacy version 2 of finetune and the pool trainer: utility rehearsal added to their data (encode.py).
TRAINERS: dict[str, Trainer] = {
    "pretrain": Trainer(pretrain, 1),
    "pretrained": Trainer(pretrained, 1),
    "finetune": Trainer(finetune, 2),
    "random_init": Trainer(random_init, 1),
    "noise_copy": Trainer(noise_copy, 1),
    **{name: Trainer(train_unlearned, 1) for name in METHODS},
    **{sign: Trainer(train_pool, 2) for sign in dict.fromkeys(v.sign for v in POOL_VARIANTS.values())},  # P, N
    "lmlm": Trainer(train_lmlm, 1),
    "lmlm_parametric": Trainer(train_lmlm_parametric, 1),
    "lmlm_leaky": Trainer(train_lmlm_leaky, 1),
}


def legacy_trainer_version(method: str | None) -> int:
    """The hand-set version of the trainer of `method`, as recipe digests of scheme 1 recorded it."""
    return TRAINERS[method].legacy_version if method in TRAINERS else UNKNOWN_TRAINER_VERSION


def recipes(preset: Preset) -> list[Recipe]:
    """Every model of the preset's zoo, in zoo order (parents before their children)."""
    if preset.random is not None:
        return random_recipes(preset)
    return (core_recipes(preset) + unlearned_recipes(preset) + pool_recipes(preset) + suppressed_recipes(preset)
            + lmlm_recipes(preset))


def find_recipe(preset: Preset, name: str) -> Recipe:
    """The recipe called `name` in the preset's zoo."""
    rs = recipes(preset)
    for r in rs:
        if r.name == name:
            return r
    known = ", ".join(r.name for r in rs)
    raise UdsInputError(f"no tiny model {name!r} in preset {preset.name!r} (known: {known})")
