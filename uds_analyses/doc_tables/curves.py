"""docs/curves.md's tables: curves during unlearning and their cost, from `benchmarks/bench_curve.py`'s files.

When a metric moves: `t50` / `t90` are the first evaluated steps at which a key has covered half /
nine tenths of its change from the first evaluation (step 0) to the last one; a key whose
change is under `FLAT` is "flat". The earliest `t50` is the metric that moves first; a `t90`
later than the output metrics' says the key kept moving after they had settled.
"""

from __future__ import annotations

import json
from pathlib import Path

from uds_analyses.doc_tables.markdown import fixed, table
from uds_core.curves import Curve, read_curve

FLAT = 0.02   # a total change below this (in the metric's own units, all on [0, 1]) is no movement


def crossing(steps: list[int], values: list[float], fraction: float) -> int | None:
    """The first step at which |value - first| >= fraction * |last - first|; None when flat."""
    change = values[-1] - values[0]
    if abs(change) < FLAT:
        return None
    return next(s for s, v in zip(steps, values) if abs(v - values[0]) >= fraction * abs(change))


def _series(curve: Curve, key: str) -> tuple[list[int], list[float]]:
    pts = [(r["step"], r[key]) for r in curve.scored() if isinstance(r.get(key), (int, float))]
    return [s for s, _ in pts], [float(v) for _, v in pts]


def _curves(folder: Path) -> list[Curve]:
    return [read_curve(p) for p in sorted(folder.glob("*.jsonl"))]


def _keys(curve: Curve) -> list[str]:
    return ["uds", *[k for k in curve.settings.get("metrics") or [] if k != "uds"]]


def moves_table(folder: Path) -> str:
    """One row per (model, key): first and last value, t50, t90 (module docstring)."""
    rows = []
    for curve in _curves(folder):
        for key in _keys(curve):
            steps, values = _series(curve, key)
            if not steps:
                continue
            t50, t90 = crossing(steps, values, 0.5), crossing(steps, values, 0.9)
            rows.append([f"`{curve.name}`", key, fixed(values[0]), fixed(values[-1]),
                         "flat" if t50 is None else str(t50), "flat" if t90 is None else str(t90)])
    return table(["model", "key", "step 0", "last step", "t50 (step)", "t90 (step)"], rows)


def chosen_table(folder: Path) -> str:
    """One row per model: steps, evaluations, the last point's UDS beside `uds score` of the built
    model (overhead.json, when it holds it), the chosen step and its values."""
    overhead = folder / "overhead.json"
    scores = json.loads(overhead.read_text())["models"] if overhead.is_file() else {}
    rows = []
    for curve in _curves(folder):
        done, best = curve.scored(), curve.best_step()
        chosen = next((r for r in done if r["step"] == best), None)
        score = scores.get(curve.name, {}).get("uds_score_of_built_model")
        rows.append([f"`{curve.name}`", str(done[-1]["step"]), str(len(done)), f"{done[-1]['uds']:.6f}",
                     "n/a" if score is None else f"{score:.6f}", "none" if chosen is None else str(best),
                     *(("" if chosen is None else fixed(chosen.get(k))) for k in _keys(curve))])
    head = _keys(_curves(folder)[0])
    return table(["model", "steps", "evaluations", "last UDS", "`uds score` of the built model", "chosen step",
                  *(f"{k} there" for k in head)], rows)


def overhead_table(path: Path) -> str:
    """overhead.json: per model, seconds per evaluation against seconds of training."""
    rows = []
    for name, m in json.loads(path.read_text())["models"].items():
        rows.append([f"`{name}`", str(m["every"]), str(m["evaluations"]), f"{m['first_eval_seconds']:.0f}",
                     f"{m['eval_seconds_median']:.0f}", f"{m['train_seconds_per_step']:.0f}",
                     f"{m['overhead_percent']:.0f} %",
                     " / ".join(f"{x:.1f}" for x in (m["load_average_before"][0], m["load_average_after"][0]))])
    return table(["model", "N", "evaluations", "first eval (s)", "median eval (s)", "training s / step",
                  "eval time / training time", "load before / after"], rows)


def ou_check_table(path: Path) -> str:
    """ou_train_curve.json: what experiments/ou_train_curve.sh found on Open-Unlearning's trainer."""
    d = json.loads(path.read_text())
    rows = [["curve steps", ", ".join(map(str, d["curve_steps"]))],
            ["last point's UDS", repr(d["last_point_uds"])],
            *[[f"`uds score` of OU's saved model, transformers {v}", repr(u)]
              for v, u in d["uds_score_of_saved_model"].items()],
            ["max difference", f"{d['max_abs_difference']:.1e}"],
            ["losses per step with / without the callback", f"{'identical' if d['losses_identical'] else 'DIFFER'} "
             f"({len(d['losses_without'])} steps, as OU logs them)"],
            ["saved weights with / without", "identical, bit for bit" if d["same_weights"] else "DIFFER"],
            *[[f"bad input `{name}`", f"exit {b['exit']}, {'trained' if b['trained'] else 'no training'}: "
               f"`{b['stderr']}`"] for name, b in d["bad_input"].items()]]
    return table(["check", "result"], rows)
