"""Markdown tables for docs/audit.md from `uds audit --out DIR` folders.

    python experiments/audit_tables.py DIR [DIR ...]

Per folder: the per-variant summary (chance level, FULL / DEL-ON / DEL-OFF EM, L, R, artefact rate
by spec-probes §3.3, mediated artefact rate, near-miss evidence), and, where the folder has
published_comparison.csv, ours vs the published audit per variant (count-weighted over the styles run).
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path


def variant_table(summary: dict) -> list[str]:
    lines = [f"**{summary['model']}** on `{summary['db']}` ({summary['seconds']:.0f} s, "
             f"threshold {summary['settings']['threshold']}, limit {summary['settings']['limit']})", "",
             "| variant | prompts | chance | FULL EM | DEL-ON EM | DEL-OFF EM | L | R | artefact (3.3) "
             "| mediated artefact | near-miss evidence |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for v, d in summary["variants"].items():
        # a summary without `mediated_artifact_rate` predates spec-probes §3.3's artefact: its
        # artifact_rate also required DEL-OFF wrong, so it goes in the mediated column
        new = "mediated_artifact_rate" in d
        art = f"{d['artifact_rate']:.3f}" if new else "n/a (old run)"
        med = d["mediated_artifact_rate"] if new else d["artifact_rate"]
        chance = f"{d['chance']:.3f}" if "chance" in d else "n/a (old run)"
        lines.append(f"| {v} | {d['n_prompts']} | {chance} | "
                     f"{d['full_em']:.3f} | {d['del_on_em']:.3f} | {d['del_off_em']:.3f} | "
                     f"{d['leakage']:.3f} | {d['retrieval_mediated']:.3f} | {art} | {med:.3f} | "
                     f"{d['near_miss_evidence']:.3f} |")
    return lines + [""]


def published_table(path: Path) -> list[str]:
    rows = list(csv.DictReader(open(path)))
    agg: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        agg[(r["variant"], r["state"])].append(r)
    lines = ["| variant | state | EM ours | EM published | L ours | L published | R ours | R published |",
             "|---|---|---|---|---|---|---|---|"]

    def mean(rs, k):
        vals = [float(r[k]) for r in rs if r.get(k) not in (None, "")]
        return f"{sum(vals) / len(vals):.3f}" if vals else ""
    for (v, st), rs in agg.items():
        lines.append(f"| {v} | {st} | {mean(rs, 'ours_exact_match')} | {mean(rs, 'published_exact_match')} | "
                     f"{mean(rs, 'ours_parametric_leakage')} | {mean(rs, 'published_parametric_leakage')} | "
                     f"{mean(rs, 'ours_retrieval_mediated_correctness')} | "
                     f"{mean(rs, 'published_retrieval_mediated_correctness')} |")
    return lines + [""]


def main(folders: list[str]) -> None:
    for f in map(Path, folders):
        print("\n".join(variant_table(json.loads((f / "summary.json").read_text()))))
        if (f / "published_comparison.csv").is_file():
            print("\n".join(published_table(f / "published_comparison.csv")))


if __name__ == "__main__":
    main(sys.argv[1:])
