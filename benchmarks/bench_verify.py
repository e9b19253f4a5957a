"""What checking cached files by content costs a `uds score`: the time inside the digest checks,
side by side with the score's own time, for each hash, in one run.

Each round runs `uds score --unlearned SPEC` (a tiny-world spec) in fresh interpreters (no digest
remembered from an earlier run), in rotating order, once per variant:
- `xxh3_128` and `sha256`: the world's digest manifests recorded in that hash beforehand (outside
  the timing); the child times every outermost call of the manifest checks
  (`uds_core.manifest.verify`, `verify_or_record`) and counts the bytes they hashed;
- `off`: `uds_core.manifest.verify` patched to pass without reading a byte (a size-only check).
Every variant with the S1 cache hit (a warm-up run fills it: the shorter score, so the larger
share) and with `--no-s1-cache`. CPU seconds (the child's process time; one torch thread) are
the figure that load on a shared machine disturbs least; wall seconds are printed beside them.
The manifests are left in xxh3-128 (what the toolkit writes).

Prints per round and the medians; `--out FILE` writes them as JSON (docs/reliability.md's table is
generated from it). The last line is `verify_cpu_s=<x> score_cpu_s=<x> share_pct=<x>` (xxh3-128,
S1 cache hit, medians).

    OMP_NUM_THREADS=1 UDS_HOME=/tmp/bench_home python benchmarks/bench_verify.py --rounds 5 \\
        --out results/smol/verify_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))   # this checkout's packages, also in this process
DEFAULT_SPEC = "tiny:smol-ci/npo_lr3e-5_b01_a1_ep2"
MB = 1 << 20   # "MB" in this script's output and JSON: MiB
VARIANTS = ("xxh3_128", "sha256", "off")
S1_MODES = ("s1_hit", "s1_off")

# In the child: time the manifest checks (outermost calls only) or switch them off, run the CLI,
# print one JSON line.
CHILD = """
import json, os, sys, time
from uds_core import digests, manifest
state = {"wall": 0.0, "cpu": 0.0, "bytes": 0, "depth": 0}
def timed(fn):
    def wrapper(*a, **k):
        state["depth"] += 1
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **k)
        finally:
            state["depth"] -= 1
            if state["depth"] == 0:
                state["wall"] += time.perf_counter() - t0
                state["cpu"] += time.process_time() - c0
    return wrapper
real_digest = manifest.file_digest
def counting_digest(path, hash_name):
    if not digests.is_remembered(path, hash_name):
        state["bytes"] += os.path.getsize(path)
    return real_digest(path, hash_name)
if os.environ["BENCH_VERIFY"] == "on":
    manifest.verify, manifest.verify_or_record = timed(manifest.verify), timed(manifest.verify_or_record)
    manifest.file_digest = counting_digest
else:
    manifest.verify = lambda folder: None
from uds.cli import main
t0, c0 = time.perf_counter(), time.process_time()
code = main(sys.argv[1:])
print("BENCH " + json.dumps({"code": code, "score_s": time.perf_counter() - t0, "score_cpu_s": time.process_time() - c0,
                             "verify_s": state["wall"], "verify_cpu_s": state["cpu"],
                             "hashed_mb": state["bytes"] / (1 << 20)}), flush=True)
"""


def run_child(args: list[str], verify: str, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=REPO, env={**env, "BENCH_VERIFY": verify},
                          capture_output=True, text=True, timeout=3600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BENCH ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"uds {' '.join(args)} ({verify}) failed: {proc.stderr.strip()[-800:]}")
    return json.loads(lines[-1][len("BENCH "):])


def record_manifests(world: Path, hash_name: str) -> None:
    """Record every manifest of the world's folders in `hash_name` (untimed)."""
    from uds_core import manifest

    manifest.HASH = hash_name
    for path in sorted(world.rglob(manifest.MANIFEST)):
        if json.loads(path.read_text()).get("hash") != hash_name:
            manifest.record(path.parent)


def hash_rates(path: Path) -> dict:
    """MiB/s of each hash over `path`, read from the page cache."""
    from uds_core.digests import HASHES

    out = {}
    for name, make in HASHES.items():
        h, t0 = make(), time.perf_counter()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(MB), b""):
                h.update(block)
        out[name] = path.stat().st_size / MB / (time.perf_counter() - t0)
    return out


def one_round(i: int, modes: dict, world: Path, env: dict) -> dict:
    """Every (S1 mode, variant) once, the variants' order rotated by round."""
    order = VARIANTS[i % 3:] + VARIANTS[:i % 3]
    row = {}
    for mode, args in modes.items():
        for v in order:
            if v != "off":
                record_manifests(world, v)
            row[f"{mode}/{v}"] = run_child(args, "off" if v == "off" else "on", env)
    return row


def summarise(rounds: list[dict]) -> dict:
    """Per (S1 mode, variant): medians over rounds of each timing, and the checks' CPU share."""
    out = {}
    for key in rounds[0]:
        runs = [r[key] for r in rounds]
        med = {k: statistics.median(run[k] for run in runs) for k in runs[0] if k != "code"}
        med["share_pct"] = 100 * med["verify_cpu_s"] / med["score_cpu_s"]
        out[key] = med
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=DEFAULT_SPEC, help=f"unlearned tiny-world model (default {DEFAULT_SPEC})")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the measurements as JSON")
    a = ap.parse_args()
    from checkpoints.specs import model_source, parse_tiny
    from uds_core.paths import world_dir
    from meta_eval.campaign.machine import cpu_name

    world = world_dir(*parse_tiny(a.spec)[:2])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "UDS_QUIET": "1"}
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        base = ["score", "--unlearned", a.spec, "--device", "cpu", "--out", str(Path(tmp) / "out")]
        run_child(base, "on", env)   # warm-up: builds what is missing, fills the S1 cache and the page cache
        modes = {"s1_hit": base, "s1_off": base + ["--no-s1-cache"]}
        rounds = []
        for i in range(a.rounds):
            rounds.append(one_round(i, modes, world, env))
            print(f"round {i + 1}: " + "  ".join(f"{k} {r['score_cpu_s']:.1f}/{r['verify_cpu_s']:.2f} s"
                                                  for k, r in rounds[-1].items()), flush=True)
    record_manifests(world, "xxh3_128")
    rates = hash_rates(Path(model_source(a.spec)) / "model.safetensors")
    summary = summarise(rounds)
    for key, s in summary.items():
        print(f"{key}: score {s['score_cpu_s']:.1f} CPU s ({s['score_s']:.1f} wall), checks "
              f"{s['verify_cpu_s']:.2f} CPU s ({s['verify_s']:.2f} wall, {s['hashed_mb']:.0f} MiB hashed) = "
              f"{s['share_pct']:.1f} % of the CPU time")
    print("hash rates (MiB/s, page cache): " + ", ".join(f"{k} {v:.0f}" for k, v in rates.items()))
    if a.out:
        doc = {"spec": a.spec, "rounds": rounds, "median": summary, "hash_mb_per_s": rates,
               "threads": os.environ.get("OMP_NUM_THREADS"), "cpu": cpu_name(), "cores": os.cpu_count(),
               "load_average": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        a.out.write_text(json.dumps(doc, indent=1) + "\n")
    hit = summary["s1_hit/xxh3_128"]
    print(f"verify_cpu_s={hit['verify_cpu_s']:.3f} score_cpu_s={hit['score_cpu_s']:.3f} "
          f"share_pct={hit['share_pct']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
