"""From `Results` to the JSON the pages read: one index (leaderboard, meta-evaluation, probe,
audit; small) and one document per scored model (its examples; loaded by the page on demand).

The leaderboard's models are in their default order (uds/site/table.py); `id` is the position."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from uds_core.curves import Curve
from uds_leaderboard.rows import REFERENCES
from meta_eval.names import DIRECTIONS, label_of
from uds.site.columns import PUBLISHED_PREFIX, columns_of, groups_of
from uds.site.meta import meta_document, pair_runs
from uds.site.model import Results, ScoreRun
from uds.site.table import (POPULATIONS, PRECEDENCE, PUBLISHED_KEYS, Model, differences, merge_models,
                            number)

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


CURVE_SETTINGS = ("every", "on_epoch", "full", "retain", "data", "tau", "best", "max_steps", "num_train_epochs")
CURVE_FIELDS = ("step", "epoch", "train_loss", "eval_seconds", "best_step", "error")


def curve_document(curve: Curve) -> dict:
    """One curve: its settings, the keys it recorded (UDS first) with their orientation, each
    record's step, values and timing, and the chosen step."""
    keys = ["uds", *[k for k in curve.settings.get("metrics") or [] if k != "uds"]]
    records = [{**{k: r[k] for k in CURVE_FIELDS if k in r}, "values": {k: r.get(k) for k in keys}}
               for r in curve.records]
    return clean({"name": curve.name, "source": str(curve.path), "keys": keys, "labels": {k: label_of(k) for k in keys},
                  "orientation": curve.settings.get("orientation") or {},
                  "settings": {k: curve.settings.get(k) for k in CURVE_SETTINGS if k in curve.settings},
                  "records": records, "best_step": curve.best_step()})


def model_entry(mid: int, m: Model, row: dict, has_file: bool) -> dict:
    """One leaderboard row: cells (the benchmark row's numbers, and the published table's beside
    them as `pub_<key>`), CI of UDS, its population, the sources with what each says, the keys on
    which they differ where it shows (`differs`) and how many differ only below that (`below`)."""
    cells = {k: v for k, v in ((k, number(x)) for k, x in row.items()) if v is not None and k not in ("model",)}
    cells.update({PUBLISHED_PREFIX + k: v for k, v in m.published.items() if k in PUBLISHED_KEYS})
    sources = [{"kind": s.kind, "path": s.path, "spec": s.spec, "values": len(s.values),
                "uds": s.values.get("uds"), "layers": bool(s.run and s.run.examples)} for s in m.sources]
    flagged, below = differences(m.sources)
    return {"id": mid, "name": m.name, "specs": sorted({s.spec for s in m.sources}), "method": row.get("method"),
            "epoch": row.get("epoch"), "reference": row.get("method") in REFERENCES, "population": m.population,
            "published_only": all(s.kind == "published" for s in m.sources), "cells": cells, "ci": m.ci,
            "file": f"data/m{mid}.js" if has_file else None, "sources": sources, "differs": flagged,
            "below": {"n": len(below), "keys": sorted(below)}}


def build_payload(results: Results, images: dict[Path, str]) -> tuple[dict, dict[int, dict]]:
    """(index document, model id -> per-model document). `images` maps a source PNG to its path
    inside the site."""
    models, per_model = [], {}
    for mid, (m, row) in enumerate(merge_models(results)):
        run = next((s.run for s in m.sources if s.run is not None), None)
        if run is not None:
            per_model[mid] = model_document(mid, run)
            per_model[mid]["name"] = m.name
        models.append(model_entry(mid, m, row, run is not None))
    cols = columns_of({k for m in models for k in m["cells"]})
    index = {
        "columns": cols,
        "groups": groups_of(cols),
        "directions": DIRECTIONS,
        "models": models,
        "populations": {p: sum(m["population"] == p for m in models) for p in POPULATIONS},
        "precedence": PRECEDENCE,
        "conflicts": sum(1 for m in models if m["differs"]),
        "meta": pair_runs([meta_document(m, {n: images[p] for n, p in m.images.items() if p in images})
                           for m in results.meta]),
        "probes": [probe_document(p.doc, p.source, images.get(p.image) if p.image else None) for p in results.probes],
        "audits": [audit_document(a.doc, a.source, images.get(a.image) if a.image else None) for a in results.audits],
        "curves": [curve_document(c) for c in results.curves],
        "skipped": [[str(p), why] for p, why in results.skipped],
    }
    return clean(index), per_model
