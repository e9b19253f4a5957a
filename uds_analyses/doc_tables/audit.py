"""docs/audit.md's generated blocks from their committed result files."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from statistics import fmean

from uds_analyses.audit.leaky import leak_split, read_rows
from uds_analyses.audit.published import claims_markdown
from uds_analyses.doc_tables.markdown import table


def published_claims(path: Path) -> str:
    """The statements about the published audit (`experiments/audit_published_claims.py`'s JSON)."""
    return claims_markdown(json.loads(path.read_text())["claims"])


# the doc's order of the published databases' variants (spec-probes §3.4), the released one last
VARIANT_ORDER = ("base", "alias", "noise", "collision", "released")


def published_chance_table(path: Path) -> str:
    """Per published (database, variant), pooled over its prompt styles (count-weighted): the
    chance levels (`chance` rows of `experiments/audit_published_claims.py`'s JSON) next to the
    published DEL-ON EM, L and R (its `cells`, counts over n)."""
    data = json.loads(path.read_text())
    cells = {(c["domain"], c["variant"], c["style"]): c for c in data["cells"]}
    sums: dict[tuple[str, str], dict[str, float]] = {}
    for ch in data["chance"]:
        key = (ch["domain"], ch["variant"])
        c = cells[(*key, ch["style"])]
        acc = sums.setdefault(key, dict.fromkeys(("n", "chance", "uniform", "del_on_em", "L", "R"), 0.0))
        acc["n"] += ch["n"]
        acc["chance"] += ch["chance"] * ch["n"]
        acc["uniform"] += ch["chance_uniform"] * ch["n"]
        for k in ("del_on_em", "L", "R"):
            acc[k] += c[k]
    domains = list(dict.fromkeys(d for d, _ in sums))
    rows = []
    for (d, v), acc in sorted(sums.items(), key=lambda kv: (domains.index(kv[0][0]), VARIANT_ORDER.index(kv[0][1]))):
        n = acc["n"]
        rows.append([d, v, str(int(n)), f"**{_f(acc['chance'] / n)}**",
                     *(_f(acc[k] / n) for k in ("uniform", "del_on_em", "L", "R"))])
    return table(["database", "variant", "prompts", "chance", "chance (uniform)", "DEL-ON EM published",
                  "L published", "R published"], rows)


def uds_link_table(path: Path) -> str:
    """`experiments/audit_uds_link.py` summary.json: full and retain, then the other models by UDS."""
    models = json.loads(path.read_text())["models"]
    rest = sorted(set(models) - {"full", "retain"}, key=lambda n: models[n]["uds"])
    rows = [[n, f"{m['del_off_correct']:.3f}", f"{m['uds']:.3f}", f"{m['mem_bits']:.2f}", str(m["hidden"])]
            for n, m in ((n, models[n]) for n in ["full", "retain", *rest])]
    return table(["model", "DEL-OFF correct", "UDS", "mem_bits", "facts held but not said (L = 0, UDS < 0.5)"], rows)


def _f(v: float) -> str:
    return f"{v:.3f}"


def _models(folder: Path) -> list[str]:
    """The audited models of a `experiments/audit_leaky.py` folder, in subset.json's order."""
    return list(json.loads((folder / "subset.json").read_text())["models"])


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def leaky_table(folder: Path) -> str:
    """A `experiments/audit_leaky.py` folder: per model and variant, the audit's EMs, L̂, R̂, artefact
    rate and near-miss evidence rate (the model's summary.json), then L̂ on the leaked subset's
    prompts and on the other targets' prompts (facts.csv), and the variant's chance level
    (chance.json, the same database for every model)."""
    split = leak_split(read_rows(folder / "facts.csv"))
    chance = json.loads((folder / "chance.json").read_text())["variants"]
    rows = []
    for m in _models(folder):
        for v, d in _summary(folder / m)["variants"].items():
            rows.append([m, v, *map(_f, (d["full_em"], d["del_on_em"], d["del_off_em"])), f"**{_f(d['leakage'])}**",
                         *map(_f, (d["retrieval_mediated"], d["artifact_rate"], d["near_miss_evidence"])),
                         *map(_f, split[(m, v)]), _f(chance[v]["chance"])])
    return table(["model", "variant", "FULL EM", "DEL-ON EM", "DEL-OFF EM", "L̂", "R̂", "artefact (3.3)",
                  "near-miss evidence", "L̂ leaked half", "L̂ other half", "chance"], rows)


def full_style_table(folder: Path) -> str:
    """FULL EM per prompt style of each model of a `experiments/audit_leaky.py` folder, on the
    `base` variant (the cells of its summary.json)."""
    rows, styles = [], None
    for m in _models(folder):
        em = {c["style"]: c["exact_match"] for c in _summary(folder / m)["cells"]
              if (c["variant"], c["state"]) == ("base", "FULL")}
        styles = styles or list(em)
        rows.append([m, *(_f(em[s]) for s in styles)])
    return table(["model", *styles], rows)


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


def _domain_variant(database: str) -> tuple[str, str]:
    """(domain, variant) of a published database path as published_comparison.csv names it
    (`custom_databases/<domain>/<variant>.json`, `released_database/...`)."""
    parts = database.split("/")
    return ("released", "released") if parts[0] == "released_database" else (parts[1], Path(parts[2]).stem)


# published_comparison.csv's (state, column) -> the quantity of the ours / published table
_COMPARED = {("FULL", "exact_match"): "full_em", ("DEL-ON", "exact_match"): "del_on_em",
             ("DEL-ON", "parametric_leakage"): "L", ("DEL-ON", "retrieval_mediated_correctness"): "R"}


def _comparison_sums(run: Path) -> dict[tuple[str, str], dict]:
    """Per (domain, variant) of one run: its prompt count and the count-weighted sums, ours and
    published, of each `_COMPARED` quantity."""
    counts = {(c["variant"], c["style"]): c["count"] for c in _summary(run)["cells"]}
    sums: dict[tuple[str, str], dict] = {}
    with open(run / "published_comparison.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            n = counts[(r["variant"], r["style"])]
            acc = sums.setdefault(_domain_variant(r["database"]), defaultdict(float))
            acc["n"] += n if r["state"] == "FULL" else 0
            for (state, col), q in _COMPARED.items():
                if r["state"] == state:
                    for who in ("ours", "published"):
                        acc[(who, q)] += float(r[f"{who}_{col}"]) * n
    return sums


def published_runs_table(folder: Path) -> str:
    """`experiments/audit_published_runs.py`'s folder (one `uds audit` run per published database):
    per (database, variant), ours / published FULL EM, DEL-ON EM, L and R, each count-weighted
    over the prompt styles (our cells' counts; the published cells are the same prompt files)."""
    sums = {k: v for run in sorted(p for p in folder.iterdir() if p.is_dir()) for k, v in _comparison_sums(run).items()}
    rows = []
    for (d, v), acc in sorted(sums.items(), key=lambda kv: (kv[0][0] == "released", kv[0][0],
                                                              VARIANT_ORDER.index(kv[0][1]))):
        n = acc["n"]
        rows.append([d, v, str(int(n)), *(f"{_f(acc[('ours', q)] / n)} / {_f(acc[('published', q)] / n)}"
                                          for q in _COMPARED.values())])
    return table(["database", "variant", "prompts", "FULL EM ours / published", "DEL-ON EM ours / published",
                  "L ours / published", "R ours / published"], rows)
