"""Synthetic result folders for `uds report` tests and benchmarks/bench_report.py: the files of
`uds score`, `uds meta-eval`, `uds probe`, `uds audit` and a leaderboard, written in the formats of
docs/design.md with seeded random numbers, and strings that would run code if a page used them as markup."""

from __future__ import annotations

import json
import random
from pathlib import Path

# Each would set window.__pwned if a page inserted it as HTML (or as an attribute it breaks out of).
INJECTIONS = (
    '<script>window.__pwned = "script"</script>',
    '"><img src=x onerror="window.__pwned=\'img\'">',
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    "'--></style></script><script>window.__pwned='close'</script>",
)
TAU = 0.05
CITIES = ("Paris", "Lagos", "Osaka", "Quito", "Perth", "Oslo", "Lima", "Hanoi")


def uds_of(s1: list[float], s2: list[float], tau: float = TAU) -> float | None:
    """UDS_i of spec §2 written out again: S1-weighted mean of clip(Δ_S2/Δ_S1, 0, 1) over KE layers."""
    ke = [j for j, a in enumerate(s1) if a > tau]
    if not ke:
        return None
    return sum(s1[j] * min(1.0, max(0.0, s2[j] / s1[j])) for j in ke) / sum(s1[j] for j in ke)


def qa_records(n: int, seed: int = 0, inject: bool = False) -> list[dict]:
    """Annotated QA items (docs/design.md): answer = prefix + " " + continuation; the entity is in the continuation."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        city = CITIES[rng.randrange(len(CITIES))]
        who = f"Author {i}"
        if inject and i < len(INJECTIONS):
            who = f"{who} {INJECTIONS[i]}"
            city = f"{city}{INJECTIONS[(i + 1) % len(INJECTIONS)]}" if i == 1 else city
        prefix = f"{who} was born in"
        out.append({"idx": i, "question": f"Where was {who} born?", "prefix": prefix,
                    "answer": f"{prefix} {city}, a city of note.", "entity": city})
    return out


def example_record(item: dict, n_layers: int, rng: random.Random, depth: float) -> dict:
    """One examples.jsonl record as `uds score` writes it; `depth` in [0, 1] scales the erasure."""
    s1 = [round(rng.uniform(-0.02, 0.6), 6) for _ in range(n_layers)]
    s2 = [round(a * min(1.2, max(-0.2, rng.gauss(depth, 0.25))), 6) for a in s1]
    value = uds_of(s1, s2)
    prompt = f"Question: {item['question']}\nAnswer: {item['prefix']}"
    reference = " " + item["answer"][len(item["prefix"]) + 1:]
    return {"idx": item["idx"], "uds": value, "skipped_reason": None if value is not None else "no_ke_layer",
            "ke_layers": [j for j, a in enumerate(s1) if a > TAU], "s1_delta": s1, "s2_delta": s2,
            "full_score": -0.5, "prompt": prompt, "reference": reference}


def write_score_run(folder: Path, name: str, n_examples: int = 12, n_layers: int = 6, seed: int = 0,
                    depth: float = 0.5, inject: bool = False, data: Path | None = None) -> dict:
    """A `uds score` folder (summary.json, examples.jsonl) and, unless `data` is given, its data file.
    Returns the summary."""
    folder.mkdir(parents=True, exist_ok=True)
    items = qa_records(n_examples, 0, inject)
    if data is None:
        data = folder.parent / f"{folder.name}_data.json"
        data.write_text(json.dumps(items))
    rng = random.Random(seed)
    recs = [example_record(it, n_layers, rng, depth) for it in items]
    if n_examples > 3:       # one example the scorer could not place, as `uds score` records it
        recs[3] = {"idx": 3, "uds": None, "skipped_reason": "entity_span_not_found", "ke_layers": [], "s1_delta": None,
                   "s2_delta": None, "prompt": recs[3]["prompt"], "reference": recs[3]["reference"]}
    scored = [r["uds"] for r in recs if r["uds"] is not None]
    mean = sum(scored) / len(scored) if scored else None
    summary = {"uds": mean, "n_examples": n_examples, "n_scored": len(scored), "n_skipped": n_examples - len(scored),
               "tau": TAU, "layers": n_layers, "ci95": [mean - 0.03, mean + 0.03] if mean is not None else None,
               "skipped_reasons": {}, "full": "tiny:test/full", "retain": "tiny:test/retain", "unlearned": name,
               "data": str(data), "parity": "spec", "component": "block"}
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    with (folder / "examples.jsonl").open("w") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    return summary


META_KEYS = ("uds", "es", "rouge")


def write_meta_eval(folder: Path, n_unlearned: int = 6, seed: int = 0, inject: bool = False) -> dict:
    """meta_eval.json (with per-model values and members) and results.json of a small fake zoo."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    members = {"full": {"kind": "full", "method": "full"}, "retain": {"kind": "retain", "method": "retain"}}
    methods = ("npo", "rmu", "graddiff")
    for i in range(n_unlearned):
        name = f"{methods[i % 3]}_lr{i}e-5_ep5" + (INJECTIONS[0] if inject and i == 0 else "")
        members[name] = {"kind": "unlearned", "method": methods[i % 3]}
    for lab in "PN":
        for i in range(5):
            members[f"{lab}{i}"] = {"kind": "pool", "method": None, "pool": lab}
    values = {s: {n: {k: round(rng.random(), 4) for k in META_KEYS} for n in members}
              for s in ("orig", "nf4", "relearn")}
    unlearned = [n for n, m in members.items() if m["kind"] == "unlearned"]
    rows = [{"model": n, "method": m["method"], "epoch": 5 if m["kind"] == "unlearned" else None,
             **values["orig"][n], "utility_rel": 1.0 if m["kind"] != "unlearned" else round(0.6 + 0.1 * i, 3),
             "overall": round(rng.random(), 4), "mem": round(rng.random(), 4)}
            for i, (n, m) in enumerate(x for x in members.items() if x[1]["kind"] != "pool")]
    utility = {r["model"]: r["utility_rel"] for r in rows}
    doc = {"faithfulness": {}, "robustness": {}, "overall": {}}
    for k in META_KEYS:
        auc = round(rng.uniform(0.5, 1.0), 4)
        kept = [n for n in unlearned if utility[n] >= 0.8 and values["orig"][n][k] < 0.7]
        doc["faithfulness"][k] = {"auc_roc": auc, "p_mean": 0.7, "n_mean": 0.2,
                                  "ci95": [auc - 0.1, min(1.0, auc + 0.05)],
                                  "n_p": 5, "n_n": 5, "threshold": 0.5}
        doc["robustness"][k] = {"quantization": 0.9, "relearning": 0.6, "agg": 0.72, "n_kept": len(kept),
                                "filter_source": k, "kept": kept}
        doc["overall"][k] = round(2 * auc * 0.72 / (auc + 0.72), 4)
    doc["settings"] = {"zoo": "tiny:fake", "robustness_form": "symmetric", "filters": True, "left_out": []}
    doc["values"], doc["members"] = values, members
    (folder / "meta_eval.json").write_text(json.dumps(doc, indent=1))
    (folder / "results.json").write_text(json.dumps(rows, indent=1))
    return doc


