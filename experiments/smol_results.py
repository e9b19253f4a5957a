"""The `smol` world's results as committed files: build times, UDS of every model, the
output metrics of the core and unlearned models; docs/smol.md's tables are rendered from them.

    python experiments/smol_results.py                       # every stage, resumable
    python experiments/smol_results.py --stage score         # one stage (build, score, metrics)

Each stage skips what is already in `--out` (default results/smol), so an interrupted run resumes at
the first missing model. Files: `build.json` (one row per model: recipe, train seconds, device),
`score/<model>/{summary.json,examples.jsonl,layers.csv}` (+ `layers.png` of the figure's model),
`metrics/<model>.json` (`uds metrics`, CPU protocol: answers cut at `--max-new-tokens`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRESET = "smol"
FIGURE_MODEL = "npo_lr3e-5_b01_a1_ep5"   # whose per-layer figure the README shows
# Output metrics of the README's table (+ ROUGE-L recall for the world's quality) under the CPU protocol.
METRIC_KEYS = "rouge,es,em,truth_ratio,prob,model_utility,fluency,mem_bits_signed"
CPU_MAX_NEW_TOKENS = 128
# Greedy decoding of a 135M model on CPU is bound by reading the weights once per step, so one
# step of 32 rows costs little more than one of 8: the CPU protocol generates in batches of 32.
CPU_BATCH = 32


def zoo(preset: str = PRESET, built_only: bool = False) -> list[dict]:
    """The preset's recipes in zoo order; `built_only`: those whose model is built now (an
    evaluation can then run beside a build that is still training the rest)."""
    from checkpoints.catalogue import recipes
    from checkpoints.world.build import is_built
    from checkpoints.world.presets import get_preset

    p = get_preset(preset)
    return [r.to_dict() for r in recipes(p) if not built_only or is_built(p, 0, r)]


def stage_build(out: Path, device: str, preset: str = PRESET, built_only: bool = False) -> None:
    """Build (or finish) the world; `build.json` from every built model's recipe.json
    (`built_only`: no training, the models built so far)."""
    from checkpoints.world.build import build_world
    from checkpoints.world.store import model_dir

    if not built_only:
        build_world(preset, 0, device=device)
    rows = []
    for r in zoo(preset, built_only):
        meta = json.loads((model_dir(preset, 0, r["name"]) / "recipe.json").read_text())
        rows.append({k: meta.get(k) for k in ("name", "kind", "parent", "method", "hparams", "data", "epoch",
                                               "train_seconds", "device")} | {"train": meta["train"]})
    _write_json(out / "build.json", {"preset": preset, "models": rows})


def _run_cli(args: list[str]) -> None:
    from uds.cli import main

    code = main(args)
    if code:
        raise SystemExit(f"uds {' '.join(args)} exited with {code}")


def stage_score(out: Path, device: str, preset: str = PRESET, built_only: bool = False) -> None:
    """`uds score` of every model but the base (full and retain: the invariants 0 and 1)."""
    names = [r["name"] for r in zoo(preset, built_only) if r["kind"] != "base"]
    for i, name in enumerate(names, 1):
        dest = out / "score" / name
        if (dest / "summary.json").is_file():
            continue
        t0 = time.time()
        with tempfile.TemporaryDirectory() as tmp:
            _run_cli(["score", "--unlearned", f"tiny:{preset}/{name}", "--out", tmp, "--device", device])
            dest.mkdir(parents=True, exist_ok=True)
            kept = ("summary.json", "examples.jsonl", "layers.csv") + (("layers.png",) if name == FIGURE_MODEL else ())
            for f in kept:
                shutil.copy(Path(tmp) / f, dest / f)
        print(f"[{i}/{len(names)}] score {name}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)


def stage_metrics(out: Path, device: str, max_new_tokens: int, preset: str = PRESET, keys: str = METRIC_KEYS,
                  built_only: bool = False, batch_size: int = CPU_BATCH) -> None:
    """`uds metrics` of full, retain and every unlearned model (the README's table)."""
    names = [r["name"] for r in zoo(preset, built_only) if r["kind"] in ("full", "retain", "unlearned")]
    for i, name in enumerate(names, 1):
        dest = out / "metrics" / f"{name}.json"
        if dest.is_file():
            continue
        t0 = time.time()
        with tempfile.TemporaryDirectory() as tmp:
            _run_cli(["metrics", "--model", f"tiny:{preset}/{name}", "--metrics", keys, "--out", tmp,
                      "--max-new-tokens", str(max_new_tokens), "--batch-size", str(batch_size), "--device", device])
            doc = json.loads((Path(tmp) / "metrics.json").read_text())
        doc["seconds"] = round(time.time() - t0, 1)
        _write_json(dest, doc)
        print(f"[{i}/{len(names)}] metrics {name}: {doc['seconds']:.0f} s", file=sys.stderr, flush=True)


def _write_json(path: Path, doc: dict) -> None:
    from uds_core import atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, doc, indent=1, allow_nan=False)


STAGES = ("build", "score", "metrics")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stage", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    p.add_argument("--out", type=Path, default=REPO / "results" / "smol")
    p.add_argument("--device", default="cpu", help="cpu or cuda (cuda: the complete protocol, see docs/smol.md)")
    p.add_argument("--max-new-tokens", type=int, default=CPU_MAX_NEW_TOKENS)
    p.add_argument("--batch-size", type=int, default=CPU_BATCH, help="metrics stage (generation and teacher forcing)")
    p.add_argument("--preset", default=PRESET, help="smol (default) or smol-ci (minutes; the test suite's)")
    p.add_argument("--metrics", default=METRIC_KEYS, help="keys of the metrics stage")
    p.add_argument("--built-only", action="store_true",
                   help="score / metrics: only the models built now (beside a build still running)")
    a = p.parse_args(argv)
    stages = [s.strip() for s in a.stage.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        p.error(f"unknown stage(s) {', '.join(unknown)}")
    for s in stages:
        t0 = time.time()
        {"build": lambda: stage_build(a.out, a.device, a.preset, a.built_only),
         "score": lambda: stage_score(a.out, a.device, a.preset, a.built_only),
         "metrics": lambda: stage_metrics(a.out, a.device, a.max_new_tokens, a.preset, a.metrics, a.built_only,
                                          a.batch_size)}[s]()
        print(f"stage {s}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
