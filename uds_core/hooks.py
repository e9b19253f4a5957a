"""Composable forward hooks: every hook context of the toolkit (capture module outputs or inputs,
replace outputs at (row, position) pairs or row slots, run a module on some rows only, stop a
forward after a module).

A module's "output" is its activation tensor: the output itself, or its first element when the
module returns a tuple (transformers 4.x decoder layers, attention modules in every version).
Every hook is removed when its context exits, also on error.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

import torch
import torch.nn as nn
from torch.utils.hooks import RemovableHandle

Selector = Callable[[torch.Tensor], torch.Tensor]


@contextmanager
def _removed_after(*handles: RemovableHandle) -> Iterator[None]:
    """Removes the hooks of `handles` when the context exits, also on error."""
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def activation_of(output: Any) -> torch.Tensor:
    """The activation tensor of a module output (first element of a tuple)."""
    return output[0] if isinstance(output, tuple) else output


def with_activation(output: Any, new: torch.Tensor) -> Any:
    """`output` with its activation swapped for `new`, keeping the tuple structure if any."""
    return (new, *output[1:]) if isinstance(output, tuple) else new


def at_positions(rows: torch.Tensor, positions: torch.Tensor) -> Selector:
    """Selector taking activation[rows[k], positions[k]] for each k: (B, T, H) -> (K, H)."""
    return lambda act: act[rows.to(act.device), positions.to(act.device)]


def at_flat(flat: torch.Tensor) -> Selector:
    """Selector taking rows `flat` of the activation flattened to (R C, H): (R, C, H) -> (K, H)."""
    return lambda act: act.reshape(-1, act.shape[-1]).index_select(0, flat.to(act.device))


@contextmanager
def capture_outputs(modules: Mapping[str, nn.Module],
                    select: Selector | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Record each named module's activation (optionally reduced by `select`) during the context.

    Yields a dict filled as the forward runs: name -> detached tensor (a copy, so later
    in-place ops in the model cannot change it). A module called twice keeps its last output.
    """
    store: dict[str, torch.Tensor] = {}

    def make_hook(name: str):
        def hook(_module, _inputs, output):
            act = activation_of(output).detach()
            store[name] = (select(act) if select else act).clone()
        return hook

    with _removed_after(*(module.register_forward_hook(make_hook(name)) for name, module in modules.items())):
        yield store


@contextmanager
def capture_inputs(modules: Mapping[str, nn.Module],
                   select: Selector | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Like `capture_outputs`, for each module's input hidden states (its first positional
    argument, or the `hidden_states` keyword)."""
    store: dict[str, torch.Tensor] = {}

    def make_hook(name: str):
        def hook(_module, args, kwargs):
            act = (args[0] if args else kwargs["hidden_states"]).detach()
            store[name] = (select(act) if select else act).clone()
        return hook

    with _removed_after(*(module.register_forward_pre_hook(make_hook(name), with_kwargs=True)
                          for name, module in modules.items())):
        yield store


@contextmanager
def replace_output(module: nn.Module, rows: torch.Tensor, positions: torch.Tensor,
                   values: torch.Tensor) -> Iterator[None]:
    """While active, activation[rows[k], positions[k], :] = values[k] in `module`'s output.

    values: (K, H), cast to the activation's dtype and device. The activation is cloned before
    the write, so tensors the model still holds (e.g. a residual) are not modified in place.
    """
    def hook(_module, _inputs, output):
        act = activation_of(output)
        patched = act.clone()
        patched[rows.to(act.device), positions.to(act.device)] = values.to(device=act.device, dtype=act.dtype)
        return with_activation(output, patched)

    with _removed_after(module.register_forward_hook(hook)):
        yield


@contextmanager
def replace_slots(module: nn.Module, start: int, values: torch.Tensor) -> Iterator[None]:
    """While active, slots [start, start + C) of `module`'s activation (R, n, H) are `values`
    (R, C, H), cast to the activation's dtype (cloned first, as in `replace_output`)."""
    def hook(_module, _inputs, output):
        act = activation_of(output).clone()
        act[:, start:start + values.shape[1]] = values.to(act.dtype)
        return with_activation(output, act)

    with _removed_after(module.register_forward_hook(hook)):
        yield


@contextmanager
def on_rows_only(module: nn.Module, flat: torch.Tensor) -> Iterator[None]:
    """While active, a position-wise `module` ((R, C, H) -> (R, C, H), e.g. an MLP) runs on rows
    `flat` of its input flattened to (R C, H) only; its output is zero elsewhere. For passes
    where nothing but those rows' outputs is read."""
    shape: list[torch.Size] = []

    def gather(_module, args, kwargs):
        hidden = args[0]
        shape[:] = [hidden.shape]
        return (hidden.reshape(-1, hidden.shape[-1]).index_select(0, flat.to(hidden.device))[None],), kwargs

    def scatter(_module, _args, output):
        (r, c, h), = shape
        return output.new_zeros(r * c, h).index_copy_(0, flat.to(output.device), output[0]).view(r, c, h)

    with _removed_after(module.register_forward_pre_hook(gather, with_kwargs=True),
                        module.register_forward_hook(scatter)):
        yield


class _StopForward(Exception):
    """Raised by `output_until`'s hook once the module it waits for has run."""


def output_until(model: nn.Module, module: nn.Module, **inputs: Any) -> torch.Tensor:
    """`module`'s activation in a forward of `model` on `inputs`, with its autograd graph.

    Nothing after `module` runs: its hook ends the forward by raising, the one way PyTorch
    offers to stop a module's forward part-way (RMU steers one layer and needs no layer above)."""
    store: dict[str, torch.Tensor] = {}

    def hook(_module, _inputs, output):
        store["act"] = activation_of(output)
        raise _StopForward

    with _removed_after(module.register_forward_hook(hook)):
        try:
            model(**inputs)
        except _StopForward:
            pass
    return store["act"]
