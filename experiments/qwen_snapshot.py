"""Take a snapshot of the `qwen` world campaign for docs/qwen.md (reads files only, loads no model).

    python experiments/qwen_snapshot.py && python benchmarks/doc_tables.py

Reads the campaign's sealed unit files (results/qwen/campaign), the smol world's committed scores
(results/smol/score) and the notes on builds timed only in part (results/qwen/build_notes.json) into
results/qwen/snapshot.json (`uds_analyses.doc_tables.qwen.snapshot`); the page's tables are rendered
from that file, and its per-layer figure (results/qwen/layers.png, once the full model is scored)
drawn from it. Run it again as the campaign moves on.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--campaign", type=Path, default=ROOT / "results" / "qwen" / "campaign")
    p.add_argument("--smol", type=Path, default=ROOT / "results" / "smol" / "score")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "qwen" / "snapshot.json")
    p.add_argument("--build-notes", type=Path, default=ROOT / "results" / "qwen" / "build_notes.json",
                   help="the attempts of build units committed before units recorded them")
    a = p.parse_args(argv)
    from uds_analyses.doc_tables.qwen import plot_layers, snapshot

    snap = snapshot(a.campaign, a.smol, a.build_notes)
    a.out.write_text(json.dumps(snap, indent=1, sort_keys=True, allow_nan=False) + "\n")
    figure = plot_layers(snap, a.out.with_name("layers.png"))
    if figure is not None:
        print(f"{figure}: the per-layer picture")
    print(f"{a.out}: {len(snap['done'])} of {snap['units_total']} units")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
