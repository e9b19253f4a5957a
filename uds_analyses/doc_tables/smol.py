"""docs/smol.md's and the README's tables of the `smol` world, from `experiments/smol_results.py`'s files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from uds_analyses.doc_tables.markdown import fixed, sig, table

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


def _metric(values: dict | None, key: str) -> str:
    v = None if values is None else values.get(key)
    return "" if v is None else f"{v:.3f}"


RESULT_KEYS = ("es", "em", "truth_ratio", "model_utility", "fluency", "rouge")
META_MARK = " †"   # a row whose output metrics come from the meta-evaluation's benchmark rows


def _meta_rows(folder: Path) -> dict[str, dict]:
    """meta_eval/results.json (`uds meta-eval`'s benchmark rows) by model name; {} before it exists."""
    path = folder / "meta_eval" / "results.json"
    return {r["model"]: r for r in json.loads(path.read_text())} if path.is_file() else {}


def results_table(folder: Path) -> str:
    """metrics/<model>.json with score/<model>/: per model (full, retain, then the unlearned ones;
    not the pools) UDS [CI], ES, EM, Truth Ratio, model utility, fluency, forget ROUGE-L recall.
    A model without a `uds metrics` file takes its values from the meta-evaluation's benchmark rows
    (same metric code and protocol), marked †; a blank cell: not measured (yet)."""
    scores = _scores(folder / "score")
    metrics = {p.stem: json.loads(p.read_text())["metrics"] for p in sorted((folder / "metrics").glob("*.json"))}
    meta = _meta_rows(folder)
    names = sorted({n for n in set(scores) | set(metrics) | set(meta) if _zoo_order(n)[0] < 3}, key=_zoo_order)
    rows = []
    for n in names:
        s = scores.get(n, ({"uds": None, "ci95": None}, []))[0]
        uds = "" if s["uds"] is None else f"{s['uds']:.3f} {_ci(s)}"
        values = metrics.get(n) or meta.get(n)
        mark = META_MARK if n not in metrics and n in meta else ""
        rows.append([f"`{n}`{mark}", uds] + [_metric(values, k) for k in RESULT_KEYS])
    return table(["model", "UDS [95 % CI]", "ES", "EM", "Truth Ratio", "model utility", "fluency", "ROUGE-L"],
                 rows)


def readme_results(folder: Path) -> str:
    """The README's table: `results_table` and the tolerance of its UDS column, from the second build
    of the world beside the first (rebuild/score/): which rows it reproduced exactly, the largest
    |ΔUDS| of the others, and which rows were built once."""
    first, second = _scores(folder / "score"), _scores(folder / "rebuild" / "score")
    both = [n for n in first if n in second]
    diffs = {n: abs(first[n][0]["uds"] - second[n][0]["uds"]) for n in both}
    exact = [n for n in both if diffs[n] == 0.0]
    moved = [n for n in both if diffs[n] != 0.0]
    once = [n for n in first if n not in second and _zoo_order(n)[0] < 3]
    names = lambda ns: " and ".join(", ".join(f"`{n}`" for n in ns).rsplit(", ", 1))   # noqa: E731
    text = (f"\nTolerance of the UDS column: a second build of the world on another machine reproduced "
            f"{names(exact)} exactly")
    if moved:
        text += f" and {names(moved)} within {max(diffs[n] for n in moved):.1e}"
    if once:
        text += f"; {names(once)} were built once"
    return results_table(folder) + text + ". The other columns are rounded to 3 decimals and were measured once.\n"


def meta_eval_table(path: Path) -> str:
    """meta_eval/meta_eval.json (`uds meta-eval --zoo tiny:smol`): per key, by faithfulness AUC
    (descending): AUC with its bootstrap 95 % CI over the P/N pools, the pools' raw means, the
    robustness scores Q (NF4) and R (relearning) with the spec §5.5 filters, and overall."""
    d = json.loads(path.read_text())
    faith, rob = d["faithfulness"], d["robustness"]
    order = sorted(faith, key=lambda k: (faith[k]["auc_roc"] is None, -(faith[k]["auc_roc"] or 0.0), k))
    rows = []
    for k in order:
        f, r = faith[k], rob[k]
        ci = f"[{f['ci95'][0]:.3f}, {f['ci95'][1]:.3f}]" if f.get("ci95") else "n/a"
        rows.append([k, f"{fixed(f['auc_roc'])} {ci}", fixed(f["p_mean"]), fixed(f["n_mean"]),
                     fixed(r["quantization"]), fixed(r["relearning"]), fixed(d["overall"].get(k)), str(r["n_kept"])])
    return table(["metric", "faithfulness AUC [95 % CI] (chance 0.5)", "P mean", "N mean", "Q (NF4)",
                  "R (relearn)", "overall", "kept"], rows)


def bench_table(path: Path) -> str:
    """bench_uds.json (`benchmarks/bench_uds.py --out`): per engine path, the median seconds of a full
    UDS run, of an S2-only run (S1 cached) and of one with the target's captures kept, its FLOPs
    counted from the config, and its time as a multiple of the measured floor; then the floor
    itself and the naive / fast ratios (median over rounds of the per-round ratios)."""
    d = json.loads(path.read_text())
    med, flops, n = d["median_seconds"], d["flops"], d["examples"]
    rows = []
    for alg in ("naive", "fast"):
        m = med[alg]
        kept = f"{m['s2_kept']:.1f}" if alg == "fast" else "—"
        rows.append([alg, f"{m['full']:.1f}", f"{m['s2_only']:.1f}", kept, f"{n / m['full']:.2f}",
                     f"{flops[alg] / 1e12:.2f}", f"{d['x_of_floor'][alg]:.2f}"])
    rows.append(["floor (least work)", f"{d['floor_seconds']:.1f}", "", "", f"{n / d['floor_seconds']:.2f}",
                 f"{flops['lower bound'] / 1e12:.2f}", "1.00"])
    sp = d["speedup"]
    rows.append(["naive / fast", f"{sp['full']:.2f}x", f"{sp['s2_only']:.2f}x", f"{sp['s2_kept']:.2f}x", "",
                 f"{flops['naive'] / flops['fast']:.2f}x", ""])
    head = (f"{n} examples, batch {d['batch_size']}, {d['layers']} layers, {d['dtype']}, {d['device']} "
            f"({d['machine']['cores']} cores, {d['threads']} torch thread(s)), {len(d['rounds']['fast'])} round(s), "
            f"{d['date']}; max |ΔUDS| fast vs naive {d['max_abs_uds_diff']:.2g} over {d['scored_both']} scored "
            f"examples, max |Δ delta| {d['max_abs_delta_diff']:.2g}; floor: the least work at "
            f"{d['forward_flop_rate'] / 1e9:.1f} GFLOP/s (this machine's plain forward rate)\n\n")
    return head + table(["path", "full UDS (s)", "S2 only (s)", "S2, captures kept (s)", "examples/s (full)",
                         "TFLOP (full)", "x of floor"], rows)


def spread_table(folder: Path) -> str:
    """rebuild/ (a second build of the world, `experiments/smol_results.py --stage build,score
    --built-only --out results/smol/rebuild`) against the first build's files beside it: per model
    scored in both, UDS of each build, the largest per-example |ΔUDS|, whether the unlearned
    model's weights are the same (`uds score`'s fingerprints) and the training seconds of each."""
    first, second = _scores(folder.parent / "score"), _scores(folder / "score")
    secs = {}
    for n, path in ((0, folder.parent / "build.json"), (1, folder / "build.json")):
        for m in json.loads(path.read_text())["models"]:
            secs.setdefault(m["name"], [None, None])[n] = m["train_seconds"]
    rows = []
    for name in (n for n in second if n in first):
        (s1, e1), (s2, e2) = first[name], second[name]
        per = [abs(a["uds"] - b["uds"]) for a, b in zip(e1, e2) if a["uds"] is not None and b["uds"] is not None]
        same = all(s1["fingerprints"][k] == s2["fingerprints"][k] for k in ("full", "retain", "unlearned"))
        t = secs.get(name, [None, None])
        rows.append([f"`{name}`", f"{s1['uds']:.6f}", f"{s2['uds']:.6f}", f"{abs(s1['uds'] - s2['uds']):.1e}",
                     f"{max(per, default=0.0):.1e}", "yes" if same else "no",
                     " / ".join("n/a" if x is None else f"{x:.0f}" for x in t)])
    return table(["model", "UDS build 1", "UDS build 2", "ΔUDS (abs.)", "largest per-example ΔUDS (abs.)",
                  "same weights (fingerprints)", "train seconds build 1 / 2"], rows)


def _range(s: dict, digits: int = 1) -> str:
    """A spread (`benchmarks/bench_ou_eval.py`'s median/min/max) as `median [min, max]`."""
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}, {s['max']:.{digits}f}]"


