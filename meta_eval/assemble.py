"""From measured values to the meta-evaluation and benchmark documents (no model work here).

`values[(setting, model name)]` holds the measured metric values (raw orientation). The result
follows docs/design.md's `meta_eval.json` contract, with extra fields per entry (bootstrap interval,
pool sizes, filter threshold, how many models entered Q and R).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from meta_eval.benchmark import benchmark_rows, epoch_group
from meta_eval.faithfulness import Faithfulness, classified_absent, faithfulness
from meta_eval.perturb import NF4, ORIG, RELEARN
from meta_eval.robustness import FormName, Robustness, hm_pair, passes_utility, robustness
from meta_eval.population import FULL, POOL, RETAIN, UNLEARNED, Member
from meta_eval.summary import ranked_keys
from uds_core.parity import SPEC, ParityMode
from metrics.families.mia import ATTACKS
from metrics.registry import REGISTRY
from metrics.spec import ERASURE

Values = Mapping[tuple[str, str], Mapping[str, float | None]]

# spec §5.5: an s_* metric keeps the models its raw MIA metric keeps.
FILTER_SOURCE: dict[str, str] = {f"s_mia_{a}": f"mia_{a}" for a in ATTACKS}


def benchmark_records(members: Sequence[Member], values: Values, parity: ParityMode = SPEC) -> list[dict]:
    """Benchmark rows (spec §6.1) of the unlearned, full and retain models. The tiny world has one
    full model, so its utility is U_full of every epoch group; the references get no epoch group
    (as in `uds leaderboard`, an epoch-less full record stands for every group)."""
    bench = [m for m in members if m.kind in (UNLEARNED, FULL, RETAIN)]
    records = [{"model": m.name, "method": m.method, "epoch": m.epoch if m.kind == UNLEARNED else None,
                **values.get((ORIG, m.name), {})} for m in bench]
    full_rows = benchmark_rows([r for r, m in zip(records, bench) if m.kind == FULL], parity=parity)
    u_full = full_rows[0].get("utility") if full_rows else None
    groups = {epoch_group(r["epoch"]) for r in records}
    return benchmark_rows(records, {g: u_full for g in groups} if u_full is not None else None, parity)


def _knowledge(key: str, values: Values, setting: str, names: Sequence[str]) -> dict[str, float | None]:
    """Knowledge-view values (spec §5.2/5.4 inversion) of one key for the named models."""
    spec = REGISTRY[key]
    out = {}
    for n in names:
        v = values.get((setting, n), {}).get(key)
        out[n] = None if v is None else spec.knowledge_view(v)
    return out


def _faithfulness(key: str, members: Sequence[Member], values: Values) -> Faithfulness:
    raw = lambda label: [values.get((ORIG, m.name), {}).get(key) for m in members  # noqa: E731
                         if m.kind == POOL and m.pool == label]
    return faithfulness(raw("P"), raw("N"), invert=REGISTRY[key].orientation == ERASURE)


def filter_passes(key: str, unlearned: Sequence[str], utility_rel: Mapping[str, float | None], values: Values,
                  thresholds: Mapping[str, float | None]) -> tuple[list[str], list[str]]:
    """The unlearned models that pass each spec §5.5 rule on their own: (utility_rel >= 0.8, the
    faithfulness-threshold rule of the key's filter source on the un-perturbed value)."""
    source = FILTER_SOURCE.get(key, key)
    before = _knowledge(source, values, ORIG, unlearned)
    utility = [n for n in unlearned if passes_utility(utility_rel.get(n))]
    threshold = [n for n in unlearned if before[n] is not None and classified_absent(before[n], thresholds.get(source))]
    return utility, threshold


def kept_models(key: str, unlearned: Sequence[str], utility_rel: Mapping[str, float | None], values: Values,
                thresholds: Mapping[str, float | None], use_filters: bool = True) -> list[str]:
    """spec §5.5: utility_rel >= 0.8 and the faithfulness-threshold rule of the key's filter
    source (itself, or the raw MIA metric of an s_* key) on the un-perturbed value."""
    if not use_filters:
        return list(unlearned)
    return _both(filter_passes(key, unlearned, utility_rel, values, thresholds))


def _both(passes: tuple[list[str], list[str]]) -> list[str]:
    """The models that pass both rules, in the order of the first list."""
    utility, threshold = passes
    return [n for n in utility if n in threshold]


def threshold_rule(source: str, threshold: float | None) -> dict | None:
    """The faithfulness-threshold rule in the raw units of `source`: a model is classified
    knowledge-absent (kept) when its value is `op` `value` (spec §5.5; UDS: >= 1 - t)."""
    if threshold is None:
        return None
    erasure = REGISTRY[source].orientation == ERASURE
    return {"metric": source, "op": ">=" if erasure else "<=", "value": 1.0 - threshold if erasure else threshold}


def meta_evaluate(members: Sequence[Member], values: Values, keys: Sequence[str], *, form: FormName = "symmetric",
                  use_filters: bool = True, parity: ParityMode = SPEC) -> dict:
    """The meta_eval.json document: faithfulness, robustness and overall per key, the keys ranked
    as summary.md prints them (`ranking`), plus the benchmark rows that supplied utility_rel
    (aggregated under `parity`)."""
    rows = benchmark_records(members, values, parity)
    utility_rel = {r["model"]: r.get("utility_rel") for r in rows}
    unlearned = [m.name for m in members if m.kind == UNLEARNED]
    retain = next((m.name for m in members if m.kind == RETAIN), None)
    sources = list(dict.fromkeys(list(keys) + [FILTER_SOURCE[k] for k in keys if k in FILTER_SOURCE]))
    faith = {k: _faithfulness(k, members, values) for k in sources}
    thresholds = {k: f.threshold for k, f in faith.items()}
    doc = {"faithfulness": {}, "robustness": {}, "overall": {}}
    for key in keys:
        passes = filter_passes(key, unlearned, utility_rel, values, thresholds)
        kept = _both(passes) if use_filters else list(unlearned)
        ret = _knowledge(key, values, ORIG, [retain])[retain] if retain else None
        ret_after = _knowledge(key, values, RELEARN, [retain])[retain] if retain else None
        rob: Robustness = robustness(kept, _knowledge(key, values, ORIG, unlearned),
                                     _knowledge(key, values, NF4, unlearned),
                                     _knowledge(key, values, RELEARN, unlearned), ret, ret_after, form=form)
        doc["faithfulness"][key] = faith[key].to_dict()
        utility, threshold = passes
        source = FILTER_SOURCE.get(key, key)
        doc["robustness"][key] = rob.to_dict() | {
            "n_kept": len(kept), "filter_source": source, "kept": kept,
            "filters": {"measured": sum(values.get((ORIG, n), {}).get(source) is not None for n in unlearned),
                        "utility_pass": len(utility), "threshold_pass": len(threshold),
                        "threshold_rule": threshold_rule(source, thresholds.get(source))}}
        doc["overall"][key] = hm_pair(faith[key].auc_roc, rob.agg)
    # recorded so that readers of the file (doc pages) rank as summary.md does without importing this wing
    doc["ranking"] = ranked_keys(doc, keys)
    doc["benchmark"] = rows
    return doc