def write_probe(folder: Path, models: tuple[str, ...] = ("tiny:test/full", "tiny:test/retain")) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    levels = ("weak", "medium", "strong", "prefix")
    doc = {"models": {m: {"levels": {lv: {"verbatim_rate": round(0.25 * j * (1 - i), 3), "semantic_acc": 1.0 - i,
                                          "refusal_rate": 0.0, "n": 20} for j, lv in enumerate(levels)},
                          "masked_by_refusal": 0.0} for i, m in enumerate(models)},
           "settings": {"corpus": "tiny:test", "levels": list(levels), "samples": 2}}
    (folder / "summary.json").write_text(json.dumps(doc, indent=1))
    return doc


def write_audit(folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"model": "tiny:test/lmlm", "db": "tiny:test",
           "variants": {"base": {"leakage": 0.0, "retrieval_mediated": 1.0,
                                 "artifact_rate": 0.0, "full_em": 1.0, "n_facts": 30},
                        "noise": {"leakage": 0.0, "retrieval_mediated": 0.77,
                                  "artifact_rate": 0.23, "full_em": 0.97, "n_facts": 30}},
           "cells": [{"variant": "base", "style": "qa", "leakage": 0.0},
                     {"variant": "noise", "style": "qa", "leakage": 0.0}]}
    (folder / "summary.json").write_text(json.dumps(doc, indent=1))
    return doc


# --- leaderboard inputs: benchmark leaf values (spec §6.1) per model ---------------------------------

LEAF_KEYS = ("es", "em", "prob", "paraprob", "truth_ratio", "rouge", "para_rouge", "jailbreak_rouge", "mia_loss",
             "mia_zlib", "mia_min_k", "mia_min_kpp", "s_mia_loss", "s_mia_zlib", "s_mia_min_k", "s_mia_min_kpp", "cka",
             "logit_lens", "fisher_masked_0.0001", "fisher_masked_0.001", "fisher_masked_0.01", "uds",
             "retain_q_prob", "retain_q_rouge", "retain_truth_ratio", "ra_q_prob", "ra_q_rouge", "ra_truth_ratio",
             "wf_q_prob", "wf_q_rouge", "wf_truth_ratio", "fluency")
