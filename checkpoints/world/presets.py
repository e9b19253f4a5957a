"""Presets of the tiny world: how much data, how big the models, how long the training.

Sizes are chosen for the build-time budgets of 2 CPU cores (README states measured times):
`test` about a minute, `small` (the default) a few minutes, `tofu` under an hour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from checkpoints.world.train import TrainConfig
from core.errors import UdsInputError


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    max_positions: int = 512


@dataclass(frozen=True)
class Preset:
    name: str
    data: str                       # "synthetic" | "tofu"
    shape: ModelShape
    vocab_size: int
    base: TrainConfig               # pretraining on public text
    finetune: TrainConfig           # full and retain, from the base
    world: dict = field(default_factory=dict)  # arguments of the data generator / reader


PRESETS: dict[str, Preset] = {
    "test": Preset(
        "test", "synthetic", ModelShape(64, 4, 4, 2, 256), 1000,
        base=TrainConfig(lr=3e-3, epochs=10, batch_size=16),
        finetune=TrainConfig(lr=2e-3, epochs=12, batch_size=16),
        world=dict(n_train_authors=30, n_holdout_authors=6, n_public=80, n_other=6)),
    "small": Preset(
        "small", "synthetic", ModelShape(128, 8, 4, 4, 512), 2000,
        base=TrainConfig(lr=2e-3, epochs=8, batch_size=64),
        # 10 epochs left full at 0.90/0.88 entity hit rate on forget/retain; 14 reach 1.00/1.00
        finetune=TrainConfig(lr=1e-3, epochs=14, batch_size=32),
        world=dict(n_train_authors=100, n_holdout_authors=10, n_public=300, n_other=10)),
    "tofu": Preset(
        "tofu", "tofu", ModelShape(192, 8, 6, 6, 768, max_positions=1024), 4000,
        base=TrainConfig(lr=2e-3, epochs=8, batch_size=64),
        # 10 epochs left full at 0.83 / 0.68 and retain at 0.40 on the retain split (long answers)
        finetune=TrainConfig(lr=1e-3, epochs=14, batch_size=32),
        world=dict(n_retain_authors=40)),
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise UdsInputError(f"unknown preset {name!r} (choose {', '.join(PRESETS)})")
    return PRESETS[name]
