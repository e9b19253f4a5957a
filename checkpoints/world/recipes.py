"""Recipes of tiny models, the core ones (base, full, retain) and the manifest `zoo.json`.

A recipe is data: the model's name, its kind, the model it starts from, the training data it
sees and its training settings. The catalogue (`checkpoints.catalogue`) lists every recipe of a
preset (these core ones, the unlearned grids and the P/N pools); the builder trains whatever is
missing, in dependency order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from checkpoints.world.presets import Preset
from checkpoints.world.train import TrainConfig
from uds_core import atomic


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
    forms = " and ".join({"chat": "chat", "raw": "raw Question/Answer"}[f] for f in preset.forms)
    base = (Recipe("base", "base", None, f"pretrained {preset.base_model}, not trained here", preset.base,
                   "pretrained") if preset.base_model else
            Recipe("base", "base", None, "public_text + utility QA (chat)", preset.base, "pretrain"))
    if preset.base_model:   # a pretrained base: TOFU's recipe, chat form only
        return [base,
                Recipe("full", "full", "base", f"forget + retain QA ({forms})", ft, "finetune", epoch=ft.epochs),
                Recipe("retain", "retain", "base", f"retain QA ({forms})", ft, "finetune", epoch=ft.epochs)]
    return [
        base,
        Recipe("full", "full", "base", "forget + retain QA (chat and raw Question/Answer forms)", ft,
               "finetune", epoch=ft.epochs),
        Recipe("retain", "retain", "base", "retain QA (chat and raw Question/Answer forms)", ft,
               "finetune", epoch=ft.epochs),
    ]


def random_recipes(preset: Preset) -> list[Recipe]:
    """A world of untrained models (`Preset.random`): `full`, a seeded random initialisation, and its
    seeded noise copies (retain, an unlearned model), each of them `kind` by name."""
    rnd = preset.random
    full = Recipe("full", "full", None, f"seeded random initialisation of {rnd.architecture}, not trained",
                  preset.finetune, "random_init", {"architecture": rnd.architecture, "save_dtype": rnd.save_dtype})
    copies = [Recipe(name, "retain" if name == "retain" else "unlearned", "full",
                     f"full + seeded Gaussian noise ({scale:g} x each tensor's std) on {', '.join(rnd.moved)}",
                     preset.finetune, "noise_copy",
                     {"scale": scale, "moved": list(rnd.moved), "noise_seed": k + 1, "save_dtype": rnd.save_dtype})
              for k, (name, scale) in enumerate(rnd.copies)]
    return [full] + copies


def write_manifest(root: Path, preset: Preset, seed: int, recipes: list[Recipe], built: dict[str, Path]) -> Path:
    """`zoo.json`: every recipe of the preset (`recipes`, in order) with its path (null until built)."""
    entries = []
    for r in recipes:
        d = r.to_dict()
        d["path"] = str(built[r.name]) if r.name in built else None
        d["seed"] = seed
        entries.append(d)
    manifest = {"preset": preset.name, "seed": seed, "data": preset.data,
                "shape": asdict(preset.shape), "vocab_size": preset.vocab_size, "models": entries}
    path = root / "zoo.json"
    atomic.write_json(path, manifest, indent=1)   # its own temp name: two builders may finish at once
    return path
