"""The meta-evaluation page's data: ours per metric beside the published table (spec §5.7), the rank
of each metric in both and Spearman's rho between the two rankings, what the run lacks, and the
models the filters dropped.

A robustness (Q, R and the overall built on them) that rests on fewer than MIN_KEPT kept unlearned
models is marked thin and left out of the ranking by overall and by robustness (and of Spearman on
them): one model's Q and R say little about a metric. Each run is named by what it is (its folder,
filters on or off, the models it kept), and a run of the same zoo with the filters the other way is
its pair, shown beside it."""

from __future__ import annotations

import math
from typing import Mapping

from meta_eval.published import PUBLISHED, SOURCE
from meta_eval.names import name_of
from uds.site.model import MetaEval
from uds.site.table import number

REFERENCES = ("full", "retain")
MIN_SPEARMAN = 3      # rho of two or fewer ranked metrics is +-1 whatever they are
MIN_KEPT = 5          # fewer kept models: the robustness is shown, marked thin, and not ranked
# the rankings compared with the published one: published field -> field of a key entry
COMPARED = {"overall": "overall", "faithfulness": "auc", "robustness": "robustness"}


def average_ranks(values: Mapping[str, float]) -> dict[str, float]:
    """1 = highest; tied values share the mean of their ranks (Spearman's convention)."""
    order = sorted(values, key=lambda k: -values[k])
    out: dict[str, float] = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            out[k] = (i + j) / 2 + 1
        i = j + 1
    return out


def places(values: Mapping[str, float | None]) -> dict[str, int]:
    """The place of each finite value, 1 = highest; ties share the best place (1, 2, 2, 4)."""
    finite = {k: v for k, v in values.items() if number(v) is not None}
    return {k: 1 + sum(x > v for x in finite.values()) for k, v in finite.items()}


def spearman(ours: Mapping[str, float | None], published: Mapping[str, float | None]) -> dict:
    """Spearman's rho between two rankings over the keys both rank: {"rho" (None when fewer than
    MIN_SPEARMAN keys or a ranking is constant), "n", "keys"}."""
    keys = [k for k in ours if number(ours.get(k)) is not None and number(published.get(k)) is not None]
    out = {"rho": None, "n": len(keys), "keys": keys}
    if len(keys) < MIN_SPEARMAN:
        return out
    a, b = average_ranks({k: ours[k] for k in keys}), average_ranks({k: published[k] for k in keys})
    ma, mb = sum(a.values()) / len(keys), sum(b.values()) / len(keys)
    cov = sum((a[k] - ma) * (b[k] - mb) for k in keys)
    var = math.sqrt(sum((a[k] - ma) ** 2 for k in keys) * sum((b[k] - mb) ** 2 for k in keys))
    out["rho"] = cov / var if var > 0 else None
    return out


def dropped_by_filters(meta: MetaEval, key: str) -> list[dict]:
    """Unlearned models of the meta-evaluation that its filters left out of key's robustness, with
    the reason spec §5.5 gives: utility_rel under 0.8, else the faithfulness-threshold rule."""
    rob = meta.doc.get("robustness", {}).get(key) or {}
    kept = set(rob.get("kept") or [])
    if "kept" not in rob:
        return []
    out = []
    for r in meta.rows:
        if r.get("method") in REFERENCES or r["model"] in kept:
            continue
        u = number(r.get("utility_rel"))
        if u is not None and u < 0.8:
            reason = f"utility_rel {u:.3f} < 0.8"
        elif u is None:
            reason = "utility_rel unknown"
        else:
            reason = f"knowledge-present by the faithfulness threshold of {rob.get('filter_source', key)}"
        out.append({"model": r["model"], "reason": reason})
    return out


def key_entry(meta: MetaEval, key: str) -> dict:
    """Ours for one metric (with pool and kept counts) and the published row where spec §5.7 has one."""
    doc = meta.doc
    f = doc.get("faithfulness", {}).get(key) or {}
    r = (doc.get("robustness") or {}).get(key) or {}
    return {"key": key, "direction": name_of(key).direction if name_of(key) else None,
            "label": name_of(key).label if name_of(key) else key, "auc": f.get("auc_roc"), "ci": f.get("ci95"),
            "p_mean": f.get("p_mean"), "n_mean": f.get("n_mean"), "n_p": f.get("n_p"), "n_n": f.get("n_n"),
            "threshold": f.get("threshold"),
            "q": r.get("quantization"), "r": r.get("relearning"), "robustness": r.get("agg"),
            "overall": (doc.get("overall") or {}).get(key), "n_kept": r.get("n_kept"),
            "n_q": r.get("n_quantization"), "n_r": r.get("n_relearning"), "filter_source": r.get("filter_source"),
            "dropped": dropped_by_filters(meta, key), "published": PUBLISHED.get(key),
            "thin": thin(r)}


