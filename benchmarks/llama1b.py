"""The users' model at its scale on this machine: the `llama1b` world (Llama-3.2-1B architecture,
Llama 3 tokenizer and chat format, random weights; docs/llama1b.md) through `uds score`, `uds
metrics` and the reference implementation, each result a JSON file under docs/llama1b/.

    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python benchmarks/llama1b.py score --dtype float32
    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python benchmarks/llama1b.py score --dtype bfloat16
    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python benchmarks/llama1b.py parity --n-examples 50
    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python benchmarks/llama1b.py metrics --dtype bfloat16
    python benchmarks/llama1b.py alignment        # prompts, labels, spans (no model)
    python benchmarks/doc_tables.py               # docs/llama1b.md's tables from these files

`score`: `uds score` in a fresh interpreter (S1 cache off, so S1 and S2 both run), its wall time
and peak RSS (the child's ru_maxrss), and per-example UDS and deltas for the bf16-vs-fp32 table.
`parity`: the reference implementation (its own `compute_uds.py` functions, in a child process
with its checkout first on sys.path) and `uds score`'s engine on the same first N annotated items
and the same model folders, one after the other in one run: max |dUDS|, max |d delta| (S1, S2),
the wall time of each and their ratio. `metrics`: `uds metrics --metrics all` in-process, with the
phase clock of the performance benchmark (benchmarks/measure_profile.py) and a loading phase.
Every file records the code commit, the command line, the machine's threads and the models'
recipe digests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

PRESET = "llama1b"
MODELS = ("full", "retain", "unlearned")
OUT = REPO / "docs" / "llama1b"
REFERENCE_ENV = "UDS_REFERENCE_REPO"   # a checkout of gnueaj/unlearning-depth-score (its compute_uds.py)


# ---------------------------------------------------------------------------------------------
# Shared


def spec(name: str) -> str:
    return f"tiny:{PRESET}/{name}"


def ensure_models() -> dict[str, Path]:
    from checkpoints.world.build import ensure_model

    return {name: ensure_model(PRESET, 0, name, progress=False) for name in MODELS}


def provenance(argv: list[str]) -> dict:
    """Code commit, command, machine and the models' recipe digests."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    folders = ensure_models()
    digests = {n: json.loads((f / "recipe.json").read_text())["digest"] for n, f in folders.items()}
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "command": "python benchmarks/llama1b.py " + " ".join(argv), "machine": platform.machine(),
            "cpus": os.cpu_count(), "threads": int(os.environ.get("OMP_NUM_THREADS", "0") or 0),
            "torch_threads": _torch_threads(), "recipes": digests,
            "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return path


def peak_rss_gb() -> float:
    """This process's peak resident set (VmHWM), GB (1e9 bytes)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e9
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def child_peak_rss_gb() -> float:
    """Largest peak resident set of the waited-for children, GB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e9


def records(n: int | None) -> list[dict]:
    from checkpoints.world.store import ensure_world_data

    recs = json.loads((ensure_world_data(PRESET, 0) / "uds_data.json").read_text())
    return recs[:n] if n else recs


# ---------------------------------------------------------------------------------------------
# uds metrics


def run_metrics(args: argparse.Namespace, argv: list[str]) -> int:
    import torch

    from measure_profile import PhaseClock, instrument
    from checkpoints import specs as spec_mod
    from unittest import mock

    torch.set_num_threads(args.threads)
    meta = provenance(argv)
    clock = PhaseClock()
    load = spec_mod.load_model

    def timed_load(*a, **kw):
        with clock.phase("loading"):
            return load(*a, **kw)

    out_dir = Path(tempfile.mkdtemp(prefix="llama1b-metrics-"))
    from uds.cli import main

    cmd = ["metrics", "--model", spec(args.model), "--metrics", args.metrics, "--dtype", args.dtype,
           "--batch-size", str(args.batch_size), "--max-new-tokens", str(args.max_new_tokens), "--out", str(out_dir)]
    t0 = time.time()
    with instrument(clock), mock.patch.object(spec_mod, "load_model", timed_load):
        clock.reset()
        code = main(cmd)
    wall = time.time() - t0
    snap = clock.snapshot()
    produced = {p.name: json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))}
    doc = {**meta, "what": "uds metrics --metrics all on the llama1b world", "uds_command": "uds " + " ".join(cmd[:-2]),
           "exit_status": code, "wall_s": round(wall, 1), "peak_rss_gb": round(peak_rss_gb(), 3),
           "phases": snap, "dtype": args.dtype, "batch_size": args.batch_size,
           "max_new_tokens": args.max_new_tokens, "outputs": produced}
    write(args.out or OUT / f"metrics_{args.dtype}.json", doc)
    return code


# ---------------------------------------------------------------------------------------------
# CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("metrics", help="uds metrics --metrics all, phases, wall, peak RSS")
    m.add_argument("--model", default="unlearned")
    m.add_argument("--metrics", default="all")
    m.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16"))
    m.add_argument("--batch-size", type=int, default=16)
    m.add_argument("--max-new-tokens", type=int, default=200)
    m.add_argument("--threads", type=int, default=1)
    m.add_argument("--out", type=Path)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    return {"metrics": run_metrics}[args.cmd](args, argv)


if __name__ == "__main__":
    raise SystemExit(main())
