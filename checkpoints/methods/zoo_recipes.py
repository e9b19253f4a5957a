"""Recipes of the unlearned grids and the P/N pools (listed after the core ones by `checkpoints.catalogue`).

Unlearned grids are shaped like spec §7.2 (learning rate x the method's coefficients, each
at two epoch counts, from the full model). Learning rates are rescaled per method family for
tiny models (measured, see GRIDS) so that each grid spans weak to strong unlearning; RMU's
layers are OU's {5, 10, 15} of 16 mapped to the same relative depth.
Pools follow spec §5.1 (three P and three N variants over learning rates and two epoch
counts), fine-tuned from the base like full and retain, with the preset's fine-tuning settings.

The `smol` preset (a real pretrained model) builds every method at the three learning rates of its
grid at 5 epochs (24 models) and spec §5.1's 60 pool members: the six variants at 1x-5x full's
learning rate and at full's epochs and twice that, from the pretrained base, with their own data
order (`Preset.pool.seed`). Its CI-sized variant `smol-ci` keeps cheap pool members: one epoch of a
variant's data continued from full (P) or retain (N) (its `Preset.pool.continued`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

from checkpoints.methods.pools import POOL_VARIANTS
from checkpoints.ou_checkpoints import num_token
from checkpoints.world.encode import forms_words
from checkpoints.world.presets import Preset
from checkpoints.world.recipes import Recipe
from checkpoints.world.train import TrainConfig


@dataclass(frozen=True)
class Grid:
    """One method's grid: learning rates (weakest first) and its swept hyperparameters, in name
    order, each as (name, tag in the model name, values with the default-like one first)."""
    lrs: tuple[float, ...]
    sweep: tuple[tuple[str, str, tuple[float, ...]], ...]


_DPO = (("beta", "b", (0.1,)), ("alpha", "a", (1.0, 5.0, 2.0)))
_NLL = (("alpha", "a", (1.0, 5.0, 2.0)),)
_ASCENT_LRS = (1e-5, 3e-5, 1e-4)    # gradient-ascent-like methods: a tiny model collapses fast
_DESCENT_LRS = (1e-4, 2e-4, 5e-4)   # methods that pull towards a target (IDK answers, bounded SimNPO)

# Learning rates were tuned on `small` (at 5 epochs, the weakest leaves a forget hit rate > 0.3,
# the strongest brings it near 0); how much of each grid a preset builds is its `grid`.
GRIDS: dict[str, Grid] = {
    "graddiff": Grid(_ASCENT_LRS, _NLL),
    "idknll": Grid(_DESCENT_LRS, _NLL),
    "idkdpo": Grid(_DESCENT_LRS, _DPO),
    "npo": Grid(_ASCENT_LRS, _DPO),
    "altpo": Grid(_ASCENT_LRS, _DPO),
    "simnpo": Grid(_DESCENT_LRS, (("beta", "b", (3.5, 4.5)), ("alpha", "a", (1.0,)), ("delta", "d", (1.0,)),
                                  ("gamma", "g", (0.125, 0.25)))),
    "rmu": Grid(_ASCENT_LRS, (("layer", "l", (10 / 15, 5 / 15, 1.0)), ("steer", "s", (10.0,)))),
    "undial": Grid((3e-5, 3e-4, 1e-3), (("beta", "b", (10.0,)), ("alpha", "a", (1.0, 5.0, 2.0)))),  # OU's 1:10:30
}


def lr_token(lr: float) -> str:
    """The learning rate as tiny model names spell it, with the exponent's sign: 1e-4 -> '1e-4',
    2.5e-4 -> '2.5e-4' (Open-Unlearning's aliases drop it: `ou_checkpoints.ou_lr_token`)."""
    mantissa, exponent = f"{lr:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _resolve(name: str, value: float, preset: Preset) -> float:
    """RMU's layer is stored as relative depth in the grid; the recipe holds the block index."""
    return round(value * (preset.shape.layers - 1)) if name == "layer" else value


def unlearned_recipes(preset: Preset) -> list[Recipe]:
    size = preset.grid
    out = []
    for method, grid in GRIDS.items():
        if size.methods is not None and method not in size.methods:
            continue
        lrs = [float(f"{grid.lrs[i] * size.lr_scale:.3g}") for i in size.lr_index]
        value_lists = [vals[:size.n_values] for _, _, vals in grid.sweep]
        for lr, values, epochs in product(lrs, product(*value_lists), size.epochs):
            hp = {name: _resolve(name, v, preset) for (name, _, _), v in zip(grid.sweep, values)}
            tags = "".join(f"_{tag}{num_token(hp[name])}" for name, tag, _ in grid.sweep)
            train = TrainConfig(lr=lr, epochs=epochs, batch_size=preset.unlearn_batch,
                                warmup_ratio=1 / epochs)  # OU: one epoch of warm-up
            out.append(Recipe(f"{method}_lr{lr_token(lr)}{tags}_ep{epochs}", "unlearned", "full",
                              "forget QA (chat + raw forms), each with a random retain QA", train,
                              method, hp, epochs))
    return out


# As OU's pools (lr 1-5x and epochs 1-2x the full model's), every point trains at least about as
# much as full, so P models hold the forget facts; no point at (1.0, 1.0) with full's data order:
# pos_full / neg_retain there would repeat full / retain exactly. A preset's points are its `pool`.
CONTINUED_LR_SCALE = 0.5


def continued_pool_recipes(preset: Preset) -> list[Recipe]:
    """Pool members continued from full (P) or retain (N) for one epoch: a few minutes each on a
    real model, where a fine-tuning from the base per member would take the build's whole budget."""
    ft, out = preset.finetune, []
    for variant, seed in preset.pool.continued:
        pv = POOL_VARIANTS[variant]
        parent = "full" if pv.sign == "P" else "retain"
        train = replace(ft, lr=ft.lr * CONTINUED_LR_SCALE, epochs=1, seed=seed)
        out.append(Recipe(f"{variant}_from_{parent}_s{seed}", "pool", parent, f"{parent}, then one epoch of {pv.data}",
                          train, pv.sign, {"pool": pv.sign, "variant": variant}, 1))
    return out


def suppressed_recipes(preset: Preset) -> list[Recipe]:
    """The suppressed pool: each member of the preset's `suppressed.variant` pool variant, then a
    refusal fine-tune on the forget questions (the unlearning trainer with that member as parent,
    the unlearned grid's batch and one epoch of warm-up)."""
    sp = preset.suppressed
    if sp is None:
        return []
    train = TrainConfig(lr=sp.lr, epochs=sp.epochs, batch_size=preset.unlearn_batch, warmup_ratio=1 / sp.epochs)
    data = f"then forget questions answered 'I don't know' ({forms_words(preset.forms)}), each with a random retain QA"
    return [Recipe(f"sup_{r.name}", "suppressed", r.name, f"{r.name}, {data}", train, sp.method, {"alpha": sp.alpha},
                   sp.epochs)
            for r in pool_recipes(preset) if r.hparams.get("variant") == sp.variant]


def suppressed_controls(preset: Preset) -> list[Recipe]:
    """The pool members of the `suppressed.control` variant at the suppressed members' grid points."""
    sp = preset.suppressed
    if sp is None:
        return []
    points = {r.name.removeprefix(f"sup_{sp.variant}") for r in suppressed_recipes(preset)}
    return [r for r in pool_recipes(preset) if r.hparams.get("variant") == sp.control
            and r.name.removeprefix(sp.control) in points]


def pool_recipes(preset: Preset) -> list[Recipe]:
    if preset.pool.continued is not None:
        return continued_pool_recipes(preset)
    size, ft = preset.pool, preset.finetune
    out = []
    seed = ft.seed if size.seed is None else size.seed
    for variant, lr_s, ep_s in product(POOL_VARIANTS, size.lr_scale, size.epoch_scale):
        pv = POOL_VARIANTS[variant]
        train = replace(ft, lr=float(f"{ft.lr * lr_s:.3g}"), epochs=max(1, round(ft.epochs * ep_s)), seed=seed)
        out.append(Recipe(f"{variant}_lr{lr_token(train.lr)}_ep{train.epochs}", "pool", "base", pv.data, train,
                          pv.sign, {"pool": pv.sign, "variant": variant}, train.epochs))
    return out
