"""From `Results` to the JSON the pages read: one index (leaderboard, meta-evaluation, probe,
audit; small) and one document per scored model (its examples; loaded by the page on demand)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from uds.site.model import MetaEval, Results, ScoreRun

REFERENCES = ("full", "retain")
# Leaderboard columns shown first, in this order, when present; the rest follow as found.
FIRST = ("uds", "overall", "mem", "privacy", "utility", "utility_rel", "model_utility")
NOT_COLUMNS = {"model", "method", "name", "epoch_group"}
SUMMARY_KEYS = ("uds", "ci95", "n_examples", "n_scored", "n_skipped", "tau", "layers", "full", "retain", "unlearned",
                "data", "parity", "component", "dtype", "device", "skipped_reasons", "uds_version", "elapsed_s")
EXAMPLE_KEYS = ("idx", "uds", "skipped_reason", "ke_layers", "s1_delta", "s2_delta", "question", "answer", "entity",
                "entity_span", "generation", "generations", "full_score")


def clean(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become None (JSON has no NaN), keys become text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def number(value: Any) -> float | None:
    """A finite float, else None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def method_of(name: str) -> str:
    """The method of a model name: `npo_lr1e-4_...` -> npo, `tiny:small/rmu_...` -> rmu."""
    base = name.rstrip("/").split("/")[-1]
    return base.split("_")[0] if base else name


def layer_stats(examples: list[dict], n_layers: int) -> dict:
    """Per layer: mean Δ_S1 and Δ_S2 over the examples that have them, the mean clipped ratio
    Δ_S2/Δ_S1 over the examples for which the layer is KE, and the KE count (lists of n_layers)."""
    s1 = [[] for _ in range(n_layers)]
    s2 = [[] for _ in range(n_layers)]
    ratio = [[] for _ in range(n_layers)]
    ke_count = [0] * n_layers
    for e in examples:
        d1, d2 = e.get("s1_delta") or [], e.get("s2_delta") or []
        ke = set(e.get("ke_layers") or [])
        for j in range(min(n_layers, len(d1), len(d2))):
            a, b = number(d1[j]), number(d2[j])
            if a is not None:
                s1[j].append(a)
            if b is not None:
                s2[j].append(b)
            if j in ke:
                ke_count[j] += 1
                if a is not None and b is not None and a > 0:
                    ratio[j].append(min(1.0, max(0.0, b / a)))
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    return {"s1_mean": [mean(x) for x in s1], "s2_mean": [mean(x) for x in s2],
            "ratio_mean": [mean(x) for x in ratio], "ke_count": ke_count}


def n_layers_of(run: ScoreRun) -> int:
    declared = run.summary.get("layers")
    if isinstance(declared, int) and declared > 0:
        return declared
    return max((len(e.get("s1_delta") or []) for e in run.examples), default=0)


def model_document(model_id: int, run: ScoreRun) -> dict:
    """The per-model file's content: summary, per-layer statistics, examples."""
    n = n_layers_of(run)
    examples = [{k: e[k] for k in EXAMPLE_KEYS if k in e} for e in run.examples]
    return clean({"id": model_id, "name": run.name, "source": str(run.source),
                  "summary": {k: run.summary[k] for k in SUMMARY_KEYS if k in run.summary},
                  "layers": {"n": n, **layer_stats(run.examples, n)}, "examples": examples})


class Table:
    """Leaderboard rows merged by model name; the first source of a value wins (score runs,
    then metrics.json, then leaderboard rows)."""

    def __init__(self) -> None:
        self.models: list[dict] = []
        self._by_name: dict[str, dict] = {}

    def find(self, name: str) -> dict | None:
        """By exact name, else by the last path component when exactly one model has it
        (`tiny:small/npo_x` of a score run is `npo_x` of a results.json)."""
        if name in self._by_name:
            return self._by_name[name]
        tail = name.rstrip("/").split("/")[-1]
        hits = [m for m in self.models if m["name"].rstrip("/").split("/")[-1] == tail]
        return hits[0] if len(hits) == 1 else None

    def add(self, name: str, cells: dict, method: str | None = None, new: bool = False) -> dict:
        row = None if new else self.find(name)
        if row is None:
            unique = name
            k = 2
            while unique in self._by_name:
                unique, k = f"{name} ({k})", k + 1
            row = {"id": len(self.models), "name": unique, "method": None, "cells": {}, "file": None,
                   "ci": None, "sources": []}
            self.models.append(row)
            self._by_name[unique] = row
        row["method"] = row["method"] or method or method_of(name)
        for k, v in cells.items():
            if k not in NOT_COLUMNS and number(v) is not None and k not in row["cells"]:
                row["cells"][k] = number(v)
        return row


