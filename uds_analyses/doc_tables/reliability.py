"""docs/reliability.md's table of what checking cached files by content costs a `uds score`, from
`benchmarks/bench_verify.py`'s JSON."""

from __future__ import annotations

import json
from pathlib import Path

from uds_analyses.doc_tables.markdown import table

MODES = {"s1_hit": "hit", "s1_off": "off (`--no-s1-cache`)"}
VARIANTS = {"xxh3_128": "xxh3-128 (shipped)", "sha256": "sha256", "off": "none (size only)"}


def verify_cost_table(path: Path) -> str:
    """Per S1 cache mode and hash: median CPU (wall) seconds of the score and inside the checks,
    the MiB hashed and the checks' share of the score's CPU time; then the run's hash rates."""
    doc = json.loads(path.read_text())
    rows = []
    for mode, mode_label in MODES.items():
        for variant, label in VARIANTS.items():
            m = doc["median"][f"{mode}/{variant}"]
            checks = "-" if variant == "off" else f"{m['verify_cpu_s']:.2f} ({m['verify_s']:.2f})"
            share = "-" if variant == "off" else f"{m['share_pct']:.1f} %"
            hashed = "-" if variant == "off" else f"{m['hashed_mb']:.0f}"
            rows.append([mode_label, label, f"{m['score_cpu_s']:.1f} ({m['score_s']:.1f})", checks, hashed, share])
    head = ["S1 cache", "content check", "score, CPU s (wall s)", "inside the checks, CPU s (wall s)", "MiB hashed",
            "share of the score's CPU time"]
    rates = ", ".join(f"{name} {rate:,.0f} MiB/s" for name, rate in doc["hash_mb_per_s"].items())
    return (table(head, rows) + f"\n`{doc['spec']}`, medians of {len(doc['rounds'])} rounds, "
            f"{doc['threads']} torch thread(s), {doc['cores']} cores ({doc['cpu']}), {doc['date']}; "
            f"hash rates on its weights file (page cache): {rates}.\n")
