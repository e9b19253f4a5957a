"""Curves for the tiny-world builder: one `UdsCallback` per unlearned model it trains.

`uds world build --curve-every N ...` builds `CurveOptions` from its flags (all checked before
anything is built) and hands `world_callbacks(...)` to `checkpoints.world.build.build_world`,
which asks it for the callbacks of each recipe it trains. Anchors: the world's own full and
retain models; curve: `<dir>/<model>.jsonl`; chosen checkpoint (with `save_best`):
`<dir>/<model>.best/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from checkpoints.specs import tiny_spec
from checkpoints.world.recipes import Recipe
from uds_core import curves
from uds_core.errors import UdsInputError
from uds.callbacks.best import BestRule
from uds.callbacks.callback import UdsCallback
from uds.callbacks.evaluator import DEFAULT_METRICS, metric_keys


@dataclass(frozen=True)
class CurveOptions:
    every: int
    folder: Path
    on_epoch: bool = False
    metrics: tuple[str, ...] = DEFAULT_METRICS
    best: str | None = "uds"
    save_best: bool = False

    def validate(self) -> None:
        """UdsInputError in one line for a bad flag (before any model is built)."""
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
            raise UdsInputError(f"--curve-every must be an integer >= 1, got {self.every!r}")
        keys = metric_keys(self.metrics)
        if self.best:
            from metrics.registry import REGISTRY

            BestRule.parse(self.best, {"uds": "erasure", **{k: REGISTRY[k].orientation for k in keys}})
        problem = curves.check_writable(self.folder / "probe.jsonl")
        if problem:
            raise UdsInputError(f"--curve-dir {self.folder}: {problem}")


def world_callbacks(preset: str, seed: int, opts: CurveOptions) -> Callable[[Recipe], Sequence[UdsCallback]]:
    """The builder's `callbacks_for`: a curve callback for each unlearned model, none for others."""
    opts.validate()
    full, retain = tiny_spec(preset, seed, "full"), tiny_spec(preset, seed, "retain")

    def callbacks_for(r: Recipe) -> list[UdsCallback]:
        if r.kind != "unlearned":
            return []
        curve = opts.folder / f"{r.name}.jsonl"
        return [UdsCallback(full, retain, every=opts.every, on_epoch=opts.on_epoch, metrics=opts.metrics,
                            curve=curve, best=opts.best, best_dir="auto" if opts.save_best else None,
                            name=r.name)]
    return callbacks_for
