"""The published audit's per-state CSV next to ours, for the same database x prompt-file cells."""

from __future__ import annotations

import csv
from pathlib import Path

COLUMNS = ("exact_match", "contains_match", "unknown_rate", "f1")
CROSS = ("parametric_leakage", "retrieval_mediated_correctness", "retrieval_artifact_rate")


def read_published(path: Path) -> dict[tuple[str, str, str], dict]:
    """{(prompt file, database path, state): row} with paths relative to the data folder."""
    out = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            key = (_rel(row["prompt_file"]), _rel(row["database_path"]), row["state"])
            out[key] = row
    return out


def read_cross(path: Path) -> dict[tuple[str, str], dict]:
    with open(path, newline="") as fh:
        return {(_rel(r["prompt_file"]), _rel(r["database_path"])): r for r in csv.DictReader(fh)}


def _rel(p: str) -> str:
    return p.split("data/", 1)[1] if p.startswith("data/") else p


def _match(ours: Path, theirs: str) -> bool:
    return str(ours.resolve()).endswith("/" + theirs)


def side_by_side(cells: list[dict], files: dict[tuple[str, str], tuple[Path, Path]],
                 per_state: Path, cross: Path | None = None) -> list[dict]:
    """Rows (variant, style, state, ours_<col>, published_<col>) for cells whose (prompt file,
    database) is in the published CSV; `files[(variant, style)] = (prompt file, database file)`."""
    pub = read_published(per_state)
    crs = read_cross(cross) if cross and cross.is_file() else {}
    out = []
    for c in cells:
        pf, dbf = files.get((c["variant"], c["style"]), (None, None))
        if pf is None:
            continue
        key = next((k for k in pub if k[2] == c["state"] and _match(pf, k[0]) and _match(dbf, k[1])), None)
        if key is None:
            continue
        row = {"variant": c["variant"], "style": c["style"], "state": c["state"], "database": key[1]}
        for col in COLUMNS:
            row[f"ours_{col}"], row[f"published_{col}"] = c[col], float(pub[key][col])
        xr = crs.get(key[:2])
        if xr is not None and c["state"] == "DEL-ON":
            for col in CROSS:
                row[f"ours_{col}"], row[f"published_{col}"] = c.get(col), float(xr[col])
        out.append(row)
    return out


# -- the published CSVs' own claims, recomputed per cell (docs/audit.md cites the result) -------

def cell_name(prompt_file: str) -> tuple[str, str, str]:
    """(domain, variant, style) from `data/custom_databases/<domain>/prompts/<variant>/prompts_<style>.jsonl`
    or `data/released_database/prompts/prompts_<style>.jsonl`."""
    parts = _rel(prompt_file).split("/")
    style = parts[-1].removeprefix("prompts_").removesuffix(".jsonl")
    if parts[0] == "released_database":
        return "released", "released", style
    return parts[1], parts[3], style


def published_cells(per_state: Path, cross: Path) -> list[dict]:
    """One dict per published (prompt file, database) cell, rates turned back into counts of the
    paired facts (`n`): L, R, artefact and the DEL-ON exact matches (from the per-state file)."""
    states = read_published(per_state)
    out = []
    for (pf, dbf), r in read_cross(cross).items():
        n = int(r["paired_count"])
        on = states[(pf, dbf, "DEL-ON")]
        if int(on["count"]) != n:
            raise ValueError(f"{pf}: DEL-ON count {on['count']} != paired count {n}")
        domain, variant, style = cell_name(pf)
        out.append({"domain": domain, "variant": variant, "style": style, "n": n,
                    **{k: _count(r[col], n, pf) for k, col in
                       (("L", "parametric_leakage"), ("R", "retrieval_mediated_correctness"),
                        ("artefact", "retrieval_artifact_rate"))},
                    "del_on_em": _count(on["exact_match"], n, pf)})
    return out


def _count(rate: str, n: int, where: str) -> int:
    """A published rate back as a count of n facts; a rate that is no k/n is bad data."""
    k = round(float(rate) * n)
    if abs(float(rate) * n - k) > 1e-6:
        raise ValueError(f"{where}: rate {rate} is not a count over {n}")
    return k


def published_claims(cells: list[dict]) -> dict:
    """Per-cell checks of the statements docs/audit.md makes about the published audit:
    leakage per cell and per (domain, variant) (count-weighted over its styles), the cells where
    artefact != R, and how many cells have artefact = DEL-ON EM (spec-probes §3.3 under verified
    deletion). Rates are counts / n, rounded to 4 places."""
    def rate(k: int, n: int) -> float:
        return round(k / n, 4)

    cell_leak = [(rate(c["L"], c["n"]), c) for c in cells]
    top = max(v for v, _ in cell_leak)
    by_variant: dict[tuple[str, str], list[dict]] = {}
    for c in cells:
        by_variant.setdefault((c["domain"], c["variant"]), []).append(c)
    var_leak = {f"{d}/{v}": rate(sum(c["L"] for c in cs), sum(c["n"] for c in cs))
                for (d, v), cs in sorted(by_variant.items())}
    vtop = max(var_leak.values())

    def name(c: dict) -> str:
        return f"{c['domain']}/{c['variant']}/{c['style']}"

    return {"n_cells": len(cells),
            "max_leakage_cell": top,
            "max_leakage_cells": sorted(name(c) for v, c in cell_leak if v == top),
            "cells_with_leakage": sum(c["L"] > 0 for c in cells),
            "max_leakage_variant": vtop,
            "max_leakage_variants": sorted(k for k, v in var_leak.items() if v == vtop),
            "artefact_ne_R": [{"cell": name(c), "n": c["n"], "L": c["L"], "R": c["R"], "artefact": c["artefact"],
                               "del_on_em": c["del_on_em"]} for c in sorted(cells, key=name)
                              if c["artefact"] != c["R"]],
            "artefact_eq_del_on_em": sum(c["artefact"] == c["del_on_em"] for c in cells)}


def claims_markdown(claims: dict) -> str:
    """The doc's sentences about the published audit, written from `published_claims` output."""
    ne = claims["artefact_ne_R"]
    rows = "; ".join(f"`{r['cell']}` (R {r['R']}/{r['n']}, artefact {r['artefact']}/{r['n']}, "
                     f"L {r['L']}/{r['n']})" for r in ne)
    return (f"- **Leakage (published).** Per cell (prompt file x database, {claims['n_cells']} cells) the published "
            f"leakage reaches {claims['max_leakage_cell']:.4f} "
            f"({', '.join('`' + c + '`' for c in claims['max_leakage_cells'])}) and is non-zero in "
            f"{claims['cells_with_leakage']} cells; count-weighted over the styles "
            "of a (domain, variant) it is at most "
            f"{claims['max_leakage_variant']:.4f} "
            f"({', '.join('`' + c + '`' for c in claims['max_leakage_variants'])}).\n"
            f"- **Artefact vs R (published).** The published artefact rate equals R in "
            f"{claims['n_cells'] - len(ne)} of {claims['n_cells']} cells, not in {len(ne)}: {rows}. "
            f"It equals DEL-ON EM in {claims['artefact_eq_del_on_em']} of {claims['n_cells']} cells, as "
            "spec-probes §3.3's "
            f"definition (DEL-OFF not consulted) gives under verified deletion: where a fact leaks and is also "
            f"answered under DEL-ON, it counts as an artefact but not in R.\n")
