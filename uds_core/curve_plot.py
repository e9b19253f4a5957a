"""The figure of training curves (`uds curve`): one panel per curve file.

x: optimiser step (0 = the model before training); y: UDS (black, thick) and every output metric
the curve recorded, all on [0, 1]: knowledge metrics (higher = more of the forget set known)
dashed, utility metrics dotted, erasure metrics solid. The checkpoint the curve's rule chose is
marked (a vertical line and a star on UDS); failed evaluations are red crosses on the x axis.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from uds_core import atomic
from uds_core.curves import Curve

STYLE = {"erasure": "-", "knowledge": "--", "utility": ":"}


def curve_keys(curve: Curve, keys: Sequence[str] | None = None) -> list[str]:
    """The keys drawn for `curve`: `keys` where it recorded them, else all it recorded (UDS first)."""
    recorded = ["uds", *[k for k in curve.settings.get("metrics") or [] if k != "uds"]]
    return [k for k in recorded if keys is None or k in keys]


def _series(curve: Curve, key: str) -> tuple[list[int], list[float]]:
    pts = [(r["step"], r[key]) for r in curve.scored() if isinstance(r.get(key), (int, float))]
    return [p[0] for p in pts], [float(p[1]) for p in pts]


def _panel(ax, curve: Curve, keys: Sequence[str], colours: dict[str, str]) -> None:
    orientation = curve.settings.get("orientation") or {}
    for key in keys:
        x, y = _series(curve, key)
        if key == "uds":
            ax.plot(x, y, "-", color="black", lw=2.4, label="UDS", zorder=3)
        else:
            ax.plot(x, y, STYLE.get(orientation.get(key), "-"), color=colours[key], lw=1.4, label=key)
    best = curve.best_step()
    if best is not None:
        ax.axvline(best, color="tab:green", lw=1, alpha=0.7)
        uds_at = next((r.get("uds") for r in curve.scored() if r["step"] == best), None)
        if uds_at is not None:
            ax.plot([best], [uds_at], "*", color="tab:green", ms=14, zorder=4, label="chosen checkpoint")
    failed = [r["step"] for r in curve.records if "error" in r]
    if failed:
        ax.plot(failed, [0.0] * len(failed), "x", color="red", ms=8, label="evaluation failed", clip_on=False)
    rule = curve.settings.get("best")
    ax.set_title(curve.name + (f"\nchosen by: {rule}" if best is not None and rule else ""), fontsize=9)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("optimiser step")
    ax.grid(alpha=0.3)


def plot_curves(curves: Sequence[Curve], path: str | Path, keys: Sequence[str] | None = None) -> Path:
    """Write the figure of `curves` (one panel each, shared legend) to `path` (PNG, atomically)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = [curve_keys(c, keys) for c in curves]
    others = list(dict.fromkeys(k for ks in drawn for k in ks if k != "uds"))
    palette = plt.get_cmap("tab10").colors
    colours = {k: palette[i % len(palette)] for i, k in enumerate(others)}
    cols = min(2, len(curves))
    rows = math.ceil(len(curves) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols + 2.3, 3.9 * rows), squeeze=False, sharey=True)
    for ax, curve, ks in zip(axes.flat, curves, drawn):
        _panel(ax, curve, ks, colours)
    for ax in list(axes.flat)[len(curves):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("value")
    handles: dict[str, object] = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    right = 1 - 2.3 / fig.get_figwidth()   # the legend's column, right of the panels
    fig.tight_layout(rect=(0, 0, right, 1))
    fig.legend(handles.values(), handles.keys(), loc="center left", bbox_to_anchor=(right, 0.5), fontsize=8,
               frameon=False)
    path = Path(path)
    with atomic.atomic_file(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return path
