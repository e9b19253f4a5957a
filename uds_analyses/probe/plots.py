"""The memory heatmap (spec-probes §2.6): documents x position, colour = verbatim hit rate."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


def heatmap_png(panels: Sequence[tuple[str, list[str], list[int], np.ndarray, list[str]]], level: str,
                path: Path) -> None:
    """One panel per model: (model name, documents, positions, (D, P) rates, group of each
    document). Non-target documents are labelled with their group, e.g. "[holdout]"; every
    panel shows the same corpus, so only the first carries the labels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(panels)
    rows = max(len(p[1]) for p in panels)
    fig, axes = plt.subplots(1, n, figsize=(2.2 + 2.8 * n, 1.2 + 0.22 * rows), squeeze=False, sharey=False)
    im = None
    for k, (ax, (name, docs, pos, rates, groups)) in enumerate(zip(axes[0], panels)):
        im = ax.imshow(np.ma.masked_invalid(rates), vmin=0, vmax=1, cmap="magma", aspect="auto",
                       interpolation="nearest")
        ax.set_title(name, fontsize=8)
        ax.set_xticks(range(len(pos)), [str(p) for p in pos], fontsize=6)
        labels = [d if g in ("target", "forget") else f"{d} [{g}]" for d, g in zip(docs, groups)]
        ax.set_yticks(range(len(docs)), labels if k == 0 else [""] * len(docs), fontsize=6)
        ax.set_xlabel("position")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label=f"verbatim hit rate ({level})")
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
