"""Open-Unlearning's trainer with `UdsCallback`: the Hydra callback `hydra/callbacks=uds_curve`.

OU builds its trainer in `src/trainer/__init__.py` (`load_trainer`: `TRAINER_REGISTRY[name](...)`)
and takes no callback from its config. `UdsCurve`, instantiated by Hydra from
`hydra/callbacks/uds_curve.yaml` (keys: `CurveKeys`), checks its keys when Hydra makes it, and at
job start wraps every entry of OU's `TRAINER_REGISTRY` so that the trainer it builds gets a
`UdsCallback` (`Trainer.add_callback`) whose anchors are checked against OU's loaded model right
away, before training starts. The curve goes to `<trainer output_dir>/uds_curve.jsonl` unless
`curve` names a file; with `save_best`, the chosen checkpoint to `<output_dir>/uds_curve.best/`.

Hydra turns exceptions raised in a callback's hooks into warnings (the run would go on without
the curve), so bad input here stops the process itself: one line on stderr, exit status 2.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, fields
from typing import Any, Callable

from uds_core.errors import UdsInputError
from uds_core.formula import TAU
from uds.callbacks import DEFAULT_METRICS, UdsCallback

try:
    from hydra.experimental.callback import Callback
except ImportError:   # Hydra absent: the class still imports (tests call its hooks directly)
    Callback = object

OU_TRAINERS = "trainer"   # OU's src/trainer package (src/ is on sys.path when src/train.py runs)


@dataclass(frozen=True)
class CurveKeys:
    """The keys of `hydra/callbacks/uds_curve.yaml`, with their defaults (see UdsCallback)."""
    full_model: str = "full"          # anchors: OU's TOFU Llama-3.2-1B full and retain90 by default
    retain_model: str = "retain"
    data_path: str | None = None      # annotated forget file (null: the one that goes with full_model)
    every: int = 10                   # evaluate every N optimiser steps (and before/after training)
    on_epoch: bool = False            # also at the end of every epoch
    metrics: tuple = DEFAULT_METRICS  # registry keys recorded beside UDS
    curve: str | None = None          # null: <trainer output_dir>/uds_curve.jsonl
    best: str | None = "uds"          # rule choosing the checkpoint (uds.callbacks.best)
    save_best: bool = False           # save the chosen checkpoint beside the curve (<curve>.best/)
    tau: float = TAU
    batch_size: int = 8
    s1_cache: bool = True
    tofu_dir: str | None = None       # TOFU JSON files for real anchors' output metrics ($UDS_TOFU_DIR)


def _stop(exc: UdsInputError) -> None:
    print(f"uds_curve: error: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(2)


class UdsCurve(Callback):
    """The Hydra callback: keys checked when Hydra makes it; OU's trainers wrapped at job start."""

    def __init__(self, **keys: Any):
        known = {f.name for f in fields(CurveKeys)}
        unknown = sorted(set(keys) - known)
        try:
            if unknown:
                raise UdsInputError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
            given = {k: (tuple(v) if k == "metrics" else v) for k, v in keys.items() if v is not None or k == "best"}
            self.keys = CurveKeys(**given)
            self.make_callback()   # every key checked now, before OU loads anything
        except UdsInputError as exc:
            _stop(exc)

    def make_callback(self) -> UdsCallback:
        k = self.keys
        return UdsCallback(k.full_model, k.retain_model, every=k.every, on_epoch=k.on_epoch, metrics=k.metrics,
                           data=k.data_path, curve=k.curve, best=k.best, best_dir="auto" if k.save_best else None,
                           tau=float(k.tau), batch_size=int(k.batch_size), s1_cache=bool(k.s1_cache),
                           tofu_dir=k.tofu_dir)

    def on_job_start(self, config: Any = None, **kwargs: Any) -> None:
        try:
            attach_to_open_unlearning(self.make_callback)
        except UdsInputError as exc:
            _stop(exc)


def with_callback(trainer_cls: Any, make: Callable[[], UdsCallback]) -> Callable[..., Any]:
    """`trainer_cls` as OU's registry calls it, returning its trainer with a fresh `UdsCallback`
    added, its anchors checked against the trainer's model (UdsInputError: one line, exit 2)."""
    def build(*args: Any, **kwargs: Any) -> Any:
        trainer = trainer_cls(*args, **kwargs)
        callback = make()
        tokenizer = getattr(trainer, "processing_class", None) or getattr(trainer, "tokenizer", None)
        try:
            callback.evaluator.attach(trainer.model, tokenizer)
        except UdsInputError as exc:
            _stop(exc)
        trainer.add_callback(callback)
        return trainer
    build.__name__ = build.__qualname__ = getattr(trainer_cls, "__name__", "trainer")
    build.uds_wraps = trainer_cls
    return build


def attach_to_open_unlearning(make: Callable[[], UdsCallback]) -> list[str]:
    """Wrap every trainer of OU's `TRAINER_REGISTRY` (once; idempotent). Returns their names."""
    try:
        registry = importlib.import_module(OU_TRAINERS).TRAINER_REGISTRY
    except (ImportError, AttributeError) as exc:
        raise UdsInputError(f"Open-Unlearning's trainer registry is not importable ({exc}); run OU's src/train.py "
                            "from its root with hydra/callbacks=uds_curve") from exc
    for name, cls in list(registry.items()):
        registry[name] = with_callback(getattr(cls, "uds_wraps", cls), make)
    return list(registry)
