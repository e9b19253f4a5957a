"""The Hydra callback (`hydra/callbacks=uds`) that registers the plug-in's handlers in
Open-Unlearning's metric registry before `src/eval.py` builds its evaluators."""

from __future__ import annotations

import logging
from typing import Any

from uds.ou.register import register_in_open_unlearning

try:
    from hydra.experimental.callback import Callback
except ImportError:   # Hydra absent: the class still imports (tests call its hooks directly)
    Callback = object

log = logging.getLogger(__name__)


class RegisterUds(Callback):
    """Registers `uds` and `uds_<key>` at run start and again at each job start (idempotent;
    a multirun's jobs may run in fresh processes)."""

    def _register(self) -> None:
        names = register_in_open_unlearning()
        log.info("uds plug-in: registered %d metric handlers (uds, uds_<key>)", len(names))

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        self._register()

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        self._register()

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        self._register()
