"""Curves during unlearning and what they cost, measured in one run.

For each named unlearned model of a tiny world, runs `uds world build --models NAME --curve-every
N ...` in this process (the anchors are loaded once for all of them) and times it; each curve
record holds the wall seconds of its evaluation (`eval_seconds`) and of the training since the
previous one (`train_seconds`), so one run gives both sides of the overhead. Writes `--out`:
the curves `<model>.jsonl` (copied from the build's curve folder) and `overhead.json`: per
model the steps, evaluations, median / mean / max seconds per evaluation (the first, which may
compute S1, also alone), training seconds per step, the total evaluation and training seconds
and their ratio in percent at this N; the machine's load average before and after.

    OMP_NUM_THREADS=1 UDS_HOME=/tmp/home python benchmarks/bench_curve.py --preset smol --every 3 \\
        --models npo_lr3e-5_b01_a1_ep5,graddiff_lr3e-5_a1_ep5 --out results/smol/curves

The models must not be built in UDS_HOME yet (a built model is not trained again); their parents
(full) and the retain anchor are used as they are.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from uds_core.curves import read_curve  # noqa: E402


def model_overhead(curve_path: Path, wall_s: float) -> dict:
    """Seconds per evaluation and percent of training time from one curve file."""
    curve = read_curve(curve_path)
    done = curve.scored()
    evals = [r["eval_seconds"] for r in done]
    train = sum(r["train_seconds"] for r in curve.records)
    steps = max((r["step"] for r in curve.records), default=0)
    later = evals[1:] or evals
    return {"steps": steps, "evaluations": len(done), "failed": len(curve.records) - len(done),
            "first_eval_seconds": evals[0] if evals else None,
            "eval_seconds_median": statistics.median(later) if later else None,
            "eval_seconds_mean": statistics.fmean(later) if later else None,
            "eval_seconds_max": max(later) if later else None,
            "eval_seconds_total": sum(evals), "train_seconds_total": train,
            "train_seconds_per_step": train / steps if steps else None,
            "overhead_percent": 100.0 * sum(evals) / train if train else None,
            "build_wall_seconds": wall_s}


def score_check(preset: str, seed: int, name: str, curve_path: Path, out: Path) -> dict:
    """`uds score` of the model the build saved, beside the curve's last point (they must agree)."""
    from checkpoints.specs import tiny_spec
    from uds.cli import main as uds_main

    folder = out / ".score" / name
    code = uds_main(["--quiet", "score", "--unlearned", tiny_spec(preset, seed, name), "--out", str(folder)])
    if code != 0:
        raise SystemExit(f"bench_curve: uds score of {name} failed (exit {code})")
    score = json.loads((folder / "summary.json").read_text())["uds"]
    shutil.rmtree(out / ".score", ignore_errors=True)
    last = read_curve(curve_path).scored()[-1]["uds"]
    return {"last_point_uds": last, "uds_score_of_built_model": score, "last_point_minus_uds_score": last - score}


def update(out: Path, name: str, fields: dict) -> None:
    """Add `fields` to the model's existing entry of `out/overhead.json`."""
    doc = json.loads((out / "overhead.json").read_text())
    record(out, name, {**doc["models"][name], **fields})


def record(out: Path, name: str, entry: dict) -> None:
    """Put one model's entry into `out/overhead.json` (several runs may fill one file, each under
    the file's lock)."""
    from uds_core.atomic import file_lock, write_json

    path = out / "overhead.json"
    with file_lock(path):
        doc = json.loads(path.read_text()) if path.is_file() else {"models": {}}
        doc["models"][name] = entry
        doc["models"] = dict(sorted(doc["models"].items()))
        write_json(path, doc, indent=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="smol")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", required=True, help="comma-separated unlearned model names")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--metrics", default="prob,es,em,retain_q_prob")
    ap.add_argument("--keep-best", default="uds, retain_q_prob>=0.9x")
    ap.add_argument("--work", default=None, help="curve folder of the builds (default: OUT/.work-<first model>)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--score-only", action="store_true",
                    help="only `uds score` the models (built by an earlier run) against their curves' last points")
    args = ap.parse_args(argv)
    from uds.cli import main as uds_main

    names = args.models.split(",")
    out = Path(args.out)
    work = Path(args.work) if args.work else out / f".work-{names[0]}"
    out.mkdir(parents=True, exist_ok=True)
    if args.score_only:
        for name in names:
            update(out, name, score_check(args.preset, args.seed, name, out / f"{name}.jsonl", out))
        return 0
    for name in names:
        load_before, t0 = os.getloadavg(), time.perf_counter()
        code = uds_main(["world", "build", "--preset", args.preset, "--seed", str(args.seed), "--models", name,
                         "--no-quality", "--curve-every", str(args.every), "--curve-dir", str(work),
                         "--curve-metrics", args.metrics, "--keep-best", args.keep_best])
        wall = time.perf_counter() - t0
        if code != 0:
            print(f"bench_curve: building {name} failed (exit {code})", file=sys.stderr)
            return code
        shutil.copyfile(work / f"{name}.jsonl", out / f"{name}.jsonl")
        entry = {"preset": args.preset, "seed": args.seed, "every": args.every, "metrics": args.metrics.split(","),
                 "keep_best": args.keep_best, "threads": os.environ.get("OMP_NUM_THREADS"),
                 "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
                 "load_average_before": [round(x, 2) for x in load_before],
                 "load_average_after": [round(x, 2) for x in os.getloadavg()],
                 **model_overhead(out / f"{name}.jsonl", wall)}
        record(out, name, {**entry, **score_check(args.preset, args.seed, name, out / f"{name}.jsonl", out)})
        print(json.dumps({name: entry}), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(out / "overhead.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
