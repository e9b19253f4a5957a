"""TOFU benchmark aggregation (spec §6.1): Mem, Privacy, Utility, Overall per model.

Inputs are the raw metric keys of docs/design.md (es, em, paraprob, truth_ratio, s_mia_*, uds, the nine
utility values, model_utility, fluency); every value is unitless in [0, 1]. Orientation of the
aggregates: higher = better unlearning (mem, privacy_mia, privacy, overall) or more utility kept
(utility, utility_rel). An aggregate is computed from its parts when they are all present, else
taken from the record as stored, else None. Mem is 0 when one of its terms is 0 (e.g. ES = 1;
spec §6.1 as amended), so such a model gets an Overall and a place in the ranking. Under
`--parity open-unlearning` model utility is OU's `scipy.stats.hmean` of the nine values.
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from metrics.aggregate import HM_EPS, harmonic_mean, harmonic_mean_eps, harmonic_mean_limit
from uds_core.parity import OPEN_UNLEARNING, SPEC, ParityMode, check_mode
from metrics.utility import UTILITY_KEYS, model_utility

MEM_KEYS = ("es", "em", "paraprob", "truth_ratio")
# spec §6.1's four retain-normalised MIA scores, named here (not taken from the metric family) so
# that the benchmark formulas import without the metric stack (`uds report` uses them)
S_MIA_KEYS = ("s_mia_loss", "s_mia_zlib", "s_mia_min_k", "s_mia_min_kpp")
AGGREGATE_KEYS = ("mem", "privacy_mia", "privacy", "utility", "utility_rel", "overall")
FULL_METHOD = "full"

Row = Mapping[str, object]


def mem(es: float, em: float, paraprob: float, truth_ratio: float) -> float | None:
    """Plain HM of 1 - x over the four memorisation values; 0 when a term is 0 (the HM's limit,
    spec §6.1), None if a term is negative."""
    return harmonic_mean_limit([1.0 - es, 1.0 - em, 1.0 - paraprob, 1.0 - truth_ratio])


def privacy_mia(s_loss: float, s_zlib: float, s_min_k: float, s_min_kpp: float) -> float | None:
    return harmonic_mean_eps([s_loss, s_zlib, s_min_k, s_min_kpp])


def privacy(privacy_mia_value: float, uds: float) -> float | None:
    return harmonic_mean_eps([privacy_mia_value, uds])


def utility(model_utility: float, fluency: float) -> float | None:
    return harmonic_mean_eps([model_utility, fluency])


def utility_rel(utility_value: float | None, full_utility: float | None) -> float | None:
    """min(1, utility / (U_full + 1e-12)) with U_full from the same epoch group."""
    if utility_value is None or full_utility is None:
        return None
    return min(1.0, utility_value / (full_utility + HM_EPS))


def overall(mem_value: float, privacy_value: float, utility_rel_value: float) -> float | None:
    return harmonic_mean_eps([mem_value, privacy_value, utility_rel_value])


def overall_no_uds(mem_value: float | None, privacy_mia_value: float | None,
                   utility_rel_value: float | None) -> float | None:
    """The leaderboard view without UDS: plain HM(mem, privacy_mia, utility_rel)."""
    return harmonic_mean([mem_value, privacy_mia_value, utility_rel_value])


def epoch_group(epoch: object) -> str | None:
    """5, "5", "ep5", "epoch5" -> "ep5"; None stays None."""
    if epoch is None:
        return None
    m = re.search(r"\d+", str(epoch))
    return f"ep{int(m.group())}" if m else str(epoch)


def _combine(row: dict, key: str, parts: Sequence[str], fn: Callable[..., float | None]) -> None:
    values = [row.get(p) for p in parts]
    if all(v is not None for v in values):
        row[key] = fn(*values)
    row.setdefault(key, None)


def _steps(parity: ParityMode) -> list[tuple[str, tuple[str, ...], Callable[..., float | None]]]:
    """aggregate -> (parts, formula), in dependency order (utility_rel and overall need the group)."""
    ou = check_mode(parity) == OPEN_UNLEARNING
    return [
        ("mem", MEM_KEYS, mem),
        ("privacy_mia", S_MIA_KEYS, privacy_mia),
        ("privacy", ("privacy_mia", "uds"), privacy),
        ("model_utility", UTILITY_KEYS, lambda *v: model_utility(dict(zip(UTILITY_KEYS, v)), ou)),
        ("utility", ("model_utility", "fluency"), utility),
    ]


def _without_relative(record: Row, parity: ParityMode = SPEC) -> dict:
    row = {k: v for k, v in record.items()}
    row["epoch"] = epoch_group(record.get("epoch"))
    for key, parts, fn in _steps(parity):
        _combine(row, key, parts, fn)
    return row


def full_utilities(rows: Sequence[Row]) -> dict[str, float]:
    """Epoch group -> utility of the record whose method is `full` in that group."""
    return {r["epoch"]: r["utility"] for r in rows
            if r.get("method") == FULL_METHOD and r.get("utility") is not None and r.get("epoch")}


def benchmark_rows(records: Sequence[Row], full_utility: Mapping[str, float] | None = None,
                   parity: ParityMode = SPEC) -> list[dict]:
    """Each record with its aggregates filled in. `full_utility` (epoch group -> U_full) defaults
    to the full records' own utility per group; a group without one gets utility_rel None.
    `parity` "open-unlearning": model utility with OU's mean (uds_core.parity)."""
    rows = [_without_relative(r, parity) for r in records]
    u_full = {**full_utilities(rows), **dict(full_utility or {})}
    for row in rows:
        if row.get("utility") is not None and row["epoch"] in u_full:
            row["utility_rel"] = utility_rel(row["utility"], u_full[row["epoch"]])
        row.setdefault("utility_rel", None)
        _combine(row, "overall", ("mem", "privacy", "utility_rel"), overall)
        row["overall_no_uds"] = overall_no_uds(row.get("mem"), row.get("privacy_mia"), row.get("utility_rel"))
    return rows
