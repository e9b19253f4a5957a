"""Test helpers around forward hooks (not part of the library)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch.nn as nn


@contextmanager
def count_calls(module: nn.Module) -> Iterator[list[int]]:
    """Counts forward calls of `module` during the context; yields a one-element list [count]."""
    counter = [0]

    def hook(_module, _inputs, _output):
        counter[0] += 1

    handle = module.register_forward_hook(hook)
    try:
        yield counter
    finally:
        handle.remove()
