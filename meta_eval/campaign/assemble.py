"""The meta-evaluation document of a campaign folder, from its valid files alone (no model).

`assemble_campaign` runs `assemble.meta_evaluate` (faithfulness, robustness, filters, overall) on
the members that have at least one valid measurement, and adds a `campaign` section: coverage
counts, what each statistic still needs (`campaign.status`), the files left out and why, the
anchor builds the measurements used (with the spread of UDS under rebuilt anchors), the per-variant
breakdown and the knowledge check of the pool members (`pool_variants`), the compute the files
record, and every input file's digest; plus `versus_published`: Spearman's rho of our rankings against spec §5.7's.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from scipy.stats import rankdata

from meta_eval.assemble import meta_evaluate
from meta_eval.campaign.files import digest_of
from meta_eval.campaign.read import CampaignData, campaign_zoo
from meta_eval.campaign.status import coverage, needs
from meta_eval.pool_variants import confused_pairs, knowledge_by_variant, knowledge_rows, variant_aucs, variant_means
from meta_eval.faithfulness import MIN_POOL
from meta_eval.published import PUBLISHED, SOURCE
from meta_eval.robustness import FormName
from metrics.ranking import spearman
from uds_core.numbers import finite_or_none

MIN_RANKED = 3           # metrics ranked in both rankings below which rho is not stated
# our field of the document -> the published field it is ranked against
RANKINGS = {"faithfulness": "faithfulness", "overall": "overall"}


def assemble_campaign(data: CampaignData, keys: Sequence[str], *, form: FormName = "symmetric",
                      use_filters: bool = True) -> tuple[dict, list[dict]]:
    """(meta_eval document, benchmark rows) of the campaign's valid measurements."""
    zoo = campaign_zoo(data, data.measured_names)
    doc = meta_evaluate(zoo.members, data.values, keys, form=form, use_filters=use_filters)
    rows = doc.pop("benchmark")
    state = needs(doc, zoo.members, data.values, keys)
    doc["campaign"] = {
        "folder": str(data.root), "zoo": data.protocol["zoo"],
        "coverage": coverage(data.members, data.values, data.protocol["jobs"]),
        "needs": state,
        "left_out": [{"path": x.path, "why": x.why} for x in data.left_out],
        "anchors": anchor_use(data), "spread": spread_rows(data),
        "variants": {k: variant_section(zoo.members, data.values, k) for k in keys},
        "knowledge": knowledge_section(data), "compute": compute_section(data), "min_pool": MIN_POOL,
        "inputs": dict(sorted(data.inputs.items()))}
    doc["versus_published"] = versus_published(doc, keys, state)
    # the published rows themselves, so that a page renders from this document alone
    doc["versus_published"]["source"] = SOURCE
    doc["versus_published"]["published"] = {k: dict(v) for k, v in PUBLISHED.items()}
    return doc, rows


def variant_section(members, values, key: str) -> dict:
    aucs = variant_aucs(members, values, key)
    return {"means": variant_means(members, values, key), "aucs": aucs, "confused": confused_pairs(aucs)}


def knowledge_section(data: CampaignData) -> dict:
    rows = knowledge_rows(data.members, data.builds, data.measured_names)
    return {"members": rows, "by_variant": knowledge_by_variant(rows, data.members)}


def compute_section(data: CampaignData) -> dict:
    """What the valid files took, by their own timings: training seconds of the builds and the
    metric seconds of the measurements (each per model kind), and the machines that ran them."""
    kinds = {m.name: m.kind for m in data.members}
    builds = [(kinds.get(name, "?"), doc.get("train_seconds")) for name, doc in data.builds.items()]
    runs = [(f"{kinds.get(name, '?')}:{setting}", sum((doc.get("seconds") or {}).values()))
            for (setting, name), doc in data.measurements.items()]

    def tally(pairs: list[tuple[str, float | None]]) -> dict:
        timed = [(k, float(v)) for k, v in pairs if finite_or_none(v) is not None]
        by = {k: [v for kk, v in timed if kk == k] for k in sorted({k for k, _ in timed})}
        return {"n": len(timed), "seconds": round(sum(v for _, v in timed), 1),
                "by_kind": {k: {"n": len(vs), "seconds": round(sum(vs), 1)} for k, vs in by.items()}}

    machines = [doc.get("machine") or {} for doc in [*data.builds.values(), *data.measurements.values()]]
    return {"builds": tally(builds), "measurements": tally(runs),
            "cpus": sorted({m.get("cpu") for m in machines if m.get("cpu")}),
            "threads": sorted({m.get("threads") for m in machines if m.get("threads") is not None})}


