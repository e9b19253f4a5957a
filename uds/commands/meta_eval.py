"""`uds meta-eval`: faithfulness, robustness and overall of every metric on a model zoo.

Builds what the zoo lacks, measures every (model, setting) it needs (cached under
`$UDS_HOME/meta_eval/<zoo>/`: a rerun, an added metric or an interrupted run computes only what
is missing), then writes to --out: `meta_eval.json` (docs/design.md), `results.json` (benchmark rows,
a `uds leaderboard` input), `summary.md` (ranked table), `pn_histograms.png`,
`quantization_scatter.png`, `relearning_scatter.png`. With `--from-campaign DIR` it measures nothing:
the same files are assembled from a campaign folder (`meta_eval/campaign/outputs.py`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from meta_eval.robustness import FORMS
from uds.executor_args import add_executor_args
from uds.device_args import add_device_args
from uds.split_args import add_split_arg
from uds_core.parity import MODES as PARITY_MODES, SPEC
from uds_core import atomic
from uds_core.defaults import MAX_NEW_TOKENS
from uds_core.errors import UdsInputError
from meta_eval.outputs import parse_keys, report_values, write_plots
from metrics.registry import META_KEYS

DEFAULT_OUT = Path("out") / "meta_eval"
DEFAULT_ZOO = "tiny:small"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("meta-eval", help="faithfulness and robustness of every metric on a model zoo",
                       description=__doc__.splitlines()[0])
    p.add_argument("--zoo", default=None,
                   help=f"tiny:<preset>[-<seed>], or ou:tofu for Open-Unlearning's TOFU checkpoints "
                        f"(default {DEFAULT_ZOO})")
    p.add_argument("--from-campaign", metavar="DIR",
                   help="assemble the tables from a `uds campaign` folder's committed measurement files alone "
                        "(no model is loaded; invalid files are said and left out); takes --metrics, "
                        "--robustness, --no-filters, --out")
    p.add_argument("--models-dir", metavar="DIR",
                   help="ou:tofu: folder of local copies, one sub-folder per registry alias (others: hub)")
    p.add_argument("--tofu-dir", metavar="DIR", help="ou:tofu: folder of the TOFU JSON files (or UDS_TOFU_DIR)")
    add_split_arg(p)
    p.add_argument("--built-only", action="store_true",
                   help="use only the models that exist now (tiny: built; ou:tofu: local copies) instead "
                        "of building or downloading the rest; the outputs list what was left out")
    p.add_argument("--metrics", default="all", help=f"all (the {len(META_KEYS)} keys) or comma-separated keys; all "
                                                    "combines with named extras (all,mem_bits)")
    p.add_argument("--out", metavar="DIR", help=f"output folder (default {DEFAULT_OUT}/<zoo>)")
    p.add_argument("--robustness", choices=sorted(FORMS), default="symmetric",
                   help="Q/R formulas: the reference's symmetric ones (default) or OU's one-way ones")
    p.add_argument("--no-filters", action="store_true",
                   help="average Q/R over every unlearned model (no utility / faithfulness-threshold filter)")
    p.add_argument("--relearn-lr", type=float, default=None, help="relearning learning rate (default 2e-4)")
    p.add_argument("--parity", choices=PARITY_MODES, default=SPEC,
                   help="whose numerics: spec (default, docs/spec.md), reference (the reference implementation's) "
                        "or open-unlearning (OU's attention mask and model-utility mean); docs/parity.md. "
                        "Values measured under one mode are cached apart from the others")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS)
    add_device_args(p, dtype=False)
    p.add_argument("--fluency-classifier", metavar="PATH", help="local gibberish-classifier folder (spec §4.6)")
    p.add_argument("--shard", metavar="K/N", type=parse_shard, default=None,
                   help="measure only every N-th (model, setting) pair starting at K (0-based), e.g. one "
                        "process per GPU or core; a last run without --shard assembles the results")
    p.add_argument("--cache", metavar="DIR",
                   help="folder of the measurement store and relearned models (default $UDS_HOME/meta_eval/<zoo>)")
    add_executor_args(p)
    p.set_defaults(func=run, resumes=True)


def parse_shard(text: str) -> tuple[int, int]:
    """'1/3' -> (1, 3); argparse turns the ValueError into a usage error (exit 2)."""
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise argparse.ArgumentTypeError(f"--shard wants K/N with 0 <= K < N, got {text!r}")
    return int(k), int(n)


def _cache_dir(args: argparse.Namespace, zoo) -> Path:
    from uds_core.paths import uds_home

    return Path(args.cache) if getattr(args, "cache", None) else uds_home() / "meta_eval" / zoo.slug


def _measurer(args: argparse.Namespace, zoo):
    from meta_eval.measure import Measurer
    from meta_eval.store import MeasurementStore
    from uds.executor_args import device_for
    from uds.measure_args import measurement_settings

    settings, recipe = measurement_settings(args, zoo, device=device_for(args), parity=args.parity)
    cache = _cache_dir(args, zoo)
    return Measurer(zoo, MeasurementStore(cache / "store"), cache / "relearned", settings, recipe,
                    args.fluency_classifier)


def measure_all(measurer, jobs, executor, first=None, log=lambda s: print(s, file=sys.stderr)):
    """Run every job with missing keys through `executor`; `first` (the S1 job, if one of `jobs`)
    alone before the rest. Returns ({(setting, model): values}, task records)."""
    from meta_eval.tasks import Task, pending, stages

    spec = getattr(measurer, "spec", None)
    todo = pending(measurer, jobs)
    head = [first] if first is not None and todo and measurer.missing(first) and first in jobs else []
    log(f"meta-eval: {len(jobs)} (model, setting) pairs, {len(todo)} with missing values")
    records = executor.run(stages([Task(spec, j) for j in head], [Task(spec, j) for j in todo if j not in head]), log)
    values = {(j.setting, j.member.name): measurer.store.values(j.setting, j.member.name,
                                                               measurer.stamp(j.member, j.setting)) for j in jobs}
    return values, records


# flags that choose what to measure or how: meaningless for files already measured (attr -> default)
MEASURING_FLAGS = {"zoo": None, "models_dir": None, "tofu_dir": None, "built_only": False, "shard": None,
                   "cache": None, "fluency_classifier": None, "relearn_lr": None, "parity": SPEC,
                   "executor": "local", "address": None}


def check_flags(args: argparse.Namespace) -> None:
    given = [k for k, default in MEASURING_FLAGS.items() if getattr(args, k, default) != default]
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise UdsInputError(f"--from-campaign assembles measured files; {flags} do(es) not apply (the campaign's "
                            "protocol.json fixed the zoo and the settings)")



def run(args: argparse.Namespace) -> int:
    from uds.executor_args import check_executor_args, make_executor
    from meta_eval.population import parse_zoo

    if args.from_campaign:
        from meta_eval.campaign.outputs import run_from_campaign

        check_flags(args)
        return run_from_campaign(Path(args.from_campaign), args.metrics, args.robustness, not args.no_filters,
                                 Path(args.out) if args.out else None, DEFAULT_OUT,
                                 lambda line: print(line, file=sys.stderr))
    args.zoo = args.zoo or DEFAULT_ZOO
    t0 = time.time()
    keys = parse_keys(args.metrics)
    check_executor_args(args)
    zoo = parse_zoo(args.zoo, args.models_dir, args.tofu_dir, args.split)
    run_dir = _cache_dir(args, zoo) / "runs" / time.strftime(f"%Y%m%d-%H%M%S-{os.getpid()}")
    executor = make_executor(args, run_dir)   # Ray joined or started here: bad flags fail before any work
    try:
        return _run(args, keys, zoo, executor, t0)
    finally:
        executor.close()


def _run(args: argparse.Namespace, keys: list[str], zoo, executor, t0: float) -> int:
    from meta_eval.assemble import meta_evaluate
    from meta_eval.measure import plan_jobs, s1_job
    from meta_eval.perturb import NF4, ORIG, RELEARN
    from meta_eval.population import FULL, POOL, RETAIN, UNLEARNED, available_members, build_zoo
    from meta_eval.summary import summary_markdown
    from meta_eval.tasks import report, shard

    left_out: list[str] = []
    if args.built_only:
        zoo, left_out = available_members(zoo)
        print(f"meta-eval: --built-only: {len(zoo.members)} models, {len(left_out)} left out", file=sys.stderr)
    else:
        build_zoo(zoo)
    measurer = _measurer(args, zoo)
    if hasattr(executor, "measurers"):
        executor.measurers[getattr(measurer, "spec", None)] = measurer
    fluency = bool(args.fluency_classifier or zoo.base)
    if not fluency:
        print("meta-eval: fluency left out (no base LM for the proxy; pass --fluency-classifier PATH)", file=sys.stderr)
    jobs = plan_jobs(zoo, keys, fluency)
    first = s1_job(zoo, keys, jobs)
    if args.shard:
        k, n = args.shard
        _, records = measure_all(measurer, shard(jobs, k, n), executor, first)
        print(f"meta-eval: shard {k}/{n} measured; run again without --shard to assemble the results", file=sys.stderr)
        return report(records, "meta-eval", lambda s: print(s, file=sys.stderr))
    values, records = measure_all(measurer, jobs, executor, first)
    fresh = len(records)
    doc = meta_evaluate(zoo.members, values, keys, form=args.robustness, use_filters=not args.no_filters,
                        parity=args.parity)
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
        "executor": args.executor, "tasks_run": fresh, "failed_tasks": [r.label for r in records if r.failed],
        "wall_seconds": round(time.time() - t0, 1)}
    doc["members"], doc["values"] = report_values(zoo, values, keys)
    atomic.write_json(out / "meta_eval.json", doc, indent=1, allow_nan=False)
    atomic.write_json(out / "results.json", rows, indent=1, allow_nan=False)
    notes = [f"zoo {args.zoo}: {doc['settings']['models']}", f"parity {args.parity}, robustness {args.robustness}, "
             f"filters {'on' if not args.no_filters else 'off'}, relearning lr {measurer.recipe.train.lr:g}",
             f"wall time {doc['settings']['wall_seconds']:.0f} s, measuring {fresh} of {len(jobs)} (model, setting) "
             f"pairs (the rest read from the cache), executor {args.executor}"]
    if left_out:
        notes.append(f"partial zoo (--built-only): left out {len(left_out)} model(s) not built yet")
    md = summary_markdown(doc, f"Meta-evaluation on {args.zoo}", notes)
    atomic.write_text(out / "summary.md", md)
    write_plots(out, doc, zoo, values, keys)
    print(md)
    print(out / "meta_eval.json")
    return report(records, "meta-eval", lambda s: print(s, file=sys.stderr))
