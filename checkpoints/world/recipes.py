"""The zoo of one tiny world: what models exist, how each is made, and the manifest.

A recipe is data: the model's name, its kind, the model it starts from, the training data it
sees and its training settings. Later additions (unlearning methods, P/N pools) add recipes;
the builder trains whatever is missing, in dependency order.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from checkpoints.world.presets import Preset
from checkpoints.world.train import TrainConfig


@dataclass(frozen=True)
class Recipe:
    name: str
    kind: str                 # base | full | retain | unlearned | pool
    parent: str | None        # model it starts from (None: random init)
    data: str                 # training data, in words recorded in zoo.json
    train: TrainConfig
    method: str | None = None
    hparams: dict = field(default_factory=dict)
    epoch: int | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["train"] = self.train.to_dict()
        return d


def core_recipes(preset: Preset) -> list[Recipe]:
    """Base, full and retain: TOFU's recipe (full and retain fine-tuned from the same base)."""
    ft = preset.finetune
    return [
        Recipe("base", "base", None, "public_text + utility QA (chat)", preset.base, "pretrain"),
        Recipe("full", "full", "base", "forget + retain QA (chat and raw Question/Answer forms)", ft,
               "finetune", epoch=ft.epochs),
        Recipe("retain", "retain", "base", "retain QA (chat and raw Question/Answer forms)", ft,
               "finetune", epoch=ft.epochs),
    ]


# Extra recipe providers (unlearning sweeps, pools) register here: preset -> recipes.
RECIPE_PROVIDERS: list = [core_recipes]


def recipes(preset: Preset) -> list[Recipe]:
    out: list[Recipe] = []
    for provider in RECIPE_PROVIDERS:
        out.extend(provider(preset))
    return out


def write_manifest(root: Path, preset: Preset, seed: int, built: dict[str, Path]) -> Path:
    """`zoo.json`: every recipe of the preset with its path (null until built)."""
    entries = []
    for r in recipes(preset):
        d = r.to_dict()
        d["path"] = str(built[r.name]) if r.name in built else None
        d["seed"] = seed
        entries.append(d)
    manifest = {"preset": preset.name, "seed": seed, "data": preset.data,
                "shape": asdict(preset.shape), "vocab_size": preset.vocab_size, "models": entries}
    path = root / "zoo.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(path)
    return path


# The unlearned grids and the P/N pools register their providers on import (kept last: they
# import this module's names).
import checkpoints.methods.zoo_recipes  # noqa: E402,F401
