"""The ranked markdown summary of a meta-evaluation (one row per metric key)."""

from __future__ import annotations

from typing import Sequence

from metrics.registry import REGISTRY


def _f(v, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def ranked_keys(doc: dict, keys: Sequence[str]) -> list[str]:
    """Keys by overall (descending), then faithfulness AUC; undefined values last."""
    def rank(k: str):
        o, a = doc["overall"].get(k), doc["faithfulness"][k]["auc_roc"]
        return (o is None, -(o or 0.0), a is None, -(a or 0.0), k)
    return sorted(keys, key=rank)


def summary_markdown(doc: dict, title: str, notes: Sequence[str] = ()) -> str:
    """Ranked table: faithfulness AUC [95% CI], raw P/N means, Q, R, robustness, overall, one row
    per key in the document's `ranking` (which `meta_evaluate` fills with `ranked_keys`)."""
    lines = [f"# {title}", ""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    lines += ["| rank | key | category | Faith AUC | 95% CI | P mean | N mean | Q | R | Robustness | Overall | kept |",
              "|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for i, k in enumerate(doc["ranking"], 1):
        f, r = doc["faithfulness"][k], doc["robustness"][k]
        ci = f"[{f['ci95'][0]:.3f}, {f['ci95'][1]:.3f}]" if f.get("ci95") else "n/a"
        lines.append(f"| {i} | {k} | {REGISTRY[k].category} | {_f(f['auc_roc'])} | {ci} | {_f(f['p_mean'])} | "
                     f"{_f(f['n_mean'])} | {_f(r['quantization'], 4)} | {_f(r['relearning'], 4)} | "
                     f"{_f(r['agg'], 4)} | {_f(doc['overall'][k])} | {r['n_kept']} |")
    return "\n".join(lines) + "\n"
