"""Evaluating a model in the middle of its training without disturbing the training.

`preserved_rng()` restores the random generators after its block; `evaluation_mode(model)` puts
every module in eval mode and turns gradients off for the block,
and on the way out (normally or by an exception) restores exactly what it found: each module's
train/eval flag, the grad mode, and every random generator the training may draw from (torch's
CPU generator, each initialised CUDA device's, Python's `random`, NumPy's global one). The
evaluation itself draws no random numbers; restoring them anyway means a metric that does
(a bootstrap, a sampled generation) cannot shift the training's dropout or data order.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch


def _cuda_states() -> list[torch.Tensor] | None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.get_rng_state_all()
    return None


@contextmanager
def preserved_rng() -> Iterator[None]:
    """Every random generator the training may draw from, as found, after the block (loading the
    anchors may initialise weights before reading them; a metric may sample)."""
    cpu, cuda = torch.get_rng_state(), _cuda_states()
    py, npy = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        random.setstate(py)
        np.random.set_state(npy)


@contextmanager
def evaluation_mode(model: torch.nn.Module) -> Iterator[None]:
    """Eval mode and no gradients inside; training flags, grad mode and RNG states as found after."""
    modes = [(m, m.training) for m in model.modules()]
    grad = torch.is_grad_enabled()
    try:
        with preserved_rng():
            model.eval()
            with torch.no_grad():
                yield
    finally:
        for m, training in modes:
            m.training = training
        torch.set_grad_enabled(grad)
