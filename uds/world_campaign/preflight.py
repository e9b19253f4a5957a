"""How this CPU computes a world campaign's bfloat16 work, decided once before its first unit.

Without bfloat16 kernels (`uds.cpu_bf16`) torch's bfloat16 matrix products are tens of times
slower than float32 ones; there the campaign's units compute them through float32 kernels on the
same bfloat16 values (`uds_core.float32_products`), and every unit file records which way it
computed them. `UDS_BF16_PRODUCTS` (float32 or native) overrides the measured choice.
"""

from __future__ import annotations

from typing import Callable

from uds.cpu_bf16 import SLOWDOWN_LIMIT, Products, bf16_slowdown, decide, requested

__all__ = ["SLOWDOWN_LIMIT", "bf16_slowdown", "choose"]


def choose(dtypes: set[str], *, measure: Callable[[], float] | None = None) -> tuple[float | None, Products | None]:
    """(measured slowdown, how bfloat16 products are computed) when any of `dtypes` is bfloat16,
    else (None, None) with nothing measured. `UDS_BF16_PRODUCTS` float32 or native is taken as
    it is (nothing measured); auto, or unset, measures (`measure` defaults to `bf16_slowdown`)."""
    if "bfloat16" not in dtypes:
        return None, None
    if (wanted := requested()) != "auto":
        return None, wanted
    ratio = (measure or bf16_slowdown)()   # this module's name, looked up now: a test may replace it
    return ratio, decide(ratio)
