"""Numbers on their way to JSON, tables and plots: a missing or non-finite value becomes None."""

from __future__ import annotations

import math


def finite_or_none(x) -> float | None:
    """`float(x)` when that is finite; None for None, NaN and ±inf (JSON has no NaN, and a table
    or a plot leaves such a value out). Bools and numeric strings convert as `float` converts them."""
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None
