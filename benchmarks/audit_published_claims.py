"""Recompute docs/audit.md's statements about the published deletion audit, per cell.

    python benchmarks/audit_published_claims.py [--data DIR] [--out docs/audit/published_claims.json]

Reads `published_outputs/{per_state,cross_state}_metrics.csv` of the published audit data
(`$UDS_LMLM_AUDIT_DIR`, else ../shared/data/lmlm_audit) and writes the per-cell checks
(`analyses.audit.published.published_claims`) as JSON, then prints the doc's sentences
(`claims_markdown`), which docs/audit.md carries between its `published-claims` markers.
Pure CSV arithmetic: under a second on one core.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from analyses.audit.published import claims_markdown, published_cells, published_claims
from checkpoints.lmlm.recipes import published_root

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "docs" / "audit" / "published_claims.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="the published audit folder (has published_outputs/)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    pub = (a.data or published_root()) / "published_outputs"
    cells = published_cells(pub / "per_state_metrics.csv", pub / "cross_state_metrics.csv")
    claims = published_claims(cells)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"source": "data/lmlm_audit/published_outputs/cross_state_metrics.csv "
                                           "(+ per_state_metrics.csv for DEL-ON EM)",
                                 "claims": claims, "cells": cells}, indent=1) + "\n")
    print(claims_markdown(claims))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
