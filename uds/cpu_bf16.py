"""How much slower this CPU computes bfloat16 than float32, and a warning where it is many times.

Without bfloat16 kernels (AVX-512 BF16 or AMX) torch emulates bfloat16 arithmetic on the CPU, and
a bfloat16 matrix product costs tens to hundreds of float32 ones: `--dtype bfloat16` saves memory
there at that price. With the kernels it is about as fast or faster.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time

SLOWDOWN_LIMIT = 4.0   # bfloat16 / float32 seconds above which bfloat16 on this CPU is called slow


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


@functools.lru_cache(maxsize=1)
def _measured() -> float:
    return bf16_slowdown()


def warn_if_slow(device: str, dtype) -> float | None:
    """On the CPU in bfloat16, measure once per process and print a one-line warning on stderr when
    bfloat16 is more than `SLOWDOWN_LIMIT` times slower; the measured ratio (None when not measured)."""
    import torch

    if device != "cpu" or dtype != torch.bfloat16:
        return None
    ratio = _measured()
    if ratio > SLOWDOWN_LIMIT:
        print(f"uds: warning: {slowdown_phrase(ratio)}; --dtype float32 runs faster here, in twice the memory",
              file=sys.stderr)
    return ratio
