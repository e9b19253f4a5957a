"""docs/mem_bits.md section 1's tables from their committed result files."""

from __future__ import annotations

import json
from pathlib import Path

from uds_analyses.doc_tables.markdown import fixed, sig, table

FIRST = ("full", "retain", "base")   # the references first, then the unlearned models by name


def _order(names: list[str]) -> list[str]:
    return [n for n in FIRST if n in names] + sorted(set(names) - set(FIRST))


def sanity_table(path: Path) -> str:
    """`experiments/mem_bits_sanity.py --out` JSON: one row per model, then the interpolation row."""
    d = json.loads(path.read_text())
    models = {k.rsplit("/", 1)[-1]: v for k, v in d["rows"].items() if not k.startswith("interp:")}
    rows = [[n, sig(models[n]["mem_bits"]), sig(models[n]["mem_bits_per_token"]), sig(models[n]["mem_bits_erased"])]
            for n in _order(list(models))]
    interp = [d["rows"][f"interp:{a:g}"] for a in d["alphas"]]
    rows.append([f"interpolation α = {', '.join(f'{a:g}' for a in d['alphas'])} (weights `(1-α)·full + α·retain`)",
                 ", ".join(sig(r["mem_bits"]) for r in interp), "",
                 ", ".join(sig(r["mem_bits_erased"]) for r in interp)])
    return table(["model", "mem_bits", "per token", "erased"], rows)


def _zero_in(lo: float, hi: float) -> str:
    return "yes (exactly)" if lo == hi == 0.0 else "yes" if lo <= 0.0 <= hi else "no"


def signed_table(folder: Path) -> str:
    """One `uds metrics --out` metrics.json per model (file name = model): clipped vs unclipped mean, CI."""
    runs = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}
    rows = []
    for n in ["retain", "full", "base"] + sorted(set(runs) - {"retain", "full", "base"}):
        m, (lo, hi) = runs[n]["metrics"], runs[n]["info"]["mem_bits_signed"]["ci95"]
        rows.append([n, f"{m['mem_bits']:.2f}", f"{m['mem_bits_signed']:.2f}", f"[{lo:.2f}, {hi:.2f}]",
                     _zero_in(lo, hi)])
    return table(["model", "mem_bits (clipped)", "mem_bits_signed (unclipped)", "95 % bootstrap CI", "0 in CI"], rows)


def meta_eval_table(path: Path) -> str:
    """`uds meta-eval --json` output: faithfulness and robustness per key, with the spec §5.5 filters
    or without them (`--no-filters`, as the file's settings say), and the models robustness kept."""
    d = json.loads(path.read_text())
    filters = d["settings"].get("filters", True)
    rows = []
    for key, f in d["faithfulness"].items():
        r = d["robustness"][key]
        rows.append([key, f"{f['auc_roc']:.2f}", sig(f["p_mean"], 3), sig(f["n_mean"], 3),
                     f"{fixed(r['quantization'])} / {fixed(r['relearning'])} / "
                     f"{fixed(d['overall'][key])} ({r['n_kept']})"])
    kept = "filters, kept models" if filters else "no filters, models"
    return table(["key", "faithfulness AUC (chance 0.5)", "P mean", "N mean", f"Q / R / overall ({kept})"], rows)


KERNEL_ORDER = ("native", "avx2", "default")


def kernels_table(folder: Path) -> str:
    """`experiments/mem_bits_kernels.py` files, one per kernel build (file name = kernel set): per model,
    mem_bits, mem_bits_erased and UDS of each build, joined by ' / ' in KERNEL_ORDER."""
    runs = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}
    builds = [k for k in KERNEL_ORDER if k in runs]
    models = list(runs[builds[0]]["models"])

    def cells(m: str, key: str, fmt: str) -> str:
        return " / ".join(format(runs[k]["models"][m][key], fmt) for k in builds)
    rows = [[m, cells(m, "mem_bits", ".3f"), cells(m, "mem_bits_erased", ".4f"), cells(m, "uds", ".6f"),
             cells(m, "n_scored", "d")] for m in models]
    head = "build: " + "; ".join(f"{k} ({runs[k]['capability']}, {runs[k]['cpu']}, {runs[k]['date']})" for k in builds)
    return head + "\n\n" + table(["model", "mem_bits " + " / ".join(builds), "mem_bits_erased", "UDS",
                                  "UDS examples scored"], rows)
