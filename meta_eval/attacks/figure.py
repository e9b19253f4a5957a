"""The figure of `uds attack`: per attack, the model's recovered knowledge beside the retain model's."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

MODEL_COLOR, RETAIN_COLOR = "#1f77b4", "#bbbbbb"


def attack_figure(path: Path, report: dict) -> Path:
    """Grouped bars (share of forget questions answered with the entity, 0-1); an attack that did
    not run is marked n/a."""
    rows = report["attacks"]
    names = list(rows)
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(names), 3.2))
    for offset, side, color in ((-0.2, "model", MODEL_COLOR), (0.2, "retain", RETAIN_COLOR)):
        values = [rows[n][side] for n in names]
        ax.bar([i + offset for i in range(len(names))], [v or 0.0 for v in values], width=0.4, color=color,
               label=report[side] if side == "model" else f"retain ({report['retain']})")
        for i, v in enumerate(values):
            if v is None:
                ax.text(i + offset, 0.02, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("forget questions answered\nwith the entity", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(f"what an attacker recovers ({report['n_questions']} questions)", fontsize=9)
    fig.subplots_adjust(left=0.14, right=0.98, bottom=0.3, top=0.88)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rho_figure(path: Path, result: dict) -> Path:
    """Per metric, Spearman's rho (with its interval) between the value as built and the knowledge
    the strongest attack recovers, over the unlearned models."""
    rows = [(k, r) for k, r in result["rho_strongest"].items()]
    fig, ax = plt.subplots(figsize=(7.5, 0.25 * len(rows) + 1.0))
    for i, (k, r) in enumerate(rows):
        if r["rho"] is None:
            ax.text(0, i, "n/a", va="center", fontsize=7)
            continue
        ax.plot([r["rho"]], [i], "o", color=MODEL_COLOR)
        if r["ci95"]:
            ax.plot(r["ci95"], [i, i], "-", color=MODEL_COLOR)
    ax.axvline(0, color=RETAIN_COLOR, lw=0.8)
    ax.set_yticks(range(len(rows)), [k for k, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(-1, 1)
    ax.set_xlabel("Spearman rho: value as built (higher = more knowledge) vs knowledge recovered", fontsize=8)
    fig.subplots_adjust(left=0.22, right=0.98, bottom=0.12, top=0.98)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
