"""Files `uds score` writes (docs/design.md): summary.json, examples.jsonl, layers.csv, layers.png."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from uds_core import atomic, formula
from uds_core.engine import UdsResult
from uds_core.numbers import finite_or_none

NO_KE_LAYER = "no_ke_layer"
CSV_FIELDS = ("idx", "layer", "s1_score", "s2_score", "s1_delta", "s2_delta", "ratio", "ratio_clipped", "ke")



def _order(result: UdsResult, order: Sequence[Any] | None) -> list[tuple[str, int]]:
    """(kind, index) of every example, in data order when `order` (the data's idx list) is given."""
    rows = [("item", i) for i in range(len(result.items))] + [("skip", i) for i in range(len(result.skipped))]
    if order is None:
        return rows
    rank = {str(idx): n for n, idx in enumerate(order)}
    def idx_of(r):
        return (result.items if r[0] == "item" else result.skipped)[r[1]].idx
    return sorted(rows, key=lambda r: rank.get(str(idx_of(r)), len(rank)))


def example_records(result: UdsResult, order: Sequence[Any] | None = None) -> list[dict]:
    """One dict per example (examples.jsonl), skipped ones included with their reason."""
    d1, d2, ke = result.s1.deltas, result.s2.deltas, result.ke_layers
    out = []
    for kind, i in _order(result, order):
        if kind == "skip":
            sk = result.skipped[i]
            out.append({"idx": sk.idx, "uds": None, "skipped_reason": sk.reason, "ke_layers": [],
                        "s1_delta": None, "s2_delta": None, "full_score": None, "eval_span": None,
                        "prompt": sk.prompt, "reference": sk.reference})
            continue
        it, value = result.items[i], result.uds[i]
        out.append({"idx": it.idx, "uds": value, "skipped_reason": None if value is not None else NO_KE_LAYER,
                    "ke_layers": ke[i], "s1_delta": [finite_or_none(x) for x in d1[i]],
                    "s2_delta": [finite_or_none(x) for x in d2[i]],
                    "full_score": finite_or_none(result.s1.full_scores[i]),
                    "s1_score": [finite_or_none(x) for x in result.s1.patched[i]],
                    "s2_score": [finite_or_none(x) for x in result.s2.patched[i]], "eval_span": list(it.span),
                    "prompt": it.prompt, "reference": it.reference})
    return out


def summary_fields(result: UdsResult) -> dict:
    """The score part of summary.json (the caller adds models, settings and timing)."""
    reasons = Counter(sk.reason for sk in result.skipped)
    reasons.update(NO_KE_LAYER for v in result.uds if v is None)
    n_scored = sum(v is not None for v in result.uds)
    ci = formula.bootstrap_ci(result.uds)
    return {"uds": result.mean, "n_examples": len(result.items) + len(result.skipped), "n_scored": n_scored,
            "n_skipped": len(result.items) + len(result.skipped) - n_scored, "tau": result.tau,
            "layers": len(result.s1.layers), "ci95": list(ci) if ci else None,
            "skipped_reasons": dict(sorted(reasons.items()))}


def headline(summary: dict) -> str:
    """The line `uds score` prints: mean UDS, the examples scored and the 95 % bootstrap interval."""
    ci = summary["ci95"]
    ci_text = f"; 95% CI [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
    return f"UDS = {summary['uds']:.6f} ({summary['n_scored']} of {summary['n_examples']} examples scored{ci_text})"


def write_layers_csv(path: Path, result: UdsResult) -> None:
    """One row per (example, layer); ratio only where |Δ_S1| > 1e-12 (empty cell otherwise)."""
    d1, d2 = result.s1.deltas, result.s2.deltas
    raw, clipped = formula.raw_ratio(d2, d1), formula.clipped_ratio(d2, d1)
    ke = formula.ke_mask(d1, result.tau)
    with atomic.atomic_file(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for i, it in enumerate(result.items):
            for j, layer in enumerate(result.s1.layers):
                cells = (result.s1.patched[i, j], result.s2.patched[i, j], d1[i, j], d2[i, j], raw[i, j], clipped[i, j])
                w.writerow([it.idx, layer, *("" if finite_or_none(c) is None else repr(float(c)) for c in cells),
                            int(ke[i, j])])


def plot_layers(path: Path, result: UdsResult, title: str = "") -> None:
    """Mean S1/S2 deltas per layer (left axis) and mean erasure ratio over KE examples (right)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    layers = result.s1.layers
    d1, d2 = result.s1.deltas, result.s2.deltas
    ke = formula.ke_mask(d1, result.tau)
    ler = np.where(ke, formula.clipped_ratio(d2, d1), np.nan)
    fig, ax = plt.subplots(figsize=(8, 5))
    if len(result.items):
        ax.plot(layers, d1.mean(axis=0), "o-", label="mean Δ S1 (retain → full)")
        ax.plot(layers, d2.mean(axis=0), "s-", label="mean Δ S2 (unlearned → full)")
    ax.axhline(result.tau, color="grey", ls=":", lw=1, label=f"τ = {result.tau:g}")
    ax.set_xlabel("layer")
    ax.set_ylabel("Δ log-prob of entity (nats)")
    ax2 = ax.twinx()
    counts = ke.sum(axis=0)
    if len(result.items) and counts.any():
        means = np.array([np.nanmean(ler[:, j]) if counts[j] else np.nan for j in range(len(layers))])
        ax2.plot(layers, means, "^--", color="tab:green", label="mean erasure ratio (KE examples)")
    ax2.set_ylim(-0.05, 1.05)
    ax2.set_ylabel("erasure ratio")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    n = sum(v is not None for v in result.uds)
    ax.set_title(f"UDS = {result.mean:.4f} ({n} examples scored){' · ' + title if title else ''}")
    fig.tight_layout()
    with atomic.atomic_file(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)


def write_report(out_dir: str | Path, result: UdsResult, meta: dict, order: Sequence[Any] | None = None,
                 title: str = "") -> dict:
    """Write the four files; returns the summary dict (score fields + `meta`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {**summary_fields(result), **meta}
    # each file atomic (never half written); summary.json last, so its presence means a whole run
    atomic.write_text(out / "examples.jsonl",
                      "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in example_records(result, order)))
    write_layers_csv(out / "layers.csv", result)
    plot_layers(out / "layers.png", result, title)
    atomic.write_json(out / "summary.json", summary, indent=2, ensure_ascii=False)
    return summary
