"""Files of the capacity experiment: runs.csv, summary.json and the plots (matplotlib, Agg)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from uds_analyses.capacity.fit import PRINTED_LAW, sigmoid_law
from uds_analyses.capacity.grid import mia_f1_chance

CSV_FIELDS = ("size", "hidden", "layers", "params", "n", "seq_len", "vocab", "data_bits", "mem_bits",
              "bits_per_param", "capacity_bits", "alpha_size", "capped", "schedule", "steps", "stop", "rising",
              "last_window_gain", "cooldown", "cooled_mem_bits", "mia_f1", "mia_f1_chance",
              "mia_threshold_bits", "seconds", "cpu_seconds")


def write_csv(path: Path, rows: list[dict], summary: dict) -> Path:
    """One row per run, with its size's capacity and bits per parameter next to it."""
    cap = {s["size"]: s for s in summary["sizes"]}
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            cooled = r["branches"][-1][1] if r.get("branches") else ""   # the run's last budget, finished
            w.writerow(r | {"capacity_bits": cap[r["size"]]["capacity_bits"], "cooled_mem_bits": cooled,
                            "alpha_size": cap[r["size"]]["bits_per_param"], "mia_f1_chance": mia_f1_chance(r)})
    return path


def write_summary(path: Path, summary: dict, grid: dict, rows: list[dict]) -> Path:
    curves = {f"{r['size']}/{r['n']}": r["curve"] for r in rows}
    branches = {f"{r['size']}/{r['n']}": r["branches"] for r in rows if r.get("branches")}
    path.write_text(json.dumps({"summary": summary, "grid": grid, "curves": curves,
                                **({"branches": branches} if branches else {})}, indent=1))
    return path


def _saved(fig, path: Path) -> Path:
    """Write a finished figure as PNG and free it."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    _plt().close(fig)
    return path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_mem_vs_n(path: Path, rows: list[dict], summary: dict) -> Path:
    """Memorised bits against dataset size, one line per model size; dashed: its capacity."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for s in summary["sizes"]:
        mine = sorted((r for r in rows if r["size"] == s["size"]), key=lambda r: r["n"])
        line, = ax.plot([r["n"] for r in mine], [r["mem_bits"] for r in mine], "o-",
                        label=f"{s['size']} ({s['params']:,} params)")
        ax.axhline(s["capacity_bits"], color=line.get_color(), ls=":", lw=0.8)
    ns = np.array(sorted({r["n"] for r in rows}), dtype=float)
    ax.plot(ns, ns * rows[0]["seq_len"] * np.log2(rows[0]["vocab"]), "k--", lw=0.8, label="all data (N S log2 V)")
    ax.set(xscale="log", yscale="log", xlabel="training sequences N", ylabel="memorised bits",
           title=f"memorisation vs dataset size ({summary['precision']})")
    ax.legend(fontsize=7)
    return _saved(fig, path)


def plot_capacity_vs_params(path: Path, summary: dict) -> Path:
    """Capacity per size against parameters with the through-origin fit and the published slope."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    p = np.array([s["params"] for s in summary["sizes"]], dtype=float)
    c = np.array([s["capacity_bits"] for s in summary["sizes"]])
    ax.plot(p, c, "o", label="capacity (max over N)")
    grid = np.linspace(0, p.max() * 1.05, 50)
    if "fit" in summary:
        f = summary["fit"]
        ax.plot(grid, f["alpha"] * grid, "-", label=f"fit: {f['alpha']:.2f} bits/param (R2 {f['r2_origin']:.3f})")
    if summary.get("published_alpha"):
        ax.plot(grid, summary["published_alpha"] * grid, "k:", label=f"published {summary['published_alpha']}")
    ax.set(xlabel="parameters", ylabel="capacity (bits)", title=f"capacity vs parameters ({summary['precision']})")
    ax.legend(fontsize=8)
    return _saved(fig, path)


def plot_mia(path: Path, summary: dict) -> Path:
    """MIA best-threshold F1 against capacity / |D|, with the fitted and the printed sigmoid law and
    each run's chance level (F1 of calling every sequence a member, from its class balance)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    r = np.array([m["capacity_over_n"] for m in summary["mia"]])
    ax.plot(r, [m["f1"] for m in summary["mia"]], "o", label="runs")
    ax.plot(r, [m["f1_chance"] if "f1_chance" in m else mia_f1_chance(m) for m in summary["mia"]], "x",
            color="0.5", label="chance (all predicted member)")
    grid = np.geomspace(r.min(), r.max(), 100)
    law = summary.get("sigmoid_law", {})
    if "c1" in law:
        ax.plot(grid, sigmoid_law(grid, law["c1"], law["c2"], law["c3"]), "-",
                label=f"fit c=({law['c1']:.2f}, {law['c2']:.3g}, {law['c3']:.2f}), rmse {law['rmse']:.3f}")
    ax.plot(grid, sigmoid_law(grid, *PRINTED_LAW), "k:", label="printed constants")
    ax.set(xscale="log", xlabel="capacity (bits) / |D| (sequences)", ylabel="MIA F1 (best threshold)",
           title="membership inference vs capacity per sequence")
    ax.legend(fontsize=7)
    return _saved(fig, path)


def _alpha_line(ax, pts: list[dict], label: str, fmt: str) -> None:
    """alpha(s) with its interval error bars."""
    steps = np.array([a["step"] for a in pts], dtype=float)
    alpha = np.array([a["alpha"] for a in pts])
    err = np.array([[a["alpha"] - a["low"] for a in pts], [a["high"] - a["alpha"] for a in pts]])
    level = int(round(100 * pts[0]["level"]))
    ax.errorbar(steps, alpha, yerr=err, fmt=fmt, capsize=3, label=f"{label}, {level} % CI (LS, t, df {pts[0]['df']})")


def plot_alpha_vs_steps(path: Path, summary: dict) -> Path:
    """alpha(s) with its interval against the step budget s (log2 axis), each size's bits/param at
    its capacity, alpha of the cooled branches where the grid made them, and the published fp32 /
    bf16 values."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    pts = summary["alpha_steps"]
    _alpha_line(ax, pts, "alpha(s), constant LR", "o-")
    if summary.get("alpha_steps_cooled"):
        _alpha_line(ax, summary["alpha_steps_cooled"], "alpha(s), run finished by its cooldown", "s-")
    for size in dict.fromkeys(c["size"] for a in pts for c in a["sizes"]):
        mine = [(a["step"], c["bits_per_param"]) for a in pts for c in a["sizes"] if c["size"] == size]
        ax.plot(*zip(*mine), ".:", lw=0.8, label=f"{size} bits/param (constant LR)")
    for prec, value in (("fp32", 3.83), ("bf16", 3.51)):
        ax.axhline(value, color="k", ls="--" if prec == "fp32" else ":", lw=0.8, label=f"published {value} ({prec})")
    ax.set(xscale="log", xlabel="step budget s (constant LR: the first s steps of each run)",
           ylabel="bits per parameter", title="capacity per parameter vs training steps")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7)
    return _saved(fig, path)


def write_all(out: Path, rows: list[dict], summary: dict, grid: dict) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = [write_csv(out / "runs.csv", rows, summary), write_summary(out / "summary.json", summary, grid, rows),
             plot_mem_vs_n(out / "mem_vs_n.png", rows, summary),
             plot_capacity_vs_params(out / "capacity_vs_params.png", summary), plot_mia(out / "mia_f1.png", summary)]
    if summary.get("alpha_steps"):
        files.append(plot_alpha_vs_steps(out / "alpha_vs_steps.png", summary))
    return files