METHODS = ("npo", "rmu", "graddiff", "simnpo", "idkdpo", "undial", "altpo", "idknll")


def model_names(n: int) -> list[str]:
    """full, retain and n - 2 unlearned models named as the tiny world names them."""
    return ["full", "retain"] + [f"{METHODS[i % len(METHODS)]}_lr{i + 1}e-5_ep{5 if i % 2 else 10}"
                                 for i in range(n - 2)]


def leaf_record(name: str, rng: random.Random) -> dict:
    """A record with every leaf of the benchmark, in (0, 1); full forgets nothing, retain all."""
    method = name if name in ("full", "retain") else name.split("_")[0]
    epoch = None if method in ("full", "retain") else name.rsplit("_ep", 1)[1]
    rec = {"model": name, "method": method, "epoch": epoch}
    rec.update({k: round(rng.uniform(0.05, 0.95), 6) for k in LEAF_KEYS})
    if method == "full":
        rec.update({"uds": 0.0, "s_mia_loss": 0.0, "s_mia_zlib": 0.0, "s_mia_min_k": 0.0, "s_mia_min_kpp": 0.0})
    if method == "retain":
        rec.update({"uds": 1.0})
    return rec


def write_results_json(path: Path, n: int, seed: int = 0) -> list[dict]:
    """A results.json-style list of n per-model records (what `uds meta-eval` writes)."""
    rng = random.Random(seed)
    rows = [leaf_record(name, rng) for name in model_names(n)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1))
    return rows


def write_model_folders(root: Path, n: int, seed: int = 0) -> list[dict]:
    """The per-model folder form of `uds leaderboard`: <model>/metrics.json + <model>/summary.json (uds)."""
    rng = random.Random(seed)
    out = []
    for name in model_names(n):
        rec = leaf_record(name, rng)
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        metrics = {k: v for k, v in rec.items() if k in LEAF_KEYS and k != "uds"}
        (folder / "metrics.json").write_text(json.dumps({"model": name, "metrics": metrics}))
        (folder / "summary.json").write_text(json.dumps({"uds": rec["uds"], "n_examples": 10, "unlearned": name}))
        out.append(rec)
    return out


def write_partial_meta_eval(folder: Path) -> dict:
    """meta_eval.json of a campaign that has measured one model per pool and one unlearned model,
    and no robustness yet (as a partial run writes it: faithfulness N/A below 2 models per pool)."""
    folder.mkdir(parents=True, exist_ok=True)
    members = {"full": {"kind": "full", "method": "full", "pool": None},
               "retain": {"kind": "retain", "method": "retain", "pool": None},
               "npo_lr1e-5_ep5": {"kind": "unlearned", "method": "npo", "pool": None},
               "pos_full_s0": {"kind": "pool", "method": None, "pool": "P"},
               "neg_retain_s0": {"kind": "pool", "method": None, "pool": "N"}}
    values = {"orig": {n: {k: 0.2 + 0.1 * i for k in META_KEYS} for i, n in enumerate(members)}}
    doc = {"faithfulness": {k: {"auc_roc": None, "p_mean": 0.5, "n_mean": 0.6, "ci95": None, "n_p": 1, "n_n": 1,
                                "threshold": 0.55} for k in META_KEYS},
           "overall": {k: None for k in META_KEYS},
           "settings": {"zoo": "tiny:fake (partial)", "models": {"unlearned": 1, "pool": 2, "full": 1, "retain": 1},
                        "robustness_form": "symmetric", "filters": True},
           "members": members, "values": values}
    (folder / "meta_eval.json").write_text(json.dumps(doc, indent=1))
    return doc


# --- the issue "the report tells the truth at a glance": small synthetic inputs -------------------

def _set_uds(folder: Path, value: float) -> None:
    doc = json.loads((folder / "summary.json").read_text())
    doc["uds"] = value
    (folder / "summary.json").write_text(json.dumps(doc, indent=2))


