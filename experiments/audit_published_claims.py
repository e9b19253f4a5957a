"""Recompute docs/audit.md's statements about the published deletion audit, per cell.

    python experiments/audit_published_claims.py [--data DIR] [--out results/audit/published_claims.json]

Reads `published_outputs/{per_state,cross_state}_metrics.csv` of the published audit data
(`--data DIR`, else `$UDS_LMLM_AUDIT_DIR`, else `$UDS_HOME/lmlm_audit`; spec-probes §3.8) and writes
the per-cell checks (`uds_analyses.audit.published.published_claims`) as JSON, then prints the doc's sentences
(`claims_markdown`), which docs/audit.md carries between its `published-claims` markers. It also
writes each cell's chance level (`uds_analyses.audit.chance`), computed from the cell's prompt file and
database as `uds audit` opens them (`chance`: one row per cell; docs/audit.md's `published-chance`
table). No model: about 10 s on one busy core, most of it imports.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from uds_analyses.audit.chance import set_chances
from uds_analyses.audit.published import cell_name, claims_markdown, published_cells, published_claims, read_cross
from uds_analyses.audit.sources import resolve_sets
from checkpoints.lmlm.prompts import STYLES
from checkpoints.lmlm.recipes import published_root

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "audit" / "published_claims.json"


def chance_cells(data: Path, cells: list[dict]) -> list[dict]:
    """Per published cell (same order as `cells`): domain, variant, style, n and the chance levels
    of its prompt file against its database. A cell whose prompt count differs from the published
    paired count is bad data."""
    found = {}
    for db in sorted({dbf for _, dbf in read_cross(data / "published_outputs" / "cross_state_metrics.csv")}):
        for row in set_chances(resolve_sets(str(data / db), None, None, list(STYLES))):
            name = cell_name(str(row["prompt_file"].relative_to(data)))
            found[name] = {"n": row["n_prompts"], "chance": round(row["chance"], 6),
                           "chance_uniform": round(row["chance_uniform"], 6)}
    out = []
    for c in cells:
        key = (c["domain"], c["variant"], c["style"])
        if key not in found or found[key]["n"] != c["n"]:
            raise ValueError(f"{'/'.join(key)}: published count {c['n']}, prompt rows {found.get(key, {}).get('n')}")
        out.append({"domain": key[0], "variant": key[1], "style": key[2], **found[key]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="the published audit folder (has published_outputs/)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    data = a.data or published_root()
    pub = data / "published_outputs"
    cells = published_cells(pub / "per_state_metrics.csv", pub / "cross_state_metrics.csv")
    claims = published_claims(cells)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"source": "data/lmlm_audit/published_outputs/cross_state_metrics.csv "
                                           "(+ per_state_metrics.csv for DEL-ON EM)",
                                 "claims": claims, "cells": cells,
                                 "chance_source": "the cells' prompt files and databases in data/lmlm_audit "
                                                  "(uds_analyses/audit/chance.py)",
                                 "chance": chance_cells(data, cells)}, indent=1) + "\n")
    print(claims_markdown(claims))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
