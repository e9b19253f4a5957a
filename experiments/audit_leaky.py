"""Collect the audits of `lmlm_leaky`, `lmlm` and `lmlm_parametric` into results/audit/leaky_test/.

    uds world build --preset test --models lmlm_leaky,lmlm,lmlm_parametric
    uds audit --model tiny:test/<model> --db tiny:test --out RUNS/<model>     # for each of the three
    python experiments/audit_leaky.py --runs RUNS [--preset test] [--out results/audit/leaky_test]
    python experiments/audit_leaky.py --chance-only [--preset test]           # chance.json alone, no runs

Copies each run's summary.json and grid.csv, and writes facts.csv (`uds_analyses.audit.leaky`:
one compact row per model, variant, style and fact, with the leaked-subset flag), subset.json
(the leaky recipe's subset and digest) and chance.json (per variant, the chance level of the
audit's rates, `uds_analyses.audit.chance`). The chance level needs the world's audit database, which
the run folders do not hold: it is rebuilt from the preset's world data, generated in memory and
written to a temporary folder (deterministic from the seed; no model, nothing written to the
world's cache), and where a run's summary.json carries `chance` the two must agree.
docs/audit.md's `audit-leaky-test` table is rendered from these files (`python benchmarks/doc_tables.py`).
File work only: a few seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
from pathlib import Path

from uds_analyses.audit.chance import set_chances
from uds_analyses.audit.leaky import compact_rows, write_rows
from uds_analyses.audit.sources import resolve_sets
from checkpoints.catalogue import find_recipe
from checkpoints.lmlm.prompts import STYLES
from checkpoints.lmlm.world_db import AUDIT_DATA_VERSION, write_world_audit
from checkpoints.world.recipe_digest import recipe_digest
from checkpoints.world.presets import get_preset
from checkpoints.world.store import make_world

MODELS = ("lmlm_leaky", "lmlm", "lmlm_parametric")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "audit" / "leaky_test"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def world_chance(preset: str, seed: int = 0) -> dict:
    """chance.json: per variant of the world's audit database, {n_prompts, chance, chance_uniform}
    pooled over the six styles, as `uds audit --db tiny:<preset>` would compute them."""
    with tempfile.TemporaryDirectory() as tmp:
        write_world_audit(make_world(get_preset(preset), seed), tmp, seed)
        rows = set_chances(resolve_sets(tmp, None, None, list(STYLES)))
    variants: dict[str, dict] = {}
    for r in rows:
        v = variants.setdefault(r["variant"], {"n_prompts": 0, "chance": 0.0, "chance_uniform": 0.0})
        v["n_prompts"] += r["n_prompts"]
        for k in ("chance", "chance_uniform"):
            v[k] += r[k] * r["n_prompts"]
    for v in variants.values():
        for k in ("chance", "chance_uniform"):
            v[k] = round(v[k] / v["n_prompts"], 6)
    return {"preset": preset, "seed": seed, "audit_data_version": AUDIT_DATA_VERSION,
            "definition": "uds_analyses/audit/chance.py (chance: majority value of the relation after the "
                          "target's deletion; chance_uniform: a uniform draw over its distinct values)",
            "variants": variants}


def check_against_runs(chance: dict, runs: Path) -> None:
    """The runs must have audited the rebuilt database: same variants and prompt counts, and the
    same chance level where a run's summary.json carries one."""
    for m in MODELS:
        for v, d in json.loads((runs / m / "summary.json").read_text())["variants"].items():
            ours = chance["variants"].get(v)
            if ours is None or d["n_prompts"] != ours["n_prompts"] or \
                    ("chance" in d and not math.isclose(d["chance"], ours["chance"], abs_tol=1e-6)):
                raise SystemExit(f"{m}/{v}: the run ({d['n_prompts']} prompts, chance {d.get('chance')}) did not "
                                 f"audit the rebuilt world's database ({ours})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=None, help="folder holding one `uds audit --out` folder per model")
    ap.add_argument("--chance-only", action="store_true", help="write chance.json only (no runs needed)")
    ap.add_argument("--preset", default="test")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    if a.runs is None and not a.chance_only:
        ap.error("--runs is required (or --chance-only)")
    if a.preset != "test" and a.out == DEFAULT_OUT:
        ap.error(f"{DEFAULT_OUT} holds the test world's audit: give --out for preset {a.preset}")
    chance = world_chance(a.preset)
    if not a.chance_only:
        check_against_runs(chance, a.runs)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "chance.json").write_text(json.dumps(chance, indent=1) + "\n")
    if a.chance_only:
        print(f"wrote {a.out / 'chance.json'}")
        return 0
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
    subset = {"preset": a.preset, "recipe": leaky.name, "digest": recipe_digest(preset, leaky, seed=0),
              "n_targets": leaky.hparams["n_targets"], "leaked": sorted(leaked),
              "models": {m: recipe_digest(preset, find_recipe(preset, m), seed=0) for m in MODELS}}
    (a.out / "subset.json").write_text(json.dumps(subset, indent=1) + "\n")
    print(f"wrote {a.out}: {len(rows)} fact rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
