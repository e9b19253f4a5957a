"""Meta-evaluation figures: P/N histograms and before/after scatters, one panel per metric.

Values are plotted raw (the metric's own orientation, as reported), so a reader sees each metric
on the scale they know; titles carry the oriented results (AUC, Q, R).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from uds_core.numbers import finite_or_none

P_COLOR, N_COLOR, KEPT, DROPPED, RETAIN = "#1f77b4", "#ff7f0e", "#2ca02c", "#bbbbbb", "#d62728"


def _grid(n: int, title: str):
    cols = min(5, max(1, n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.7 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    fig.suptitle(title)
    # fixed margins: tight_layout costs seconds per 22-panel figure and the grid is regular
    fig.subplots_adjust(left=0.04, right=0.99, bottom=0.05, top=0.93, wspace=0.28, hspace=0.42)
    return fig, list(axes.flat)


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _present(values: Sequence[float | None]) -> list[float]:
    return [f for f in map(finite_or_none, values) if f is not None]


def pn_histograms(path: Path, pools: Mapping[str, tuple[Sequence[float | None], Sequence[float | None]]],
                  auc: Mapping[str, float | None]) -> Path:
    """One histogram panel per metric: raw values of the P pool against the N pool."""
    fig, axes = _grid(len(pools), "P (knowledge present) vs N (knowledge absent) pools, raw metric values")
    for ax, (key, (p, n)) in zip(axes, pools.items()):
        p, n = _present(p), _present(n)
        lo, hi = min(p + n, default=0.0), max(p + n, default=1.0)
        bins = [lo + (hi - lo + 1e-9) * i / 12 for i in range(13)]
        ax.hist(p, bins=bins, alpha=0.6, color=P_COLOR, label=f"P ({len(p)})")
        ax.hist(n, bins=bins, alpha=0.6, color=N_COLOR, label=f"N ({len(n)})")
        ax.set_title(f"{key}  AUC {_fmt(auc.get(key))}", fontsize=9)
        ax.tick_params(labelsize=7)
    if axes:
        axes[0].legend(fontsize=7)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def before_after(path: Path, title: str, points: Mapping[str, Sequence[tuple[float | None, float | None, bool]]],
                 scores: Mapping[str, float | None], score_name: str,
                 retain: Mapping[str, tuple[float | None, float | None]] | None = None) -> Path:
    """One scatter panel per metric: raw value before (x) vs after (y) the perturbation for each
    unlearned model (green: enters the average, grey: filtered out), the retain model as a star."""
    fig, axes = _grid(len(points), title)
    for ax, (key, pts) in zip(axes, points.items()):
        for kept, color in ((False, DROPPED), (True, KEPT)):
            xy = [(b, a) for b, a, k in pts if k == kept and b is not None and a is not None]
            if xy:
                ax.scatter(*zip(*xy), s=14, color=color, label="kept" if kept else "filtered")
        if retain and retain.get(key) and None not in retain[key]:
            ax.scatter([retain[key][0]], [retain[key][1]], marker="*", s=90, color=RETAIN, label="retain")
        vals = [v for b, a, _ in pts for v in (b, a) if v is not None] + list(retain.get(key) or () if retain else ())
        vals = [v for v in vals if v is not None]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.6, ls="--")
        ax.set_title(f"{key}  {score_name} {_fmt(scores.get(key))}", fontsize=9)
        ax.tick_params(labelsize=7)
    if axes:
        axes[0].legend(fontsize=7)
        axes[0].set_xlabel("before", fontsize=8)
        axes[0].set_ylabel("after", fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# P variants in blues, N variants in oranges, in the order `pools` lists them
P_SHADES, N_SHADES = ("#08519c", "#4292c6", "#9ecae1"), ("#a63603", "#fd8d3c", "#fdd0a2")


def pn_variant_histograms(path: Path, pools: Mapping[str, Mapping[str, Sequence[float | None]]],
                          auc: Mapping[str, float | None]) -> Path:
    """One stacked-histogram panel per metric: raw values of each pool variant (`pools[key][variant]`;
    variants named pos_* are P, the others N), so a reader sees which variants overlap."""
    variants = list(next(iter(pools.values()), {}))
    p_names = [v for v in variants if v.startswith("pos_")]
    n_names = [v for v in variants if not v.startswith("pos_")]
    colors = dict(zip(p_names, P_SHADES)) | dict(zip(n_names, N_SHADES))
    fig, axes = _grid(len(pools), "P/N pools by variant (blues: P, oranges: N), raw metric values")
    for ax, (key, by_variant) in zip(axes, pools.items()):
        present = {v: _present(by_variant.get(v, ())) for v in colors}
        every = [x for vals in present.values() for x in vals]
        lo, hi = min(every, default=0.0), max(every, default=1.0)
        bins = [lo + (hi - lo + 1e-9) * i / 12 for i in range(13)]
        names = [v for v in colors if present[v]]
        if names:
            ax.hist([present[v] for v in names], bins=bins, stacked=True, color=[colors[v] for v in names])
        ax.set_title(f"{key}  AUC {_fmt(auc.get(key))}", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.legend([plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()], list(colors),
               loc="lower right", fontsize=8, ncol=2)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
