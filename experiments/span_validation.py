"""Automatic entity spans (uds_core/spans, `uds annotate`) checked against given ones; writes results/spans/.

    python experiments/span_validation.py splits [--out results/spans/splits.json]
    python experiments/span_validation.py agreement [--out results/spans/agreement.json]
    UDS_HOME=... python experiments/span_validation.py uds --world test|small|smol \
        [--out results/spans/uds_<world>.json]

`splits`: TOFU's forget01/05/10 derived from full.json (checkpoints/splits.py): rows, annotated
rows, retain rows and the Open-Unlearning retain anchor of each. `agreement`: span agreement (exact
match, token F1) with the 367 hand-annotated TOFU forget10
records, by the full method and by its plain-QA fallback alone (perturbed answers ignored), and with
the generated spans of the `test` and `small` worlds' forget sets (their data is built if missing,
no model). `uds`: UDS of every built model of a tiny world (the world's full, retain and unlearned
models; nothing is built) on its forget set, with its own spans (generated; the hand annotations
for `smol`) and with automatic ones, on the examples both annotate: per model |delta UDS| and
Spearman's rho over the unlearned models. Then `python benchmarks/doc_tables.py` renders docs/spans.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from uds_analyses.spans.agreement import agreement
from uds_core import atomic
from uds_core.spans.annotate import annotate_records

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "spans"
STRIP = ("prefix", "entity", "gt_entity", "span_method", "full_output", "entity_span")


def unannotated(records: list[dict], perturbed: bool = True) -> list[dict]:
    """The records without their spans (and without perturbed answers when `perturbed` is False)."""
    out = []
    for r in records:
        rec = {k: v for k, v in r.items() if k not in STRIP}
        if not perturbed:
            rec.pop("perturbed_answers", None)
            rec.pop("perturbed_answer", None)
        out.append(rec)
    return out


def auto_spans(records: list[dict], source: str, perturbed: bool = True) -> list[dict]:
    return annotate_records(unannotated(records, perturbed), source, keep_given=False)[0]


def tofu_forget10() -> tuple[list[dict], list[dict]]:
    """(forget10_perturbed rows with idx, the 367 hand annotations)."""
    from checkpoints.specs import default_tofu_annotated
    from checkpoints.world.tofu import default_tofu_dir, read_records
    from uds_core.data import load_annotated

    rows = read_records(default_tofu_dir() / "forget10_perturbed.json")
    return [{"idx": i, **r} for i, r in enumerate(rows)], load_annotated(default_tofu_annotated())


def world_forget(preset: str) -> tuple[list[dict], list[dict]]:
    """(the world's forget items, its annotated ones: generated spans, or hand ones for TOFU text)."""
    from checkpoints.world.store import ensure_world_data, load_world

    ensure_world_data(preset, 0)
    world = load_world(preset, 0)
    return world.forget, world.uds_items()


def run_agreement(out: Path) -> dict:
    rows, hand = tofu_forget10()
    sets = {"tofu_forget10": agreement(auto_spans(rows, "forget10_perturbed"), hand),
            "tofu_forget10_plain": agreement(auto_spans(rows, "forget10_perturbed", perturbed=False), hand)}
    for preset in ("test", "small"):
        forget, given = world_forget(preset)
        sets[f"{preset}_world"] = agreement(auto_spans(forget, preset), given)
    doc = {"sets": sets, "settings": {"span_methods": "uds_core/spans (polar, perturbation, question)",
                                      "token_f1": "ROUGE-1 F (rouge_score, no stemming)"}}
    atomic.write_json(out, doc, indent=1, ensure_ascii=False)
    return doc


def run_splits(out: Path) -> dict:
    from checkpoints import splits
    from checkpoints.specs import default_tofu_annotated
    from checkpoints.world.tofu import default_tofu_dir, read_records
    from uds_core.data import load_annotated

    folder = default_tofu_dir()
    full, forget10 = read_records(folder / "full.json"), read_records(folder / "forget10.json")
    splits.check_forget10_is_tail(full, forget10)
    hand = load_annotated(default_tofu_annotated())
    rows = {}
    for name, split in splits.SPLITS.items():
        forget, retain = splits.derive(full, split)
        rows[name] = {"rows": len(forget), "full_rows": [split.full_rows.start, split.full_rows.stop - 1],
                      "forget10_rows": [split.offset, 399], "annotated": len(splits.annotations_for(split, hand)),
                      "retain": split.retain, "retain_rows": len(retain),
                      "retain_anchor": splits.default_retain("full", split)}
    doc = {"splits": rows, "full_rows": len(full), "forget10_is_full_tail": True}
    atomic.write_json(out, doc, indent=1)
    return doc


def run_uds(preset: str, out: Path, names: list[str] | None) -> dict:
    from uds_analyses.spans.uds_compare import compare_models, rank_agreement
    from uds_core.engine import EngineSettings
    from uds_core.formula import TAU
    from meta_eval.population import FULL, RETAIN, UNLEARNED, available_members, tiny_zoo
    from metrics.session import EvalSession

    t0 = time.time()
    zoo, _ = available_members(tiny_zoo(f"tiny:{preset}"))
    unlearned = [m for m in zoo.of_kind(UNLEARNED) if names is None or m.name in names]
    members = [zoo.member(FULL), zoo.member(RETAIN), *unlearned]
    forget, given = world_forget(preset)
    auto = auto_spans(forget, preset)
    session = EvalSession(zoo.full, full=zoo.full, retain=zoo.retain, with_base=False)
    settings = EngineSettings()
    rows = compare_models(session, [m.spec for m in members], given, auto, settings)
    by_name = {m.name: rows[m.spec] for m in members}
    kept = [m.name for m in unlearned]
    doc = {"world": preset, "models": by_name, "unlearned": kept,
           "spearman_unlearned": rank_agreement(by_name, kept),
           "max_abs_diff_unlearned": max((by_name[n]["abs_diff"] for n in kept), default=None),
           "mean_abs_diff_unlearned": sum(by_name[n]["abs_diff"] for n in kept) / len(kept) if kept else None,
           "agreement": {k: v for k, v in agreement(auto, given).items() if k != "records"},
           "n_given": len(given), "n_auto": len(auto), "n_forget": len(forget),
           "settings": {"tau": TAU, "component": settings.component, "batch_size": settings.batch_size,
                        "dtype": "float32", "device": "cpu", "seconds": round(time.time() - t0, 1)}}
    atomic.write_json(out, doc, indent=1, ensure_ascii=False)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=("splits", "agreement", "uds"))
    ap.add_argument("--world", default="test", help="uds: tiny-world preset (test, small, smol)")
    ap.add_argument("--models", default=None,
                    help="uds: comma-separated unlearned model names (default: every built one)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.stage == "splits":
        for name, s in run_splits(a.out or OUT / "splits.json")["splits"].items():
            print(f"{name}: {s['rows']} rows, {s['annotated']} annotated, {s['retain']} {s['retain_rows']} rows")
        return 0
    if a.stage == "agreement":
        doc = run_agreement(a.out or OUT / "agreement.json")
        for name, s in doc["sets"].items():
            print(f"{name}: exact {s['exact']}/{s['n']}, token F1 {s['token_f1']:.3f}")
        return 0
    doc = run_uds(a.world, a.out or OUT / f"uds_{a.world}.json", a.models.split(",") if a.models else None)
    print(f"{a.world}: max |dUDS| {doc['max_abs_diff_unlearned']}, Spearman {doc['spearman_unlearned']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
