"""The leaderboard's rows, their default order and how a value is printed: one definition shared by
`uds leaderboard` (uds_leaderboard/render.py) and `uds report` (uds/site), so that both show the
same rows, values and order for the same inputs.

Imports only the benchmark formulas (numpy), not the metric stack: `uds report` stays fast.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from meta_eval.benchmark import S_MIA_KEYS, benchmark_rows, epoch_group

REFERENCES = ("full", "retain")
DECIMALS = 3
UDS_DECIMALS = 4
# Below this magnitude a value prints as "0": 7e-12 is the 1e-12 epsilon of spec §6.1's HM_eps, not
# a measurement (the full model's Overall), and "7.00e-12" reads as something.
ZERO_BELOW = 1e-6


def fill_s_mia(records: list[dict]) -> list[dict]:
    """Derive missing s_mia_* from mia_* and the retain record's AUC of the same attack (spec §4.4)."""
    retain = next((r for r in records if r.get("method") == "retain"), None)
    for r in records:
        for s_key in S_MIA_KEYS:
            raw = s_key[len("s_"):]
            auc, ret = r.get(raw), (retain or {}).get(raw)
            if r.get(s_key) is None and auc is not None and ret is not None:
                from metrics.mia import retain_normalised   # scipy: only when a value is missing

                r[s_key] = retain_normalised(auc, ret)
    return records


def full_utility_by_group(records: Sequence[Mapping], explicit: Mapping[str, float] | None = None) -> dict[str, float]:
    """U_full per epoch group: given explicitly, else the full record of the group; a full record
    without an epoch stands for every group that has no full record of its own."""
    rows = benchmark_rows([r for r in records if r.get("method") == "full"])
    by_group = {r["epoch"]: r["utility"] for r in rows if r.get("utility") is not None and r["epoch"]}
    loose = [r["utility"] for r in rows if r.get("utility") is not None and not r["epoch"]]
    groups = {epoch_group(r.get("epoch")) for r in records} - {None}
    if len(loose) == 1:
        by_group = {g: by_group.get(g, loose[0]) for g in groups | set(by_group)} | {None: loose[0]}
    return {**by_group, **dict(explicit or {})}


def _finite(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def order_key(row: Mapping) -> tuple:
    """The default order: the full and retain references first, then Overall high to low, then UDS
    high to low (missing values last in both), then the model name."""
    method = row.get("method") or ""
    ref = REFERENCES.index(method) if method in REFERENCES else len(REFERENCES)
    overall, uds = _finite(row.get("overall")), _finite(row.get("uds"))
    return (ref, overall is None, -(overall or 0.0), uds is None, -(uds or 0.0), str(row.get("model")))


def leaderboard_rows(records: Sequence[Mapping], explicit_full: Mapping[str, float] | None = None) -> list[dict]:
    """Benchmark rows (spec §6.1 aggregates filled in) in the default order (`order_key`)."""
    records = fill_s_mia([dict(r) for r in records])
    rows = benchmark_rows(records, full_utility_by_group(records, explicit_full))
    return sorted(rows, key=order_key)


def decimals_of(key: str) -> int:
    """Printed decimals of a value column: 4 for UDS, 3 for the others."""
    return UDS_DECIMALS if key == "uds" else DECIMALS


def display_number(value: object, decimals: int = DECIMALS) -> str | None:
    """A value as a table prints it: fixed decimals, "0" below ZERO_BELOW in magnitude, never
    "-0.000"; None for a missing or non-finite value."""
    v = _finite(value)
    if v is None:
        return None
    if abs(v) < ZERO_BELOW:
        return "0"
    text = f"{v:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text
