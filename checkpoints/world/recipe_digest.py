"""Recipe digests: what a tiny model is, as far as anything that shapes its training can tell.

Scheme 2 (`recipe_content`, `recipe_digest`) covers
- the recipe itself (name, kind, parent, data in words, training settings, method, coefficients),
- its parent's digest (so a change reaches every descendant),
- the world settings: every field of the preset except those that only make recipes
  (`ENUMERATORS`; what they choose for a model is in that model's recipe), and the world's seed:
  the data generator's or TOFU reader's arguments (`bio_source`, `n_forget_authors`, ...), the
  encodings (`forms`), utility rehearsal, the base model, the shape and vocabulary,
- the trainer's code: the digest of the source its module reaches through the project's imports
  (`uds_core.code_digest`), not a version someone must remember to bump. The modules that hold the
  presets and the recipe type are left out of it (`AS_VALUES`): what they define enters as values
  above, and editing one preset must not make every other preset's models stale.

Scheme 1 (`legacy_recipe_digest`) covered the recipe, the parent chain, the preset's name and a
hand-set trainer version; it is kept only to check campaign folders fixed under it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, fields

from checkpoints.catalogue import TRAINERS, find_recipe, legacy_trainer_version
from checkpoints.world.presets import Preset
from checkpoints.world.recipes import Recipe
from uds_core.code_digest import code_digest

RECIPE_SCHEME = 2
# Preset fields that stay out of the world settings, and why: each only chooses which recipes
# exist and with which settings, and those settings are in the recipes' own fields.
ENUMERATORS = {
    "name": "enters the digest as the preset's name",
    "base": "is the base recipe's training settings",
    "finetune": "is, or is scaled into, the training settings of full, retain and the pool recipes",
    "unlearn_batch": "is the batch size in the unlearned and suppressed recipes' training settings",
    "grid": "chooses the unlearned recipes; a model's rate, epochs and coefficients are in its recipe",
    "pool": "chooses the pool recipes; a member's rate, epochs, seed and parent are in its recipe",
    "lmlm": "chooses the LMLM recipes; their training, styles, copies and shape are in their recipes",
    "suppressed": "chooses the suppressed-pool recipes; their parent, method and training are in their recipes",
}
AS_VALUES = ("checkpoints.world.presets", "checkpoints.world.recipes")


def world_settings(preset: Preset, seed: int) -> dict:
    """Every preset field that shapes a model's training data or training but is not one of its
    recipe's own fields, with the world's seed; JSON values (tuples as lists)."""
    body = {f.name: getattr(preset, f.name) for f in fields(preset) if f.name not in ENUMERATORS}
    plain = {k: asdict(v) if hasattr(v, "__dataclass_fields__") else v for k, v in body.items()}
    return json.loads(json.dumps(plain | {"seed": seed}, sort_keys=True, default=str))


def trainer_code(method: str | None) -> str | None:
    """Digest of the code that trains `method`'s models (None: no trainer here)."""
    trainer = TRAINERS.get(method) if method is not None else None
    if trainer is None:
        return None
    return code_digest([trainer.code_module], packages=("checkpoints", "uds_core"), exclude=AS_VALUES)


def recipe_content(preset: Preset, r: Recipe, *, seed: int) -> dict:
    """Everything a scheme-2 digest of `r` covers, as JSON values (recorded beside the digest so a
    later change can be named, not only detected)."""
    parent = recipe_digest(preset, find_recipe(preset, r.parent), seed=seed) if r.parent else ""
    return json.loads(json.dumps({"scheme": RECIPE_SCHEME, "recipe": r.to_dict(), "parent": parent,
                                  "preset": preset.name, "world": world_settings(preset, seed),
                                  "trainer": {"method": r.method, "code": trainer_code(r.method)}},
                                 sort_keys=True, default=str))


def digest_of_content(content: dict) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def recipe_digest(preset: Preset, r: Recipe, *, seed: int) -> str:
    """The scheme-2 digest of `r` in the world `preset`-`seed`: a model folder (or a campaign
    file) recording another one was made by another recipe, data, or trainer code."""
    return digest_of_content(recipe_content(preset, r, seed=seed))


def legacy_recipe_digest(preset: Preset, r: Recipe) -> str:
    """The scheme-1 digest (recipe, parents, preset name, hand-set trainer version), as campaign
    folders fixed before scheme 2 recorded it."""
    parent = legacy_recipe_digest(preset, find_recipe(preset, r.parent)) if r.parent else ""
    blob = json.dumps({"recipe": r.to_dict(), "parent": parent, "preset": preset.name,
                       "version": legacy_trainer_version(r.method)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
