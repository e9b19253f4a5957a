"""One prepared GPU run: the llama1b world's `uds score` in bfloat16 and float32, `uds metrics
--metrics all` in bfloat16, and the reference implementation beside `uds score` (float32 and
bfloat16), on CUDA, into one JSON file.

    python benchmarks/llama1b_gpu.py --out results/llama1b/gpu.json \\
        --reference-repo /path/to/unlearning-depth-score           # about 15-30 min on one H100

Everything runs in this process (CUDA peak memory from the allocator, reset per step); the
reference runs in a child process in its own checkout (`experiments/reference_uds.py`) on the same
model folders and the first `--n-reference` annotated items, and `uds score --parity reference`
scores the same items right after it. Without a reference checkout that part is left out (said in
the file). tests/test_llama1b_gpu.py runs this script on the CPU at a tiny size (the `test` world,
a few items, a few metrics) so that it keeps working between GPU sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DTYPES = ("bfloat16", "float32")


def _cuda_peak_reset(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _cuda_peak_gb(device: str) -> float | None:
    import torch

    if device != "cuda":
        return None
    torch.cuda.synchronize()
    return round(torch.cuda.max_memory_allocated() / 1e9, 3)


def _release() -> None:
    from uds_core.memory import release_memory

    release_memory()


def _timed_cli(cmd: list[str], device: str) -> tuple[int, float, float | None]:
    """A `uds` command in this process: (exit status, wall seconds, CUDA peak GB), memory released after."""
    from uds.cli import main

    _cuda_peak_reset(device)
    t0 = time.time()
    code = main(cmd)
    wall = time.time() - t0
    peak = _cuda_peak_gb(device)
    _release()
    return code, wall, peak


def score(args: argparse.Namespace, dtype: str, out: Path, data: Path | None = None,
          parity: str = "spec") -> dict:
    """`uds score` in this process: wall seconds, CUDA peak, UDS and per-example values."""
    cmd = ["score", "--unlearned", f"tiny:{args.preset}/{args.unlearned}", "--device", args.device,
           "--dtype", dtype, "--batch-size", str(args.batch_size), "--no-s1-cache", "--parity", parity,
           "--out", str(out)] + (["--data", str(data)] if data else [])
    code, wall, peak = _timed_cli(cmd, args.device)
    if code != 0:
        raise SystemExit(f"uds {' '.join(cmd)} exited {code}")
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    return {"command": "uds " + " ".join(cmd[:-2] if not data else cmd), "wall_s": round(wall, 2),
            "cuda_peak_gb": peak, "uds": summary["uds"], "n_scored": summary["n_scored"],
            "examples": [{k: r.get(k) for k in ("idx", "uds", "s1_delta", "s2_delta")} for r in rows]}


def metrics(args: argparse.Namespace, out: Path) -> dict:
    cmd = ["metrics", "--model", f"tiny:{args.preset}/{args.unlearned}", "--metrics", args.metrics,
           "--device", args.device, "--dtype", "bfloat16", "--batch-size", str(args.metrics_batch_size),
           "--out", str(out)]
    code, wall, peak = _timed_cli(cmd, args.device)
    values = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}
    return {"command": "uds " + " ".join(cmd[:-2]), "exit_status": code, "wall_s": round(wall, 2),
            "cuda_peak_gb": peak, "outputs": values}


def reference_side_by_side(args: argparse.Namespace, dtype: str, tmp: Path) -> dict:
    """The reference (child) then `uds score --parity reference` on the first N annotated items."""
    sys.path.insert(0, str(REPO / "experiments"))
    from llama1b import compare

    from checkpoints.specs import default_tofu_annotated
    from checkpoints.world.build import ensure_model

    folders = {n: ensure_model(args.preset, 0, n, progress=False) for n in ("full", "retain", args.unlearned)}
    data = tmp / f"data_{dtype}.json"
    data.write_text(json.dumps(json.loads(default_tofu_annotated().read_text())[:args.n_reference]))
    ref_out = tmp / f"reference_{dtype}.json"
    cmd = [sys.executable, str(REPO / "experiments" / "reference_uds.py"), "--repo", str(args.reference_repo),
           "score", "--full", str(folders["full"]), "--retain", str(folders["retain"]),
           "--unlearned", str(folders[args.unlearned]), "--data", str(data), "--out", str(ref_out),
           "--n-examples", str(args.n_reference), "--batch-size", str(args.batch_size), "--dtype", dtype,
           "--device", args.device, "--threads", str(os.cpu_count() or 1)]
    t0 = time.time()
    subprocess.run(cmd, check=True)
    ref_wall = time.time() - t0
    reference = json.loads(ref_out.read_text())
    ours = score(args, dtype, tmp / f"ours_{dtype}", data, parity="reference")
    d_uds, d_s1, d_s2, nulls = compare(reference["examples"], {r["idx"]: r for r in ours["examples"]})
    return {"n_examples": args.n_reference, "reference_wall_s": round(ref_wall, 2),
            "reference_compute_s": round(reference["seconds"], 2), "ours_wall_s": ours["wall_s"],
            "speedup_wall": round(ref_wall / ours["wall_s"], 2), "null_mismatches": nulls,
            "max_abs_uds_diff": max(d_uds) if d_uds else None, "max_abs_s1_delta_diff": max(d_s1),
            "max_abs_s2_delta_diff": max(d_s2), "n_uds_compared": len(d_uds)}


def environment(args: argparse.Namespace) -> dict:
    import torch
    import transformers

    git = lambda *a: subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()  # noqa: E731
    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" and torch.cuda.is_available() else None
    return {"commit": git("rev-parse", "HEAD"),
            "command": "python benchmarks/llama1b_gpu.py " + " ".join(sys.argv[1:]),
            "device": args.device, "gpu": gpu, "torch": torch.__version__, "transformers": transformers.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--preset", default="llama1b", help="world preset (test: the tiny CPU check)")
    p.add_argument("--unlearned", default="unlearned", help="the world's unlearned model")
    p.add_argument("--batch-size", type=int, default=8, help="uds score and reference batch (spec §2.9: 8 for 1B)")
    p.add_argument("--metrics", default="all")
    p.add_argument("--metrics-batch-size", type=int, default=32)
    p.add_argument("--n-reference", type=int, default=50, help="items of the reference comparison")
    p.add_argument("--reference-repo", type=Path, default=os.environ.get("UDS_REFERENCE_REPO"),
                   help="a checkout of gnueaj/unlearning-depth-score (default: $UDS_REFERENCE_REPO)")
    p.add_argument("--skip", default="", help="comma-separated steps to leave out: score, metrics, reference")
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("llama1b_gpu.py: no CUDA device visible (use --device cpu for the tiny check)", file=sys.stderr)
        return 2
    skip = set(filter(None, args.skip.split(",")))
    doc = {**environment(args), "preset": args.preset, "unlearned": args.unlearned, "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory(prefix="llama1b-gpu-") as tmp:
        tmp = Path(tmp)
        if "score" not in skip:
            runs = {dtype: score(args, dtype, tmp / f"score_{dtype}") for dtype in DTYPES}
            fp32 = {r["idx"]: r["uds"] for r in runs["float32"]["examples"]}
            diffs = [abs(r["uds"] - fp32[r["idx"]]) for r in runs["bfloat16"]["examples"]
                     if r["uds"] is not None and fp32.get(r["idx"]) is not None]
            doc["score"] = {d: {k: v for k, v in r.items() if k != "examples"} for d, r in runs.items()}
            doc["score"]["bf16_vs_fp32"] = {"n_both_scored": len(diffs), "max_abs_uds_diff": max(diffs, default=None),
                                            "mean_abs_uds_diff": sum(diffs) / len(diffs) if diffs else None}
        if "metrics" not in skip:
            doc["metrics"] = metrics(args, tmp / "metrics")
        if "reference" not in skip:
            if args.reference_repo and (Path(args.reference_repo) / "compute_uds.py").is_file():
                doc["reference"] = {d: reference_side_by_side(args, d, tmp) for d in ("float32", "bfloat16")}
            else:
                doc["reference"] = {"left_out": "no reference checkout (--reference-repo / $UDS_REFERENCE_REPO)"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
