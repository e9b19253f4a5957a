"""mem_bits, mem_bits_erased and UDS of five `small` models on one build of the world, per CPU kernel set.

    python experiments/mem_bits_kernels.py --kernels native                 # the machine's own kernels
    python experiments/mem_bits_kernels.py --kernels avx2 --home /tmp/uds-avx2
    python experiments/mem_bits_kernels.py --kernels default --home /tmp/uds-default

Each call runs, with `ATEN_CPU_CAPABILITY` set to the kernel set (unset for `native`) and one torch
thread, `uds score --unlearned tiny:small/M` and `uds metrics --model tiny:small/M --metrics
mem_bits,mem_bits_erased` for the models below, in `$UDS_HOME=--home` (the world and its models
are built there when missing, so a fresh home is a fresh build under those kernels). It writes
results/mem_bits/kernels_small/<kernels>.json: the numbers, the capability torch reported, the CPU,
the models' fingerprints and the seconds. docs/mem_bits.md's `mem-bits-kernels-small` table is
rendered from those files by `python benchmarks/doc_tables.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("full", "rmu_lr1e-4_l5_s10_ep10", "npo_lr1e-4_b01_a1_ep10", "npo_lr1e-4_b01_a1_ep5",
          "simnpo_lr2e-4_b35_a1_d1_g0125_ep10")
KERNELS = ("native", "avx2", "default")


def kernel_env(kernels: str, home: Path) -> dict[str, str]:
    """The environment of one build: its home, its kernel set, one thread."""
    env = dict(os.environ, UDS_HOME=str(home), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("ATEN_CPU_CAPABILITY", None)
    if kernels != "native":
        env["ATEN_CPU_CAPABILITY"] = kernels
    return env


def uds_cli(args: list[str], env: dict[str, str]) -> float:
    """Run `python -m uds ARGS`; its wall seconds. A failure stops the benchmark."""
    t0 = time.time()
    print("+ uds " + " ".join(args), file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "uds", *args], env=env, cwd=ROOT, check=True)
    return time.time() - t0


def capability(env: dict[str, str]) -> str:
    """The CPU capability torch dispatches to under `env` (e.g. AVX512, AVX2, DEFAULT)."""
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    return subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def measure(kernels: str, home: Path, work: Path) -> dict:
    """Score and measure every model of MODELS in one build; the file's document."""
    env = kernel_env(kernels, home)
    rows = {}
    for m in MODELS:
        spec = f"tiny:small/{m}"
        score_dir, metrics_dir = work / "score" / m, work / "metrics" / m
        s_score = uds_cli(["score", "--unlearned", spec, "--out", str(score_dir)], env)
        s_metrics = uds_cli(["metrics", "--model", spec, "--metrics", "mem_bits,mem_bits_erased",
                             "--out", str(metrics_dir)], env)
        summary = json.loads((score_dir / "summary.json").read_text())
        metrics = json.loads((metrics_dir / "metrics.json").read_text())["metrics"]
        rows[m] = {"uds": summary["uds"], "n_scored": summary["n_scored"], "n_examples": summary["n_examples"],
                   "mem_bits": metrics["mem_bits"], "mem_bits_erased": metrics["mem_bits_erased"],
                   "fingerprint": summary["fingerprints"]["unlearned"],
                   "seconds": {"score": round(s_score, 1), "metrics": round(s_metrics, 1)}}
    return {"kernels": kernels, "capability": capability(env), "cpu": cpu_model(), "threads": 1,
            "date": time.strftime("%Y-%m-%d"), "models": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", choices=KERNELS, required=True)
    ap.add_argument("--home", type=Path, default=Path.home() / ".cache/uds",
                    help="UDS_HOME of the build (a fresh folder builds the world under these kernels)")
    ap.add_argument("--work", type=Path, default=None, help="folder of the score/metrics runs "
                    "(default out/mem_bits_kernels/<kernels>)")
    ap.add_argument("--out", type=Path, default=ROOT / "results/mem_bits/kernels_small")
    a = ap.parse_args(argv)
    work = a.work or ROOT / "out/mem_bits_kernels" / a.kernels
    doc = measure(a.kernels, a.home.expanduser().resolve(), work)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / f"{a.kernels}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