def columns(models: list[dict]) -> list[str]:
    """Numeric columns: FIRST ones present, then the others in order of first appearance."""
    seen: dict[str, None] = {}
    for m in models:
        for k in m["cells"]:
            seen.setdefault(k, None)
    return [k for k in FIRST if k in seen] + [k for k in seen if k not in FIRST]


def dropped_by_filters(meta: MetaEval, key: str) -> list[dict]:
    """Unlearned models of the meta-evaluation that its filters left out of key's robustness, with
    the reason SPEC 5.5 gives: utility_rel under 0.8, else the faithfulness-threshold rule."""
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


def meta_document(meta: MetaEval, images: dict[str, str]) -> dict:
    doc = meta.doc
    faith, rob, overall = doc.get("faithfulness", {}), doc.get("robustness", {}), doc.get("overall", {})
    keys = []
    for key, f in faith.items():
        r = rob.get(key) or {}
        keys.append({"key": key, "auc": f.get("auc_roc"), "ci": f.get("ci95"), "p_mean": f.get("p_mean"),
                     "n_mean": f.get("n_mean"), "n_p": f.get("n_p"), "n_n": f.get("n_n"),
                     "threshold": f.get("threshold"), "q": r.get("quantization"), "r": r.get("relearning"),
                     "robustness": r.get("agg"), "overall": overall.get(key), "n_kept": r.get("n_kept"),
                     "filter_source": r.get("filter_source"), "dropped": dropped_by_filters(meta, key)})
    settings = doc.get("settings") or {}
    return clean({"source": str(meta.source), "keys": keys, "images": images,
                  "settings": {k: settings.get(k) for k in ("zoo", "models", "robustness_form", "filters", "parity",
                                                            "left_out", "wall_seconds") if k in settings},
                  "values": doc.get("values"), "members": doc.get("members")})


def probe_document(doc: dict, source: Path, image: str | None) -> dict:
    models = {}
    for spec, block in (doc.get("models") or {}).items():
        if isinstance(block, dict):
            models[spec] = {"levels": block.get("levels") or {}, "masked_by_refusal": block.get("masked_by_refusal")}
    settings = doc.get("settings") or {}
    return clean({"source": str(source), "models": models, "image": image,
                  "settings": {k: settings.get(k) for k in ("corpus", "levels", "samples", "temperature", "min_lcs",
                                                            "n_passages") if k in settings}})


def audit_document(doc: dict, source: Path, image: str | None) -> dict:
    cells = doc.get("cells") if isinstance(doc.get("cells"), list) else []
    return clean({"source": str(source), "model": doc.get("model"), "db": doc.get("db"),
                  "variants": doc.get("variants") or {}, "cells": cells, "image": image,
                  "settings": doc.get("settings") or {}})


def build_payload(results: Results, images: dict[Path, str]) -> tuple[dict, dict[int, dict]]:
    """(index document, model id -> per-model document). `images` maps a source PNG to its path
    inside the site."""
    table = Table()
    per_model: dict[int, dict] = {}
    for run in results.scores:
        s = run.summary
        row = table.add(run.name, {"uds": s.get("uds"), "n_scored": s.get("n_scored")}, new=True)
        ci = s.get("ci95")
        row["ci"] = [number(ci[0]), number(ci[1])] if isinstance(ci, list) and len(ci) == 2 else None
        row["sources"].append(str(run.source))
        if run.examples or s:
            row["file"] = f"data/m{row['id']}.js"
            per_model[row["id"]] = model_document(row["id"], run)
    for m in results.metrics:
        row = table.add(m.name, m.metrics)
        row["sources"].append(str(m.source))
    for r in results.rows:
        row = table.add(str(r["model"]), r, r.get("method") if isinstance(r.get("method"), str) else None)
    for m in table.models:
        per = per_model.get(m["id"])
        if per is not None:
            per["name"] = m["name"]
    index = {
        "columns": columns(table.models),
        "models": table.models,
        "meta": [meta_document(m, {n: images[p] for n, p in m.images.items() if p in images}) for m in results.meta],
        "probes": [probe_document(p.doc, p.source, images.get(p.image) if p.image else None) for p in results.probes],
        "audits": [audit_document(a.doc, a.source, images.get(a.image) if a.image else None) for a in results.audits],
        "skipped": [[str(p), why] for p, why in results.skipped],
    }
    return clean(index), per_model
