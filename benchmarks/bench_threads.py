"""Two one-thread measurements side by side, or one two-thread measurement after the other?

On a machine with C cores, a meta-evaluation can measure its (model, setting) units one at a time
with C torch threads, or C at a time with one thread each. This runs the same units both ways in
one invocation (rounds alternate which way goes first) and prints the wall time of each way and
their ratio; `--json` writes them. Each unit is a separate Python process measuring one
(model, setting) of the zoo with a fresh work cache, as a worker would.

    python benchmarks/bench_threads.py --preset smol-ci --units orig:npo_lr3e-5_b01_a1_ep2,nf4:npo_lr3e-5_b01_a1_ep2 \\
        --json results/smol/bench_threads.json [--pause-pid PID]

`--pause-pid` stops another process (SIGSTOP) for the duration of the timing and resumes it
(SIGCONT) at the end, so that a background campaign does not share the cores being measured.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WORKER = """
import sys, torch
torch.set_num_threads(int(sys.argv[1]))
from pathlib import Path
from meta_eval.measure import BENCHMARK_EXTRA, Job, Measurer
from meta_eval.perturb import zoo_relearn_config
from meta_eval.population import tiny_zoo
from meta_eval.store import MeasurementStore
from metrics.context import EvalSettings
from metrics.registry import META_KEYS
zoo = tiny_zoo("tiny:" + sys.argv[2])
setting, name, scratch = sys.argv[3], sys.argv[4], Path(sys.argv[5])
member = next(m for m in zoo.members if m.name == name)
settings = EvalSettings(batch_size=32, max_new_tokens=128, system_prompt=zoo.system_prompt, progress=False)
recipe = zoo_relearn_config(zoo.preset)
m = Measurer(zoo, MeasurementStore(scratch / "store"), scratch / "relearned", settings, recipe)
keys = tuple(META_KEYS) + (BENCHMARK_EXTRA if setting == "orig" else ())
m.run(Job(member, setting, keys))
"""


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="smol-ci")
    p.add_argument("--units", required=True, help="comma-separated setting:model, as many as --cores")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--pause-pid", type=int, default=None)
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def run_units(units: list[tuple[str, str]], threads: int, parallel: bool, preset: str) -> float:
    """Wall seconds to measure `units` (each in its own process) sequentially or all at once."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "UDS_QUIET": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        cmds = [[sys.executable, "-c", WORKER, str(threads), preset, s, n, str(Path(tmp) / f"u{i}")]
                for i, (s, n) in enumerate(units)]
        t0 = time.perf_counter()
        if parallel:
            procs = [subprocess.Popen(c, cwd=REPO, env=env, stdout=subprocess.DEVNULL) for c in cmds]
            codes = [p.wait() for p in procs]
        else:
            codes = [subprocess.run(c, cwd=REPO, env=env, stdout=subprocess.DEVNULL).returncode for c in cmds]
        seconds = time.perf_counter() - t0
    if any(codes):
        raise SystemExit(f"a worker failed (exit codes {codes})")
    return seconds


def main(argv=None) -> int:
    args = parse_args(argv)
    units = [tuple(u.split(":", 1)) for u in args.units.split(",")]
    ways = {"sequential, {} threads".format(args.cores): (args.cores, False),
            "side by side, 1 thread each": (1, True)}
    # warm the caches both ways share (built models, S1 entry, page cache), untimed
    run_units(units[:1], args.cores, False, args.preset)
    if args.pause_pid:
        os.kill(args.pause_pid, signal.SIGSTOP)
    times: dict[str, list[float]] = {w: [] for w in ways}
    try:
        for r in range(args.rounds):
            order = list(ways) if r % 2 == 0 else list(ways)[::-1]
            for way in order:
                threads, parallel = ways[way]
                times[way].append(round(run_units(units, threads, parallel, args.preset), 1))
                print(f"round {r}: {way}: {times[way][-1]} s", file=sys.stderr, flush=True)
    finally:
        if args.pause_pid:
            os.kill(args.pause_pid, signal.SIGCONT)
    med = {w: sorted(t)[len(t) // 2] for w, t in times.items()}
    seq, par = med[list(ways)[0]], med[list(ways)[1]]
    out = {"preset": args.preset, "units": [":".join(u) for u in units], "cores": args.cores,
           "os_cpu_count": os.cpu_count(), "rounds": args.rounds, "seconds": times, "median_seconds": med,
           "sequential_over_side_by_side": round(seq / par, 3),
           "faster": list(ways)[1] if par < seq else list(ways)[0]}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