OU_EVAL_SIDES = (("ou", "Open-Unlearning `src/eval.py`, default TOFU suite"),
                 ("ours", "`uds metrics`, shared keys (fast path, `--parity spec`)"),
                 ("ours_ou_parity", "`uds metrics`, shared keys, `--parity open-unlearning`"))


def ou_eval_table(path: Path) -> str:
    """bench_ou_eval.json (`benchmarks/bench_ou_eval.py --out`): each side's evaluation, process wall
    and process CPU seconds (median [min, max] over its runs), the OU / ours ratios (of the medians,
    and the per-round range), seconds per OU top-level metric next to ours for the same work, and the
    shared values of OU's run next to ours under `--parity open-unlearning`."""
    d = json.loads(path.read_text())
    s, runs = d["summary"], d["runs"]
    loads = [x for r in runs for x in (r["load_before"][0], r["load_after"][0])]
    head = (f"`{d['model']['spec']}`, batch {d['settings']['batch_size']}, max_new_tokens "
            f"{d['settings']['max_new_tokens']}, greedy, {d['settings']['dtype']}, {d['settings']['device']} "
            f"({d['machine']['cores']} cores, {d['threads']} thread per side), {len(runs)} runs interleaved, "
            f"{d['date']}; OU: transformers {d['versions']['ou']['transformers']}, "
            f"torch {d['versions']['ou']['torch']}; "
            f"ours: transformers {d['versions']['ours']['transformers']}, torch {d['versions']['ours']['torch']}; "
            f"1-min load average {min(loads):.1f}-{max(loads):.1f} around the runs"
            f"{'' if d['complete'] else ' (INCOMPLETE run)'}\n\n")
    rows = [[label, str(s[side]["eval_s"]["n"]), _range(s[side]["eval_s"]), _range(s[side]["wall_s"]),
             _range(s[side]["cpu_s"])] for side, label in OU_EVAL_SIDES if side in s]
    for key, ours, label in (("ou_over_ours", "ours", "OU / ours"),
                             ("ou_over_ours_ou_parity", "ours_ou_parity", "OU / ours (open-unlearning parity)")):
        if key in s:
            r = s[key]
            # the ratio from the unrounded medians (the JSON's `of_medians` is rounded to 3 decimals)
            rows.append([f"**{label}**", "", *(f"**{s['ou'][m]['median'] / s[ours][m]['median']:.3f}x** "
                                                f"[{r[m]['per_round']['min']:.3f}, {r[m]['per_round']['max']:.3f}]"
                                                for m in ("eval_s", "wall_s", "cpu_s"))])
    out = head + table(["side", "runs", "evaluation (s)", "process wall (s)", "process CPU (s)"], rows)
    per = [[f"`{name}`", ", ".join(f"`{k}`" for k in m["ours_keys"]) or "—", fixed(m["ou_s"], 1), fixed(m["ours_s"], 1)]
           for name, m in d["per_metric_s"].items()]
    out += "\n" + table(["OU metric (evaluation order)", "ours (same work)", "OU (s)", "ours (s)"], per)
    v = d["values"]
    if v:
        vals = [[f"`{k}`", fixed(r["ou"], 6), fixed(r["ours"], 6), sig(r["abs_diff"], 2) if r["abs_diff"] is not None
                 else "n/a", sig(v["spec_vs_ou"]["per_key"][k]["abs_diff"], 2)
                 if v["spec_vs_ou"]["per_key"][k]["abs_diff"] is not None else "n/a"]
                for k, r in v["per_key"].items()]
        out += (f"\nmax abs. diff OU vs ours (open-unlearning parity) = {sig(v['max_abs_diff'], 2)}; beyond "
                f"{d['tolerance']:g}: {', '.join(v['beyond_tolerance']) or 'none'}\n\n")
        out += table(["key", "OU", "ours, open-unlearning parity", "abs. diff", "abs. diff, ours spec"], vals)
    return out
