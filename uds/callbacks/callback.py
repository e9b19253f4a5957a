"""`UdsCallback`: UDS and output metrics every N steps while a model unlearns, as a curve file.

A `transformers.TrainerCallback`, so a Hugging Face `Trainer` (Open-Unlearning's trainers are
subclasses) takes it as it is; the project's own loop drives it through
`checkpoints.world.hooks.TrainHooks`. Events:
- `on_train_begin`: anchors loaded and checked against the trained model, curve header written,
  then the model before training is evaluated (step 0; `eval_on_start`);
- `on_step_end`: evaluated when `global_step` is a multiple of `every`;
- `on_epoch_end`: evaluated when `on_epoch` (and this step is not evaluated yet);
- `on_train_end`: the final model is evaluated if its step is not yet, so the curve's last point
  is always the model the training returns.
Bad input fails before training starts, in one line (`UdsInputError`): `every` < 1, an unknown
metric or rule key, an unwritable curve file (when constructed), anchors not patchable with the
trained model (at `on_train_begin`). An evaluation that fails later is written to the curve as
`{"step", "error"}`, said in one line on stderr, and training goes on. Every evaluation runs in
`isolation.evaluation_mode`: the training's RNG, grad mode and train/eval flags are as found
after it, so the training's losses are those of a run without the callback.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import torch.nn as nn
from transformers import TrainerCallback

import uds
from uds_core import curves
from uds_core.atomic import fsync_tree
from uds_core.errors import UdsInputError
from uds_core.formula import TAU
from uds.callbacks.best import BestRule
from uds.callbacks.evaluator import DEFAULT_METRICS, LiveEvaluator
from uds.callbacks.isolation import evaluation_mode

CURVE_NAME, BEST_NAME = "uds_curve.jsonl", "uds_best"   # defaults inside a Trainer's output_dir


class UdsCallback(TrainerCallback):
    """Evaluate the trained model every `every` optimiser steps (and/or at each epoch's end).

    full, retain: checkpoint specs of the anchors (as `uds score --full/--retain`); data: the
    annotated forget file (None: the one that goes with `full`); metrics: registry keys recorded
    beside UDS; curve: the JSON-lines file (uds_core.curves; None: `<output_dir>/uds_curve.jsonl` of
    the Trainer's arguments); best: the rule choosing the checkpoint (uds.callbacks.best; None:
    no choice); best_dir: where the chosen model is saved, replaced whenever the rule prefers a
    newer evaluation (None: chosen, not saved; "auto": `<curve's folder>/<curve name>.best`)."""

    def __init__(self, full: str, retain: str, *, every: int = 10, on_epoch: bool = False,
                 metrics: Sequence[str] = DEFAULT_METRICS, data: str | None = None, curve: str | Path | None = None,
                 best: str | None = "uds", best_dir: str | Path | None = None, eval_on_start: bool = True,
                 tau: float = TAU, batch_size: int = 8, s1_cache: bool = True, tofu_dir: str | None = None,
                 name: str | None = None):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise UdsInputError(f"curve: evaluate every N steps needs an integer N >= 1, got {every!r}")
        self.every, self.on_epoch, self.eval_on_start, self.name = every, bool(on_epoch), bool(eval_on_start), name
        self.curve = Path(curve) if curve is not None else None
        if self.curve is not None:
            _check_curve(self.curve)
        self.evaluator = LiveEvaluator(full, retain, data=data, metrics=metrics, tau=tau, batch_size=batch_size,
                                       s1_cache=s1_cache, tofu_dir=tofu_dir)
        self.rule = BestRule.parse(best, self.evaluator.orientation()) if best else None
        self.best_dir = None if best_dir is None else ("auto" if str(best_dir) == "auto" else Path(best_dir))
        self.records: list[dict] = []
        self._mark = time.perf_counter()
        self._saved_step: int | None = None

    # --- Trainer events -------------------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw) -> None:
        if model is None:
            raise UdsInputError("curve: the trainer passed no model to the callback")
        self._resolve_paths(args)
        self.evaluator.attach(model, kw.get("processing_class") or kw.get("tokenizer"))
        settings = {"name": self.name or self.curve.stem, "every": self.every, "on_epoch": self.on_epoch,
                    **self.evaluator.settings(), "best": self.rule.text() if self.rule else None,
                    "best_dir": str(self.best_dir) if self.best_dir else None, "max_steps": state.max_steps,
                    "num_train_epochs": state.num_train_epochs, "uds_version": uds.__version__}
        self.records = curves.start_curve(self.curve, settings, state.global_step)
        self._mark = time.perf_counter()
        if self.eval_on_start and state.global_step == 0 and self._due(state):
            self._evaluate(state, model)

    def on_step_end(self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw) -> None:
        if state.global_step % self.every == 0 and self._due(state):
            self._evaluate(state, model)

    def on_epoch_end(self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw) -> None:
        if self.on_epoch and self._due(state):
            self._evaluate(state, model)

    def on_train_end(self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw) -> None:
        if self._due(state):
            self._evaluate(state, model)

    # --- evaluation -----------------------------------------------------------------------------
    def _due(self, state: Any) -> bool:
        """Process zero only (a multi-process run writes one curve), once per step."""
        if not getattr(state, "is_world_process_zero", True):
            return False
        return not self.records or self.records[-1]["step"] != state.global_step

    def _evaluate(self, state: Any, model: nn.Module) -> None:
        trained_s = time.perf_counter() - self._mark
        t0 = time.perf_counter()
        record: dict = {"step": int(state.global_step), "epoch": float(state.epoch or 0.0),
                        "train_loss": _last_loss(state.log_history)}
        try:
            with evaluation_mode(model):
                record.update(self.evaluator.evaluate(model))
        except Exception as exc:   # any: reported and written; the training goes on
            record["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            print(f"uds curve: evaluation at step {record['step']} failed ({record['error']}); "
                  "training goes on", file=sys.stderr, flush=True)
        record["eval_seconds"] = round(time.perf_counter() - t0, 4)
        record["train_seconds"] = round(trained_s, 4)
        self.records.append(record)
        if self.rule is not None:
            record["best_step"] = self.rule.best_step(self.records)
            self._keep_best(record["best_step"], model)
        curves.append_record(self.curve, record)
        self._mark = time.perf_counter()

    def _keep_best(self, step: int | None, model: nn.Module) -> None:
        """Save the model when the rule has just chosen this (newest) evaluation."""
        if self.best_dir is None or step is None or step != self.records[-1]["step"] or step == self._saved_step:
            return
        try:
            with evaluation_mode(model):
                save_checkpoint(model, self.evaluator.tokenizer, self.best_dir, self.records[-1])
            self._saved_step = step
        except Exception as exc:   # any: the curve still names the chosen step
            print(f"uds curve: saving the chosen checkpoint (step {step}) failed ({type(exc).__name__}: {exc}); "
                  "training goes on", file=sys.stderr, flush=True)

    def _resolve_paths(self, args: Any) -> None:
        out = getattr(args, "output_dir", None)
        if self.curve is None:
            if not out:
                raise UdsInputError("curve: no curve file given and the trainer has no output_dir")
            self.curve = Path(out) / CURVE_NAME
            self.name = self.name or Path(out).name   # a Trainer's run folder names the run
            _check_curve(self.curve)
        if self.best_dir == "auto":
            self.best_dir = self.curve.with_name(f"{self.curve.stem}.best")


def _check_curve(path: Path) -> None:
    problem = curves.check_writable(path)
    if problem:
        raise UdsInputError(f"curve file {path}: {problem}")


def _last_loss(history: Sequence[dict] | None) -> float | None:
    """The latest training loss a trainer logged (None before any)."""
    for entry in reversed(history or []):
        if "loss" in entry:
            return float(entry["loss"])
    return None


def save_checkpoint(model: nn.Module, tokenizer: Any, folder: Path, record: dict) -> None:
    """`save_pretrained` of model (and tokenizer) into `folder`, replacing it whole, with the
    curve record that chose it as `uds_best.json`."""
    tmp = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    if tokenizer is not None:
        tokenizer.save_pretrained(tmp)
    (tmp / "uds_best.json").write_text(json.dumps(record, indent=1) + "\n")
    fsync_tree(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)
