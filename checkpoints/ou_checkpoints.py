"""Open-Unlearning TOFU Llama-3.2-1B-Instruct checkpoints (spec §7 and 5.1), as data.

Every entry maps a short alias (the `model` name used in result files) to its hub ID.
The grids reproduce the 150-model benchmark list and the 60 P/N pool models.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from itertools import product

ARCH = "Llama-3.2-1B-Instruct"
UNLEARN_PREFIX = f"open-unlearning/unlearn_tofu_{ARCH}_forget10_"
EPOCHS = (5, 10)
LRS = (1e-05, 2e-05, 5e-05)
UNDIAL_LRS = (1e-05, 0.0001, 0.0003)
POOL_LRS = (1e-05, 2e-05, 3e-05, 4e-05, 5e-05)
P_VARIANTS = ("full", "retain90_forget10_bio", "retain90_forget10_para")
N_VARIANTS = ("retain90", "retain90_forget10_pert", "retain90_celeb10_bio")


@dataclass(frozen=True)
class Checkpoint:
    alias: str
    hub_id: str
    kind: str  # "reference" | "unlearned" | "pool"
    method: str
    epoch: int | None = None
    hparams: tuple[tuple[str, float], ...] = ()


def ou_lr_token(lr: float) -> str:
    """The learning rate as Open-Unlearning's aliases spell it, without the exponent's sign:
    1e-05 -> '1e5', 0.0001 -> '1e4', 0.0003 -> '3e4' (tiny model names keep it: `zoo_recipes.lr_token`)."""
    mantissa, exponent = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exponent[1:])}"


def num_token(x: float) -> str:
    """Coefficient spelling in aliases (spec §7.2): 0.1 -> '01', 3.5 -> '35', 0.125 -> '0125', 10 -> '10'."""
    return f"{x:g}".replace(".", "")


def _dpo_like(method: str, tag: str) -> list[Checkpoint]:
    out = []
    for lr, a, e in product(LRS, (1, 2, 5), EPOCHS):
        out.append(Checkpoint(
            f"{method}_lr{ou_lr_token(lr)}_b01_a{a}_ep{e}",
            f"{UNLEARN_PREFIX}{tag}_lr{lr}_beta0.1_alpha{a}_epoch{e}",
            "unlearned", method, e, (("lr", lr), ("beta", 0.1), ("alpha", a))))
    return out


def _nll_like(method: str, tag: str) -> list[Checkpoint]:
    return [Checkpoint(
        f"{method}_lr{ou_lr_token(lr)}_a{a}_ep{e}",
        f"{UNLEARN_PREFIX}{tag}_lr{lr}_alpha{a}_epoch{e}",
        "unlearned", method, e, (("lr", lr), ("alpha", a)))
        for lr, a, e in product(LRS, (1, 2, 5), EPOCHS)]


def _simnpo() -> list[Checkpoint]:
    return [Checkpoint(
        f"simnpo_lr{ou_lr_token(lr)}_b{num_token(b)}_a1_d1_g{num_token(g)}_ep{e}",
        f"{UNLEARN_PREFIX}SimNPO_lr{lr}_b{b}_a1_d1_g{g}_ep{e}",
        "unlearned", "simnpo", e, (("lr", lr), ("beta", b), ("alpha", 1), ("delta", 1), ("gamma", g)))
        for lr, b, g, e in product(LRS, (3.5, 4.5), (0.125, 0.25), EPOCHS)]


def _rmu() -> list[Checkpoint]:
    return [Checkpoint(
        f"rmu_lr{ou_lr_token(lr)}_l{layer}_s10_ep{e}",
        f"{UNLEARN_PREFIX}RMU_lr{lr}_layer{layer}_scoeff10_epoch{e}",
        "unlearned", "rmu", e, (("lr", lr), ("layer", layer), ("steering_coeff", 10)))
        for lr, layer, e in product(LRS, (5, 10, 15), EPOCHS)]


def _undial() -> list[Checkpoint]:
    return [Checkpoint(
        f"undial_lr{ou_lr_token(lr)}_b10_a{a}_ep{e}",
        f"{UNLEARN_PREFIX}UNDIAL_lr{lr}_beta10_alpha{a}_epoch{e}",
        "unlearned", "undial", e, (("lr", lr), ("beta", 10), ("alpha", a)))
        for lr, a, e in product(UNDIAL_LRS, (1, 2, 5), EPOCHS)]


def _pools() -> list[Checkpoint]:
    out = []
    for sign, variants in (("pos", P_VARIANTS), ("neg", N_VARIANTS)):
        for v, lr, e in product(variants, POOL_LRS, EPOCHS):
            hub = f"open-unlearning/{sign}_tofu_{ARCH}_{v}_lr{lr}_wd0.01_epoch{e}"
            out.append(Checkpoint(f"{sign}_{v}_lr{ou_lr_token(lr)}_ep{e}", hub, "pool",
                                  "P" if sign == "pos" else "N", e, (("lr", lr),)))
    return out


def _references() -> list[Checkpoint]:
    out = [Checkpoint("full", f"open-unlearning/tofu_{ARCH}_full", "reference", "full", 10),
           Checkpoint("retain", f"open-unlearning/tofu_{ARCH}_retain90", "reference", "retain", 10)]
    for arch in ("Llama-3.2-1B-Instruct", "Llama-3.2-3B-Instruct", "Llama-3.1-8B-Instruct"):
        for split in ("full", "retain99", "retain95", "retain90"):
            slug = arch.split("-Instruct")[0].lower().replace("llama-", "llama").replace(".", "")
            out.append(Checkpoint(f"{slug}_{split}", f"open-unlearning/tofu_{arch}_{split}",
                                  "reference", split))
    return out


UNLEARNED: list[Checkpoint] = (
    _nll_like("graddiff", "GradDiff") + _nll_like("idknll", "IdkNLL")
    + _dpo_like("idkdpo", "IdkDPO") + _dpo_like("npo", "NPO") + _dpo_like("altpo", "AltPO")
    + _simnpo() + _rmu() + _undial()
)
POOLS: list[Checkpoint] = _pools()
REFERENCES: list[Checkpoint] = _references()
ALL: list[Checkpoint] = REFERENCES + UNLEARNED + POOLS
BY_ALIAS: dict[str, Checkpoint] = {c.alias: c for c in ALL}

# Convenience aliases (spec §7.2): hub IDs of the wider OU collection, outside the 150 grid.
CONVENIENCE: dict[str, str] = {
    "simnpo": f"{UNLEARN_PREFIX}SimNPO_lr2e-05_b3.5_a1_d1_g0.125_ep10",
    "npo": f"{UNLEARN_PREFIX}NPO_lr5e-05_beta0.5_alpha1_epoch10",
    "idknll": f"{UNLEARN_PREFIX}IdkNLL_lr3e-05_alpha1_epoch5",
    "idkdpo": f"{UNLEARN_PREFIX}IdkDPO_lr2e-05_beta0.5_alpha1_epoch5",
    "graddiff": f"{UNLEARN_PREFIX}GradDiff_lr1e-05_alpha5_epoch10",
    "altpo": f"{UNLEARN_PREFIX}AltPO_lr5e-05_beta0.5_alpha2_epoch10",
    "rmu": f"{UNLEARN_PREFIX}RMU_lr1e-05_layer5_scoeff100_epoch10",
    "undial": f"{UNLEARN_PREFIX}UNDIAL_lr1e-05_beta3_alpha1_epoch10",
}


def hub_id_for_alias(alias: str) -> str | None:
    """Hub ID of a registry alias, or None if the string is not an alias."""
    if alias in BY_ALIAS:
        return BY_ALIAS[alias].hub_id
    return CONVENIENCE.get(alias)


_FULL_HUB = re.compile(r"^open-unlearning/tofu_(?P<arch>[\w.-]+)_full$")


def retain_for(full: str, retain_split: str) -> str | None:
    """The Open-Unlearning retain model of `retain_split` (retain99/95/90) that goes with the OU
    full model `full` (alias or hub ID), as an alias where the registry has one: `full` +
    retain90 -> `retain`, `full` + retain99 -> `llama32-1b_retain99`; None when `full` is no OU
    full model (a local folder, a tiny model)."""
    hub = hub_id_for_alias(full) or full
    m = _FULL_HUB.match(hub)
    if m is None:
        return None
    if full == "full" and retain_split == "retain90":
        return "retain"
    target = f"open-unlearning/tofu_{m['arch']}_{retain_split}"
    aliases = [c.alias for c in REFERENCES if c.hub_id == target]
    return aliases[-1] if aliases else target
