"""Files of `uds audit --out DIR` (docs/design.md): summary.json, grid.csv, traces.jsonl, facts.jsonl,
attribution.png and, where the published CSVs cover the cells, published_comparison.csv."""

from __future__ import annotations

import csv
import json
from pathlib import Path


def write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        path.write_text("")
        return
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def plot_attribution(path: Path, parts: dict[str, dict[str, float]], title: str,
                     chance: dict[str, float] | None = None) -> None:
    """Stacked bars, one per variant: DEL-ON correctness split into its parts (fractions), with
    each variant's chance level (`chance[variant]`, a fraction) as a dashed mark over its bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(parts)
    labels = [("parametric", "parametric (also correct with retrieval off)"),
              ("near_miss_evidence", "retrieval: near-miss entry returned the gold object"),
              ("other_retrieval", "retrieval-mediated, other")]
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(variants), 3.6))
    bottom = [0.0] * len(variants)
    for key, label in labels:
        vals = [parts[v][key] for v in variants]
        ax.bar(variants, vals, bottom=bottom, label=label)
        bottom = [b + x for b, x in zip(bottom, vals)]
    top = max(bottom)
    if chance:
        levels = [chance[v] for v in variants]
        ax.hlines(levels, [i - 0.4 for i in range(len(variants))], [i + 0.4 for i in range(len(variants))],
                  colors="black", linestyles="dashed", label="chance (majority value of the relation)")
        top = max(top, *levels)
    ax.set_ylabel("DEL-ON correctness (fraction of prompts)")
    ax.set_title(title, fontsize=9)
    ax.set_ylim(0, max(0.05, top * 1.3))
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
