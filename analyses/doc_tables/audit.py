"""docs/audit.md's generated blocks from their committed result files."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean

from analyses.audit.leaky import leak_split, read_rows
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


def _f(v: float) -> str:
    return f"{v:.3f}"


def leaky_table(folder: Path) -> str:
    """docs/audit/leaky_test/: per model (subset.json's order) and variant, the audit's EMs, L̂, R̂ and
    artefact rate (the model's summary.json), then L̂ on the leaked subset's prompts and on the
    other targets' prompts (facts.csv)."""
    split = leak_split(read_rows(folder / "facts.csv"))
    rows = []
    for m in json.loads((folder / "subset.json").read_text())["models"]:
        for v, d in json.loads((folder / m / "summary.json").read_text())["variants"].items():
            rows.append([m, v, *map(_f, (d["full_em"], d["del_on_em"], d["del_off_em"])), f"**{_f(d['leakage'])}**",
                         _f(d["retrieval_mediated"]), _f(d["artifact_rate"]), *map(_f, split[(m, v)])])
    return table(["model", "variant", "FULL EM", "DEL-ON EM", "DEL-OFF EM", "L̂", "R̂", "artefact (3.3)",
                  "L̂ leaked half", "L̂ other half"], rows)


def leaky_style_table(folder: Path) -> str:
    """`lmlm_leaky`'s prompts pooled over the four variants, per style: FULL EM, L̂ on the leaked
    subset and on the other targets, and the share of its DEL-ON-correct prompts with no lookup."""
    rows = [r for r in read_rows(folder / "facts.csv") if r["model"] == "lmlm_leaky"]
    out = []
    for style in dict.fromkeys(r["style"] for r in rows):
        rs = [r for r in rows if r["style"] == style]
        on = [r for r in rs if r["em_DEL-ON"]]
        out.append([style, _f(fmean(r["em_FULL"] for r in rs)),
                     _f(fmean(r["L"] for r in rs if r["leaked"])), _f(fmean(r["L"] for r in rs if not r["leaked"])),
                     f"{sum(r['del_on_calls'] == 0 for r in on)} / {len(on)}"])
    return table(["style", "FULL EM", "L̂ leaked half", "L̂ other half", "DEL-ON correct with no lookup"], out)
