"""docs/mem_bits.md section 2's capacity tables from the grids' committed runs.csv."""

from __future__ import annotations

import csv
from itertools import groupby
from pathlib import Path

from analyses.capacity.grid import mia_f1_chance
from analyses.doc_tables.markdown import table, thousands


def _runs(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return [{**r, "n": int(r["n"])} for r in csv.DictReader(fh)]


def _is_capacity(r: dict) -> bool:
    # capacity of a size = its largest mem over N, so the run holding it carries exactly that value
    return float(r["mem_bits"]) == float(r["capacity_bits"])


def quick_table(path: Path) -> str:
    """One row per run; bits/param in bold at each size's capacity."""
    rows = []
    for r in _runs(path):
        bpp = f"{float(r['bits_per_param']):.2f}"
        rows.append([r["size"], thousands(float(r["params"])), thousands(r["n"]), thousands(float(r["mem_bits"])),
                     f"**{bpp}**" if _is_capacity(r) else bpp, r["stop"], f"{float(r['mia_f1']):.3f}",
                     f"{mia_f1_chance(r):.3f}"])
    return table(["size", "params", "N", "mem bits", "bits/param", "stop", "MIA F1", "chance F1"], rows)


def _cell(r: dict) -> str:
    bits = thousands(float(r["mem_bits"]))
    return (f"{thousands(r['n'])}: " + (f"**{bits}**" if _is_capacity(r) else bits)
            + (" p" if r["stop"] == "plateau" else ""))


def default_table(path: Path) -> str:
    """One row per size: memorised bits at each N (plateau-rule stops marked p), capacity, bits/param."""
    rows = []
    for size, group in groupby(_runs(path), key=lambda r: r["size"]):
        g = list(group)
        rows.append([size, thousands(float(g[0]["params"])), ", ".join(map(_cell, g)),
                     thousands(float(g[0]["capacity_bits"])), f"**{float(g[0]['alpha_size']):.2f}**"])
    return table(["size", "params", "N: memorised bits (plateau-rule stops marked p)", "capacity", "bits/param"], rows)
