"""The benchmark leaderboard: rows (spec §6.1 aggregates), markdown / csv / html, Mem-Privacy scatter.

Rows, their default order and the printing of numbers come from `uds_leaderboard.rows`
(shared with `uds report`): references first, then Overall, then UDS, high to low; 3 decimals (4
for UDS), "0" below 1e-6 in magnitude. The csv keeps full precision.

Every column shown is "higher = better" (unlearning depth or preserved utility), so the best
value per column is the maximum over the unlearned models (the full and retain references are
shown but never marked best).
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path
from typing import Mapping, Sequence

from meta_eval.benchmark import AGGREGATE_KEYS
from uds_leaderboard.rows import REFERENCES, decimals_of, display_number
from meta_eval.names import lower_is_better, name_of
from metrics.registry import META_KEYS, REGISTRY
from metrics.utility import UTILITY_KEYS
from uds_core.numbers import finite_or_none

SHOWN = ("overall",) + tuple(k for k in AGGREGATE_KEYS if k != "overall") + ("uds", "model_utility", "fluency",
                                                                              "overall_no_uds")
ID_COLUMNS = ("model", "method", "epoch")
FORMATS = ("md", "csv", "html")


def extra_columns(rows: Sequence[Mapping]) -> tuple[str, ...]:
    """Registry metrics outside the benchmark (neither shown nor a raw key of its aggregates, e.g.
    mem_bits) that some row holds, in registry order: shown after the benchmark columns."""
    standard = set(SHOWN) | set(META_KEYS) | set(UTILITY_KEYS)
    return tuple(k for k in REGISTRY if k not in standard and any(_num(r.get(k)) is not None for r in rows))


def best_values(rows: Sequence[Mapping], columns: Sequence[str]) -> dict[str, float]:
    """Column -> best over non-reference rows: the maximum, the minimum for a knowledge-oriented
    extra column (columns without a value are left out)."""
    out = {}
    for c in columns:
        vals = [r[c] for r in rows if r.get("method") not in REFERENCES and _num(r.get(c)) is not None]
        if vals:
            out[c] = min(vals) if lower_is_better(c) else max(vals)
    return out


def _extras_note(extras: Sequence[str]) -> str:
    """The legend of the extra columns ("" when there are none: the default table is unchanged)."""
    low = [c for c in extras if lower_is_better(c)]
    if not extras:
        return ""
    return (f" Extra registry columns, in their own orientation: {', '.join(extras)}"
            + (f" (lower = better: {', '.join(low)})." if low else "."))


def _num(v) -> float | None:
    """A finite int or float as a float; None for anything else (bools, strings, NaN, missing)."""
    return finite_or_none(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _cell(v, column: str = "") -> str:
    """Markdown / html text of a cell: numbers as `display_number` prints them (the report too)."""
    n = _num(v)
    if n is not None:
        return display_number(n, decimals_of(column))
    return "" if v is None else str(v)


def csv_columns(rows: Sequence[Mapping]) -> list[str]:
    """Identity, the shown aggregates, then every raw key present (docs/design.md order)."""
    raw = [k for k in META_KEYS + UTILITY_KEYS if k not in SHOWN and any(k in r for r in rows)]
    return list(ID_COLUMNS + SHOWN) + raw + list(extra_columns(rows))


def to_markdown(rows: Sequence[Mapping]) -> str:
    extras = extra_columns(rows)
    best = best_values(rows, SHOWN + extras)
    cols = ID_COLUMNS + SHOWN + extras
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if c in ID_COLUMNS else "---:" for c in cols) + "|"]
    for r in rows:
        cells = [f"**{_cell(r.get(c), c)}**" if c in best and r.get(c) == best[c] and r.get("method") not in REFERENCES
                 else _cell(r.get(c), c) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return ("\n".join(lines) + "\n\nBold: best per column among unlearned models; every column is higher = better."
            + _extras_note(extras) + "\n")


def to_csv(rows: Sequence[Mapping]) -> str:
    cols = csv_columns(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r.get(c) is None else (repr(float(r[c])) if _num(r.get(c)) is not None else r[c])
                    for c in cols])
    return buf.getvalue()


_STYLE = """body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#eee;cursor:pointer;position:sticky;top:0}
td.id{text-align:left}tr.group td{background:#f6f6f6;font-weight:bold;text-align:left}
td.best{font-weight:bold;background:#e3f6e3}th.asc:after{content:" \\25B2"}th.desc:after{content:" \\25BC"}"""

# Sorting keeps the method groups: each group is a <tbody> whose rows are sorted in place.
_SCRIPT = """document.querySelectorAll('th').forEach(function(th,ci){th.addEventListener('click',function(){
var desc=!th.classList.contains('desc');
document.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});
th.classList.add(desc?'desc':'asc');document.querySelectorAll('tbody').forEach(function(tb){
var rows=Array.from(tb.querySelectorAll('tr.row'));rows.sort(function(a,b){
var x=a.children[ci].dataset.v,y=b.children[ci].dataset.v;var nx=parseFloat(x),ny=parseFloat(y);
if(!isNaN(nx)&&!isNaN(ny)){return desc?ny-nx:nx-ny}if(isNaN(nx)!==isNaN(ny)){return isNaN(nx)?1:-1}
return desc?String(y).localeCompare(String(x)):String(x).localeCompare(String(y))});
rows.forEach(function(r){tb.appendChild(r)})})})});"""


def _header(column: str) -> str:
    """An html header: the value's label (meta_eval/names.py) over its key, its formula and what a
    higher value means on hover."""
    n = name_of(column)
    if n is None:
        return f"<th>{html.escape(column)}</th>"
    return (f'<th title="{html.escape(n.title + "; " + n.sentence)}">{html.escape(n.label)}'
            f"<br><small>{html.escape(column)}</small></th>")


def to_html(rows: Sequence[Mapping], title: str = "Unlearning benchmark leaderboard") -> str:
    """One self-contained page: a table grouped by method (one <tbody> each), sortable by any
    column (click a header), best value per column marked."""
    extras = extra_columns(rows)
    best = best_values(rows, SHOWN + extras)
    cols = ID_COLUMNS + SHOWN + extras
    head = "".join(_header(c) for c in cols)
    bodies = []
    for method in dict.fromkeys(r.get("method") for r in rows):
        group = [r for r in rows if r.get("method") == method]
        trs = [f'<tr class="group"><td colspan="{len(cols)}">{html.escape(str(method))} ({len(group)})</td></tr>']
        for r in group:
            tds = []
            for c in cols:
                v = r.get(c)
                mark = c in best and v == best[c] and method not in REFERENCES
                cls = "id" if c in ID_COLUMNS else ("best" if mark else "")
                data = "" if v is None else html.escape(str(v))
                star = " &#9733;" if mark else ""
                tds.append(f'<td class="{cls}" data-v="{data}">{html.escape(_cell(v, c))}{star}</td>')
            trs.append('<tr class="row">' + "".join(tds) + "</tr>")
        bodies.append("<tbody>" + "\n".join(trs) + "</tbody>")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p>{len(rows)} models. Click a column header to sort (within each method). &#9733; = best per column "
            f"among unlearned models; every column is higher = better.{html.escape(_extras_note(extras))}</p>"
            f"<table><thead><tr>{head}</tr></thead>\n" + "\n".join(bodies) + f"</table><script>{_SCRIPT}</script>"
            "</body></html>\n")


RENDERERS = {"md": to_markdown, "csv": to_csv, "html": to_html}


def mem_privacy_scatter(path: Path, rows: Sequence[Mapping]) -> Path:
    """Mem (x) vs Privacy (y), one colour per method, references as black markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 5))
    methods = list(dict.fromkeys(r.get("method") for r in rows))
    cmap = plt.get_cmap("tab10")
    for i, method in enumerate(methods):
        pts = [(r["mem"], r["privacy"]) for r in rows if r.get("method") == method
               and _num(r.get("mem")) is not None and _num(r.get("privacy")) is not None]
        if not pts:
            continue
        ref = method in REFERENCES
        ax.scatter(*zip(*pts), s=60 if ref else 22, marker="X" if ref else "o",
                   color="black" if ref else cmap(i % 10), label=str(method))
    ax.set_xlabel("Mem (higher = less memorised)")
    ax.set_ylabel("Privacy = HM(MIA, UDS)")
    ax.set_title("Mem vs Privacy per model")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    from uds_core import atomic

    with atomic.atomic_file(path) as tmp:
        fig.savefig(tmp, dpi=110, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)
    return path
