"""Training callbacks: UDS and output metrics while a model unlearns.

- `UdsCallback` (uds.callbacks.callback): a `transformers.TrainerCallback` writing a curve file
  (uds_core.curves) every N steps and keeping the best checkpoint by a rule (uds.callbacks.best);
  taken by any Hugging Face `Trainer` (Open-Unlearning's: `hydra/callbacks=uds_curve`,
  uds.ou.training) and by the project's own loop (`uds world build --curve-every N`,
  checkpoints.world.hooks);
- `LiveEvaluator` (uds.callbacks.evaluator): the one evaluation both trainers run;
- `evaluation_mode` (uds.callbacks.isolation): evaluation without disturbing the training.

This package imports metrics and checkpoints, so it sits in the top layer with the commands.
"""

from uds.callbacks.best import BestRule
from uds.callbacks.callback import UdsCallback
from uds.callbacks.evaluator import DEFAULT_METRICS, LiveEvaluator

__all__ = ["BestRule", "DEFAULT_METRICS", "LiveEvaluator", "UdsCallback"]
