"""How much slower this CPU computes bfloat16 than float32, and what `uds` does about it.

Without bfloat16 kernels (AVX-512 BF16 or AMX) torch takes a slow path for bfloat16 matrix
products on the CPU, tens of times slower than float32. There, unless `UDS_BF16_PRODUCTS=native`,
a command asked for bfloat16 on the CPU runs its products through float32 kernels on the same
bfloat16 values (`uds_core.float32_products`): bfloat16's numbers at about float32's speed, in
bfloat16's memory. With the kernels torch's own path is as fast or faster and is kept.
"""

from __future__ import annotations

import contextlib
import functools
import os
import statistics
import sys
import time
from typing import Literal

SLOWDOWN_LIMIT = 4.0   # bfloat16 / float32 seconds above which bfloat16 on this CPU is called slow
ENV = "UDS_BF16_PRODUCTS"   # auto (the default), float32 or native
Products = Literal["float32", "native"]


def bf16_slowdown(*, rows: int = 64, width: int = 512, repeats: int = 5) -> float:
    """Seconds of a (rows x width) @ (width x width) bfloat16 product over the same in float32, the
    median of `repeats` timings each, on the calling thread's torch settings: about 1 or below
    where the CPU has bfloat16 kernels."""
    import torch

    gen = torch.Generator().manual_seed(0)
    a, w = torch.randn(rows, width, generator=gen), torch.randn(width, width, generator=gen)

    def seconds(dtype: torch.dtype) -> float:
        x, y = a.to(dtype), w.to(dtype)
        x @ y   # the first call may allocate or pick kernels
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            x @ y
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    return seconds(torch.bfloat16) / max(seconds(torch.float32), 1e-9)


def slowdown_phrase(ratio: float) -> str:
    """"this CPU computes bfloat16 Nx slower than float32 (torch's CPU capability ...)", the words
    every message about a slow bfloat16 CPU starts with."""
    import torch

    return (f"this CPU computes bfloat16 {ratio:.0f}x slower than float32 (torch's CPU capability "
            f"{torch.backends.cpu.get_cpu_capability()}: no AVX-512 BF16 or AMX kernels)")


_SAID: list[float] = []   # the note is said once a process


def requested() -> Literal["auto", "float32", "native"]:
    """`UDS_BF16_PRODUCTS` (auto when unset); another value is bad input."""
    wanted = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if wanted not in ("auto", "float32", "native"):
        from uds_core.errors import UdsInputError

        raise UdsInputError(f"{ENV}={wanted}: choose auto, float32 or native")
    return wanted   # type: ignore[return-value]


def decide(ratio: float) -> Products:
    """Through float32 kernels where bfloat16 is more than `SLOWDOWN_LIMIT` times slower."""
    return "float32" if ratio > SLOWDOWN_LIMIT else "native"


@functools.lru_cache(maxsize=1)
def _measured() -> float:
    return bf16_slowdown()


def choose_products(device: str, dtype) -> Products | None:
    """How bfloat16 matrix products on the CPU are computed in this process: "float32" (through
    float32 kernels) where `UDS_BF16_PRODUCTS` says so or, by default, where this CPU computes
    bfloat16 more than `SLOWDOWN_LIMIT` times slower (measured and said in one stderr line once
    a process); "native" otherwise; None unless `device` is the CPU and `dtype` bfloat16."""
    import torch

    if device != "cpu" or dtype != torch.bfloat16:
        return None
    if (wanted := requested()) != "auto":
        return wanted
    ratio = _measured()
    if decide(ratio) == "native":
        return "native"
    if not _SAID:
        _SAID.append(ratio)
        print(f"uds: {slowdown_phrase(ratio)}; its bfloat16 matrix products run here through float32 kernels on "
              f"the same bfloat16 values ({ENV}=native keeps torch's own)", file=sys.stderr)
    return "float32"


def bf16_products(device: str, dtype) -> contextlib.AbstractContextManager:
    """A context in which bfloat16 CPU products are computed as `choose_products` decides."""
    if choose_products(device, dtype) != "float32":
        return contextlib.nullcontext()
    from uds_core.float32_products import float32_products

    return float32_products()


_PROCESS: list = []   # the context `use_for_process` entered, until `release`


def use_for_process(device: str, dtype) -> Products | None:
    """`bf16_products` from now until `release()` (a command line's whole run: `uds.cli.main`
    releases it when the command returns); entered once however often it is called."""
    choice = choose_products(device, dtype)
    if choice == "float32" and not _PROCESS:
        from uds_core.float32_products import float32_products

        ctx = float32_products()
        ctx.__enter__()
        _PROCESS.append(ctx)
    return choice


def release() -> None:
    """Leave what `use_for_process` entered (nothing when it entered nothing)."""
    while _PROCESS:
        _PROCESS.pop().__exit__(None, None, None)


def products_in_use(device: str, dtype) -> Products | None:
    """How this process computes bfloat16 CPU products now (None unless CPU and bfloat16): for the
    record a result keeps (`uds_core.float32_products.route`, imported here only when asked: torch
    loads lazily)."""
    from uds_core.float32_products import route

    return route(device, dtype)
