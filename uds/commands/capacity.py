"""`uds capacity`: bits per parameter of tiny Llamas trained on uniform random sequences (spec-probes §1.2).

Writes to --out: `runs.csv` (one row per model size x dataset size), `summary.json` (capacity
per size, the fit capacity = alpha * params with R^2, the MIA sigmoid-law fit, the grid and the
convergence curve of every run), `runs.jsonl` (written as runs finish), `mem_vs_n.png`,
`capacity_vs_params.png`, `mia_f1.png`, `grid.json` (the grid the runs belong to); with
`--schedule constant` also alpha at B/8, B/4, B/2, B in summary.json and `alpha_vs_steps.png`,
and with `--cooldown F` the same from cooldown branches (each budget's run finished by a linear
LR decay over F times its steps).

Interrupted runs resume: run the same command again and the runs already in `runs.jsonl` of the
same grid are kept, not retrained (`--fresh` retrains everything).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from uds_core.errors import UdsInputError

DEFAULT_OUT = Path("out") / "capacity"
SCHEDULES = ("cosine", "constant")   # uds_analyses.capacity.models.SCHEDULES, not imported: torch loads lazily
RUN_FIELDS = {"size", "hidden", "layers", "params", "n", "seq_len", "vocab", "mem_bits", "steps", "stop",
              "mia_f1", "seconds", "curve"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("capacity", help="bits per parameter on uniform random sequences",
                              description=__doc__.splitlines()[0])
    p.add_argument("--grid", default="default", help="default (5 sizes x 6 dataset sizes), quick, or plateau "
                                                      "(constant LR, 64k steps, denser N above capacity: a GPU run)")
    p.add_argument("--quick", action="store_true", help="alias of --grid quick (a few minutes)")
    p.add_argument("--max-steps", type=int, help="training step budget per run (default: the grid's)")
    p.add_argument("--eval-every", type=int, help="steps between scorings of the whole set (default: the grid's)")
    p.add_argument("--plateau-window", type=int, help="steps over which the plateau rule asks for 1 %% growth "
                                                       "(default: the grid's)")
    p.add_argument("--schedule", choices=SCHEDULES, help="LR after warm-up: cosine decay to 0 at the budget, or "
                                                      "constant (alpha vs steps from one run; default: the grid's)")
    p.add_argument("--cooldown", type=float, help="with --schedule constant: at each reported budget s, branch "
                                                  "a run whose LR decays linearly to 0 over this fraction of s "
                                                  "steps and score it (default: the grid's; 0 = none)")
    p.add_argument("--multiples", help="dataset sizes as comma-separated multiples of the expected capacity "
                                       "3.6 * params / (S log2 V), e.g. 0.5,1,2,4 (default: the grid's)")
    p.add_argument("--device", default="cpu", help="cpu (default: the committed runs' device), cuda or auto")
    p.add_argument("--bf16", action="store_true", help="train and score under bfloat16 autocast")
    p.add_argument("--vocab", type=int, help="vocabulary V of the uniform sequences (default 64)")
    p.add_argument("--seq-len", type=int, help="sequence length S (default 32)")
    p.add_argument("--threads", type=int, help="torch threads (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help=f"output folder (default {DEFAULT_OUT}/<grid>[-bf16])")
    p.add_argument("--fresh", action="store_true", help="retrain every cell, even those an interrupted run "
                                                         "of the same grid left in --out/runs.jsonl")
    p.add_argument("--from-runs", metavar="JSONL", help="train nothing: summarise the runs.jsonl of an earlier "
                                                        "(possibly cut-short) run into --out")
    p.set_defaults(func=run, resumes=True)


def make_grid(args: argparse.Namespace):
    """The named grid with the command line's overrides; bad numbers are bad input."""
    from uds_analyses.capacity.grid import GRIDS

    name = "quick" if args.quick else args.grid
    if name not in GRIDS:
        raise UdsInputError(f"unknown grid {name!r}; valid: {', '.join(GRIDS)}")
    grid = GRIDS[name]
    for flag, value, low in (("--max-steps", args.max_steps, 1), ("--vocab", args.vocab, 2),
                             ("--seq-len", args.seq_len, 1), ("--threads", args.threads, 1),
                             ("--eval-every", args.eval_every, 1), ("--plateau-window", args.plateau_window, 1)):
        if value is not None and value < low:
            raise UdsInputError(f"{flag} must be at least {low} (got {value})")
    budget = replace(grid.budget, bf16=args.bf16, max_steps=args.max_steps or grid.budget.max_steps,
                     schedule=args.schedule or grid.budget.schedule,
                     eval_every=args.eval_every or grid.budget.eval_every,
                     plateau_window=args.plateau_window or grid.budget.plateau_window,
                     cooldown=grid.budget.cooldown if args.cooldown is None else args.cooldown)
    if not 0 <= budget.cooldown <= 1:
        raise UdsInputError(f"--cooldown must be a fraction between 0 and 1 (got {budget.cooldown})")
    if budget.cooldown and budget.schedule != "constant":
        raise UdsInputError("--cooldown branches a constant-LR run: it needs --schedule constant "
                            f"(the schedule is {budget.schedule})")
    over = {k: v for k, v in (("vocab", args.vocab), ("seq_len", args.seq_len), ("threads", args.threads),
                              ("multiples", parse_multiples(args.multiples))) if v is not None}
    from uds_core.loading import resolve_device   # torch only when the command runs

    return name, replace(grid, budget=budget, seed=args.seed, device=resolve_device(args.device), **over)


