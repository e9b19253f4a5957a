"""Collect the audits of `lmlm_leaky`, `lmlm` and `lmlm_parametric` into docs/audit/leaky_test/.

    uds world build --preset test --models lmlm_leaky,lmlm,lmlm_parametric
    uds audit --model tiny:test/<model> --db tiny:test --out RUNS/<model>     # for each of the three
    python benchmarks/audit_leaky.py --runs RUNS [--preset test] [--out docs/audit/leaky_test]

Copies each run's summary.json and grid.csv, and writes facts.csv (`analyses.audit.leaky`:
one compact row per model, variant, style and fact, with the leaked-subset flag) and subset.json
(the leaky recipe's subset and digest). docs/audit.md's `audit-leaky-test` table is rendered from
these files (`python benchmarks/doc_tables.py`). File work only: about a second.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from analyses.audit.leaky import compact_rows, write_rows
from checkpoints.catalogue import find_recipe
from checkpoints.world.build import recipe_digest
from checkpoints.world.presets import get_preset

MODELS = ("lmlm_leaky", "lmlm", "lmlm_parametric")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "docs" / "audit" / "leaky_test"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True, help="folder holding one `uds audit --out` folder per model")
    ap.add_argument("--preset", default="test")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    preset = get_preset(a.preset)
    leaky = find_recipe(preset, "lmlm_leaky")
    leaked = set(leaky.hparams["leaked"])
    rows = []
    for m in MODELS:
        run = a.runs / m
        (a.out / m).mkdir(parents=True, exist_ok=True)
        for name in ("summary.json", "grid.csv"):
            shutil.copy(run / name, a.out / m / name)
        rows += compact_rows(m, _jsonl(run / "facts.jsonl"), _jsonl(run / "traces.jsonl"), leaked)
    write_rows(a.out / "facts.csv", rows)
    subset = {"preset": a.preset, "recipe": leaky.name, "digest": recipe_digest(preset, leaky),
              "n_targets": leaky.hparams["n_targets"], "leaked": sorted(leaked),
              "models": {m: recipe_digest(preset, find_recipe(preset, m)) for m in MODELS}}
    (a.out / "subset.json").write_text(json.dumps(subset, indent=1) + "\n")
    print(f"wrote {a.out}: {len(rows)} fact rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
