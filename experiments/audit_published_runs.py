"""Collect `uds audit` runs of one model on the published databases into results/audit/published_small/.

    D=$UDS_LMLM_AUDIT_DIR     # the published audit data (spec-probes §3.8)
    # for <domain> in countries, politicians, sports:
    uds audit --model tiny:small/lmlm --db $D/custom_databases/<domain> --out RUNS/<domain>
    uds audit --model tiny:small/lmlm --db $D/released_database/lmlm_database.json --out RUNS/released
    python experiments/audit_published_runs.py --runs RUNS [--preset small] [--out results/audit/published_small]

Copies each run's summary.json and published_comparison.csv (ours next to the published CSVs per
variant, style and state), and writes model.json (the audited model and its recipe digest, so the
files say which build they measured). Every run must be of the same model and every one of its
cells must have its published row, or the doc's style-pooled means would silently drop cells.
docs/audit.md's `audit-published-small` table is rendered from these files. File work only.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
from pathlib import Path

from checkpoints.catalogue import find_recipe
from checkpoints.world.recipe_digest import recipe_digest
from checkpoints.world.presets import get_preset

DOMAINS = ("countries", "politicians", "sports", "released")
FILES = ("summary.json", "published_comparison.csv")


def check_run(run: Path, spec: str) -> None:
    """The run audited `spec` and the published CSV covers each of its (variant, style, state) cells."""
    summary = json.loads((run / "summary.json").read_text())
    if summary["model"] != spec:
        raise SystemExit(f"{run}: audited {summary['model']}, not {spec}")
    with open(run / "published_comparison.csv", newline="") as fh:
        compared = {(r["variant"], r["style"], r["state"]) for r in csv.DictReader(fh)}
    missing = {(c["variant"], c["style"], c["state"]) for c in summary["cells"]} - compared
    if missing:
        raise SystemExit(f"{run}: {len(missing)} cells without a published row, e.g. {sorted(missing)[0]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True, help="folder holding one `uds audit --out` folder per domain")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--model", default="lmlm", help="the world's model the runs audited")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results/audit/published_small")
    a = ap.parse_args(argv)
    spec = f"tiny:{a.preset}/{a.model}"
    for d in DOMAINS:
        check_run(a.runs / d, spec)
    for d in DOMAINS:
        (a.out / d).mkdir(parents=True, exist_ok=True)
        for name in FILES:
            shutil.copy(a.runs / d / name, a.out / d / name)
    preset = get_preset(a.preset)
    model = {"spec": spec, "digest": recipe_digest(preset, find_recipe(preset, a.model), seed=0),
             "domains": list(DOMAINS)}
    (a.out / "model.json").write_text(json.dumps(model, indent=1) + "\n")
    print(f"wrote {a.out}: {len(DOMAINS)} runs of {spec}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