def thin(rob: dict) -> bool:
    """Whether a metric's robustness rests on fewer than MIN_KEPT kept models (a count of the models
    measured after NF4 or relearning, where recorded, counts too)."""
    if number(rob.get("agg")) is None:
        return False
    counts = [number(rob.get(k)) for k in ("n_kept", "n_quantization", "n_relearning")]
    known = [c for c in counts if c is not None]
    return bool(known) and min(known) < MIN_KEPT


def lacks(doc: dict) -> list[str]:
    """What this meta_eval.json does not hold that the page would show, each as a sentence."""
    out = []
    if not isinstance(doc.get("robustness"), dict) or not doc["robustness"]:
        out.append("no robustness (no `robustness` object): Q, R, robustness and overall are not shown")
    elif all(number((v or {}).get("agg")) is None for v in doc["robustness"].values()):
        out.append("no robustness value for any metric (no unlearned model passed the filters, or none was "
                   "measured after NF4 quantisation and relearning yet)")
    faith = doc.get("faithfulness") or {}
    if faith and all(number((v or {}).get("auc_roc")) is None for v in faith.values()):
        out.append("no faithfulness AUC for any metric (it needs at least 2 models in each of the P and N pools)")
    if not (doc.get("values") and doc.get("members")):
        out.append("no per-model values (`values`, `members`): the P/N histograms and scatters are not drawn")
    return out


def run_name(meta: MetaEval) -> str:
    """What the run is, for its tab: its folder (and file, where not meta_eval.json)."""
    src = meta.source
    return str(src.parent) if src.name == "meta_eval.json" else f"{src.parent}/{src.stem}"


def kept_range(keys: list[dict]) -> list[int] | None:
    """[fewest, most] kept models over the metrics with a robustness value."""
    n = [int(k["n_kept"]) for k in keys if number(k.get("n_kept")) is not None and
         number(k.get("robustness")) is not None]
    return [min(n), max(n)] if n else None


def meta_document(meta: MetaEval, images: dict[str, str]) -> dict:
    doc = meta.doc
    keys = [key_entry(meta, k) for k in doc.get("faithfulness", {})]
    ours = {f: {k["key"]: (None if k["thin"] and f != "faithfulness" else k[field]) for k in keys}
            for f, field in COMPARED.items()}
    published = {f: {k: v[f] for k, v in PUBLISHED.items()} for f in COMPARED}
    ranks = {}
    for f in COMPARED:
        ranks[f] = places(ours[f])
        ranks[f + "_pub"] = places({k: published[f].get(k) for k in ours[f]})
    for k in keys:
        k["rank"] = {name: r.get(k["key"]) for name, r in ranks.items()}
    settings = doc.get("settings") or {}
    members = doc.get("members") if isinstance(doc.get("members"), dict) else {}
    kinds: dict[str, int] = {}
    for m in members.values():
        label = m.get("kind") if m.get("kind") != "pool" else f"pool {m.get('pool')}"
        kinds[str(label)] = kinds.get(str(label), 0) + 1
    filters = settings.get("filters")
    return {"source": str(meta.source), "name": run_name(meta),
            "filters": filters if isinstance(filters, bool) else None,
            "kept_range": kept_range(keys), "min_kept": MIN_KEPT,
            "n_thin": sum(k["thin"] for k in keys), "keys": keys, "images": images,
            "settings": {k: settings.get(k) for k in ("zoo", "models", "robustness_form", "filters", "parity",
                                                      "left_out", "wall_seconds") if k in settings},
            "members_by_kind": kinds, "lacks": lacks(doc), "published_source": SOURCE,
            "spearman": {f: spearman(ours[f], published[f]) for f in COMPARED},
            "values": doc.get("values"), "members": doc.get("members"), "pair": None}


def pair_runs(docs: list[dict]) -> list[dict]:
    """Order the runs unfiltered first (stable otherwise) and link each run to the run of the same
    zoo and members with the filters the other way (`pair`: its index, and its values per metric)."""
    docs = sorted(docs, key=lambda d: d["filters"] is not False)
    for i, d in enumerate(docs):
        for j, o in enumerate(docs):
            if (j != i and d["filters"] is not None and o["filters"] is not None and o["filters"] != d["filters"]
                    and (o["settings"].get("zoo"), o["members_by_kind"]) ==
                        (d["settings"].get("zoo"), d["members_by_kind"])):
                d["pair"] = {"index": j, "filters": o["filters"], "name": o["name"],
                             "keys": {k["key"]: {f: k[f] for f in ("robustness", "overall", "n_kept", "thin")}
                                      | {"rank": k["rank"]["overall"]} for k in o["keys"]}}
                break
    return docs
