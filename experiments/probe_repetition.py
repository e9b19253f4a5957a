"""Repetition experiment of spec-probes §2.7: verbatim rate vs how often a biography was trained on.

One model, fine-tuned from a tiny world's base on biographies where each group of biographies
appears 0, 1, 2, 4, 8 or 16 times (one pass over the repeated, shuffled list, in sentence chunks
as the world's bio pools are trained), then probed at the `prefix` level (greedy + samples) with
the probe's matching: the verbatim rate per repetition count. Everything (model, rows, figure) is
written under --out; nothing is added to the world or its zoo.

    UDS_HOME=/tmp/uds_home_15 python experiments/probe_repetition.py --preset small --out /tmp/probe_rep

Prints one line per repetition count and the wall times; writes results.json and repetition.png.
The docs' figure is drawn from the committed results of every run (mean and min-max over seeds):

    python experiments/probe_repetition.py --figure results/probe/repetition_small results/probe/repetition_smol \
        --figure-out docs/probe_repetition.png
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from checkpoints.methods.pools import sentence_chunks
from checkpoints.specs import load_model, load_tokenizer, tiny_spec
from checkpoints.world.encode import encode_text
from checkpoints.world.store import load_world
from checkpoints.world.train import Loop, TrainConfig, collate, train
from uds_analyses.doc_tables.probe import repetition_runs, seed_bands
from uds_analyses.probe.corpus import Passage, check_corpus
from uds_analyses.probe.refusal import RefusalDetector, default_phrases
from uds_analyses.probe.run import ProbeSettings, probe_model
from uds_core.batching import pad_token_id

COUNTS = (0, 1, 2, 4, 8, 16)


def assign(n_bios: int, per: int, seed: int) -> list[int]:
    """Repetition count of each biography: `per` biographies per count, shuffled; -1 = unused."""
    counts = [c for c in COUNTS for _ in range(per)] + [-1] * max(0, n_bios - per * len(COUNTS))
    random.Random(seed).shuffle(counts)
    return counts[:n_bios]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--per", type=int, default=3, help="biographies per repetition count")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--epochs", type=int, default=1, help="passes over the repeated list (multiplies every count)")
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="out/probe_repetition")
    ap.add_argument("--figure", nargs="+", metavar="FOLDER", help="only draw the figure of these result folders")
    ap.add_argument("--figure-out", default="docs/probe_repetition.png")
    ap.add_argument("--add-kinds", nargs="+", metavar="OUT",
                    help="only add the per-kind split to these runs' results.json (from their rows.jsonl)")
    args = ap.parse_args()
    if args.figure:
        plot_folders([Path(f) for f in args.figure], Path(args.figure_out))
    elif args.add_kinds:
        for out in map(Path, args.add_kinds):
            doc = json.loads((out / "results.json").read_text())
            rows = [json.loads(line) for line in (out / "rows.jsonl").open()]
            n_forget = len(load_world(doc["preset"], 0).forget_bios)
            (out / "results.json").write_text(json.dumps({**doc, **kind_fields(rows, n_forget)}, indent=1))
    else:
        run(args)


def kind_fields(rows: list[dict], n_forget: int) -> dict:
    """The rows split by the kind of biography (the world's forget authors, bio00..; the other
    entities after them): verbatim hits and rows per repetition count."""
    split: dict[str, dict[str, dict[str, int]]] = {"forget": {}, "other": {}}
    for r in rows:
        cell = split["forget" if int(r["doc_id"][3:]) < n_forget else "other"].setdefault(r["group"],
                                                                                          {"hits": 0, "n": 0})
        cell["hits"] += bool(r["verbatim"])
        cell["n"] += 1
    return {"n_forget_bios": n_forget, "by_kind": split}


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    world = load_world(args.preset, 0)
    base = tiny_spec(args.preset, 0, "base")
    tok = load_tokenizer(base)
    bios = list(world.forget_bios) + list(world.other_bios)
    counts = assign(len(bios), args.per, args.seed)
    chunks = [sentence_chunks(tok, b) for b in bios]
    data = [encode_text(tok, c) for b, r, cs in zip(bios, counts, chunks) for _ in range(max(r, 0)) for c in cs]

    t0 = time.time()
    model = load_model(base)
    cfg = TrainConfig(lr=args.lr, epochs=args.epochs, batch_size=args.batch_size, seed=args.seed)
    pad = pad_token_id(tok)
    losses = train(model, data, cfg, lambda ex: collate(ex, pad), loop=Loop(desc="repetition model"))
    train_s = time.time() - t0
    model.save_pretrained(out / "model")

    passages = check_corpus([Passage(f"bio{i:02d}", f"bio{i:02d}", k, c, group=str(r))
                             for i, (r, cs) in enumerate(zip(counts, chunks)) if r >= 0 for k, c in enumerate(cs)],
                            "repetition bios")
    s = ProbeSettings(levels=("prefix",), samples=args.samples, seed=args.seed, batch_size=32)
    t1 = time.time()
    rows = probe_model(model, tok, passages, s, RefusalDetector(default_phrases()), desc="repetition probe")
    probe_s = time.time() - t1
    rate = {c: sum(r["verbatim"] for r in rows if r["group"] == str(c)) /
            max(1, sum(r["group"] == str(c) for r in rows)) for c in COUNTS}
    lcs = {c: sum(r["lcs"] for r in rows if r["group"] == str(c)) / max(1, sum(r["group"] == str(c) for r in rows))
           for c in COUNTS}
    doc = {"preset": args.preset, "counts": COUNTS, "verbatim_rate": rate, "mean_lcs": lcs,
           **kind_fields(rows, len(world.forget_bios)),
           "n_rows": {c: sum(r["group"] == str(c) for r in rows) for c in COUNTS},
           "train_examples": len(data), "train_steps": len(losses), "final_loss": losses[-1],
           "train_seconds": round(train_s, 1), "probe_seconds": round(probe_s, 1),
           "settings": {"lr": args.lr, "epochs": args.epochs, "batch_size": args.batch_size,
                        "samples": args.samples, "seed": args.seed,
                        "per": args.per, "min_lcs": s.min_lcs, "temperature": s.temperature}}
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    with (out / "rows.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    for c in COUNTS:
        print(f"repetitions {c:2d}: verbatim rate {rate[c]:.3f}  mean LCS {lcs[c]:.1f}  ({doc['n_rows'][c]} rows)")
    print(f"train {train_s:.0f} s ({len(losses)} steps), probe {probe_s:.0f} s")
    plot(rate, args.epochs, out / "repetition.png")


def plot(rate: dict[int, float], epochs: int, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(rate)
    fig, ax = plt.subplots(figsize=(4.2, 3))
    ax.plot(range(len(xs)), [rate[x] for x in xs], marker="o")
    ax.set_xticks(range(len(xs)), [str(x * epochs) for x in xs])
    ax.set_xlabel("times the biography was trained on")
    ax.set_ylabel("verbatim hit rate (prefix level)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def plot_folders(folders: list[Path], path: Path) -> None:
    """One line per world and number of passes (mean over seeds, band = min-max), the times trained
    on as an even-spaced axis; the 0-times point is each line's chance level."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bands = {}
    for folder in folders:
        by_passes = repetition_runs(folder)
        if not by_passes:
            raise SystemExit(f"no results.json files in {folder}")
        for e, rs in by_passes.items():
            bands[(rs[0]["preset"], e, len(rs))] = seed_bands(rs)
    times = sorted({t for b in bands.values() for t in b})
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for (preset, e, n), band in bands.items():
        xs = [times.index(t) for t in band]
        mean, lo, hi = zip(*band.values())
        line, = ax.plot(xs, mean, marker="o", label=f"{preset}, {e} pass{'es' if e > 1 else ''} ({n} seeds)")
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15)
    ax.set_xticks(range(len(times)), [str(t) for t in times])
    ax.set_xlabel("times the biography was trained on")
    ax.set_ylabel("verbatim hit rate (prefix level)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    main()