def parse_multiples(text: str | None) -> tuple[float, ...] | None:
    """'0.5,1,2' -> (0.5, 1.0, 2.0); anything but positive numbers is bad input."""
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise UdsInputError(f"--multiples must be comma-separated numbers (got {text!r})") from None
    if not all(v > 0 for v in values):
        raise UdsInputError(f"--multiples must be positive (got {text!r})")
    return values


def read_runs(path: Path) -> list[dict]:
    """The rows of a runs.jsonl; a missing, empty or malformed file is bad input."""
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        raise UdsInputError(f"cannot read runs from {path}: {e}") from None
    if not rows:
        raise UdsInputError(f"{path} holds no runs")
    bad = [i for i, r in enumerate(rows, 1) if not isinstance(r, dict) or not RUN_FIELDS <= r.keys()]
    if bad:
        raise UdsInputError(f"{path} line {bad[0]} is not a run (needs {', '.join(sorted(RUN_FIELDS))})")
    return rows


def resumable_runs(out: Path, grid_dict: dict) -> list[dict]:
    """The finished runs an interrupted run of exactly this grid left in `out` (none otherwise)."""
    runs = out / "runs.jsonl"
    try:
        same = json.loads((out / "grid.json").read_text()) == json.loads(json.dumps(grid_dict))
        any_run = bool(runs.read_text().strip())
    except (OSError, json.JSONDecodeError):
        return []
    return read_runs(runs) if same and any_run else []


def run(args: argparse.Namespace) -> int:
    from uds_analyses.capacity.grid import run_grid, summarise
    from uds_analyses.capacity.report import write_all

    name, grid = make_grid(args)
    precision = "bf16" if args.bf16 else "fp32"
    out = Path(args.out) if args.out else DEFAULT_OUT / (name + ("-bf16" if args.bf16 else ""))
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    partial = out / "runs.jsonl"     # one line per finished run: what a cut-short grid leaves
    grid_dict = grid.to_dict() | {"name": name}
    done = [] if args.from_runs or args.fresh else resumable_runs(out, grid_dict)
    if done:
        print(f"resuming: {len(done)} finished runs kept from {partial}", file=sys.stderr)
    if not args.from_runs:
        (out / "grid.json").write_text(json.dumps(grid_dict, indent=1))
        partial.write_text("".join(json.dumps(r) + "\n" for r in done))

    def progress(row: dict) -> None:
        with open(partial, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"[{time.time() - t0:7.1f} s] {row['size']:8s} params {row['params']:6d} N {row['n']:5d}: "
              f"mem {row['mem_bits']:9.0f} bits ({row['bits_per_param']:.2f}/param), {row['steps']} steps "
              f"({row['stop']}{', still rising' if row.get('rising') else ''}), MIA F1 {row['mia_f1']:.3f} "
              f"(chance {row['mia_f1_chance']:.3f}), "
              f"{row['seconds']:.1f} s ({row['cpu_seconds']:.1f} s CPU)",
              file=sys.stderr, flush=True)

    rows = read_runs(Path(args.from_runs)) if args.from_runs else run_grid(grid, progress, done)
    summary = summarise(rows, precision, grid.budget)
    write_all(out, rows, summary, grid_dict)
    fit = summary.get("fit", {})
    if fit:
        print(f"alpha = {fit['alpha']:.3f} bits/param (R2 {fit['r2_origin']:.3f} through the origin; free intercept "
              f"{fit['slope']:.3f} * params + {fit['intercept']:.0f}, R2 {fit['r2']:.3f}); published "
              f"{summary['published_alpha']} ({precision}); {time.time() - t0:.0f} s")
    for tag, suffix in (("constant LR", ""), ("cooled", "_cooled")):
        for a in summary.get("alpha_steps" + suffix, []):
            print(f"alpha({a['step']} steps, {tag}) = {a['alpha']:.3f} [{a['low']:.3f}, {a['high']:.3f}]",
                  file=sys.stderr)
        if "at_plateau" + suffix in summary:
            v = summary["at_plateau" + suffix]
            print(f"at plateau ({tag}): {v['at_plateau']} (alpha(B) - alpha(B/2) = {v['delta_alpha']:+.3f}, CI "
                  f"half-width {v['ci_halfwidth']:.3f}; capacity runs still rising: "
                  f"{', '.join(v['rising_capacity_runs']) or 'none'})", file=sys.stderr)
    print(out / "summary.json")
    return 0
