"""Guidance-ladder experiment of spec-probes §2.7: `uds probe` on several models of one tiny world,
printed as a markdown table (verbatim rate per level on forget documents and on never-trained
holdout authors, semantic accuracy, refusal rates, masked-by-refusal) and probe speed.

    UDS_HOME=/tmp/uds_home_15 python experiments/probe_ladder.py --out /tmp/probe_ladder \\
        --model tiny:small/full --model tiny:small/retain --model tiny:small/npo_lr1e-4_b01_a1_ep10 \\
        -- --samples 1 --distractors 3

Arguments after `--` go to `uds probe` unchanged. Speed = probe outputs (rows, QA answers
excluded) per second of the model's whole probe (QA generation and matching included).
`--corpus passages` runs the long-passage corpus (`-- --passage-source bios` for the
biographies) and prints its per-level, per-position and per-start tables instead; it writes
`passages.json` ({"summary", "rows_per_model"}, what docs/probe.md's passage tables read).
Writes `table.md` and `ladder.json` (the probe's summary.json plus the rows per model, all that
docs/probe.md's generated table needs) next to the probe's own files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from uds_analyses.doc_tables.probe import passages_level_table, passages_position_table, passages_start_table
from uds.cli import main as uds_main


def table(summary: dict, rows_per_model: dict[str, int]) -> str:
    """Markdown: one line per model."""
    levels = summary["settings"]["levels"]
    head = (["model"] + [f"verbatim {lv}" for lv in levels] + [f"holdout {levels[-1]}", "semantic",
            f"refusal {levels[0]}", "masked by refusal", "rows/s"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    f = lambda v: "n/a" if v is None else f"{v:.2f}"   # noqa: E731
    for spec, b in summary["models"].items():
        hold = b["groups"].get("holdout", {}).get(levels[-1], {}).get("verbatim_rate")
        speed = rows_per_model[spec] / summary["settings"]["seconds"][spec]
        cells = ([spec] + [f(b["levels"][lv]["verbatim_rate"]) for lv in levels]
                 + [f(hold), f(b["levels"][levels[-1]]["semantic_acc"]), f(b["levels"][levels[0]]["refusal_rate"]),
                    f(b["masked_by_refusal"]), f"{speed:.2f}"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--out", default="out/probe_ladder")
    ap.add_argument("--corpus", help="passed to `uds probe --corpus` (e.g. passages); default its own")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    corpus = ["--corpus", args.corpus] if args.corpus else []
    cmd = ["probe", *[x for m in args.model for x in ("--model", m)], *corpus, "--out", args.out, *extra]
    code = uds_main(cmd)
    if code:
        sys.exit(code)
    out = Path(args.out)
    summary = json.loads((out / "summary.json").read_text())
    counts: dict[str, int] = {}
    for line in (out / "rows.jsonl").read_text().splitlines():
        row = json.loads(line)
        if not row.get("qa"):   # QA rows of the passage corpus are not ladder outputs
            counts[row["model"]] = counts.get(row["model"], 0) + 1
    if args.corpus and args.corpus.startswith("passages"):
        (out / "passages.json").write_text(json.dumps({"summary": summary, "rows_per_model": counts}, indent=1) + "\n")
        md = "\n".join(f(out / "passages.json") for f in (passages_level_table, passages_position_table,
                                                          passages_start_table))
        (out / "table.md").write_text(md)
        print(md)
        return
    md = table(summary, counts)
    (out / "ladder.json").write_text(json.dumps({"summary": summary, "rows_per_model": counts}, indent=1) + "\n")
    (out / "table.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
