"""Silence the dependencies' own chatter before any of them is imported.

Our own progress says what is happening; transformers' per-load bars only add noise, and
bitsandbytes warns on import, on CPUs with AVX512-BF16, that an optional fast NF4 kernel package
is absent (its fallback gives the same numbers; the line broke one-line errors).
"""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from typing import Iterator


def quiet_libraries() -> None:
    """Quiet transformers and bitsandbytes; cheap (imports neither unless already imported)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")   # read by transformers at import
    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
    # offline, the kernel lookup bitsandbytes starts says it skips a publisher check (`kernels`' own logger)
    logging.getLogger("kernels").setLevel(logging.ERROR)
    if "transformers" in sys.modules:   # already imported (e.g. the command line called in-process)
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()


@contextmanager
def quiet_logger(name: str) -> Iterator[None]:
    """Within the block, the logger `name` says errors only (a library's warnings about what the
    caller reports itself, once, in its own words); its level is restored after."""
    log = logging.getLogger(name)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
