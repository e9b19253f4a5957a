"""docs/qwen.md's tables: the `qwen` world campaign (results/qwen/campaign), beside the `smol` world.

`snapshot` reads the campaign's sealed unit files (and the smol world's committed scores) into one
document, `results/qwen/snapshot.json` (`python experiments/qwen_snapshot.py`); every table of the page
is rendered from that snapshot, so the page moves only when the snapshot is taken again, however
far the campaign has run. A unit not finished when the snapshot was taken shows as "pending".
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from uds_analyses.doc_tables.markdown import fixed, table

PENDING = "pending"
METHOD_ORDER = ("graddiff", "npo", "simnpo", "idknll")
RESULT_KEYS = ("es", "em", "truth_ratio", "model_utility", "fluency", "rouge", "prob", "mia_min_k")


# --- the snapshot --------------------------------------------------------------------------------

def _sealed(path: Path) -> dict | None:
    from uds_core.sealed import read_sealed

    doc, _ = read_sealed(path)
    return doc


def method_of(name: str) -> str:
    return name.split("_", 1)[0]


def _layer_profile(examples: list[dict]) -> dict:
    """Mean Δ_S1 per layer over the scored examples and how many have each layer as a KE layer."""
    rows = [r for r in examples if r.get("skipped_reason") is None]
    if not rows:
        return {"n": 0, "mean_s1": [], "ke": []}
    d1 = np.array([r["s1_delta"] for r in rows], dtype=float)
    return {"n": len(rows), "mean_s1": [round(float(v), 6) for v in d1.mean(axis=0)],
            "ke": [sum(layer in r["ke_layers"] for r in rows) for layer in range(d1.shape[1])],
            "first_ke": [min(r["ke_layers"]) for r in rows if r["ke_layers"]]}


def _score_entry(summary: dict, examples: list[dict], unit: dict | None = None) -> dict:
    out = {k: summary.get(k) for k in ("uds", "ci95", "n_scored", "n_examples", "n_skipped", "layers", "dtype",
                                        "elapsed_s", "skipped_reasons")}
    out["per_example"] = {str(r["idx"]): r["uds"] for r in examples}
    scored = [r["s2_delta"] for r in examples if r.get("skipped_reason") is None]
    out["mean_s2"] = [round(float(v), 6) for v in np.array(scored, dtype=float).mean(axis=0)] if scored else []
    if unit is not None:
        out |= {"seconds": unit["seconds"], "peak_rss_bytes": unit["peak_rss_bytes"]}
    return out


def _smol(folder: Path) -> dict:
    """The smol world's committed `uds score` runs (results/smol/score/<model>/)."""
    out: dict = {"scores": {}, "profile": None}
    for d in sorted(p for p in folder.iterdir() if (p / "summary.json").is_file()
                    and (p.name in ("full", "retain") or method_of(p.name) in METHOD_ORDER)):
        rows = [json.loads(line) for line in (d / "examples.jsonl").read_text().splitlines() if line.strip()]
        out["scores"][d.name] = _score_entry(json.loads((d / "summary.json").read_text()), rows)
        if d.name == "full":
            out["profile"] = _layer_profile(rows)
    return out


