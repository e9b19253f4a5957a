"""bfloat16 matrix products computed by float32 kernels, for CPUs without bfloat16 kernels.

On a CPU without AVX-512 BF16 or AMX, torch's bfloat16 matrix products take a slow path, tens of
times slower than float32 (the backward of attention too). A bfloat16 kernel multiplies bfloat16
values exactly into float32 and sums in float32; so does a float32 kernel given the same values
widened, which is exact. Inside `float32_products()` every bfloat16 CPU matrix product (`mm`,
`addmm`, `bmm`: what linear layers and `matmul` reach, forward and backward) and the CPU attention
kernel and its backward widen their inputs, run in float32 and round their results to bfloat16:
the numbers of a bfloat16 kernel up to the order of summation (in attention the softmax weights
are not rounded to bfloat16 before they weigh the values).

It works at torch's dispatch level, below autograd: autograd saves the bfloat16 tensors it
always saves, and gradient checkpointing recomputes the same operations. The right-hand matrix
of `mm`/`addmm` (a weight, in a linear layer) is widened a block of columns at a time into one
reused buffer, so a model gains no float32 copy of its weights and its memory stays bfloat16's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Literal

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
BF16 = torch.bfloat16
BLOCK_ELEMENTS = 1 << 23   # float32 elements of a right-hand matrix widened at once (32 MiB)


def _is_cpu_bf16(t: object) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype == BF16 and t.device.type == "cpu"


class _Scratch:
    """One float32 buffer, grown on demand, that blocks of a matrix are widened into."""

    def __init__(self) -> None:
        self.buf = torch.empty(0)

    def widen(self, m: torch.Tensor) -> torch.Tensor:
        """A float32 copy of the 2-D `m`, a view of the buffer: valid until the next call."""
        n = m.numel()
        if self.buf.numel() < n:
            self.buf = torch.empty(n)
        return self.buf[:n].view(m.shape).copy_(m)


_SCRATCH = _Scratch()


def _widened_columns(b: torch.Tensor, cols: slice) -> torch.Tensor:
    """b[:, cols] in float32 (b: k x n), copied in the orientation b is stored in."""
    if b.stride(0) == 1 and b.stride(1) != 1:   # the transpose of a row-major weight, as linear passes it
        return _SCRATCH.widen(b.T[cols]).T
    return _SCRATCH.widen(b[:, cols])


def mm(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b (+ bias) for bfloat16 a (m x k), b (k x n), bias broadcastable to (m x n): float32
    products and sums, one rounding to bfloat16; (m x n)."""
    af = a.float()
    out = torch.empty(a.shape[0], b.shape[1], dtype=BF16)
    step = max(1, BLOCK_ELEMENTS // max(1, b.shape[0]))
    for start in range(0, b.shape[1], step):
        cols = slice(start, min(start + step, b.shape[1]))
        block = af @ _widened_columns(b, cols)
        if bias is not None:
            block += bias.expand(a.shape[0], b.shape[1])[:, cols].float()
        out[:, cols] = block
    return out


def _widen(a: object) -> object:
    return a.float() if _is_cpu_bf16(a) else a


def _narrow(a: object) -> object:
    return a.to(BF16) if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a


def _addmm(bias, a, b, *, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        return None
    return mm(a, b, bias)


def _on_widened(func, args, kwargs):
    """`func` with its bfloat16 CPU tensor inputs widened to float32."""
    return func(*(_widen(a) for a in args), **{k: _widen(v) for k, v in kwargs.items()})


def _widened_call(func, args, kwargs):
    """`func` on widened inputs, its float32 tensor results rounded to bfloat16."""
    out = _on_widened(func, args, kwargs)
    return tuple(_narrow(o) for o in out) if isinstance(out, tuple) else _narrow(out)


def _attention(func, args, kwargs):
    out, logsumexp = _on_widened(func, args, kwargs)
    return out.to(BF16), logsumexp   # the kernel's log-sum-exp is float32 in bfloat16 too


_BLOCKED = {aten.mm.default: lambda a, b: mm(a, b), aten.addmm.default: _addmm}
_WIDENED = {aten.bmm.default: _widened_call,
            aten._scaled_dot_product_flash_attention_for_cpu.default: _attention,
            aten._scaled_dot_product_flash_attention_for_cpu_backward.default: _widened_call}
_HANDLED = frozenset(_BLOCKED) | frozenset(_WIDENED)


class Float32Products(TorchDispatchMode):
    """The dispatch mode of `float32_products` (see the module's docstring)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in _HANDLED:   # every other op of the process passes here: decide on the op first
            return func(*args, **kwargs)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if tensors and all(_is_cpu_bf16(t) for t in tensors[:3]):
            if func in _BLOCKED and (out := _BLOCKED[func](*args, **kwargs)) is not None:
                return out
            if func in _WIDENED:
                return _WIDENED[func](func, args, kwargs)
        return func(*args, **kwargs)


_ACTIVE = [0]   # how many float32_products contexts are open


@contextlib.contextmanager
def float32_products() -> Iterator[None]:
    """Within it, bfloat16 matrix products and attention on the CPU run in float32 (module docstring)."""
    with Float32Products():
        _ACTIVE[0] += 1
        try:
            yield
        finally:
            _ACTIVE[0] -= 1


def active() -> bool:
    """Whether a `float32_products` context is open."""
    return _ACTIVE[0] > 0


def route(device: str, dtype: torch.dtype) -> Literal["float32", "native"] | None:
    """How bfloat16 products on `device` are computed now: "float32" inside a `float32_products`
    context, "native" (torch's own kernels) outside it; None unless `device` is "cpu" and `dtype`
    bfloat16, the only pair the context changes."""
    if device != "cpu" or dtype != BF16:
        return None
    return "float32" if active() else "native"
