"""What checking cached files by content costs a `uds score`: seconds inside the digest checks,
side by side with the score's own seconds, in one run.

Each round runs `uds score --unlearned SPEC` in fresh interpreters (no digest remembered from an
earlier run), in alternating order:
- `on`: as shipped; the child times every outermost call of the manifest checks
  (`core.manifest.verify`, `verify_or_record`) and counts the bytes it hashed;
- `off`: `core.manifest.verify` patched to pass without reading a byte (what a size-only check
  cost before).
Both with the S1 cache hit (a warm-up run fills it: the shorter score, so the larger share) and
with `--no-s1-cache`. Also timed on the unlearned model's weights file: sha256 (what the
manifests use) and, when the package is installed, xxh3-128 (the fast alternative).

Prints per round and the medians; `--out FILE` writes them as JSON. The last line is
`verify_s=<x> score_s=<x> share_pct=<x>` (medians, S1 cache hit).

    OMP_NUM_THREADS=1 UDS_HOME=/tmp/bench_home python benchmarks/bench_verify.py --rounds 3 \\
        --out docs/smol/verify_cost.json
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
MB = 1 << 20

# In the child: time the manifest checks (outermost calls only) or switch them off, run the CLI,
# print one JSON line.
CHILD = """
import json, os, sys, time
from core import digests, manifest
state = {"s": 0.0, "bytes": 0, "depth": 0}
def timed(fn):
    def wrapper(*a, **k):
        state["depth"] += 1
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            state["depth"] -= 1
            if state["depth"] == 0:
                state["s"] += time.perf_counter() - t0
    return wrapper
real_sha = manifest.file_sha256
def counting_sha(path):
    if digests._stat_key(path) not in digests._SHA256:
        state["bytes"] += os.path.getsize(path)
    return real_sha(path)
if os.environ["BENCH_VERIFY"] == "on":
    manifest.verify, manifest.verify_or_record = timed(manifest.verify), timed(manifest.verify_or_record)
    manifest.file_sha256 = counting_sha
else:
    manifest.verify = lambda folder: None
from uds.cli import main
t0 = time.perf_counter()
code = main(sys.argv[1:])
print("BENCH " + json.dumps({"code": code, "score_s": time.perf_counter() - t0, "verify_s": state["s"],
                             "hashed_mb": state["bytes"] / (1 << 20)}), flush=True)
"""


def run_child(args: list[str], verify: str, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=REPO, env={**env, "BENCH_VERIFY": verify},
                          capture_output=True, text=True, timeout=3600)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("BENCH ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"uds {' '.join(args)} ({verify}) failed: {proc.stderr.strip()[-800:]}")
    return json.loads(lines[-1][len("BENCH "):])


def hash_rates(path: Path) -> dict:
    """MB/s of sha256 and (if installed) xxh3-128 over `path`, read from the page cache."""
    import hashlib

    makers = {"sha256": hashlib.sha256}
    try:
        import xxhash

        makers["xxh3_128"] = xxhash.xxh3_128
    except ImportError:
        pass
    out = {}
    for name, make in makers.items():
        h, t0 = make(), time.perf_counter()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(MB), b""):
                h.update(block)
        out[name] = path.stat().st_size / MB / (time.perf_counter() - t0)
    return out


def median_of(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=DEFAULT_SPEC, help=f"unlearned model (default {DEFAULT_SPEC})")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the measurements as JSON")
    a = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "UDS_QUIET": "1"}
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        base = ["score", "--unlearned", a.spec, "--device", "cpu", "--out", str(Path(tmp) / "out")]
        run_child(base, "on", env)   # warm-up: builds what is missing, fills the S1 cache and the page cache
        modes = {"s1_hit": base, "s1_off": base + ["--no-s1-cache"]}
        rounds = []
        for i in range(a.rounds):
            order = ("on", "off") if i % 2 == 0 else ("off", "on")
            row = {f"{mode}/{v}": run_child(args, v, env) for mode, args in modes.items() for v in order}
            rounds.append(row)
            print(f"round {i + 1}: " + "  ".join(f"{k} score {r['score_s']:.1f} s verify {r['verify_s']:.2f} s"
                                                  for k, r in row.items()), flush=True)
    from checkpoints.specs import model_source   # after the runs: the model is built by now
    from meta_eval.campaign import cpu_name

    rates = hash_rates(Path(model_source(a.spec)) / "model.safetensors")
    summary = summarise(rounds)
    for mode, s in summary.items():
        print(f"{mode}: score {s['score_on_s']:.1f} s with verification, {s['score_off_s']:.1f} s without; "
              f"{s['verify_s']:.2f} s inside verification ({s['hashed_mb']:.0f} MB hashed) = "
              f"{s['share_pct']:.1f} % of the score")
    print("hash rates (MB/s, page cache): " + ", ".join(f"{k} {v:.0f}" for k, v in rates.items()))
    if a.out:
        doc = {"spec": a.spec, "rounds": rounds, "median": summary, "hash_mb_per_s": rates,
               "threads": os.environ.get("OMP_NUM_THREADS"), "cpu": cpu_name(), "cores": os.cpu_count(),
               "load_average": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        a.out.write_text(json.dumps(doc, indent=1) + "\n")
    hit = summary["s1_hit"]
    print(f"verify_s={hit['verify_s']:.3f} score_s={hit['score_on_s']:.3f} share_pct={hit['share_pct']:.2f}")
    return 0


def summarise(rounds: list[dict]) -> dict:
    """Per S1 mode: median score seconds on / off, median seconds inside verification, its share."""
    out = {}
    for mode in ("s1_hit", "s1_off"):
        on = [r[f"{mode}/on"] for r in rounds]
        off = [r[f"{mode}/off"] for r in rounds]
        verify, score = median_of(on, "verify_s"), median_of(on, "score_s")
        out[mode] = {"score_on_s": score, "score_off_s": median_of(off, "score_s"), "verify_s": verify,
                     "hashed_mb": median_of(on, "hashed_mb"), "share_pct": 100 * verify / score}
    return out


if __name__ == "__main__":
    sys.exit(main())