def snapshot(campaign: Path, smol_scores: Path, build_notes: Path | None = None) -> dict:
    """Everything the page shows, from the campaign folder's files and the smol scores.
    `build_notes`: a JSON object of model -> `attempts` and `train_seconds_total` (the fields a
    build unit records), with `why`, for a build unit committed before units recorded them."""
    notes = json.loads(build_notes.read_text()) if build_notes is not None and build_notes.is_file() else {}
    protocol = _sealed(campaign / "protocol.json") or {}
    units = {}
    for path in sorted(campaign.glob("*/*.json")):
        doc = _sealed(path)
        if doc is not None and doc.get("recipes") is not None:
            units[doc["unit"]] = doc
    wanted = protocol.get("units", [])
    snap: dict = {"zoo": protocol.get("zoo"), "protocol": {k: protocol.get(k) for k in
                                                           ("preset", "seed", "lora", "train_dtype", "settings")},
                  "units_total": len(wanted), "done": sorted(u for u in wanted if u in units),
                  "pending": [u for u in wanted if u not in units],
                  "builds": {}, "knowledge": {}, "scores": {}, "metrics": {}, "machines": {}, "read": {},
                  "float32_products": []}
    for uid, doc in units.items():
        kind, model, res = doc["kind"], doc["model"], doc["result"]
        snap["machines"][doc["machine"]["cpu"]] = doc["machine"]
        if doc["machine"].get("bf16_products") == "float32":
            snap["float32_products"].append(uid)
        if doc.get("prepared"):
            snap["read"][uid] = doc["prepared"]["models"]
        if kind == "build":
            snap["builds"][model] = {"train_seconds": res.get("train_seconds"), "seconds": doc["seconds"],
                                     "peak_rss_bytes": doc["peak_rss_bytes"], "recipe": res.get("recipe"),
                                     "adapter_bytes": res.get("adapter_bytes"), "code": doc["code"],
                                     "adapter_digest": res.get("adapter_digest")}
            timing = res if "attempts" in res else notes.get(model, {})
            snap["builds"][model] |= {k: timing[k] for k in ("attempts", "train_seconds_total", "why") if k in timing}
        elif kind == "knowledge":
            snap["knowledge"][model] = {w: {"rate": res[w]["rate"], "n": res[w]["n"]}
                                        for w in ("forget_questions", "paraphrased_questions")} | {
                "seconds": doc["seconds"], "peak_rss_bytes": doc["peak_rss_bytes"],
                "examples": [{k: a[k] for k in ("idx", "entity", "hit", "answer")}
                             for a in res["forget_questions"]["answers"][:3]]}
        elif kind == "score":
            snap["scores"][model] = _score_entry(res["summary"], res["examples"], doc)
            if model == "full":
                snap["profile"] = _layer_profile(res["examples"])
        elif kind == "metrics":
            m = res["files"].get("metrics.json", {})
            snap["metrics"][model] = {"values": m.get("metrics", {}), "seconds": doc["seconds"],
                                      "peak_rss_bytes": doc["peak_rss_bytes"],
                                      "metric_seconds": (m.get("settings") or {}).get("seconds")}
        elif kind == "exactness":
            snap["exactness"] = {k: res[k] for k in ("examples", "layers", "max_abs_uds_diff", "max_abs_delta_diff",
                                                      "seconds", "naive_over_fast")} | {
                "model": model, "peak_rss_bytes": doc["peak_rss_bytes"]}
        elif kind == "precision":
            snap["precision"] = {"model": model, "float32": _score_entry(res["summary"], res["examples"], doc)}
    snap["smol"] = _smol(smol_scores)
    return snap


# --- the tables ----------------------------------------------------------------------------------

def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _gb(b: int | None) -> str:
    return PENDING if b is None else f"{b / 1e9:.2f}"


def _order(names) -> list[str]:
    def key(n: str) -> tuple:
        return ({"base": 0, "full": 1, "retain": 2}.get(n, 3), n)
    return sorted(names, key=key)


def _models(snap: dict) -> list[str]:
    """The world's models (full, retain, the unlearned ones) in the protocol's units."""
    names = {u.split("/", 1)[1] for u in snap["done"] + snap["pending"] if u.startswith("build/")}
    return _order(names)


def status_block(path: Path) -> str:
    s = _load(path)
    pending = ", ".join(f"`{u}`" for u in s["pending"]) or "none"
    fp32 = s.get("float32_products") or []
    via = "" if not fp32 else (
        f" Units whose bfloat16 products ran through float32 kernels (a CPU without bfloat16 kernels, "
        f"[usage](usage.md#devices-and-dtypes)): {', '.join(f'`{u}`' for u in fp32)}; the others on torch's own.")
    return (f"Snapshot of `{s['zoo']}`: **{len(s['done'])} of {s['units_total']} units done**. "
            f"Pending: {pending}.{via}\n")


