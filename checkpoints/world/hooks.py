"""Driving Hugging Face `TrainerCallback` objects from the project's own training loop.

`checkpoints.world.train.train` is not a `transformers.Trainer`; `TrainHooks` gives its callbacks
what a Trainer gives them: a real `TrainerState` (global_step, epoch as a float, max_steps,
num_train_epochs, log_history with one {"loss", "step", "epoch"} entry per step) and a
`TrainerControl`, and calls `on_train_begin`, `on_step_end` (after each optimiser step),
`on_epoch_end` and `on_train_end` with `model`, `tokenizer` / `processing_class`, `optimizer` and
`lr_scheduler` as keyword arguments. So one callback object serves both trainers. The hooks
only read the loop's state; they never touch its RNG or data order (callbacks must leave them
as found: `uds.callbacks.UdsCallback` does, and a test checks the losses are unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
from transformers import TrainerControl, TrainerState


@dataclass(frozen=True)
class LoopArgs:
    """The `args` a callback receives from this loop (a Trainer passes its TrainingArguments):
    the training configuration, and `output_dir` (None: the loop writes no run folder)."""
    config: Any
    output_dir: str | None = None


class TrainHooks:
    """Callbacks plus the extra keyword arguments they receive (the tokenizer of the trained model)."""

    def __init__(self, callbacks: Sequence[Any] = (), tokenizer: Any = None, output_dir: str | None = None):
        self.callbacks = list(callbacks)
        self.tokenizer, self.output_dir = tokenizer, output_dir
        self.state, self.control = TrainerState(), TrainerControl()
        self._kwargs: dict[str, Any] = {}
        self._args: LoopArgs | None = None

    def __bool__(self) -> bool:
        return bool(self.callbacks)

    def _call(self, event: str) -> None:
        for cb in self.callbacks:
            fn = getattr(cb, event, None)
            if fn is not None:
                fn(self._args, self.state, self.control, **self._kwargs)

    def begin(self, model: torch.nn.Module, config: Any, *, steps_per_epoch: int, epochs: int, done_epochs: int,
              optimizer: Any, lr_scheduler: Any) -> None:
        """Before the first step (of a resumed run: after its restored epochs)."""
        self._args = LoopArgs(config, self.output_dir)
        self._kwargs = {"model": model, "tokenizer": self.tokenizer, "processing_class": self.tokenizer,
                        "optimizer": optimizer, "lr_scheduler": lr_scheduler}
        s = self.state
        s.max_steps, s.num_train_epochs = steps_per_epoch * epochs, epochs
        s.global_step, s.epoch = steps_per_epoch * done_epochs, float(done_epochs)
        self._steps_per_epoch = steps_per_epoch
        self._call("on_train_begin")

    def step_end(self, loss: float, epoch: int, step_in_epoch: int) -> None:
        """After optimiser step `step_in_epoch` (1-based) of `epoch` (0-based), whose loss was `loss`."""
        s = self.state
        s.global_step += 1
        s.epoch = epoch + step_in_epoch / self._steps_per_epoch
        s.log_history.append({"loss": loss, "step": s.global_step, "epoch": s.epoch})
        self._call("on_step_end")

    def epoch_end(self) -> None:
        self._call("on_epoch_end")

    def end(self) -> None:
        self._call("on_train_end")
