"""Whether this CPU can run a bfloat16 world campaign at all, measured before its first unit.

Without bfloat16 kernels (`uds.cpu_bf16`) a campaign whose recipes train and score in bfloat16
would run tens to hundreds of times slower than its recorded units, for results no different from
the same units on a CPU that has the kernels. The campaign refuses such a CPU in one line unless
told to go on.
"""

from __future__ import annotations

from typing import Callable

from uds.cpu_bf16 import SLOWDOWN_LIMIT, bf16_slowdown, slowdown_phrase
from uds_core.errors import UdsInputError

__all__ = ["SLOWDOWN_LIMIT", "bf16_slowdown", "check_bf16"]


def check_bf16(dtypes: set[str], *, allow_slow: bool, where: str,
               measure: Callable[[], float] | None = None) -> float | None:
    """The measured slowdown when any of `dtypes` is bfloat16 (None otherwise, nothing measured);
    raises `UdsInputError` when it exceeds `SLOWDOWN_LIMIT` and `allow_slow` is false. `where`
    says where the campaign's units ran so far (CPU names); `measure` defaults to `bf16_slowdown`."""
    if "bfloat16" not in dtypes:
        return None
    ratio = (measure or bf16_slowdown)()   # this module's name, looked up now: a test may replace it
    if ratio > SLOWDOWN_LIMIT and not allow_slow:
        ran = f" (its units so far ran on {where})" if where else ""
        raise UdsInputError(f"{slowdown_phrase(ratio)}, and this campaign trains and scores in bfloat16, so its units "
                            f"would take about {ratio:.0f} times as long as on a CPU with those kernels{ran}; run it "
                            "there or on a GPU, or pass --allow-slow-bf16 to go on here")
    return ratio
