"""The attack campaign's result, from its committed files alone (and the meta-evaluation campaign's).

Per model and attack, the recovered knowledge above the retain model's under the same attack
(`recovered`); the strongest attack of a model is the one that recovers most above retain (the
plain question included: an attacker can always just ask). Then, per metric:
- (i) Spearman's rho between the metric's value as built (knowledge view: higher = more knowledge)
  and the knowledge the strongest attack recovers, over the unlearned models, with a percentile
  bootstrap interval over models (`spearman_ci`);
- (ii) faithfulness AUC of the suppressed pool against the N controls (and against the meta-
  evaluation campaign's N pool, measured on other builds with other anchors: said beside it);
- (iii) (i) with each attack alone.
The label of the suppressed pool is checked without any of the metrics: plain answers at N level,
relearning recovering the held-out half far above the N controls (`label_check`). The rebuilt
models' values beside the meta-evaluation campaign's committed ones: per key the spread (`spread`).
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import rankdata, spearmanr

from meta_eval.campaign.attack import ATTACK
from meta_eval.campaign.read import CampaignData
from meta_eval.faithfulness import CI_LEVEL, N_BOOT, faithfulness
from meta_eval.perturb import ORIG
from meta_eval.population import POOL, SUPPRESSED, UNLEARNED
from metrics.registry import REGISTRY
from metrics.spec import ERASURE

PLAIN, RELEARN_ATTACK = "plain", "relearn"


def recovered(data: CampaignData) -> dict[str, dict[str, float | None]]:
    """model -> attack -> share answered with the entity minus the retain model's under the same
    attack (None where either did not run)."""
    base = data.values.get((ATTACK, "retain"), {})
    out = {}
    for (setting, model), values in data.values.items():
        if setting != ATTACK:
            continue
        out[model] = {a: None if v is None or base.get(a) is None else v - base[a] for a, v in values.items()}
    return out


def strongest(above: Mapping[str, float | None]) -> tuple[str, float] | None:
    """(attack, share above retain) of the attack that recovers most; None when none ran."""
    ran = [(v, a) for a, v in above.items() if v is not None]
    if not ran:
        return None
    v, a = max(ran, key=lambda t: (t[0], t[1]))
    return a, v


def spearman_ci(x: Sequence[float], y: Sequence[float], n_boot: int = N_BOOT, seed: int = 0,
                level: float = CI_LEVEL) -> tuple[float | None, tuple[float, float] | None, int]:
    """(rho, percentile bootstrap interval over (x, y) pairs resampled with replacement, resamples
    with a defined rho): rho None below 3 pairs or without variation; resamples where either side is
    constant have no rho and are left out of the interval."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None, 0
    rho = float(spearmanr(x, y).statistic)
    idx = np.random.default_rng(seed).integers(0, len(x), size=(n_boot, len(x)))
    xs, ys = x[idx], y[idx]
    varied = (np.ptp(xs, axis=1) > 0) & (np.ptp(ys, axis=1) > 0)
    rhos = spearman_rows(xs[varied], ys[varied])
    if not len(rhos):
        return rho, None, 0
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(rhos, [alpha, 1.0 - alpha])
    return rho, (float(lo), float(hi)), len(rhos)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair at once, (B, n) x (B, n) -> (B,): the Pearson correlation of
    the rows' average ranks (what `scipy.stats.spearmanr` computes for one pair). Rows must vary."""
    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    return (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))


def knowledge_view(key: str, value: float | None) -> float | None:
    return None if value is None else REGISTRY[key].knowledge_view(value)


def rho_table(data: CampaignData, keys: Sequence[str], target: Mapping[str, float | None]) -> dict:
    """Per key: rho between the knowledge view of the value as built and `target` (model -> share),
    over the unlearned models that have both."""
    models = [m.name for m in data.members if m.kind == UNLEARNED]
    out = {}
    for k in keys:
        pairs = [(knowledge_view(k, data.values.get((ORIG, m), {}).get(k)), target.get(m)) for m in models]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None and np.isfinite(x)]
        rho, ci, used = spearman_ci([p[0] for p in pairs], [p[1] for p in pairs])
        out[k] = {"rho": rho, "ci95": list(ci) if ci else None, "n": len(pairs), "resamples_used": used}
    return out


def auc_table(data: CampaignData, keys: Sequence[str], negatives: Mapping[str, Mapping[str, float | None]]) -> dict:
    """Per key: faithfulness AUC of the suppressed pool (as knowledge present) against `negatives`
    (model -> values), on the knowledge view, with its bootstrap interval."""
    sup = [m.name for m in data.members if m.kind == SUPPRESSED]
    out = {}
    for k in keys:
        pos = [data.values.get((ORIG, m), {}).get(k) for m in sup]
        neg = [v.get(k) for v in negatives.values()]
        out[k] = faithfulness(pos, neg, invert=REGISTRY[k].orientation == ERASURE).to_dict()
    return out


