"""The units of a world campaign, in the order they run, and the protocol that fixes them.

A unit is (kind, model): `build` trains the model (its parents first), `knowledge` asks it the
forget questions (greedy chat answers, entity string matched), `score` runs `uds score` on it,
`metrics` runs `uds metrics --metrics all` on it, `exactness` scores it with the fast engine and
with the straightforward per-layer path side by side (float32), `precision` scores it in float32
beside the committed bfloat16 score. Builds and knowledge checks come first (they decide whether
the recipe holds: full and retain first), then the scores of every model, then the costly
comparisons and metric runs.
Units marked `big` need more memory than the campaign's steady state: the driver runs them under
the big-memory lock when it is given one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

UnitKind = Literal["build", "knowledge", "score", "exactness", "precision", "metrics"]
KINDS: tuple[str, ...] = ("build", "knowledge", "score", "exactness", "precision", "metrics")
SCORE_DTYPE = "bfloat16"          # every score and metric run (the precision unit measures the difference)
EXACTNESS_EXAMPLES = 8            # the first annotated examples of the straightforward path (it is ~20x slower)
METRIC_MODELS = ("npo", "idknll")  # unlearned models of these methods get `uds metrics --metrics all`


@dataclass(frozen=True)
class Unit:
    kind: str
    model: str
    big: bool = False

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.model}"


def plan_units(models: list[tuple[str, str, str | None]]) -> list[Unit]:
    """The units of a zoo given as (name, kind, method) in zoo order (base, full, retain, the
    unlearned models)."""
    unlearned = [(n, m) for n, k, m in models if k == "unlearned"]
    units = [Unit("build", "full"), Unit("knowledge", "full"), Unit("build", "retain"), Unit("knowledge", "retain"),
             Unit("knowledge", "base")]
    for name, _ in unlearned:
        units += [Unit("build", name), Unit("knowledge", name)]
    units += [Unit("score", name) for name in ["full", "retain"] + [n for n, _ in unlearned]]
    probe = next((n for n, m in unlearned if m == "npo"), unlearned[0][0] if unlearned else "full")
    units += [Unit("exactness", probe, big=True), Unit("precision", probe, big=True)]
    chosen = [n for method in METRIC_MODELS for n, m in unlearned if m == method]
    units += [Unit("metrics", name, big=True) for name in ["full", "retain"] + chosen]
    return units


def protocol(zoo: str, preset, seed: int, units: list[Unit], digests: dict[str, str]) -> dict:
    """What fixes a campaign: the world, its recipes, the units (as a set: their order may change
    between runs) and the scoring settings."""
    return {"zoo": zoo, "preset": preset.name, "seed": seed,
            "lora": preset.lora.to_dict() if preset.lora else None, "train_dtype": preset.train_dtype,
            "recipes": digests, "units": sorted(u.id for u in units),
            "settings": {"score_dtype": SCORE_DTYPE, "exactness_examples": EXACTNESS_EXAMPLES}}