def _train_time(b: dict) -> str:
    """Training seconds of a build; of a stopped and resumed one, its timed attempts and the
    epochs no attempt timed (peak RSS is the last attempt's)."""
    att = b.get("attempts") or [{"resumed_from_epoch": 0, "seconds": b["train_seconds"]}]
    if len(att) == 1 and att[0]["resumed_from_epoch"] == 0:
        return f"{b['train_seconds']:.0f}"
    if b.get("train_seconds_total") is not None:
        return f"{b['train_seconds_total']:.0f} ({len(att)} attempts)"
    timed = sum(a["seconds"] for a in att if a["seconds"] is not None)
    untimed = att[0]["resumed_from_epoch"]
    return f"{timed:.0f} (epochs {untimed + 1}-{att[-1]['reached_epoch']}; epochs 1-{untimed} not timed)"


def build_block(path: Path) -> str:
    s = _load(path)
    rows = []
    for name in _models(s):
        b = s["builds"].get(name)
        if b is None:
            rows.append([f"`{name}`", PENDING, "", "", "", ""])
            continue
        t, r = b["recipe"]["train"], b["recipe"]
        how = f"{r['method']}, lr {t['lr']:g}, {t['epochs']} ep, batch {t['batch_size']}"
        rows.append([f"`{name}`", r["parent"] or "", how, _train_time(b), _gb(b["peak_rss_bytes"]),
                     f"{b['adapter_bytes'] / 1e6:.0f}" if b.get("adapter_bytes") else ""])
    notes = "".join(f"\n`{name}`: {s['builds'][name]['why']}\n" for name in _models(s)
                    if s["builds"].get(name, {}).get("why"))
    return (table(["model", "on", "training", "train seconds", "peak RSS (GB)", "adapter (MB)"], rows) + notes
            + weights_note(s))


def weights_note(snap: dict) -> str:
    """Whether the units measured the adapters their build units recorded. A unit run on another
    machine than the build reads a rebuild from the same recipe, which may differ in its last bits."""
    same, other, rebuilt = [], [], []
    for uid, models in sorted(snap.get("read", {}).items()):
        for name, m in models.items():
            built = snap["builds"].get(name, {}).get("adapter_digest")
            if m["rebuilt_seconds"] is not None:
                rebuilt.append(f"`{name}` for `{uid}` ({m['rebuilt_seconds']:.0f} s)")
            if built is not None:
                (same if m["weights"] == built else other).append(f"`{name}` in `{uid}`")
    if not (same or other or rebuilt):
        return ""
    lines = [f"\nWeights measured: {len(same)} reads of a model found the adapter its build unit recorded"
             + (f", {len(other)} another one (a rebuild that differs in its bits): {', '.join(other)}" if other
                else "") + "."]
    if rebuilt:
        lines.append(f" Rebuilt from the recipe before the unit, outside its seconds and memory: {', '.join(rebuilt)}.")
    return "".join(lines) + "\n"


def knowledge_block(path: Path) -> str:
    s = _load(path)
    rows = []
    for name in ["base"] + _models(s):
        k = s["knowledge"].get(name)
        if k is None:
            rows.append([f"`{name}`", PENDING, PENDING])
            continue
        f, p = k["forget_questions"], k["paraphrased_questions"]
        rows.append([f"`{name}`", f"{f['rate']:.3f} ({round(f['rate'] * f['n'])}/{f['n']})",
                     f"{p['rate']:.3f} ({round(p['rate'] * p['n'])}/{p['n']})"])
    return table(["model", "forget questions answered with the entity", "paraphrased questions"], rows)


def _ci(entry: dict) -> str:
    ci = entry.get("ci95")
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "n/a"


def _smol_for(snap: dict, name: str) -> dict | None:
    """The smol world's score of the same model (same name, or the same method)."""
    smol = snap["smol"]["scores"]
    if name in smol:
        return smol[name]
    same = [v for k, v in smol.items() if method_of(k) == method_of(name) and k not in ("full", "retain")]
    return same[0] if len(same) == 1 else None


