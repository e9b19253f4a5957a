"""Putting the handlers into Open-Unlearning's metric registry.

OU keeps `evals.metrics.METRICS_REGISTRY` (name -> `UnlearningMetric`), filled with
`_register_metric(unlearning_metric(name=...)(fn))`; its `src/` is on `sys.path` when
`python src/eval.py` runs, which is when the Hydra callback (uds.ou.callback) calls this.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, MutableMapping

from core.errors import UdsInputError
from uds.ou.handlers import handlers

Wrap = Callable[[str, Callable[..., dict]], Any]


def register(registry: MutableMapping[str, Any], wrap: Wrap = lambda name, fn: fn) -> list[str]:
    """Add every handler to `registry` as `wrap(name, fn)`; returns the names (idempotent)."""
    table = handlers()
    for name, fn in table.items():
        registry[name] = wrap(name, fn)
    return list(table)


def register_in_open_unlearning() -> list[str]:
    """Register the handlers in OU's own registry (OU's `src/` must be importable)."""
    try:
        metrics = importlib.import_module("evals.metrics")
        base = importlib.import_module("evals.metrics.base")
    except ImportError as exc:
        raise UdsInputError(f"Open-Unlearning's evals.metrics is not importable ({exc}); run OU's "
                            "src/eval.py from its root with hydra/callbacks=uds") from exc
    return register(metrics.METRICS_REGISTRY, lambda name, fn: base.unlearning_metric(name=name)(fn))
