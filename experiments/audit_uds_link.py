"""The deletion audit next to UDS and mem_bits on the same facts (spec-probes §3.7).

The tiny world's audit targets are its forget facts, in the order of the forget split, so fact j
of the audit is example j of `uds score` and of `uds metrics`. On the world's own (parametric,
chat-tuned) models — full, retain and unlearned ones — this script runs the audit's DEL-OFF state
(retrieval off: the answer comes from the weights; `--chat`, base variant, the question styles),
UDS per example and mem_bits per example, and writes them side by side:

    UDS_HOME=... python experiments/audit_uds_link.py --preset small \
        --models full,retain,npo_lr1e-4_b01_a1_ep10,idknll_lr2e-4_a1_ep10 --out out/audit_uds_link

Outputs: facts.csv (model, fact, gold, L, uds, mem_bits), summary.json (per-model means, the two
disagreements, pooled AUCs), link.png. A fact counts as answered when the DEL-OFF answer contains
the gold object (the world's models answer in sentences, so exact match would read 0 everywhere).
Models that are not built are built first (as `uds score` would).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from checkpoints.specs import load_model, load_tokenizer, tiny_spec, tiny_tag
from checkpoints.world.store import load_world
from uds_analyses.audit.link import agreement, fact_rows, model_summary
from uds_analyses.audit.report import write_csv
from uds_analyses.audit.run import AuditSettings, run_audit
from uds_analyses.audit.sources import resolve_sets
from uds.cli import main as uds_main
from uds_core.data import jsonl_values


def del_off_correct(spec: str, preset: str, seed: int, styles: list[str], golds: list[str]) -> list[float]:
    """Per forget fact: mean over `styles` of DEL-OFF contains-match (the base variant, chat prompts)."""
    sets = resolve_sets(f"tiny:{tiny_tag(preset, seed)}", None, ["base"], styles)
    dbs = [s.open_db() for s in sets]
    facts = run_audit(load_model(spec), load_tokenizer(spec), sets, dbs,
                      AuditSettings(max_new_tokens=48, progress=False, chat=True)).facts
    hits = np.zeros(len(golds))
    for f in facts:
        if f.gold != golds[f.fact_id]:
            raise RuntimeError(f"audit fact {f.fact_id} is {f.gold!r}, "
                               f"forget example {f.fact_id} is {golds[f.fact_id]!r}")
        hits[f.fact_id] += f.scores["DEL-OFF"].contains
    return list(hits / len(styles))


def uds_per_example(spec: str, out: Path) -> list[float | None]:
    """`uds score --unlearned spec`: UDS of each forget example in idx order (None: skipped)."""
    if uds_main(["score", "--unlearned", spec, "--out", str(out)]) != 0:
        raise RuntimeError(f"uds score failed on {spec}")
    path = out / "examples.jsonl"
    rows = sorted((r for _, r in jsonl_values(path.read_text(), path)), key=lambda r: r["idx"])
    return [r["uds"] for r in rows]


def mem_bits_per_example(spec: str, out: Path) -> list[float]:
    if uds_main(["metrics", "--model", spec, "--metrics", "mem_bits", "--out", str(out)]) != 0:
        raise RuntimeError(f"uds metrics failed on {spec}")
    return json.loads((out / "metrics.json").read_text())["per_example"]["mem_bits"]


def plot(path: Path, per_model: dict[str, dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(per_model)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(names) + 2), 4))
    leak = [per_model[n]["del_off_correct"] for n in names]
    held = [1 - per_model[n]["uds"] for n in names]
    top = max(per_model[n]["mem_bits"] for n in names) or 1.0
    bits = [per_model[n]["mem_bits"] / top for n in names]
    for k, (vals, label) in enumerate(((leak, "DEL-OFF correct (audit)"), (held, "1 - UDS"),
                                       (bits, f"mem_bits / {top:.1f}"))):
        ax.bar(x + (k - 1) * 0.27, vals, 0.27, label=label)
    ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("share of the fact still held")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    ax.set_title("where the forget facts live: audit vs UDS vs mem_bits")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", default="full,retain,npo_lr1e-4_b01_a1_ep10,rmu_lr1e-4_l5_s10_ep10,"
                                        "graddiff_lr1e-4_a1_ep10,simnpo_lr2e-4_b35_a1_d1_g0125_ep10,"
                                        "idknll_lr2e-4_a1_ep10,npo_lr1e-5_b01_a1_ep10")
    ap.add_argument("--styles", default="direct,paraphrased")
    ap.add_argument("--out", default="out/audit_uds_link")
    args = ap.parse_args()
    out, t0 = Path(args.out), time.time()
    out.mkdir(parents=True, exist_ok=True)
    golds = [it["entity"] for it in load_world(args.preset, args.seed).forget]
    styles = args.styles.split(",")
    rows, per_model, seconds = [], {}, {}
    for name in args.models.split(","):
        t = time.time()
        spec = tiny_spec(args.preset, args.seed, name)
        mine = fact_rows(name, golds, del_off_correct(spec, args.preset, args.seed, styles, golds),
                         uds_per_example(spec, out / "runs" / name / "score"),
                         mem_bits_per_example(spec, out / "runs" / name / "metrics"))
        rows += mine
        per_model[name] = model_summary(mine)
        seconds[name] = round(time.time() - t, 1)
        print(f"{name:40s} DEL-OFF {per_model[name]['del_off_correct']:.3f}  UDS {per_model[name]['uds']:.3f}  "
              f"mem_bits {per_model[name]['mem_bits']:7.2f}  hidden {per_model[name]['hidden']:3d}  "
              f"({seconds[name]:.0f} s)", flush=True)
    doc = {"preset": args.preset, "seed": args.seed, "styles": styles, "variant": "base", "answered": "contains",
           "models": per_model, "agreement": agreement(rows), "seconds": seconds,
           "total_seconds": round(time.time() - t0, 1)}
    write_csv(out / "facts.csv", rows)
    (out / "summary.json").write_text(json.dumps(doc, indent=1))
    plot(out / "link.png", per_model)
    print(json.dumps(doc["agreement"], indent=1))
    print(out / "summary.json")


if __name__ == "__main__":
    main()