def _build_id(fps: dict | None) -> str | None:
    """The short id of an anchor build (as anchors/ names it) from its fingerprints."""
    return digest_of(fps)[:16] if fps else None


def anchor_use(data: CampaignData) -> list[dict]:
    """Each anchor build (full and retain fingerprints) the assembled measurements were made with:
    how many measurements per setting, and whether anchors/ records that build."""
    out: dict[str, dict] = {}
    for (setting, _), doc in sorted(data.measurements.items()):
        fps = doc.get("anchors") or {}
        key = digest_of(fps)[:16]
        entry = out.setdefault(key, {"id": key, "full": fps.get("full"), "retain": fps.get("retain"),
                                     "measurements": 0, "by_setting": {}, "recorded": key in data.anchors})
        entry["measurements"] += 1
        entry["by_setting"][setting] = entry["by_setting"].get(setting, 0) + 1
    return sorted(out.values(), key=lambda e: -e["measurements"])


def spread_rows(data: CampaignData) -> list[dict]:
    """The spread files: per rebuilt anchor build, UDS of measured models as committed (with the
    anchor build that measured it, `committed_with`) and re-scored with that build, and the largest
    |difference|."""
    out = []
    for key, doc in sorted(data.spread.items()):
        fields = ("model", "uds_committed", "uds_here", "abs_diff")
        rows = [{k: r.get(k) for k in fields} | {"committed_with": _build_id(r.get("committed_anchors"))}
                for r in doc.get("models", [])]
        diffs = [r["abs_diff"] for r in rows if r["abs_diff"] is not None]
        out.append({"anchor_build": key, "models": rows, "max_abs_diff": max(diffs, default=None)})
    return out


def _ours(doc: dict, field: str) -> dict[str, float | None]:
    if field == "faithfulness":
        return {k: v["auc_roc"] for k, v in doc["faithfulness"].items()}
    return dict(doc[field])


def ranking_agreement(ours: Mapping[str, float | None], published: Mapping[str, float]) -> dict:
    """Spearman's rho (and its two-sided p) of two rankings over the keys both score, with each
    key's rank in both (1 = highest; ties share their mean rank). rho is None below MIN_RANKED keys
    or when a ranking is constant."""
    keys = [k for k in ours if finite_or_none(ours[k]) is not None and k in published]
    rho, p = spearman([ours[k] for k in keys], [published[k] for k in keys]) if len(keys) >= MIN_RANKED \
        else (None, None)
    rank = lambda vals: rankdata(-np.asarray(vals, dtype=float)).tolist() if vals else []  # noqa: E731
    ranks = dict(zip(keys, zip(rank([ours[k] for k in keys]), rank([published[k] for k in keys]))))
    return {"rho": rho, "p": p, "n": len(keys), "ranks": {k: list(v) for k, v in ranks.items()}}


def versus_published(doc: dict, keys: Sequence[str], state: Mapping[str, Mapping[str, str | None]]) -> dict:
    """Our faithfulness and overall rankings against spec §5.7's, with what a missing rho needs."""
    out = {}
    for field, pub_field in RANKINGS.items():
        ours = {k: v for k, v in _ours(doc, field).items() if k in keys}
        agreement = ranking_agreement(ours, {k: v[pub_field] for k, v in PUBLISHED.items()})
        lacking = next((state[k][field] for k in keys if state[k][field]), None)
        if agreement["rho"] is None:
            agreement["needs"] = (f"needs at least {MIN_RANKED} metrics with a value ({agreement['n']} now"
                                  + (f"; {lacking}" if lacking else "") + ")") if agreement["n"] < MIN_RANKED \
                else "undefined: one of the two rankings is constant (all values tied)"
        else:
            agreement["needs"] = None
        out[field] = agreement
    return out
