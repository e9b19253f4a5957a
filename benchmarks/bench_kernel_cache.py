"""oneDNN's kernel cache bounded (ONEDNN_PRIMITIVE_CACHE_CAPACITY=128) against its default, side by side.

Each round runs the same S1 sweep (full <- retain, fast engine, batch 8) of the first N annotated
items of a world twice, each in a fresh interpreter with one torch thread: once with
ONEDNN_PRIMITIVE_CACHE_CAPACITY at oneDNN's default (1024) and once at BOUNDED (128). A thread in
each child samples its anonymous resident memory (RssAnon: heap, not the mapped weight files)
every 20 ms; after each group of examples the engine releases freed memory, and the child records
RssAnon then and the peak since the group before. Prints per capacity the anonymous memory after
the first and the last group (its growth per group), the peak, the wall time of the sweep, the
ratio of the times, and whether the patched scores are identical (a cache only keeps compiled
kernels, so they must be); `--json` writes them.

    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_cache.py --preset llama1b --dtype bfloat16 --n-examples 96 \\
        --rounds 2 --json results/llama1b/kernel_cache.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CAPACITY = 1024   # oneDNN's own default
BOUNDED = 128             # a few dozen shapes recur in every layer of a pass; across groups they change

CHILD = r"""
import json, sys, threading, time
import torch
torch.set_num_threads(1)
from checkpoints.specs import load_model, load_tokenizer
from checkpoints.world.store import ensure_world_data
from uds_core import engine
from uds_core.prompts import prepare_examples

preset, dtype, n = sys.argv[1], getattr(torch, sys.argv[2]), int(sys.argv[3])
records = json.loads((ensure_world_data(preset, 0) / "uds_data.json").read_text())[:n]
full = load_model(f"tiny:{preset}/full", dtype=dtype)
retain = load_model(f"tiny:{preset}/retain", dtype=dtype)
examples = prepare_examples(records, load_tokenizer(f"tiny:{preset}/full"))

def anon_gb():
    text = open("/proc/self/status").read()
    return int(text.split("RssAnon:")[1].split()[0]) * 1024 / 1e9

peak = [anon_gb()]
def watch():
    while True:
        peak[0] = max(peak[0], anon_gb())
        time.sleep(0.02)
threading.Thread(target=watch, daemon=True).start()
groups, release = [], engine.release_memory
def recorded_release():
    group_peak = peak[0]
    release()
    groups.append({"peak_gb": round(group_peak, 3), "after_release_gb": round(anon_gb(), 3)})
    peak[0] = groups[-1]["after_release_gb"]
engine.release_memory = recorded_release
t0 = time.perf_counter()
pairs = engine.score_pair(full, retain, examples.items, engine.EngineSettings(batch_size=8))
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "groups": groups, "patched": pairs.patched.tolist()}))
"""


def run_child(preset: str, dtype: str, n: int, capacity: int) -> dict:
    env = {**os.environ, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": str(capacity), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", CHILD, preset, dtype, str(n)], env=env, capture_output=True,
                          text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"child (capacity {capacity}) failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summary(runs: list[dict]) -> dict:
    groups = runs[0]["groups"]
    growth = (groups[-1]["after_release_gb"] - groups[0]["after_release_gb"]) / max(1, len(groups) - 1)
    return {"wall_s": [round(r["wall_s"], 1) for r in runs], "median_wall_s": round(statistics.median(
            r["wall_s"] for r in runs), 1), "groups": len(groups),
            "anon_after_first_group_gb": groups[0]["after_release_gb"],
            "anon_after_last_group_gb": groups[-1]["after_release_gb"],
            "growth_per_group_gb": round(growth, 4), "peak_anon_gb": max(g["peak_gb"] for g in groups)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="llama1b")
    p.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16"))
    p.add_argument("--n-examples", type=int, default=96)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    capacities = (DEFAULT_CAPACITY, BOUNDED)
    runs: dict[int, list[dict]] = {c: [] for c in capacities}
    for r in range(args.rounds):
        order = capacities if r % 2 == 0 else capacities[::-1]   # alternate who goes first
        for c in order:
            runs[c].append(run_child(args.preset, args.dtype, args.n_examples, c))
            print(f"round {r + 1}, capacity {c}: {runs[c][-1]['wall_s']:.1f} s", flush=True)
    identical = all(run["patched"] == runs[capacities[0]][0]["patched"] for c in capacities for run in runs[c])
    out = {str(c): summary(runs[c]) for c in capacities}
    ratio = out[str(BOUNDED)]["median_wall_s"] / out[str(DEFAULT_CAPACITY)]["median_wall_s"]
    for c in capacities:
        s = out[str(c)]
        print(f"capacity {c:5d}: anonymous memory after group 1 {s['anon_after_first_group_gb']:.2f} GB, after group "
              f"{s['groups']} {s['anon_after_last_group_gb']:.2f} GB ({s['growth_per_group_gb']:+.3f} GB per group), "
              f"peak {s['peak_anon_gb']:.2f} GB; sweep {s['median_wall_s']:.1f} s (median of {args.rounds})")
    print(f"time bounded / default: {ratio:.3f}; patched scores identical: {identical}")
    if args.json:
        from meta_eval.campaign.machine import cpu_name

        doc = {"command": "python benchmarks/bench_kernel_cache.py " + " ".join(argv or sys.argv[1:]),
               "preset": args.preset, "dtype": args.dtype, "n_examples": args.n_examples, "rounds": args.rounds,
               "capacities": out, "time_ratio_bounded_over_default": round(ratio, 3),
               "patched_identical": identical, "cpu": cpu_name(), "machine": platform.machine(),
               "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                                        text=True).stdout.strip(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"wrote {args.json}")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
