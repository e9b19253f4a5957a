"""docs/audit.md's generated blocks from their committed result files."""

from __future__ import annotations

import json
from pathlib import Path

from analyses.audit.published import claims_markdown
from analyses.doc_tables.markdown import table


def published_claims(path: Path) -> str:
    """The statements about the published audit (`benchmarks/audit_published_claims.py`'s JSON)."""
    return claims_markdown(json.loads(path.read_text())["claims"])


def uds_link_table(path: Path) -> str:
    """`benchmarks/audit_uds_link.py` summary.json: full and retain, then the other models by UDS."""
    models = json.loads(path.read_text())["models"]
    rest = sorted(set(models) - {"full", "retain"}, key=lambda n: models[n]["uds"])
    rows = [[n, f"{m['del_off_correct']:.3f}", f"{m['uds']:.3f}", f"{m['mem_bits']:.2f}", str(m["hidden"])]
            for n, m in ((n, models[n]) for n in ["full", "retain", *rest])]
    return table(["model", "DEL-OFF correct", "UDS", "mem_bits", "facts held but not said (L = 0, UDS < 0.5)"], rows)