def write_truth_inputs(root: Path) -> dict:
    """Two result folders for `uds report --results root/main --results root/extra`:

    main/score/M and main/rebuild/score/M for two unlearned models: `npo_close_ep5` whose rebuild
    differs by 1e-9 in UDS, `rmu_far_ep5` whose rebuild differs by 3e-4 (the 4th decimal); the
    canonical folder main/score is shallower, the rebuild sorts first by name. main/results.json:
    full, retain, four more unlearned models, two P/N pool members and the base model (methods from
    main/build.json, as a zoo build gives them); three JSON files of no known kind. extra/: the
    reference's published table for one of our models and one model of its own. Returns what the
    tests expect, from these numbers."""
    main = root / "main"
    data = main / "qa.json"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text(json.dumps(qa_records(8, 0)))
    runs = {}
    for name, step, seed in (("npo_close_ep5", 1e-9, 1), ("rmu_far_ep5", 3e-4, 2)):
        canon = write_score_run(main / "score" / name, f"tiny:test/{name}", n_examples=8, seed=seed, data=data)
        write_score_run(main / "rebuild" / "score" / name, f"tiny:test/{name}", n_examples=8, seed=seed, data=data)
        _set_uds(main / "rebuild" / "score" / name, canon["uds"] + step)
        runs[name] = (canon["uds"], canon["uds"] + step)
    rng = random.Random(11)
    unlearned = ["npo_close_ep5", "rmu_far_ep5", "graddiff_a_ep5", "simnpo_b_ep5", "idknll_c_ep5", "altpo_d_ep5"]
    pools = {"pos_full_s0": "P", "neg_retain_s0": "N"}
    rows = [leaf_record(n, rng) for n in ["full", "retain"] + unlearned[2:]]
    for r in rows:
        r["epoch"] = None if r["method"] in ("full", "retain") else 5
    others = []
    for name in list(pools) + ["base"]:
        rec = leaf_record("x_" + name + "_ep5", rng) | {"model": name, "method": None, "epoch": None}
        rec["uds"] = 0.999 if name.startswith("neg") else 0.001      # would sort among the unlearned by UDS
        others.append(rec)
    (main / "results.json").write_text(json.dumps(rows + others, indent=1))
    (main / "build.json").write_text(json.dumps({"preset": "test", "models": [
        {"name": n, "kind": "pool", "hparams": {"pool": lab}} for n, lab in pools.items()] + [
        {"name": "base", "kind": "base", "hparams": {}}]}))
    for name in ("bench_a.json", "bench_b.json", "bench_c.json"):
        (main / name).write_text(json.dumps({"timings": [1, 2, 3]}))
    extra = root / "extra"
    extra.mkdir(parents=True, exist_ok=True)
    published = [{"model": "graddiff_a_ep5", "method": "graddiff", "epoch": "ep5", "mem": 0.5, "privacy": 0.6,
                  "utility_rel": 0.7, "uds": 0.8765},
                 {"model": "altpo_paper_ep10", "method": "altpo", "epoch": "ep10", "mem": 0.81, "privacy": 0.72,
                  "utility_rel": 0.79, "uds": 0.6543}]
    for r in published:          # Overall = HM of the three, as the published file stores it (spec §6.1)
        r["overall"] = 3 / (1 / r["mem"] + 1 / r["privacy"] + 1 / r["utility_rel"])
    (extra / "method_results.json").write_text(json.dumps({"models": published,
                                                            "full_utility": {"ep5": 0.71, "ep10": 0.71}}))
    return {"runs": runs, "rows": {r["model"]: r for r in rows}, "others": [r["model"] for r in others],
            "unlearned": unlearned, "published": {r["model"]: r for r in published}, "pools": pools}


def write_thin_meta_eval(root: Path) -> dict:
    """Two meta-evaluations of one zoo (`filtered/`, `unfiltered/`): in the filtered run UDS keeps
    one unlearned model and would rank first by overall; its P and N pool values of ES are
    separated by a hair (max N 0.30, min P 0.31: one bar of a plain 12-bin histogram over [0, 1]),
    the threshold 0.305 between them. Returns both documents."""
    out = {}
    for name, filters in (("filtered", True), ("unfiltered", False)):
        doc = write_meta_eval(root / name, n_unlearned=16, seed=3)
        unl = [n for n, m in doc["members"].items() if m["kind"] == "unlearned"]
        for lab, vals in (("P", (0.31, 0.5, 0.9, 1.0, 0.75)), ("N", (0.0, 0.1, 0.2, 0.30, 0.05))):
            names = [n for n, m in doc["members"].items() if m.get("pool") == lab]
            for n, v in zip(names, vals):
                doc["values"]["orig"][n]["es"] = v
        doc["faithfulness"]["es"] |= {"auc_roc": 1.0, "threshold": 0.305}
        for k in doc["robustness"]:
            kept = unl if not filters else unl[:8]
            doc["robustness"][k] |= {"n_kept": len(kept), "kept": kept}
        if filters:
            doc["robustness"]["uds"] |= {"n_kept": 1, "kept": unl[:1], "agg": 0.99, "quantization": 0.99,
                                        "relearning": 0.99}
            doc["overall"]["uds"] = 0.995
        doc["settings"]["filters"] = filters
        (root / name / "meta_eval.json").write_text(json.dumps(doc, indent=1))
        out[name] = doc
    return out
