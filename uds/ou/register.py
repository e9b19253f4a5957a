"""Putting the handlers into Open-Unlearning's metric registry.

OU keeps `evals.metrics.METRICS_REGISTRY` (name -> `UnlearningMetric`), filled with
`_register_metric(unlearning_metric(name=...)(fn))`; its `src/` is on `sys.path` when
`python src/eval.py` runs, which is when the Hydra callback (uds.ou.callback) calls this.
"""

from __future__ import annotations

import importlib
import logging
import types
from typing import Any, Callable, MutableMapping

from uds_core.errors import UdsInputError
from uds.ou.handlers import handlers

Wrap = Callable[[str, Callable[..., dict]], Any]
log = logging.getLogger(__name__)
FORGET_SET = "Open-Unlearning's TOFU forget set (locuslab/TOFU)"


def tolerate_unreachable_forget_set(metric: Any) -> Any:
    """Let the `uds` metric run offline when its annotated file is given.

    Its YAML asks OU to load the forget set only to cross-check each annotated idx against OU's
    rows. OU loads it (from the hub) before calling the handler, so offline the run used to die
    with a ConnectionError. Now: with `data_path` given, an unreachable forget set skips the
    cross-check with one log line; without it, the error says in one line what to pass.
    """
    original = getattr(metric, "get_datasets", None)
    if original is None:   # not an OU UnlearningMetric (e.g. a test's stand-in)
        return metric

    def get_datasets(self, dataset_cfgs=None, **kwargs):
        try:
            return original(dataset_cfgs=dataset_cfgs, **kwargs)
        except OSError as exc:   # ConnectionError, offline mode, a dataset not in the local cache
            if kwargs.get("data_path"):
                log.warning("uds: %s not reachable (%s); the idx cross-check is skipped, data_path=%s is used",
                            FORGET_SET, type(exc).__name__, kwargs["data_path"])
                return None
            raise UdsInputError(f"uds: {FORGET_SET} could not be loaded ({type(exc).__name__}); offline, pass "
                                "data_path=<annotated forget file> to the uds metric") from exc

    metric.get_datasets = types.MethodType(get_datasets, metric)
    return metric


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
    def wrap(name: str, fn: Callable[..., dict]) -> Any:
        metric = base.unlearning_metric(name=name)(fn)
        return tolerate_unreachable_forget_set(metric) if name == "uds" else metric

    return register(metrics.METRICS_REGISTRY, wrap)
