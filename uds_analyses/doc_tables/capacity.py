"""docs/mem_bits.md section 2's capacity tables from the grids' committed runs.csv."""

from __future__ import annotations

import csv
import json
from itertools import groupby
from pathlib import Path

from uds_analyses.capacity.grid import mia_f1_chance
from uds_analyses.doc_tables.markdown import table, thousands


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


def _verdict(v: dict, what: str, rising_test: str) -> str:
    rising = ", ".join(v["rising_capacity_runs"]) or "none"
    return (f"At plateau{what}: **{'yes' if v['at_plateau'] else 'no'}** (α({thousands(v['to_step'])}) − "
            f"α({thousands(v['from_step'])}) = {v['delta_alpha']:+.2f}, CI half-width {v['ci_halfwidth']:.2f}; "
            f"capacity runs still rising {rising_test}: {rising}).")


def alpha_steps_table(path: Path) -> str:
    """alpha at each step budget of a constant-LR grid (summary.json) with its interval, each size's
    bits/param at its capacity (the N holding it; capped marked), the share of the published value,
    then the grid's plateau verdict in one line. A grid with cooldown branches gets the same
    columns for the finished runs (`alpha_steps_cooled`) and their verdict."""
    doc = json.loads(path.read_text())
    s = doc["summary"]
    pts, ref = s["alpha_steps"], s["published_alpha"]
    cooled = {a["step"]: a for a in s.get("alpha_steps_cooled", [])}
    cooldown = doc["grid"]["budget"].get("cooldown", 0.0)
    sizes = list(dict.fromkeys(c["size"] for a in pts for c in a["sizes"]))

    def cells(a: dict) -> list[str]:
        per = {c["size"]: c for c in a["sizes"]}
        return [f"**{a['alpha']:.2f}**", f"[{a['low']:.2f}, {a['high']:.2f}]",
                *(f"{per[z]['bits_per_param']:.2f} (N {thousands(per[z]['at_n'])}"
                  + (", capped)" if per[z]["capped"] else ")") for z in sizes), f"{a['alpha'] / ref:.0%}"]
    rows = [[thousands(a["step"]), *cells(a), *(cells(cooled[a["step"]]) if cooled else [])] for a in pts]
    level = round(100 * pts[0]["level"])
    part = lambda tag: [f"α{tag} (bits/param)", f"{level} % CI (LS, t, df {pts[0]['df']})",   # noqa: E731
                        *(f"{z} bits/param (N){tag}" for z in sizes), f"α / {ref} ({s['precision']}){tag}"]
    steps = f"steps s (cooled runs: s + {cooldown:.0%} of s)" if cooled else "steps"
    head = [steps, *part(""), *(part(", cooled") if cooled else [])]
    lines = [_verdict(s["at_plateau"], " (constant LR)" if cooled else "", "over their last window")]
    if "at_plateau_cooled" in s:
        lines.append(_verdict(s["at_plateau_cooled"], " (cooled runs)", "from B/2 to B"))
    return table(head, rows) + "".join(f"\n{line}\n" for line in lines)


def plateau_runs_table(path: Path) -> str:
    """One row per run of a runs.csv with the per-run plateau fields: stop reason, steps, whether
    the bits still rose over the last window (and by how much), and the cap flag; where the grid
    made cooldown branches, also the bits of the run of its last budget finished by its cooldown."""
    runs = _runs(path)
    cooled = any(r.get("cooled_mem_bits") for r in runs)
    rows = []
    for r in runs:
        gain = f"{float(r['last_window_gain']):+.1%}" if r["last_window_gain"] else "–"
        rising = {"True": "yes", "False": "no"}.get(r["rising"], "–")
        extra = ([thousands(float(r["cooled_mem_bits"])), f"{float(r['cooled_mem_bits']) / float(r['params']):.2f}"]
                 if cooled else [])
        rows.append([r["size"], thousands(float(r["params"])), thousands(r["n"]), thousands(float(r["data_bits"])),
                     thousands(float(r["mem_bits"])), f"{float(r['bits_per_param']):.2f}",
                     "yes" if r["capped"] == "True" else "no", r["stop"], thousands(float(r["steps"])),
                     f"{rising} ({gain})", *extra])
    return table(["size", "params", "N", "data bits", "mem bits", "bits/param", "capped (≥ 95 % of data)", "stop",
                  "steps", "still rising (last-window gain)",
                  *(["mem bits, cooled", "bits/param, cooled"] if cooled else [])], rows)
