"""`uds meta-eval`: faithfulness, robustness and overall of every metric on a model zoo.

Builds what the zoo lacks, measures every (model, setting) it needs (cached under
`$UDS_HOME/meta_eval/<zoo>/`: a rerun, an added metric or an interrupted run computes only what
is missing), then writes to --out: `meta_eval.json` (DESIGN.md), `results.json` (benchmark rows,
a `uds leaderboard` input), `summary.md` (ranked table), `pn_histograms.png`,
`quantization_scatter.png`, `relearning_scatter.png`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from meta_eval.robustness import FORMS
from uds.parity import MODES as PARITY_MODES, SPEC
from uds.errors import UdsInputError

DEFAULT_ZOO = "tiny:small"
DEFAULT_OUT = Path("out") / "meta_eval"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("meta-eval", help="faithfulness and robustness of every metric on a model zoo",
                       description=__doc__.splitlines()[0])
    p.add_argument("--zoo", default=DEFAULT_ZOO,
                   help=f"tiny:<preset>[-<seed>], or ou:tofu for Open-Unlearning's TOFU checkpoints "
                        f"(default {DEFAULT_ZOO})")
    p.add_argument("--models-dir", metavar="DIR",
                   help="ou:tofu: folder of local copies, one sub-folder per registry alias (others: hub)")
    p.add_argument("--tofu-dir", metavar="DIR", help="ou:tofu: folder of the TOFU JSON files (or UDS_TOFU_DIR)")
    p.add_argument("--built-only", action="store_true",
                   help="use only the models that exist now (tiny: built; ou:tofu: local copies) instead "
                        "of building or downloading the rest; the outputs list what was left out")
    p.add_argument("--metrics", default="all", help="all (the 22 keys) or comma-separated keys")
    p.add_argument("--out", metavar="DIR", help=f"output folder (default {DEFAULT_OUT}/<zoo>)")
    p.add_argument("--robustness", choices=sorted(FORMS), default="symmetric",
                   help="Q/R formulas: the reference's symmetric ones (default) or OU's one-way ones")
    p.add_argument("--no-filters", action="store_true",
                   help="average Q/R over every unlearned model (no utility / faithfulness-threshold filter)")
    p.add_argument("--relearn-lr", type=float, default=None, help="relearning learning rate (default 2e-4)")
    p.add_argument("--parity", choices=PARITY_MODES, default=SPEC,
                   help="whose numerics: spec (default, SPEC.md), reference (the reference implementation's) "
                        "or open-unlearning (OU's attention mask and model-utility mean); docs/parity.md. "
                        "Values measured under one mode are cached apart from the others")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=200)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--fluency-classifier", metavar="PATH", help="local gibberish-classifier folder (SPEC 4.6)")
    p.add_argument("--shard", metavar="K/N", type=parse_shard, default=None,
                   help="measure only every N-th (model, setting) pair starting at K (0-based), e.g. one "
                        "process per GPU or core; a last run without --shard assembles the results")
    p.set_defaults(func=run)


def parse_shard(text: str) -> tuple[int, int]:
    """'1/3' -> (1, 3); argparse turns the ValueError into a usage error (exit 2)."""
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise argparse.ArgumentTypeError(f"--shard wants K/N with 0 <= K < N, got {text!r}")
    return int(k), int(n)


def parse_keys(text: str) -> list[str]:
    from metrics.registry import META_KEYS

    if text.strip() == "all":
        return list(META_KEYS)
    keys = list(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    bad = [k for k in keys if k not in META_KEYS]
    if bad or not keys:
        raise UdsInputError(f"unknown metric {', '.join(bad) or repr(text)}; valid: all, {', '.join(META_KEYS)}")
    return keys


def _measurer(args: argparse.Namespace, zoo):
    from checkpoints.methods.zoo_recipes import UNLEARN_BATCH
    from meta_eval.measure import Measurer
    from meta_eval.perturb import RELEARN_BATCH, RELEARN_LR, relearn_config
    from meta_eval.store import MeasurementStore
    from metrics.context import EvalSettings
    from uds.loading import resolve_device
    from uds.paths import uds_home

    if args.batch_size < 1 or args.max_new_tokens < 1:
        raise UdsInputError("--batch-size and --max-new-tokens must be at least 1")
    lr = RELEARN_LR if args.relearn_lr is None else args.relearn_lr
    if not lr > 0:
        raise UdsInputError(f"--relearn-lr must be positive, got {lr}")
    cache = uds_home() / "meta_eval" / zoo.slug
    settings = EvalSettings(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                            system_prompt=zoo.system_prompt, parity=args.parity, device=resolve_device(args.device),
                            progress=False)
    # the forget-set batch the unlearning grid uses for this preset (SPEC 5.3: effective 32 of 400)
    recipe = relearn_config(UNLEARN_BATCH.get(zoo.preset, RELEARN_BATCH), lr)
    return Measurer(zoo, MeasurementStore(cache / "store"), cache / "relearned", settings, recipe,
                    args.fluency_classifier)


def measure_all(measurer, jobs, log=lambda s: print(s, file=sys.stderr)) -> tuple[dict, int]:
    """Run every job with missing keys; returns ({(setting, model): values}, jobs run)."""
    todo = [j for j in jobs if measurer.missing(j)]
    log(f"meta-eval: {len(jobs)} (model, setting) pairs, {len(todo)} with missing values")
    for i, job in enumerate(todo, 1):
        t0 = time.time()
        n = len(measurer.missing(job))
        measurer.run(job)
        log(f"[{i}/{len(todo)}] {job.setting:7s} {job.member.name}: {n} metric(s) in {time.time() - t0:.1f} s")
    return {(j.setting, j.member.name): measurer.store.values(j.setting, j.member.name,
                                                              measurer.stamp(j.member, j.setting)) for j in jobs}, len(todo)


def write_plots(out: Path, doc: dict, zoo, values: dict, keys: list[str]) -> list[Path]:
    from meta_eval import plots
    from meta_eval.perturb import NF4, ORIG, RELEARN
    from meta_eval.population import POOL, RETAIN, UNLEARNED

    pools = {k: tuple([values.get((ORIG, m.name), {}).get(k) for m in zoo.of_kind(POOL) if m.pool == lab]
                      for lab in ("P", "N")) for k in keys}
    auc = {k: doc["faithfulness"][k]["auc_roc"] for k in keys}
    paths = [plots.pn_histograms(out / "pn_histograms.png", pools, auc)]
    retain = zoo.member(RETAIN).name
    for setting, fname, score, title in ((NF4, "quantization_scatter.png", "quantization", "NF4 quantisation"),
                                         (RELEARN, "relearning_scatter.png", "relearning", "relearning")):
        points = {k: [(values.get((ORIG, m.name), {}).get(k), values.get((setting, m.name), {}).get(k),
                       m.name in doc["robustness"][k]["kept"]) for m in zoo.of_kind(UNLEARNED)] for k in keys}
        ret = {k: (values.get((ORIG, retain), {}).get(k), values.get((RELEARN, retain), {}).get(k))
               for k in keys} if setting == RELEARN else None
        qr = {k: doc["robustness"][k][score] for k in keys}
        paths.append(plots.before_after(out / fname, f"{title}: raw value before vs after", points, qr,
                                        "Q" if setting == NF4 else "R", ret))
    return paths


def run(args: argparse.Namespace) -> int:
    from meta_eval.assemble import meta_evaluate
    from meta_eval.measure import plan_jobs
    from meta_eval.perturb import NF4, ORIG, RELEARN
    from meta_eval.population import FULL, POOL, RETAIN, UNLEARNED, available_members, build_zoo, parse_zoo
    from meta_eval.summary import summary_markdown

    t0 = time.time()
    keys = parse_keys(args.metrics)
    zoo = parse_zoo(args.zoo, args.models_dir, args.tofu_dir)
    left_out: list[str] = []
    if args.built_only:
        zoo, left_out = available_members(zoo)
        print(f"meta-eval: --built-only: {len(zoo.members)} models, {len(left_out)} left out", file=sys.stderr)
    else:
        build_zoo(zoo)
    measurer = _measurer(args, zoo)
    fluency = bool(args.fluency_classifier or zoo.base)
    if not fluency:
        print("meta-eval: fluency left out (no base LM for the proxy; pass --fluency-classifier PATH)", file=sys.stderr)
    jobs = plan_jobs(zoo, keys, fluency)
    if args.shard:
        k, n = args.shard
        measure_all(measurer, jobs[k::n])
        print(f"meta-eval: shard {k}/{n} measured; run again without --shard to assemble the results", file=sys.stderr)
        return 0
    values, fresh = measure_all(measurer, jobs)
    doc = meta_evaluate(zoo.members, values, keys, args.robustness, not args.no_filters, args.parity)
    rows = doc.pop("benchmark")
    out = Path(args.out) if args.out else DEFAULT_OUT / zoo.slug
    out.mkdir(parents=True, exist_ok=True)
    fluency = {measurer.store.entry(ORIG, m.name, measurer.stamp(m, ORIG))["info"].get("fluency_source")
               for m in zoo.members if m.kind != POOL} - {None}
    doc["settings"] = {
        "zoo": args.zoo, "models": {k: len(zoo.of_kind(k)) for k in (UNLEARNED, POOL, FULL, RETAIN)},
        "robustness_form": args.robustness, "filters": not args.no_filters, "eps": 1e-12, "parity": args.parity,
        NF4: measurer.setting_recipe(NF4), RELEARN: measurer.setting_recipe(RELEARN),
        "metric_settings": {"batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens,
                            "device": measurer.settings.device},
        "left_out": left_out, "fluency_source": sorted(fluency), "cache": str(measurer.store.root.parent),
        "wall_seconds": round(time.time() - t0, 1)}
    (out / "meta_eval.json").write_text(json.dumps(doc, indent=1, allow_nan=False))
    (out / "results.json").write_text(json.dumps(rows, indent=1, allow_nan=False))
    notes = [f"zoo {args.zoo}: {doc['settings']['models']}", f"parity {args.parity}, robustness {args.robustness}, "
             f"filters {'on' if not args.no_filters else 'off'}, relearning lr {measurer.recipe.train.lr:g}",
             f"wall time {doc['settings']['wall_seconds']:.0f} s, measuring {fresh} of {len(jobs)} (model, setting) "
             "pairs (the rest read from the cache)"]
    if left_out:
        notes.append(f"partial zoo (--built-only): left out {len(left_out)} model(s) not built yet")
    md = summary_markdown(doc, keys, f"Meta-evaluation on {args.zoo}", notes)
    (out / "summary.md").write_text(md)
    write_plots(out, doc, zoo, values, keys)
    print(md)
    print(out / "meta_eval.json")
    return 0
