"""Whether this CPU can run a bfloat16 world campaign at all, measured before its first unit.

Without bfloat16 kernels (AVX-512 BF16 or AMX) torch emulates bfloat16 arithmetic, and a bfloat16
matrix product costs tens to hundreds of float32 ones: a campaign whose recipes train and score in
bfloat16 would then run that many times slower than its recorded units, for results no different
from the same units on a CPU that has the kernels. The campaign refuses such a CPU in one line
unless told to go on.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

from uds_core.errors import UdsInputError

SLOWDOWN_LIMIT = 4.0   # bfloat16 / float32 seconds above which a bfloat16 campaign is refused


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


def check_bf16(dtypes: set[str], *, allow_slow: bool, where: str,
               measure: Callable[[], float] | None = None) -> float | None:
    """The measured slowdown when any of `dtypes` is bfloat16 (None otherwise, nothing measured);
    raises `UdsInputError` when it exceeds `SLOWDOWN_LIMIT` and `allow_slow` is false. `where`
    says where the campaign's units ran so far (CPU names); `measure` defaults to `bf16_slowdown`."""
    if "bfloat16" not in dtypes:
        return None
    import torch

    ratio = (measure or bf16_slowdown)()
    if ratio > SLOWDOWN_LIMIT and not allow_slow:
        raise UdsInputError(
            f"this CPU computes bfloat16 {ratio:.0f}x slower than float32 (torch's CPU capability "
            f"{torch.backends.cpu.get_cpu_capability()}: no AVX-512 BF16 or AMX kernels), and this campaign trains "
            f"and scores in bfloat16, so its units would take about {ratio:.0f} times as long as on a CPU with "
            f"those kernels{f' (its units so far ran on {where})' if where else ''}; run it there or on a GPU, "
            "or pass --allow-slow-bf16 to go on here")
    return ratio