def uds_block(path: Path) -> str:
    s = _load(path)
    rows = []
    for name in _models(s):
        q, sm = s["scores"].get(name), _smol_for(s, name)
        smol = f"{sm['uds']:.3f} {_ci(sm)}" if sm else ""
        if q is None:
            rows.append([f"`{name}`", PENDING, "", "", smol])
            continue
        rows.append([f"`{name}`", f"{q['uds']:.3f}", _ci(q), f"{q['n_scored']} / {q['n_examples']}", smol])
    return table(["model", "UDS (Qwen, 28 layers)", "95 % CI", "scored / examples",
                  "SmolLM2 (smol world) UDS [95 % CI]"],
                 rows)


def order_block(path: Path) -> str:
    """The four methods ranked by UDS on each model (most erased first)."""
    s = _load(path)
    q = {method_of(n): v["uds"] for n, v in s["scores"].items() if method_of(n) in METHOD_ORDER}
    sm = {method_of(n): v["uds"] for n, v in s["smol"]["scores"].items() if method_of(n) in METHOD_ORDER}
    if set(q) != set(METHOD_ORDER):
        return f"Method order: {PENDING} (scored on Qwen so far: {', '.join(sorted(q)) or 'none'}).\n"
    rank = lambda d: " > ".join(f"{m} {d[m]:.3f}" for m in sorted(d, key=lambda m: -d[m]))  # noqa: E731
    same = sorted(q, key=lambda m: -q[m]) == sorted(sm, key=lambda m: -sm[m])
    return (f"- Qwen2.5-Coder-1.5B (LoRA): {rank(q)}\n- SmolLM2-135M (full fine-tuning): {rank(sm)}\n"
            f"- same order: **{'yes' if same else 'no'}**\n")


def layers_block(path: Path) -> str:
    """Mean Δ_S1 and KE counts at the same relative depths of both models (tenths of the depth)."""
    s = _load(path)
    q, sm = s.get("profile"), s["smol"]["profile"]
    if not q or not q["n"]:
        return f"Per-layer picture: {PENDING} (needs `score/full`).\n"
    rows = []
    for name, p in (("Qwen2.5-Coder-1.5B", q), ("SmolLM2-135M", sm)):
        n_layers = len(p["mean_s1"])
        shown = sorted({round(f * (n_layers - 1)) for f in np.linspace(0, 1, 11)})
        rows.append([f"{name}: layer"] + [str(l) for l in shown])
        rows.append([f"{name}: mean Δ_S1 (nats)"] + [f"{p['mean_s1'][l]:.3f}" for l in shown])
        rows.append([f"{name}: KE examples (of {p['n']})"] + [str(p["ke"][l]) for l in shown])
    head = ["relative depth"] + [f"{f:.1f}" for f in np.linspace(0, 1, 11)]
    return table(head, rows)


def first_ke_block(path: Path) -> str:
    s = _load(path)
    lines = []
    for name, p in (("Qwen2.5-Coder-1.5B", s.get("profile")), ("SmolLM2-135M", s["smol"]["profile"])):
        if not p or not p.get("first_ke"):
            lines.append(f"- {name}: {PENDING}")
            continue
        n_layers, first = len(p["mean_s1"]), np.array(p["first_ke"], dtype=float)
        every = [l for l in range(n_layers) if all(p["ke"][k] == p["n"] for k in range(l, n_layers))]
        lines.append(f"- {name} ({n_layers} layers): first KE layer of an example, median {np.median(first):.0f} "
                     f"(relative depth {np.median(first) / (n_layers - 1):.2f}), quartiles "
                     f"{np.percentile(first, 25):.0f}-{np.percentile(first, 75):.0f}, range {first.min():.0f}-"
                     f"{first.max():.0f}; every scored example is KE "
                     + (f"from layer {every[0]} up (relative depth {every[0] / (n_layers - 1):.2f})" if every
                        else "at no layer"))
    return "\n".join(lines) + "\n"