def label_check(data: CampaignData) -> dict:
    """The suppressed pool's label, with none of the metrics: per member the plain share and the
    relearning share (held-out half) of the suppressed members, their P parents and the N controls."""
    def shares(kind: str, pool: str | None) -> dict:
        names = [m.name for m in data.members if m.kind == kind and (pool is None or m.pool == pool)]
        return {m: {a: data.values.get((ATTACK, m), {}).get(a) for a in (PLAIN, RELEARN_ATTACK)} for m in names}
    groups = {"suppressed": shares(SUPPRESSED, None), "parents": shares(POOL, "P"), "controls": shares(POOL, "N")}

    def mean(group: str, attack: str) -> float | None:
        vals = [v[attack] for v in groups[group].values() if v[attack] is not None]
        return float(np.mean(vals)) if vals else None
    means = {g: {a: mean(g, a) for a in (PLAIN, RELEARN_ATTACK)} for g in groups}
    return {"members": groups, "means": means}


def spread(data: CampaignData, legacy: CampaignData | None, keys: Sequence[str]) -> dict:
    """Per model measured as built in both campaigns: whether the rebuild is the committed build
    (same fingerprint), and per key |rebuilt - committed|; per key the largest and median."""
    if legacy is None:
        return {"models": {}, "keys": {}}
    models = {}
    for (setting, model), values in data.values.items():
        old = legacy.values.get((ORIG, model)) if setting == ORIG else None
        if old is None:
            continue
        same = data.builds.get(model, {}).get("fingerprint") == legacy.builds.get(model, {}).get("fingerprint")
        diffs = {k: abs(values[k] - old[k]) for k in keys if values.get(k) is not None and old.get(k) is not None}
        models[model] = {"same_build": same, "abs_diff": diffs, "uds": [old.get("uds"), values.get("uds")]}
    per_key = {}
    for k in keys:
        d = [m["abs_diff"][k] for m in models.values() if k in m["abs_diff"]]
        per_key[k] = {"n": len(d), "max": float(max(d)) if d else None, "median": float(np.median(d)) if d else None}
    return {"models": models, "keys": per_key}


def provenance(data: CampaignData) -> dict:
    """Where the units were measured: per CPU the number of measurement files, and per anchor build
    (full and retain, built on one machine) its CPU and, where the anchors were rebuilt, how many
    measured models were scored again under them with, per key, the largest |here - committed|."""
    cpus = Counter((doc.get("machine") or {}).get("cpu") or "not recorded" for doc in data.measurements.values())
    builds = {}
    for aid, doc in sorted(data.anchors.items()):
        models = (data.spread.get(aid) or {}).get("models", [])
        largest: dict[str, float] = {}
        for m in models:
            for k, v in m.get("metrics", {}).items():
                if v.get("abs_diff") is not None:
                    largest[k] = max(largest.get(k, 0.0), float(v["abs_diff"]))
        builds[aid] = {"cpu": (doc.get("machine") or {}).get("cpu"), "rescored": len(models),
                       "largest_abs_diff": dict(sorted(largest.items()))}
    return {"cpus": dict(sorted(cpus.items())), "anchor_builds": builds}


def assemble_attacks(data: CampaignData, keys: Sequence[str], legacy: CampaignData | None = None) -> dict:
    """The whole result document (what `uds attack --from-campaign` writes as result.json)."""
    above = recovered(data)
    best = {m: strongest(v) for m, v in above.items()}
    unlearned = [m.name for m in data.members if m.kind == UNLEARNED]
    attacks = list(data.protocol["settings"][ATTACK]["attacks"])
    controls = {m.name: data.values.get((ORIG, m.name), {}) for m in data.members
                if m.kind == POOL and m.pool == "N" and (ORIG, m.name) in data.values}
    legacy_n = {} if legacy is None else {m.name: legacy.values[(ORIG, m.name)] for m in legacy.members
                                          if m.kind == POOL and m.pool == "N" and (ORIG, m.name) in legacy.values}
    jobs = data.protocol["jobs"]
    return {
        "campaign": {"root": str(data.root), "units": len(data.values), "units_total": len(jobs),
                     "inputs": dict(sorted(data.inputs.items())), "left_out": [lo.__dict__ for lo in data.left_out],
                     "legacy": None if legacy is None else {"root": str(legacy.root),
                                                            "protocol_digest": legacy.inputs.get("protocol.json")}},
        "attacks": attacks, "keys": list(keys),
        "recovered": {"retain": data.values.get((ATTACK, "retain")), "above_retain": above,
                      "strongest": {m: None if b is None else {"attack": b[0], "above_retain": b[1]}
                                    for m, b in best.items()}},
        "rho_strongest": rho_table(data, keys, {m: b[1] for m, b in best.items() if b and m in unlearned}),
        "rho_by_attack": {a: rho_table(data, keys, {m: v.get(a) for m, v in above.items()}) for a in attacks},
        "auc_suppressed_vs_controls": auc_table(data, keys, controls),
        "auc_suppressed_vs_legacy_n": auc_table(data, keys, legacy_n) if legacy_n else None,
        "label_check": label_check(data),
        "spread_vs_legacy": spread(data, legacy, keys),
        "provenance": provenance(data),
    }
