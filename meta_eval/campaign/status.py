"""How far a campaign is, and what each statistic still needs, from its valid measurements.

`coverage`: counts of the protocol's units and members measured (pool members, unlearned models
per setting, retain relearned). `needs`: per metric and statistic, None when the statistic has
the least data it is defined on, else a sentence "needs ..." saying what is missing, so that a
partial campaign shows no number that looks final where there is none:
- faithfulness AUC and its interval: MIN_POOL members with a value in each of P and N (spec §5.2);
- P / N mean: one member of that pool;
- Q: an unlearned model with a value as built and NF4-quantised; R: the same as built and
  relearned, and the retain model as built and relearned; robustness: Q and R; overall: the AUC
  and robustness. A model that is measured but filtered out (spec §5.5) is not "missing": a Q
  over no kept model is stated as such.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from meta_eval.perturb import NF4, ORIG, RELEARN
from meta_eval.pool_variants import pool_needs
from meta_eval.population import POOL, RETAIN, UNLEARNED, Member
from uds_core.numbers import finite_or_none

Values = Mapping[tuple[str, str], Mapping[str, float | None]]
SETTINGS = (ORIG, NF4, RELEARN)


def coverage(members: Sequence[Member], values: Values, jobs: Mapping[str, Sequence[str]]) -> dict:
    """Counts of what is measured against what the protocol plans (valid files only)."""
    have = set(values)
    pool = {lab: [m.name for m in members if m.kind == POOL and m.pool == lab] for lab in ("P", "N")}
    unlearned = [m.name for m in members if m.kind == UNLEARNED]
    retain = next((m.name for m in members if m.kind == RETAIN), None)
    complete = [n for n in unlearned if all((s, n) in have for s in SETTINGS)]
    return {
        "units": len(have & {tuple(j.split("/", 1)) for j in jobs}), "units_total": len(jobs),
        "pool": {lab: {"measured": sum((ORIG, n) in have for n in names), "total": len(names)}
                 for lab, names in pool.items()},
        "pool_measured": sum((ORIG, n) in have for names in pool.values() for n in names),
        "pool_total": sum(len(names) for names in pool.values()),
        "unlearned": {s: {"measured": sum((s, n) in have for n in unlearned), "total": len(unlearned)}
                      for s in SETTINGS},
        "unlearned_all_settings": len(complete),
        "references": {f"{s}/{m.name}": (s, m.name) in have for m in members if m.kind not in (POOL, UNLEARNED)
                       for s in SETTINGS if f"{s}/{m.name}" in jobs},
        "retain_relearned": retain is not None and (RELEARN, retain) in have,
        "complete": len(have & {tuple(j.split("/", 1)) for j in jobs}) == len(jobs)}


def _present(values: Values, setting: str, name: str | None, key: str) -> bool:
    return name is not None and finite_or_none(values.get((setting, name), {}).get(key)) is not None


def _join(*parts: str | None) -> str | None:
    """"needs a and b" from several "needs ..." sentences (None when none is given)."""
    bodies = [p.removeprefix("needs ") for p in parts if p]
    return f"needs {'; '.join(dict.fromkeys(bodies))}" if bodies else None


def robustness_needs(key: str, members: Sequence[Member], values: Values, n_q: int, n_r: int) -> dict:
    """What Q, R and robustness of one key still need (None: defined); see the module docstring.
    `n_q`, `n_r`: the kept models that entered Q and R."""
    unlearned = [m.name for m in members if m.kind == UNLEARNED]
    retain = next((m.name for m in members if m.kind == RETAIN), None)
    pairs = {s: sum(_present(values, ORIG, n, key) and _present(values, s, n, key) for n in unlearned)
             for s in (NF4, RELEARN)}
    q_needs = None if pairs[NF4] else "needs 1 more unlearned model measured as built and NF4"
    r_needs = _join(None if _present(values, ORIG, retain, key) and _present(values, RELEARN, retain, key)
                    else "needs retain measured as built and relearned",
                    None if pairs[RELEARN] else "needs 1 more unlearned model measured as built and relearned")
    q = None if n_q else q_needs or f"none kept by the filters (of {pairs[NF4]} measured)"
    r = None if n_r else r_needs or f"none kept by the filters (of {pairs[RELEARN]} measured)"
    rob = None if q is None and r is None else _join(q_needs, r_needs) or "no kept model"
    return {"q": q, "r": r, "robustness": rob}


def needs(doc: dict, members: Sequence[Member], values: Values, keys: Sequence[str]) -> dict[str, dict]:
    """Per key: {"faithfulness", "p_mean", "n_mean", "q", "r", "robustness", "overall"} -> None
    (the statistic is defined) or what it needs, for the meta_eval document `doc` of `values`."""
    out = {}
    for key in keys:
        f, rob = doc["faithfulness"][key], doc["robustness"][key]
        entry = {"faithfulness": pool_needs(f["n_p"], f["n_n"]),
                 "p_mean": None if f["n_p"] else "needs 1 more P", "n_mean": None if f["n_n"] else "needs 1 more N",
                 **robustness_needs(key, members, values, rob["n_quantization"], rob["n_relearning"])}
        entry["overall"] = None if doc["overall"].get(key) is not None else (
            _join(entry["faithfulness"], entry["robustness"] if (entry["robustness"] or "").startswith("needs")
                  else None) or "no robustness (no kept model)")
        out[key] = entry
    return out
