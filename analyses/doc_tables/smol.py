"""docs/smol.md's and the README's tables of the `smol` world, from `benchmarks/smol_results.py`'s files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analyses.doc_tables.markdown import table

LAYER_STEP = 3   # every third layer of the 30, and the last


def _kind_order(kind: str) -> int:
    return ["base", "full", "retain", "unlearned", "pool"].index(kind)


def build_table(path: Path) -> str:
    """build.json: one row per model, in zoo order (kind, parent, training, seconds)."""
    rows = []
    for m in sorted(json.loads(path.read_text())["models"], key=lambda m: _kind_order(m["kind"])):
        t = m["train"]
        how = "not trained (pretrained)" if m["method"] == "pretrained" else (
            f"{m['method']}, lr {t['lr']:g}, {t['epochs']} ep, batch {t['batch_size']}, seed {t['seed']}")
        rows.append([f"`{m['name']}`", m["kind"], m["parent"] or "", how, f"{m['train_seconds']:.0f}"])
    return table(["model", "kind", "from", "training", "seconds"], rows)


def _zoo_order(name: str) -> tuple[int, str]:
    """full, retain, the unlearned models, then the pool members (pos_*, neg_*), each by name."""
    rank = {"full": 0, "retain": 1}.get(name, 3 if name.startswith(("pos_", "neg_")) else 2)
    return rank, name


def _scores(folder: Path) -> dict[str, tuple[dict, list[dict]]]:
    out = {}
    for d in sorted((p for p in folder.iterdir() if (p / "summary.json").is_file()), key=lambda p: _zoo_order(p.name)):
        rows = [json.loads(line) for line in (d / "examples.jsonl").read_text().splitlines() if line.strip()]
        out[d.name] = (json.loads((d / "summary.json").read_text()), rows)
    return out


def _ci(summary: dict) -> str:
    lo, hi = summary["ci95"] or (float("nan"), float("nan"))
    return f"[{lo:.3f}, {hi:.3f}]"


def uds_table(folder: Path) -> str:
    """score/<model>/: UDS with its 95 % CI and how many examples were scored, every model."""
    rows = []
    for name, (s, _) in _scores(folder).items():
        rows.append([f"`{name}`", f"{s['uds']:.3f}", _ci(s), f"{s['n_scored']} / {s['n_examples']}"])
    return table(["model", "UDS", "95 % CI", "scored / examples"], rows)


def layers_table(folder: Path) -> str:
    """Per layer (every third, and the last): mean Δ_S1 over the scored examples, and how many have
    the layer among their KE layers. S1 is the same in every run (full, retain, data); read from full's."""
    _, rows = _scores(folder)["full"]
    rows = [r for r in rows if r["skipped_reason"] is None]   # the scored examples: at least one KE layer
    d1 = np.array([r["s1_delta"] for r in rows], dtype=float)
    n_layers = d1.shape[1]
    shown = sorted(set(range(0, n_layers, LAYER_STEP)) | {n_layers - 1})
    ke = [sum(layer in r["ke_layers"] for r in rows) for layer in range(n_layers)]
    return table(["layer"] + [str(l) for l in shown],
                 [["mean Δ_S1 (nats)"] + [f"{d1[:, l].mean():.3f}" for l in shown],
                  [f"KE examples (of {len(rows)})"] + [str(ke[l]) for l in shown]])


def _metric(doc: dict | None, key: str) -> str:
    v = None if doc is None else doc["metrics"].get(key)
    return "" if v is None else f"{v:.3f}"


def results_table(folder: Path) -> str:
    """metrics/<model>.json with score/<model>/: per model (full, retain, then the unlearned ones;
    not the pools) UDS [CI], ES, EM, Truth Ratio, model utility, fluency, forget ROUGE-L recall;
    a blank cell: not measured (yet)."""
    scores = _scores(folder / "score")
    metrics = {p.stem: json.loads(p.read_text()) for p in sorted((folder / "metrics").glob("*.json"))}
    names = sorted({n for n in set(scores) | set(metrics) if _zoo_order(n)[0] < 3}, key=_zoo_order)
    rows = []
    for n in names:
        s = scores.get(n, ({"uds": None, "ci95": None}, []))[0]
        uds = "" if s["uds"] is None else f"{s['uds']:.3f} {_ci(s)}"
        rows.append([f"`{n}`", uds] + [_metric(metrics.get(n), k) for k in
                                         ("es", "em", "truth_ratio", "model_utility", "fluency", "rouge")])
    return table(["model", "UDS [95 % CI]", "ES", "EM", "Truth Ratio", "model utility", "fluency", "ROUGE-L"],
                 rows)
