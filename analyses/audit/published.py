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
