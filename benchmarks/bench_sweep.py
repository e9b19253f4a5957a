"""Sweep executors: scheduling overhead per task, and a test-zoo meta-eval serial vs Ray.

    UDS_HOME=... python benchmarks/bench_sweep.py [--tasks 200] [--zoo tiny:test] [--metrics all] [--max-new-tokens 200]
                                                [--serial-one-thread] [--skip-zoo]

1. Overhead: `--tasks` no-op tasks (they return a record at once) through `RayExecutor` on a local
   cluster of `--workers` CPUs, the executor's own loop, bar and records included; per task =
   wall / tasks (throughput) and the round trip of one task alone (latency), after a warm-up.
2. Meta-eval: `uds meta-eval --zoo Z --built-only --metrics M` run as subprocesses, `--executor ray`
   (a local cluster sized to the machine) then serial (and, with --serial-one-thread, serial with
   OMP_NUM_THREADS=1, the one thread Ray gives a 1-CPU task), each on a fresh measurement cache (the S1 cache under
   $UDS_HOME is shared; relearned copies are per cache), wall times and their ratio; checks that
   faithfulness, robustness and overall are equal number for number.
Ends with one line `noop_per_task_s=<x> noop_latency_s=<x> [ray_s=<x> serial_s=<x> speedup=<x> equal=<bool> ...]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from meta_eval.tasks import DONE, TaskRecord


@dataclass(frozen=True)
class NoopTask:
    label: str


def noop(task: NoopTask, attempts_dir=None) -> TaskRecord:
    return TaskRecord(task.label, DONE)


def noops(n: int, tag: str) -> list[NoopTask]:
    return [NoopTask(f"{tag}/{i}") for i in range(n)]


def overhead(n: int, workers: int) -> tuple[float, float]:
    """(wall per task of n no-op tasks, round trip of one no-op task), seconds."""
    import ray

    from meta_eval.ray_executor import RayExecutor

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        ex = RayExecutor(None, cpus_per_task=1, task_fn=noop)
        ex.run([noops(workers * 2, 'warm')], lambda s: None)              # warm-up: workers started
        t0 = time.perf_counter()
        ex.run([noops(n, 'run')], lambda s: None)
        per_task = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        for i in range(5):
            ex.run([noops(1, f'one{i}')], lambda s: None)
        latency = (time.perf_counter() - t0) / 5
    finally:
        ray.shutdown()
    return per_task, latency


def meta_eval(zoo: str, metrics: str, max_new_tokens: int, executor: str, workdir: Path,
              threads: int | None = None) -> tuple[float, dict]:
    """Wall time and meta_eval.json of one run on a fresh cache (`threads`: OMP_NUM_THREADS)."""
    name = f"{executor}-{threads or 'default'}"
    out = workdir / name
    cmd = [sys.executable, "-m", "uds", "meta-eval", "--zoo", zoo, "--built-only", "--metrics", metrics,
           "--max-new-tokens", str(max_new_tokens), "--cache", str(workdir / f"cache-{name}"), "--out", str(out),
           "--executor", executor]
    env = dict(os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {}))
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    return wall, json.loads((out / "meta_eval.json").read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=200)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--zoo", default="tiny:test")
    p.add_argument("--metrics", default="all")
    p.add_argument("--max-new-tokens", type=int, default=200)
    p.add_argument("--serial-one-thread", action="store_true",
                   help="also a serial run with OMP_NUM_THREADS=1 (Ray gives each 1-CPU task one thread)")
    p.add_argument("--skip-zoo", action="store_true", help="only the no-op overhead")
    args = p.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    per_task, latency = overhead(args.tasks, args.workers)
    print(f"no-op tasks: {args.tasks} in {per_task * args.tasks:.2f} s = {per_task * 1e3:.1f} ms per task; "
          f"one task alone: {latency * 1e3:.1f} ms")
    line = f"noop_per_task_s={per_task:.4f} noop_latency_s={latency:.4f}"
    if not args.skip_zoo:
        with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
            run = lambda executor, threads=None: meta_eval(args.zoo, args.metrics, args.max_new_tokens,  # noqa: E731
                                                           executor, Path(tmp), threads)
            on_ray, doc_r = run("ray")
            serial, doc_s = run("local")
            one = run("local", 1) if args.serial_one_thread else None
        equal = all(doc_s[k] == doc_r[k] for k in ("faithfulness", "robustness", "overall"))
        print(f"meta-eval {args.zoo} --metrics {args.metrics}: ray ({os.cpu_count()} CPUs) {on_ray:.1f} s, "
              f"serial {serial:.1f} s, speedup {serial / on_ray:.2f}x, equal numbers: {equal}")
        line += f" ray_s={on_ray:.1f} serial_s={serial:.1f} speedup={serial / on_ray:.2f} equal={equal}"
        if one is not None:
            equal1 = all(one[1][k] == doc_r[k] for k in ("faithfulness", "robustness", "overall"))
            print(f"serial with OMP_NUM_THREADS=1: {one[0]:.1f} s, speedup of ray over it {one[0] / on_ray:.2f}x, "
                  f"equal numbers: {equal1}")
            line += f" serial_1thread_s={one[0]:.1f}"
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print(line)


if __name__ == "__main__":
    main()
