"""Start-up time of the CLI against `import torch`, side by side in one run.

Times, each in a fresh interpreter and interleaved round by round (so a load spike on a shared
machine hits every command alike):

- `python -c "import torch"` (the yardstick),
- `python -m uds --help`,
- `python -m uds checkpoints list`,
- `uds score` from process start to its first model load (the loader is patched in the child to
  print a marker and exit; the models are tiny random folders made here, so nothing is trained).

Prints per command the median, min and max wall seconds over `--repeat` rounds and the ratio of
medians to `import torch`; the last line is machine-readable:
`torch_s=<x> help_ratio=<x> list_ratio=<x> score_first_load_ratio=<x>`.

    python benchmarks/bench_startup.py --repeat 5
    python benchmarks/bench_startup.py --repo ../other-checkout   # the same timings of another checkout
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
MARKER = "FIRST_MODEL_LOAD"

# In the child: make the first model load announce itself and end the process, then run the CLI.
SCORE_PROBE = f"""
import os, sys
import checkpoints.specs as specs
def first_load(*a, **k):
    print({MARKER!r}, flush=True)
    os._exit(0)
specs.load_model_from = first_load
from uds.cli import main
sys.exit(main(sys.argv[1:]))
"""


def make_models(root: Path) -> list[str]:
    """Tiny random full/retain/unlearned folders and a data file; returns the `uds score` arguments."""
    sys.path.insert(0, str(REPO))
    from tests.engine_fixtures import RECORDS, make_tokenizer, tiny_model

    tok = make_tokenizer()
    for seed, name in enumerate(("full", "retain", "unlearned")):
        model = tiny_model("llama", seed=seed, layers=2)
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
    (root / "data.json").write_text(json.dumps(RECORDS))
    return ["score", "--unlearned", str(root / "unlearned"), "--full", str(root / "full"),
            "--retain", str(root / "retain"), "--data", str(root / "data.json"), "--device", "cpu",
            "--out", str(root / "out")]


def timed(cmd: list[str], env: dict, until: str | None = None, cwd: Path = REPO) -> float:
    """Wall seconds from start to exit (or to the line `until` on stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=600)
    elapsed = time.perf_counter() - t0
    if until is not None and until not in out.splitlines():
        raise SystemExit(f"{' '.join(cmd[:4])}...: no {until} line (exit {proc.returncode}): {err.strip()[-500:]}")
    if until is None and proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.strip()[-500:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="rounds (each command once per round)")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout whose `uds` is timed (default: this one)")
    args = ap.parse_args()
    repo = args.repo.resolve()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        score_args = make_models(root)
        env = {**os.environ, "UDS_HOME": str(root / "home"), "HF_HUB_OFFLINE": "1", "UDS_QUIET": "1",
               "PYTHONPATH": str(repo)}   # an editable install elsewhere must not shadow `repo`
        commands = {
            "import torch": ([py, "-c", "import torch"], None),
            "uds --help": ([py, "-m", "uds", "--help"], None),
            "uds checkpoints list": ([py, "-m", "uds", "checkpoints", "list"], None),
            "uds score to first model load": ([py, "-c", SCORE_PROBE, *score_args], MARKER),
        }
        for cmd, until in commands.values():   # warm the file cache once, untimed
            timed(cmd, env, until, repo)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for r in range(args.repeat):
            order = list(commands) if r % 2 == 0 else list(reversed(commands))
            for name in order:
                cmd, until = commands[name]
                times[name].append(timed(cmd, env, until, repo))
    torch_s = statistics.median(times["import torch"])
    print(f"{'command':34s} {'median s':>9s} {'min s':>7s} {'max s':>7s} {'vs import torch':>16s}")
    ratios = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        ratios[name] = med / torch_s
        print(f"{name:34s} {med:9.3f} {min(ts):7.3f} {max(ts):7.3f} {ratios[name]:15.2f}x")
    print(f"torch_s={torch_s:.3f} help_ratio={ratios['uds --help']:.3f} "
          f"list_ratio={ratios['uds checkpoints list']:.3f} "
          f"score_first_load_ratio={ratios['uds score to first model load']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