def exactness_block(path: Path) -> str:
    s = _load(path)
    e, p = s.get("exactness"), s.get("precision")
    rows = []
    if e is None:
        rows.append(["fast engine vs straightforward per-layer path (float32)", PENDING, PENDING, PENDING])
    else:
        rows.append([f"fast engine vs straightforward per-layer path (float32, `{e['model']}`, first {e['examples']} "
                     "examples)", f"{e['max_abs_uds_diff']:.2e}", f"{e['max_abs_delta_diff']:.2e}",
                     f"naive / fast = {e['naive_over_fast']:.1f} (fast {min(e['seconds']['fast']):.0f} s, naive "
                     f"{min(e['seconds']['naive']):.0f} s)"])
    b16 = s["scores"].get(p["model"]) if p else None
    if p is None or b16 is None:
        rows.append(["UDS in bfloat16 vs float32 (every example)", PENDING, "", PENDING])
    else:
        f32 = p["float32"]
        diffs = [abs(b16["per_example"][k] - v) for k, v in f32["per_example"].items()
                 if v is not None and b16["per_example"].get(k) is not None]
        rows.append([f"UDS in bfloat16 vs float32 (`{p['model']}`, {len(diffs)} examples)",
                     f"model UDS {b16['uds']:.4f} vs {f32['uds']:.4f}: {abs(b16['uds'] - f32['uds']):.2e}; largest "
                     f"per-example {max(diffs):.2e}", "",
                     f"float32 run {f32['seconds']:.0f} s at {_gb(f32['peak_rss_bytes'])} GB, bfloat16 run "
                     f"{b16['seconds']:.0f} s"])
    return table(["comparison", "max abs UDS difference", "max abs Δ difference (nats)", "cost"], rows)


def cost_block(path: Path) -> str:
    s = _load(path)
    rows = []
    for name in _models(s):
        q = s["scores"].get(name)
        rows.append([f"`uds score` {name}", PENDING if q is None else f"{q['seconds']:.0f}",
                     PENDING if q is None else _gb(q["peak_rss_bytes"])])
    for name in _order(s["metrics"]):
        m = s["metrics"][name]
        rows.append([f"`uds metrics --metrics all` {name}", f"{m['seconds']:.0f}", _gb(m["peak_rss_bytes"])])
    return table(["run (bfloat16, one torch thread)", "seconds", "peak RSS (GB)"], rows)


def metrics_block(path: Path) -> str:
    s = _load(path)
    if not s["metrics"]:
        return f"`uds metrics --metrics all`: {PENDING}.\n"
    rows = [[f"`{n}`"] + [fixed(s["metrics"][n]["values"].get(k)) for k in RESULT_KEYS] for n in _order(s["metrics"])]
    return table(["model"] + list(RESULT_KEYS), rows)


def plot_layers(snap: dict, path: Path) -> Path | None:
    """Mean Δ_S1 (retain into full) and each unlearned model's mean Δ_S2 per layer against relative
    depth, Qwen beside SmolLM2 (None when Qwen's full model is not scored yet)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not snap.get("profile") or not snap["profile"]["n"]:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
    for ax, (title, profile, scores) in zip(axes, (
            ("Qwen2.5-Coder-1.5B, LoRA (28 layers)", snap["profile"], snap["scores"]),
            ("SmolLM2-135M, full fine-tuning (30 layers)", snap["smol"]["profile"], snap["smol"]["scores"]))):
        depth = np.linspace(0, 1, len(profile["mean_s1"]))
        ax.plot(depth, profile["mean_s1"], color="black", lw=2, label="S1: retain into full")
        for name in sorted(scores,
                           key=lambda n: METHOD_ORDER.index(method_of(n)) if method_of(n) in METHOD_ORDER else 9):
            if method_of(name) in METHOD_ORDER and scores[name].get("mean_s2"):
                ax.plot(depth, scores[name]["mean_s2"], lw=1.2, label=f"S2: {method_of(name)}")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("relative depth (layer / last layer)")
        ax.set_ylabel("mean drop of the entity log-prob (nats)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
